"""Freed memory handed back to the system once the window rests after heavy work.

Each checker pass at a million samples allocates and frees about 0.1 GB of temporaries. The C
library keeps such freed pages (having freed a block of a few MB, it raises its thresholds for
both mapping large blocks and trimming its heap), so after a slider drag the window held about
0.1 GB more than before it, for as long as it stayed open. `IdleTrim.poke()` after such work
(re)starts a short timer; when the window has done no more of it by then, the heap is trimmed
(`release_freed_memory`: 1.5 ms after a drag at 1M) and Python's cache of source lines emptied:
Qt's binding reads the source of every module imported after it (≈10 MB for the window's
modules), which nothing reads again but a traceback, which reads the lines it needs back.

Trimming between the moves of a drag would make each move fault its temporaries' pages in
again; hence the wait.
"""

from __future__ import annotations

import linecache

from PySide6.QtCore import QObject, QTimer

from workstation.store import release_freed_memory

IDLE_MS = 400  # a drag's moves come every few tens of ms: a pause this long is its end


class IdleTrim(QObject):
    def __init__(self, parent: QObject | None = None, idle_ms: int = IDLE_MS) -> None:
        super().__init__(parent)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(idle_ms)
        self.timer.timeout.connect(self.trim)
        self.count = 0  # trims done

    def poke(self) -> None:
        """Work that freed memory was done: trim once none has followed for a while."""
        self.timer.start()

    def trim(self) -> None:
        self.timer.stop()
        linecache.clearcache()
        release_freed_memory()
        self.count += 1
