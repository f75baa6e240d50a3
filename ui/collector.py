"""Python's cyclic garbage collection on the GUI thread only (see `workstation.util.collection`).

Automatic collection is pinned off; a timer on the GUI thread collects each generation once
its count passes the threshold the automatic collector would have used, as it would have.
pyqtgraph's `GarbageCollector` does the same, but importing pyqtgraph here would put it in the
window's start-up (the window imports it only with its first plot), and this one also pins
collection off for `collection.paused` to respect."""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

from workstation.util import collection


class GuiThreadCollector(QObject):
    def __init__(self, parent: QObject | None = None, interval_ms: int = 500) -> None:
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        collection.pin_off()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check)
        self.timer.start()

    def check(self) -> None:
        """Collect the generations whose counts passed their thresholds (youngest first)."""
        l0, l1, l2 = gc.get_count()
        t0, t1, t2 = self.threshold
        if l0 > t0:
            gc.collect(0)
            if l1 > t1:
                gc.collect(1)
                if l2 > t2:
                    gc.collect(2)

    def stop(self) -> None:
        """Automatic collection back on (the timer stops)."""
        self.timer.stop()
        collection.unpin()


_collector: GuiThreadCollector | None = None


def install(app: QObject) -> GuiThreadCollector:
    """The application's collector (one per process), made on first call."""
    global _collector
    if _collector is None:
        _collector = GuiThreadCollector(app)
    return _collector
