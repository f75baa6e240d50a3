"""The spatial checker with abstention (METHODS.md §1), vectorised over every sample.

Public API
----------
``prepare(ds) -> Prepared``
    Parameter-independent precomputation, cached in ``ds.cache`` (label/role matching,
    score-sorted segments, areas, the geometry of the default selections). Called by
    ``evaluate``; call it yourself to pay its cost up front (e.g. right after loading).
``evaluate(ds, cfg) -> VerdictArrays``
    Verdicts, reasons and confidences of every sample under ``cfg``, vectorised with numpy.
``evaluate_reference(ds, cfg) -> VerdictArrays``
    The same rules written as a plain loop over samples: the readable specification, used by
    the tests (vectorised == reference) and by the benchmark.

Rules, exactly as SpatialBench-UC applies them (checked against its published run):

* Selection of label L in one detection list: label == L (case-insensitive), score >= cut,
  box area >= min_area_fraction * W * H; the highest score wins (ties: the earlier detection).
  ``cut`` is ``max(t_det, detector threshold)`` (``cfg.primary_threshold`` /
  ``cfg.secondary_threshold``): cached detections go below what the detector itself returned,
  so the detector's own threshold is re-applied everywhere, including the ambiguity test.
* Order of the abstention tests: missing (A and/or B) > ambiguous (A, then B) > high_overlap
  (left_of/right_of only, IoU > bound) > near_boundary (|d| <= margin) > unstable.
  missing / ambiguous / high_overlap carry confidence 0 and all four components 0.
* Stability is computed only for a decided (PASS/FAIL) geometric verdict; a near_boundary sample
  carries stability 1.0. Its input, per sample: the cached perturbed detections where
  ``samples.has_perturbed``; else ``samples.recorded_stability`` where finite (an imported run
  recorded it; the published data does not ship perturbed detections); else stability is
  unavailable and taken as 1.0. With ``cfg.stability_enabled`` False it is 1.0.
* Agreement: 1.0 with ``cfg.use_secondary`` False; ``cfg.neutral_agreement`` (0.5) where the
  secondary detector did not run on the image (``samples.has_secondary`` False) or did not find
  A or B; otherwise 0.5*a + 0.25*IoU(A, A2) + 0.25*IoU(B, B2) with
  a = 0.5*[v2 == verdict] + 0.5*[d*d2 >= 0], where v2 is the secondary geometric verdict
  (PASS/FAIL/UNDECIDABLE by the margin) and ``verdict`` is the sample's verdict after the
  stability test (UNDECIDABLE for near_boundary / unstable samples).
* Confidence (samples that reached the margin test, incl. near_boundary and unstable):
  (det+eps)^w_det * (geom+eps)^w_geom * (stab+eps)^w_stab * (agree+eps)^w_agree, eps = 1e-10,
  det = clip(sqrt(s_A*s_B)), geom = clip((|d| - m)/gamma), stab and agree clipped to [0, 1].

Perturbations are matched to cached detection variants by ``Perturbation.name``
(``ds.variant_names``); a configured perturbation with no cached detections is a
WorkstationError when stability has to be computed from cached detections.

All arithmetic is float64 in the reference's operation order, so verdicts, reasons, deltas,
IoUs and the four components agree with ``evaluate_reference`` to the last bit; the vectorised
confidence is computed as exp(sum of w*log(c + eps)) (numpy's pow is slow), which agrees with
the reference's product of powers to about 1e-15 relative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np

from ...util.grouping import factorize
from .config import CheckerConfig
from .data import spatial_columns
from ...dataset import Dataset
from .types import (
    AMBIGUOUS,
    DECIDED,
    FAIL,
    HIGH_OVERLAP,
    MISSING,
    NEAR_BOUNDARY,
    PASS,
    REASONS,
    RELATION_CODE,
    UNDECIDABLE,
    UNSTABLE,
)
from ...types import PRIMARY, SECONDARY, WorkstationError

__all__ = ["VerdictArrays", "VerdictColumns", "StorableVerdicts", "Prepared", "prepare", "evaluate", "evaluate_reference", "EPS"]

EPS = 1e-10
_CACHE_KEY = "checker.prepared"

# relations whose PASS needs a negative delta (A left of / above B)
_NEGATIVE = np.zeros(len(RELATION_CODE), dtype=bool)
_NEGATIVE[RELATION_CODE["left_of"]] = True
_NEGATIVE[RELATION_CODE["above"]] = True
_HORIZONTAL = np.zeros(len(RELATION_CODE), dtype=bool)
_HORIZONTAL[RELATION_CODE["left_of"]] = True
_HORIZONTAL[RELATION_CODE["right_of"]] = True


# =============================================================================================
# Result
# =============================================================================================
class VerdictColumns(Protocol):
    """The per-sample columns metrics read from a verdict set aligned with ``ds.samples``:
    ``VerdictArrays`` and ``io.export.StoredVerdicts`` both have them."""

    verdict: np.ndarray
    reason: np.ndarray
    conf: np.ndarray


class StorableVerdicts(VerdictColumns, Protocol):
    """What ``Project.save_verdicts`` stores from a verdict set (``VerdictArrays`` or
    ``io.export.StoredVerdicts``)."""

    c_detection: np.ndarray
    c_geometry: np.ndarray
    c_stability: np.ndarray
    c_agreement: np.ndarray
    delta: np.ndarray
    iou_ab: np.ndarray

    def reason_text(self, i: int) -> str: ...


@dataclass
class VerdictArrays:
    """Checker output for N samples, aligned with ``ds.samples`` (row i = sample i).

    ``verdict``: int8 (types.PASS / FAIL / UNDECIDABLE); ``reason``: int8 (types.REASONS code,
    0 for PASS/FAIL); ``reason_detail``: int8, for missing a bit mask (1 = A, 2 = B missing),
    for ambiguous 1 = A, 2 = B. ``conf`` and ``c_detection``, ``c_geometry``, ``c_stability``,
    ``c_agreement``: float64 (all 0 for missing / ambiguous / high_overlap). ``delta`` and
    ``iou_ab``: float64 of the selected primary boxes, NaN where not computed (missing,
    ambiguous). ``sel_a`` / ``sel_b``: int64 row in ``ds.detections`` of the selected primary
    box on the original image (-1 if none; a found box is kept even when the other object is
    missing). ``sel2_a`` / ``sel2_b``: the secondary detector's selections (-1 if none or the
    secondary detector is not used). ``label_a`` / ``label_b`` (object names) and ``config``
    serve ``reason_text``.
    """

    verdict: np.ndarray
    reason: np.ndarray
    reason_detail: np.ndarray
    conf: np.ndarray
    c_detection: np.ndarray
    c_geometry: np.ndarray
    c_stability: np.ndarray
    c_agreement: np.ndarray
    delta: np.ndarray
    iou_ab: np.ndarray
    sel_a: np.ndarray
    sel_b: np.ndarray
    sel2_a: np.ndarray
    sel2_b: np.ndarray
    label_a: np.ndarray
    label_b: np.ndarray
    config: CheckerConfig

    def __len__(self) -> int:
        return len(self.verdict)

    def take(self, idx: np.ndarray) -> "VerdictArrays":
        """The rows ``idx`` (indices or a boolean mask); ``config`` is shared."""
        kw: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            kw[f.name] = v if f.name == "config" else v[idx]
        return VerdictArrays(**kw)

    def reason_text(self, i: int) -> str:
        """SpatialBench-UC's ``verdict_reason`` for sample i ("" for PASS / FAIL), e.g.
        ``missing: potted plant, bear``, ``ambiguous: multiple banana``,
        ``high_overlap: IoU=0.96 > 0.5``, ``near_boundary (|delta|=0.049 <= margin=0.1)``,
        ``unstable: stability=0.42 < 0.5``."""
        r = int(self.reason[i])
        cfg = self.config
        if r == DECIDED:
            return ""
        if r == MISSING:
            det = int(self.reason_detail[i])
            names = [str(self.label_a[i])] if det & 1 else []
            if det & 2:
                names.append(str(self.label_b[i]))
            return f"missing: {', '.join(names)}"
        if r == AMBIGUOUS:
            name = self.label_a[i] if int(self.reason_detail[i]) == 1 else self.label_b[i]
            return f"ambiguous: multiple {name}"
        if r == HIGH_OVERLAP:
            return f"high_overlap: IoU={float(self.iou_ab[i]):.2f} > {cfg.max_overlap_iou}"
        if r == NEAR_BOUNDARY:
            return f"near_boundary (|delta|={abs(float(self.delta[i])):.3f} <= margin={cfg.margin})"
        if r == UNSTABLE:
            return f"unstable: stability={float(self.c_stability[i]):.2f} < {cfg.consistency_threshold}"
        return REASONS[r]

    def reason_texts(self) -> np.ndarray:
        """``reason_text`` of every sample as an object array."""
        out = np.full(len(self), "", dtype=object)
        for i in np.flatnonzero(self.reason != DECIDED).tolist():
            out[i] = self.reason_text(i)
        return out

    def counts(self) -> tuple[int, int, int]:
        """(PASS, FAIL, UNDECIDABLE) counts."""
        c = np.bincount(self.verdict.astype(np.int64), minlength=3)
        return int(c[PASS]), int(c[FAIL]), int(c[UNDECIDABLE])


# =============================================================================================
# Geometry helpers (shared by prepare and evaluate so that both compute identical floats)
# =============================================================================================
def _delta(ax1: np.ndarray, ay1: np.ndarray, ax2: np.ndarray, ay2: np.ndarray,
           bx1: np.ndarray, by1: np.ndarray, bx2: np.ndarray, by2: np.ndarray,
           horizontal: np.ndarray, w: np.ndarray, h: np.ndarray) -> np.ndarray:
    """d = (cx_A - cx_B)/W (left_of/right_of) or (cy_A - cy_B)/H (above/below)."""
    dx = ((ax1 + ax2) / 2 - (bx1 + bx2) / 2) / w
    dy = ((ay1 + ay2) / 2 - (by1 + by2) / 2) / h
    return np.where(horizontal, dx, dy)


def _iou(ax1: np.ndarray, ay1: np.ndarray, ax2: np.ndarray, ay2: np.ndarray,
         bx1: np.ndarray, by1: np.ndarray, bx2: np.ndarray, by2: np.ndarray) -> np.ndarray:
    """IoU of xyxy boxes (0 where the union is empty)."""
    iw = np.maximum(np.minimum(ax2, bx2) - np.maximum(ax1, bx1), 0.0)
    ih = np.maximum(np.minimum(ay2, by2) - np.maximum(ay1, by1), 0.0)
    inter = iw * ih
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        out = inter / union
    return np.where(union > 0, out, 0.0)


BASE_KEYS = ("d", "absd", "sd", "iou_ab", "iou_h", "cd", "logcd")
SECONDARY_KEYS = ("absd2", "sd2", "signok", "qa", "qb")
VARIANT_KEYS = ("absdk", "same", "iouak", "ioubk")  # (V, L) arrays, row v - 1 for variant v


def _geometry(ds: Dataset, rows: np.ndarray, idx: np.ndarray | None,
              pairs: set[int] | None = None) -> dict[str, np.ndarray]:
    """What the verdict logic needs from the selected boxes, at samples ``idx`` (all if None).

    ``rows``: (S, L) selected ds.detections row per slot (-1 where absent; values derived from an
    absent box are finite placeholders that the logic never uses). ``pairs`` limits the work to
    some slot pairs (0 = primary A/B on the original, 1 = secondary A/B, 1 + v = variant v):
    the keys of BASE_KEYS / SECONDARY_KEYS / VARIANT_KEYS (variant rows not asked for stay 0).
    """
    s, det = ds.samples, ds.detections
    rel = np.asarray(spatial_columns(ds).relation, np.int64)
    w = np.asarray(s.width, np.float64)
    h = np.asarray(s.height, np.float64)
    if idx is not None:
        rel, w, h = rel[idx], w[idx], h[idx]
    horizontal, negative = _HORIZONTAL[rel], _NEGATIVE[rel]
    n_slots, length = rows.shape
    n_var = n_slots // 2 - 1
    want = set(range(n_slots // 2)) if pairs is None else pairs
    g: dict[str, np.ndarray] = {}
    if len(det) == 0:
        rows = np.zeros((n_slots, length), np.int64)
        det = type(det)(*(np.zeros(1, a.dtype) for a in (
            det.sample_idx, det.source, det.variant, det.label, det.score, det.x1, det.y1, det.x2, det.y2)))

    def box(sl: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        r = np.maximum(rows[sl], 0)
        return det.x1[r], det.y1[r], det.x2[r], det.y2[r]

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ba, bb = box(0), box(1)
        d = _delta(*ba, *bb, horizontal, w, h)
        if 0 in want:
            g["d"] = d
            g["absd"] = np.abs(d)
            g["sd"] = np.where(negative, -d, d)  # PASS iff sd > m (same floats as d < -m / d > m)
            iou_ab = _iou(*ba, *bb)
            g["iou_ab"] = iou_ab
            g["iou_h"] = np.where(horizontal, iou_ab, -np.inf)  # high_overlap: left/right only
            cd = np.clip(np.sqrt(det.score[np.maximum(rows[0], 0)] * det.score[np.maximum(rows[1], 0)]),
                         0.0, 1.0)
            g["cd"] = cd
            g["logcd"] = np.log(cd + EPS)
        if 1 in want:
            a2, b2 = box(2), box(3)
            d2 = _delta(*a2, *b2, horizontal, w, h)
            g["absd2"] = np.abs(d2)
            g["sd2"] = np.where(negative, -d2, d2)
            g["signok"] = d * d2 >= 0
            g["qa"] = 0.25 * _iou(*ba, *a2)  # exact: 0.25 * x is a power-of-two scaling
            g["qb"] = 0.25 * _iou(*bb, *b2)
        variants = [v for v in range(1, n_var) if 1 + v in want]
        if variants or pairs is None:
            absdk = np.zeros((n_var - 1, length))
            same = np.zeros((n_var - 1, length), bool)
            iouak = np.zeros((n_var - 1, length))
            ioubk = np.zeros((n_var - 1, length))
            dneg = d < 0
            for v in variants:
                pa_, pb_ = box(2 * (1 + v)), box(2 * (1 + v) + 1)
                dk = _delta(*pa_, *pb_, horizontal, w, h)
                absdk[v - 1] = np.abs(dk)
                same[v - 1] = (dk < 0) == dneg
                iouak[v - 1] = _iou(*ba, *pa_)
                ioubk[v - 1] = _iou(*bb, *pb_)
            g.update(absdk=absdk, same=same, iouak=iouak, ioubk=ioubk)
    return g


# =============================================================================================
# Parameter-independent precomputation
# =============================================================================================
@dataclass
class Prepared:
    """What ``prepare`` caches. Slots: 2*g + role, role 0 = A, 1 = B; group g = 0 primary
    detections on the original image, 1 secondary on the original, 1 + v primary on variant v.
    A segment = the detections of one (slot, sample), sorted by score descending (ties by row).
    ``geom`` holds ``_geometry`` of the default selection (every segment's first row)."""

    fingerprint: tuple[Any, ...]
    n: int
    n_slots: int
    order: np.ndarray  # int64, sorted position -> row in ds.detections
    first: np.ndarray  # int64 (S, N): position of the segment's first row, -1 if empty
    count: np.ndarray  # int32 (S, N): segment length
    multi: np.ndarray  # bool (S, N): segment has more than one row
    area0: np.ndarray  # float64 (S, N): area of the first row (+inf if empty)
    score0: np.ndarray  # float64 (S, N): score of the first row (-inf if empty)
    row0: np.ndarray  # int64 (S, N): ds.detections row of the first row (-1 if empty)
    s2: np.ndarray  # float64 (2, N): second-best score of original primary A / B (-inf)
    gap: np.ndarray  # float64 (2, N): best - second-best score (inf / NaN if undefined)
    wh: np.ndarray  # float64 (N,): W*H
    wh_scalar: float | None  # W*H when every sample has the same size
    geom: dict[str, np.ndarray]


def _fingerprint(ds: Dataset) -> tuple[Any, ...]:
    s, d = ds.samples, ds.detections
    return (len(s), len(d), tuple(ds.variant_names), id(s.sample_id), id(spatial_columns(ds).label_a), id(spatial_columns(ds).label_b),
            id(s.width), id(s.height), id(spatial_columns(ds).relation), id(d.sample_idx), id(d.label), id(d.score),
            id(d.x1), id(d.y1), id(d.x2), id(d.y2), id(d.source), id(d.variant))


def _factorize_labels(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes and unique values of a string column (hash encoding, order of first appearance)."""
    return factorize(values, sort=False)


def _canonical_codes(ds: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Case-insensitive integer codes of the detection labels and of the samples' A / B."""
    canon: dict[str, int] = {}

    def encode(values: np.ndarray, add: bool) -> np.ndarray:
        codes, uniq = _factorize_labels(values)
        if not uniq:
            return np.full(len(values), -1, np.int64)
        mapping = np.empty(len(uniq), np.int64)
        for j, u in enumerate(uniq):
            key = u.strip().lower()
            mapping[j] = canon.setdefault(key, len(canon)) if add else canon.get(key, -1)
        return mapping[codes]

    lab = encode(ds.detections.label, add=True)
    a = encode(spatial_columns(ds).label_a, add=False)
    b = encode(spatial_columns(ds).label_b, add=False)
    return lab, a, b


def _variant_index(ds: Dataset) -> dict[str, int]:
    return {name: k for k, name in enumerate(ds.variant_names) if k >= 1}


def prepare(ds: Dataset) -> Prepared:
    """Parameter-independent precomputation for ``evaluate``, cached in ``ds.cache``.

    The cache is rebuilt when the dataset's arrays are replaced (it keys on their identity and
    lengths); code that edits arrays in place must ``ds.cache.pop("checker.prepared")``.
    """
    fp = _fingerprint(ds)
    cached = ds.cache.get(_CACHE_KEY)
    if isinstance(cached, Prepared) and cached.fingerprint == fp:
        return cached

    s, d = ds.samples, ds.detections
    n = len(s)
    n_var = len(ds.variant_names)
    n_slots = 2 * (1 + n_var)  # primary original, secondary original, primary variants 1..V
    sample_idx = np.asarray(d.sample_idx, np.int64)
    variant = np.asarray(d.variant, np.int64)
    source = np.asarray(d.source, np.int64)
    if len(d):
        if sample_idx.min() < 0 or sample_idx.max() >= n:
            raise WorkstationError("detections refer to samples that are not in the dataset")
        if variant.min() < 0 or variant.max() >= n_var:
            raise WorkstationError(
                f"detections refer to image variant {int(variant.max())} but the dataset names only "
                f"{n_var} variant(s): {', '.join(ds.variant_names)}")

    lab, code_a, code_b = _canonical_codes(ds)
    # detections that can ever matter: primary on any variant, secondary on the original
    keep = ((source == PRIMARY) | ((source == SECONDARY) & (variant == 0))) & (lab >= 0)
    role_a = keep & (lab == code_a[sample_idx])
    role_b = keep & (lab == code_b[sample_idx])
    del keep, lab
    rows = np.concatenate([np.flatnonzero(role_a), np.flatnonzero(role_b)])
    role = np.repeat(np.array([0, 1], np.int64), [int(role_a.sum()), int(role_b.sum())])
    del role_a, role_b
    group = np.where(source[rows] == SECONDARY, 1, np.where(variant[rows] == 0, 0, 1 + variant[rows]))
    key = sample_idx[rows] * n_slots + (2 * group + role)  # sample-major: near-sorted in practice
    del group, role
    score = np.asarray(d.score, np.float64)
    # sort by (sample, slot), then score descending, then detection row: one stable sort of a
    # complex key (real = segment, imag = -score; numpy orders complex lexicographically)
    ck = np.empty(len(rows), np.complex128)
    ck.real = key
    ck.imag = -score[rows]
    order_local = np.argsort(ck, kind="stable")
    del ck
    order = rows[order_local]
    key_sorted = key[order_local]
    del rows, key, order_local

    count_flat = np.bincount(key_sorted, minlength=n_slots * n)
    del key_sorted
    start_flat = np.cumsum(count_flat) - count_flat
    count = np.ascontiguousarray(count_flat.reshape(n, n_slots).T).astype(np.int32)
    has = count > 0
    first = np.where(has, start_flat.reshape(n, n_slots).T, -1).astype(np.int64)
    del count_flat, start_flat

    row0 = np.full((n_slots, n), -1, np.int64)
    row0[has] = order[first[has]]
    if len(d):
        r = np.maximum(row0, 0)
        area0 = np.where(has, (d.x2[r] - d.x1[r]) * (d.y2[r] - d.y1[r]), np.inf)
        score0 = np.where(has, score[r], -np.inf)
        del r
    else:
        area0 = np.full((n_slots, n), np.inf)
        score0 = np.full((n_slots, n), -np.inf)
    s2 = np.full((2, n), -np.inf)
    for sl in (0, 1):
        two = count[sl] >= 2
        s2[sl, two] = score[order[first[sl, two] + 1]]
    with np.errstate(invalid="ignore"):
        gap = score0[:2] - s2

    width = np.asarray(s.width, np.float64)
    height = np.asarray(s.height, np.float64)
    wh = width * height
    wh_scalar = float(wh[0]) if n and bool((wh == wh[0]).all()) else None
    prep = Prepared(
        fingerprint=fp, n=n, n_slots=n_slots, order=order, first=first, count=count,
        multi=count > 1, area0=area0, score0=score0, row0=row0, s2=s2, gap=gap, wh=wh,
        wh_scalar=wh_scalar, geom=_geometry(ds, row0, None),
    )
    ds.cache[_CACHE_KEY] = prep
    return prep


# =============================================================================================
# Vectorised evaluation
# =============================================================================================
def _perturbation_variants(ds: Dataset, cfg: CheckerConfig, needed: bool) -> list[int]:
    index = _variant_index(ds)
    out = []
    for p in cfg.perturbations:
        v = index.get(p.name)
        if v is None:
            if needed:
                raise WorkstationError(
                    f"the checker config uses perturbation {p.name!r} but no detections are cached for "
                    f"it (cached variants: {', '.join(ds.variant_names[1:]) or 'none'}); run detection "
                    f"on that perturbation or remove it from the config")
            v = -1
        out.append(v)
    return out


def _presence(prep: Prepared, sl: int, thr: np.ndarray | float, cut: float
              ) -> tuple[np.ndarray, np.ndarray]:
    """Default selection in one slot: (present, bad). present = the segment's first
    (highest-scoring) row passes score and area; bad = samples whose first row fails the area
    filter while later rows exist (``_walk`` looks further there)."""
    small = prep.area0[sl] < thr
    present = prep.score0[sl] >= cut
    present &= ~small
    small &= prep.multi[sl]
    return present, np.flatnonzero(small)


def _walk(ds: Dataset, prep: Prepared, sl: int, bad: np.ndarray, thr: np.ndarray | float,
          cut: float) -> tuple[np.ndarray, np.ndarray]:
    """Selection in the segments ``bad`` past their first row: the first later row that passes
    the area filter, kept if it passes the score cut. Returns (samples with such a selection,
    their ds.detections rows). Walks one row per step, only the segments still looking."""
    if len(bad) == 0:
        return bad, bad
    d = ds.detections
    thr_bad = thr[bad] if isinstance(thr, np.ndarray) else np.full(len(bad), thr)
    pos = prep.first[sl, bad] + 1
    left = prep.count[sl, bad].astype(np.int64) - 1
    active = np.arange(len(bad))
    found_row = np.full(len(bad), -1, np.int64)
    while len(active):
        rr = prep.order[pos[active]]
        area = (d.x2[rr] - d.x1[rr]) * (d.y2[rr] - d.y1[rr])
        hit = area >= thr_bad[active]
        found_row[active[hit]] = rr[hit]
        go = ~hit & (left[active] > 1)
        active = active[go]
        pos[active] += 1
        left[active] -= 1
    got = np.flatnonzero(found_row >= 0)
    got = got[d.score[found_row[got]] >= cut]
    return bad[got], found_row[got]


def _b8(mask: np.ndarray) -> np.ndarray:
    """A bool array as int8 0/1 without copying."""
    return mask.view(np.int8)


def _decide(cfg: CheckerConfig, g: dict[str, np.ndarray], pres: dict[int, np.ndarray],
            s2: np.ndarray, gap: np.ndarray, pvars: list[int], has_pert: np.ndarray,
            recorded: np.ndarray, has2: np.ndarray) -> dict[str, np.ndarray]:
    """The verdict logic of METHODS.md §1 on aligned arrays of any length L.

    Written with comparisons, integer arithmetic and index gathers (no random-mask ``where``),
    which is what keeps a million samples fast.
    """
    m = float(cfg.margin)
    cut1 = max(cfg.t_det, cfg.primary_threshold)
    length = len(g["d"])
    pres_a, pres_b = pres[0], pres[1]
    with np.errstate(invalid="ignore"):
        missing = ~(pres_a & pres_b)
        amb_a = (s2[0] >= cut1) & (gap[0] < cfg.ambiguity_delta)
        amb_b = (s2[1] >= cut1) & (gap[1] < cfg.ambiguity_delta)
        amb = ~missing & (amb_a | amb_b)
        geo = ~(missing | amb)
        high = geo & (g["iou_h"] > cfg.max_overlap_iou)
        reach = geo & ~high
        near = reach & (g["absd"] <= m)
        decided = reach & ~near
        passed = g["sd"] > m

    # ---- stability (decided samples only) ---------------------------------------------------
    stab = np.ones(length)
    unstable = np.zeros(length, bool)
    if cfg.stability_enabled and len(cfg.perturbations) > 0:
        use_rec = np.flatnonzero(decided & ~has_pert & np.isfinite(recorded))
        stab[use_rec] = recorded[use_rec]
        comp = np.flatnonzero(decided & has_pert)
        if len(comp):
            matches = np.zeros(len(comp))
            succ = np.zeros(len(comp))
            iou_sum = np.zeros(len(comp))
            for v in pvars:
                both = pres[2 * (1 + v)][comp] & pres[2 * (1 + v) + 1][comp]
                # same geometric verdict as the base: |d_k| > m and d_k on the same side as d
                with np.errstate(invalid="ignore"):
                    matches += both & (g["absdk"][v - 1, comp] > m) & g["same"][v - 1, comp]
                succ += both
                iou_sum += g["iouak"][v - 1, comp] * both
                iou_sum += g["ioubk"][v - 1, comp] * both
            with np.errstate(invalid="ignore", divide="ignore"):
                val = 0.5 * (matches / len(pvars)) + 0.5 * (iou_sum / (2 * succ))
            val[succ == 0] = 0.0
            stab[comp] = val
        with np.errstate(invalid="ignore"):
            unstable = decided & (stab < cfg.consistency_threshold)

    final_ok = decided & ~unstable
    # PASS 0 / FAIL 1 / UNDECIDABLE 2
    verdict = (UNDECIDABLE - _b8(final_ok) * (1 + _b8(passed))).astype(np.int8)

    # ---- agreement with the secondary detector ----------------------------------------------
    ir = np.flatnonzero(reach)
    if cfg.use_secondary:
        agree_r = np.full(len(ir), float(cfg.neutral_agreement))
        ok2 = (has2[ir] & pres[2][ir] & pres[3][ir])
        i2 = ir[ok2]
        if len(i2):
            und2 = g["absd2"][i2] <= m
            v2 = UNDECIDABLE * _b8(und2) + _b8(~und2) * (1 - _b8(g["sd2"][i2] > m))
            h = 0.25 * (v2 == verdict[i2]) + 0.25 * g["signok"][i2]
            agree_r[ok2] = (h + g["qa"][i2]) + g["qb"][i2]
    else:
        agree_r = np.ones(len(ir))

    # ---- confidence (samples that reached the margin test) ----------------------------------
    conf = np.zeros(length)
    comps = np.zeros((4, length))
    if len(ir):
        cg = np.clip((g["absd"][ir] - m) / cfg.geom_slope, 0.0, 1.0)
        cs = np.clip(stab[ir], 0.0, 1.0)
        ca = np.clip(agree_r, 0.0, 1.0)
        with np.errstate(divide="ignore"):
            conf[ir] = np.exp(cfg.w_detection * g["logcd"][ir] + cfg.w_geometry * np.log(cg + EPS)
                              + cfg.w_stability * np.log(cs + EPS) + cfg.w_agreement * np.log(ca + EPS))
        comps[0, ir] = g["cd"][ir]
        comps[1, ir] = cg
        comps[2, ir] = cs
        comps[3, ir] = ca

    reason = (MISSING * _b8(missing) + AMBIGUOUS * _b8(amb) + HIGH_OVERLAP * _b8(high)
              + NEAR_BOUNDARY * _b8(near) + UNSTABLE * _b8(unstable)).astype(np.int8)
    detail = (_b8(missing) * (_b8(~pres_a) + 2 * _b8(~pres_b)) + _b8(amb) * (2 - _b8(amb_a))).astype(np.int8)
    return {"verdict": verdict, "reason": reason, "detail": detail, "conf": conf, "comps": comps,
            "geo": geo, "reach": reach, "decided": decided}


def evaluate(ds: Dataset, cfg: CheckerConfig) -> VerdictArrays:
    """Evaluate every sample of ``ds`` under ``cfg`` (METHODS.md §1), vectorised.

    Uses ``prepare(ds)`` (cached). Raises WorkstationError when stability must be computed from
    cached perturbed detections and a perturbation of ``cfg`` has none cached.

    The precomputed geometry assumes every selection is its segment's first (highest-scoring)
    row. Samples where the area filter moves a selection that matters to a later row are
    recomputed as a subset and scattered back.
    """
    prep = prepare(ds)
    s = ds.samples
    n = prep.n
    cut1 = max(cfg.t_det, cfg.primary_threshold)
    cut2 = max(cfg.t_det, cfg.secondary_threshold)
    thr: np.ndarray | float = (cfg.min_area_fraction * prep.wh_scalar if prep.wh_scalar is not None
                               else cfg.min_area_fraction * prep.wh)
    has_pert = np.asarray(s.has_perturbed, bool)
    has2 = np.asarray(s.has_secondary, bool)
    recorded = np.asarray(s.recorded_stability, np.float64)
    stab_from_dets = cfg.stability_enabled and len(cfg.perturbations) > 0 and bool(has_pert.any())
    pvars = _perturbation_variants(ds, cfg, needed=stab_from_dets)

    # ---- default selections (first rows) in every slot the config uses ------------------------
    sec_slots = [2, 3] if cfg.use_secondary else []
    var_slots = [sl for v in sorted(set(pvars)) for sl in (2 * (1 + v), 2 * (1 + v) + 1)] \
        if stab_from_dets else []
    cut_of = {sl: (cut2 if sl in (2, 3) else cut1) for sl in [0, 1] + sec_slots + var_slots}
    pres: dict[int, np.ndarray] = {}
    bad: dict[int, np.ndarray] = {}
    for sl, cut in cut_of.items():
        pres[sl], bad[sl] = _presence(prep, sl, thr, cut)
    no = np.zeros(n, bool)
    for sl in range(prep.n_slots):  # slots the config does not use: never present
        pres.setdefault(sl, no)

    out = _decide(cfg, prep.geom, pres, prep.s2, prep.gap, pvars, has_pert, recorded, has2)

    # ---- selections past the first row, where they matter ------------------------------------
    moved: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for sl in [0, 1] + sec_slots:  # all of them: sel_a / sel_b / sel2_* are reported for every sample
        moved[sl] = _walk(ds, prep, sl, bad[sl], thr, cut_of[sl])
    base_moved = np.zeros(n, bool)
    base_moved[moved[0][0]] = True
    base_moved[moved[1][0]] = True
    if var_slots:
        relevant = out["decided"] | base_moved
        for sl in var_slots:
            b = bad[sl]
            moved[sl] = _walk(ds, prep, sl, b[relevant[b]], thr, cut_of[sl])
    recompute = base_moved.copy()
    if sec_slots:
        relevant = out["reach"] | base_moved
        for sl in sec_slots:
            mv = moved[sl][0]
            recompute[mv[relevant[mv]]] = True
    for sl in var_slots:
        recompute[moved[sl][0]] = True
    for sl, (mv, _) in moved.items():
        pres[sl][mv] = True  # fresh arrays from _presence

    d = prep.geom["d"]
    iou_ab = prep.geom["iou_ab"]
    idx = np.flatnonzero(recompute)
    if len(idx):
        rows = prep.row0[:, idx]
        in_idx: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for sl, (mv, rr) in moved.items():
            keep = recompute[mv]
            pos = np.searchsorted(idx, mv[keep])
            rows[sl, pos] = rr[keep]
            in_idx[sl] = (pos, rr[keep])
        g = {k: arr[..., idx] for k, arr in prep.geom.items()}
        # base moved: everything changes; otherwise only the pairs whose selection moved
        pos_base = np.flatnonzero(base_moved[idx])
        if len(pos_base):
            gb = _geometry(ds, rows[:, pos_base], idx[pos_base])
            for k, arr in gb.items():
                g[k][..., pos_base] = arr
        not_base = ~base_moved[idx]
        for pair, keys, slots_ in [(1, SECONDARY_KEYS, (2, 3))] + [
                (1 + v, VARIANT_KEYS, (2 * (1 + v), 2 * (1 + v) + 1)) for v in sorted(set(pvars)) if var_slots]:
            hit = np.zeros(len(idx), bool)
            for sl in slots_:
                if sl in in_idx:
                    hit[in_idx[sl][0]] = True
            pos = np.flatnonzero(hit & not_base)
            if len(pos) == 0:
                continue
            gp = _geometry(ds, rows[:, pos], idx[pos], pairs={pair})
            for k in keys:
                if k in VARIANT_KEYS:
                    g[k][pair - 2, pos] = gp[k][pair - 2]
                else:
                    g[k][pos] = gp[k]
        sub = _decide(cfg, g, {sl: p[idx] for sl, p in pres.items()}, prep.s2[:, idx],
                      prep.gap[:, idx], pvars, has_pert[idx], recorded[idx], has2[idx])
        for k, arr in sub.items():
            out[k][..., idx] = arr
        d, iou_ab = d.copy(), iou_ab.copy()
        d[idx], iou_ab[idx] = g["d"], g["iou_ab"]

    not_geo = np.flatnonzero(~out["geo"])
    delta_out = d.copy()
    delta_out[not_geo] = np.nan
    iou_out = iou_ab.copy()
    iou_out[not_geo] = np.nan

    def selected(sl: int) -> np.ndarray:
        p = pres[sl]
        r = prep.row0[sl] * p - _b8(~p)  # the first row where present, else -1
        mv, rr = moved.get(sl, (None, None))
        if mv is not None and len(mv):
            r[mv] = rr
        return r

    if cfg.use_secondary:
        no2 = np.flatnonzero(~has2)
        sel2_a, sel2_b = selected(2), selected(3)
        sel2_a[no2] = -1
        sel2_b[no2] = -1
    else:
        sel2_a = np.full(n, -1, np.int64)
        sel2_b = np.full(n, -1, np.int64)
    comps = out["comps"]
    return VerdictArrays(
        verdict=out["verdict"], reason=out["reason"], reason_detail=out["detail"], conf=out["conf"],
        c_detection=comps[0], c_geometry=comps[1], c_stability=comps[2], c_agreement=comps[3],
        delta=delta_out, iou_ab=iou_out, sel_a=selected(0), sel_b=selected(1),
        sel2_a=sel2_a, sel2_b=sel2_b, label_a=spatial_columns(ds).label_a, label_b=spatial_columns(ds).label_b, config=cfg,
    )


# =============================================================================================
# Plain per-sample reference
# =============================================================================================
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


def evaluate_reference(ds: Dataset, cfg: CheckerConfig) -> VerdictArrays:
    """The checker as a readable loop over samples (same contract as ``evaluate``)."""
    s, dt = ds.samples, ds.detections
    n = len(s)
    cut1 = max(cfg.t_det, cfg.primary_threshold)
    cut2 = max(cfg.t_det, cfg.secondary_threshold)
    m = cfg.margin
    has_pert = [bool(x) for x in s.has_perturbed.tolist()]
    stab_from_dets = cfg.stability_enabled and len(cfg.perturbations) > 0 and any(has_pert)
    pvars = _perturbation_variants(ds, cfg, needed=stab_from_dets)

    # detections per (sample, source, variant), in detection order
    lists: dict[tuple[int, int, int], list[_Det]] = {}
    for row, (si, src, var, lab, sc, x1, y1, x2, y2) in enumerate(zip(
            dt.sample_idx.tolist(), dt.source.tolist(), dt.variant.tolist(), dt.label.tolist(),
            dt.score.tolist(), dt.x1.tolist(), dt.y1.tolist(), dt.x2.tolist(), dt.y2.tolist())):
        lists.setdefault((si, src, var), []).append((row, str(lab).strip().lower(), sc, (x1, y1, x2, y2)))

    out: dict[str, list[Any]] = {k: [] for k in (
        "verdict", "reason", "detail", "conf", "det", "geom", "stab", "agree", "delta", "iou",
        "sa", "sb", "s2a", "s2b")}
    rel_names = {c: r for r, c in RELATION_CODE.items()}
    for i in range(n):
        rel = rel_names[int(spatial_columns(ds).relation[i])]
        horizontal = rel in ("left_of", "right_of")
        negative = rel in ("left_of", "above")
        la = str(spatial_columns(ds).label_a[i]).strip().lower()
        lb = str(spatial_columns(ds).label_b[i]).strip().lower()
        w, h = float(s.width[i]), float(s.height[i])
        min_area = cfg.min_area_fraction * (w * h)
        prim = lists.get((i, PRIMARY, 0), [])
        a = _ref_select(prim, la, cut1, min_area)
        b = _ref_select(prim, lb, cut1, min_area)
        rec: dict[str, Any] = dict(verdict=UNDECIDABLE, reason=DECIDED, detail=0, conf=0.0, det=0.0,
                                   geom=0.0, stab=0.0, agree=0.0, delta=math.nan, iou=math.nan,
                                   sa=a[0] if a else -1, sb=b[0] if b else -1, s2a=-1, s2b=-1)
        sec = lists.get((i, SECONDARY, 0), [])
        use2 = cfg.use_secondary and bool(s.has_secondary[i])
        a2 = _ref_select(sec, la, cut2, min_area) if use2 else None
        b2 = _ref_select(sec, lb, cut2, min_area) if use2 else None
        rec["s2a"] = a2[0] if a2 else -1
        rec["s2b"] = b2[0] if b2 else -1
        if a is None or b is None:
            rec["reason"] = MISSING
            rec["detail"] = (1 if a is None else 0) + (2 if b is None else 0)
        elif _ref_ambiguous(prim, la, cut1, cfg.ambiguity_delta):
            rec["reason"], rec["detail"] = AMBIGUOUS, 1
        elif _ref_ambiguous(prim, lb, cut1, cfg.ambiguity_delta):
            rec["reason"], rec["detail"] = AMBIGUOUS, 2
        else:
            dlt = _ref_delta(a[3], b[3], horizontal, w, h)
            iou_ab = _ref_iou(a[3], b[3])
            rec["delta"], rec["iou"] = dlt, iou_ab
            if horizontal and iou_ab > cfg.max_overlap_iou:
                rec["reason"] = HIGH_OVERLAP
            else:
                verdict = _ref_geom(dlt, negative, m)
                stability = 1.0
                if verdict == UNDECIDABLE:
                    rec["reason"] = NEAR_BOUNDARY
                elif cfg.stability_enabled and cfg.perturbations:
                    if has_pert[i]:
                        matches, succ, ious = 0, 0, []
                        for v in pvars:
                            pd = lists.get((i, PRIMARY, v), [])
                            pa_ = _ref_select(pd, la, cut1, min_area)
                            pb_ = _ref_select(pd, lb, cut1, min_area)
                            if pa_ is None or pb_ is None:
                                continue
                            succ += 1
                            if _ref_geom(_ref_delta(pa_[3], pb_[3], horizontal, w, h), negative, m) == verdict:
                                matches += 1
                            ious.append(_ref_iou(a[3], pa_[3]))
                            ious.append(_ref_iou(b[3], pb_[3]))
                        if succ == 0:
                            stability = 0.0
                        else:
                            stability = 0.5 * (matches / len(pvars)) + 0.5 * (sum(ious) / len(ious))
                    elif math.isfinite(float(s.recorded_stability[i])):
                        stability = float(s.recorded_stability[i])
                    if stability < cfg.consistency_threshold:
                        verdict = UNDECIDABLE
                        rec["reason"] = UNSTABLE
                if not cfg.use_secondary:
                    agreement = 1.0
                elif a2 is None or b2 is None:
                    agreement = cfg.neutral_agreement
                else:
                    d2 = _ref_delta(a2[3], b2[3], horizontal, w, h)
                    ag = 0.5 * (1.0 if _ref_geom(d2, negative, m) == verdict else 0.0) \
                        + 0.5 * (1.0 if dlt * d2 >= 0 else 0.0)
                    agreement = 0.5 * ag + 0.25 * _ref_iou(a[3], a2[3]) + 0.25 * _ref_iou(b[3], b2[3])
                c_det = max(0.0, min(1.0, math.sqrt(a[2] * b[2])))
                c_geom = max(0.0, min(1.0, (abs(dlt) - m) / cfg.geom_slope))
                c_stab = max(0.0, min(1.0, stability))
                c_agr = max(0.0, min(1.0, agreement))
                rec["conf"] = ((c_det + EPS) ** cfg.w_detection * (c_geom + EPS) ** cfg.w_geometry
                               * (c_stab + EPS) ** cfg.w_stability * (c_agr + EPS) ** cfg.w_agreement)
                rec.update(verdict=verdict, det=c_det, geom=c_geom, stab=c_stab, agree=c_agr)
        for k, val in rec.items():
            out[k].append(val)

    f = lambda k: np.array(out[k], np.float64)  # noqa: E731
    g = lambda k: np.array(out[k], np.int64)  # noqa: E731
    return VerdictArrays(
        verdict=np.array(out["verdict"], np.int8), reason=np.array(out["reason"], np.int8),
        reason_detail=np.array(out["detail"], np.int8), conf=f("conf"), c_detection=f("det"),
        c_geometry=f("geom"), c_stability=f("stab"), c_agreement=f("agree"), delta=f("delta"),
        iou_ab=f("iou"), sel_a=g("sa"), sel_b=g("sb"), sel2_a=g("s2a"), sel2_b=g("s2b"),
        label_a=spatial_columns(ds).label_a, label_b=spatial_columns(ds).label_b, config=cfg,
    )
