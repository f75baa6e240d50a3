"""MetaLogic comparison: are the two images of each pair the same scene? Vectorised over all pairs.

Public API
----------
``prepare(data, dedup_iou) -> Prepared``
    Parameter-independent work, cached in ``data.cache``: duplicate suppression, label
    matching, score-sorted candidates per (image, entity).
``evaluate(data, cfg) -> PairResults``
    Outcome, misalignment type, abstention reason and confidence of every image pair (numpy; no
    Python loop over pairs).
``evaluate_reference(data, cfg) -> PairResults``
    The same rules as a plain loop over pairs: the readable specification, used by the tests
    (vectorised == reference) and the benchmark.

Rules (METHODS.md §2, with the spatial checker's abstention ideas of §1 where the paper is silent)
---------------------------------------------------------------------------------------------------
*Ranking and duplicates.* The detections of one image are ranked by score (descending; ties by
detection row). A detection overlapping a higher-ranked detection of **any** label by IoU >
``dedup_iou`` is the same object seen again (a detector's duplicate box, or a second label for the
same region) and is never counted. Its *rival score* — the best score of an overlapping detection
with a different label (IoU > ``dedup_iou``) — is kept for the ambiguity test.

*Candidates and counts.* The candidates of entity e in an image are its not-suppressed detections
(label == e, case-insensitive) whose box covers at least ``min_area_fraction`` of the image
(area / (W·H)). With t = ``score_threshold`` and b = ``near_band``, the count is the number of
candidates with score ≥ t; the count *interval* is [#(score ≥ t + b), #(score ≥ t − b)]. A
*label-ambiguous* box — a detection of e (suppressed or not, area-filtered) whose rival score is
within ``ambiguity_delta`` of its own, with the larger of the two ≥ t — widens the interval by one
on each side (the box may or may not be an e).

*Step 1, presence and counts* (every pair). For each entity in slot order: the counts of A and B
*certainly differ* when their intervals are disjoint, are *certainly equal* when both intervals are
the same single number, and are *uncertain* otherwise.
  - some entity certainly differs → **MISALIGNED**; the first such entity is named; type
    **omission** when one image certainly has none of it, else **duplication**;
  - else some entity uncertain → **UNDECIDABLE**, reason **ambiguous** when the intervals without
    the label-ambiguity widening would have decided it, else **near_threshold**;
  - else position-less pairs are **ALIGNED**; positional pairs go on.
*Step 2, order* (positional pairs not MISALIGNED by step 1). The entities with an expected place
on the axis that both images show, with certainly equal counts, are compared two by two (slot
order). The coordinate of an entity is the centroid of
its selected box (its highest-ranked candidate, which scores ≥ t), divided by the image width (X)
or height (Y); d = coord(i) − coord(j) in each image. An entity is *instance-ambiguous* in an image
when its two highest-ranked not-suppressed detections (area not filtered, as the spatial checker)
both score ≥ t and differ by less than ``ambiguity_delta``. A couple is decided when |d| >
``axis_margin`` in both images and neither entity is instance-ambiguous; it *differs* when the
signs of d differ.
  - a decided couple differs → **MISALIGNED**, type **positional**, both entities named — also
    when step 1 abstained on another entity's count (a certain difference is a difference);
  - else a pair step 1 abstained on stays **UNDECIDABLE** with step 1's reason;
  - else a couple not decided → **UNDECIDABLE**, reason **ambiguous** (instance ambiguity) or
    **near_boundary**;
  - else **ALIGNED** (also when fewer than two positioned entities are shown by both).

*Which image* (``side``): the image that disagrees with the pair's expectation when exactly one
does (counts: its count ≠ the expected count; order: its sign ≠ the expected order); otherwise,
for an omission the image without the entity, for a duplication the image with more.

*Confidence* in [0, 1] (0 for UNDECIDABLE): the weakest evidence the outcome rests on. Count
evidence of an entity in an image: min(1, s / ``score_slope``) with s the distance from t to the
nearest candidate score (1 without candidates); order evidence of a couple:
clip((min(|d_A|, |d_B|) − ``axis_margin``) / ``geom_slope``, 0, 1). A count misalignment rests on
its entity in both images; a positional one on its two entities' counts and its couple; an
alignment on every entity (and every compared couple).

*Per image* (``ok_a`` / ``ok_b``, point estimates): every count equals the expected count and every
shown couple of positioned entities is in the expected order (d < 0 when i comes first).

*The paper's decision* (`paper_outcomes`): every pair decided as the MetaLogic paper decides it —
"misalignments are flagged when outputs differ" — from the detection threshold and the centroid
order alone: the rules above with no abstention band (``near_band``, ``ambiguity_delta`` and
``axis_margin`` 0: a count is the number of candidates scoring at least t, an order is the sign
of d). The only outcome those rules can leave open is an exact tie of two centroids (d = 0 in an
image); there the order compares "i strictly before j" (d < 0) in both images. So every pair is
ALIGNED or MISALIGNED; the paper's misalignment rate is MISALIGNED over all pairs.

*Implementation.* `prepare` suppresses duplicates and ranks the candidates once; scores and area
fractions are replaced by their rank among the distinct values, so every threshold test in
`evaluate` is an integer comparison, code ≥ searchsorted(values, threshold), which is exactly the
float test. Counts are small-integer columns added rank by rank; the order step touches only the
pairs that position two entities. The float arithmetic (IoU, centroids, d, confidences) is float64
in the reference's operation order, so every output agrees with `reference.evaluate_reference`
(re-exported here) to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...util.grouping import by_segment_then_score
from .config import MetaLogicConfig
from .data import PairData
from .reference import evaluate_reference
from .results import (
    AMBIGUOUS,
    DUPLICATION,
    KINDS,
    MISALIGNED,
    NEAR_BOUNDARY,
    NEAR_THRESHOLD,
    OMISSION,
    POSITIONAL,
    REASONS,
    UNDECIDABLE,
    VERDICTS,
    PairResults,
    Selection,
)

__all__ = ["VERDICTS", "KINDS", "REASONS", "PairResults", "Prepared", "prepare", "evaluate",
           "evaluate_reference", "paper_config", "paper_outcomes"]

_CACHE_KEY = "metalogic.prepared"


# =============================================================================================
# Shared small helpers
# =============================================================================================
def _canonical_codes(labels: np.ndarray, entities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the lower-cased detection labels and entity names (shared table);
    unused entity slots ("") get -1, entity names no detection has get codes of their own."""
    canon: dict[str, int] = {}

    def encode(values: np.ndarray) -> np.ndarray:
        flat = values.reshape(-1)
        if len(flat) == 0:
            return np.zeros(values.shape, np.int64)
        try:
            import pyarrow as pa

            enc = pa.array(flat, type=pa.string()).dictionary_encode()
            codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            uniq = [str(x) for x in enc.dictionary.to_pylist()]
        except Exception:  # pragma: no cover - pyarrow is a dependency
            table: dict[str, int] = {}
            codes = np.array([table.setdefault(str(v), len(table)) for v in flat.tolist()], np.int64)
            uniq = list(table)
        mapping = np.empty(len(uniq), np.int64)
        for j, u in enumerate(uniq):
            key = " ".join(u.split()).lower()
            mapping[j] = -1 if not key else canon.setdefault(key, len(canon))
        return mapping[codes].reshape(values.shape)

    det = encode(np.asarray(labels, dtype=object))
    ent = encode(np.asarray(entities, dtype=object))
    return det, ent


# =============================================================================================
# Preparation (parameter-independent except for dedup_iou)
# =============================================================================================
@dataclass
class _Column:
    """Candidates at rank j >= 1 of their segment."""

    seg: np.ndarray  # int64 segment index
    code: np.ndarray  # score code (index into Prepared.scores)
    acode: np.ndarray  # area-fraction code (index into Prepared.areas)
    coord: np.ndarray  # float64 axis coordinate
    row: np.ndarray  # int64 detection row


@dataclass
class _Couple:
    """Two entity slots and the pairs in which both have a place on the axis."""

    i: int
    j: int
    pairs: np.ndarray  # int64, ascending
    exp_neg: np.ndarray  # bool: slot i comes first (d < 0 expected)


@dataclass
class Prepared:
    """What `evaluate` reuses across parameter changes.

    A *segment* is (side, slot, pair), flat index ``(side * E + slot) * P + pair``; its candidates
    are the entity's not-suppressed detections in that image, ranked. Scores and area fractions
    are replaced by their rank among the distinct values (``scores`` / ``areas``), so every
    threshold test is an integer comparison with ``searchsorted(values, threshold)`` — the same
    truth as comparing the floats. Rank 0 (the best candidate) is dense over segments, later ranks
    are compact columns."""

    key: tuple[Any, ...]
    n_pairs: int
    n_slots: int
    scores: np.ndarray  # float64, sorted distinct candidate scores
    areas: np.ndarray  # float64, sorted distinct candidate area fractions
    count_dtype: Any  # int8 / int16 / int32: wide enough for the longest segment
    code0: np.ndarray  # (S,) score code of the best candidate, -1 empty
    acode0: np.ndarray  # (S,) its area code, the type's maximum when empty
    c0: np.ndarray  # (S,) float64 its axis coordinate
    row0: np.ndarray  # (S,) int64 its detection row, -1
    more: np.ndarray  # (S,) bool: more than one candidate
    code1: np.ndarray  # (S,) score code of the second candidate, -1
    gap01: np.ndarray  # (S,) float64 best - second score (inf without a second)
    cols: list[_Column]
    amb_seg: np.ndarray  # label-ambiguity candidates: segment, score, rival score, area fraction
    amb_s: np.ndarray
    amb_alt: np.ndarray
    amb_af: np.ndarray
    exp0: np.ndarray  # (E, P) expected counts, 0 in unused slots (count dtype)
    couples: list[_Couple]
    positional: np.ndarray  # (P,) bool


def _dedup(img: np.ndarray, score: np.ndarray, box: tuple[np.ndarray, ...], lab: np.ndarray,
           matters: np.ndarray, dedup_iou: float) -> tuple[np.ndarray, np.ndarray]:
    """(kept, rival score) of every detection. Detections of one image are ranked by (score
    descending, row); only couples touching a detection that ``matters`` are computed."""
    d = len(img)
    kept = np.ones(d, bool)
    alt = np.full(d, -np.inf)
    if d == 0:
        return kept, alt
    key = np.empty(d, np.complex128)  # numpy sorts complex numbers by (real, imag)
    key.real = img
    key.imag = -score
    o = np.argsort(key, kind="stable")
    del key
    imo = img[o]
    new = np.ones(d, bool)
    new[1:] = imo[1:] != imo[:-1]
    pos = np.arange(d) - np.maximum.accumulate(np.where(new, np.arange(d), 0))
    so, lo, mo = score[o], lab[o], matters[o]
    x1, y1, x2, y2 = (b[o] for b in box)
    area = (x2 - x1) * (y2 - y1)  # the same product `_iou` forms, computed once
    kept_o = np.ones(d, bool)
    alt_o = np.full(d, -np.inf)
    idx = np.flatnonzero(pos >= 1)
    k = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        while len(idx):
            j = idx - k
            need = mo[idx] | mo[j]
            ii, jj = idx[need], j[need]
            iw = np.minimum(x2[ii], x2[jj]) - np.maximum(x1[ii], x1[jj])
            ih = np.minimum(y2[ii], y2[jj]) - np.maximum(y1[ii], y1[jj])
            np.maximum(iw, 0.0, out=iw)
            np.maximum(ih, 0.0, out=ih)
            inter = iw * ih
            # IoU > dedup_iou, operations as in `reference._ref_iou` (an empty union gives NaN here,
            # 0 there: both fail the test)
            over = np.flatnonzero(inter / (area[ii] + area[jj] - inter) > dedup_iou)
            a, b = ii[over], jj[over]
            kept_o[a] = False
            dl = lo[a] != lo[b]
            a, b = a[dl], b[dl]
            alt_o[a] = np.maximum(alt_o[a], so[b])
            alt_o[b] = np.maximum(alt_o[b], so[a])
            k += 1
            idx = idx[pos[idx] >= k]
    kept[o] = kept_o
    alt[o] = alt_o
    return kept, alt


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, code of each value) with the smallest integer type that fits."""
    uniq, inv = np.unique(values, return_inverse=True)
    dt = np.int16 if len(uniq) < 2 ** 15 else np.int32
    return uniq, inv.reshape(-1).astype(dt)


def prepare(data: PairData, dedup_iou: float = MetaLogicConfig.dedup_iou) -> Prepared:
    """Parameter-independent precomputation for `evaluate` (cached in ``data.cache``; rebuilt when
    the arrays are replaced or ``dedup_iou`` changes; code that edits arrays in place must
    ``data.cache.clear()``). Validates ``data``."""
    key = data.fingerprint() + (float(dedup_iou),)
    cached = data.cache.get(_CACHE_KEY)
    if isinstance(cached, Prepared) and cached.key == key:
        return cached
    data.validate()
    p, e = data.n_pairs, data.n_slots
    n_seg = 2 * e * p
    img = np.asarray(data.det_image, np.int64)
    score = np.asarray(data.det_score, np.float64)
    x1, y1, x2, y2 = (np.asarray(a, np.float64) for a in (data.det_x1, data.det_y1, data.det_x2, data.det_y2))
    lab, ent = _canonical_codes(data.det_label, data.entity)
    ent = np.where(data.expected_count >= 0, ent, -1)
    pair = img >> 1
    side = img & 1
    slot = np.full(len(img), -1, np.int64)
    for s in range(e):
        slot[(ent[pair, s] == lab) & (lab >= 0)] = s
    matched = slot >= 0
    kept, alt = _dedup(img, score, (x1, y1, x2, y2), lab, matched, float(dedup_iou))

    w = np.asarray(data.width, np.float64).reshape(-1)[img]
    h = np.asarray(data.height, np.float64).reshape(-1)[img]
    af = ((x2 - x1) * (y2 - y1)) / (w * h)
    ax = np.asarray(data.axis, np.int64)[pair]
    coord = np.where(ax == 1, ((x1 + x2) / 2) / w, np.where(ax == 2, ((y1 + y2) / 2) / h, 0.0))
    seg_all = (side * e + slot) * p + pair

    # ---- candidates: matched and kept, ranked within their segment -------------------------
    rel = np.flatnonzero(matched & kept)
    seg_r = seg_all[rel]
    o = by_segment_then_score(seg_r, score[rel])
    rows = rel[o]
    segs = seg_r[o]
    first = np.ones(len(rows), bool)
    first[1:] = segs[1:] != segs[:-1]
    rank = np.arange(len(rows)) - np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0)) \
        if len(rows) else np.zeros(0, np.int64)
    longest = int(rank.max()) + 1 if len(rank) else 0
    count_dtype = np.int8 if longest <= 120 else np.int16 if longest <= 32000 else np.int32
    scores, scode = _codes(score[rows])
    areas, acode = _codes(af[rows])
    cdt = scode.dtype if len(rows) else np.int16

    code0 = np.full(n_seg, -1, cdt)
    adt = acode.dtype if len(rows) else np.int16
    acode0 = np.full(n_seg, np.iinfo(adt).max, adt)  # empty: passes the area test, no score test
    c0 = np.zeros(n_seg)
    row0 = np.full(n_seg, -1, np.int64)
    f0 = np.flatnonzero(first)
    code0[segs[f0]] = scode[f0]
    acode0[segs[f0]] = acode[f0]
    c0[segs[f0]] = coord[rows[f0]]
    row0[segs[f0]] = rows[f0]
    more = np.zeros(n_seg, bool)
    cols: list[_Column] = []
    later = np.flatnonzero(~first)
    if len(later):
        by = later[np.argsort(rank[later], kind="stable")]
        sizes = np.bincount(rank[later])[1:]
        for chunk in np.split(by, np.cumsum(sizes)[:-1]):
            cols.append(_Column(seg=segs[chunk], code=scode[chunk], acode=acode[chunk],
                                coord=coord[rows[chunk]], row=rows[chunk]))
    code1 = np.full(n_seg, -1, cdt)
    gap01 = np.full(n_seg, np.inf)
    if cols:
        c1 = cols[0]
        more[c1.seg] = True
        code1[c1.seg] = c1.code
        gap01[c1.seg] = score[row0[c1.seg]] - score[c1.row]
    am = np.flatnonzero(matched & (alt > -np.inf))

    # ---- couples of positioned slots ---------------------------------------------------------
    rank_e = np.asarray(data.expected_rank, np.int64)
    couples = []
    for i in range(e):
        for j in range(i + 1, e):
            pr = np.flatnonzero((rank_e[:, i] >= 0) & (rank_e[:, j] >= 0))
            if len(pr):
                couples.append(_Couple(i, j, pr, rank_e[pr, i] < rank_e[pr, j]))
    prep = Prepared(
        key=key, n_pairs=p, n_slots=e, scores=scores, areas=areas, count_dtype=count_dtype,
        code0=code0, acode0=acode0, c0=c0, row0=row0, more=more, code1=code1, gap01=gap01, cols=cols,
        amb_seg=seg_all[am], amb_s=score[am], amb_alt=alt[am], amb_af=af[am],
        exp0=np.ascontiguousarray(np.maximum(np.asarray(data.expected_count), 0).T.astype(count_dtype)),
        couples=couples, positional=np.asarray(data.axis) != 0,
    )
    data.cache[_CACHE_KEY] = prep
    return prep


# =============================================================================================
# Vectorised evaluation
# =============================================================================================
def _first(masks: np.ndarray) -> np.ndarray:
    """Row of the first True in each column of a (k, n) bool array (-1 if none)."""
    out = np.full(masks.shape[1], -1, np.int64)
    for k in range(masks.shape[0] - 1, -1, -1):
        out[masks[k]] = k
    return out


def evaluate(data: PairData, cfg: MetaLogicConfig | None = None) -> PairResults:
    """Compare the two images of every pair under ``cfg`` (rules in the module docstring)."""
    cfg = cfg or MetaLogicConfig()
    cfg.validate()
    prep = prepare(data, cfg.dedup_iou)
    p, e = prep.n_pairs, prep.n_slots
    t = cfg.score_threshold
    t_lo, t_hi = t - cfg.near_band, t + cfg.near_band
    delta, m = cfg.ambiguity_delta, cfg.axis_margin
    cdt = prep.count_dtype
    # s >= x  <=>  code(s) >= searchsorted(scores, x): integer tests, same truth as the floats
    k_lo, k_mid, k_hi = (int(k) for k in np.searchsorted(prep.scores, [t_lo, t, t_hi], side="left"))
    k_a = int(np.searchsorted(prep.areas, cfg.min_area_fraction, side="left"))
    # count evidence of one candidate, tabulated per distinct score (min commutes with it)
    c_tab = np.append(np.minimum(1.0, np.abs(prep.scores - t) / cfg.score_slope), 1.0)

    # ---- per segment: counts at t - b, t, t + b; count evidence; selection ------------------
    # empty segments have score code -1 (below every threshold) and pass the area test
    small = np.flatnonzero(prep.acode0 < k_a)  # best candidate's box too small (rare)

    def count(k: int) -> np.ndarray:
        x = prep.code0 >= k
        if len(small):
            x[small] = False
        return x.view(np.int8) if cdt == np.int8 else x.astype(cdt)

    n_hi, n_mid, n_lo = count(k_lo), count(k_mid), count(k_hi)
    hit0 = n_mid.astype(bool)
    csc = c_tab[prep.code0]  # c_tab[-1] = 1.0 for empty segments
    if len(small):
        csc[small] = 1.0
    pend = small[prep.more[small]]  # a later candidate may be selected
    pending: np.ndarray | None = None
    if len(pend):
        pending = np.zeros(2 * e * p, bool)
        pending[pend] = True
    patch_seg: list[np.ndarray] = []
    patch_row: list[np.ndarray] = []
    patch_c: list[np.ndarray] = []
    for col in prep.cols:
        okc = col.acode >= k_a
        seg = col.seg
        n_hi[seg] += okc & (col.code >= k_lo)
        hit = okc & (col.code >= k_mid)
        n_mid[seg] += hit
        n_lo[seg] += okc & (col.code >= k_hi)
        csc[seg] = np.minimum(csc[seg], np.where(okc, c_tab[col.code], 1.0))
        if pending is not None:
            take = hit & pending[seg]
            if take.any():
                ts = seg[take]
                patch_seg.append(ts)
                patch_row.append(col.row[take])
                patch_c.append(col.coord[take])
                pending[ts] = False
    with np.errstate(invalid="ignore"):
        lsel = ((prep.amb_af >= cfg.min_area_fraction) & (np.maximum(prep.amb_s, prep.amb_alt) >= t)
                & (np.abs(prep.amb_s - prep.amb_alt) < delta))
    if lsel.any():
        lamb = np.zeros(2 * e * p, cdt)
        lamb[prep.amb_seg[lsel]] = 1
        lo = n_lo - lamb
        np.maximum(lo, 0, out=lo)
        hi = n_hi + lamb
    else:
        lo, hi = n_lo, n_hi
    c_sel = prep.c0
    selected = hit0
    if patch_seg:
        ps = np.concatenate(patch_seg)
        c_sel = prep.c0.copy()
        c_sel[ps] = np.concatenate(patch_c)
        selected = hit0.copy()
        selected[ps] = True

    shp = (2, e, p)
    lo3, hi3, mid3 = lo.reshape(shp), hi.reshape(shp), n_mid.reshape(shp)

    # ---- step 1: presence and counts ------------------------------------------------------
    la, ha, lb, hb = lo3[0], hi3[0], lo3[1], hi3[1]
    diff = (ha < lb) | (hb < la)  # unused slots count 0 in both images: never differ
    unc = ~(diff | ((ha == lb) & (hb == la)))  # lo <= hi, so equal ends mean one equal number
    s_diff = _first(diff)
    mis1 = s_diff >= 0
    s_unc = np.where(mis1, -1, _first(unc))
    und1 = s_unc >= 0
    order_step = ~mis1 & prep.positional  # a certain order difference decides even after step 1 abstained
    c_all = csc.reshape(2 * e, p).min(axis=0) if e else np.ones(p)

    verdict = np.zeros(p, np.int8)
    kind = np.zeros(p, np.int8)
    reason = np.zeros(p, np.int8)
    slot = np.full(p, -1, np.int8)
    slot2 = np.full(p, -1, np.int8)
    side = np.full(p, -1, np.int8)
    conf = np.zeros(p)

    i1 = np.flatnonzero(mis1)
    if len(i1):
        sl = s_diff[i1]
        na, nb = mid3[0, sl, i1], mid3[1, sl, i1]
        ex = prep.exp0[sl, i1]
        oka, okb = na == ex, nb == ex
        ha1, hb1 = hi3[0, sl, i1], hi3[1, sl, i1]
        omission = (ha1 == 0) | (hb1 == 0)
        structural = np.where(omission, np.where(ha1 == 0, 0, 1), np.where(lo3[0, sl, i1] > hb1, 0, 1))
        verdict[i1] = MISALIGNED
        kind[i1] = np.where(omission, OMISSION, DUPLICATION)
        slot[i1] = sl
        side[i1] = np.where(oka & ~okb, 1, np.where(okb & ~oka, 0, structural))
        cs = csc.reshape(shp)
        conf[i1] = np.minimum(cs[0, sl, i1], cs[1, sl, i1])
    iu = np.flatnonzero(und1)
    if len(iu):
        sl = s_unc[iu]
        rl = n_lo.reshape(shp)
        rh = n_hi.reshape(shp)
        ula, uha, ulb, uhb = rl[0, sl, iu], rh[0, sl, iu], rl[1, sl, iu], rh[1, sl, iu]
        raw = (uha < ulb) | (uhb < ula) | ((uha == ulb) & (uhb == ula))
        verdict[iu] = UNDECIDABLE
        reason[iu] = np.where(raw, AMBIGUOUS, NEAR_THRESHOLD)
        slot[iu] = sl

    # ---- per-image faithfulness: counts ----------------------------------------------------
    ok_img = (mid3 == prep.exp0[None]).all(axis=1) if e else np.ones((2, p), bool)

    # ---- step 2: order of positioned entities ------------------------------------------------
    c_diff = np.full(p, -1, np.int64)
    c_unc = np.full(p, -1, np.int64)
    amb_unc = np.zeros(p, bool)
    side2 = np.zeros(p, np.int8)
    conf2 = np.zeros(p)
    g_min = np.ones(p)
    for k, cp in enumerate(prep.couples):
        pr = cp.pairs
        s_ai, s_aj = cp.i * p + pr, cp.j * p + pr
        s_bi, s_bj = s_ai + e * p, s_aj + e * p
        with np.errstate(invalid="ignore"):
            da = c_sel[s_ai] - c_sel[s_aj]
            db = c_sel[s_bi] - c_sel[s_bj]
            sh_a = selected[s_ai] & selected[s_aj]
            sh_b = selected[s_bi] & selected[s_bj]
            ok_img[0, pr] &= ~sh_a | np.where(cp.exp_neg, da < 0, da > 0)
            ok_img[1, pr] &= ~sh_b | np.where(cp.exp_neg, db < 0, db > 0)
        u = np.flatnonzero(order_step[pr] & sh_a & ~unc[cp.i, pr] & ~unc[cp.j, pr])
        if len(u) == 0:
            continue
        pu = pr[u]
        da_u, db_u = da[u], db[u]
        ad, bd = np.abs(da_u), np.abs(db_u)
        amb = np.zeros(len(u), bool)
        for sg in (s_ai, s_bi, s_aj, s_bj):
            sgu = sg[u]
            amb |= (prep.code1[sgu] >= k_mid) & (prep.gap01[sgu] < delta)
        dec = (ad > m) & (bd > m) & ~amb
        g = np.clip((np.minimum(ad, bd) - m) / cfg.geom_slope, 0.0, 1.0)
        g_min[pu] = np.minimum(g_min[pu], g)
        dif = np.flatnonzero(dec & ((da_u > 0) != (db_u > 0)))
        if len(dif):
            tgt = pu[dif]
            new = c_diff[tgt] < 0
            tgt, dif = tgt[new], dif[new]
            c_diff[tgt] = k
            side2[tgt] = np.where((da_u[dif] < 0) != cp.exp_neg[u[dif]], 0, 1)
            ev = np.minimum(np.minimum(csc[s_ai[u[dif]]], csc[s_bi[u[dif]]]),
                            np.minimum(csc[s_aj[u[dif]]], csc[s_bj[u[dif]]]))
            conf2[tgt] = np.minimum(ev, g[dif])
        und = np.flatnonzero(~dec)
        if len(und):
            tgt = pu[und]
            new = c_unc[tgt] < 0
            tgt, und = tgt[new], und[new]
            c_unc[tgt] = k
            amb_unc[tgt] = amb[und]
    mis2 = c_diff >= 0
    und2 = ~(mis2 | und1) & (c_unc >= 0)
    if prep.couples:
        ci = np.array([c.i for c in prep.couples], np.int8)
        cj = np.array([c.j for c in prep.couples], np.int8)
        i2 = np.flatnonzero(mis2)
        verdict[i2] = MISALIGNED
        kind[i2] = POSITIONAL
        reason[i2] = 0
        slot[i2] = ci[c_diff[i2]]
        slot2[i2] = cj[c_diff[i2]]
        side[i2] = side2[i2]
        conf[i2] = conf2[i2]
        iu2 = np.flatnonzero(und2)
        verdict[iu2] = UNDECIDABLE
        reason[iu2] = np.where(amb_unc[iu2], AMBIGUOUS, NEAR_BOUNDARY)
        slot[iu2] = ci[c_unc[iu2]]
        slot2[iu2] = cj[c_unc[iu2]]
    ia = np.flatnonzero(~(mis1 | und1 | mis2 | und2))
    conf[ia] = np.minimum(c_all[ia], g_min[ia])  # g_min stays 1 without compared couples

    row0, positional = prep.row0, prep.positional
    patches = (np.concatenate(patch_seg), np.concatenate(patch_row)) if patch_seg else None

    def make_selection() -> tuple[np.ndarray, np.ndarray]:
        rows = np.where(hit0, row0, -1)
        if patches is not None:
            rows[patches[0]] = patches[1]
        coords = np.where(selected.reshape(shp) & positional, c_sel.reshape(shp), np.nan)
        return rows.reshape(shp), coords

    return PairResults(
        ids=data.pair_id, verdict=verdict, conf=conf, kind=kind, reason=reason, slot=slot, slot2=slot2,
        side=side, ok_a=ok_img[0], ok_b=ok_img[1], count=mid3, count_lo=lo3, count_hi=hi3,
        selection=Selection(make_selection), entity=data.entity, law=data.law, modifier=data.modifier,
        dimension=data.dimension, run=data.run, config=cfg,
    )


# =============================================================================================
# The paper's decision: no abstention
# =============================================================================================
def paper_config(cfg: MetaLogicConfig) -> MetaLogicConfig:
    """``cfg`` without abstention bands: the detection threshold, area filter and duplicate IoU
    stay; ``near_band``, ``ambiguity_delta`` and ``axis_margin`` are 0."""
    return cfg.replace(near_band=0.0, ambiguity_delta=0.0, axis_margin=0.0)


def paper_outcomes(data: PairData, cfg: MetaLogicConfig | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(verdict, kind) of every pair decided as the paper decides it (module doc): ALIGNED or
    MISALIGNED, never UNDECIDABLE. Cached in ``data.cache`` per threshold, area filter and
    duplicate IoU (the abstention bands do not change it)."""
    cfg = paper_config(cfg or MetaLogicConfig())
    key = ("metalogic.paper", data.fingerprint(), cfg.score_threshold, cfg.min_area_fraction, cfg.dedup_iou)
    hit = data.cache.get("metalogic.paper")
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    res = evaluate(data, cfg)
    verdict = res.verdict.copy()
    kind = res.kind.copy()
    open_ = np.flatnonzero(verdict == UNDECIDABLE)
    if len(open_):  # exact centroid ties: "i before j" is d < 0, compared between the images
        prep = prepare(data, cfg.dedup_iou)
        coord = res.coord
        verdict[open_] = 0  # ALIGNED unless a couple's order differs
        still = np.zeros(len(verdict), bool)
        still[open_] = True
        for cp in prep.couples:
            pr = cp.pairs[still[cp.pairs]]
            if not len(pr):
                continue
            with np.errstate(invalid="ignore"):
                da = coord[0, cp.i, pr] - coord[0, cp.j, pr]
                db = coord[1, cp.i, pr] - coord[1, cp.j, pr]
            differs = np.isfinite(da) & np.isfinite(db) & ((da < 0) != (db < 0))
            hit_ = pr[differs]
            verdict[hit_] = MISALIGNED
            kind[hit_] = POSITIONAL
            still[hit_] = False
    verdict.setflags(write=False)
    kind.setflags(write=False)
    data.cache["metalogic.paper"] = (key, verdict, kind)
    return verdict, kind
