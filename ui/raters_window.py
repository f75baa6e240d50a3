"""Audit → Raters…: the rater monitor panel (`ui.widgets.rater_monitor`) in a window of its own
beside the main window, bound to the open project. Labels committed (on any judging page) or
other changes of the project's data mark its figures out of date; it reads the labels again when
it is brought back to the front after that (the intervals' resamples take a moment: not on every
key), and on Refresh."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QWidget

from .panel_window import PanelWindow, show_in_front
from .widgets.rater_monitor import RaterMonitorPanel


class RatersWindow(PanelWindow):
    """The panel in a non-modal window; one per main window."""

    def __init__(self, window: Any) -> None:
        super().__init__(window, RaterMonitorPanel, name="ratersWindow", title="Raters", size=(1180, 640))
        self.stale = False
        window.state.project_changed.connect(self.follow_project)
        window.state.data_changed.connect(self._mark_stale)
        self.follow_project()

    def follow_project(self) -> None:
        self.stale = False
        self.panel.set_project(self.window_.state.project)
        self.watch_commits(self._mark_stale)

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
    return show_in_front(w)
