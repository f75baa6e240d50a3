"""Checker × human confusion matrix (3×3, rows checker, columns human) with row/column totals.

The decided 2×2 (PASS/FAIL by both) is shaded: green on the diagonal, red off it; the false
PASS cell (checker PASS, human FAIL) is the one calibration tries to empty.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHeaderView,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from workstation.methods.spatial.types import VERDICTS

from ....widgets.tables import display_only

_ROW = ["checker " + v if v != "UNDECIDABLE" else "checker UNDEC." for v in VERDICTS] + ["total"]
# on two lines: the panel's right column is narrower than the headers on one
_COL = ["human\n" + v if v != "UNDECIDABLE" else "human\nUNDEC." for v in VERDICTS] + ["total"]

_AGREE = QColor("#d8efe3")
_DISAGREE = QColor("#f7d4cc")
_FALSE_PASS = QColor("#eeaa99")
_TOTAL = QColor("#f0f0f0")
_INK = QColor("#151515")


class ConfusionView(QTableWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(4, 4, parent)
        self.setObjectName("confusion")
        self.setVerticalHeaderLabels(_ROW)
        self.setHorizontalHeaderLabels(_COL)
        display_only(self)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        # wide and high enough for its headers, each line whole (in a small window the splitter
        # would squeeze "human PASS" to "ıma PAS")
        fm = self.horizontalHeader().fontMetrics()
        col = max(fm.horizontalAdvance(line) for t in _COL for line in t.split("\n")) + 18
        row = max(fm.horizontalAdvance(t) for t in _ROW) + 18
        self.setMinimumWidth(row + 4 * col + 2 * self.frameWidth() + 4)
        self.horizontalHeader().setMinimumHeight(2 * fm.height() + 10)
        self.setMinimumHeight(max(140, 2 * fm.height() + 10 + 4 * (fm.height() + 6) + 2 * self.frameWidth()))
        self.setToolTip("rows: checker at the current τ (conf < τ counts as UNDECIDABLE); "
                        "columns: latest human label")
        self.matrix = np.zeros((3, 3), np.int64)
        for r in range(4):
            for c in range(4):
                it = QTableWidgetItem("")
                it.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                if r == 3 or c == 3:
                    bg = _TOTAL
                elif r < 2 and c < 2:
                    bg = _AGREE if r == c else (_FALSE_PASS if (r, c) == (0, 1) else _DISAGREE)
                else:
                    bg = QColor("white")
                it.setBackground(QBrush(bg))
                it.setForeground(QBrush(_INK))  # the cells are light in both themes
                self.setItem(r, c, it)
        self.set_matrix(self.matrix)

    def set_matrix(self, m: np.ndarray) -> None:
        m = np.asarray(m, np.int64).reshape(3, 3)
        self.matrix = m
        full = np.zeros((4, 4), np.int64)
        full[:3, :3] = m
        full[:3, 3] = m.sum(axis=1)
        full[3, :3] = m.sum(axis=0)
        full[3, 3] = m.sum()
        for r in range(4):
            for c in range(4):
                it = self.item(r, c)
                assert it is not None  # every cell has its item
                text = str(int(full[r, c]))
                if it.text() != text:
                    it.setText(text)

    def count(self, checker: str, human: str) -> int:
        """Cell by names, e.g. count('PASS', 'FAIL') = false PASS."""
        return int(self.matrix[VERDICTS.index(checker), VERDICTS.index(human)])
