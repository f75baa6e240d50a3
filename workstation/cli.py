"""Command line: `python main.py COMMAND ...` (also the `workstation` console script).

The kernel's commands live in `workstation/commands/<module>.py`, each exposing
`register(subparsers) -> None`, which adds its parser and sets `func=run` (a callable taking
the parsed args and returning an exit code); each registered method adds its own after them
(``METHOD.commands()``, from the method's folder). Commands import heavy modules inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .command_base import check_outputs
from .types import WorkstationError

# module names under workstation.commands, in --help order
COMMAND_MODULES: tuple[str, ...] = (
    "demo",
    "methods",
    "suite",
    "evaluate",
    "report",
    "judges",
    "labels",
    "raters",
    "audit",
    "protocol",
    "generate",
    "detect",
    "score",
    "jobs",
    "runs",
    "merge",
)

log = logging.getLogger("workstation")


class OneLineParser(argparse.ArgumentParser):
    """An argument error is one line on stderr (which command, what is wrong, where to look), exit 2."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())} (see {self.prog} --help)\n")


# Command modules from outside the core, set by the composition root (main.py adds the UI's
# `gui`); kept for the process so that a command may run another (demo opens the window).
_extra_modules: tuple[str, ...] = ()


def build_parser(extra: Sequence[str] | None = None) -> argparse.ArgumentParser:
    p = OneLineParser(
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
    for command in method_commands():
        command.register(sub)
    return p


def method_commands() -> list[Any]:
    """Every registered method's own commands (`workstation.command_base.Command`), by method name."""
    from .methods import METHODS, get_method

    return [c for name in METHODS.names() for c in get_method(name).commands()]


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
        check_outputs(args)  # every file or folder a command writes, before it runs (util.outpaths)
        return int(args.func(args) or 0)
    except WorkstationError as e:
        print(f"error: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        # a read-only folder, a full disk, a vanished file: one line, not a traceback
        from .util.output import describe_os_error

        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        log.debug("command failed", exc_info=True)
        print(f"error: {where}{describe_os_error(e)}", file=sys.stderr)
        return 2
    except Exception as e:
        if _is_database_io_error(e):
            from .util.output import describe_os_error

            log.debug("command failed", exc_info=True)
            print(f"error: the project could not be written: {describe_os_error(e)}", file=sys.stderr)
            return 2
        raise


MAX_MESSAGE_CHARS = 1000  # the last guard: a message that quotes more of a value is cut here


def _one_line(text: str) -> str:
    """A message on one line (a multi-line message keeps its first line and says how many follow),
    at most `MAX_MESSAGE_CHARS` characters."""
    lines = [ln for ln in text[: 4 * MAX_MESSAGE_CHARS].splitlines() if ln.strip()]
    if len(lines) <= 1:
        out = " ".join(text[: 4 * MAX_MESSAGE_CHARS].split())
    else:
        more = sum(1 for ln in text.splitlines() if ln.strip()) - 1
        out = f"{' '.join(lines[0].split())} (+{more} more line(s); run with -v for details)"
    return out if len(out) <= MAX_MESSAGE_CHARS else out[: MAX_MESSAGE_CHARS - 1] + "…"


def _is_database_io_error(e: BaseException) -> bool:
    """DuckDB's I/O errors (a full disk, a read-only file system) — without importing DuckDB."""
    mod = type(e).__module__ or ""
    if not mod.startswith("duckdb") and mod != "_duckdb":
        return False
    from .util.output import is_disk_full

    text = str(e).lower()
    return is_disk_full(e) or "read-only" in text or "permission denied" in text or "could not write" in text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
