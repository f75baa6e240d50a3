"""Process-wide memory settings (standard library only: imported first thing at start)."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any

_ARENAS_TUNED = False


@functools.cache
def glibc() -> Any:
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
        glibc().malloc_trim(0)
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
        glibc().mallopt(-8, 2)  # M_ARENA_MAX
    except AttributeError:  # not glibc
        pass


MMAP_THRESHOLD = 32 << 20  # glibc's largest: blocks under it come from the heap
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory_for_reuse() -> None:
    """For a process that trims its heap itself once idle (the window: `ui/idle_trim.py`):
    fixed thresholds in place of glibc's sliding ones. By default glibc maps each block from
    128 KB on its own and unmaps it when it is freed, raising that threshold towards the
    largest block freed (32 MB at most), and hands the top of its heap back whenever more than
    twice that is free there. A slider move at a million samples frees its result's arrays
    (1–8 MB each) and its stages' and allocates them again: with the sliding thresholds the
    first moves of a drag, and every move whose freed blocks had been at the heap's top, take
    fresh pages from the system and fault each in again (≈ 20–35 ms of a 60–100 ms move). With
    fixed thresholds blocks under 32 MB come from the heap, and freed ones stay there for the
    next move until the idle trim hands them back. A no-op elsewhere than glibc."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = glibc()
        libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD (a fixed one stops the sliding)
        libc.mallopt(-1, TRIM_THRESHOLD)  # M_TRIM_THRESHOLD
    except AttributeError:  # not glibc
        pass


_ALLOCATOR_MARK = "WORKSTATION_ALLOCATOR_CHOSEN"


def python_allocator() -> str:
    """The allocator of Python's objects in this process: "pymalloc" (Python's own) or
    "malloc" (the C library's, as under PYTHONMALLOC=malloc), told apart by pymalloc's count
    of its blocks, which is 0 when it is not in use."""
    return "malloc" if sys.getallocatedblocks() == 0 else "pymalloc"


def restart_with_c_allocator() -> None:
    """Replace this process (same pid, arguments and streams) by one whose Python objects live
    in glibc's heap instead of pymalloc's 1 MiB arenas; returns only where it does nothing.

    For the window, which opens and closes projects of a million samples for hours: an arena
    goes back to the system only when every object in it is freed, and the few long-lived
    objects made while a project is open (the toolkit's and the plot library's) land among
    that project's short-lived strings and keep their arenas mapped after it closes (≈ 1 MB
    more resident after each of 60 opens and closes at 1M samples). glibc hands free pages
    back one by one (`trim_heap`); under it the resident memory after a close stays level.

    Nothing is done when PYTHONMALLOC is set (the user's choice: PYTHONMALLOC=pymalloc keeps
    Python's own), in a frozen build (its interpreter ignores PYTHON* variables), after a
    restart already (a marker in the environment), or elsewhere than Linux with glibc."""
    if (os.environ.get("PYTHONMALLOC") or os.environ.get(_ALLOCATOR_MARK) or getattr(sys, "frozen", False)
            or glibc() is None or not sys.executable or python_allocator() == "malloc"):
        return
    args = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    env = dict(os.environ, PYTHONMALLOC="malloc", **{_ALLOCATOR_MARK: "1"})
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        os.execve(sys.executable, [sys.executable, *args[1:]], env)
    except OSError:  # cannot start it again: go on with pymalloc
        return


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
