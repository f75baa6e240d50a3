"""Command line: `python main.py COMMAND ...` (also the `workstation` console script).

Each command lives in `workstation/commands/<module>.py` and exposes
`register(subparsers) -> None`, which adds its parser and sets `func=run` (a callable taking
the parsed args and returning an exit code). Commands import heavy modules inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from .types import WorkstationError

# module names under workstation.commands, in --help order
COMMAND_MODULES: tuple[str, ...] = (
    "demo",
    "suite",
    "import_sbuc",
    "evaluate",
    "export_sbuc",
    "report",
    "labels",
    "audit",
    "calibrate",
    "generate",
    "detect",
    "score",
    "dyeval",
    "jobs",
    "merge",
)

log = logging.getLogger("workstation")


# Command modules from outside the core, set by the composition root (main.py adds the UI's
# `gui`); kept for the process so that a command may run another (demo opens the window).
_extra_modules: tuple[str, ...] = ()


def build_parser(extra: Sequence[str] | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="workstation",
        description="Annotation and audit workstation for text-to-image evaluation.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    extra = _extra_modules if extra is None else tuple(extra)
    for modname in [f"workstation.commands.{n}" for n in COMMAND_MODULES] + list(extra):
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name in (modname, modname.split(".")[0]):
                continue  # e.g. a core-only install without the UI package
            raise
        mod.register(sub)
    return p


def has_command(name: str) -> bool:
    return any(a.dest == "command" and name in getattr(a, "choices", {}) for a in build_parser()._actions)


def main(argv: Sequence[str] | None = None, extra_commands: Sequence[str] | None = None) -> int:
    global _extra_modules
    if extra_commands is not None:
        _extra_modules = tuple(extra_commands)
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "command", None):
        # no command: open the workstation (GUI), as double-clicking the app would
        args = parser.parse_args(["gui", *(argv or [])])
    try:
        return int(args.func(args) or 0)
    except WorkstationError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
