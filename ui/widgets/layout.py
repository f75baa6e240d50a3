"""Small layout helpers the window's pages share."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QSplitter, QVBoxLayout, QWidget


def splitter(orientation: Qt.Orientation, *widgets: QWidget, stretch: Sequence[int] = (),
             sizes: Sequence[int] = (), parent: QWidget | None = None) -> QSplitter:
    """A splitter holding `widgets` in order; `stretch` gives each its stretch factor (how it
    shares the splitter's growth) and `sizes` their first sizes, when given."""
    split = QSplitter(orientation, parent)
    for w in widgets:
        split.addWidget(w)
    for i, factor in enumerate(stretch):
        split.setStretchFactor(i, factor)
    if sizes:
        split.setSizes(list(sizes))
    return split


def row(*widgets: QWidget, stretch: Sequence[int] = ()) -> QHBoxLayout:
    """A row holding `widgets` left to right; `stretch` gives each its stretch factor (how it
    shares the row's width left over), when given."""
    lay = QHBoxLayout()
    for i, w in enumerate(widgets):
        lay.addWidget(w, stretch[i] if i < len(stretch) else 0)
    return lay


def column(*widgets: QWidget, margin: int = 0) -> QWidget:
    """A widget holding `widgets` one below the other at their natural heights, the space left
    below them, `margin` pixels inside its edges (a page's column of boxes)."""
    col = QWidget()
    lay = QVBoxLayout(col)
    lay.setContentsMargins(margin, margin, margin, margin)
    for w in widgets:
        lay.addWidget(w)
    lay.addStretch(1)
    return col
