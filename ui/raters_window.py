"""Audit → Raters…: the rater monitor panel (`ui.widgets.rater_monitor`) in a window of its own
beside the main window, bound to the open project. It reads the labels again whenever it is
brought back to the front and when the project's data change."""

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
        window.state.project_changed.connect(self.follow_project)
        window.state.data_changed.connect(self._refresh_if_shown)
        self.follow_project()

    def follow_project(self) -> None:
        self.panel.set_project(self.window_.state.project)

    def _refresh_if_shown(self) -> None:
        if self.isVisible():
            self.follow_project()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow() and self.panel.monitor is not None:
            self.panel.refresh()
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
