"""The base of the DyEval page's node tabs (images, failure location, proposals, scene graph)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget


class NodePanel(QWidget):
    """One tab of the node shown: the session it acts through, the node's id (empty before
    `show_node`), and `column`, the tab's layout without margins."""

    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.node_id = ""
        self.column = QVBoxLayout(self)
        self.column.setContentsMargins(0, 0, 0, 0)
