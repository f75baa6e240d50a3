"""One image with labelled boxes and a caption: the building block of the methods' pages.

`ImagePane.show(path, boxes, caption)` draws the image (through the window's `ImageCache`, so a
prefetched image costs no decode) with each `Box` as a rectangle in its colour, a tag with its
label, and an optional dashed style; a missing or unreadable image shows a neutral canvas with
the reason. Panes can be linked (`link(other)`) so zoom and pan follow each other. The mouse
wheel zooms, dragging pans, double-click fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen, QPixmap, QTransform
from PySide6.QtWidgets import (
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QLabel,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True)
class Box:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""
    color: str = "#4fc3f7"
    dashed: bool = False
    width: float = 2.0


class _View(QGraphicsView):
    transformed = Signal(object, int, int)  # QTransform, h scroll, v scroll

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setBackgroundBrush(QBrush(QColor("#1b1f27")))
        self._syncing = False
        self.horizontalScrollBar().valueChanged.connect(self._emit)
        self.verticalScrollBar().valueChanged.connect(self._emit)

    def wheelEvent(self, e):  # noqa: N802
        f = 1.2 if e.angleDelta().y() > 0 else 1 / 1.2
        self.scale(f, f)
        self._emit()

    def mouseDoubleClickEvent(self, e):  # noqa: N802
        self.fit()

    def fit(self) -> None:
        if self.scene() is not None and not self.scene().sceneRect().isEmpty():
            self.fitInView(self.scene().sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self._emit()

    def resizeEvent(self, e):  # noqa: N802
        super().resizeEvent(e)
        self.fit()

    def _emit(self, *_: object) -> None:
        if not self._syncing:
            self.transformed.emit(self.transform(), self.horizontalScrollBar().value(),
                                  self.verticalScrollBar().value())

    def follow(self, t: QTransform, h: int, v: int) -> None:
        self._syncing = True
        try:
            self.setTransform(t)
            self.horizontalScrollBar().setValue(h)
            self.verticalScrollBar().setValue(v)
        finally:
            self._syncing = False


class ImagePane(QWidget):
    """A caption above an image with boxes (see the module docstring)."""

    def __init__(self, cache: object | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cache = cache  # ui.image_cache.ImageCache, or None to decode directly
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.caption = QLabel("")
        self.caption.setWordWrap(True)
        self.caption.setObjectName("paneCaption")
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.view = _View(self)
        self.scene = QGraphicsScene(self)
        self.view.setScene(self.scene)
        lay.addWidget(self.caption)
        lay.addWidget(self.view, 1)
        self.error = ""
        self.box_items: list[QGraphicsRectItem] = []

    def link(self, other: "ImagePane") -> None:
        """Zoom and pan of the two panes follow each other."""
        self.view.transformed.connect(other.view.follow)
        other.view.transformed.connect(self.view.follow)

    def _image(self, path: str | Path) -> tuple[QPixmap | None, str]:
        from ui.image_cache import decode

        key = str(path)
        r = self.cache.get(key) if self.cache is not None else decode(key)  # type: ignore[attr-defined]
        if r.image is None:
            return None, r.error
        return QPixmap.fromImage(r.image), ""

    def show_image(self, path: str | Path | None, boxes: Sequence[Box] = (), caption: str = "",
                   size: tuple[float, float] | None = None) -> None:
        """Draw ``path`` (None: no image) with ``boxes`` in image pixels; ``size`` is the canvas
        when the image is missing (so boxes still land where they belong)."""
        self.scene.clear()
        self.box_items = []
        self.caption.setText(caption)
        pix, err = self._image(path) if path else (None, "no image")
        w: float
        h: float
        self.error = err
        if pix is not None:
            self.scene.addPixmap(pix)
            w, h = pix.width(), pix.height()
        else:
            w, h = size or (512.0, 512.0)
            self.scene.addRect(QRectF(0, 0, w, h), QPen(QColor("#3a4150")), QBrush(QColor("#262b35")))
            t = self.scene.addSimpleText(err or "no image")
            t.setBrush(QBrush(QColor("#c7ccd6")))
            t.setPos(12, 12)
        font = QFont()
        font.setPointSizeF(max(8.0, min(w, h) / 40))
        for b in boxes:
            pen = QPen(QColor(b.color))
            pen.setWidthF(b.width * max(1.0, min(w, h) / 512))
            if b.dashed:
                pen.setStyle(Qt.PenStyle.DashLine)
            item = self.scene.addRect(QRectF(b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1), pen)
            self.box_items.append(item)
            if b.label:
                tag = QGraphicsSimpleTextItem(b.label)
                tag.setFont(font)
                tag.setBrush(QBrush(QColor("#ffffff")))
                bg = self.scene.addRect(QRectF(0, 0, tag.boundingRect().width() + 6, tag.boundingRect().height() + 2),
                                        QPen(Qt.PenStyle.NoPen), QBrush(QColor(b.color)))
                bg.setPos(b.x1, max(0.0, b.y1 - tag.boundingRect().height() - 2))
                self.scene.addItem(tag)
                tag.setPos(b.x1 + 3, max(0.0, b.y1 - tag.boundingRect().height() - 1))
        self.scene.setSceneRect(QRectF(0, 0, w, h))
        self.view.fit()
