"""Process-wide memory settings (standard library only: imported first thing at start)."""

from __future__ import annotations

import ctypes
import os
import sys

_ARENAS_TUNED = False


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
        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc
        pass
