"""Where Python's cyclic garbage collection may run.

A collection runs on whichever thread trips the allocation threshold. In the window's process
that can be a worker (a load, the checker, a job), and the garbage it frees there can hold Qt
objects, whose deletion off the GUI thread the Qt binding defers and which can crash the process.
The window therefore pins automatic collection off and collects on its own thread
(`ui.collector`); `paused()` turns it off around a load's second thread in any process.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_was_enabled = False
_pinned = False


@contextmanager
def paused() -> Iterator[None]:
    """Automatic collection off for the duration (nested and concurrent pauses counted); after
    the last one the collector is as the first found it, unless `pin_off` was called meanwhile."""
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled and not _pinned:
                gc.enable()


def pin_off() -> None:
    """Automatic collection off until `unpin`: the caller collects (`gc.collect`) on one thread."""
    global _pinned
    with _lock:
        _pinned = True
        gc.disable()


def unpin() -> None:
    """Automatic collection back on (unless a pause is under way: then after it)."""
    global _pinned, _was_enabled
    with _lock:
        _pinned = False
        if _pauses == 0:
            gc.enable()
        else:
            _was_enabled = True


def pinned() -> bool:
    return _pinned
