"""Small layout helpers the window's pages share."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLayout, QLayoutItem, QSplitter, QVBoxLayout, QWidget


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


class FlowLayout(QLayout):
    """A row of widgets that wraps onto the next line where the width runs out (a bar of buttons
    beside an image pane, on a small screen), each at its size hint, `spacing` pixels apart."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 8) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802
        self._items.append(item)

    def count(self) -> int:
        from shiboken6 import isValid

        self._items = [it for it in self._items if isValid(it)]
        return len(self._items)

    def itemAt(self, i: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[i] if 0 <= i < len(self._items) else None

    def takeAt(self, i: int) -> QLayoutItem | None:  # noqa: N802
        return self._items.pop(i) if 0 <= i < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        w = h = 0
        for it in self._shown():
            s = it.sizeHint()
            w += s.width() + (self._gap if w else 0)
            h = max(h, s.height())
        m = self.contentsMargins()
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802
        size = QSize()
        for it in self._shown():
            size = size.expandedTo(it.minimumSize()).expandedTo(
                QSize(min(it.sizeHint().width(), 240), it.sizeHint().height()))
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _shown(self) -> list[QLayoutItem]:
        from shiboken6 import isValid

        self._items = [it for it in self._items if isValid(it)]  # a widget deleted takes its item
        return [it for it in self._items if not it.isEmpty()]

    def _place(self, rect: QRect, move: bool) -> int:
        m = self.contentsMargins()
        r = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line = r.x(), r.y(), 0
        for it in self._shown():
            hint = it.sizeHint()
            w = min(hint.width(), r.width())
            h = it.heightForWidth(w) if it.hasHeightForWidth() else hint.height()
            if x > r.x() and x + w > r.right() + 1:
                x, y, line = r.x(), y + line + self._gap // 2, 0
            if move:
                it.setGeometry(QRect(QPoint(x, y), QSize(w, h)))
            x += w + self._gap
            line = max(line, h)
        return y + line - rect.y() + m.bottom()
