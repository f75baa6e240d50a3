"""Demo MetaLogic pairs: the two images of a pair drawn procedurally, with errors injected per law.

A faithful generator given two logically equivalent prompts and the same seed draws the same
scene; this "generator" does exactly that — one layout per (pair, seed), drawn twice with the
demo's shapes (`workstation.demo.scenes`: every object class is a (shape, colour)) — and then,
with probability ``rates[law]``, changes **one** of the two images:

===============  ================================================================  ===============
injected error   what changes in the chosen image                                  comparison
===============  ================================================================  ===============
``omission``     one present entity is not drawn                                   omission
``duplication``  one present entity is drawn a second time, elsewhere              duplication
``swap``         two neighbouring positioned entities trade places on the axis     positional
===============  ================================================================  ===============

So a pair is misaligned exactly when an error was injected, and the misalignment rate of a law is
``rates[law]`` up to sampling (and the detector's own mistakes). Positional pairs get ``swap``
half the time and the other two a quarter each; position-less pairs omission or duplication
evenly (``kind_weights`` changes this). The default rates are the published per-law figures.

Layout rules: present entities (expected count ≥ 1) are drawn once; negated entities never.
Positioned entities sit in evenly spaced bands across the axis in their expected order (bands
at least a third of the image apart for three entities), at a random height (X) or column (Y);
the others are placed anywhere, not touching. The background, each object's look and its grain
come from their own seeded streams, so image A and image B share every pixel that no error
touched. Objects keep the demo's faded and shadowed looks, which the detector sometimes misses
(in both images alike).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...types import WorkstationError
from .laws import LAWS
from .suite import PairSpec

__all__ = ["DEFAULT_ERROR_RATES", "ERROR_KINDS", "render_pair", "render_side", "render_and_detect"]

#: published misalignment rate per law (METHODS.md §2), the demo's default injected rates
DEFAULT_ERROR_RATES: dict[str, float] = {
    "Commutative": 0.54, "Associative": 0.73, "Distributive": 0.86, "DeMorgan": 0.59, "Complement": 0.52,
}
ERROR_KINDS: tuple[str, ...] = ("omission", "duplication", "swap")
#: comparison misalignment type each injected error should produce
EXPECTED_KIND: dict[str, str] = {"omission": "omission", "duplication": "duplication", "swap": "positional"}


def _rng(*parts: object) -> np.random.Generator:
    h = hashlib.sha256("|".join(["metalogic-demo", *map(str, parts)]).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _rates(rates: Mapping[str, float] | None) -> dict[str, float]:
    out = dict(DEFAULT_ERROR_RATES)
    if rates is not None:
        for law, r in rates.items():
            if law not in DEFAULT_ERROR_RATES:
                raise WorkstationError(
                    f"unknown law {law!r} in error rates (expected one of {', '.join(LAWS)})")
            if not 0.0 <= float(r) <= 1.0:
                raise WorkstationError(f"error rate of {law} must be in [0, 1], got {r}")
            out[law] = float(r)
    return out


def _layout(spec: PairSpec, rng: np.random.Generator) -> list[Any]:
    from ...demo import scenes

    present = [e for e, c in zip(spec.entities, spec.expected_count) if c > 0]
    order = list(spec.expected_order)
    objs: list[Any] = []
    axis = {"x": 0, "y": 1}.get(spec.axis)
    for tries in range(200):
        objs = []
        ok = True
        for e in present:
            o = scenes.new_object(rng, "entity", e)
            if axis is not None and e in order:
                k, n = order.index(e), len(order)
                band = 1.0 / n
                e_ = o.r * 1.05 + 0.02
                lo_, hi_ = max(k * band + e_, e_), min((k + 1) * band - e_, 1 - e_)
                if lo_ > hi_:  # small bands: centre of the band
                    lo_ = hi_ = (k + 0.5) * band
                pa = float(rng.uniform(lo_, hi_))
                q = float(rng.uniform(e_, 1 - e_))
                o.cx, o.cy = (pa, q) if axis == 0 else (q, pa)
                if not scenes.separated(o, objs):
                    ok = False
                    break
            elif not scenes.place_free(rng, o, objs):
                ok = False
                break
            objs.append(o)
        if ok:
            return objs
    raise WorkstationError(f"could not lay out pair {spec.pair_id}")  # pragma: no cover - ample room


def _choose(spec: PairSpec, rng: np.random.Generator, weights: Mapping[str, float] | None
            ) -> tuple[str, list[str]]:
    present = [e for e, c in zip(spec.entities, spec.expected_count) if c > 0]
    positioned = spec.axis != "" and len(spec.expected_order) >= 2
    if weights is not None:
        w = dict(weights)
    else:
        w = {"omission": 1.0, "duplication": 1.0, "swap": 2.0 if positioned else 0.0}
    if not positioned:
        w.pop("swap", None)
    if not present:
        w = {}
    kinds = [k for k in ERROR_KINDS if w.get(k, 0.0) > 0]
    if not kinds:
        return "", []
    p = np.array([w[k] for k in kinds], np.float64)
    kind = kinds[int(rng.choice(len(kinds), p=p / p.sum()))]
    if kind == "swap":
        k = int(rng.integers(len(spec.expected_order) - 1))
        return kind, [spec.expected_order[k], spec.expected_order[k + 1]]
    return kind, [present[int(rng.integers(len(present)))]]


def _decide(spec: PairSpec, seed: int, rates: Mapping[str, float] | None,
            kind_weights: Mapping[str, float] | None, force: str | None) -> tuple[str, list[str], int]:
    """(error kind or "", the entities it touches, the side it changes: 0 A, 1 B, -1 none) of a
    (pair, seed): one seeded stream per (pair id, seed), so image A and image B — drawn apart by a
    generator job — make the same decision."""
    rate = _rates(rates)[spec.law]
    rng = _rng(spec.pair_id, seed, "error")
    if force is None:
        kind, ents = _choose(spec, rng, kind_weights) if rng.random() < rate else ("", [])
    elif force == "":
        kind, ents = "", []
    else:
        if force not in ERROR_KINDS:
            raise WorkstationError(f"unknown error kind {force!r} (expected one of {', '.join(ERROR_KINDS)})")
        kind, ents = _choose(spec, rng, {force: 1.0})
        if not kind:
            raise WorkstationError(f"pair {spec.pair_id} cannot take a {force} error")
    err_side = int(rng.integers(2)) if kind else -1
    return kind, ents, err_side


def _check(spec: PairSpec, size: int) -> None:
    from ...demo import scenes

    if size < 64:
        raise WorkstationError(f"demo images must be at least 64 pixels wide, got {size}")
    for e in spec.entities:
        scenes.style_of(e)  # a clear error for names the demo cannot draw


def _draw_side(spec: PairSpec, seed: int, base: list[Any], side: int, kind: str, ents: list[str], err_side: int,
               size: int) -> tuple[np.ndarray, dict[str, list[list[float]]]]:
    """One image of the pair: the shared layout ``base``, changed when ``side`` is the error's side.
    Every random stream is seeded by (pair, seed, purpose), so drawing a side alone gives the same
    pixels as drawing both."""
    from ...demo import scenes

    objs = [copy.copy(o) for o in base]
    ids = list(range(len(objs)))
    if side == err_side:
        if kind == "omission":
            k = next(i for i, o in enumerate(objs) if o.label == ents[0])
            del objs[k], ids[k]
        elif kind == "duplication":
            src = next(o for o in objs if o.label == ents[0])
            drng = _rng(spec.pair_id, seed, "duplicate")
            dup = scenes.new_object(drng, "entity", src.label, r=src.r * float(drng.uniform(0.9, 1.1)))
            dup.look, dup.sat, dup.val, dup.shade = "normal", src.sat, src.val, 0.08
            if not scenes.place_free(drng, dup, objs, tries=400):
                raise WorkstationError(  # pragma: no cover - ample room
                    f"no room for a duplicate in pair {spec.pair_id}")
            objs.append(dup)
            ids.append(len(base))
        elif kind == "swap":
            a = next(o for o in objs if o.label == ents[0])
            b = next(o for o in objs if o.label == ents[1])
            if spec.axis == "x":
                a.cx, b.cx = b.cx, a.cx
            else:
                a.cy, b.cy = b.cy, a.cy
            for o in (a, b):  # keep a larger object inside the image after the move
                ext = o.r * 1.05 + 0.02
                o.cx, o.cy = min(max(o.cx, ext), 1 - ext), min(max(o.cy, ext), 1 - ext)
    img = scenes.draw_background(_rng(spec.pair_id, seed, "background"), size)
    occupied = np.zeros((size, size), np.uint8)
    bx: dict[str, list[list[float]]] = {}
    for oid, o in zip(ids, objs):
        box = scenes.draw_object(img, o, _rng(spec.pair_id, seed, "object", oid), occupied)
        if box is not None:
            bx.setdefault(o.label, []).append([round(v, 2) for v in box])
    return img, bx


def _truth(spec: PairSpec, seed: int, kind: str, ents: list[str], err_side: int, size: int,
           base: list[Any]) -> dict[str, Any]:
    return {
        "pair_id": spec.pair_id, "seed": seed, "law": spec.law, "injected": bool(kind), "kind": kind,
        "side": "AB"[err_side] if kind else "", "entities": ents,
        "expected_verdict": "MISALIGNED" if kind else "ALIGNED", "expected_kind": EXPECTED_KIND.get(kind, ""),
        "width": size, "height": size, "looks": {o.label: o.look for o in base},
    }


def render_pair(spec: PairSpec, seed: int | None = None, *, rates: Mapping[str, float] | None = None,
                size: int = 512, kind_weights: Mapping[str, float] | None = None,
                force: str | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Draw image A and image B of a pair (same seed). Returns (A, B, truth), images H×W×3 uint8 RGB.

    ``seed`` defaults to the pair's own; ``rates`` maps laws to injected error rates (missing laws
    keep the default); ``force`` injects that error kind ("omission", "duplication", "swap") or
    none (""), whatever the rates. ``truth``: ``injected`` (bool), ``kind``, ``side`` ("A"/"B"),
    ``entities`` (the entity or the two swapped ones), ``expected_verdict`` (MISALIGNED / ALIGNED),
    ``expected_kind`` (the comparison's type), ``boxes_a`` / ``boxes_b`` (entity -> true boxes).
    """
    _check(spec, size)
    seed = spec.seed if seed is None else int(seed)
    kind, ents, err_side = _decide(spec, seed, rates, kind_weights, force)
    base = _layout(spec, _rng(spec.pair_id, seed, "layout"))
    img_a, box_a = _draw_side(spec, seed, base, 0, kind, ents, err_side, size)
    img_b, box_b = _draw_side(spec, seed, base, 1, kind, ents, err_side, size)
    truth = _truth(spec, seed, kind, ents, err_side, size, base)
    truth.update(boxes_a=box_a, boxes_b=box_b)
    return img_a, img_b, truth


def render_side(spec: PairSpec, seed: int, side: str, *, rates: Mapping[str, float] | None = None,
                size: int = 512, kind_weights: Mapping[str, float] | None = None,
                force: str | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Draw one image of a pair (``side`` "A" or "B"): the same pixels as that image of
    `render_pair` with the same arguments — what a generator job asks for, one prompt at a time.
    ``truth`` is the pair's (as `render_pair`'s) with ``image_side`` and that image's ``boxes``."""
    if side not in ("A", "B"):
        raise WorkstationError(f"a MetaLogic image is side 'A' or 'B', got {side!r}")
    _check(spec, size)
    seed = int(seed)
    kind, ents, err_side = _decide(spec, seed, rates, kind_weights, force)
    base = _layout(spec, _rng(spec.pair_id, seed, "layout"))
    img, boxes = _draw_side(spec, seed, base, "AB".index(side), kind, ents, err_side, size)
    truth = _truth(spec, seed, kind, ents, err_side, size, base)
    truth.update(image_side=side, boxes=boxes)
    return img, truth


def render_and_detect(specs: Sequence[PairSpec], detector: Any = None, *,
                      rates: Mapping[str, float] | None = None, size: int = 512,
                      run: str = "demo_procedural") -> tuple[Any, list[dict[str, Any]]]:
    """Render every pair, detect both images (the demo's `SceneDetector` by default) and return
    (`PairData`, truths) ready for `compare.evaluate`."""
    from .data import PairData

    if detector is None:
        from ...demo.detector import SceneDetector

        detector = SceneDetector()
    det_a: list[list[Any]] = []
    det_b: list[list[Any]] = []
    truths = []
    for spec in specs:
        a, b, t = render_pair(spec, rates=rates, size=size)
        da, db = detector.detect_batch([a, b])
        det_a.append(da)
        det_b.append(db)
        truths.append(t)
    return PairData.from_specs(specs, det_a, det_b, width=float(size), height=float(size), run=run), truths
