"""The page the window shows when no project is open, or when the open one holds no method's
data yet: what to do next, in the auditor's words, with the recent projects one click away."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QPushButton, QVBoxLayout, QWidget

from . import project_dialogs

if TYPE_CHECKING:
    from .main_window import MainWindow


class StartPage(QWidget):
    open_requested = Signal(str)  # a recent project's folder

    def __init__(self, window: MainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("startPage")
        self.w = window
        lay = QVBoxLayout(self)
        lay.setContentsMargins(40, 30, 40, 30)
        title = QLabel("T2I Audit Workstation")
        f = title.font()
        f.setPointSizeF(f.pointSizeF() * 1.8)
        f.setBold(True)
        title.setFont(f)
        lay.addWidget(title)
        self.hint = QLabel("")
        self.hint.setObjectName("startHint")
        self.hint.setWordWrap(True)
        self.hint.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.hint)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open project…  (Ctrl+O)")
        self.open_button.clicked.connect(lambda: window.open_dialog())
        self.new_button = QPushButton("New project…  (Ctrl+N)")
        self.new_button.clicked.connect(lambda: window.new_dialog())
        row.addWidget(self.open_button)
        row.addWidget(self.new_button)
        row.addStretch(1)
        lay.addLayout(row)
        self.recent_title = QLabel("Recent projects (double-click to open):")
        self.recent_title.setObjectName("dim")
        lay.addWidget(self.recent_title)
        self.recent = QListWidget()
        self.recent.setObjectName("recentProjects")
        self.recent.setMaximumHeight(220)
        self.recent.itemActivated.connect(lambda it: self.open_requested.emit(it.text()))
        lay.addWidget(self.recent)
        lay.addStretch(1)
        self.refresh()

    def show_opening(self, name: str, doing: str = "", note: str = "") -> None:
        """Say which project is opening (what its load is `doing`, and a `note` on it, in words)."""
        from html import escape

        self.hint.setText(f"Opening <b>{escape(name)}</b>… its samples appear once they are read."
                          + "".join(f"<br>{escape(t)}" for t in (doing, note) if t))

    def refresh(self) -> None:
        p = self.w.state.project
        if p is None:
            self.hint.setText(
                "Start here: open a project (Ctrl+O), or build the demo project with "
                "<code>python main.py demo</code> and open it. F1 lists every shortcut.")
        else:
            self.hint.setText(
                f"<b>{p.folder.name}</b> holds no evaluation data yet. Import a SpatialBench-UC run "
                "(File → Import a SpatialBench-UC run…), start a generation job (Jobs → New job…), or open a "
                "method from the Methods menu (a DyEval test tree starts empty).")
        items = project_dialogs.recent_projects()
        self.recent.clear()
        self.recent.addItems(items)
        self.recent.setVisible(bool(items))
        self.recent_title.setVisible(bool(items))
