"""Shared by the window benchmarks that run each round in a fresh process
(`bench_window_memory.py`, `bench_calibration_moves.py`): the window as `main.py gui` sets it up,
opened on a project, and the rounds run one after the other, each in a new interpreter that
prints its figures on lines marked `RESULT `. To compare trees, copy the benchmark with this file
(and `bench_gui.py`, for `wait`) into the other checkout: they import `ui` and `workstation` from
the checkout they live in.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _p in (ROOT, HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

MARK = "RESULT "


def round_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every window benchmark takes: PROJECT, --moves, --rounds (and the hidden
    --one that `run_rounds` passes to a round)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("--moves", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1, help="fresh processes, one after the other")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a round, in this process
    return ap


def result(line: str) -> None:
    """Print one line of a round's figures (what `run_rounds` passes on)."""
    print(MARK + line, flush=True)


def moved(cfg: Any, i: int) -> Any:
    """Move i of bench_gui's slider run: a new margin and t_det (a new config each, so that the
    checker's selection stage runs again too)."""
    m = 0.02 + 0.2 * (i % 20) / 20
    return cfg.replace(margin=round(m, 4), t_det=round(0.2 + (m % 0.05), 4))


def open_window(project: Path | None, settings_name: str) -> tuple[Any, Any]:
    """(app, window): the application (allocator and theme as `main.py gui` sets them), its main
    window shown at 1500×940 and `project` opened in it (when given). The window's settings go to
    a file of the benchmark's own (`settings_name` in the temp folder), not the user's."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("WORKSTATION_SETTINGS", str(Path(tempfile.gettempdir()) / settings_name))
    import bench_gui as bench

    from ui import app as ui_app
    from ui import theme
    from ui.main_window import MainWindow

    app = ui_app.create_application([])
    theme.apply_theme(app, "dark")
    w = MainWindow(ask_annotator=lambda: "bench")
    w.resize(1500, 940)
    w.show()
    bench.wait(app, 0.2)
    if project is not None:
        w.open_project(project)
        app.processEvents()
    return app, w


def run_rounds(script: str, args: list[str], rounds: int) -> None:
    """`script args --one` in `rounds` fresh processes, one after the other; prints each round's
    `RESULT` lines (unmarked), or why the round failed."""
    for _ in range(rounds):
        out = subprocess.run([sys.executable, script, *args, "--one"], capture_output=True, text=True, check=False)
        lines = [ln[len(MARK):] for ln in out.stdout.splitlines() if ln.startswith(MARK)]
        print("\n".join(lines) if lines else f"round failed (exit {out.returncode}): {out.stderr[-2000:]}", flush=True)
