"""Stage 4, the decision pass: the abstention tests in order, the margin test, stability,
agreement and confidence of the samples that reach it; and the kernels that decide again only
some samples of an earlier result (a margin step, new weights).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..types import (AMBIGUOUS, DECIDED, HIGH_OVERLAP, MISSING, NEAR_BOUNDARY, REASONS, RELATION_CODE, UNDECIDABLE,
                     UNSTABLE)
from .geometry import EPS, _f64
from .params import _OUT_TYPES, _Params, _b8, _masked

# the decision pass reads relations and reasons by their codes' arithmetic (_decide_chunk)
if list(RELATION_CODE) != ["left_of", "right_of", "above", "below"] or (NEAR_BOUNDARY, UNSTABLE) != (4, 5) \
        or len(REASONS) != 6:
    raise ImportError("workstation.methods.spatial.checker: relation or reason codes changed; update _decide_chunk")

_LOG_EPS, _LOG_ONE = np.log(np.array([0.0, 1.0]) + EPS).tolist()  # by the loop log(c + EPS) runs


def _log_eps(c: np.ndarray) -> np.ndarray:
    """log(c + EPS) of a component clipped to [0, 1], bit for bit, with the logarithm taken only
    where c is neither 0 nor 1 (most geometry terms are one or the other: past the margin by
    more than gamma, or not past it)."""
    mid = np.flatnonzero((c != 0.0) & (c != 1.0))  # NaN included
    if len(mid) * 2 > len(c):
        return np.log(c + EPS)
    out = np.where(c == 1.0, _LOG_ONE, _LOG_EPS)
    out[mid] = np.log(c[mid] + EPS)
    return out


def _confidence(p: _Params, absd: np.ndarray, logcd: np.ndarray, stab: np.ndarray,
                agree: np.ndarray) -> tuple[np.ndarray, ...]:
    """(conf, geom, stab, agree) clipped, as the reference computes them (exp of the weighted
    log-sum). Shared by the decision pass and the weights-only pass: equal inputs, equal bits."""
    cg = np.clip((absd - p.margin) / p.gamma, 0.0, 1.0)
    cs = np.clip(stab, 0.0, 1.0)
    ca = np.clip(agree, 0.0, 1.0)
    conf = np.exp(p.wd * logcd + p.wg * _log_eps(cg) + p.ws * np.log(cs + EPS) + p.wa * np.log(ca + EPS))
    return conf, cg, cs, ca


def _zeros_but(out: np.ndarray, r: np.ndarray, values: np.ndarray) -> None:
    """out = values at chunk positions r, 0.0 elsewhere."""
    out.fill(0.0)
    out[r] = values


def _reached_at(reason: np.ndarray) -> np.ndarray:
    """Chunk positions of the samples that reached the margin test (decided, near_boundary,
    unstable) by their reason."""
    return np.flatnonzero((reason == DECIDED) | (reason >= NEAR_BOUNDARY))


def _decided(p: _Params, x: dict[str, Any], s: slice, r: np.ndarray,
             d: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """The margin test, stability, agreement and confidence (METHODS.md §1) of the samples at
    chunk positions ``r`` of chunk ``s``, which reached the margin test (their objects found,
    not ambiguous, not overlapping); ``d`` their deltas. Returns their verdicts, reasons (0,
    near_boundary, unstable) and (conf, c_geometry, c_stability, c_agreement). Only those
    samples' inputs are read (gathered), and each sample's outputs depend on its own inputs
    alone: a pass costs in proportion to the samples it decides, and any subset of them gets
    the bits the whole would give it."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        def at(a: np.ndarray, row: int | None = None) -> np.ndarray:
            return (a[s] if row is None else a[row, s]).take(r)

        rel = at(x["rel"])
        # relation codes: left_of 0, right_of 1 (horizontal: code < 2); an odd code needs a
        # positive delta to PASS: sign * d > m with sign = +1 / -1 (exact)
        sign = (rel & 1) * 2.0 - 1.0
        absd = np.abs(d)
        near = absd <= p.margin
        decided = ~near
        passed = d * sign > p.margin
        length = len(r)

        # ---- stability (decided samples only) -----------------------------------------------
        unstable = np.zeros(length, bool)
        if p.stab_on:
            hp = at(x["has_pert"])
            if p.use_rec:
                rec = at(x["recorded"])
                stab = np.where(decided & ~hp & np.isfinite(rec), rec, 1.0)
            else:
                stab = np.ones(length)
            comp = decided & hp
            if p.stab_dets and comp.any():
                matches = np.zeros(length, np.int16)
                sdk = x["sdk"]
                for v in p.pvars:  # found both, with the base's geometric verdict
                    matches += at(x[f"both{v}"]) & (at(sdk, v - 1) > p.margin)
                val = 0.5 * (matches / len(p.pvars)) + at(x["iou_term"])
                # where no variant found both: 0 (val is NaN there, and only there when finite)
                val = np.fmax(val, 0.0) if p.finite else np.where(at(x["nobody"]), 0.0, val)
                stab = np.where(comp, val, stab)
            unstable = decided & (stab < p.ct)
        else:
            stab = np.ones(length)
        final_ok = decided & ~unstable
        verdict = UNDECIDABLE - _b8(final_ok) * (1 + _b8(passed))  # int8: PASS 0 / FAIL 1

        # ---- agreement with the secondary detector ------------------------------------------
        if p.use2:
            d2 = at(x["d2"])
            und2 = np.abs(d2) <= p.margin
            v2 = UNDECIDABLE * _b8(und2) + _b8(~(und2 | (d2 * sign > p.margin)))
            # 0.25*[v2 == verdict] + 0.25*[d*d2 >= 0], summed as small integers first (exact)
            h = 0.25 * (_b8(v2 == verdict) + _b8(d * d2 >= 0))
            agree = np.where(at(x["ok2"]), (h + at(x["qa"])) + at(x["qb"]), p.neutral)
        else:
            agree = np.ones(length)
        reason = NEAR_BOUNDARY * _b8(near) + UNSTABLE * _b8(unstable)
        return verdict, reason, _confidence(p, absd, at(x["logcd"]), stab, agree)


_DECIDED_FLOATS = ("conf", "c_geometry", "c_stability", "c_agreement")  # `_decided`'s components


def _decide_reached(p: _Params, x: dict[str, Any], out: dict[str, np.ndarray], s: slice, r: np.ndarray,
                    d: np.ndarray) -> None:
    """`_decided` of the samples at chunk positions ``r`` of chunk ``s`` (those that reached
    the margin test) written into ``out[...][s]``: every sample of the chunk gets its verdict
    (UNDECIDABLE where it did not reach the test) and conf / c_geometry / c_stability /
    c_agreement (0 where it did not); the reached ones get their reason."""
    verdict, reason, comps = _decided(p, x, s, r, d)
    vo = out["verdict"][s]
    vo.fill(UNDECIDABLE)
    vo[r] = verdict
    out["reason"][s][r] = reason
    for name, values in zip(_DECIDED_FLOATS, comps):
        _zeros_but(out[name][s], r, values)


def _decide_chunk(p: _Params, x: dict[str, Any], out: dict[str, np.ndarray], s: slice) -> None:
    """The verdict logic of METHODS.md §1 on samples ``s`` of the aligned inputs ``x`` (the
    geometry and a selection stage's arrays), written into ``out[...][s]``: which samples reach
    the margin test, full-width on the chunk with comparisons and small-integer arithmetic (its
    temporaries stay in the core's cache), then `_decide_reached` on those."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        pa, pb = x["pa"][s], x["pb"][s]
        found = pa & pb
        s2, s1 = x["s2"], x["s1"]  # second-best and best score of primary A / B
        s2a, s2b, s1a, s1b = _f64(s2[0, s]), _f64(s2[1, s]), _f64(s1[0, s]), _f64(s1[1, s])
        amb_a = (s2a >= p.cut1) & ((s1a - s2a) < p.amb)  # the gap: NaN / inf if undefined
        amb_b = (s2b >= p.cut1) & ((s1b - s2b) < p.amb)
        amb = found & (amb_a | amb_b)
        geo = found & ~amb
        d = x["d"][s]
        iou = x["iou_ab"][s]
        high = geo & (x["rel"][s] < 2) & (iou > p.max_iou)
        reach = geo & ~high
        out["reason"][s] = MISSING * _b8(~found) + AMBIGUOUS * _b8(amb) + HIGH_OVERLAP * _b8(high)
        r = np.flatnonzero(reach)
        _decide_reached(p, x, out, s, r, d.take(r))
        _masked(p, x["cd"][s], reach, out["c_detection"][s])
        out["reason_detail"][s] = (_b8(~found) * (_b8(~pa) + 2 * _b8(~pb)) + _b8(amb) * (2 - _b8(amb_a)))
        one_or_nan = geo / geo  # 1.0 where geo, NaN (0/0) elsewhere; x * 1.0 == x bit for bit
        np.multiply(d, one_or_nan, out=out["delta"][s])
        np.multiply(iou, one_or_nan, out=out["iou_ab"][s])


def _redecide_chunk(p: _Params, x: dict[str, Any], out: dict[str, np.ndarray], s: slice) -> None:
    """`_decide_chunk` for a result whose samples reach the margin test as in an earlier one
    (``x["reason"]``, ``x["delta"]``: same area filter, primary cut, ambiguity and overlap
    parameters): the reasons of the others are kept, `_decide_reached` decides the rest."""
    base = x["reason"][s]
    r = _reached_at(base)
    out["reason"][s] = base
    _decide_reached(p, x, out, s, r, x["delta"][s].take(r))


# What a result whose samples reach the margin test as in another one shares with it, and what
# it decides again (verdict, reason and `_decided`'s components)
_KEPT = ("c_detection", "delta", "iou_ab", "reason_detail")
_STEPPED = tuple(k for k in _OUT_TYPES if k not in _KEPT)


def _step_chunk(p: _Params, x: dict[str, Any], out: dict[str, np.ndarray], s: slice) -> None:
    """`_redecide_chunk` from a result under the same config but its margin (``x["base.*"]``,
    margins ``x["step"]`` = (lower, higher, higher + gamma, widened)): its arrays are copied
    and only the reached samples whose outputs can differ between the two margins are decided
    again. With both margins >= 0, a sample's verdict, reason, stability and agreement change
    only where one of the values compared with the margin (|delta|, |d2| where the secondary
    found both, a variant's delta where it found both) lies in (lower, higher]; c_geometry,
    clip((|delta| - m) / gamma), only where |delta| lies in (lower, higher + gamma]. Those
    samples, and any with a non-finite delta, get `_decided`'s bits for their own inputs."""
    with np.errstate(invalid="ignore"):
        lo, hi, hi_g = x["step"]
        base = x["base.reason"][s]
        ad = np.abs(x["delta"][s])
        t = ((ad > lo) & (ad <= hi_g)) | ~np.isfinite(ad)
        if p.use2:
            a2 = np.abs(x["d2"][s])
            t |= x["ok2"][s] & (a2 > lo) & (a2 <= hi)
        if p.stab_dets:  # (only with stability on)
            hp = x["has_pert"][s]
            for v in p.pvars:
                sd = x["sdk"][v - 1, s]
                t |= hp & x[f"both{v}"][s] & (sd > lo) & (sd <= hi)
        t &= (base == DECIDED) | (base >= NEAR_BOUNDARY)  # reached the margin test
        r = np.flatnonzero(t)
    for k in _STEPPED:
        out[k][s] = x[f"base.{k}"][s]
    verdict, reason, comps = _decided(p, x, s, r, x["delta"][s].take(r))
    out["verdict"][s][r] = verdict
    out["reason"][s][r] = reason
    for name, values in zip(_DECIDED_FLOATS, comps):
        out[name][s][r] = values


def _reweigh_chunk(p: _Params, x: dict[str, np.ndarray], out: dict[str, np.ndarray], s: slice) -> None:
    """conf and c_geometry of samples ``s`` from a result with the same verdicts (weights /
    gamma changed): the same ``_confidence`` on the same inputs as the decision pass."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        r = _reached_at(x["reason"][s])
        conf, cg, _, _ = _confidence(p, np.abs(x["delta"][s].take(r)), x["logcd"][s].take(r),
                                     x["c_stability"][s].take(r), x["c_agreement"][s].take(r))
        _zeros_but(out["conf"][s], r, conf)
        _zeros_but(out["c_geometry"][s], r, cg)
