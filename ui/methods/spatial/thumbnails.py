"""Thumbnail grid of the filtered samples, with verdict badges.

The grid is a QListView over the same `SampleTableModel` as the table (so it pages the same
query). Thumbnails are decoded lazily: the delegate asks the thumbnail cache only for the
items it paints, the cache decodes them scaled down on its thread pool, and the view repaints
when they arrive. Until then (or for a missing image) a neutral tile is drawn.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QListView, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget
from superqt.utils import qdebounced

from ... import theme
from ...image_cache import ImageCache
from .sample_table import (
    HUMAN_ROLE,
    PATH_ROLE,
    RELATION_ROLE,
    ROW_ROLE,
    SEED_ROLE,
    VERDICT_ROLE,
    SampleTableModel,
)
from .session import SpatialSession

TILE = 148  # thumbnail side in device-independent pixels
CAPTION = 34


class ThumbnailDelegate(QStyledItemDelegate):
    def __init__(self, grid: "ThumbnailGrid") -> None:
        super().__init__(grid)
        self.grid = grid

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802
        return QSize(TILE + 8, TILE + CAPTION + 8)

    def paint(self, p: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        t = theme.current()
        r: QRect = option.rect.adjusted(4, 4, -4, -4)
        tile = QRect(r.left(), r.top(), TILE, TILE)
        p.save()
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        if selected:
            p.fillRect(option.rect, QColor(t.highlight))
        p.fillRect(tile, QColor(t.missing_canvas))
        rel_path = index.data(PATH_ROLE) or ""
        img = self.grid.thumb_for(rel_path)
        if img is not None and img.image is not None:
            scaled = img.image
            if max(scaled.width(), scaled.height()) > TILE:
                scaled = scaled.scaled(TILE, TILE, Qt.AspectRatioMode.KeepAspectRatio,
                                       Qt.TransformationMode.SmoothTransformation)
            p.drawImage(tile.left() + (TILE - scaled.width()) // 2, tile.top() + (TILE - scaled.height()) // 2,
                        scaled)
        else:
            p.setPen(QColor("#e0e0e0"))
            msg = "loading…" if (img is None and rel_path) else ("no image" if not rel_path or img is None
                                                                else "image unreadable" if img.error.startswith(
                                                                    "cannot") else "image missing")
            p.drawText(tile, Qt.AlignmentFlag.AlignCenter, msg)
        # verdict badge (top right) and the human's (top left)
        v = index.data(VERDICT_ROLE)
        if v is not None and v >= 0:
            self._badge(p, QRect(tile.right() - 25, tile.top() + 4, 22, 22), theme.verdict_color(v),
                        theme.VERDICT_SHORT[v])
            pen = QPen(theme.verdict_color(v), 3)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(tile.adjusted(1, 1, -2, -2))
        h = index.data(HUMAN_ROLE)
        if h is not None and h >= 0:
            self._badge(p, QRect(tile.left() + 4, tile.top() + 4, 22, 22), QColor(40, 40, 40),
                        theme.VERDICT_SHORT[h], ring=theme.verdict_color(h))
        # caption
        p.setPen(QColor(t.highlight_text if selected else t.text))
        f = QFont(option.font)
        f.setPointSizeF(max(7.0, f.pointSizeF() - 1))
        p.setFont(f)
        cap = QRect(r.left(), tile.bottom() + 2, TILE, CAPTION - 2)
        sid = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        text = f"seed {index.data(SEED_ROLE)} · {index.data(RELATION_ROLE)}\n{sid}"
        p.drawText(cap, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWrapAnywhere,
                   p.fontMetrics().elidedText(text.split("\n")[0], Qt.TextElideMode.ElideRight, TILE) + "\n" +
                   p.fontMetrics().elidedText(sid, Qt.TextElideMode.ElideMiddle, TILE))
        p.restore()

    @staticmethod
    def _badge(p: QPainter, rect: QRect, color: QColor, text: str, ring: QColor | None = None) -> None:
        p.setPen(QPen(ring, 2) if ring is not None else Qt.PenStyle.NoPen)
        p.setBrush(color)
        p.drawEllipse(rect)
        p.setPen(QColor("white"))
        f = QFont(p.font())
        f.setBold(True)
        p.setFont(f)
        p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


class ThumbnailGrid(QListView):
    open_requested = Signal(int)

    def __init__(self, state: SpatialSession, model: SampleTableModel, thumbs: ImageCache | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("thumbnailGrid")
        self.state: SpatialSession = state  # type: ignore[assignment]  # shadows QAbstractItemView.state()
        self.thumbs = thumbs if thumbs is not None else ImageCache(max_side=TILE * 2, max_bytes=48 * 1024 * 1024)
        self.setModel(model)
        self.setModelColumn(0)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setMovement(QListView.Movement.Static)
        self.setUniformItemSizes(True)
        self.setSpacing(2)
        self.setSelectionMode(QListView.SelectionMode.SingleSelection)
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(256)
        self.setItemDelegate(ThumbnailDelegate(self))
        self.requested: set[str] = set()
        # one repaint for the thumbnails decoded close together
        self._repaint = qdebounced(self._update_viewport, timeout=30, timer_type=Qt.TimerType.CoarseTimer,
                                   parent=self)
        self.thumbs.loaded.connect(self._on_loaded)
        # a double-click activates the tile (as Enter does): one request, never two; an index the
        # model no longer holds (it was refreshed in between) requests nothing
        self.activated.connect(self._activated)
        theme.signals().changed.connect(self._on_theme)

    def _activated(self, ix: QModelIndex) -> None:
        row = ix.data(ROW_ROLE) if ix.isValid() else None
        if row is not None:
            self.open_requested.emit(int(row))

    def _on_loaded(self, _key: str) -> None:
        self._repaint()

    def _update_viewport(self) -> None:
        self.viewport().update()

    def _on_theme(self, _name: str) -> None:
        self.viewport().update()

    def thumb_for(self, rel_path: str) -> Any:
        """The cached thumbnail or None (a decode is queued: lazy loading)."""
        p = self.state.project
        if not rel_path or p is None:
            return None if rel_path else _NO_IMAGE
        key = str(p.samples.image_file(rel_path))
        self.requested.add(key)
        return self.thumbs.request(key)


class _NoImage:
    image = None
    error = "no image"


_NO_IMAGE = _NoImage()
