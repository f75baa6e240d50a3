"""Each metric's two scores of one triplet as bars, the failure marked.

`ScoreBars.set_rows(rows)` draws one block per metric: the metric's id, a bar for M(T, I_corr) and
one for M(T, I_adv) (lengths are the rescaled scores in [0, 1], the raw scores written beside),
and the verdict — "FAIL: M(adv) ≥ M(corr)" in red (a tie says so), "ranks I_corr higher" in
green, or "not scored". `rows` keeps what is drawn (tests read it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

CORR = "#009E73"  # Okabe–Ito green: the correct image
ADV = "#E69F00"  # orange: the prototypical image
FAIL = "#D55E00"  # vermilion
ROW_H = 19
BLOCK_H = 3 * ROW_H + 10


@dataclass(frozen=True)
class BarRow:
    metric: str
    sc: float  # rescaled M(T, I_corr), NaN if not scored
    pa: float  # rescaled M(T, I_adv)
    raw_corr: float
    raw_adv: float
    failed: bool
    tie: bool
    valid: bool

    def verdict(self) -> str:
        if not self.valid:
            return "not scored on both images"
        if self.tie:
            return "FAIL: tie, M(adv) = M(corr)"
        return "FAIL: M(adv) > M(corr)" if self.failed else "ranks I_corr higher"


def _raw(x: float) -> str:
    if not math.isfinite(x):
        return "–"
    return f"{x:.4g}"


class ScoreBars(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[BarRow] = []
        self.setObjectName("protobiasScoreBars")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)

    def set_rows(self, rows: Sequence[BarRow]) -> None:
        self.rows = list(rows)
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(420, max(ROW_H + 8, len(self.rows) * BLOCK_H + 6))

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def paintEvent(self, _e: object) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(pal.ColorRole.WindowText)
        dim = QColor(text)
        dim.setAlpha(150)
        font = QFont(self.font())
        bold = QFont(font)
        bold.setBold(True)
        if not self.rows:
            p.setPen(dim)
            p.drawText(self.rect().adjusted(4, 4, -4, -4),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                       "no metric has scored this triplet (run a score job)")
            return
        w = self.width()
        label_w = 58
        value_w = 70
        bar_w = max(60, min(420, w - label_w - value_w - 220))
        y = 2
        for r in self.rows:
            p.setFont(bold)
            p.setPen(text)
            p.drawText(QRectF(4, y, w - 8, ROW_H), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                       r.metric)
            y += ROW_H
            verdict_x = label_w + bar_w + value_w + 12
            col: QColor | str
            for i, (name, v, raw, col) in enumerate((("I_corr", r.sc, r.raw_corr, CORR), ("I_adv", r.pa, r.raw_adv, ADV))):
                yy = y + i * ROW_H
                p.setFont(font)
                p.setPen(dim)
                p.drawText(QRectF(10, yy, label_w - 10, ROW_H),
                           Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, name)
                p.setPen(QPen(dim, 1))
                p.setBrush(Qt.BrushStyle.NoBrush)
                frame = QRectF(label_w, yy + 3, bar_w, ROW_H - 6)
                p.drawRect(frame)
                if math.isfinite(v):
                    p.setPen(Qt.PenStyle.NoPen)
                    p.setBrush(QColor(col))
                    p.drawRect(QRectF(label_w, yy + 3, max(1.0, bar_w * min(max(v, 0.0), 1.0)), ROW_H - 6))
                p.setPen(text)
                p.drawText(QRectF(label_w + bar_w + 6, yy, value_w, ROW_H),
                           Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, _raw(raw))
            verdict = r.verdict()
            col = QColor(FAIL) if r.failed else (QColor(CORR) if r.valid else dim)
            if r.failed:  # the failure marked: a red frame around both bars and a red tag
                p.setPen(QPen(QColor(FAIL), 2))
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRoundedRect(QRectF(label_w - 4, y + 1, bar_w + value_w + 8, 2 * ROW_H - 2), 3, 3)
            p.setFont(bold if r.failed else font)
            p.setPen(col)
            p.drawText(QRectF(verdict_x, y, max(40, w - verdict_x - 4), 2 * ROW_H),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                       verdict)
            y += 2 * ROW_H + 10
        p.end()
