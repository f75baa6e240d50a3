"""Go to a sample: Ctrl+G, a sample id (or the start of one) with completion over all ids."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCompleter, QDialog, QDialogButtonBox, QLabel, QLineEdit, QVBoxLayout, QWidget


class GotoDialog(QDialog):
    """Ctrl+G: type a sample id (completion over all ids)."""

    def __init__(self, ids: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Go to sample")
        self.setObjectName("gotoDialog")
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("Sample id (or the start of one):"))
        self.edit = QLineEdit(self)
        self.edit.setObjectName("gotoEdit")
        self.edit.setMinimumWidth(380)
        comp = QCompleter(ids, self)
        comp.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        comp.setFilterMode(Qt.MatchFlag.MatchContains)
        self.edit.setCompleter(comp)
        # one Enter goes: a highlighted completion is taken, typed text is taken as it is
        comp.activated.connect(self._take_completion)
        self.edit.returnPressed.connect(self.accept)
        lay.addWidget(self.edit)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel,
                              self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)

    def _take_completion(self, text: str) -> None:
        self.edit.setText(text)
        self.accept()

    def value(self) -> str:
        return self.edit.text().strip()
