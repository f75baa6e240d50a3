"""One atomic file write: a temporary file beside the target, flushed, then renamed over it.

A reader sees the old file or the new one, never a half-written one; when the write fails
(a full disk, a killed process between write and rename is the one case that leaves the
temporary file, which carries a ``.partial`` suffix) nothing is left where the target was
and the temporary file is removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PARTIAL_SUFFIX = ".partial"


def _tmp_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{PARTIAL_SUFFIX}")


@contextmanager
def atomic_path(path: str | Path, *, fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path``, on error it is removed.

    Folders are not created: a missing or unwritable folder fails before anything is written."""
    target = Path(path)
    tmp = _tmp_for(target)
    try:
        yield tmp
        if fsync and tmp.exists():
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = True) -> None:
    with atomic_path(path, fsync=fsync) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8", fsync: bool = True) -> None:
    atomic_write_bytes(path, text.encode(encoding), fsync=fsync)
