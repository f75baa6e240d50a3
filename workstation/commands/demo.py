"""`demo`: build (or reuse) the built-in demo project, print its summary, open the workstation.

    python main.py demo [--project DIR] [--no-gui] [--seeds N] [--rebuild]

The demo draws the built-in prompt suite as procedural scenes with known ground truth, detects
them with the classical scene detectors, and checks them — no model weights needed. The default
folder is a per-user data folder (`~/.local/share/t2i-workstation/demo` on Linux); an existing
demo project there is reused. The project is built in a hidden folder beside the target and
moved into place when complete, so an interrupted build never leaves a half-built demo behind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from ..types import WorkstationError
from ..util.paths import user_data_dir
from ..command_base import add_command


#: how often a build stage says how far it is where the terminal shows no progress bar (seconds)
PROGRESS_EVERY_S = 5.0


def default_demo_dir() -> Path:
    return user_data_dir() / "demo"


def register(sub: Any) -> None:
    p = add_command(sub, "demo", "build (or reuse) the demo project and open it", run)
    p.add_argument("--project", type=Path, metavar="DIR",
                   help=f"demo project folder (default: {default_demo_dir()})")
    p.add_argument("--no-gui", action="store_true", help="only build / summarise, do not open the workstation")
    p.add_argument("--seeds", type=int, default=4, metavar="N", help="seeds per prompt when building (default 4)")
    p.add_argument("--pairs", type=int, default=50, metavar="N",
                   help="object pairs of the built-in suite when building (4 prompts each; default 50)")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes when building (default: all cores)")
    p.add_argument("--rebuild", action="store_true", help="delete an existing demo project and build it again")
    p.add_argument("--method", action="append", metavar="NAME",
                   help="build only this method's part (repeatable; default: every method)")


def _is_demo_project(folder: Path) -> bool:
    from ..command_base import reading_project

    with reading_project(folder) as project:
        runs = project.samples.runs()
    return bool(runs) and all(r["source"] == "demo" for r in runs)


def method_lines(project: Any, m: Any) -> list[str]:
    """A method's summary lines for the project's data under its active configuration."""
    from ..evaluation.run import config_of

    data = m.load(project)
    eid, cfg = config_of(project, m, None)
    return list(m.summary_lines(data, m.evaluate(data, cfg), eid or 0, cfg))


def _demo_parts(names: list[str]) -> list[str]:
    """The methods' demo parts in the order they are built and shown: each method's
    ``demo_order`` (default 1), lowest first, ties in the order given."""
    from ..methods import get_method

    return sorted(names, key=lambda n: getattr(get_method(n), "demo_order", 1))


def _summary_of_existing(folder: Path) -> dict[str, Any]:
    """The summary of a demo project built earlier: each method with data in it, through its
    ``demo_summary(project)`` hook where it has one (the spatial part's truth agreement is
    recomputed from the store), else its summary lines."""
    from ..methods import METHODS, get_method
    from ..command_base import reading_project

    out: dict[str, Any] = {"folder": str(folder), "reused": True}
    with reading_project(folder) as project:
        parts: dict[str, dict[str, Any]] = {}
        for name in _demo_parts(METHODS.names()):
            m = get_method(name)
            if not m.has_data(project):
                continue
            own = getattr(m, "demo_summary", None)
            parts[name] = own(project) if own is not None else {"method": name, "lines": method_lines(project, m)}
        out["methods"] = parts
    return out


def print_summary(s: dict[str, Any]) -> None:
    from ..methods import get_method

    how = "reused" if s.get("reused") else "built"
    print(f"demo project {how}: {s['folder']}")
    for name, ms in (s.get("methods") or {}).items():
        own = getattr(get_method(name), "demo_lines", None)  # the method's own lines of its part
        if own is not None:
            for line in own(ms):
                print(line)
            continue
        print(f"  {name}:")
        for line in ms.get("lines", []):
            print(f"  {line}")
    tm = s.get("timings")
    if tm and isinstance(tm.get("total_s"), (int, float)):
        print(f"  built in {tm['total_s']:.1f} s with {tm.get('workers', 1)} worker(s)")


def build(folder: Path, seeds: int, workers: int | None, pairs: int = 50,
          methods: list[str] | None = None) -> dict[str, Any]:
    """Build the demo into a hidden sibling folder, then move it into `folder`: every method's part
    one after another (`_demo_parts`), each saying what it builds: a method's ``build_demo_part``
    hook with the command's ``seeds`` and ``pairs`` where it has one (the spatial part: procedural
    scenes of the built-in suite, detected and checked; the ``timings`` of its summary join the
    command's), else `Method.build_demo`."""
    import time

    from ..methods import METHODS, get_method
    from ..progress import TerminalProgress
    from ..store import Project

    names = methods or METHODS.names()
    for name in names:
        METHODS.entry(name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.building"
    if tmp.exists():
        shutil.rmtree(tmp)  # a build interrupted earlier
    t0 = time.perf_counter()
    try:
        with Project.create(tmp) as project:
            print(f"building the demo project in {folder} (procedural images, classical detectors, no model "
                  f"weights): {', '.join(names)}", flush=True)
            summary: dict[str, Any] = {"methods": {}}
            parts = _demo_parts(list(names))
            for k, name in enumerate(parts, start=1):
                t_part = time.perf_counter()
                m = get_method(name)
                own_title = getattr(m, "demo_part", None)  # (title, unit) of the part with these options
                title, unit = own_title(seeds, pairs) if own_title is not None else (str(m.title), "item")
                # a line per part whether or not the terminal shows the bars (pipes, IDE consoles)
                print(f"[{k}/{len(parts)}] {name}: building {title}…", flush=True)
                items = "images" if unit == "img" else f"{unit}s"
                with TerminalProgress(f"{name}: {title}", unit=unit, lines_every_s=PROGRESS_EVERY_S,
                                      label=f"[{k}/{len(parts)}] {name}", noun=items) as bar:
                    own = getattr(m, "build_demo_part", None)
                    if own is not None:
                        ms = own(project, seeds=seeds, pairs=pairs, progress=bar, workers=workers)
                        summary.setdefault("timings", {}).update(ms.get("timings") or {})
                    else:
                        ms = m.build_demo(project, progress=bar, workers=workers)
                        if not ms.get("lines") and m.has_data(project):
                            ms = {**ms, "lines": method_lines(project, m)}
                    summary["methods"][name] = ms
                    noun = "image" if unit == "img" else unit
                    done = f"{bar.done:,} {noun}{'' if bar.done == 1 else 's'}" if bar.done else ""
                print(f"[{k}/{len(parts)}] {name}: done{' — ' + done if done else ''} "
                      f"in {time.perf_counter() - t_part:.1f} s", flush=True)
        if folder.exists():
            folder.rmdir()  # only an empty folder is replaced (checked by the caller)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    summary["folder"] = str(folder)
    summary.setdefault("timings", {})["total_s"] = time.perf_counter() - t0
    return summary


def require_window() -> None:
    """Refuse at once, in one line, when the window could not start here (before the build)."""
    from ..cli import has_command
    from ..util.window_libs import window_problem

    if has_command("gui"):
        problem = window_problem()
        if problem:
            raise WorkstationError(f"the window cannot start: {problem}; "
                                   "`main.py demo --no-gui` builds the demo without it")


def open_gui(folder: Path) -> int:
    from ..cli import has_command
    from ..cli import main as cli_main

    if not has_command("gui"):
        print(f"the workstation window is not available in this installation; "
              f"open the project later with: python main.py gui --project {folder}", file=sys.stderr)
        return 0
    print(f"opening the workstation window on {folder}…", flush=True)
    return cli_main(["gui", "--project", str(folder)])


def run(args: argparse.Namespace) -> int:
    """Build the built-in demo — procedural scenes of the spatial prompt suite with known ground truth,
    detected by classical scene detectors and checked — print its summary (including the checker's
    accuracy against the truth), then open the workstation on it. An existing demo project is reused."""
    from ..store import DB_NAME

    if args.seeds < 1 or args.pairs < 1:
        raise WorkstationError(f"--seeds and --pairs must be at least 1, got {args.seeds} and {args.pairs}")
    if not args.no_gui:
        require_window()
    folder = Path(args.project) if args.project else default_demo_dir()
    has_project = (folder / DB_NAME).is_file()
    if has_project and args.rebuild:
        if not _is_demo_project(folder):
            raise WorkstationError(f"{folder} holds a project that is not a demo; --rebuild deletes only demo projects")
        shutil.rmtree(folder)
        has_project = False
    if has_project:
        summary = _summary_of_existing(folder)
    else:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise WorkstationError(f"{folder} exists and is not an empty folder or a project; choose another --project")
        summary = build(folder, args.seeds, args.workers, args.pairs, args.method)
    print_summary(summary)
    if args.no_gui:
        return 0
    return open_gui(folder)
