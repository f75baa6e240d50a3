"""Writing output files the user named: whole or not at all, with one clear message on failure.

`output_file(path)` asks the output policy first (`outpaths.check_output`: never the project's
database, its write-ahead log, its images/ or jobs/, a link, or an existing file without
``overwrite``), then yields a temporary path beside the real target (`atomic.atomic_path`: an
unpredictable name, made exclusively, never through a link); on success it becomes the target
— without ``overwrite`` only if nothing has appeared there meanwhile — and on any failure it is
removed, and so are the parent folders this call created. An `OSError` (a read-only folder,
permission denied, a full disk) becomes one `OutputError` line naming the file and the cause.
`output_folder` does the same for a folder of files.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .atomic import atomic_path, new_folder_mode
from .outpaths import FILE, FOLDER, OVERWRITE_HINT, OutputError, OutputRefused, check_output, shown
from .paths import remove_made

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
DENIED_ERRNOS = frozenset({errno.EACCES, errno.EPERM})


def is_disk_full(e: BaseException) -> bool:
    """True for a full disk or quota, as an OSError or as a database error's text."""
    if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
        return True
    text = str(e).lower()
    return "no space left" in text or "disk quota" in text or "disk is full" in text


def describe_os_error(e: BaseException) -> str:
    """A short cause: 'the disk is full', 'permission denied', 'the file system is read-only'."""
    if is_disk_full(e):
        return "the disk is full"
    if isinstance(e, OSError):
        if e.errno in DENIED_ERRNOS:
            return "permission denied"
        if e.errno == errno.EROFS:
            return "the file system is read-only"
        if e.errno == errno.ENOENT:
            return "the folder does not exist"
        if e.errno == errno.ENOTDIR:
            return "a part of the path is a file, not a folder"
        if e.errno == errno.EISDIR:
            return "it is a folder"
        return e.strerror or str(e)
    return " ".join(str(e).split())[:200]


def _make_parents(folder: Path, made: list[Path]) -> None:
    """Create `folder` and missing parents, appending each one created to `made` (outermost first)."""
    for p in reversed((folder, *folder.parents)):
        if not p.exists():
            p.mkdir()
            made.append(p)


@contextmanager
def output_file(path: str | Path, what: str = "output file", *, overwrite: bool = False,
                projects: Iterable[str | Path | None] = (), overwrite_hint: str = OVERWRITE_HINT) -> Iterator[Path]:
    """Yield a temporary path to write; it becomes `path` when the block ends without error.
    ``projects``: the project folders the command works on (`outpaths.check_output`)."""
    target = check_output(path, what=what, kind=FILE, overwrite=overwrite, projects=projects,
                          overwrite_hint=overwrite_hint)
    made: list[Path] = []
    try:
        _make_parents(target.parent, made)
        with atomic_path(target, replace=overwrite) as tmp:
            yield tmp
    except FileExistsError:
        remove_made(made)
        raise OutputRefused(f"{what} {shown(path)} already exists; {overwrite_hint}") from None
    except OSError as e:
        remove_made(made)
        raise OutputError(f"cannot write {what} {shown(path)}: {describe_os_error(e)}; nothing was written") from None
    except BaseException:
        remove_made(made)
        raise


def write_output_bytes(path: str | Path, data: bytes, what: str = "output file", *, overwrite: bool = False,
                       projects: Iterable[str | Path | None] = (), overwrite_hint: str = OVERWRITE_HINT) -> None:
    with output_file(path, what, overwrite=overwrite, projects=projects, overwrite_hint=overwrite_hint) as tmp, \
            open(tmp, "wb") as fh:
        fh.write(data)


def write_output_text(path: str | Path, text: str, what: str = "output file", *, overwrite: bool = False,
                      projects: Iterable[str | Path | None] = (), overwrite_hint: str = OVERWRITE_HINT) -> None:
    write_output_bytes(path, text.encode("utf-8"), what, overwrite=overwrite, projects=projects,
                       overwrite_hint=overwrite_hint)


def replace_folder(tmp: Path, target: Path) -> None:
    """Move the finished folder `tmp` to `target`; an existing `target` is set aside first and
    put back if the move fails, so `target` is always either the old folder or the new one."""
    if not target.exists():
        os.replace(tmp, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=str(target.parent)))
    os.rmdir(old)
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except OSError:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def output_folder(path: str | Path, what: str = "output folder", overwrite: bool = False, *,
                  projects: Iterable[str | Path | None] = (), marker: str | None = None) -> Iterator[Path]:
    """Yield a temporary folder beside `path`; it becomes `path` (replacing an old one when
    `overwrite` and it holds ``marker``: `outpaths.check_output`) when the block ends without
    error, and is removed otherwise."""
    target = check_output(path, what=what, kind=FOLDER, overwrite=overwrite, projects=projects, marker=marker)
    made: list[Path] = []
    tmp: Path | None = None
    try:
        _make_parents(target.parent, made)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=str(target.parent)))
        yield tmp
        check_output(path, what=what, kind=FOLDER, overwrite=overwrite, projects=projects, marker=marker)
        os.chmod(tmp, new_folder_mode())  # as a folder made by mkdir, not mkdtemp's 0700
        replace_folder(tmp, target)
        tmp = None
    except OSError as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        remove_made(made)
        raise OutputError(f"cannot write {what} {shown(path)}: {describe_os_error(e)}; nothing was written") from None
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        remove_made(made)
        raise


__all__ = ["DISK_FULL_ERRNOS", "OutputError", "OutputRefused", "check_output", "describe_os_error", "is_disk_full", "output_file",
           "output_folder", "replace_folder", "write_output_bytes", "write_output_text"]
