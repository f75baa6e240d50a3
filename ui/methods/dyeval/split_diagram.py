"""Algorithm 1's steps as a readable split diagram.

Each test is a box with its text, its step number, the split rule that made it and its verdict —
green PASS, red FAIL, grey while its images wait for judgements; a step that repeats an earlier
test is dashed and says which. Arrows run from the step whose cell is split to its halves, so
the diagram reads top-down as the paper's worked examples do; the failure triggers are outlined
in orange with a tag under their box ("trigger: A kimono." / "with: A tiny black crescent moon").
Clicking a box selects its step (`step_clicked`).
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import (
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsTextItem,
    QGraphicsView,
    QWidget,
)

from .style import FAIL_COLOR, PASS_COLOR, PENDING_COLOR, TRIGGER_COLOR

BOX_W = 210.0
GAP_X = 26.0
GAP_Y = 54.0
LEVEL_WORDS = {"root": "the failing prompt", "relations": "split by relations", "objects": "split by objects",
               "attributes": "split by attributes", "drop_attribute": "attribute dropped"}


class _Box(QGraphicsRectItem):
    def __init__(self, rect: QRectF, step_id: int, on_click: Any) -> None:
        super().__init__(rect)
        self.step_id = step_id
        self.on_click = on_click
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def mousePressEvent(self, e: Any) -> None:  # noqa: N802
        self.on_click(self.step_id)


def layout(steps: list[Any]) -> dict[int, tuple[float, int]]:
    """step id → (x centre in box units, depth): a tidy tree, leaves side by side, parents centred."""
    children: dict[int, list[int]] = {}
    for s in steps[1:]:
        children.setdefault(int(s.parent), []).append(int(s.step_id))
    pos: dict[int, tuple[float, int]] = {}
    next_x = [0.0]

    def place(sid: int, depth: int) -> float:
        kids = children.get(sid, [])
        if not kids:
            x = next_x[0]
            next_x[0] += 1.0
        else:
            xs = [place(k, depth + 1) for k in kids]
            x = (xs[0] + xs[-1]) / 2.0
        pos[sid] = (x, depth)
        return x

    if steps:
        place(int(steps[0].step_id), 0)
    return pos


class SplitDiagram(QGraphicsView):
    step_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("splitDiagram")
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setScene(QGraphicsScene(self))
        self.boxes: dict[int, _Box] = {}
        self.selected = -1
        self.trigger_steps: set[int] = set()

    def wheelEvent(self, e: Any) -> None:  # noqa: N802
        f = 1.15 if e.angleDelta().y() > 0 else 1 / 1.15
        self.scale(f, f)

    def _click(self, step_id: int) -> None:
        self.select(step_id)
        self.step_clicked.emit(step_id)

    def select(self, step_id: int) -> None:
        self.selected = step_id
        for sid, b in self.boxes.items():
            pen = b.pen()
            pen.setWidthF(5.0 if sid == step_id else (3.5 if sid in self.trigger_steps else 1.6))
            b.setPen(pen)

    def show_location(self, machine: Any | None, title: str = "") -> None:
        sc = self.scene()
        sc.clear()
        self.boxes = {}
        if machine is None:
            t = sc.addText("No failure location on this node.\nIt starts when a judged node's pass rate is low: "
                           "use the button above the tree, or 'Locate failures' on a bug prompt.")
            t.setDefaultTextColor(QColor(PENDING_COLOR))
            return
        steps = list(machine.steps)
        pos = layout(steps)
        trig: dict[int, list[Any]] = {}
        for t in machine.triggers:
            trig.setdefault(int(t.step), []).append(t)
        self.trigger_steps = set(trig)
        font = QFont()
        font.setPointSizeF(9.5)
        small = QFont(font)
        small.setPointSizeF(8.0)
        heights: dict[int, float] = {}
        texts: dict[int, QGraphicsTextItem] = {}
        for s in steps:
            verdict = s.verdict or "waiting for judgements"
            head = f"step {s.step_id} · {LEVEL_WORDS.get(s.level, s.level)}"
            if s.reused_from is not None:
                head += f" · same test as step {s.reused_from}"
            html = (f"<div style='color:#2a2f38;font-size:8pt'>{head}</div>"
                    f"<div style='color:#111;font-weight:600'>{_esc(s.text)}</div>"
                    f"<div style='color:#2a2f38;font-size:8pt'>{verdict}</div>")
            ti = QGraphicsTextItem()
            ti.setFont(font)
            ti.setTextWidth(BOX_W - 12)
            ti.setHtml(html)
            texts[s.step_id] = ti
            heights[s.step_id] = ti.boundingRect().height() + 8
        row_h: dict[int, float] = {}
        for sid, (_x, d) in pos.items():
            row_h[d] = max(row_h.get(d, 0.0), heights[sid])
        row_y: dict[int, float] = {}
        y = 0.0
        for d in sorted(row_h):
            row_y[d] = y
            y += row_h[d] + GAP_Y + (34.0 if any(pos[s][1] == d and s in trig for s in pos) else 0.0)
        rects: dict[int, QRectF] = {}
        for s in steps:
            x, d = pos[s.step_id]
            r = QRectF(x * (BOX_W + GAP_X), row_y[d], BOX_W, heights[s.step_id])
            rects[s.step_id] = r
        # arrows first (under the boxes)
        for s in steps[1:]:
            a, b = rects[int(s.parent)], rects[s.step_id]
            self._arrow(QPointF(a.center().x(), a.bottom()), QPointF(b.center().x(), b.top()))
        for s in steps:
            r = rects[s.step_id]
            fill = {"PASS": QColor(PASS_COLOR), "FAIL": QColor(FAIL_COLOR)}.get(s.verdict or "", QColor(PENDING_COLOR))
            fill = QColor.fromHsvF(fill.hsvHueF() if fill.hsvHueF() >= 0 else 0, 0.28 if s.verdict else 0.0,
                                   0.97 if s.verdict else 0.88)
            border = QColor(TRIGGER_COLOR) if s.step_id in trig else QColor({"PASS": PASS_COLOR, "FAIL": FAIL_COLOR}.get(
                s.verdict or "", PENDING_COLOR))
            pen = QPen(border, 3.5 if s.step_id in trig else 1.6)
            if s.reused_from is not None or s.verdict is None:
                pen.setStyle(Qt.PenStyle.DashLine)
            box = _Box(r, s.step_id, self._click)
            box.setBrush(QBrush(fill))
            box.setPen(pen)
            box.setToolTip(f"cell: {', '.join(s.cell)}\ncontext: {', '.join(s.context) or '—'}")
            sc.addItem(box)
            self.boxes[s.step_id] = box
            ti = texts[s.step_id]
            ti.setPos(r.left() + 6, r.top() + 4)
            sc.addItem(ti)
            for k, t in enumerate(trig.get(s.step_id, [])):
                tag = QGraphicsTextItem()
                tag.setFont(small)
                tag.setTextWidth(BOX_W + 40)
                ctx = f" — with: {_esc(t.context_text)}" if t.context_text else " — fails on its own"
                tag.setHtml(f"<span style='background:{TRIGGER_COLOR};color:#1a1a1a;font-weight:700'>&nbsp;trigger"
                            f"&nbsp;</span> <b>{_esc(t.cell_text)}</b><span style='color:#ffb366'>{ctx}</span>")
                tag.setPos(r.left(), r.bottom() + 2 + 16 * k)
                sc.addItem(tag)
        if title:
            ti = sc.addText(title)
            ti.setDefaultTextColor(QColor("#8a93a3"))
            ti.setPos(0, -28)
        sc.setSceneRect(sc.itemsBoundingRect().adjusted(-20, -20, 20, 20))
        if self.selected in self.boxes:
            self.select(self.selected)

    def _arrow(self, a: QPointF, b: QPointF) -> None:
        sc = self.scene()
        path = QPainterPath(a)
        mid = (a.y() + b.y()) / 2
        path.cubicTo(QPointF(a.x(), mid), QPointF(b.x(), mid), b)
        item = QGraphicsPathItem(path)
        item.setPen(QPen(QColor("#8a93a3"), 1.6))
        sc.addItem(item)
        ang = math.pi / 2  # the curve arrives vertically
        size = 7.0
        head = QPolygonF([b, QPointF(b.x() - size * math.cos(ang - 0.45), b.y() - size * math.sin(ang - 0.45)),
                          QPointF(b.x() - size * math.cos(ang + 0.45), b.y() - size * math.sin(ang + 0.45))])
        sc.addPolygon(head, QPen(QColor("#8a93a3")), QBrush(QColor("#8a93a3")))

    def fit(self) -> None:
        r = self.scene().sceneRect()
        if r.width() > 0:
            self.fitInView(r, Qt.AspectRatioMode.KeepAspectRatio)
            if self.transform().m11() > 1.3:
                self.resetTransform()
                self.scale(1.3, 1.3)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
