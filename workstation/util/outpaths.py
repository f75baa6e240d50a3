"""Where an output may be written: the one policy for every file or folder the user names.

`check_output(path, ...)` decides for every command that writes a file or a folder (``--out``,
``--todo``, ...), for the window's exports, and again in `util.output` at the moment of writing.
It returns the real path to write to, or raises `OutputRefused`: one line naming the path as it
was given. A path from the command line or a dialog is hostile: it is resolved first (``..``,
relative paths, links anywhere in the folders above it), and what it names is compared by its
real path and by file identity (a project reached through another path or a link is the same
project).

Refused, with or without ``overwrite``:

* a symbolic link (a dangling one too): it is never written through, nor replaced;
* inside a project folder (a folder that holds `DB_NAME` or `WAL_NAME`, or one of the
  ``projects`` given): the project's database, its write-ahead log, anything inside `images/`,
  `jobs/` or any other folder or file of the project — outputs go into its `exports/` or
  `reports/` folder (`OUTPUT_FOLDERS`), or outside the project;
* the project folder itself, or a folder that holds one of the ``projects``;
* for a file: a folder, or anything that is not a regular file; for a folder: a file.

An existing file is "a file the program did not write" as far as the policy can tell: it is
replaced only with ``overwrite`` (``--overwrite`` on the command line; in the window the save
dialog's own "replace it?" question is the user's say). An existing non-empty folder is replaced
only with ``overwrite`` and only when it holds the ``marker`` file the program wrote into it (a
report bundle's ``.t2i-workstation-report``, a regular file, not a link).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from ..types import WorkstationError
from .project_files import DB_NAME, OUTPUT_FOLDERS, OWNED_FOLDERS, WAL_NAME

FILE, FOLDER = "file", "folder"
OVERWRITE_HINT = "it is replaced only with --overwrite"
_INSIDE_HINT = "write into its exports/ or reports/ folder, or outside the project"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_SHOWN = 160  # characters of a path a message shows (its end, where the name is)


class OutputError(WorkstationError):
    """An output could not be written (nothing of it was left behind)."""


class OutputRefused(OutputError):
    """The policy refuses an output path (nothing was written)."""


def shown(path: str | Path) -> str:
    """A path for a message: control characters escaped, a very long one shortened to its end."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(path))
    return text if len(text) <= MAX_SHOWN else "…" + text[-(MAX_SHOWN - 1):]


def _real(path: Path) -> Path:
    """The real folder above ``path`` (every link resolved) and ``path``'s own name (a link there is
    not resolved: it is refused)."""
    if path.name in ("", ".", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def _identity(p: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _is_project(folder: Path, given: list[tuple[Path, tuple[int, int] | None]]) -> bool:
    if os.path.lexists(folder / DB_NAME) or os.path.lexists(folder / WAL_NAME):
        return True
    ident = _identity(folder)
    return any(folder == r or (ident is not None and ident == i) for r, i in given)


def _inside_reason(rel: tuple[str, ...]) -> str | None:
    """Why ``rel`` (the path's parts below a project folder) may not be written; None: it may."""
    first = rel[0] if rel else ""
    if len(rel) >= 2 and first in OUTPUT_FOLDERS:
        return None
    if len(rel) == 1 and first in OUTPUT_FOLDERS:
        return f"is the project's {first}/ folder itself; give a name inside it"
    low = first.casefold()
    if not rel:
        why = "is the project folder"
    elif low == WAL_NAME.casefold():
        why = "is the project's write-ahead log"
    elif low == DB_NAME.casefold():
        why = "is the project's database"
    elif low.startswith(DB_NAME.casefold()):
        why = "is one of the project's database files"
    elif low in OWNED_FOLDERS:
        why = f"is inside the project's {low}/ folder"
    elif len(rel) == 1:
        why = "is in the project folder itself"
    else:
        why = f"is inside {first}/ of the project folder"
    return f"{why}; {_INSIDE_HINT}"


def check_output(path: str | Path, *, what: str = "output file", kind: str = FILE, overwrite: bool = False,
                 projects: Iterable[str | Path | None] = (), marker: str | None = None,
                 overwrite_hint: str = OVERWRITE_HINT) -> Path:
    """The real path to write ``path`` to, or `OutputRefused` (module doc). ``kind``: `FILE` or
    `FOLDER`; ``projects``: project folders the command works on (any other project is found by
    its database); ``marker``: the file an existing folder must hold to be replaced."""
    given = Path(path)
    where = f"{what} {shown(path)}"
    if not str(path).strip():
        raise OutputRefused(f"{what}: an empty path names no {kind}")
    real = _real(given)
    if os.path.islink(given) or os.path.islink(real):
        raise OutputRefused(f"{where} is a symbolic link; links are never written through (give the "
                            f"{kind} itself); nothing was written")
    roots = [Path(os.path.realpath(p)) for p in projects if p is not None and str(p)]
    known = [(r, _identity(r)) for r in roots]
    for r in roots:
        if r != real and r.is_relative_to(real):
            raise OutputRefused(f"{where} holds the project {shown(r)}; nothing was written")
    for folder in (real, *real.parents):
        if _is_project(folder, known):
            why = _inside_reason(real.relative_to(folder).parts)
            if why is not None:
                raise OutputRefused(f"{where} {why}")
    try:
        st = os.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return real
    if kind == FILE:
        if stat.S_ISDIR(st.st_mode):
            raise OutputRefused(f"{where} is a folder; give a file name")
        if not stat.S_ISREG(st.st_mode):
            raise OutputRefused(f"{where} is not a regular file; nothing was written")
        if not overwrite:
            raise OutputRefused(f"{where} already exists; {overwrite_hint}")
        return real
    if not stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"{where} is a file; choose a folder")
    with os.scandir(real) as entries:
        if next(entries, None) is None:
            return real
    if not overwrite:
        raise OutputRefused(f"{where} already exists; choose another folder, or replace it with --overwrite "
                            "(only a folder this program wrote)")
    if marker is None:
        raise OutputRefused(f"{where} exists and is not a folder this program wrote; it is never overwritten")
    m = real / marker
    if os.path.islink(m) or not m.is_file():
        raise OutputRefused(f"{where} exists and is not a report this program wrote (it has no {marker} file); "
                            "it is never overwritten: choose another folder")
    return real


__all__ = ["FILE", "FOLDER", "OVERWRITE_HINT", "OutputError", "OutputRefused", "check_output", "shown"]
