"""`gui`: open the workstation's window.

    python main.py gui [--project DIR] [--read-only]

With no command at all, `main.py` opens the window too. This command lives in `ui/` (the core
never imports the UI); `main.py`, the composition root, adds it to the core's command line.
Qt is imported only inside `run`, so the other commands never load it.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

from workstation.types import WorkstationError


def register(sub: Any) -> None:
    p = sub.add_parser("gui", help="open the workstation window",
                       description="Open the annotation and audit workstation (optionally on a project).")
    p.add_argument("--project", type=Path, metavar="DIR", help="project folder to open")
    p.add_argument("--read-only", action="store_true",
                   help="open the project read-only (a snapshot if another process holds it)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workstation.store import DB_NAME

    project = getattr(args, "project", None)
    if project is not None and not (Path(project) / DB_NAME).is_file():
        raise WorkstationError(f"no project in {project} (missing {DB_NAME}); create one with "
                               "`import-sbuc` or `demo`, or open the window without --project")
    from workstation.util.window_libs import window_problem

    problem = window_problem()
    if problem:
        raise WorkstationError(f"the window cannot start: {problem}")
    read_only = bool(getattr(args, "read_only", False))
    early = None
    if project is not None and importlib.util.find_spec("PySide6") is not None:
        # the project's samples are read while Qt is imported and the window is built
        from ui.loading import EarlyLoad

        early = EarlyLoad(project, read_only)
    try:
        from ui.app import run as run_app
    except BaseException as e:
        if early is not None:
            early.discard()
        if isinstance(e, ImportError):  # PySide6 missing in a core-only install
            raise WorkstationError(f"the window needs PySide6 ({e}); the command line works without it") from None
        raise
    return run_app(project, read_only=read_only, early=early)
