"""Procedural scenes for the built-in demo: a spatial prompt drawn as flat shapes.

Every object class of the built-in suite is drawn as one (shape, colour) combination — six
shapes × five hues = 30 classes (`STYLES`) — on a low-saturation textured background
(tinted gradient, soft clouds, grain, grey clutter, sometimes saturated scribbles that are no
class). A seeded error model decides what the "generator" got wrong, and the ground truth
comes back with the image:

=================  =========================================================  =================
error kind         what is drawn                                              expected verdict
=================  =========================================================  =================
``correct``        A and B placed as the prompt says (|d| ≥ 0.22)              PASS
``swapped``        A and B in each other's place                              FAIL
``omitted``        one object only; sometimes a look-alike of the other       UNDECIDABLE missing
``duplicated``     correct pair plus a copy of A or B on the wrong side       UNDECIDABLE ambiguous
``near_boundary``  centres almost level on the relation's axis (|d| ≤ 0.13)   mostly near_boundary
``overlap``        A and B overlapping; the front one often see-through       high_overlap / near_boundary
``distractor``     correct pair plus look-alikes (similar shape or hue)       PASS
=================  =========================================================  =================

The expected verdict is what the checker's rules (METHODS.md §1, default margin and overlap
bound) give on the true boxes (`expected_verdict`). Independently of the error kind, some
objects are drawn faded (weak colour) or partly in shadow, which a detector may miss or cut.

`render(prompt_row, seed)` is deterministic per (prompt_id, seed): the same call gives the
same pixels, so a sample can be re-made bit for bit.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import WorkstationError
from .classes import DEMO_OBJECTS

# The relations a two-object scene can be drawn in.
RELATIONS: tuple[str, ...] = ("left_of", "right_of", "above", "below")

# ---- classes: (shape, colour) ----------------------------------------------------------------
SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "star", "cross", "ring")
# colour name -> hue in degrees
COLOURS: dict[str, float] = {"red": 2.0, "yellow": 52.0, "green": 128.0, "blue": 215.0, "purple": 285.0}
_COLOUR_NAMES = tuple(COLOURS)

# Look-alike shapes: similar to a class shape but not any class; how similar is a parameter.
LOOKALIKES: dict[str, tuple[str, ...]] = {
    "circle": ("polygon", "ellipse"),
    "square": ("rounded_square", "rectangle"),
    "triangle": ("narrow_triangle",),
    "star": ("pointy_star", "star6"),
    "cross": ("thick_cross", "thin_cross"),
    "ring": ("thin_ring", "thick_ring"),
}


def _style_table() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for i, name in enumerate(DEMO_OBJECTS):
        q, r = divmod(i, len(SHAPES))
        table[name] = (SHAPES[r], _COLOUR_NAMES[(q + r) % len(_COLOUR_NAMES)])
    return table


# object class -> (shape, colour); every combination is used exactly once
STYLES: dict[str, tuple[str, str]] = _style_table()

ERROR_KINDS: tuple[str, ...] = (
    "correct", "swapped", "omitted", "duplicated", "near_boundary", "overlap", "distractor",
)
ERROR_WEIGHTS: tuple[float, ...] = (0.45, 0.16, 0.07, 0.07, 0.08, 0.07, 0.10)
FADED_RATE = 0.07  # objects drawn with weak colour
DARK_RATE = 0.05  # objects drawn partly in shadow
SUBSTITUTE_RATE = 0.4  # omitted scenes with a look-alike drawn instead
CLUTTER_RATE = 0.35  # images with saturated background clutter
TRANSLUCENT_RATE = 0.7  # overlapping pairs where the front object is see-through

# sign of d = (c_A - c_B) / size that satisfies the relation
_SIGN = {"left_of": -1.0, "above": -1.0, "right_of": 1.0, "below": 1.0}


def style_of(label: str) -> tuple[str, str]:
    try:
        return STYLES[label.strip().lower()]
    except KeyError:
        raise WorkstationError(
            f"the demo cannot draw {label!r}: it draws only the built-in objects "
            f"({', '.join(DEMO_OBJECTS)})"
        ) from None


# ---- shape geometry (unit radius, y down) -----------------------------------------------------
def _regular(n: int, r: float = 1.0, phase: float = -math.pi / 2) -> np.ndarray:
    t = phase + np.arange(n) * 2 * math.pi / n
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=1)


def _star(n: int, inner: float) -> np.ndarray:
    t = -math.pi / 2 + np.arange(2 * n) * math.pi / n
    r = np.where(np.arange(2 * n) % 2 == 0, 1.0, inner)
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=1)


def _cross(w: float) -> np.ndarray:
    return np.array([(-w, -1), (w, -1), (w, -w), (1, -w), (1, w), (w, w), (w, 1), (-w, 1),
                     (-w, w), (-1, w), (-1, -w), (-w, -w)], dtype=np.float64)


def _rounded_square(h: float, rad: float) -> np.ndarray:
    pts = []
    for cx, cy, a0 in ((h - rad, -h + rad, -90), (h - rad, h - rad, 0), (-h + rad, h - rad, 90),
                       (-h + rad, -h + rad, 180)):
        for a in np.linspace(a0, a0 + 90, 8):
            pts.append((cx + rad * math.cos(math.radians(a)), cy + rad * math.sin(math.radians(a))))
    return np.array(pts)


def shape_polygons(shape: str, similarity: float = 0.0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(filled polygons, hole polygons) of a shape in unit coordinates.

    For look-alike shapes `similarity` in [0, 1] morphs the shape towards the class shape it
    imitates (1 = nearly indistinguishable); class shapes ignore it.
    """
    circle = _regular(72)
    u = 1.0 - min(max(float(similarity), 0.0), 1.0)  # 0 = like the class shape, 1 = most different
    if shape == "circle":
        return [circle], []
    if shape == "square":
        return [np.array([(-0.82, -0.82), (0.82, -0.82), (0.82, 0.82), (-0.82, 0.82)])], []
    if shape == "triangle":
        return [_regular(3)], []
    if shape == "star":
        return [_star(5, 0.45)], []
    if shape == "cross":
        return [_cross(0.34)], []
    if shape == "ring":
        return [circle], [_regular(72, 0.55)]
    # look-alikes
    if shape == "polygon":  # n-gon imitating a circle: hexagon (u=1) .. 12-gon (u=0)
        return [_regular(int(round(12 - 6 * u)), phase=0.0)], []
    if shape == "ellipse":
        return [circle * np.array([1.0, 1.0 - 0.3 * u - 0.04])], []
    if shape == "rounded_square":
        return [_rounded_square(0.82, 0.12 + 0.4 * u)], []
    if shape == "rectangle":
        rect = np.array([(-0.9, -0.9), (0.9, -0.9), (0.9, 0.9), (-0.9, 0.9)])
        return [rect * np.array([1.0, 0.95 - 0.3 * u])], []
    if shape == "narrow_triangle":
        hw = 0.866 * (0.95 - 0.35 * u)
        return [np.array([(0.0, -1.0), (hw, 0.5), (-hw, 0.5)])], []
    if shape == "pointy_star":  # five points, inner radius differs
        return [_star(5, 0.45 - 0.02 - 0.1 * u)], []
    if shape == "star6":
        return [_star(6, 0.45 + 0.05 * (1 - u))], []
    if shape == "thick_cross":
        return [_cross(0.34 + 0.03 + 0.14 * u)], []
    if shape == "thin_cross":
        return [_cross(0.34 - 0.02 - 0.1 * u)], []
    if shape == "thin_ring":
        return [circle], [_regular(72, 0.55 + 0.02 + 0.12 * u)]
    if shape == "thick_ring":
        return [circle], [_regular(72, 0.55 - 0.04 - 0.18 * u)]
    raise ValueError(f"unknown shape {shape!r}")


def shape_mask(shape: str, radius: float, angle_deg: float = 0.0, pad: int = 3,
               similarity: float = 0.0) -> tuple[np.ndarray, float, float]:
    """Anti-aliased uint8 mask of a shape; returns (mask, centre_x, centre_y) in mask pixels."""
    import cv2

    fills, holes = shape_polygons(shape, similarity)
    a = math.radians(angle_deg)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    half = int(math.ceil(radius * 1.32)) + pad  # rotated shapes reach at most r·√2·0.93
    side = 2 * half + 1
    mask = np.zeros((side, side), np.uint8)
    c = float(half) + 0.5
    shift = 4
    for polys, value in ((fills, 255), (holes, 0)):
        for poly in polys:
            pts = (poly @ rot.T) * radius + c
            ipts = np.round(pts * (1 << shift)).astype(np.int32).reshape(-1, 1, 2)
            cv2.fillPoly(mask, [ipts], value, lineType=cv2.LINE_AA, shift=shift)
    return mask, c, c


# ---- prompt rows -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptRow:
    prompt_id: str
    relation: str
    label_a: str
    label_b: str


def as_prompt_row(row: Any) -> PromptRow:
    """A PromptRow from a PromptRow, a generic prompt row (``entities`` and ``attrs["relation"]``),
    or a mapping with prompt_id, relation (name or code), label_a / object_a and label_b / object_b
    (names, or SpatialBench-UC object dicts)."""
    if isinstance(row, PromptRow):
        return row
    if not isinstance(row, Mapping):
        raise TypeError(f"expected a prompt row mapping, got {type(row).__name__}")
    if "entities" in row and "relation" not in row:
        ents = tuple(row.get("entities") or ())
        rel = (row.get("attrs") or {}).get("relation")
        if rel not in _SIGN or len(ents) < 2:
            raise WorkstationError(f"prompt {row.get('prompt_id')!r}: the procedural renderer draws two objects "
                                   "in a relation (left_of, right_of, above, below); this prompt has none")
        return PromptRow(str(row["prompt_id"]), rel, str(ents[0]).strip().lower(), str(ents[1]).strip().lower())
    rel = row["relation"]
    if not isinstance(rel, str):
        rel = RELATIONS[int(rel)]
    if rel not in _SIGN:
        raise WorkstationError(f"unknown relation {rel!r} (expected one of {', '.join(RELATIONS)})")
    a = row.get("label_a", row.get("object_a"))
    b = row.get("label_b", row.get("object_b"))
    if isinstance(a, Mapping):
        a = a.get("coco_label") or a.get("name")
    if isinstance(b, Mapping):
        b = b.get("coco_label") or b.get("name")
    return PromptRow(str(row["prompt_id"]), rel, str(a).strip().lower(), str(b).strip().lower())


def prompt_rows(prompts: Any) -> list[PromptRow]:
    """The rows of a `Prompts` table as PromptRow records."""
    return [as_prompt_row({"prompt_id": p, "entities": e, "attrs": a})
            for p, e, a in zip(prompts.prompt_id, prompts.entities, prompts.attrs)]


# ---- scene layout ------------------------------------------------------------------------------
@dataclass
class _Obj:
    role: str  # "a", "b", "a_copy", "b_copy", "distractor"
    label: str  # class drawn (for distractors: the class it looks like)
    shape: str
    hue: float
    cx: float  # unit coordinates (fraction of the image side)
    cy: float
    r: float  # radius, fraction of the side
    angle: float
    sat: float
    val: float
    similarity: float = 0.0  # look-alikes: how close to the imitated class shape
    translucent: bool = False  # objects drawn before show through (stippled)
    shade: float = 0.08  # brightness change across the object (light from one side)
    look: str = "normal"  # "normal", "faded" (weak colour) or "shadow" (dark on one side)


def scene_rng(prompt_id: str, seed: int) -> np.random.Generator:
    h = hashlib.sha256(f"demo-scene|{prompt_id}|{int(seed)}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _separated(p: _Obj, others: list[_Obj], gap: float = 0.03) -> bool:
    for o in others:
        # boxes (≈ circumscribed squares of side 2r·1.05) must not touch
        ext = 1.05 * (p.r + o.r) + gap
        if abs(p.cx - o.cx) < ext and abs(p.cy - o.cy) < ext:
            return False
    return True


def _inside(o: _Obj, pad: float = 0.02) -> bool:
    e = o.r * 1.05 + pad
    return e <= o.cx <= 1 - e and e <= o.cy <= 1 - e


def _new_obj(rng: np.random.Generator, role: str, label: str, r: float | None = None) -> _Obj:
    shape, colour = style_of(label)
    sat, val = float(rng.uniform(0.68, 0.92)), float(rng.uniform(0.68, 0.95))
    u = rng.random()
    look, shade = "normal", 0.08
    if u < FADED_RATE:  # washed out: saturation near what a detector still calls colour
        look, sat = "faded", float(rng.uniform(0.26, 0.45))
    elif u < FADED_RATE + DARK_RATE:  # partly in shadow: dark on one side
        look, val, shade = "shadow", float(rng.uniform(0.16, 0.26)), float(rng.uniform(0.6, 1.0))
    return _Obj(
        role=role, label=label, shape=shape,
        hue=COLOURS[colour] + float(rng.uniform(-3.0, 3.0)),
        cx=0.5, cy=0.5, r=float(rng.uniform(0.045, 0.11)) if r is None else r,
        angle=float(rng.uniform(-12.0, 12.0)), sat=sat, val=val, shade=shade, look=look,
    )


def _lookalike(rng: np.random.Generator, like: _Obj, role: str = "distractor") -> _Obj:
    """An object resembling `like`: a similar shape in its colour, or its shape in a similar hue."""
    dis = _new_obj(rng, role, like.label)
    if rng.random() < 0.5:
        looks = LOOKALIKES[like.shape]
        dis.shape = looks[int(rng.integers(len(looks)))]
        dis.similarity = float(rng.uniform(0.3, 1.0))
    else:
        dis.hue = like.hue + float(rng.uniform(5.0, 25.0)) * (1 if rng.random() < 0.5 else -1)
    return dis


def _place_pair(rng: np.random.Generator, a: _Obj, b: _Obj, axis: int, d: float,
                other_sep: float | None = None) -> bool:
    """Put a and b so that (c_a − c_b) on `axis` equals d; True if it fits."""
    for _ in range(40):
        lo = max(a.r, b.r) * 1.05 + 0.02
        lo_a, hi_a = max(lo, lo + d), min(1 - lo, 1 - lo + d)
        if lo_a > hi_a:
            return False
        pa = float(rng.uniform(lo_a, hi_a))
        pb = pa - d
        if other_sep is None:
            qa = float(rng.uniform(0.15, 0.85))
            qb = float(np.clip(qa + rng.uniform(-0.22, 0.22), 0.12, 0.88))
        else:
            qa = float(rng.uniform(0.12, 0.88))
            qb = qa + other_sep * (1 if rng.random() < 0.5 else -1)
        if axis == 0:
            a.cx, a.cy, b.cx, b.cy = pa, qa, pb, qb
        else:
            a.cy, a.cx, b.cy, b.cx = pa, qa, pb, qb
        if _inside(a) and _inside(b):
            return True
    return False


def _place_free(rng: np.random.Generator, o: _Obj, others: list[_Obj], tries: int = 60) -> bool:
    for _ in range(tries):
        e = o.r * 1.05 + 0.02
        o.cx, o.cy = float(rng.uniform(e, 1 - e)), float(rng.uniform(e, 1 - e))
        if _separated(o, others):
            return True
    return False


def _layout(rng: np.random.Generator, row: PromptRow, kind: str) -> list[_Obj] | None:
    axis = 0 if row.relation in ("left_of", "right_of") else 1
    sign = _SIGN[row.relation]
    a = _new_obj(rng, "a", row.label_a)
    b = _new_obj(rng, "b", row.label_b)
    if kind in ("correct", "swapped", "duplicated", "distractor"):
        mag = float(rng.uniform(0.22, 0.58))
        d = mag * sign * (-1.0 if kind == "swapped" else 1.0)
        if not _place_pair(rng, a, b, axis, d) or not _separated(a, [b]):
            return None
        objs = [a, b]
        if kind == "duplicated":
            src = a if rng.random() < 0.5 else b
            partner = b if src is a else a
            copy = _new_obj(rng, f"{src.role}_copy", src.label, r=src.r * float(rng.uniform(0.85, 1.1)))
            copy.hue = src.hue + float(rng.uniform(-1.5, 1.5))
            # on the wrong side of its partner: contradicts the relation
            want = -sign if src is a else sign  # sign of (c_copy - c_partner) that contradicts
            for _ in range(60):
                off = float(rng.uniform(0.22, 0.5)) * want
                p = (partner.cx if axis == 0 else partner.cy) + off
                q = float(rng.uniform(0.12, 0.88))
                copy.cx, copy.cy = (p, q) if axis == 0 else (q, p)
                if _inside(copy) and _separated(copy, objs):
                    objs.append(copy)
                    break
            else:
                return None
        elif kind == "distractor":
            n = 1 if rng.random() < 0.7 else 2
            for _ in range(n):
                dis = _lookalike(rng, a if rng.random() < 0.5 else b)
                if not _place_free(rng, dis, objs):
                    return None
                objs.append(dis)
        return objs
    if kind == "omitted":
        keep, gone = (a, b) if rng.random() < 0.5 else (b, a)
        objs = []
        if rng.random() < SUBSTITUTE_RATE:
            # the generator drew something like the missing object in its place
            sub = _lookalike(rng, gone)
            if not _place_pair(rng, keep, sub, axis, float(rng.uniform(0.22, 0.5)) * sign *
                               (1 if keep is a else -1)) or not _separated(keep, [sub]):
                return None
            return [keep, sub]
        if not _place_free(rng, keep, objs):
            return None
        return [keep]
    if kind == "near_boundary":
        # centres close on the relation's axis: mostly inside the checker's default margin
        d = float(rng.uniform(-0.13, 0.13))
        sep = 1.05 * (a.r + b.r) + float(rng.uniform(0.06, 0.2))
        if not _place_pair(rng, a, b, axis, d, other_sep=sep) or not _separated(a, [b]):
            return None
        return [a, b]
    if kind == "overlap":
        b.r = a.r * float(rng.uniform(0.9, 1.1))
        off = float(rng.uniform(0.1, 0.7)) * a.r * sign  # correct direction, overlapping
        if not _place_pair(rng, a, b, axis, off):
            return None
        # the other axis nearly aligned
        if axis == 0:
            b.cy = a.cy + float(rng.uniform(-0.12, 0.12)) * a.r
        else:
            b.cx = a.cx + float(rng.uniform(-0.12, 0.12)) * a.r
        if not (_inside(a) and _inside(b)):
            return None
        top = b if rng.random() < 0.5 else a  # drawn second: covers the other
        top.translucent = bool(rng.random() < TRANSLUCENT_RATE)
        return [a, b] if top is b else [b, a]
    raise ValueError(f"unknown error kind {kind!r}")


# ---- drawing ------------------------------------------------------------------------------------
def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """Low-saturation texture: tinted gradient, soft clouds, grain, grey clutter (uint8 RGB)."""
    import cv2

    n = max(16, size // 4)  # texture is made at quarter resolution and smoothly enlarged
    base = rng.uniform(80.0, 200.0, size=2)
    tint = rng.uniform(-10.0, 10.0, size=(2, 3))
    c0, c1 = (base[0] + tint[0]).astype(np.float32), (base[1] + tint[1]).astype(np.float32)
    phi = rng.uniform(0, 2 * math.pi)
    coords = (np.arange(n, dtype=np.float32) + 0.5) / n
    t = coords[None, :] * np.float32(math.cos(phi)) + coords[:, None] * np.float32(math.sin(phi))
    t = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    clouds = rng.standard_normal((7, 7)).astype(np.float32)
    lum = cv2.resize(clouds, (n, n), interpolation=cv2.INTER_CUBIC) * np.float32(12.0)
    lum += rng.standard_normal((n, n)).astype(np.float32) * np.float32(2.5)  # grain
    small = c0[None, None, :] + t[:, :, None] * (c1 - c0)[None, None, :] + lum[:, :, None]
    small += rng.standard_normal((n, n, 3)).astype(np.float32)  # colour grain, ±1
    small_u8 = np.clip(np.rint(small), 0, 255).astype(np.uint8)
    img = cv2.resize(small_u8, (size, size), interpolation=cv2.INTER_LINEAR)
    # grey clutter: low-saturation blobs and bars
    for _ in range(int(rng.integers(0, 4))):
        g = float(rng.uniform(60, 210))
        col = tuple(float(np.clip(g + v, 0, 255)) for v in rng.uniform(-8, 8, 3))
        cx, cy = (int(v) for v in rng.uniform(0, size, 2))
        ax = (int(rng.uniform(0.03, 0.12) * size), int(rng.uniform(0.02, 0.08) * size))
        if rng.random() < 0.5:
            cv2.ellipse(img, (cx, cy), ax, float(rng.uniform(0, 180)), 0, 360, col, -1, cv2.LINE_AA)
        else:
            cv2.rectangle(img, (cx - ax[0], cy - ax[1]), (cx + ax[0], cy + ax[1]), col, -1, cv2.LINE_AA)
    # saturated clutter of any hue: irregular blobs and strokes that are no object class
    if rng.random() < CLUTTER_RATE:
        for _ in range(int(rng.integers(1, 3))):
            rgb = colorsys.hsv_to_rgb(float(rng.uniform(0, 1)), float(rng.uniform(0.5, 0.9)),
                                      float(rng.uniform(0.5, 0.9)))
            col = tuple(float(v * 255) for v in rgb)
            cx, cy = (int(v) for v in rng.uniform(0, size, 2))
            if rng.random() < 0.5:
                pts = _regular(int(rng.integers(5, 9)), 1.0) * rng.uniform(0.4, 1.0, (1, 1))
                pts = pts * rng.uniform(0.5, 1.0, (pts.shape[0], 1)) * rng.uniform(0.02, 0.06) * size
                poly = np.round(pts + [cx, cy]).astype(np.int32).reshape(-1, 1, 2)
                cv2.fillPoly(img, [poly], col, cv2.LINE_AA)
            else:
                dx, dy = (int(v) for v in rng.uniform(-0.12, 0.12, 2) * size)
                cv2.line(img, (cx, cy), (cx + dx, cy + dy), col, int(rng.integers(3, 9)), cv2.LINE_AA)
    return img


def _draw(img: np.ndarray, o: _Obj, rng: np.random.Generator,
          occupied: np.ndarray) -> tuple[float, float, float, float] | None:
    """Composite one object; returns its true box xyxy in pixels (from its mask).

    `occupied` (uint8, image size) marks pixels covered by objects drawn before; a translucent
    object lets them show through as a fine two-colour stipple.
    """
    size = img.shape[0]
    mask, mcx, mcy = shape_mask(o.shape, o.r * size, o.angle, similarity=o.similarity)
    ox = int(round(o.cx * size - mcx))
    oy = int(round(o.cy * size - mcy))
    h, w = mask.shape
    x0, y0 = max(ox, 0), max(oy, 0)
    x1, y1 = min(ox + w, size), min(oy + h, size)
    if x1 <= x0 or y1 <= y0:
        return None
    m = mask[y0 - oy:y1 - oy, x0 - ox:x1 - ox]
    r, g, b = colorsys.hsv_to_rgb((o.hue % 360.0) / 360.0, o.sat, o.val)
    col = np.array([r, g, b], np.float32) * 255.0
    # soft shading across the object
    ang = float(rng.uniform(0, 2 * math.pi))
    yy, xx = np.mgrid[0:m.shape[0], 0:m.shape[1]].astype(np.float32)
    ramp = (xx - xx.mean()) * math.cos(ang) + (yy - yy.mean()) * math.sin(ang)
    shade = 1.0 + o.shade * ramp / max(m.shape)
    alpha = (m.astype(np.float32) / 255.0)[:, :, None]
    if o.translucent:
        under = occupied[y0:y1, x0:x1] >= 128
        stipple = ((np.arange(y0, y1)[:, None] + np.arange(x0, x1)[None, :]) % 2) == 1
        alpha[under & stipple] = 0.0
    np.maximum(occupied[y0:y1, x0:x1], m, out=occupied[y0:y1, x0:x1])
    roi = img[y0:y1, x0:x1].astype(np.float32)
    roi *= 1.0 - alpha
    roi += alpha * (shade[:, :, None] * col[None, None, :])
    # fine grain on the object's surface
    roi += alpha * rng.standard_normal(roi.shape).astype(np.float32) * np.float32(3.0)
    img[y0:y1, x0:x1] = np.clip(np.rint(roi), 0, 255).astype(np.uint8)
    ys, xs = np.nonzero(m >= 128)
    if len(xs) == 0:
        return None
    return (float(x0 + xs.min()), float(y0 + ys.min()), float(x0 + xs.max() + 1), float(y0 + ys.max() + 1))


def _centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0


def box_iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def expected_verdict(
    relation: str, boxes_a: list[tuple[float, float, float, float]],
    boxes_b: list[tuple[float, float, float, float]], width: float, height: float,
    margin: float = 0.1, max_overlap_iou: float = 0.5,
) -> tuple[str, str]:
    """The verdict a perfect detector would give under the checker's rules (METHODS.md §1).

    Returns (verdict name, reason): missing objects → UNDECIDABLE/missing; two instances of
    an object → UNDECIDABLE/ambiguous; then overlap, near-boundary and the geometric rule.
    """
    if not boxes_a or not boxes_b:
        return "UNDECIDABLE", "missing"
    if len(boxes_a) > 1 or len(boxes_b) > 1:
        return "UNDECIDABLE", "ambiguous"
    a, b = boxes_a[0], boxes_b[0]
    (ax, ay), (bx, by) = _centre(a), _centre(b)
    horizontal = relation in ("left_of", "right_of")
    d = (ax - bx) / width if horizontal else (ay - by) / height
    if horizontal and box_iou(a, b) > max_overlap_iou:
        return "UNDECIDABLE", "high_overlap"
    if abs(d) <= margin:
        return "UNDECIDABLE", "near_boundary"
    ok = d < -margin if relation in ("left_of", "above") else d > margin
    return ("PASS" if ok else "FAIL"), ""


def choose_error(rng: np.random.Generator) -> str:
    w = np.asarray(ERROR_WEIGHTS, dtype=np.float64)
    return ERROR_KINDS[int(rng.choice(len(ERROR_KINDS), p=w / w.sum()))]


def render(
    prompt_row: Any, seed: int, size: int = 512, error: str | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Draw a prompt as a scene. Returns (H×W×3 uint8 RGB image, truth).

    `truth` holds ``error`` (an ERROR_KINDS name), ``expected`` (PASS / FAIL / UNDECIDABLE),
    ``expected_reason``, ``boxes_a`` / ``boxes_b`` (true boxes xyxy in pixels of every drawn
    instance of A / B), ``distractors`` (look-alikes: ``looks_like``, ``shape``, ``box``) and the
    ``objects`` drawn. `error` forces an error kind (tests); otherwise the seeded model picks one.
    """
    row = as_prompt_row(prompt_row)
    if size < 64:
        raise WorkstationError(f"demo images must be at least 64 pixels wide, got {size}")
    style_of(row.label_a)
    style_of(row.label_b)
    if row.label_a == row.label_b:
        raise WorkstationError(f"prompt {row.prompt_id}: object A and B are the same class {row.label_a!r}")
    rng = scene_rng(row.prompt_id, seed)
    kind = choose_error(rng) if error is None else error
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r}")
    objs = None
    for _ in range(30):
        objs = _layout(rng, row, kind)
        if objs is not None:
            break
    if objs is None:  # pragma: no cover - the layouts leave ample room
        raise WorkstationError(f"could not lay out a {kind} scene for {row.prompt_id}")
    img = _background(rng, size)
    drawn: list[dict[str, Any]] = []
    occupied = np.zeros((size, size), np.uint8)
    for o in objs:
        box = _draw(img, o, rng, occupied)
        drawn.append({"role": o.role, "label": o.label, "shape": o.shape, "hue": round(o.hue % 360.0, 2),
                      "similarity": round(o.similarity, 3), "translucent": o.translucent, "look": o.look,
                      "box": None if box is None else [round(v, 2) for v in box]})
    out = img
    boxes_a = [tuple(d["box"]) for d in drawn if d["role"] in ("a", "a_copy") and d["box"] is not None]
    boxes_b = [tuple(d["box"]) for d in drawn if d["role"] in ("b", "b_copy") and d["box"] is not None]
    verdict, reason = expected_verdict(row.relation, boxes_a, boxes_b, float(size), float(size))
    truth = {
        "prompt_id": row.prompt_id,
        "seed": int(seed),
        "relation": row.relation,
        "label_a": row.label_a,
        "label_b": row.label_b,
        "error": kind,
        "expected": verdict,
        "expected_reason": reason,
        "boxes_a": [list(bx) for bx in boxes_a],
        "boxes_b": [list(bx) for bx in boxes_b],
        "distractors": [{"looks_like": d["label"], "shape": d["shape"], "hue": d["hue"],
                         "similarity": d["similarity"], "box": d["box"]}
                        for d in drawn if d["role"] == "distractor"],
        "objects": drawn,
        "width": size,
        "height": size,
    }
    return out, truth


# ---- drawing primitives for other demo scenes (MetaLogic pairs) ----------------------------------
# Public names for the pieces `render` is made of; `render` itself is unchanged.
SceneObject = _Obj
new_object = _new_obj
place_free = _place_free
separated = _separated
inside = _inside
draw_background = _background
draw_object = _draw
