"""Composition root: `python main.py [COMMAND] ...`; with no command, opens the workstation.

The core's command line (workstation.cli) is joined here with the UI's `gui` command, so the
core never imports the UI.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Sequence

UI_COMMANDS = ("ui.command",)


def opens_the_window(argv: Sequence[str]) -> bool:
    """Whether the command opens the workstation's window (no command, `gui`, `demo`)."""
    return not argv or (argv[0] in ("gui", "demo") and "--no-gui" not in argv
                        and not {"-h", "--help"} & set(argv))


def run(argv: Sequence[str] | None = None) -> int:
    from workstation.util.memory import restart_with_c_allocator, tune_allocator

    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None and opens_the_window(args):
        restart_with_c_allocator()  # the window's process: see there (returns where it does nothing)
    tune_allocator()  # before any worker thread
    from workstation.cli import main

    return main(args, extra_commands=UI_COMMANDS)


if __name__ == "__main__":
    multiprocessing.freeze_support()  # worker processes of a frozen (PyInstaller) build
    sys.exit(run())
