"""Procedural ProtoBias triplets, their images, and a toy metric of known bias.

The demo needs no generator and no model: every triplet is a flat-shape scene the built-in
procedural renderer can draw (`workstation.demo.scenes`: six shapes × five colours).

**Triplets.** T names a main shape in a colour and an extra element (another shape in another
colour) carrying the knob, e.g. "A red circle with exactly three blue squares beside it." The
demo's stand-in for prototypicality is *look*: I_corr draws exactly what T says but in an
unusual style (off-tone colours — hue shifted 12-18°, washed-out saturation —, tilted shapes,
scattered extras), I_adv draws the canonical look (pure hues, upright shapes, extras in a neat
row) with the knob violated by the seed's rule (`templates.adversarial_values`). Knob
conventions on a flat canvas: "to its left/right" from the viewer; "in the foreground" = below
the main shape, "in the background" = above it; "small" extras are 0.3× and "large" 0.9× the
main shape's radius. Main shapes stand in for the domains (circle, ring → animals; square,
cross → objects; triangle, star → demography) so that every per-domain table has rows, and each
domain uses its own knobs (`vocab.DOMAIN_KNOBS`).

**Toy metric** (`ToyProtoMetric`): it reads T (the demo grammar; NaN for any other text) and
the pixels: ``match`` = the fraction of T's two facts the image shows (the main shape's colour
present; the knob fact: count, colour, side, above/below, size), ``proto`` = how canonical the
colours look (hue within 15° of a pure hue, saturated). Its score is
``(1 − λ)·match + λ·proto`` with λ = 0.9 on a "biased" text and 0.1 otherwise; a text is biased
when a uniform number drawn from sha256(seed, T) is below ``p``. On demo triplets I_corr has
match 1 and low proto, I_adv match 0.5 and proto near 1, so the metric fails exactly on the
biased texts: P(fail) = p per triplet, and the measured failure rate is Binomial(n, p) / n.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...types import WorkstationError
from . import templates as tp
from .build import Triplet, TripletSet, _content_hash, triplet_id_for
from .vocab import DOMAIN_KNOBS, DOMAINS, Extra

if TYPE_CHECKING:
    from .metrics import TripletScores

DEMO_SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "star", "cross", "ring")
DEMO_COLOURS: dict[str, float] = {"red": 2.0, "yellow": 52.0, "green": 128.0, "blue": 215.0, "purple": 285.0}
DEMO_DOMAIN_OF_SHAPE: dict[str, str] = {"circle": "animals", "ring": "animals", "square": "objects",
                                        "cross": "objects", "triangle": "demography", "star": "demography"}
DEMO_VERSION = "protobias-demo-1"
_DEMO_SIZES: tuple[tuple[str, str], ...] = (("small", "large"),)
SMALL_RATIO, LARGE_RATIO = 0.3, 0.9  # extra radius / main radius
MAIN_R = 0.15  # main shape radius, fraction of the side
EXTRA_R = 0.055  # extra radius for count / colour / layout / spatial
OFF_TONE = (12.0, 18.0)  # hue shift (degrees) of I_corr's unusual colours
PROTO_HUE_TOL = 15.0  # the toy metric's "canonical hue" tolerance

PLURAL = {s: s + "s" for s in DEMO_SHAPES} | {"cross": "crosses"}


def _rng(*keys: object) -> np.random.Generator:
    h = hashlib.sha256("|".join(map(str, keys)).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _demo_sentence(subject: str, frame: tp.SceneFrame, value: str) -> str:
    s = f"{tp.with_article(subject)} {tp.knob_clause(frame, value)}."
    return s[0].upper() + s[1:]


# ---- triplets -----------------------------------------------------------------------------------
def _demo_triplet(domain: str, knob: str, rng: np.random.Generator) -> Triplet:
    shapes = [s for s, d in DEMO_DOMAIN_OF_SHAPE.items() if d == domain]
    main_shape = shapes[int(rng.integers(len(shapes)))]
    colours = list(DEMO_COLOURS)
    main_col = colours[int(rng.integers(len(colours)))]
    others = [s for s in DEMO_SHAPES if s != main_shape]
    extra_shape = others[int(rng.integers(len(others)))]
    extra_cols = [c for c in colours if c != main_col]
    extra_col = extra_cols[int(rng.integers(len(extra_cols)))]
    if knob in ("color", "color_tone"):
        extra = Extra(extra_shape, PLURAL[extra_shape], tuple(extra_cols))
        value = extra_col
    else:
        extra = Extra(f"{extra_col} {extra_shape}", f"{extra_col} {PLURAL[extra_shape]}", (extra_col,))
        vals = tp.text_values(knob, extra, _DEMO_SIZES)
        value = vals[int(rng.integers(len(vals)))]
    advs = tp.adversarial_values(knob, value, extra, _DEMO_SIZES)
    adv_value = advs[int(rng.integers(len(advs)))]
    frame = tp.SceneFrame("demo", "", "", extra, knob)  # "beside it", "its" in every domain
    hyper = f"{main_col} {main_shape}"
    non_proto = f"off-tone tilted {hyper}"
    proto = f"canonical {hyper}"
    text = _demo_sentence(hyper, frame, value)
    corr = _demo_sentence(non_proto, frame, value)
    adv = _demo_sentence(proto, frame, adv_value)
    attrs = {"demo": DEMO_VERSION, "main_shape": main_shape, "main_colour": main_col,
             "extra_shape": extra_shape, "extra_colour": extra_col}
    return Triplet(triplet_id_for(domain, text, corr, adv), domain, knob, text, corr, adv, main_shape,
                   hyper, non_proto, proto, extra.singular, value, adv_value, "plain canvas", attrs)


def build_demo_triplets(n: int = 100, *, seed: int = 0, domains: Sequence[str] = DOMAINS) -> TripletSet:
    """``n`` demo triplets per domain with distinct texts T, knobs balanced, deterministic per seed."""
    out: list[Triplet] = []
    seen_text: set[str] = set()
    for d in domains:
        if d not in DOMAIN_KNOBS:
            raise WorkstationError(f"unknown domain {str(d)[:40]!r}")
        knobs = DOMAIN_KNOBS[d]
        rng = _rng("protobias-demo-build", seed, d)
        made, attempts = 0, 0
        while made < n:
            attempts += 1
            if attempts > 50 * n + 100:
                raise WorkstationError(f"the demo gave only {made} distinct {d} triplets of {n}")
            t = _demo_triplet(d, knobs[made % len(knobs)], rng)
            if t.text in seen_text:  # distinct T: the toy metric's draw is per text
                continue
            seen_text.add(t.text)
            out.append(t)
            made += 1
    return TripletSet(tuple(out), int(seed), {"n": n, "domains": list(domains), "demo": DEMO_VERSION},
                      tp.TEMPLATE_VERSION, DEMO_VERSION, _content_hash(out))


# ---- rendering ----------------------------------------------------------------------------------
@dataclass
class _Shape:
    shape: str
    hue: float
    sat: float
    val: float
    cx: float  # fraction of the side
    cy: float
    r: float
    angle: float


def _paint(img: np.ndarray, s: _Shape) -> None:
    from ...demo.scenes import shape_mask

    size = img.shape[0]
    mask, mcx, mcy = shape_mask(s.shape, s.r * size, s.angle)
    ox, oy = round(s.cx * size - mcx), round(s.cy * size - mcy)
    h, w = mask.shape
    x0, y0, x1, y1 = max(ox, 0), max(oy, 0), min(ox + w, size), min(oy + h, size)
    if x1 <= x0 or y1 <= y0:
        return
    alpha = (mask[y0 - oy:y1 - oy, x0 - ox:x1 - ox].astype(np.float32) / 255.0)[:, :, None]
    rgb = np.array(colorsys.hsv_to_rgb((s.hue % 360.0) / 360.0, s.sat, s.val), np.float32) * 255.0
    roi = img[y0:y1, x0:x1].astype(np.float32)
    img[y0:y1, x0:x1] = np.clip(np.rint(roi * (1.0 - alpha) + alpha * rgb), 0, 255).astype(np.uint8)


def _free(cx: float, cy: float, r: float, placed: list[_Shape], gap: float = 0.03) -> bool:
    e = 1.35 * r
    if not (e + 0.01 <= cx <= 1 - e - 0.01 and e + 0.01 <= cy <= 1 - e - 0.01):
        return False
    return all(math.hypot(cx - p.cx, cy - p.cy) >= e + 1.35 * p.r + gap for p in placed)


def _look(rng: np.random.Generator, colour: str, canonical: bool) -> tuple[float, float, float, float]:
    """(hue, saturation, value, angle) of a shape in the canonical or the unusual look."""
    hue = DEMO_COLOURS[colour]
    if canonical:
        return hue, 0.9, 0.88, 0.0
    shift = float(rng.uniform(*OFF_TONE)) * (1 if rng.random() < 0.5 else -1)
    angle = float(rng.uniform(20.0, 40.0)) * (1 if rng.random() < 0.5 else -1)
    return hue + shift, float(rng.uniform(0.5, 0.62)), float(rng.uniform(0.75, 0.9)), angle


def _scene(t: Triplet, role: str, rng: np.random.Generator) -> list[_Shape]:
    a = t.attrs
    canonical = role == "adv"
    value = t.knob_value if role == "corr" else t.knob_value_adv
    knob = t.knob
    extra_col = value if knob in ("color", "color_tone") else str(a["extra_colour"])
    mh, ms, mv, mang = _look(rng, str(a["main_colour"]), canonical)
    main = _Shape(str(a["main_shape"]), mh, ms, mv, 0.5, 0.5, MAIN_R, mang)
    er = EXTRA_R
    if knob == "scale_size":
        er = MAIN_R * (SMALL_RATIO if value == "small" else LARGE_RATIO)
    if knob == "count":
        main.cx, main.cy = float(rng.uniform(0.4, 0.6)), float(rng.uniform(0.25, 0.32))
    elif knob == "spatial":
        main.cx = float(rng.uniform(0.4, 0.6))
        main.cy = 0.5 + (-0.12 if value == "foreground" else 0.12)
    else:  # the extra goes to one side of the main shape (T's side for layout_relation)
        if knob == "layout_relation":
            side = -1.0 if value == "left" else 1.0
        else:
            side = -1.0 if rng.random() < 0.5 else 1.0
        shift = 0.2 if knob == "scale_size" else float(rng.uniform(0.0, 0.05))
        main.cx, main.cy = 0.5 - side * shift, float(rng.uniform(0.42, 0.58))
    shapes = [main]

    def extra_at(cx: float, cy: float) -> _Shape:
        h, s, v, ang = _look(rng, extra_col, canonical)
        return _Shape(str(a["extra_shape"]), h, s, v, cx, cy, er, ang)

    if knob == "count":
        n = int(value)
        if canonical:  # a neat row under the main shape
            xs = np.linspace(0.5 - 0.13 * (n - 1) / 2, 0.5 + 0.13 * (n - 1) / 2, n)
            for x in xs:
                shapes.append(extra_at(float(x), 0.72))
        else:  # scattered in the lower part
            for _ in range(n):
                for _try in range(500):
                    cx, cy = float(rng.uniform(0.08, 0.92)), float(rng.uniform(0.5, 0.92))
                    if _free(cx, cy, er, shapes):
                        shapes.append(extra_at(cx, cy))
                        break
                else:  # pragma: no cover - ample room for six extras
                    raise WorkstationError(f"could not place {n} extras for {t.triplet_id}")
        return shapes
    for _try in range(500):
        if knob == "spatial":
            dy = MAIN_R * 1.35 + er * 1.35 + float(rng.uniform(0.05, 0.12))
            cx = main.cx + float(rng.uniform(-0.2, 0.2))
            cy = main.cy + (dy if value == "foreground" else -dy)
        else:
            dx = 1.35 * (MAIN_R + er) + 0.03 + float(rng.uniform(0.01, 0.08))
            cx = main.cx + side * dx
            cy = main.cy + float(rng.uniform(-0.08, 0.08))
        if _free(cx, cy, er, shapes):
            shapes.append(extra_at(cx, cy))
            return shapes
    raise WorkstationError(f"could not lay out {t.triplet_id}")  # pragma: no cover


def render_demo(triplet: Triplet, role: str, seed: int = 0, size: int = 256) -> np.ndarray:
    """The H×W×3 uint8 RGB image of one role ("corr" / "adv") of a demo triplet; the same
    (triplet id, role, seed, size) always gives the same pixels."""
    if role not in ("corr", "adv"):
        raise WorkstationError(f"role must be corr or adv, got {role!r}")
    if "demo" not in triplet.attrs:
        raise WorkstationError(f"{triplet.triplet_id} is not a demo triplet: the demo cannot draw it")
    if size < 96:
        raise WorkstationError(f"demo images must be at least 96 pixels wide, got {size}")
    rng = _rng("protobias-demo-render", triplet.triplet_id, role, int(seed))
    shapes = _scene(triplet, role, rng)
    grey = float(rng.uniform(215.0, 235.0))
    img = np.clip(grey + rng.normal(0.0, 2.0, (size, size, 1)), 0, 255).repeat(3, axis=2).astype(np.uint8)
    for s in shapes:
        _paint(img, s)
    return img


# ---- the toy metric -----------------------------------------------------------------------------
_NUM = {w: i for i, w in enumerate(tp.NUMBER_WORDS)}
_C = "|".join(DEMO_COLOURS)
_S = "|".join(sorted(set(DEMO_SHAPES) | set(PLURAL.values()), key=len, reverse=True))
_TEXT_RE = re.compile(rf"^an? (?P<mcol>{_C}) (?P<mshape>{_S}) with (?P<rest>.+)\.$", re.IGNORECASE)
_CLAUSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("count", re.compile(rf"^exactly (?P<num>{'|'.join(tp.NUMBER_WORDS[1:])}) (?P<ecol>{_C}) (?P<eshape>{_S}) beside it$")),
    ("layout_relation", re.compile(rf"^an? (?P<ecol>{_C}) (?P<eshape>{_S}) to its (?P<side>left|right)$")),
    ("spatial", re.compile(rf"^an? (?P<ecol>{_C}) (?P<eshape>{_S}) in the (?P<pos>foreground|background)$")),
    ("scale_size", re.compile(rf"^an? (?P<size>small|large) (?P<ecol>{_C}) (?P<eshape>{_S}) beside it$")),
    ("color", re.compile(rf"^an? (?P<ecol>{_C}) (?P<eshape>{_S}) beside it$")),
)


def parse_demo_text(text: str) -> dict[str, Any] | None:
    """The facts a demo text states (main colour, knob kind and value, extra colour), or None."""
    m = _TEXT_RE.match(text.strip())
    if not m:
        return None
    rest = m.group("rest").lower()
    for kind, rx in _CLAUSES:
        c = rx.match(rest)
        if c:
            g = c.groupdict()
            value = {"count": g.get("num"), "layout_relation": g.get("side"), "spatial": g.get("pos"),
                     "scale_size": g.get("size"), "color": g.get("ecol")}[kind]
            if kind == "count":
                value = str(_NUM[str(value)])
            return {"main_colour": m.group("mcol").lower(), "kind": kind, "value": value,
                    "extra_colour": g["ecol"].lower()}
    return None


@dataclass(frozen=True)
class _Blob:
    colour: str
    area: int
    cx: float
    cy: float
    side: float  # sqrt of the bounding-box area


def analyse_image(image: np.ndarray) -> tuple[list[_Blob], float]:
    """Coloured blobs of a demo image (by nearest pure hue) and how canonical its colours are."""
    import cv2

    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3:
        raise WorkstationError(f"expected an H×W×3 RGB image, got shape {img.shape}")
    hsv = cv2.cvtColor(img.astype(np.float32) * np.float32(1.0 / 255.0), cv2.COLOR_RGB2HSV)
    coloured = (hsv[..., 1] > 0.35) & (hsv[..., 2] > 0.25)
    ys, xs = np.nonzero(coloured)
    hue, sat = hsv[ys, xs, 0], hsv[ys, xs, 1]
    names = list(DEMO_COLOURS)
    centres = np.array([DEMO_COLOURS[c] for c in names], np.float32)
    d = np.abs(((hue[:, None] - centres[None, :]) + 180.0) % 360.0 - 180.0)
    nearest = d.argmin(axis=1)
    dev = d.min(axis=1)
    min_area = max(12, int(0.0006 * img.shape[0] * img.shape[1]))
    # demo shapes never touch: one labelling of the coloured pixels, each blob's colour by vote
    n, lab, stats, cent = cv2.connectedComponentsWithStats(coloured.astype(np.uint8), connectivity=8)
    comp = lab[ys, xs]
    votes = np.bincount(comp * len(names) + nearest, minlength=n * len(names)).reshape(n, len(names))
    colour_of = votes.argmax(axis=1)
    ok = stats[:, cv2.CC_STAT_AREA] >= min_area
    ok[0] = False  # the background
    blobs: list[_Blob] = []
    for i in np.nonzero(ok)[0]:
        w, h = int(stats[i, cv2.CC_STAT_WIDTH]), int(stats[i, cv2.CC_STAT_HEIGHT])
        blobs.append(_Blob(names[int(colour_of[i])], int(stats[i, cv2.CC_STAT_AREA]), float(cent[i, 0]),
                           float(cent[i, 1]), math.sqrt(w * h)))
    keep = ok[comp]
    if not keep.any():
        return blobs, 0.0
    closeness = np.clip(1.0 - dev[keep] / PROTO_HUE_TOL, 0.0, 1.0)
    satness = np.clip((sat[keep] - 0.45) / 0.4, 0.0, 1.0)
    return blobs, float(np.mean(closeness * satness))


def _facts(blobs: list[_Blob], facts: dict[str, Any]) -> tuple[float, float]:
    """(main fact, knob fact), each 0 or 1."""
    mains = [b for b in blobs if b.colour == facts["main_colour"]]
    if not mains:
        return 0.0, 0.0
    main = max(mains, key=lambda b: b.area)
    extras = [b for b in blobs if b.colour == facts["extra_colour"] and b is not main]
    kind, value = facts["kind"], facts["value"]
    if kind == "count":
        return 1.0, float(len(extras) == int(value))
    if kind == "color":
        return 1.0, float(len(extras) > 0)
    if not extras:
        return 1.0, 0.0
    e = max(extras, key=lambda b: b.area)
    if kind == "layout_relation":
        return 1.0, float((e.cx < main.cx) == (value == "left"))
    if kind == "spatial":
        return 1.0, float((e.cy > main.cy) == (value == "foreground"))
    ratio = e.side / max(main.side, 1e-9)
    return 1.0, float((ratio < 0.55) == (value == "small"))


@dataclass(frozen=True)
class ToyProtoMetric:
    """A toy image-text metric that prefers the prototypical look with probability ``p`` (module
    doc). ``score(images, texts)`` has the scorers' signature; NaN for a text outside the demo
    grammar."""

    p: float = 0.5
    seed: int = 0
    name: str = "toy_proto"

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise WorkstationError(f"the toy metric's bias p must be in [0, 1], got {self.p}")

    def bias_draw(self, text: str) -> float:
        """The uniform number in [0, 1) this metric draws for a text (biased when below p)."""
        h = hashlib.sha256(f"protobias-toy|{int(self.seed)}|{text.strip()}".encode()).digest()
        return int.from_bytes(h[:8], "little") / 2.0 ** 64

    def is_biased(self, text: str) -> bool:
        return self.bias_draw(text) < self.p

    def features(self, image: np.ndarray, text: str) -> dict[str, float] | None:
        """match (fraction of T's facts shown) and proto (canonical look) of one image, or None."""
        facts = parse_demo_text(text)
        if facts is None:
            return None
        blobs, proto = analyse_image(image)
        main_ok, knob_ok = _facts(blobs, facts)
        return {"match": (main_ok + knob_ok) / 2.0, "proto": proto, "main": main_ok, "knob": knob_ok}

    def score(self, images: Sequence[np.ndarray], texts: Sequence[str]) -> np.ndarray:
        if len(images) != len(texts):
            raise WorkstationError(f"{len(images)} images but {len(texts)} texts")
        out = np.full(len(texts), np.nan)
        for i, (img, text) in enumerate(zip(images, texts)):
            f = self.features(img, text)
            if f is None:
                continue
            lam = 0.9 if self.is_biased(text) else 0.1
            out[i] = (1.0 - lam) * f["match"] + lam * f["proto"]
        return out


def demo_scores(triplets: TripletSet | Sequence[Triplet], metrics: Sequence[Any], *, seed: int = 0,
                size: int = 256) -> TripletScores:
    """Render both images of every demo triplet and score them (against T) with each metric
    (objects with ``name`` and ``score(images, texts)``); returns a `TripletScores`."""
    from .metrics import TripletScores

    ts = triplets.triplets if isinstance(triplets, TripletSet) else tuple(triplets)
    texts = [t.text for t in ts]
    corr_imgs = [render_demo(t, "corr", seed, size) for t in ts]
    adv_imgs = [render_demo(t, "adv", seed, size) for t in ts]
    scores = {str(m.name): (m.score(corr_imgs, texts), m.score(adv_imgs, texts)) for m in metrics}
    return TripletScores.from_mapping([t.triplet_id for t in ts], [t.domain for t in ts], [t.knob for t in ts],
                                      scores)
