"""Process-wide memory settings (standard library only: imported first thing at start)."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any

_ARENAS_TUNED = False


@functools.cache
def _glibc() -> Any:
    """The C library, loaded once (each new handle on it leaves a few objects alive, which
    would pin memory freed around them), or None elsewhere than Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def trim_heap() -> None:
    """Ask glibc to hand its freed heap pages back to the system; a no-op elsewhere."""
    try:
        _glibc().malloc_trim(0)
    except AttributeError:  # not glibc
        pass


def tune_allocator() -> None:
    """Keep glibc to two malloc arenas (unless MALLOC_ARENA_MAX says otherwise): each thread
    that allocates otherwise may get an arena of its own, whose freed pages a project's
    worker threads leave scattered, so that opening and closing large projects in one process
    kept growing the resident memory (≈ 10–30 MB a round at 1M samples; ≈ 3 MB with two).
    Called once at start, before the worker threads; a no-op elsewhere than glibc."""
    global _ARENAS_TUNED
    if _ARENAS_TUNED or not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return
    _ARENAS_TUNED = True
    try:
        _glibc().mallopt(-8, 2)  # M_ARENA_MAX
    except AttributeError:  # not glibc
        pass


def drop_mapped_pages(arrays: Any) -> int:
    """Hand back the resident pages of the file mappings behind `arrays` (arrays read with
    ``np.load(..., mmap_mode="r")`` or views of them): the data stay in the system's page cache
    and come back on the next read, but no longer count as this process's memory. Returns the
    bytes of the mappings advised; arrays without a mapping are left alone."""
    import mmap

    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is None:  # not available here: nothing to do
        return 0
    seen: set[int] = set()
    total = 0
    for a in arrays:
        base = a
        while base is not None and not isinstance(getattr(base, "_mmap", None), mmap.mmap):
            base = getattr(base, "base", None)
        m = getattr(base, "_mmap", None) if base is not None else None
        if not isinstance(m, mmap.mmap) or id(m) in seen:
            continue
        seen.add(id(m))
        try:
            m.madvise(advice)
            total += len(m)
        except (OSError, ValueError):  # closed, or refused: the pages simply stay
            pass
    return total
