"""A panel in a non-modal window of its own beside the main window (Audit → Audit plans…,
Audit → Raters…): made once per main window, bound to its open project, told of every label
committed on any method's judging page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QVBoxLayout, QWidget


class PanelWindow(QDialog):
    """``panel`` in a window named ``name`` titled ``title``, of ``size``."""

    def __init__(self, window: Any, panel_of: Callable[[QWidget], QWidget], *, name: str, title: str,
                 size: tuple[int, int]) -> None:
        super().__init__(window)
        self.window_ = window
        self.setObjectName(name)
        self.setWindowTitle(title)
        self.setWindowFlag(Qt.WindowType.WindowMaximizeButtonHint, True)
        self.panel: Any = panel_of(self)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.panel)
        self.resize(*size)
        self._watched: set[int] = set()

    def watch_commits(self, slot: Callable[..., Any]) -> None:
        """Call ``slot`` after every label committed on any method's judging page (each
        controller connected once, those installed since the last call too)."""
        for views in self.window_.method_views.values():
            c = views.controller(self.window_)
            if c is not None and id(c) not in self._watched:
                self._watched.add(id(c))
                c.committed.connect(slot)


def show_in_front(w: QWidget) -> QWidget:
    """Show a side window above the main window, with the focus."""
    w.show()
    w.raise_()
    w.activateWindow()
    return w
