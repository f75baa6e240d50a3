"""Composition root: `python main.py [COMMAND] ...`; with no command, opens the workstation.

The core's command line (workstation.cli) is joined here with the UI's `gui` command, so the
core never imports the UI.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Sequence

UI_COMMANDS = ("ui.command",)


def run(argv: Sequence[str] | None = None) -> int:
    from workstation.util.memory import tune_allocator

    tune_allocator()  # before any worker thread
    from workstation.cli import main

    return main(list(sys.argv[1:] if argv is None else argv), extra_commands=UI_COMMANDS)


if __name__ == "__main__":
    multiprocessing.freeze_support()  # worker processes of a frozen (PyInstaller) build
    sys.exit(run())
