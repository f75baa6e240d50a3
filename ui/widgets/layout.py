"""Small layout helpers the window's pages share."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget


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
