"""What every command of the command line shares, the kernel's and the methods' alike.

- `Command`: one sub-command as a method object lists it (``METHOD.commands()``): its name and a
  ``register(subparsers)`` that adds its parser and sets ``func`` (a callable taking the parsed
  arguments and returning an exit code). The command line adds the kernel's commands and then
  those of every registered method, so a method's commands live in its own folder.
- `add_command`: the parser of one sub-command, described in its ``--help`` by the function that
  runs it (its docstring) or by the command module's docstring.
- ``--set KEY=VALUE`` options (`parse_options`), the ``--project DIR`` option, and opening an existing project for writing
  (`open_project`) or for reading (`reading_project`: a snapshot while another process holds it).
- `add_output_arg`: an option naming a file or folder the command writes (``--out``, ``--todo``),
  with its ``--overwrite``; `check_outputs` asks the output policy (`util.outpaths`) about every
  such option of the parsed arguments — the command line does it before any command runs, and
  the writers ask again as they write.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .types import WorkstationError

if TYPE_CHECKING:  # pragma: no cover
    from .store import Project


@dataclass(frozen=True)
class Command:
    """One sub-command: ``register(subparsers)`` adds its parser (imports stay inside ``run``)."""

    name: str
    register: Callable[[Any], None]


def add_command(sub: Any, name: str, summary: str, run: Callable[[argparse.Namespace], int] | None = None,
                *, doc: str | None = None) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` to ``sub`` (what ``add_subparsers()`` returned); its parser.

    ``summary`` is its line in the list of commands. Its ``--help`` describes it with ``doc`` kept
    line for line (a command module's docstring, usage lines and all), or else with ``run``'s
    docstring filled to the terminal's width. ``run`` is what the command does (it takes the parsed
    arguments and returns the exit code); a command of several actions leaves it out.
    """
    if doc is not None:
        p = sub.add_parser(name, help=summary, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    else:
        p = sub.add_parser(name, help=summary, description=inspect.getdoc(run) if run else None)
    if run is not None:
        p.set_defaults(func=run)
    return p


OUTPUTS_DEST = "output_options"  # the parsed arguments' (dest, kind, what, marker) of each output option


def _output_path(kind: str) -> Callable[[str], Path]:
    def convert(text: str) -> Path:
        from .util.outpaths import FILE, shown

        if kind == FILE and text.endswith(("/", "\\")):
            raise argparse.ArgumentTypeError(f"{shown(text)} ends with a slash: it names a folder, give a file name")
        return Path(text)

    convert.__name__ = f"output_{kind}"
    return convert


def add_output_arg(p: argparse.ArgumentParser, flag: str, metavar: str, help: str, *, what: str,
                   folder: bool = False, required: bool = False, marker: str | None = None,
                   overwrite_help: str | None = None) -> None:
    """An option naming a file (or, with ``folder``, a folder) the command writes, and the
    command's ``--overwrite`` (added once). ``what`` names it in messages ("label file");
    ``marker``: the file an existing folder must hold to be replaced."""
    from .util.outpaths import FILE, FOLDER

    kind = FOLDER if folder else FILE
    action = p.add_argument(flag, required=required, type=_output_path(kind), metavar=metavar, help=help)
    outputs = tuple(p.get_default(OUTPUTS_DEST) or ()) + ((action.dest, kind, what, marker),)
    p.set_defaults(**{OUTPUTS_DEST: outputs})
    if not any("--overwrite" in a.option_strings for a in p._actions):
        p.add_argument("--overwrite", action="store_true", help=overwrite_help or (
            "replace an existing output file (without it an existing file is never replaced; never allowed: "
            "a link, the project's database, anything inside the project but its exports/ and reports/)"))


def check_outputs(args: argparse.Namespace) -> None:
    """Ask the output policy (`util.outpaths.check_output`) about every output option given;
    an `OutputRefused` names the first path refused."""
    from .util.outpaths import check_output

    for dest, kind, what, marker in getattr(args, OUTPUTS_DEST, None) or ():
        value = getattr(args, dest, None)
        if value is not None:
            check_output(value, what=what, kind=kind, overwrite=bool(getattr(args, "overwrite", False)),
                         projects=[getattr(args, "project", None)], marker=marker)


def add_project_arg(p: argparse.ArgumentParser, what: str = "project folder") -> None:
    """The required ``--project DIR`` option; ``what`` is its help text."""
    p.add_argument("--project", required=True, type=Path, metavar="DIR", help=what)


def _require_project(folder: Path) -> None:
    from .store import DB_NAME

    if not (folder / DB_NAME).is_file():
        raise WorkstationError(
            f"no project in {folder} (missing {DB_NAME}); create one with `import-sbuc` or `demo`")


def open_project(folder: Path) -> "Project":
    """Open an existing project for writing (a clear error when there is none or it is locked)."""
    from .store import Project

    _require_project(folder)
    return Project.open(folder)


@contextmanager
def reading_project(folder: Path) -> Iterator["Project"]:
    """An existing project opened read-only; a snapshot when another process holds it."""
    from .store import Project, ProjectLocked

    _require_project(folder)
    try:
        project = Project.open(folder, read_only=True)
    except ProjectLocked:
        print(f"note: {folder} is open in another process; reading its last committed state",
              file=sys.stderr)
        project = Project.open_snapshot(folder)
    try:
        yield project
    finally:
        project.close()


def parse_value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    for conv in (int, float):
        try:
            v = conv(text)
        except ValueError:  # not a number (or a whole number of thousands of digits: read as a float)
            continue
        return v
    return text


def parse_options(items: list[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` options; a number that only fits as infinity (``1e400``) or NaN is an
    error naming the option, not a value that fails later."""
    import math

    from .util.textio import quote

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise WorkstationError(f"--set {quote(item, 40)}: expected KEY=VALUE")
        v = parse_value(value)
        if isinstance(v, float) and not math.isfinite(v):
            raise WorkstationError(f"--set {quote(key.strip(), 40)}: {quote(value, 40)} is not a finite number")
        out[key.strip()] = v
    return out
