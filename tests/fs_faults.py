"""File-system faults for tests: a tiny disk that fills up, a folder that cannot be written.

* `tiny_disk(path, size)`: a tmpfs of `size` mounted at `path` (needs root; the test is skipped
  otherwise) — real ENOSPC from the kernel, for DuckDB and for our own writes; `fill(path)`
  fills it to the last byte.
* `writable_then_read_only(path)`: a folder the test fills, then makes read-only by calling the
  function it yields: as root a tmpfs remounted read-only (root ignores permission bits), as
  another user `chmod a-w` on the folder and its files.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _mount_tmpfs(path: Path, size: str) -> None:
    if not _is_root() or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


@contextmanager
def tiny_disk(path: Path, size: str = "8m") -> Iterator[Path]:
    _mount_tmpfs(path, size)
    try:
        yield path
    finally:
        _umount(path)


def fill(folder: Path) -> Path:
    """Fill the disk of `folder` to the last byte; returns the filler file (delete it to free space)."""
    filler = folder / "filler.bin"
    with open(filler, "wb", buffering=0) as fh:
        block = b"\0" * 65536
        try:
            while True:
                fh.write(block)

        except OSError:
            pass
        try:
            while True:
                fh.write(b"\0")

        except OSError:
            pass
    return filler


@contextmanager
def writable_then_read_only(path: Path) -> Iterator[Callable[[], None]]:
    """Yield `make_read_only()`; the folder is writable until it is called."""
    if _is_root():
        _mount_tmpfs(path, "64m")

        def make_read_only() -> None:
            r = subprocess.run(["mount", "-o", "remount,ro", str(path)], capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                pytest.skip(f"cannot remount read-only: {r.stderr.strip()}")

        try:
            yield make_read_only
        finally:
            _umount(path)
        return
    path.mkdir(parents=True, exist_ok=True)
    changed: list[tuple[Path, int]] = []

    def make_read_only() -> None:
        for p in [path, *path.rglob("*")]:
            mode = p.stat().st_mode
            changed.append((p, mode))
            p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))

    try:
        yield make_read_only
    finally:
        for p, mode in reversed(changed):
            try:
                p.chmod(mode)
            except OSError:
                pass


class FullDiskAt:
    """A stand-in for `np.save` whose `n`-th call finds the disk full (ENOSPC); it counts its
    calls, and `real` is the `np.save` it stands in for."""

    def __init__(self, n: int) -> None:
        import numpy as np

        self.n = n
        self.calls = 0
        self.real = np.save

    def __call__(self, fh: object, arr: object, **kw: object) -> None:
        self.calls += 1
        if self.calls == self.n:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.real(fh, arr, **kw)  # type: ignore[call-overload]
