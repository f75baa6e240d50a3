"""`evaluate_reference`: the checker's rules as a plain loop over samples, the readable
specification the tests and the benchmark compare `evaluate` with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....dataset import Dataset, Detections
from ....types import PRIMARY, SECONDARY
from ..config import CheckerConfig
from ..data import recorded_stability
from ..types import (AMBIGUOUS, DECIDED, FAIL, HIGH_OVERLAP, MISSING, NEAR_BOUNDARY, PASS, RELATION_CODE, UNDECIDABLE,
                     UNSTABLE)
from .geometry import EPS, _spatial_columns
from .params import _perturbation_variants
from .verdicts import VerdictArrays


_Box = tuple[float, float, float, float]
_Det = tuple[int, str, float, _Box]  # (row, lower-case label, score, box)


def _ref_select(dets: list[_Det], label: str, cut: float, min_area: float) -> _Det | None:
    best: _Det | None = None
    for dd in dets:  # in detection order; strict > keeps the earlier of equal scores
        row, lab, score, (x1, y1, x2, y2) = dd
        if lab != label or score < cut or (x2 - x1) * (y2 - y1) < min_area:
            continue
        if best is None or score > best[2]:
            best = dd
    return best


def _ref_ambiguous(dets: list[_Det], label: str, cut: float, amb_delta: float) -> bool:
    scores = sorted((sc for _, lab, sc, _ in dets if lab == label and sc >= cut), reverse=True)
    return len(scores) >= 2 and scores[0] - scores[1] < amb_delta


def _ref_delta(a: _Box, b: _Box, horizontal: bool, w: float, h: float) -> float:
    if horizontal:
        return ((a[0] + a[2]) / 2 - (b[0] + b[2]) / 2) / w
    return ((a[1] + a[3]) / 2 - (b[1] + b[3]) / 2) / h


def _ref_iou(a: _Box, b: _Box) -> float:
    inter = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0) * max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _ref_geom(dlt: float, negative: bool, m: float) -> int:
    if abs(dlt) <= m:
        return UNDECIDABLE
    if negative:
        return PASS if dlt < -m else FAIL
    return PASS if dlt > m else FAIL


@dataclass(frozen=True)
class _RefSample:
    """One sample as the reference reads it."""

    i: int
    la: str  # object A's name, lower-case
    lb: str
    w: float
    h: float
    horizontal: bool  # left_of / right_of
    negative: bool  # PASS needs a negative delta (left_of / above)
    min_area: float
    use2: bool  # the secondary detector is used and ran on this image
    has_pert: bool
    recorded: float  # the recorded stability (NaN: none)


def evaluate_reference(ds: Dataset, cfg: CheckerConfig) -> VerdictArrays:
    """The checker as a readable loop over samples (same contract as ``evaluate``)."""
    s = ds.samples
    has_pert = [bool(x) for x in s.has_perturbed.tolist()]
    stab_from_dets = cfg.stability_enabled and len(cfg.perturbations) > 0 and any(has_pert)
    pvars = _perturbation_variants(ds, cfg, needed=stab_from_dets)
    lists = _ref_detections(ds.detections)
    out: dict[str, list[Any]] = {k: [] for k in (
        "verdict", "reason", "detail", "conf", "det", "geom", "stab", "agree", "delta", "iou",
        "sa", "sb", "s2a", "s2b")}
    rel_names = {c: r for r, c in RELATION_CODE.items()}
    relation, label_a, label_b = _spatial_columns(ds)
    recorded = recorded_stability(ds)
    for i in range(len(s)):
        rel = rel_names[int(relation[i])]
        w, h = float(s.width[i]), float(s.height[i])
        smp = _RefSample(i=i, la=str(label_a[i]).strip().lower(), lb=str(label_b[i]).strip().lower(), w=w, h=h,
                         horizontal=rel in ("left_of", "right_of"), negative=rel in ("left_of", "above"),
                         min_area=cfg.min_area_fraction * (w * h),
                         use2=cfg.use_secondary and bool(s.has_secondary[i]),
                         has_pert=has_pert[i], recorded=float(recorded[i]))
        for k, val in _ref_sample(smp, lists, pvars, cfg).items():
            out[k].append(val)

    f = lambda k: np.array(out[k], np.float64)  # noqa: E731
    g = lambda k: np.array(out[k], np.int64)  # noqa: E731
    return VerdictArrays(
        verdict=np.array(out["verdict"], np.int8), reason=np.array(out["reason"], np.int8),
        reason_detail=np.array(out["detail"], np.int8), conf=f("conf"), c_detection=f("det"),
        c_geometry=f("geom"), c_stability=f("stab"), c_agreement=f("agree"), delta=f("delta"),
        iou_ab=f("iou"), sel_a=g("sa"), sel_b=g("sb"), sel2_a=g("s2a"), sel2_b=g("s2b"),
        label_a=label_a, label_b=label_b, config=cfg,
    )


_Lists = dict[tuple[int, int, int], list[_Det]]


def _ref_detections(dt: Detections) -> _Lists:
    """The detections per (sample, source, variant), in detection order."""
    lists: _Lists = {}
    for row, (si, src, var, lab, sc, x1, y1, x2, y2) in enumerate(zip(
            dt.sample_idx.tolist(), dt.source.tolist(), dt.variant.tolist(), dt.label.tolist(),
            dt.score.tolist(), dt.x1.tolist(), dt.y1.tolist(), dt.x2.tolist(), dt.y2.tolist())):
        lists.setdefault((si, src, var), []).append((row, str(lab).strip().lower(), sc, (x1, y1, x2, y2)))
    return lists


def _ref_sample(smp: _RefSample, lists: _Lists, pvars: list[int], cfg: CheckerConfig) -> dict[str, Any]:
    """One sample's verdict, reason, confidence and its components, delta, IoU and selections."""
    cut1 = max(cfg.t_det, cfg.primary_threshold)
    cut2 = max(cfg.t_det, cfg.secondary_threshold)
    m = cfg.margin
    la, lb = smp.la, smp.lb
    prim = lists.get((smp.i, PRIMARY, 0), [])
    a = _ref_select(prim, la, cut1, smp.min_area)
    b = _ref_select(prim, lb, cut1, smp.min_area)
    rec: dict[str, Any] = dict(verdict=UNDECIDABLE, reason=DECIDED, detail=0, conf=0.0, det=0.0,
                               geom=0.0, stab=0.0, agree=0.0, delta=math.nan, iou=math.nan,
                               sa=a[0] if a else -1, sb=b[0] if b else -1, s2a=-1, s2b=-1)
    sec = lists.get((smp.i, SECONDARY, 0), [])
    a2 = _ref_select(sec, la, cut2, smp.min_area) if smp.use2 else None
    b2 = _ref_select(sec, lb, cut2, smp.min_area) if smp.use2 else None
    rec["s2a"] = a2[0] if a2 else -1
    rec["s2b"] = b2[0] if b2 else -1
    if a is None or b is None:
        rec["reason"] = MISSING
        rec["detail"] = (1 if a is None else 0) + (2 if b is None else 0)
        return rec
    if _ref_ambiguous(prim, la, cut1, cfg.ambiguity_delta):
        rec["reason"], rec["detail"] = AMBIGUOUS, 1
        return rec
    if _ref_ambiguous(prim, lb, cut1, cfg.ambiguity_delta):
        rec["reason"], rec["detail"] = AMBIGUOUS, 2
        return rec
    dlt = _ref_delta(a[3], b[3], smp.horizontal, smp.w, smp.h)
    iou_ab = _ref_iou(a[3], b[3])
    rec["delta"], rec["iou"] = dlt, iou_ab
    if smp.horizontal and iou_ab > cfg.max_overlap_iou:
        rec["reason"] = HIGH_OVERLAP
        return rec
    verdict = _ref_geom(dlt, smp.negative, m)
    stability = 1.0
    if verdict == UNDECIDABLE:
        rec["reason"] = NEAR_BOUNDARY
    elif cfg.stability_enabled and cfg.perturbations:
        stability = _ref_stability(smp, lists, pvars, cfg, a, b, verdict)
        if stability < cfg.consistency_threshold:
            verdict = UNDECIDABLE
            rec["reason"] = UNSTABLE
    if not cfg.use_secondary:
        agreement = 1.0
    elif a2 is None or b2 is None:
        agreement = cfg.neutral_agreement
    else:
        d2 = _ref_delta(a2[3], b2[3], smp.horizontal, smp.w, smp.h)
        ag = 0.5 * (1.0 if _ref_geom(d2, smp.negative, m) == verdict else 0.0) \
            + 0.5 * (1.0 if dlt * d2 >= 0 else 0.0)
        agreement = 0.5 * ag + 0.25 * _ref_iou(a[3], a2[3]) + 0.25 * _ref_iou(b[3], b2[3])
    c_det = max(0.0, min(1.0, math.sqrt(a[2] * b[2])))
    c_geom = max(0.0, min(1.0, (abs(dlt) - m) / cfg.geom_slope))
    c_stab = max(0.0, min(1.0, stability))
    c_agr = max(0.0, min(1.0, agreement))
    rec["conf"] = ((c_det + EPS) ** cfg.w_detection * (c_geom + EPS) ** cfg.w_geometry
                   * (c_stab + EPS) ** cfg.w_stability * (c_agr + EPS) ** cfg.w_agreement)
    rec.update(verdict=verdict, det=c_det, geom=c_geom, stab=c_stab, agree=c_agr)
    return rec


def _ref_stability(smp: _RefSample, lists: _Lists, pvars: list[int], cfg: CheckerConfig, a: _Det, b: _Det,
                   verdict: int) -> float:
    """The stability of a decided sample: from its perturbed detections where it has them, else
    its recorded stability where finite, else 1.0."""
    if smp.has_pert:
        cut1 = max(cfg.t_det, cfg.primary_threshold)
        matches, succ, ious = 0, 0, []
        for v in pvars:
            pd = lists.get((smp.i, PRIMARY, v), [])
            pa_ = _ref_select(pd, smp.la, cut1, smp.min_area)
            pb_ = _ref_select(pd, smp.lb, cut1, smp.min_area)
            if pa_ is None or pb_ is None:
                continue
            succ += 1
            d_v = _ref_delta(pa_[3], pb_[3], smp.horizontal, smp.w, smp.h)
            if _ref_geom(d_v, smp.negative, cfg.margin) == verdict:
                matches += 1
            ious.append(_ref_iou(a[3], pa_[3]))
            ious.append(_ref_iou(b[3], pb_[3]))
        if succ == 0:
            return 0.0
        return 0.5 * (matches / len(pvars)) + 0.5 * (sum(ious) / len(ious))
    if math.isfinite(smp.recorded):
        return smp.recorded
    return 1.0
