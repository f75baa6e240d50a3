"""The pair viewer: a sample beside its counterfactual twin, with its K seeds below.

The twin is the sample of the same run and seed whose prompt is the current prompt's
`counterfactual_id`. Each side shows the prompt, the checker's verdict card (verdict chip,
reason, a confidence bar with its four components) and the image with its overlays
(`ui/overlay.py`). Zoom and pan are linked across the pair. A missing or unreadable image
shows a neutral canvas of the sample's W×H with the boxes and a message.

The viewer only reads the spatial session; what it shows of the checker and of the labels is the
session's policy (`SpatialSession.visibility`). Labelling is the judgement bar's job.
"""

from __future__ import annotations

import logging
import math
import weakref
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QIcon,
    QPainter,
    QPen,
    QPixmap,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGraphicsItem,
    QGraphicsPixmapItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced

from workstation.methods.spatial.types import RELATIONS, VERDICTS

from ... import theme
from ...image_cache import ImageCache, ImageResult
from .overlay import DEFAULT_LAYERS, LAYER_TITLES, LAYERS, OverlayLayer, OverlaySpec, overlay_spec
from .pair_index import PairIndex
from .session import SpatialSession
from workstation.methods.spatial.data import spatial_columns

log = logging.getLogger(__name__)

#: how long after the last step the label events of the samples ahead are read
LABELS_AHEAD_MS = 40


def image_key(state: SpatialSession, row: int) -> str:
    """Absolute path of a sample's image ("" when it has none)."""
    if state.project is None or state.dataset is None or row < 0:
        return ""
    rel = str(state.dataset.samples.image_path[row])
    return str(state.project.samples.image_file(rel)) if rel else ""


# ---------------------------------------------------------------------------------------------
# Image view
# ---------------------------------------------------------------------------------------------

class MessageItem(QGraphicsItem):
    """A note in a box at a fixed screen size, drawn up and right from its anchor (bottom-left)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)
        self.text = ""
        self.font = QFont()
        self.font.setPointSizeF(9.5)
        self._rect = QRectF()

    def set_text(self, text: str) -> None:
        self.prepareGeometryChange()
        self.text = text
        fm = QFontMetricsF(self.font)
        lines = text.split("\n")
        w = max(fm.horizontalAdvance(x) for x in lines) + 16
        h = fm.lineSpacing() * len(lines) + 10
        self._rect = QRectF(6, -h - 6, w, h)
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802
        return self._rect

    def paint(self, p: QPainter, option: Any, widget: QWidget | None = None) -> None:
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(20, 20, 20, 200))
        p.drawRoundedRect(self._rect, 4, 4)
        p.setPen(QColor("#f2f2f2"))
        p.setFont(self.font)
        p.drawText(self._rect.adjusted(8, 5, -8, -5),
                   Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.text)


class ImageView(QGraphicsView):
    """One image with overlays; wheel zooms under the cursor, drag pans, double-click fits."""

    view_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.SmoothPixmapTransform
                            | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumSize(160, 160)
        self.pixmap_item = QGraphicsPixmapItem()
        self.pixmap_item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.scene().addItem(self.pixmap_item)
        self.canvas_item = QGraphicsRectItem()
        self.canvas_item.setZValue(-1)
        self.scene().addItem(self.canvas_item)
        self.message_item = MessageItem()
        self.message_item.setZValue(10)
        self.scene().addItem(self.message_item)
        self.overlay = OverlayLayer(self.scene())
        self.fit_mode = True
        self.image_ok = False
        self.message = ""
        self.spec: OverlaySpec | None = None
        self._syncing = False
        self.setBackgroundBrush(QColor(theme.current().canvas))

    # ---- content ------------------------------------------------------------------------------
    def show_sample(self, spec: OverlaySpec | None, image: ImageResult | None, layers: dict[str, bool],
                    line_width: float, empty_text: str = "") -> None:
        self.spec = spec
        self.setBackgroundBrush(QColor(theme.current().canvas))
        if spec is None:
            self.overlay.clear()
            self.pixmap_item.setPixmap(QPixmap())
            self.canvas_item.setVisible(False)
            self.image_ok = False
            self._set_message(empty_text, QRectF(0, 0, 400, 300))
            self.scene().setSceneRect(QRectF(0, 0, 400, 300))
            self.fit()
            return
        w = max(1.0, spec.width if math.isfinite(spec.width) and spec.width > 0 else 512.0)
        h = max(1.0, spec.height if math.isfinite(spec.height) and spec.height > 0 else 512.0)
        rect = QRectF(0, 0, w, h)
        if image is not None and image.image is not None:
            pm = QPixmap.fromImage(image.image)
            self.pixmap_item.setPixmap(pm)
            # an image whose size differs from the recorded W×H is stretched onto it, so boxes line up
            if pm.width() and pm.height() and (pm.width() != w or pm.height() != h):
                self.pixmap_item.setTransform(QTransform.fromScale(w / pm.width(), h / pm.height()))
            else:
                self.pixmap_item.resetTransform()
            self.pixmap_item.setVisible(True)
            self.canvas_item.setVisible(False)
            self.image_ok = True
            self._set_message("", rect)
        else:
            self.pixmap_item.setPixmap(QPixmap())
            self.pixmap_item.setVisible(False)
            self.canvas_item.setRect(rect)
            self.canvas_item.setBrush(QBrush(QColor(theme.current().missing_canvas)))
            self.canvas_item.setPen(QPen(Qt.PenStyle.NoPen))
            self.canvas_item.setVisible(True)
            self.image_ok = False
            msg = image.error if image is not None else "no image"
            self._set_message(f"{msg}\n(neutral {int(w)}×{int(h)} canvas; boxes drawn from the detections)",
                              rect)
        self.overlay.build(spec, line_width)
        for layer in LAYERS:
            self.overlay.set_visible(layer, layers.get(layer, True))
        old = self.sceneRect()
        self.scene().setSceneRect(rect)
        if self.fit_mode or old != rect:
            self.fit()

    def _set_message(self, text: str, rect: QRectF) -> None:
        self.message = text
        if not text:
            self.message_item.setVisible(False)
            return
        self.message_item.set_text(text)
        self.message_item.setPos(QPointF(rect.left(), rect.bottom()))
        self.message_item.setVisible(True)

    # ---- zoom and pan -------------------------------------------------------------------------
    def fit(self) -> None:
        self.fit_mode = True
        r = self.sceneRect()
        if r.isEmpty():
            return
        self._syncing = True
        try:
            self.fitInView(r, Qt.AspectRatioMode.KeepAspectRatio)
        finally:
            self._syncing = False
        self.view_changed.emit()

    def zoom(self, factor: float) -> None:
        s = self.transform().m11() * factor
        if not (0.02 <= s <= 64):
            return
        self.fit_mode = False
        self.scale(factor, factor)
        self.view_changed.emit()

    @property
    def zoom_level(self) -> float:
        return float(self.transform().m11())

    def wheelEvent(self, e: QWheelEvent) -> None:  # noqa: N802
        steps = e.angleDelta().y() / 120.0
        if steps:
            self.zoom(1.25 ** steps)
        e.accept()

    def mouseDoubleClickEvent(self, e: Any) -> None:  # noqa: N802
        self.fit()

    def resizeEvent(self, e: Any) -> None:  # noqa: N802
        super().resizeEvent(e)
        if self.fit_mode:
            self.fit()

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802
        super().scrollContentsBy(dx, dy)
        if not self._syncing:
            self.view_changed.emit()

    def center_fraction(self) -> tuple[float, float]:
        c = self.mapToScene(self.viewport().rect().center())
        r = self.sceneRect()
        return ((c.x() - r.left()) / max(r.width(), 1e-9), (c.y() - r.top()) / max(r.height(), 1e-9))

    def follow(self, other: "ImageView") -> None:
        """Take the other view's zoom and centre (linked zoom and pan)."""
        if self._syncing:
            return
        self._syncing = True
        try:
            self.fit_mode = other.fit_mode
            if other.fit_mode:
                self.fitInView(self.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
            else:
                self.setTransform(other.transform())
                fx, fy = other.center_fraction()
                r = self.sceneRect()
                self.centerOn(QPointF(r.left() + fx * r.width(), r.top() + fy * r.height()))
        finally:
            self._syncing = False


# ---------------------------------------------------------------------------------------------
# Verdict card
# ---------------------------------------------------------------------------------------------

COMPONENTS = (("c_detection", "detection"), ("c_geometry", "geometry"), ("c_stability", "stability"),
              ("c_agreement", "agreement"))


class ConfidenceBar(QWidget):
    """The confidence as a long bar, its four components as short bars beneath, values written."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.values: dict[str, float] = {}
        self.conf = float("nan")
        self.tau = 0.0
        self.setMinimumHeight(58)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_values(self, conf: float, components: dict[str, float], tau: float = 0.0) -> None:
        self.conf = conf
        self.values = components
        self.tau = tau
        self.setToolTip("confidence = det^0.4 · geom^0.3 · stab^0.2 · agree^0.1\n" + "\n".join(
            f"{n}: {v:.3f}" for n, v in components.items()))
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(300, 58)

    def paintEvent(self, e: Any) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        t = theme.current()
        w = self.width()
        fm = p.fontMetrics()
        label_w = fm.horizontalAdvance("confidence ") + 4
        val_w = fm.horizontalAdvance("0.000") + 6
        bar_w = max(10, w - label_w - val_w)

        def bar(y: int, h: int, name: str, v: float, color: QColor) -> None:
            p.setPen(QColor(t.dim_text))
            p.drawText(QRectF(0, y, label_w, h), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                       name)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(t.border))
            p.drawRoundedRect(QRectF(label_w, y + 1, bar_w, h - 2), 3, 3)
            if math.isfinite(v):
                p.setBrush(color)
                p.drawRoundedRect(QRectF(label_w, y + 1, bar_w * min(max(v, 0.0), 1.0), h - 2), 3, 3)
            p.setPen(QColor(t.text))
            p.drawText(QRectF(label_w + bar_w + 4, y, val_w, h),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                       f"{v:.3f}" if math.isfinite(v) else "—")

        bar(0, 18, "confidence", self.conf, QColor(t.highlight))
        if self.tau > 0 and math.isfinite(self.conf):
            x = label_w + bar_w * self.tau
            p.setPen(QPen(QColor(t.text), 1.5, Qt.PenStyle.DashLine))
            p.drawLine(QPointF(x, 0), QPointF(x, 18))
        y = 21
        h = 9
        comp_color = QColor(t.highlight)
        comp_color.setAlpha(170)
        small = QFont(p.font())
        small.setPointSizeF(max(6.5, small.pointSizeF() - 1.5))
        p.setFont(small)
        cw = (w - 0) / 4
        for k, (key, name) in enumerate(COMPONENTS):
            v = self.values.get(name, float("nan"))
            x0 = k * cw
            p.setPen(QColor(t.dim_text))
            p.drawText(QRectF(x0, y, cw - 6, 14), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                       f"{name} {v:.2f}" if math.isfinite(v) else f"{name} —")
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(t.border))
            p.drawRoundedRect(QRectF(x0, y + 16, cw - 8, h), 2, 2)
            if math.isfinite(v):
                p.setBrush(comp_color)
                p.drawRoundedRect(QRectF(x0, y + 16, (cw - 8) * min(max(v, 0.0), 1.0), h), 2, 2)
        p.end()


RELATION_WORDS = {"left_of": "left of", "right_of": "right of", "above": "above", "below": "below"}


def delta_text(d: float, relation: str, label_a: str, label_b: str, margin: float) -> tuple[str, str]:
    """The signed centre offset d in the relation's words, and a tooltip with its convention.

    d = (cx_A − cx_B) / W for left_of / right_of, (cy_A − cy_B) / H for above / below (y grows
    downwards), so d < 0 means A is left of / above B. E.g. "cat is 0.53 W left of dog"."""
    if not math.isfinite(d):
        return "", ""
    horizontal = relation in ("left_of", "right_of")
    unit = "W" if horizontal else "H"
    where = ("left of" if d < 0 else "right of") if horizontal else ("above" if d < 0 else "below")
    if d == 0:
        where = "level with"
    text = (f"{label_a} is {abs(d):.2f} {unit} {where} {label_b} "
            f"(prompt: {RELATION_WORDS.get(relation, relation)}; margin {margin:g} {unit})")
    axis = "x" if horizontal else "y"
    tip = (f"d = (centre {axis} of A − centre {axis} of B) / {unit} = {d:+.3f}\n"
           f"d < 0: A is {'left of' if horizontal else 'above'} B; d > 0: A is "
           f"{'right of' if horizontal else 'below'} B.\n"
           f"PASS needs A {RELATION_WORDS.get(relation, relation)} B by more than the margin "
           f"(|d| > {margin:g}); |d| ≤ {margin:g} is UNDECIDABLE (near_boundary).")
    return text, tip


def judges_line(judges: list[dict[str, Any]]) -> str:
    """"Judges: GenEval's rule PASS (0.83) · twin consistency UNDECIDABLE (0.50) · …" in the
    verdicts' colours; — where a judge did not judge the sample."""
    from html import escape

    parts = []
    for j in judges:
        o = j["outcome"]
        sc = float(j["score"])
        score = f" ({sc:.2f})" if math.isfinite(sc) else ""
        if o is None:
            parts.append(f"{escape(j['short'], quote=False)} —{score}")
            continue
        color = theme.VERDICT_COLORS[VERDICTS.index(o)] if o in VERDICTS else ""
        word = f"<b style='color:{color}'>{escape(o)}</b>" if color else f"<b>{escape(o)}</b>"
        parts.append(f"{escape(j['short'], quote=False)} {word}{score}")
    return ("Judges: " + " · ".join(parts)) if parts else ""


class VerdictCard(QFrame):
    """Verdict chip, reason and confidence bar; in blind mode a neutral banner instead."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(2)
        top = QHBoxLayout()
        self.chip = QLabel("—")
        self.chip.setObjectName("verdictChip")
        self.chip.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.chip.setMinimumWidth(130)
        top.addWidget(self.chip)
        self.reason = QLabel("")
        self.reason.setWordWrap(True)
        self.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.reason, 1)
        self.human = QLabel("")
        self.human.setObjectName("dim")
        self.human.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.human)
        lay.addLayout(top)
        self.bar = ConfidenceBar(self)
        lay.addWidget(self.bar)
        self.verdict: int | None = None
        self.blind = False

    def show_verdict(self, verdicts: Any, row: int, blind: bool, human_text: str = "",
                     relation: str = "") -> None:
        self.blind = blind
        self.human.setText(human_text)
        self.reason.setToolTip("")
        if blind or verdicts is None or row < 0:
            self.verdict = None
            self.chip.setText("BLIND" if blind else "—")
            self.chip.setStyleSheet(f"background: {theme.NEUTRAL_COLOR};")
            self.chip.setToolTip("The checker's verdict and confidence are hidden during this audit"
                                 if blind else "no verdict")
            self.reason.setText("the checker's verdict is hidden during this audit" if blind else "")
            self.bar.setVisible(not blind and verdicts is not None)
            self.bar.set_values(float("nan"), {})
            return
        v = int(verdicts.verdict[row])
        self.verdict = v
        # room for two lines of reason whatever this one takes: a card whose height follows its
        # text would move and rescale the image below it from one sample to the next
        self.reason.setMinimumHeight(2 * self.reason.fontMetrics().lineSpacing())
        self.chip.setText(VERDICTS[v])
        self.chip.setStyleSheet(f"background: {theme.VERDICT_COLORS[v]};")
        self.chip.setToolTip(f"checker verdict under config {verdicts.config.name!r}")
        rt = verdicts.reason_text(row)
        d = float(verdicts.delta[row])
        geo, tip = delta_text(d, relation, str(verdicts.label_a[row]), str(verdicts.label_b[row]),
                              float(verdicts.config.margin))
        if geo and rt.startswith("near_boundary ("):
            # its |delta| and margin are the geometry's own words beside it: the full reason goes
            # to the tooltip, and the card keeps to two lines at the viewer's usual width
            tip = rt + ("\n" + tip if tip else "")
            rt = "near_boundary"
        self.reason.setText(" · ".join(x for x in (rt or "decided", geo) if x))
        self.reason.setToolTip(tip)
        self.bar.setVisible(True)
        self.bar.set_values(float(verdicts.conf[row]),
                            {name: float(getattr(verdicts, key)[row]) for key, name in COMPONENTS},
                            float(verdicts.config.tau))


# ---------------------------------------------------------------------------------------------
# One side of the pair
# ---------------------------------------------------------------------------------------------

class SidePanel(QWidget):
    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)  # tight: on a small screen every line above the image takes from it
        self.title = QLabel(title)
        self.title.setObjectName("dim")
        self.prompt = QLabel("")
        f = self.prompt.font()
        f.setPointSizeF(f.pointSizeF() + 2)
        f.setBold(True)
        self.prompt.setFont(f)
        self.prompt.setWordWrap(True)
        self.prompt.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta = QLabel("")
        self.meta.setObjectName("dim")
        self.meta.setWordWrap(True)  # a long sample id must not widen the window
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # every judge's outcome and score for this sample (hidden where the checker's verdict is),
        # on the title's line: it takes no height from the image (one line, cut at the pane's
        # width, the whole of it in the tooltip)
        self.judges = QLabel("")
        self.judges.setObjectName("judgeLines")
        self.judges.setWordWrap(False)
        self.judges.setTextFormat(Qt.TextFormat.RichText)
        self.judges.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.judges.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        title_row = QHBoxLayout()
        title_row.setContentsMargins(0, 0, 0, 0)
        title_row.addWidget(self.title)
        title_row.addSpacing(12)
        title_row.addWidget(self.judges, 1)
        lay.addLayout(title_row)
        lay.addWidget(self.prompt)
        lay.addWidget(self.meta)
        self.card = VerdictCard(self)
        lay.addWidget(self.card)
        self.labels = QLabel("")
        self.labels.setObjectName("annotatorLabels")
        self.labels.setWordWrap(True)
        self.labels.setTextFormat(Qt.TextFormat.RichText)
        self.labels.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.labels)
        self.view = ImageView(self)
        lay.addWidget(self.view, 1)
        self.row = -1


class SeedStrip(QListWidget):
    """The K seeds of the current prompt, as thumbnails with verdict colours; click to review one."""

    row_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListWidget.ViewMode.IconMode)
        self.setFlow(QListWidget.Flow.LeftToRight)
        self.setWrapping(False)
        self.setMovement(QListWidget.Movement.Static)
        self.setIconSize(QSize(54, 54))
        self.setFixedHeight(88)  # low: on a small screen the pair above it keeps the height
        self.setSpacing(4)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.itemClicked.connect(lambda it: self.row_clicked.emit(int(it.data(Qt.ItemDataRole.UserRole))))
        #: what each item shows: (row, verdict code, current, thumbnail in, theme name)
        self.shown: list[tuple[Any, ...]] = []

    def clear(self) -> None:
        super().clear()
        self.shown = []

    def rows(self) -> list[int]:
        return [int(self.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.count())]


def _thumb_icon(img: ImageResult | None, verdict: int | None, current: bool, size: int = 72) -> QIcon:
    pm = QPixmap(size, size)
    pm.fill(QColor(theme.current().missing_canvas))
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    if img is not None and img.image is not None:
        scaled = img.image.scaled(size, size, Qt.AspectRatioMode.KeepAspectRatio,
                                  Qt.TransformationMode.SmoothTransformation)
        p.drawImage((size - scaled.width()) // 2, (size - scaled.height()) // 2, scaled)
    else:
        p.setPen(QColor("#d0d0d0"))
        p.drawText(pm.rect(), Qt.AlignmentFlag.AlignCenter, "no image")
    p.setBrush(Qt.BrushStyle.NoBrush)
    if current:  # the seed under review: a ring in the highlight colour around its verdict frame
        p.setPen(QPen(QColor(theme.current().highlight), 6))
        p.drawRect(3, 3, size - 7, size - 7)
        p.setPen(QPen(theme.verdict_color(verdict), 2))
        p.drawRect(7, 7, size - 15, size - 15)
    else:
        p.setPen(QPen(theme.verdict_color(verdict), 3))
        p.drawRect(1, 1, size - 3, size - 3)
    p.end()
    return QIcon(pm)


# ---------------------------------------------------------------------------------------------
# The pair viewer
# ---------------------------------------------------------------------------------------------

class PairViewer(QWidget):
    """Sample (left) and counterfactual twin (right), linked zoom, layer toggles, seed strip."""

    refreshed = Signal()  # after the views show the current sample (benchmarks wait on it)

    def __init__(self, state: SpatialSession, cache: ImageCache | None = None, thumbs: ImageCache | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.cache = cache if cache is not None else ImageCache()
        self.thumbs = thumbs if thumbs is not None else ImageCache(max_side=160, max_bytes=32 * 1024 * 1024)
        self.index: PairIndex | None = None
        #: (dataset, row) → that sample's judges (`item_judges`)
        self._judges_cache: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self.layers = dict(DEFAULT_LAYERS)
        self.line_width = 2.0
        self.left_row = -1
        self.right_row = -1
        self._blind_hid = False
        self._geometry_before_blind = True

        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.setSpacing(6)
        # toolbar: layers, line width, fit, zoom
        bar = QHBoxLayout()
        bar.setSpacing(10)
        self.layer_boxes: dict[str, QCheckBox] = {}
        for k, layer in enumerate(LAYERS, start=1):
            cb = QCheckBox(f"{LAYER_TITLES[layer]} ({k})")
            cb.setObjectName(f"layer_{layer}")
            cb.setChecked(self.layers[layer])
            cb.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            cb.toggled.connect(lambda on, name=layer: self.set_layer(name, on))
            self.layer_boxes[layer] = cb
            bar.addWidget(cb)
        bar.addStretch(1)
        bar.addWidget(QLabel("Line width"))
        self.width_spin = QSpinBox()
        self.width_spin.setObjectName("lineWidth")
        self.width_spin.setRange(1, 8)
        self.width_spin.setValue(int(self.line_width))
        self.width_spin.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.width_spin.valueChanged.connect(lambda v: self.set_line_width(float(v)))
        bar.addWidget(self.width_spin)
        self.fit_button = QPushButton("Fit (0)")
        self.fit_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.fit_button.clicked.connect(self.fit)
        bar.addWidget(self.fit_button)
        self.zoom_label = QLabel("fit")
        self.zoom_label.setObjectName("dim")
        self.zoom_label.setMinimumWidth(48)
        bar.addWidget(self.zoom_label)
        lay.addLayout(bar)
        bar2 = QHBoxLayout()
        bar2.setSpacing(10)
        self.legend = QLabel("")
        self.legend.setObjectName("overlayLegend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setToolTip("A box takes its object's colour in both panes (A and B swap roles in the "
                               "twin); its tag names the role. Dashed: the secondary detector; dotted: "
                               "perturbed copies; thin grey: the other detections.")
        bar2.addWidget(self.legend, 1)
        self.raw_box = QCheckBox("Raw image on the right")
        self.raw_box.setObjectName("rawBeside")
        self.raw_box.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.raw_box.setToolTip("Show this sample's image without any overlay on the right, instead of "
                                "the counterfactual twin (zoom and pan stay linked)")
        self.raw_box.toggled.connect(self.set_raw_beside)
        bar2.addWidget(self.raw_box)
        lay.addLayout(bar2)

        split = QSplitter(Qt.Orientation.Horizontal, self)
        self.left = SidePanel("Sample")
        self.right = SidePanel("Counterfactual twin (same seed)")
        split.addWidget(self.left)
        split.addWidget(self.right)
        split.setChildrenCollapsible(False)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([1000, 1000])
        lay.addWidget(split, 1)

        strip_row = QHBoxLayout()
        self.strip_label = QLabel("Seeds")
        self.strip_label.setObjectName("dim")
        strip_row.addWidget(self.strip_label)
        self.strip = SeedStrip(self)
        self.strip.row_clicked.connect(self._strip_clicked)
        strip_row.addWidget(self.strip, 1)
        lay.addLayout(strip_row)

        self.left.view.view_changed.connect(lambda: self._sync(self.left.view, self.right.view))
        self.right.view.view_changed.connect(lambda: self._sync(self.right.view, self.left.view))
        state.current_changed.connect(self.refresh)
        state.verdicts_changed.connect(self._on_verdicts)
        state.dataset_changed.connect(self._on_dataset)
        state.project_changed.connect(self._on_dataset)
        state.labels_changed.connect(self._on_labels)
        state.queue_changed.connect(self._on_queue)
        self.cache.loaded.connect(self._on_loaded)
        self.thumbs.loaded.connect(self._on_thumb_loaded)
        theme.signals().changed.connect(self._on_theme)
        # the strip is drawn once for the thumbnails and labels that arrive in one pass of events
        self._strip_later = qdebounced(self._refresh_strip, timeout=0, timer_type=Qt.TimerType.CoarseTimer,
                                       parent=self)
        self._strip_waiting: set[str] = set()  # thumbnails the strip shows a placeholder for
        # the label events of the samples ahead, read once the auditor pauses on a pair
        self._labels_ahead: list[str] = []
        self._labels_later = qdebounced(self._read_labels_ahead, timeout=LABELS_AHEAD_MS,
                                        timer_type=Qt.TimerType.CoarseTimer, parent=self)
        self._on_dataset()

    # ---- state ----------------------------------------------------------------------------------
    def _on_verdicts(self) -> None:
        """New verdicts (a slider moved): redraw now if shown, else when shown."""
        self._judges_cache.clear()  # a config kept with its verdicts is a judge of its own
        if self.isVisible():
            self.refresh()
        else:
            self._verdicts_stale = True

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if getattr(self, "_verdicts_stale", False):
            self.refresh()

    def _on_dataset(self) -> None:
        ds = self.state.dataset
        index = PairIndex.of(ds) if ds is not None and ds.n else None
        if index is self.index and index is not None:
            return  # several signals announce one load
        self.index = index
        self._judges_cache.clear()
        self.cache.clear()
        self.thumbs.clear()
        self.refresh()

    @property
    def blind(self) -> bool:
        """Hide the checker: the policy hides the outcome of the sample under review (a blind
        audit, or a re-check in any audit)."""
        return not self.state.visibility().outcome

    def _on_queue(self) -> None:
        """A blind queue hides the margin band and centres (the checker's UNDECIDABLE zone)
        until the auditor asks for them; leaving it restores the layer as it was."""
        blind = not self.state.view_visibility().outcome
        if blind and not self._blind_hid:
            self._geometry_before_blind = self.layers["geometry"]
            self._blind_hid = True
            self.set_layer("geometry", False)
        elif not blind and self._blind_hid:
            self._blind_hid = False
            self.set_layer("geometry", self._geometry_before_blind)
        self.refresh()

    def _on_theme(self, _name: str) -> None:
        self.refresh()

    def _on_labels(self, sid: str) -> None:
        ds = self.state.dataset
        if ds is None or self.left_row < 0:
            return
        if sid == "" or sid in (str(ds.samples.sample_id[self.left_row]),
                                str(ds.samples.sample_id[self.right_row]) if self.right_row >= 0 else None):
            self._refresh_cards()
            self._strip_later()

    def _on_loaded(self, key: str) -> None:
        if key in (image_key(self.state, self.left_row), image_key(self.state, self.right_row)):
            self.refresh()

    def _on_thumb_loaded(self, key: str) -> None:
        if key in self._strip_waiting:  # not one the strip shows (a read ahead): nothing to draw
            self._strip_later()

    # ---- drawing --------------------------------------------------------------------------------
    def refresh(self, *_: Any) -> None:
        self._verdicts_stale = False
        st = self.state
        ds = st.dataset
        row = st.current
        if ds is None or self.index is None or row < 0 or row >= ds.n:
            self.left_row = self.right_row = -1
            for side in (self.left, self.right):
                side.prompt.setText("")
                side.meta.setText("")
                side.card.show_verdict(None, -1, False)
                side.judges.setText("")
                side.labels.setText("")
                side.view.show_sample(None, None, self.layers, self.line_width,
                                      "Open a project, then pick a sample in Browse"
                                      if side is self.left else "")
            self.strip.clear()
            self.refreshed.emit()
            return
        self.left_row = row
        self.right_row = self.index.twin(row)  # T still swaps to the twin while the raw image shows
        self.right.title.setText("Same sample, raw image (no overlays)" if self.raw_beside
                                 else "Counterfactual twin (same seed)")
        self._show_side(self.left, self.left_row)
        if self.raw_beside:
            self._show_side(self.right, row, raw=True)
        else:
            self._show_side(self.right, self.right_row)
        self._update_legend()
        self.right.view.follow(self.left.view)
        self._update_zoom_label()
        self._refresh_strip()
        self.refreshed.emit()

    @property
    def raw_beside(self) -> bool:
        return self.raw_box.isChecked()

    def set_raw_beside(self, on: bool) -> None:
        """The right pane shows the same sample's plain image (on) or the counterfactual twin."""
        if self.raw_box.isChecked() != on:
            self.raw_box.setChecked(on)  # comes back here through toggled
            return
        self.refresh()

    def _show_side(self, side: SidePanel, row: int, raw: bool = False) -> None:
        st = self.state
        ds = st.dataset
        side.row = row
        if row < 0:
            side.prompt.setText("(no counterfactual twin with this seed in this run)")
            side.meta.setText("")
            side.card.show_verdict(None, -1, self.blind)
            side.judges.setText("")
            side.labels.setText("")
            side.view.show_sample(None, None, self.layers, self.line_width, "no twin sample")
            return
        assert ds is not None and self.index is not None  # a row is shown only with its data
        s = ds.samples
        sc = spatial_columns(ds)
        side.prompt.setText(self.index.prompt_text(row))
        side.meta.setText(f"{s.sample_id[row]}  ·  run {s.run_id[row]}  ·  seed {int(s.seed[row])}  ·  "
                          f"{RELATIONS[int(sc.relation[row])]}  ·  A = {sc.label_a[row]}, B = {sc.label_b[row]}  ·  "
                          f"{int(s.width[row])}×{int(s.height[row])}")
        side.card.show_verdict(st.verdicts, row, self.blind, self._human_text(row),
                               RELATIONS[int(sc.relation[row])])
        line = self._judges_html(row)
        side.judges.setText(line)
        side.judges.setToolTip(line + "<br>Every automatic judge of this sample (docs/judges.md): its outcome "
                               "and, in brackets, its score; — where it did not judge it" if line else "")
        side.judges.setVisible(bool(line))
        side.labels.setText(self._annotations_html(row))
        spec = overlay_spec(ds, st.verdicts, row, blind=self.blind, raw=raw)
        key = image_key(st, row)
        img = self.cache.get(key, display=str(s.image_path[row])) if key else ImageResult(
            None, "this sample has no image file")
        side.view.show_sample(spec, img, self.layers, self.line_width)

    def _update_legend(self) -> None:
        spec = self.left.view.spec
        if spec is None or not spec.colors:
            self.legend.setText("")
            return
        swatches = "  ".join(f"<span style='color:{c}; font-weight:bold'>■ {n}</span>"
                             for n, c in spec.colors.items())
        role = ("" if spec.blind else
                " · tag = role in this prompt (A: subject, B: reference)")
        self.legend.setText(f"Box colour = object, the same in both panes: {swatches}{role}")

    def _refresh_cards(self) -> None:
        for side in (self.left, self.right):
            if side.row >= 0:
                assert self.state.dataset is not None  # a row is shown only with its data
                rel = RELATIONS[int(spatial_columns(self.state.dataset).relation[side.row])]
                side.card.show_verdict(self.state.verdicts, side.row, self.blind, self._human_text(side.row), rel)
                side.labels.setText(self._annotations_html(side.row))

    def _judges_html(self, row: int) -> str:
        """Each judge's outcome and score for the sample at `row` — only where the policy shows
        the checker's outcome (never in a blind audit or on a re-check). One sample's judges are
        computed (that sample and its twin), kept until the dataset changes."""
        st = self.state
        if self.blind or not st.view_visibility().outcome or st.project is None or row < 0:
            return ""
        ds = st.dataset
        key = (id(ds), row)
        got = self._judges_cache.get(key)
        if got is None:
            from workstation.methods.spatial.judges import item_judges
            from workstation.types import WorkstationError

            twin = self.index.twin(row) if self.index is not None else None
            try:
                got = item_judges(st.project, ds, row, twin)
            except WorkstationError as e:
                return f"<span style='color:gray'>judges: {e}</span>"
            if len(self._judges_cache) > 256:
                self._judges_cache.clear()
            self._judges_cache[key] = got
        return judges_line(got)

    def _annotations_html(self, row: int) -> str:
        """The labels of the sample at `row` the session's policy lets the viewer show: the
        annotator's own label of this pass, and (outside a blind audit) everyone's latest."""
        st = self.state
        if st.project is None or row < 0:
            return ""
        from html import escape

        shown = st.controller.shown_labels(row)
        vis = st.visibility() if row == st.current else st.view_visibility()
        parts = []
        for lab in shown:
            name = escape(lab.annotator) + (" (before this audit)" if lab.whose == "you earlier" else "")
            v = escape(lab.value) if lab.value else "—"
            note = " ".join((lab.notes or "").split())
            parts.append(f"<b>{name}</b>: {v}" + (f" — <i>“{escape(note)}”</i>" if note else ""))
        if not (vis.others and vis.own_earlier):
            return ("Your label in this audit: " + (" · ".join(parts) if parts else "none yet")
                    + " <span style='color:gray'>(other labels are hidden while you audit)</span>")
        return "Labels: " + " · ".join(parts) if parts else "Labels: none yet"

    def _human_text(self, row: int) -> str:
        """The latest human verdict of anyone, where the policy shows the annotators' labels."""
        vis = self.state.visibility() if row == self.state.current else self.state.view_visibility()
        if not vis.human:
            return ""
        h = self.state.human
        if row < 0 or row >= len(h) or h[row] < 0:
            return "human: —"
        return f"human: {VERDICTS[int(h[row])]}"

    def _refresh_strip(self) -> None:
        """The current prompt's seeds in the strip. Within one prompt (the next seed, a label, a
        thumbnail come in) only the items whose look changed are drawn again: rebuilding the
        strip on every step cost a relayout and a repaint of it."""
        st = self.state
        if self.index is None or self.left_row < 0 or st.dataset is None or self.left_row >= st.dataset.n:
            self.strip.clear()
            self._strip_waiting = set()
            return
        rows = self.index.seed_rows(self.left_row)
        v = st.verdicts
        look = theme.current().name
        want: list[tuple[tuple[Any, ...], ImageResult | None]] = []
        waiting: set[str] = set()
        for r in rows:
            key = image_key(st, r)
            img = self.thumbs.request(key) if key else ImageResult(None, "")
            if img is None:
                waiting.add(key)  # drawn again when it comes in (`_on_thumb_loaded`)
            code = None if (self.blind or v is None) else int(v.verdict[r])
            want.append(((r, code, r == self.left_row, img is not None, look), img))
        self._strip_waiting = waiting
        # the same number of seeds: the items are reused (a new set of items costs the list a
        # relayout on the next pass of the event loop)
        in_place = len(self.strip.shown) == len(rows) == self.strip.count()
        if not in_place:
            self.strip.clear()
        samples = st.dataset.samples
        for i, (shown, img) in enumerate(want):
            if in_place and self.strip.shown[i] == shown:
                continue
            r, code, current = shown[0], shown[1], shown[2]
            if in_place:
                it = self.strip.item(i)
            else:
                it = QListWidgetItem()
                self.strip.addItem(it)
            it.setIcon(_thumb_icon(img, code, current))
            it.setText(f"▶ seed {int(samples.seed[r])}" if current else f"seed {int(samples.seed[r])}")
            f = it.font()
            f.setBold(current)
            it.setFont(f)
            it.setData(Qt.ItemDataRole.UserRole, r)
            it.setToolTip(str(samples.sample_id[r]) + ("" if code is None else f" — {VERDICTS[code]}"))
        self.strip.shown = [shown for shown, _ in want]
        self.strip_label.setText(f"Seeds ({len(rows)})")

    def _strip_clicked(self, row: int) -> None:
        self.state.set_current(row)

    # ---- layers, zoom ---------------------------------------------------------------------------
    def set_layer(self, name: str, on: bool) -> None:
        self.layers[name] = on
        cb = self.layer_boxes[name]
        if cb.isChecked() != on:
            cb.setChecked(on)
        for side in (self.left, self.right):
            side.view.overlay.set_visible(name, on)

    def toggle_layer(self, name: str) -> None:
        self.set_layer(name, not self.layers[name])

    def set_line_width(self, w: float) -> None:
        w = float(min(max(w, 1.0), 8.0))
        self.line_width = w
        if self.width_spin.value() != int(w):
            self.width_spin.setValue(int(w))
        for side in (self.left, self.right):
            if side.view.spec is not None:
                side.view.overlay.build(side.view.spec, w)
                for layer in LAYERS:
                    side.view.overlay.set_visible(layer, self.layers[layer])

    def fit(self) -> None:
        self.left.view.fit()
        self.right.view.fit()
        self._update_zoom_label()

    def zoom(self, factor: float) -> None:
        self.left.view.zoom(factor)
        self._update_zoom_label()

    def _sync(self, src: ImageView, dst: ImageView) -> None:
        dst.follow(src)
        self._update_zoom_label()

    def _update_zoom_label(self) -> None:
        v = self.left.view
        self.zoom_label.setText("fit" if v.fit_mode else f"{v.zoom_level * 100:.0f}%")

    # ---- prefetch -------------------------------------------------------------------------------
    def prefetch_rows(self, rows: list[int]) -> None:
        """Decode these samples' images (and their twins') in the background, and the
        thumbnails of their seeds for the strip; read their label events (one query,
        `LABELS_AHEAD_MS` after the last call: a held arrow key reads none). Showing them then
        waits for no decode and asks the project nothing."""
        if self.index is None:
            return
        keys, ids, thumbs = [], [], []
        sid = self.state.dataset.samples.sample_id if self.state.dataset is not None else None
        groups: set[int] = set()
        for r in rows:
            keys.append(image_key(self.state, r))
            t = self.index.twin(r)
            if t >= 0:
                keys.append(image_key(self.state, t))
            if sid is not None:
                ids += [str(sid[r])] + ([str(sid[t])] if t >= 0 else [])
            group = int(self.index.key[r])
            if group not in groups:  # a new prompt: its strip's thumbnails
                groups.add(group)
                thumbs += [image_key(self.state, s) for s in self.index.seed_rows(r)]
        self.cache.prefetch([k for k in keys if k])
        self.thumbs.prefetch([k for k in thumbs if k])
        self._labels_ahead = ids
        if ids:
            self._labels_later()

    def _read_labels_ahead(self) -> None:
        from workstation.methods.spatial.store import SpatialStore

        p, ids = self.state.project, self._labels_ahead
        self._labels_ahead = []
        if p is None or not ids:
            return
        try:
            SpatialStore(p).prefetch_label_events(ids)
        except Exception as e:  # noqa: BLE001 - only a read ahead: the step reads what it shows itself
            log.debug("label events ahead not read: %s", e)


_COUNTS: list[Any] = [None, ""]  # (weak reference to the verdicts counted, their text)


def verdict_counts_text(verdicts: Any) -> str:
    if verdicts is None:
        return ""
    ref = _COUNTS[0]
    if ref is not None and ref() is verdicts:
        return _COUNTS[1]  # the status bar asks on every step; 1M verdicts are counted once
    v = np.asarray(verdicts.verdict)
    c = [int(np.count_nonzero(v == code)) for code in range(3)]
    text = f"PASS {c[0]} · FAIL {c[1]} · UNDECIDABLE {c[2]}"
    try:
        _COUNTS[:] = [weakref.ref(verdicts), text]
    except TypeError:  # an object without weak references: not cached
        pass
    return text
