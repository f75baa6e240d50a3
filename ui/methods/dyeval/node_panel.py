"""The base of the DyEval page's node tabs (images, failure location, proposals, scene graph)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget


class NodePanel(QWidget):
    """One tab of the node shown: the session it acts through, the node's id (empty before
    `show_node`), and `column`, the tab's layout without margins."""

    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.node_id = ""
        self.column = QVBoxLayout(self)
        self.column.setContentsMargins(0, 0, 0, 0)

    @staticmethod
    def chooser_row(label: str, min_width: int, chosen: Callable[[], None]) -> tuple[QHBoxLayout, QComboBox]:
        """A row that starts with `label` and a stretching combo box that calls `chosen` when
        its current item changes; the caller adds the rest of the row."""
        row = QHBoxLayout()
        row.addWidget(QLabel(label))
        combo = QComboBox()
        combo.setMinimumWidth(min_width)
        combo.currentIndexChanged.connect(lambda _i: chosen())
        row.addWidget(combo, 1)
        return row, combo
