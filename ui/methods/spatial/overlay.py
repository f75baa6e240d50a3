"""What the pair viewer draws over an image: boxes, labels, centres and the margin band.

`overlay_spec(ds, verdicts, row)` gathers, from the core's arrays, everything to draw for one
sample (no Qt); `OverlayLayer` turns a spec into QGraphicsItems, listed per layer, so each
layer shows or hides by itself. Pens are cosmetic (their width is in screen pixels, whatever
the zoom) and labels ignore the view's transform, so a tag stays readable and sits outside
its box: a small box is never hidden by its own label.

Layers (keys 1–5 in the viewer): "others" (the other primary detections, thin; other boxes of
the prompt's objects above the score cut are "competing" and tagged), "secondary"
(the secondary detector's boxes, dashed), "perturbed" (boxes found on perturbed copies,
dotted), "geometry" (box centres, the centre-to-centre line and the UNDECIDABLE margin band
|d| ≤ m around B's centre on the relation's axis), "labels" (label + score tags).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QStyleOptionGraphicsItem,
    QWidget,
)

from workstation.dataset import Dataset
from workstation.methods.spatial.types import AMBIGUOUS, HORIZONTAL, RELATIONS
from workstation.types import PRIMARY, SECONDARY

from ... import theme
from workstation.methods.spatial.data import spatial_columns

LAYERS: tuple[str, ...] = ("others", "secondary", "perturbed", "geometry", "labels")
LAYER_TITLES = {"others": "Other boxes", "secondary": "Secondary", "perturbed": "Perturbed",
                "geometry": "Centres && margin", "labels": "Labels"}
DEFAULT_LAYERS = {"others": True, "secondary": True, "perturbed": False, "geometry": True, "labels": True}


@dataclass
class Box:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str
    score: float
    kind: str  # "A", "B", "other", "secondary", "secondary_A", "secondary_B", "perturbed", "object"
    variant: str = ""
    color: str = ""  # the object's colour (entity_colors); "" = the kind's colour

    @property
    def centre(self) -> tuple[float, float]:
        return (self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2


@dataclass
class OverlaySpec:
    width: float
    height: float
    relation: str
    label_a: str
    label_b: str
    boxes: list[Box] = field(default_factory=list)
    margin: float = 0.1
    a: Box | None = None
    b: Box | None = None
    colors: dict[str, str] = field(default_factory=dict)  # entity name -> box colour
    ambiguous: str = ""  # the object the checker found several of ("ambiguous"), if any
    blind: bool = False  # no trace of the checker's outcome: no roles, no "not found", no scores
    raw: bool = False  # the plain image: nothing drawn over it

    @property
    def horizontal(self) -> bool:
        return self.relation in HORIZONTAL

    def band(self) -> tuple[float, float] | None:
        """The margin band (lo, hi) in pixels on the relation's axis around B's centre."""
        if self.b is None:
            return None
        cx, cy = self.b.centre
        if self.horizontal:
            return cx - self.margin * self.width, cx + self.margin * self.width
        return cy - self.margin * self.height, cy + self.margin * self.height


def entity_colors(*names: str) -> dict[str, str]:
    """Box colour per object name: the names in alphabetical order take theme.OBJECT_COLORS in
    turn, so an object keeps its colour in a sample and in its twin (where A and B swap)."""
    out: dict[str, str] = {}
    for k, name in enumerate(sorted(set(names))):
        out[name] = theme.OBJECT_COLORS[k % len(theme.OBJECT_COLORS)]
    return out


def _det_range(ds: Dataset, row: int) -> tuple[int, int]:
    """Rows of ds.detections that belong to sample `row` (detections are grouped by sample)."""
    offsets = ds.detections.sample_offsets()
    if offsets is not None:  # the loader's detections: each sample's first row
        return (int(offsets[row]), int(offsets[row + 1])) if 0 <= row < len(offsets) - 1 else (0, 0)
    key = "ui_det_sorted"
    sidx = ds.detections.sample_idx
    if key not in ds.cache:
        ds.cache[key] = bool(len(sidx) < 2 or np.all(sidx[1:] >= sidx[:-1]))
    if ds.cache[key]:
        r = sidx.dtype.type(row)  # the column's own type: no cast of the whole column
        lo = int(np.searchsorted(sidx, r, "left"))
        hi = int(np.searchsorted(sidx, r, "right"))
        return lo, hi
    return -1, -1


def detection_rows(ds: Dataset, row: int) -> np.ndarray:
    lo, hi = _det_range(ds, row)
    if lo >= 0:
        return np.arange(lo, hi)
    return np.flatnonzero(ds.detections.sample_idx == row)


def overlay_spec(ds: Dataset, verdicts: Any, row: int, blind: bool = False, raw: bool = False) -> OverlaySpec:
    """Everything to draw for sample `row` under the given verdicts (None: no selection).

    `blind`: nothing that follows from the checker's outcome — no A/B selection (the prompt's
    objects' boxes above the score cut are drawn alike, tagged with their name only), no
    "not found" note, no margin band. `raw`: no boxes at all (the plain image)."""
    s = ds.samples
    d = ds.detections
    sc = spatial_columns(ds)
    rel = RELATIONS[int(sc.relation[row])]
    la, lb = str(sc.label_a[row]), str(sc.label_b[row])
    margin = float(verdicts.config.margin) if verdicts is not None else 0.1
    spec = OverlaySpec(float(s.width[row]), float(s.height[row]), rel, la, lb, margin=margin,
                       colors=entity_colors(la, lb), blind=blind, raw=raw)
    if raw:
        return spec
    sel = {}
    if verdicts is not None and not blind:
        for name in ("sel_a", "sel_b", "sel2_a", "sel2_b"):
            v = int(getattr(verdicts, name)[row])
            if v >= 0:
                sel[v] = name
    t_det = float(verdicts.config.t_det) if verdicts is not None else 0.0
    cut = max(t_det, float(verdicts.config.primary_threshold)) if verdicts is not None else 0.0
    if verdicts is not None and not blind and int(verdicts.reason[row]) == AMBIGUOUS:
        spec.ambiguous = la if int(verdicts.reason_detail[row]) == 1 else lb
    for k in detection_rows(ds, row).tolist():
        src = int(d.source[k])
        var = int(d.variant[k])
        label = str(d.labels_at(k))
        box_args = (float(d.x1[k]), float(d.y1[k]), float(d.x2[k]), float(d.y2[k]), label, float(d.score[k]))
        which = sel.get(k)
        ec = spec.colors.get(label, "")
        if var != 0:
            if src == PRIMARY and label in (la, lb) and float(d.score[k]) >= t_det:
                spec.boxes.append(Box(*box_args, kind="perturbed", variant=ds.variant_names[var]))
            continue
        if which == "sel_a":
            spec.a = Box(*box_args, kind="A", color=ec)
            spec.boxes.append(spec.a)
        elif which == "sel_b":
            spec.b = Box(*box_args, kind="B", color=ec)
            spec.boxes.append(spec.b)
        elif which == "sel2_a":
            spec.boxes.append(Box(*box_args, kind="secondary_A", color=ec))
        elif which == "sel2_b":
            spec.boxes.append(Box(*box_args, kind="secondary_B", color=ec))
        elif src == SECONDARY:
            spec.boxes.append(Box(*box_args, kind="secondary"))
        elif blind and label in (la, lb) and float(d.score[k]) >= t_det:
            spec.boxes.append(Box(*box_args, kind="object", color=ec))
        elif verdicts is not None and label in (la, lb) and float(d.score[k]) >= cut:
            # another box of one of the prompt's objects above the score cut: it competed with
            # the selected one (the cause of "ambiguous" when the two scores are close)
            spec.boxes.append(Box(*box_args, kind="competing", color=ec))
        else:
            spec.boxes.append(Box(*box_args, kind="other"))
    return spec


# ---------------------------------------------------------------------------------------------
# Qt items
# ---------------------------------------------------------------------------------------------

class TagItem(QGraphicsItem):
    """A label with a solid background, drawn at a fixed screen size above (or below) a point."""

    def __init__(self, text: str, color: QColor, below: bool = False, parent: QGraphicsItem | None = None,
                 text_color: QColor | None = None) -> None:
        super().__init__(parent)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)
        self.text = text
        self.color = QColor(color)
        self.text_color = text_color or QColor("white")
        self.font = QFont()
        self.font.setPointSizeF(8.5)
        self.font.setBold(True)
        fm = QFontMetricsF(self.font)
        w = fm.horizontalAdvance(text) + 8
        h = fm.height() + 2
        self._rect = QRectF(0, (1 if below else -h - 1), w, h)

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        p.setPen(Qt.PenStyle.NoPen)
        bg = QColor(self.color)
        bg.setAlpha(225)
        p.setBrush(bg)
        p.drawRoundedRect(self._rect, 2, 2)
        p.setPen(self.text_color)
        p.setFont(self.font)
        p.drawText(self._rect.adjusted(4, 0, -4, 0),
                   Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, self.text)


def _pen(color: str | QColor, width: float, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
    pen = QPen(QColor(color))
    pen.setCosmetic(True)
    pen.setWidthF(width)
    pen.setStyle(style)
    pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
    return pen


class OverlayLayer:
    """The overlay items of one image, listed per layer.

    Items are added to the scene directly (no item groups) and removed one by one, so that
    each is owned by exactly one side at any time; a layer is shown or hidden item by item.
    """

    KIND_STYLE = {
        "A": (theme.BOX_A, 1.0, Qt.PenStyle.SolidLine, "primary"),
        "B": (theme.BOX_B, 1.0, Qt.PenStyle.SolidLine, "primary"),
        "other": (theme.BOX_OTHER, 0.4, Qt.PenStyle.SolidLine, "others"),
        "secondary": (theme.BOX_SECONDARY, 0.5, Qt.PenStyle.DashLine, "secondary"),
        "secondary_A": (theme.BOX_A, 0.6, Qt.PenStyle.DashLine, "secondary"),
        "secondary_B": (theme.BOX_B, 0.6, Qt.PenStyle.DashLine, "secondary"),
        "perturbed": (theme.BOX_PERTURBED, 0.5, Qt.PenStyle.DotLine, "perturbed"),
        "object": (theme.BOX_NEUTRAL, 1.0, Qt.PenStyle.SolidLine, "primary"),
        "competing": (theme.BOX_OTHER, 0.8, Qt.PenStyle.DashDotLine, "others"),
    }
    Z = {"geometry": 1, "others": 2, "perturbed": 3, "secondary": 4, "primary": 5, "labels": 6}

    def __init__(self, scene: QGraphicsScene) -> None:
        self.scene = scene
        self.layers: dict[str, list[QGraphicsItem]] = {}
        self.items_by_kind: dict[str, list[QGraphicsItem]] = {}
        self.tags: list[TagItem] = []
        self.visible: dict[str, bool] = {}

    def clear(self) -> None:
        for items in self.layers.values():
            for it in items:
                self.scene.removeItem(it)
        self.layers = {}
        self.items_by_kind = {}
        self.tags = []

    def _add(self, layer: str, item: QGraphicsItem) -> None:
        item.setZValue(self.Z.get(layer, 5))
        item.setVisible(self.visible.get(layer, True))
        self.scene.addItem(item)
        self.layers.setdefault(layer, []).append(item)

    def build(self, spec: OverlaySpec, line_width: float = 2.0) -> None:
        self.clear()
        if spec.b is not None:
            self._build_geometry(spec, line_width)
        for b in spec.boxes:
            color, wfac, style, layer = self.KIND_STYLE[b.kind]
            color = b.color or color
            item = QGraphicsRectItem(QRectF(QPointF(b.x1, b.y1), QPointF(b.x2, b.y2)))
            item.setPen(_pen(color, max(1.0, line_width * wfac * (1.25 if b.kind in ("A", "B") else 1.0)),
                             style))
            item.setBrush(Qt.BrushStyle.NoBrush)
            if b.kind == "other":  # a dark halo keeps thin light boxes visible on light images
                halo = QGraphicsRectItem(item.rect())
                halo.setPen(_pen("#000000", item.pen().widthF() + 2))
                halo.setOpacity(0.55)
                self._add(layer, halo)
            tip = f"{b.label} {b.score:.2f} — " + {
                "A": "selected object A (primary detector)", "B": "selected object B (primary detector)",
                "other": "other primary detection", "secondary": "secondary detector",
                "secondary_A": "secondary detector's A", "secondary_B": "secondary detector's B",
                "perturbed": f"primary detector on the {b.variant} image",
                "object": "a detection of one of the prompt's objects",
                "competing": ("competing box: the scores are too close to choose (ambiguous)"
                              if b.label == spec.ambiguous else "competing box, not selected")}[b.kind]
            if spec.blind:
                tip = f"{b.label} — " + ("a detection of one of the prompt's objects" if b.kind == "object"
                                         else "another detection")
            item.setToolTip(tip)
            item.setData(0, b.kind)
            self._add(layer, item)
            self.items_by_kind.setdefault(b.kind, []).append(item)
            if b.kind in ("A", "B"):
                self._tag(f"{b.kind}: {b.label} {b.score:.2f}", QColor(color), b, spec)
            elif b.kind == "object":
                self._tag(b.label, QColor(color), b, spec)
            elif b.kind == "competing":
                self._tag(f"{b.label} {b.score:.2f} · " + ("competing" if b.label == spec.ambiguous
                                                           else "not selected"), QColor(color), b, spec)
        if not (spec.blind or spec.raw) and (spec.a is None or spec.b is None):
            missing = [n for n, bx in ((spec.label_a, spec.a), (spec.label_b, spec.b)) if bx is None]
            self._note(f"not found: {', '.join(missing)}", spec)

    def _tag(self, text: str, color: QColor, b: Box, spec: OverlaySpec) -> None:
        # outside the box: above it, or below when the box touches the image's top
        below = b.y1 < 0.06 * spec.height
        tag = TagItem(text, color, below=below)
        tag.setPos(QPointF(b.x1, b.y2 if below else b.y1))
        self._add("labels", tag)
        self.tags.append(tag)

    def _note(self, text: str, spec: OverlaySpec) -> None:
        tag = TagItem(text, QColor(40, 40, 40), below=True)
        tag.setPos(QPointF(4, 4))
        self._add("labels", tag)
        self.tags.append(tag)

    def _build_geometry(self, spec: OverlaySpec, line_width: float) -> None:
        lo, hi = spec.band()  # type: ignore[misc]
        band_color = QColor(theme.MARGIN_BAND)
        fill = QColor(band_color)
        fill.setAlpha(48)
        if spec.horizontal:
            rect = QRectF(lo, 0, hi - lo, spec.height)
        else:
            rect = QRectF(0, lo, spec.width, hi - lo)
        # a wide margin or a centre near the edge: the band stops at the image, never in the letterbox
        rect = rect.intersected(QRectF(0, 0, spec.width, spec.height))
        band = QGraphicsRectItem(rect)
        band.setBrush(QBrush(fill))
        band.setPen(_pen(band_color, 1.0, Qt.PenStyle.DashLine))
        axis = "x" if spec.horizontal else "y"
        band.setToolTip(f"UNDECIDABLE zone: |d| ≤ margin {spec.margin:g} around B's centre on the {axis} axis")
        band.setData(0, "margin_band")
        self._add("geometry", band)
        self.items_by_kind.setdefault("margin_band", []).append(band)
        tag = TagItem(f"margin ±{spec.margin:g}", band_color, below=True, text_color=QColor("black"))
        tag.setPos(QPointF(rect.left(), rect.top()) if spec.horizontal else QPointF(0, rect.top()))
        self._add("geometry", tag)
        # centres, and the line between them
        r = max(4.0, 0.012 * max(spec.width, spec.height))
        pts = []
        for b in (spec.a, spec.b):
            if b is None:
                continue
            color = b.color or theme.BOX_A
            cx, cy = b.centre
            pts.append(QPointF(cx, cy))
            for x1, y1, x2, y2 in ((cx - r, cy, cx + r, cy), (cx, cy - r, cx, cy + r)):
                ln = QGraphicsLineItem(x1, y1, x2, y2)
                ln.setPen(_pen(color, max(2.0, line_width)))
                ln.setData(0, "centre")
                self._add("geometry", ln)
                self.items_by_kind.setdefault("centre", []).append(ln)
        if len(pts) == 2:
            ln = QGraphicsLineItem(pts[0].x(), pts[0].y(), pts[1].x(), pts[1].y())
            ln.setPen(_pen("#ffffff", 1.0, Qt.PenStyle.DotLine))
            self._add("geometry", ln)

    def set_visible(self, layer: str, visible: bool) -> None:
        self.visible[layer] = visible
        for it in self.layers.get(layer, []):
            it.setVisible(visible)

    def visible_kinds(self) -> set[str]:
        """Kinds of the items now shown (tests ask what a user would see)."""
        out = set()
        for kind, items in self.items_by_kind.items():
            if any(i.isVisible() for i in items):
                out.add(kind)
        return out
