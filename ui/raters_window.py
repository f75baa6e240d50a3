"""Audit → Raters…: the rater monitor panel (`ui.widgets.rater_monitor`) in a window of its own
beside the main window, bound to the open project. Labels committed (on any judging page) or
other changes of the project's data mark its figures out of date; it reads the labels again when
it is brought back to the front after that (the intervals' resamples take a moment: not on every
key), and on Refresh."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QDialog, QVBoxLayout, QWidget

from .widgets.rater_monitor import RaterMonitorPanel


class RatersWindow(QDialog):
    """The panel in a non-modal window; one per main window."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window_ = window
        self.setObjectName("ratersWindow")
        self.setWindowTitle("Raters")
        self.setWindowFlag(Qt.WindowType.WindowMaximizeButtonHint, True)
        self.panel = RaterMonitorPanel(self)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.panel)
        self.resize(1180, 640)
        self.stale = False
        self._watched: set[int] = set()
        window.state.project_changed.connect(self.follow_project)
        window.state.data_changed.connect(self._mark_stale)
        self.follow_project()

    def follow_project(self) -> None:
        self.stale = False
        self.panel.set_project(self.window_.state.project)
        self._watch_controllers()

    def _watch_controllers(self) -> None:
        for views in self.window_.method_views.values():
            c = views.controller(self.window_)
            if c is not None and id(c) not in self._watched:
                self._watched.add(id(c))
                c.committed.connect(self._mark_stale)

    def _mark_stale(self, *_: object) -> None:
        self.stale = True

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow() and self.stale \
                and self.window_.isVisible():
            self.follow_project()
        super().changeEvent(event)


def open_raters(window: Any) -> QWidget:
    """Show the window's rater monitor (made on first use), on the task of the tab it was opened from."""
    w = getattr(window, "raters_window", None)
    if w is None:
        w = window.raters_window = RatersWindow(window)
    else:
        w.follow_project()
    views = window.current_views()
    c = views.controller(window) if views is not None else None
    if c is not None and getattr(c, "scheme", None) is not None:
        w.panel.select_task(c.scheme.task)
    w.show()
    w.raise_()
    w.activateWindow()
    return w
