"""Composition root: `python main.py [COMMAND] ...`; with no command, opens the workstation."""

import sys

from workstation.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
