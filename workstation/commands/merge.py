"""`merge`: join shard projects (or shard job folders) into one project.

    python main.py merge --project DIR [--require-done] SHARD_PROJECT_DIR [SHARD_PROJECT_DIR|JOB_DIR ...]

Every source is checked before anything is written or created: what it is, and every image
path it would copy (relative, inside its folder, no symbolic link out of it, a regular file that
decodes as an image within the limits of `util.images`). Then runs, prompts, samples with their
images and ground truth, detections and job history are copied in, one transaction per source;
a new target project that receives nothing is removed again. A sample id present twice with the same content is
skipped; with different content it is an error and that source is not merged. With
`--require-done` a source with an unfinished job (failed, cancelled, or killed while it ran) is
refused before anything is written: the shard it holds is incomplete.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..command_base import add_command, add_project_arg

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = add_command(sub, "merge", "merge shard projects or job folders into one project", run, doc=__doc__)
    add_project_arg(p, "target project folder (created if it does not exist)")
    p.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="shard project folders or job folders")
    p.add_argument("--require-done", action="store_true",
                   help="refuse a source with a job that has not finished (failed, cancelled or killed): "
                        "nothing is merged while a shard is incomplete")


def run(args: argparse.Namespace) -> int:
    from ..jobs.merge import merge_into, preflight
    from ..store import DB_NAME, Project
    from ..methods import after_samples_changed, merge_samples

    target = Path(args.project)
    # every source and image checked before anything is created
    checked = preflight(target, args.sources, require_done=args.require_done)
    new = not (target / DB_NAME).exists()
    made = [p for p in reversed((target, *target.parents)) if not p.exists()]
    had = {name: (target / name).exists() for name in ("images", "jobs")}
    project = Project.create(target, exist_ok=True)
    try:
        report = merge_into(project, args.sources, checked=checked, merge_samples=merge_samples,
                            on_source=lambda k, n, s: print(f"[{k + 1}/{n}] merging {s}"))
    except BaseException:
        if new:
            _discard_if_empty(project, made, had)
        project.close()
        raise
    print(report.summary())
    try:
        after_samples_changed(project)
    finally:
        project.close()
    return 0


def _discard_if_empty(project: "Project", made: list[Path], had: dict[str, bool]) -> None:
    """A project this merge created and could not fill is removed again (one that received a
    source before a later one failed keeps it: each source is one transaction)."""
    import shutil

    from ..store import DB_NAME

    if project.samples.count() or project.samples.run_ids():
        return
    project.close()
    target = project.folder
    if made:
        shutil.rmtree(made[0], ignore_errors=True)  # the outermost folder this command made
        return
    for name in (DB_NAME, DB_NAME + ".wal"):
        (target / name).unlink(missing_ok=True)
    for name, existed in had.items():
        if not existed:
            shutil.rmtree(target / name, ignore_errors=True)
