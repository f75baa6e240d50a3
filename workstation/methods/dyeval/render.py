"""DyEval's procedural images: a prompt's scene graph drawn with the demo's shapes, by a scripted
model of known weaknesses (`weakness.py`).

`render_demo_row(row, seed, size)` is what the ``procedural`` generator calls for a DyEval prompt
row: the graph comes from ``row["attrs"]["graph"]`` (the prompt's own graph, or a failure-location
step's sub-graph) or, for a typed prompt without one, from the rule-based parser. Each object is a
shape of the demo's classes (`workstation.demo.scenes`: a class name keeps its own shape and
colour, another name gets one by hash) with a tag under it; attributes change it — a colour word
its colour, a size word its size, a count (or a plural) the number of copies, see-through
materials make it translucent, shiny ones give it a highlight, patterns draw on it; relations lay
the objects out ("on" / "above" one over the other, "under" below, "inside" one in the other,
"behind" partly hidden, others side by side); context phrases tint the scene (night, snow,
sunset, rain, fog, underwater) or change its style (watercolour, sketch, pixel art).

The model's failures are drawn too: an object it cannot draw becomes another class (with that
class's tag) or is left out, an ignored attribute is not drawn, a failed relation is laid out the
wrong way round, a failed pair loses one of its objects. The truth returned with the image says
PASS / FAIL and which weak elements failed; deterministic per (prompt text, seed).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...types import WorkstationError
from .scene_graph import SceneGraph, SceneObject
from .weakness import COUNT_WORDS, DEMO_WEAKNESSES, ImageTruth, KnownWeaknesses

COLOUR_HSV: dict[str, tuple[float, float, float]] = {
    "red": (2, 0.85, 0.85), "orange": (28, 0.9, 0.95), "yellow": (52, 0.85, 0.95), "green": (128, 0.7, 0.72),
    "blue": (215, 0.75, 0.88), "purple": (285, 0.6, 0.75), "pink": (330, 0.45, 0.97), "brown": (25, 0.7, 0.45),
    "black": (0, 0.0, 0.12), "white": (0, 0.0, 0.97), "gray": (0, 0.0, 0.55), "grey": (0, 0.0, 0.55),
    "golden": (45, 0.75, 0.88), "silver": (0, 0.03, 0.8), "violet": (275, 0.55, 0.88),
    "turquoise": (175, 0.7, 0.85), "beige": (40, 0.25, 0.9), "crimson": (350, 0.85, 0.7), "teal": (180, 0.8, 0.55),
}
DEFAULT_RADIUS = 0.17
SIZE_RADIUS: dict[str, float] = {"tiny": 0.06, "miniature": 0.07, "small": 0.1, "little": 0.1, "short": 0.13,
                                 "thin": 0.13, "narrow": 0.13, "big": 0.23, "large": 0.23, "tall": 0.21,
                                 "long": 0.21, "wide": 0.22, "thick": 0.21, "huge": 0.27, "giant": 0.28,
                                 "enormous": 0.28, "massive": 0.28}
SEE_THROUGH = frozenset({"glass", "crystal", "transparent", "translucent"})
SHINY = frozenset({"metallic", "shiny", "glossy", "metal", "steel", "silver", "golden"})
PATTERNS = frozenset({"striped", "checkered", "spotted", "polka-dotted"})

_ABOVE = frozenset({"on", "on top of", "above", "over", "atop", "onto", "upon"})
_BELOW = frozenset({"under", "below", "beneath", "underneath"})
_LEFT = frozenset({"to the left of", "on the left of", "left of"})
_RIGHT = frozenset({"to the right of", "on the right of", "right of"})
_INSIDE = frozenset({"inside", "within", "in", "into"})
_BEHIND = frozenset({"behind"})
_FRONT = frozenset({"in front of"})


@dataclass
class _Thing:
    """One object of the graph as it will be drawn."""

    oid: str
    name: str  # the graph's name
    drawn_as: str  # what the model drew (another class when it failed the object)
    shape: str
    hsv: tuple[float, float, float]
    r: float
    count: int = 1
    see_through: bool = False
    shiny: bool = False
    pattern: str = ""
    omitted: bool = False
    pos: tuple[float, float] | None = None
    copies: list[tuple[float, float]] = field(default_factory=list)
    boxes: list[list[float]] = field(default_factory=list)


def _hash(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()[:8], "little")


def _style(name: str) -> tuple[str, tuple[float, float, float]]:
    """Shape and colour of a name: a demo class keeps its own, another name gets one by hash."""
    from ...demo.scenes import COLOURS, SHAPES, STYLES

    key = name.lower()
    if key in STYLES:
        shape, colour = STYLES[key]
        return shape, (COLOURS[colour], 0.8, 0.85)
    h = _hash("dyeval-style", key)
    return SHAPES[h % len(SHAPES)], (float(h // 7 % 360), 0.55 + (h // 11 % 30) / 100, 0.8)


def _count(o: SceneObject) -> int:
    for a in o.attributes:
        if a.lower() in COUNT_WORDS:
            return COUNT_WORDS[a.lower()]
        if a.isdigit():
            return max(1, min(int(a), 8))
    plural = o.article == "" and o.name.lower().endswith("s") and not o.name.lower().endswith("ss")
    return 2 if plural else 1


def _things(g: SceneGraph, rng: np.random.Generator) -> dict[str, _Thing]:
    out: dict[str, _Thing] = {}
    for o in g.objects:
        shape, hsv = _style(o.name)
        t = _Thing(o.id, o.name, o.name, shape, hsv, DEFAULT_RADIUS, _count(o))
        for a in o.attributes:
            low = a.lower()
            if low in COLOUR_HSV:
                t.hsv = COLOUR_HSV[low]
            elif low in ("vibrant", "colorful"):
                t.hsv = (float(rng.uniform(0, 360)), 0.95, 0.95)
            elif low == "pastel":
                t.hsv = (float(rng.uniform(0, 360)), 0.3, 0.97)
            if low in SIZE_RADIUS:
                t.r = SIZE_RADIUS[low]
            t.see_through |= low in SEE_THROUGH
            t.shiny |= low in SHINY
            if low in PATTERNS:
                t.pattern = low
        if t.count > 1:
            t.r = min(t.r, 0.12 if t.count <= 3 else 0.085)
        if len(g.objects) >= 2:
            t.r = min(t.r, 0.19 if len(g.objects) == 2 else 0.14)
        out[o.id] = t
    return out


def _apply_failures(g: SceneGraph, things: dict[str, _Thing], truth: ImageTruth,
                    rng: np.random.Generator) -> set[str]:
    """Change what is drawn for each failed weak element; returns the relation ids drawn wrong."""
    from ...demo.classes import DEMO_OBJECTS

    wrong_rel: set[str] = set()
    for w in truth.failed:
        kind, _, rest = w.keys[0].partition(":")
        if w.kind == "object":
            t = things[rest]
            if rng.random() < 0.7:
                sub = DEMO_OBJECTS[int(rng.integers(len(DEMO_OBJECTS)))]
                t.drawn_as = sub
                t.shape, t.hsv = _style(sub)
            else:
                t.omitted = True
        elif w.kind == "attribute":
            oid, _, attr = rest.partition(":")
            t = things[oid]
            low = attr.lower()
            if low in COUNT_WORDS:
                t.count = max(1, t.count - 1 - int(rng.integers(2)))
            if low in SEE_THROUGH:
                t.see_through = False
            if low in SHINY:
                t.shiny = False
            if low in COLOUR_HSV:
                t.hsv = _style(t.name)[1]
            if low in SIZE_RADIUS:
                t.r = DEFAULT_RADIUS
        elif w.kind == "relation":
            wrong_rel.add(rest)
        elif w.kind == "together":
            things[w.keys[-1].partition(":")[2]].omitted = True
    if truth.noise:
        visible = [t for t in things.values() if not t.omitted]
        if visible:
            visible[int(rng.integers(len(visible)))].omitted = True
    return wrong_rel


def _clamp(t: _Thing, x: float, y: float) -> tuple[float, float]:
    e = t.r * 1.05 + 0.02
    return float(min(max(x, e), 1 - e)), float(min(max(y, e), 1 - e))


def _layout(g: SceneGraph, things: dict[str, _Thing], wrong: set[str], rng: np.random.Generator) -> list[str]:
    """Positions of every object; returns the drawing order (object ids)."""
    order = [o.id for o in g.objects]
    late: list[str] = []  # drawn after the others (contents, objects in front)
    early: list[str] = []  # drawn first (objects behind)

    def free(t: _Thing) -> None:
        placed = [(u.pos, u.r) for u in things.values() if u.pos is not None and u is not t]
        for _ in range(80):
            e = t.r * 1.05 + 0.03
            x, y = float(rng.uniform(e, 1 - e)), float(rng.uniform(e, 1 - e))
            if all(abs(x - p[0]) > 1.1 * (t.r + r) + 0.02 or abs(y - p[1]) > 1.1 * (t.r + r) + 0.02
                   for p, r in placed):
                t.pos = (x, y)
                return
        t.pos = _clamp(t, float(rng.uniform(0.2, 0.8)), float(rng.uniform(0.2, 0.8)))

    for r in g.relations:
        s, o = things[r.subject], things[r.object]
        pred = r.predicate.lower()
        if pred in _INSIDE and r.id not in wrong:
            o.r = max(o.r, s.r * 2.3)
        if o.pos is None and s.pos is None:
            free(o)
        if s.pos is not None and o.pos is not None:
            continue
        anchor, mover, sign = (o, s, 1.0) if s.pos is None else (s, o, -1.0)
        assert anchor.pos is not None
        ax, ay = anchor.pos
        gap = (s.r + o.r) * 1.2 + 0.02
        flip = -1.0 if r.id in wrong else 1.0
        if pred in _ABOVE:
            pos = (ax + float(rng.uniform(-0.03, 0.03)), ay - sign * flip * gap)
        elif pred in _BELOW:
            pos = (ax + float(rng.uniform(-0.03, 0.03)), ay + sign * flip * gap)
        elif pred in _LEFT:
            pos = (ax - sign * flip * gap, ay)
        elif pred in _RIGHT:
            pos = (ax + sign * flip * gap, ay)
        elif pred in _INSIDE and r.id not in wrong:
            pos = (ax, ay)
            late.append(r.subject)
        elif pred in _BEHIND and r.id not in wrong:
            pos = (ax + sign * 0.55 * o.r, ay - sign * 0.45 * o.r)
            early.append(r.subject)
        elif pred in _FRONT and r.id not in wrong:
            pos = (ax - sign * 0.45 * o.r, ay + sign * 0.4 * o.r)
            late.append(r.subject)
        else:  # side by side, the subject first (the wrong way round when failed)
            pos = (ax - sign * flip * gap, ay + float(rng.uniform(-0.04, 0.04)))
        mover.pos = _clamp(mover, *pos)
    for t in things.values():
        if t.pos is None:
            free(t)
    # copies of counted objects around their first position
    for t in things.values():
        assert t.pos is not None
        t.copies = [t.pos]
        for k in range(1, t.count):
            ang = 2 * math.pi * k / max(t.count, 2) + float(rng.uniform(-0.3, 0.3))
            d = 2.3 * t.r * (1 + (k - 1) // 6 * 0.9)
            t.copies.append(_clamp(t, t.pos[0] + d * math.cos(ang), t.pos[1] + d * math.sin(ang)))
    return early + [i for i in order if i not in early and i not in late] + late


def _context_effect(img: np.ndarray, phrase: str) -> np.ndarray:
    import cv2

    low = phrase.lower()
    f = img.astype(np.float32)
    if "night" in low or "dark" in low:
        f = f * 0.42 + np.array([10, 14, 40], np.float32)
    elif "snow" in low or "winter" in low:
        f = f * 0.6 + 255 * 0.4
    elif "sunset" in low or "sunrise" in low or "autumn" in low:
        f = f * 0.7 + np.array([255, 140, 60], np.float32) * 0.3
    elif "rain" in low or "storm" in low:
        f = f * 0.65 + np.array([90, 100, 125], np.float32) * 0.35
    elif "underwater" in low or "ocean" in low:
        f = f * 0.55 + np.array([20, 110, 150], np.float32) * 0.45
    elif "fog" in low:
        f = cv2.GaussianBlur(f, (0, 0), 2.5) * 0.5 + 200 * 0.5
    elif "watercolor" in low or "impressionism" in low:
        f = cv2.GaussianBlur(f, (0, 0), 2.0) * 0.85 + 255 * 0.15
    elif "sketch" in low or "charcoal" in low or "drawing" in low:
        grey = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
        f = np.repeat((grey * 0.6 + 100)[:, :, None], 3, axis=2)
    elif "pixel" in low or "mosaic" in low:
        s = img.shape[0]
        small = cv2.resize(img, (max(8, s // 16), max(8, s // 16)), interpolation=cv2.INTER_AREA)
        return cv2.resize(small, (s, s), interpolation=cv2.INTER_NEAREST)
    return np.clip(np.rint(f), 0, 255).astype(np.uint8)


def _decorate(img: np.ndarray, t: _Thing, x: float, y: float) -> None:
    import cv2

    s = img.shape[0]
    cx, cy, rr = int(round(x * s)), int(round(y * s)), max(2, int(round(t.r * s)))
    dark = (30, 30, 30)
    if t.pattern == "striped":
        for k in (-1, 0, 1):
            dy = int(k * rr * 0.38)
            cv2.line(img, (cx - int(rr * 0.5), cy + dy), (cx + int(rr * 0.5), cy + dy), dark, max(1, rr // 7),
                     cv2.LINE_AA)
    elif t.pattern in ("spotted", "polka-dotted"):
        for fx, fy in ((-0.3, -0.25), (0.3, -0.2), (0.0, 0.25), (-0.25, 0.35), (0.3, 0.3)):
            cv2.circle(img, (cx + int(fx * rr), cy + int(fy * rr)), max(1, rr // 8), dark, -1, cv2.LINE_AA)
    elif t.pattern == "checkered":
        q = max(1, int(rr * 0.22))
        for i in range(-2, 2):
            for j in range(-2, 2):
                if (i + j) % 2 == 0:
                    cv2.rectangle(img, (cx + i * q, cy + j * q), (cx + (i + 1) * q, cy + (j + 1) * q), dark, -1)
    if t.shiny:
        cv2.ellipse(img, (cx - int(rr * 0.3), cy - int(rr * 0.35)), (max(1, rr // 4), max(1, rr // 7)), -30, 0, 360,
                    (255, 255, 255), -1, cv2.LINE_AA)


def _tag(img: np.ndarray, text: str, box: list[float]) -> None:
    import cv2

    s = img.shape[0]
    scale = max(0.3, s / 680.0)
    thick = 1
    (w, h), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thick)
    x = int(min(max((box[0] + box[2]) / 2 - w / 2, 1), s - w - 1))
    y = int(box[3] + h + 3)
    if y > s - 2:
        y = int(box[1] - 4)
    cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, (20, 20, 20), thick + 2, cv2.LINE_AA)
    cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, (245, 245, 245), thick, cv2.LINE_AA)


def render_graph(graph: SceneGraph, text: str, seed: int, size: int = 512,
                 weaknesses: KnownWeaknesses = DEMO_WEAKNESSES) -> tuple[np.ndarray, dict[str, Any]]:
    """Draw ``graph`` (the scene of ``text``) as the scripted model would; (RGB uint8, truth)."""
    from ...demo.scenes import SceneObject as Shape
    from ...demo.scenes import draw_background, draw_object

    if size < 64:
        raise WorkstationError(f"demo images must be at least 64 pixels wide, got {size}")
    truth = weaknesses.judge(graph, text, seed)
    rng = np.random.default_rng(_hash("dyeval-render", " ".join(text.lower().split()), int(seed)))
    things = _things(graph, rng)
    wrong = _apply_failures(graph, things, truth, rng)
    order = _layout(graph, things, wrong, rng)
    img = draw_background(rng, size)
    occupied = np.zeros((size, size), np.uint8)
    for oid in order:
        t = things[oid]
        if t.omitted:
            continue
        for k, (x, y) in enumerate(t.copies):
            hue, sat, val = t.hsv
            shp = Shape(role="object", label=t.drawn_as, shape=t.shape, hue=hue + float(rng.uniform(-3, 3)),
                        cx=x, cy=y, r=t.r, angle=float(rng.uniform(-12, 12)), sat=sat, val=val,
                        translucent=t.see_through)
            before = img.copy() if t.see_through else None
            box = draw_object(img, shp, rng, occupied)
            if box is None:
                continue
            if before is not None:  # see-through: the background shows through the object
                x1, y1, x2, y2 = (int(v) for v in box)
                roi = img[y1:y2, x1:x2].astype(np.float32) * 0.4 + before[y1:y2, x1:x2].astype(np.float32) * 0.6
                img[y1:y2, x1:x2] = np.clip(np.rint(roi), 0, 255).astype(np.uint8)
            t.boxes.append([round(v, 2) for v in box])
            _decorate(img, t, x, y)
    for c in graph.context:
        if not any(w.kind == "context" and w.keys[0] == f"c:{c}" for w in truth.failed):
            img = _context_effect(img, c)
    for oid in order:
        t = things[oid]
        if t.boxes:
            _tag(img, t.drawn_as if t.count == 1 else f"{t.drawn_as} x{len(t.boxes)}", t.boxes[0])
    out = {
        "method": "dyeval", "profile": weaknesses.name, "text": text, "seed": int(seed),
        "expected": truth.expected, "passed": truth.passed,
        "failed": [w.text for w in truth.failed], "failed_keys": [k for w in truth.failed for k in w.keys],
        "weak": [w.text for w in truth.weak], "noise": truth.noise,
        "objects": [{"id": t.oid, "name": t.name, "drawn_as": t.drawn_as, "omitted": t.omitted,
                     "count": t.count, "boxes": t.boxes} for t in things.values()],
        "width": size, "height": size,
    }
    return img, out


def graph_of_row(row: Mapping[str, Any]) -> SceneGraph:
    """The scene graph of a prompt row: its attrs' graph, else the rule-based parse of its text."""
    attrs = row.get("attrs") or {}
    g = attrs.get("graph") if isinstance(attrs, Mapping) else None
    if g:
        return SceneGraph.from_dict(g)
    from .parse import parse_text

    return parse_text(str(row.get("text") or ""))


def render_demo_row(row: Mapping[str, Any], seed: int, size: int = 512) -> tuple[np.ndarray, dict[str, Any]]:
    """The procedural generator's entry for a DyEval prompt row (see the module docstring)."""
    text = str(row.get("text") or "")
    img, truth = render_graph(graph_of_row(row), text, seed, size)
    truth["prompt_id"] = str(row.get("prompt_id") or "")
    return img, truth
