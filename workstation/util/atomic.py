"""One atomic file write: a temporary file beside the target, flushed, then renamed over it.

A reader sees the old file or the new one, never a half-written one; when the write fails
(a full disk, a killed process between write and rename is the one case that leaves the
temporary file) nothing is left where the target was and the temporary file is removed.

The temporary file is made the way `tempfile.mkstemp` makes one: an unpredictable name
(``.NAME.<random>.partial``: a killed write's leftovers are recognised by the leading dot and the
``.partial`` suffix), created exclusively (``O_CREAT | O_EXCL``) and never through a link
(``O_NOFOLLOW``), so a link planted under a temporary name in a shared folder cannot redirect the
write into another file. Before the rename it gets the mode a newly created file gets (``0666``
less the umask, not mkstemp's ``0600``), and it must still be the file that was created: a
temporary replaced by another file or a link while it was written is refused. A target that is a
symbolic link is refused, never written through or replaced (`TargetIsLink`). With
``replace=False`` an existing target is never replaced, not even one that appears while the file
is written (`FileExistsError`).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PARTIAL_SUFFIX = ".partial"
_MAX_PREFIX_CHARS = 120  # of the target's name in its temporary's name (a name has at most 255 bytes)


class TargetIsLink(OSError):
    """The target of an atomic write is a symbolic link (refused, never followed)."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.ELOOP, "it is a symbolic link; links are never written through", str(path))


class TemporaryReplaced(OSError):
    """The temporary file was replaced (by another file or a link) while it was being written."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EEXIST, "its temporary file was replaced while it was written", str(path))


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no other way to read it: set and put back at once
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The permission bits a newly created regular file gets: ``0666`` less the process's umask."""
    return 0o666 & ~_umask()


def new_folder_mode() -> int:
    """The permission bits a newly created folder gets: ``0777`` less the process's umask."""
    return 0o777 & ~_umask()


def refuse_link(path: str | Path) -> None:
    """Raise `TargetIsLink` when ``path`` is a symbolic link (a dangling one too)."""
    if os.path.islink(path):
        raise TargetIsLink(Path(path))


def temporary_beside(path: str | Path) -> tuple[int, Path]:
    """A new temporary file in ``path``'s folder, named ``.NAME.<random>.partial``: its open
    descriptor (read-write) and its path. Made exclusively and never through a link."""
    target = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{target.name[:_MAX_PREFIX_CHARS]}.", suffix=PARTIAL_SUFFIX,
                                dir=str(target.parent))
    return fd, Path(name)


def _same_file(fd: int, tmp: Path) -> None:
    """``tmp`` is still the regular file behind ``fd`` (not a link or another file swapped in)."""
    try:
        st = os.lstat(tmp)
    except FileNotFoundError:
        raise TemporaryReplaced(tmp) from None
    mine = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
        raise TemporaryReplaced(tmp)


def _put_in_place(tmp: Path, target: Path, replace: bool) -> None:
    refuse_link(target)
    if replace:
        os.replace(tmp, target)  # rename(2): a link that appeared at the target is replaced, never followed
        return
    try:
        os.link(tmp, target, follow_symlinks=False)  # fails if anything exists at the target
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(target):  # a file system without hard links: check, then rename
            raise FileExistsError(errno.EEXIST, "it exists", str(target)) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


@contextmanager
def _atomic(path: str | Path, fsync: bool, replace: bool) -> Iterator[tuple[int, Path]]:
    target = Path(path)
    refuse_link(target)
    fd, tmp = temporary_beside(target)
    try:
        yield fd, tmp
        _same_file(fd, tmp)
        os.fchmod(fd, new_file_mode())
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        _put_in_place(tmp, target, replace)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            tmp.unlink(missing_ok=True)  # a link swapped in is removed as a link
        except OSError:
            pass
        raise


@contextmanager
def atomic_path(path: str | Path, *, fsync: bool = True, replace: bool = True) -> Iterator[Path]:
    """Yield the path of a new, empty temporary file to write (by name: open it with ``"w"``);
    on success it replaces ``path`` (or, with ``replace=False``, becomes ``path`` only if nothing
    is there), on error it is removed.

    Folders are not created: a missing or unwritable folder fails before anything is written."""
    with _atomic(path, fsync, replace) as (_fd, tmp):
        yield tmp


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = True, replace: bool = True) -> None:
    """Write ``data`` to ``path`` atomically, through the temporary file's own descriptor."""
    with _atomic(path, fsync, replace) as (fd, _tmp):
        _write_all(fd, data)


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8", fsync: bool = True,
                      replace: bool = True) -> None:
    atomic_write_bytes(path, text.encode(encoding), fsync=fsync, replace=replace)


__all__ = ["PARTIAL_SUFFIX", "TargetIsLink", "TemporaryReplaced", "atomic_path", "atomic_write_bytes",
           "atomic_write_text", "new_file_mode", "new_folder_mode", "refuse_link", "temporary_beside"]
