"""The MetaLogic comparison written as a plain loop over pairs: the readable specification.

`evaluate_reference(data, cfg)` applies the rules stated in `compare` one pair at a time, with
Python lists and floats; the tests check that `compare.evaluate` gives the same result to the last
bit, and the benchmark times both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import MetaLogicConfig
from .data import PairData
from .results import (
    ALIGNED,
    AMBIGUOUS,
    DUPLICATION,
    MISALIGNED,
    NEAR_BOUNDARY,
    NEAR_THRESHOLD,
    OMISSION,
    POSITIONAL,
    UNDECIDABLE,
    PairResults,
    Selection,
)

__all__ = ["evaluate_reference"]


def _ref_iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """IoU of two xyxy boxes (0 where the union is empty); the same operations as `compare._iou`."""
    iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@dataclass
class _RefDet:
    row: int
    label: str
    score: float
    box: tuple[float, float, float, float]
    af: float
    coord: float
    kept: bool = True
    alt: float = -math.inf


def evaluate_reference(data: PairData, cfg: MetaLogicConfig | None = None) -> PairResults:
    """The comparison as a readable loop over pairs (same contract as `evaluate`)."""
    cfg = cfg or MetaLogicConfig()
    cfg.validate()
    data.validate()
    p, e = data.n_pairs, data.n_slots
    t = cfg.score_threshold
    t_lo, t_hi = t - cfg.near_band, t + cfg.near_band
    f, delta, m = cfg.min_area_fraction, cfg.ambiguity_delta, cfg.axis_margin

    per_image: dict[int, list[_RefDet]] = {}
    for row, (im, lab, sc, bx1, by1, bx2, by2) in enumerate(zip(
            data.det_image.tolist(), data.det_label.tolist(), data.det_score.tolist(), data.det_x1.tolist(),
            data.det_y1.tolist(), data.det_x2.tolist(), data.det_y2.tolist())):
        pi, sd = im // 2, im % 2
        w, h = float(data.width[pi, sd]), float(data.height[pi, sd])
        axis = int(data.axis[pi])
        coord = ((bx1 + bx2) / 2) / w if axis == 1 else ((by1 + by2) / 2) / h if axis == 2 else 0.0
        af = ((bx2 - bx1) * (by2 - by1)) / (w * h)
        name = " ".join(str(lab).split()).lower()
        per_image.setdefault(im, []).append(_RefDet(row, name, sc, (bx1, by1, bx2, by2), af, coord))
    for dets in per_image.values():
        dets.sort(key=lambda d: (-d.score, d.row))
        for i, di in enumerate(dets):
            for j, dj in enumerate(dets):
                if i == j or _ref_iou(di.box, dj.box) <= cfg.dedup_iou:
                    continue
                if j < i:
                    di.kept = False
                if di.label != dj.label:
                    di.alt = max(di.alt, dj.score)

    out: dict[str, list[Any]] = {k: [] for k in ("verdict", "kind", "reason", "slot", "slot2", "side", "conf",
                                                "ok_a", "ok_b")}
    count = np.zeros((2, e, p), np.int32)
    count_lo = np.zeros((2, e, p), np.int32)
    count_hi = np.zeros((2, e, p), np.int32)
    sel_row = np.full((2, e, p), -1, np.int64)
    coord = np.full((2, e, p), np.nan)
    for pi in range(p):
        ents = [str(x) for x, c in zip(data.entity[pi].tolist(), data.expected_count[pi].tolist()) if c >= 0]
        exp = [int(c) for c in data.expected_count[pi].tolist()[:len(ents)]]
        rank = [int(r) for r in data.expected_rank[pi].tolist()[:len(ents)]]
        positional = int(data.axis[pi]) != 0
        st: dict[tuple[int, int], dict[str, Any]] = {}
        for sd in (0, 1):
            dets = per_image.get(2 * pi + sd, [])
            for s, name in enumerate(ents):
                cands = [d for d in dets if d.label == name and d.kept]
                okc = [d for d in cands if d.af >= f]
                n_lo_ = sum(1 for d in okc if d.score >= t_hi)
                n_mid_ = sum(1 for d in okc if d.score >= t)
                n_hi_ = sum(1 for d in okc if d.score >= t_lo)
                slack = min((abs(d.score - t) for d in okc), default=math.inf)
                lamb = any(d.label == name and d.alt > -math.inf and d.af >= f and max(d.score, d.alt) >= t
                           and abs(d.score - d.alt) < delta for d in dets)
                chosen = next((d for d in okc if d.score >= t), None)
                iamb = len(cands) >= 2 and cands[1].score >= t and cands[0].score - cands[1].score < delta
                rec = {"n": n_mid_, "rlo": n_lo_, "rhi": n_hi_, "lo": max(n_lo_ - int(lamb), 0),
                       "hi": n_hi_ + int(lamb), "c": min(1.0, slack / cfg.score_slope), "iamb": iamb,
                       "coord": chosen.coord if chosen else math.nan}
                st[sd, s] = rec
                count[sd, s, pi], count_lo[sd, s, pi], count_hi[sd, s, pi] = rec["n"], rec["lo"], rec["hi"]
                if chosen is not None:
                    sel_row[sd, s, pi] = chosen.row
                    if positional:
                        coord[sd, s, pi] = chosen.coord

        # per-image faithfulness (point estimates)
        ok = [all(st[sd, s]["n"] == exp[s] for s in range(len(ents))) for sd in (0, 1)]
        couples = [(i, j) for i in range(len(ents)) for j in range(i + 1, len(ents))
                   if rank[i] >= 0 and rank[j] >= 0]
        for sd in (0, 1):
            for i, j in couples:
                if st[sd, i]["n"] > 0 and st[sd, j]["n"] > 0:
                    dk = st[sd, i]["coord"] - st[sd, j]["coord"]
                    if not (dk < 0 if rank[i] < rank[j] else dk > 0):
                        ok[sd] = False

        verdict, kind, reason, s1, s2, side, conf = ALIGNED, 0, 0, -1, -1, -1, 0.0
        c_all = min([min(st[0, s]["c"], st[1, s]["c"]) for s in range(len(ents))], default=1.0)
        c_all = min(c_all, 1.0)
        first_unc = None
        for s in range(len(ents)):
            a, b = st[0, s], st[1, s]
            if a["hi"] < b["lo"] or b["hi"] < a["lo"]:
                verdict, s1 = MISALIGNED, s
                omission = a["hi"] == 0 or b["hi"] == 0
                kind = OMISSION if omission else DUPLICATION
                oka, okb = a["n"] == exp[s], b["n"] == exp[s]
                if oka and not okb:
                    side = 1
                elif okb and not oka:
                    side = 0
                elif omission:
                    side = 0 if a["hi"] == 0 else 1
                else:
                    side = 0 if a["lo"] > b["hi"] else 1
                conf = min(a["c"], b["c"])
                break
            if first_unc is None and not (a["lo"] == a["hi"] == b["lo"] == b["hi"]):
                first_unc = s
        if verdict == ALIGNED and first_unc is not None:
            s = first_unc
            a, b = st[0, s], st[1, s]
            raw_decided = (a["rhi"] < b["rlo"] or b["rhi"] < a["rlo"]
                           or a["rlo"] == a["rhi"] == b["rlo"] == b["rhi"])
            verdict, s1 = UNDECIDABLE, s
            reason = AMBIGUOUS if raw_decided else NEAR_THRESHOLD
        if verdict == ALIGNED:
            conf = c_all
        if verdict != MISALIGNED and positional:
            # order: couples of entities both images show, with counts certainly equal (all of
            # them unless step 1 was undecided); a certain difference decides even then
            counted = verdict == ALIGNED

            def sure(s: int) -> bool:
                a, b = st[0, s], st[1, s]
                return bool(a["lo"] == a["hi"] == b["lo"] == b["hi"])

            g_min = 1.0
            undecided: tuple[int, int, bool] | None = None
            for i, j in couples:
                if not (st[0, i]["n"] > 0 and st[0, j]["n"] > 0 and sure(i) and sure(j)):
                    continue
                da = st[0, i]["coord"] - st[0, j]["coord"]
                db = st[1, i]["coord"] - st[1, j]["coord"]
                amb = st[0, i]["iamb"] or st[1, i]["iamb"] or st[0, j]["iamb"] or st[1, j]["iamb"]
                g = min(max((min(abs(da), abs(db)) - m) / cfg.geom_slope, 0.0), 1.0)
                g_min = min(g_min, g)
                if abs(da) > m and abs(db) > m and not amb:
                    if (da > 0) != (db > 0):
                        verdict, kind, reason, s1, s2 = MISALIGNED, POSITIONAL, 0, i, j
                        side = 0 if (da < 0) != (rank[i] < rank[j]) else 1
                        conf = min(st[0, i]["c"], st[1, i]["c"], st[0, j]["c"], st[1, j]["c"], g)
                        break
                elif undecided is None:
                    undecided = (i, j, amb)
            if counted and verdict == ALIGNED:
                if undecided is not None:
                    verdict, s1, s2 = UNDECIDABLE, undecided[0], undecided[1]
                    reason = AMBIGUOUS if undecided[2] else NEAR_BOUNDARY
                else:
                    conf = min(c_all, g_min)
        for k, v in (("verdict", verdict), ("kind", kind), ("reason", reason), ("slot", s1), ("slot2", s2),
                     ("side", side), ("conf", conf if verdict != UNDECIDABLE else 0.0), ("ok_a", ok[0]),
                     ("ok_b", ok[1])):
            out[k].append(v)
    return PairResults(
        ids=data.pair_id, verdict=np.array(out["verdict"], np.int8), conf=np.array(out["conf"], np.float64),
        kind=np.array(out["kind"], np.int8), reason=np.array(out["reason"], np.int8),
        slot=np.array(out["slot"], np.int8), slot2=np.array(out["slot2"], np.int8),
        side=np.array(out["side"], np.int8), ok_a=np.array(out["ok_a"], bool),
        ok_b=np.array(out["ok_b"], bool),
        count=count, count_lo=count_lo, count_hi=count_hi, selection=Selection(rows=sel_row, coords=coord),
        entity=data.entity,
        law=data.law, modifier=data.modifier, dimension=data.dimension, run=data.run, config=cfg,
    )
