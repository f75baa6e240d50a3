"""The spatial checker with abstention (METHODS.md §1), vectorised over every sample.

Public API
----------
``prepare(ds) -> Prepared``
    Parameter-independent precomputation, cached in ``ds.cache`` (label/role matching,
    score-sorted segments, the geometry of the default selections). Called by ``evaluate``;
    call it yourself to pay its cost up front (e.g. right after loading).
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

How ``evaluate`` is fast (stages, each recomputed only when a parameter it reads changes)
--------------------------------------------------------------------------------------
1. ``prepare`` (no parameter): detections matched to (sample, slot) segments sorted by score;
   the geometry of every segment's first (highest-scoring) row. The selected box of a segment
   is its first row whose area passes the area filter, kept when its score passes the cut; so
   the score cut (t_det) never changes WHICH box is selected, only whether one is.
2. Area stage (``min_area_fraction``; two cached): which first rows pass the area filter, and
   the samples where the filter moves a selection past its first row, with their selections
   and geometry. A new value starts from the cached stage nearest to it: a segment's walk
   answers for any threshold between the largest area it passed over and the area of the row
   it found, and a sample whose selections are the same in every slot keeps its geometry.
3. Selection stage (the cuts, the area stage, the perturbations used; two cached): which
   selections are present, the selected rows (``sel_*``), and the stability terms that do not
   depend on the margin (how many variants found both objects, their IoU sum).
4. Decision pass (margin, ambiguity, overlap, consistency, agreement, weights): one pass in
   cache-sized chunks with comparisons and small-integer arithmetic that finds the samples
   reaching the margin test, then the margin test, stability, agreement and confidence of
   those samples only (their inputs gathered); then the same pass over the area stage's
   samples (inputs gathered once per selection stage), scattered back. Logarithms are taken
   only where a component is neither 0 nor 1.
5. When a live earlier result has the same area filter, primary cut, ambiguity and overlap
   parameters (a margin, stability, agreement or weight change), the same samples reach the
   margin test: its delta, IoU, detection term and the other samples' reasons are reused and
   only the samples that reach the test are decided again. When a live result differs in the
   margin alone (a margin drag), its arrays are copied and only the reached samples whose
   outputs can differ between the two margins are decided again: a value compared with the
   margin (|delta|, a secondary or perturbed delta) between them, or |delta| on the geometry
   term's slope above them (``_step_chunk``). When only the weights / gamma
   change, a live earlier result's verdicts are reused and only ``conf`` and ``c_geometry``
   are recomputed; when only ``tau`` / ``name`` change, every array is reused. When a live
   result differs in the area filter alone (an area drag), its selection and decision arrays
   are copied and only the samples whose inputs the two area stages give differently (a first
   row that passes one filter and not the other, or moved selections that differ) are selected
   and decided again (``_patched``). Results share
   arrays, so they are returned read-only; the result cache holds weak references only (it
   reuses what its owner keeps alive, and keeps nothing alive).
Chunked passes (about eight chunks a pass, of 1 << 15 to 1 << 17 samples) and the area
stage's per-slot work run on up to two threads (numpy releases the GIL; ``THREADS`` /
``WORKSTATION_CHECKER_THREADS``), each taking the next chunk when free.
No float is narrowed: every one feeds a verdict comparison or an output compared bit for bit
with the reference; indices are int32 where they fit, flags bool / int8 / int16.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from dataclasses import replace as dataclasses_replace
from typing import Any, Protocol

import numpy as np

from ...dataset import Dataset, Detections, label_codes
from ...types import PRIMARY, SECONDARY, WorkstationError
from ...util.grouping import by_segment_then_score, factorize
from ...util.memory import drop_mapped_pages
from ...util.refs import weak
from .config import CheckerConfig
from . import prepared_cache
from .data import object_codes, spatial_columns
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

__all__ = ["VerdictArrays", "VerdictColumns", "StorableVerdicts", "Prepared", "prepare", "evaluate",
           "evaluate_reference", "EPS"]

EPS = 1e-10
log = logging.getLogger(__name__)

_CACHE_KEY = "checker.prepared"
# the prepared arrays that only an area stage's build reads (`Prepared.area_only`)
_AREA_ONLY = ("order", "order_base", "sample_start", "seg_count", "area0", "varea", "vrow0")
_LOCK_KEY = "checker.prepare_lock"

# relations whose PASS needs a negative delta (A left of / above B)
_NEGATIVE = np.zeros(len(RELATION_CODE), dtype=bool)
_NEGATIVE[RELATION_CODE["left_of"]] = True
_NEGATIVE[RELATION_CODE["above"]] = True
_HORIZONTAL = np.zeros(len(RELATION_CODE), dtype=bool)
_HORIZONTAL[RELATION_CODE["left_of"]] = True
_HORIZONTAL[RELATION_CODE["right_of"]] = True
# the decision pass reads relations and reasons by their codes' arithmetic (_decide_chunk)
if list(RELATION_CODE) != ["left_of", "right_of", "above", "below"] or (NEAR_BOUNDARY, UNSTABLE) != (4, 5) \
        or len(REASONS) != 6:
    raise ImportError("workstation.checker: relation or reason codes changed; update _decide_chunk")


class _Col64:
    """A detection column read as float64 where it is gathered: a column held in float32 (the
    loader keeps one whose every value is a float32) is converted per gathered value, exactly,
    never copied whole."""

    __slots__ = ("a",)

    def __init__(self, a: Any) -> None:
        self.a = np.asarray(a)

    def __getitem__(self, idx: Any) -> np.ndarray:
        v = self.a[idx]
        return v if v.dtype == np.float64 else np.asarray(v, np.float64)


class _Gathered:
    """The boxes and scores of selected detection rows, slot by slot (``rows``: (S, L), -1 where
    a slot has none: read at row 0, a finite placeholder), each read once as float64 however
    often it is asked for until it is `done`. With ``areas``, each box read records its slot's
    area (inf where the slot has none) for `take_area`: the preparation's geometry and its
    areas read the same boxes once, and only a few slots' boxes are held at a time."""

    __slots__ = ("cols", "rows", "areas", "_box", "_score", "_area")

    def __init__(self, det: Detections, rows: np.ndarray, areas: bool = False) -> None:
        if len(det) == 0:
            self.cols = tuple(_Col64(np.zeros(1)) for _ in range(5))
            self.rows = np.zeros(rows.shape, np.int64)
        else:
            self.cols = tuple(_Col64(a) for a in (det.x1, det.y1, det.x2, det.y2, det.score))
            self.rows = rows
        self.areas = areas
        self._box: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._score: dict[int, np.ndarray] = {}
        self._area: dict[int, np.ndarray] = {}

    def box(self, sl: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        b = self._box.get(sl)
        if b is None:
            r = np.maximum(self.rows[sl], 0)
            x1, y1, x2, y2, _ = self.cols
            b = self._box[sl] = (x1[r], y1[r], x2[r], y2[r])
            if self.areas and sl not in self._area:
                self._area[sl] = self._area_of(sl, b)
        return b

    def _area_of(self, sl: int, b: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        return np.where(self.rows[sl] >= 0, (b[2] - b[0]) * (b[3] - b[1]), np.inf)

    def score(self, sl: int) -> np.ndarray:
        v = self._score.get(sl)
        if v is None:
            v = self._score[sl] = self.cols[4][np.maximum(self.rows[sl], 0)]
        return v

    def done(self, *slots: int) -> None:
        """The boxes and scores of `slots` are not asked for again (their areas stay)."""
        for sl in slots:
            self._box.pop(sl, None)
            self._score.pop(sl, None)

    def take_area(self, sl: int) -> np.ndarray:
        """Slot `sl`'s area, as recorded when its box was read (read now if it was not)."""
        area = self._area.pop(sl, None)
        return area if area is not None else self._area_of(sl, self.box(sl))

    def take_score(self, sl: int) -> np.ndarray:
        """Slot `sl`'s score, then forgotten."""
        v = self.score(sl)
        self._score.pop(sl, None)
        return v


def _spatial_columns(ds: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(relation, label_a, label_b) of every sample: relation codes (types.RELATION_CODE) and
    the object names A and B. The only place the checker reads these fields of a dataset.

    Return the same array objects for as long as the dataset does not change: ``prepare``
    keys its cache on their identity (new objects on every call would re-prepare each time).
    """
    sc = spatial_columns(ds)  # computed once per dataset from its prompts, then cached
    return sc.relation, sc.label_a, sc.label_b


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

    def reason_texts(self) -> np.ndarray: ...


@dataclass
class VerdictArrays:
    """Checker output for N samples, aligned with ``ds.samples`` (row i = sample i).

    ``verdict``: int8 (types.PASS / FAIL / UNDECIDABLE); ``reason``: int8 (types.REASONS code,
    0 for PASS/FAIL); ``reason_detail``: int8, for missing a bit mask (1 = A, 2 = B missing),
    for ambiguous 1 = A, 2 = B. ``conf`` and ``c_detection``, ``c_geometry``, ``c_stability``,
    ``c_agreement``: float64 (all 0 for missing / ambiguous / high_overlap). ``delta`` and
    ``iou_ab``: float64 of the selected primary boxes, NaN where not computed (missing,
    ambiguous). ``sel_a`` / ``sel_b``: row in ``ds.detections`` (int32; int64 from 2**30
    detections on) of the selected primary box on the original image (-1 if none; a found box is
    kept even when the other object is missing). ``sel2_a`` / ``sel2_b``: the secondary
    detector's selections (-1 if none or the secondary detector is not used). ``label_a`` / ``label_b`` (object names) and ``config``
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
        """``reason_text`` of every sample as an object array, written reason by reason (the
        same texts: a million samples' in a fraction of the per-sample calls' time)."""
        out = np.full(len(self), "", dtype=object)
        reason = np.asarray(self.reason)
        cfg = self.config
        for r in np.unique(reason[reason != DECIDED]).tolist():
            at = np.flatnonzero(reason == r)
            if r == MISSING:
                det = np.asarray(self.reason_detail)[at]
                la, lb = np.asarray(self.label_a)[at].tolist(), np.asarray(self.label_b)[at].tolist()
                texts = [f"missing: {', '.join(([str(a)] if d & 1 else []) + ([str(b)] if d & 2 else []))}"
                         for d, a, b in zip(det.tolist(), la, lb)]
            elif r == AMBIGUOUS:
                det = np.asarray(self.reason_detail)[at]
                la, lb = np.asarray(self.label_a)[at].tolist(), np.asarray(self.label_b)[at].tolist()
                texts = [f"ambiguous: multiple {a if d == 1 else b}" for d, a, b in zip(det.tolist(), la, lb)]
            elif r == HIGH_OVERLAP:
                bound = cfg.max_overlap_iou
                texts = [f"high_overlap: IoU={x:.2f} > {bound}" for x in np.asarray(self.iou_ab, np.float64)[at].tolist()]
            elif r == NEAR_BOUNDARY:
                m = cfg.margin
                texts = [f"near_boundary (|delta|={abs(x):.3f} <= margin={m})"
                         for x in np.asarray(self.delta, np.float64)[at].tolist()]
            elif r == UNSTABLE:
                ct = cfg.consistency_threshold
                texts = [f"unstable: stability={x:.2f} < {ct}"
                         for x in np.asarray(self.c_stability, np.float64)[at].tolist()]
            else:
                texts = [REASONS[r]] * len(at)
            out[at] = np.array(texts, dtype=object) if texts else out[at]
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


def _geometry(ds: Dataset, rows: np.ndarray, idx: np.ndarray | None,
              gathered: "_Gathered | None" = None) -> dict[str, np.ndarray]:
    """What the decision pass reads from the selected boxes, at samples ``idx`` (all if None).

    ``rows``: (S, L) selected ds.detections row per slot (-1 where absent; values derived from an
    absent box are finite placeholders that the decision never uses). Keys: ``d`` (delta),
    ``iou_ab``, ``cd`` (clipped sqrt(s_A*s_B)), ``logcd`` = log(cd + EPS); secondary ``d2``,
    ``qa`` / ``qb`` = 0.25*IoU(A, A2) / 0.25*IoU(B, B2) (exact: a power-of-two scaling); per
    perturbed variant v (row v - 1 of (V-1, L) arrays) ``sdk`` = |d_v| where d_v lies on the
    same side as d (else -1, so that "same verdict as the base" is ``sdk > margin``),
    ``iouak`` / ``ioubk`` = IoU of A / B with their selections on the variant.
    ``gathered``: the boxes and scores of ``rows`` already read (`_Gathered`), else read here.
    """
    det = ds.detections
    relation, _, _ = _spatial_columns(ds)
    rel = np.asarray(relation, np.int64)
    w = np.asarray(ds.samples.width, np.float64)
    h = np.asarray(ds.samples.height, np.float64)
    if idx is not None:
        rel, w, h = rel[idx], w[idx], h[idx]
    horizontal = _HORIZONTAL[rel]
    n_slots, length = rows.shape
    n_pert = n_slots // 2 - 2
    if gathered is None:
        gathered = _Gathered(det, rows)
    box = gathered.box

    g: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ba, bb = box(0), box(1)
        d = _delta(*ba, *bb, horizontal, w, h)
        g["d"] = d
        g["iou_ab"] = _iou(*ba, *bb)
        cd = np.clip(np.sqrt(gathered.score(0) * gathered.score(1)), 0.0, 1.0)
        g["cd"] = cd
        g["logcd"] = np.log(cd + EPS)
        a2, b2 = box(2), box(3)
        g["d2"] = _delta(*a2, *b2, horizontal, w, h)
        g["qa"] = 0.25 * _iou(*ba, *a2)
        g["qb"] = 0.25 * _iou(*bb, *b2)
        sdk = np.empty((n_pert, length))
        iouak = np.empty((n_pert, length))
        ioubk = np.empty((n_pert, length))
        dneg = d < 0
        for k in range(n_pert):
            pa_, pb_ = box(4 + 2 * k), box(5 + 2 * k)
            dk = _delta(*pa_, *pb_, horizontal, w, h)
            sdk[k] = np.where((dk < 0) == dneg, np.abs(dk), -1.0)
            iouak[k] = _iou(*ba, *pa_)
            ioubk[k] = _iou(*bb, *pb_)
            gathered.done(4 + 2 * k, 5 + 2 * k)
        g.update(sdk=sdk, iouak=iouak, ioubk=ioubk)
    return g


# =============================================================================================
# Parameter-independent precomputation
# =============================================================================================
@dataclass
class Prepared:
    """What ``prepare`` caches. Slots: 2*g + role, role 0 = A, 1 = B; group g = 0 primary
    detections on the original image, 1 secondary on the original, 1 + v primary on variant v.
    A segment = the detections of one (sample, slot), sorted by score descending (ties by row);
    segments are laid out sample-major in ``order``: sample i's begin at ``sample_start[i]``,
    with ``seg_count[i, slot]`` rows each (``segment`` gives their bounds). ``geom`` holds
    ``_geometry`` of the first rows."""

    fingerprint: tuple[Any, ...]  # see _fingerprint
    n: int
    n_slots: int
    order: np.ndarray  # ds.detections rows, by segment: minus order_base[sample] (uint8 while every
    # sample has < 256 detections, else uint16 / int64) or, with order_base None, the rows (int32 /
    # int64 from 2**31 detections); ``rows_at`` reads them
    order_base: np.ndarray | None  # (N,) first detection row of each sample (detections sorted by sample)
    sample_start: np.ndarray  # same dtype (N + 1,): where each sample's segments begin in ``order``
    seg_count: np.ndarray  # (N, n_slots) rows per segment: uint8 (uint16 / int64 when one has more)
    row0: np.ndarray  # (4, N): first row of slots 0..3 (primary / secondary A, B), -1 if empty
    score0: np.ndarray  # (4, N): its score (-inf if empty); float32 when the scores are (see score_dtype)
    area0: np.ndarray  # float64 (4, N): its area (+inf if empty)
    vscore: np.ndarray  # (V-1, N) as score0: min score of the first rows of variant v's A and B
    varea: np.ndarray  # float64 (2(V-1), N): the area of each variant slot's first row (slot 4 + k at
    # row k; +inf where the slot is empty)
    vrow0: np.ndarray  # (2(V-1), N) as row0: each variant slot's first row, -1 if empty
    s2: np.ndarray  # (2, N) as score0: second-best score of original primary A / B (-inf)
    rel: np.ndarray  # int8 (N,): relation code
    wh: np.ndarray | None  # float64 (N,): W*H; None when wh_scalar says it for every sample
    wh_scalar: float | None  # W*H when every sample has the same size
    geom: dict[str, np.ndarray]
    finite: bool  # every geometry value is finite
    # where it is kept beside the loader's detection cache entry (None: its detections are not an
    # entry's); ``prepared_cache.is_kept`` says whether it is there yet
    kept_at: prepared_cache.Slot | None = None
    stages: _Stages = field(default_factory=lambda: _Stages(), repr=False)

    def rows_at(self, pos: np.ndarray, samples: np.ndarray) -> np.ndarray:
        """ds.detections rows (int64) at positions ``pos`` of ``order``, which lie in the
        segments of ``samples`` (aligned)."""
        rows = self.order[pos].astype(np.int64)
        if self.order_base is not None:
            rows += self.order_base[samples]
        return rows

    def segment(self, samples: np.ndarray, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """(begin, end) in ``order`` (int64) of slot ``slot``'s segment of each of ``samples``."""
        samples = np.asarray(samples, np.int64)
        count = self.seg_count[samples, slot].astype(np.int64)
        before = (self.seg_count[samples, :slot].sum(axis=1, dtype=np.int64) if slot
                  else np.zeros(len(samples), np.int64))
        begin = self.sample_start[samples].astype(np.int64) + before
        return begin, begin + count

    def kept(self) -> dict[str, np.ndarray]:
        """The arrays as `prepared_cache` keeps them, by name (the geometry's as ``geom_<key>``)."""
        names = (*_AREA_ONLY, "row0", "score0", "vscore", "s2")
        return {**{k: getattr(self, k) for k in names if getattr(self, k) is not None},
                **{f"geom_{k}": a for k, a in self.geom.items()}}

    def use_kept(self, arrays: dict[str, np.ndarray]) -> None:
        """Read `arrays` (the same names and values as `kept()`) from here on; a pass under way
        may hold either."""
        for k, a in arrays.items():
            if k.startswith("geom_"):
                self.geom[k[len("geom_"):]] = a
            else:
                setattr(self, k, a)

    def area_only(self) -> list[np.ndarray]:
        """The arrays that only an area stage's build reads (`_build_area_stage`): the selection
        and decision passes read the first rows' scores and geometry, never these."""
        kept = self.kept()
        return [kept[k] for k in _AREA_ONLY if k in kept]

    def nbytes(self) -> int:
        """Memory held by the prepared arrays (not counting cached stages)."""
        arrays = [*self.kept().values(), self.rel, *([] if self.wh is None else [self.wh])]
        return int(sum(a.nbytes for a in arrays))


def _fingerprint(ds: Dataset) -> tuple[tuple[Any, ...], tuple[Callable[[], Any], ...]]:
    """Sizes and variant names, and weak references to every array the preparation reads: a
    replaced array never matches, even when a new one reuses the old one's address."""
    s, d = ds.samples, ds.detections
    relation, label_a, label_b = _spatial_columns(ds)
    arrays = (s.sample_id, label_a, label_b, s.width, s.height, relation, d.sample_identity(), d.label_identity(),
              d.score, d.x1, d.y1, d.x2, d.y2, d.source, d.variant)
    return (len(s), len(d), tuple(ds.variant_names)), tuple(weak(a) for a in arrays)


def _same_refs(a: tuple[Callable[[], Any], ...], b: tuple[Callable[[], Any], ...]) -> bool:
    return len(a) == len(b) and all(x() is not None and x() is y() for x, y in zip(a, b))


def _same_fingerprint(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return bool(a[0] == b[0]) and _same_refs(a[1], b[1])


def _factorize_labels(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes and unique values of a string column (hash encoding, order of first appearance)."""
    return factorize(values, sort=False)


def _canonical_codes(ds: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Case-insensitive integer codes of the detection labels and of the samples' A / B."""
    canon: dict[str, int] = {}

    def to_canon(names: list[str], add: bool) -> np.ndarray:
        """The canonical code of each name (new names get one with `add`, else -1)."""
        keys = [u.strip().lower() for u in names]
        return np.array([canon.setdefault(k, len(canon)) if add else canon.get(k, -1) for k in keys] or [-1],
                        np.int32)

    def encode(values: np.ndarray, add: bool) -> np.ndarray:
        codes, uniq = _factorize_labels(values)
        return to_canon(uniq, add)[codes] if uniq else np.full(len(values), -1, np.int64)

    _, label_a, label_b = _spatial_columns(ds)
    known = label_codes(ds)  # codes the loader already has: no hashing of every detection's label
    if known is not None:
        codes, uniq = known
        mapping = to_canon(list(uniq), add=True)
        if not len(codes):
            lab = np.full(0, -1, np.int64)
        elif np.array_equal(mapping, np.arange(len(mapping))):  # the loader's names are canonical
            lab = codes
        else:
            lab = mapping[codes]
    else:
        lab = encode(ds.detections.label, add=True)
    coded = object_codes(ds, label_a, label_b)
    if coded is not None:  # A and B as codes into their distinct names
        code_a, code_b, names = coded
        mapping = to_canon(names, add=False)
        return lab, mapping[code_a], mapping[code_b]
    return lab, encode(label_a, add=False), encode(label_b, add=False)


def _variant_index(ds: Dataset) -> dict[str, int]:
    return {name: k for k, name in enumerate(ds.variant_names) if k >= 1}


def _all_finite(arrays: dict[str, np.ndarray]) -> bool:
    return all(bool(np.isfinite(a).all()) for a in arrays.values())


def _count_dtype(most: int) -> type[np.integer[Any]]:
    """The smallest dtype of the per-segment row counts (most: the largest)."""
    return np.uint8 if most < 2**8 else np.uint16 if most < 2**16 else np.int64


def _index_dtype(size: int) -> type[np.signedinteger[Any]]:
    return np.int32 if size < 2**31 - 1 else np.int64


def score_dtype(score: np.ndarray) -> type[np.floating[Any]]:
    """The dtype of the prepared score arrays: float32 when the score column is (every value
    kept is one of its scores or -inf, so nothing is rounded: 40 MB less at 1M samples), else
    float64. The passes compare and subtract them in float64 (``_f64``)."""
    return np.float32 if np.asarray(score).dtype == np.float32 else np.float64


def _f64(a: np.ndarray) -> np.ndarray:
    """A chunk of a prepared score array in float64 (exact): a float32 array compared with a
    Python float would round the float to float32 (NEP 50), and a difference of two float32
    scores may round in float32, where it is exact in float64."""
    return a if a.dtype == np.float64 else a.astype(np.float64)


def _at_least(a: np.ndarray, cut: float) -> np.ndarray:
    """``a >= cut`` decided as in float64, without widening a float32 ``a``: a float32 value is
    >= cut exactly when it is >= the smallest float32 that is >= cut."""
    if a.dtype != np.float32:
        return _f64(a) >= cut
    with np.errstate(over="ignore"):
        c = np.float32(cut)  # nearest; one step up where that lies below the cut
    if float(c) < cut:
        c = np.nextafter(c, np.float32(np.inf))
    return a >= c


PREP_CHUNK = 1 << 17  # samples per preparation chunk: its temporaries stay small and reusable
_GEOM_1D = ("d", "iou_ab", "cd", "logcd", "d2", "qa", "qb")
_GEOM_2D = ("sdk", "iouak", "ioubk")


def prepare(ds: Dataset) -> Prepared:
    """Parameter-independent precomputation for ``evaluate``, cached in ``ds.cache``.

    The cache is rebuilt when the dataset's arrays are replaced (it keys on their identity and
    lengths); code that edits arrays in place must ``ds.cache.pop("checker.prepared")`` (which
    drops every cached stage and result of the checker with it).

    Samples are prepared in chunks of ``PREP_CHUNK`` (on up to two threads): every segment is
    one sample's, so a chunk of samples with its detections is independent of the others, and
    its temporaries are a chunk's size, not the whole table's.
    """
    fp = _fingerprint(ds)
    cached = ds.cache.get(_CACHE_KEY)
    if isinstance(cached, Prepared) and _same_fingerprint(cached.fingerprint, fp):
        return cached
    # one preparation at a time per dataset: a second thread asking meanwhile waits for it
    with ds.cache.setdefault(_LOCK_KEY, threading.Lock()):
        cached = ds.cache.get(_CACHE_KEY)
        if isinstance(cached, Prepared) and _same_fingerprint(cached.fingerprint, fp):
            return cached
        return _prepare(ds, fp)


def _prepare(ds: Dataset, fp: tuple[Any, ...]) -> Prepared:
    s, d = ds.samples, ds.detections
    relation, _, _ = _spatial_columns(ds)
    n = len(s)
    n_var = len(ds.variant_names)
    n_slots = 2 * (1 + n_var)  # primary original, secondary original, primary variants 1..V
    n_pert = n_var - 1
    variant, source = np.asarray(d.variant), np.asarray(d.source)
    # the loader's detections come as each sample's first row (sorted by sample); others as
    # a sample_idx column
    offsets = d.sample_offsets()
    if offsets is not None and len(offsets) != n + 1:
        raise WorkstationError("detections refer to samples that are not in the dataset")
    sample_idx = np.asarray(d.sample_idx) if offsets is None else None
    if len(d):
        if sample_idx is not None and (sample_idx.min() < 0 or sample_idx.max() >= n):
            raise WorkstationError("detections refer to samples that are not in the dataset")
        if variant.min() < 0 or variant.max() >= n_var:
            raise WorkstationError(
                f"detections refer to image variant {int(variant.max())} but the dataset names only "
                f"{n_var} variant(s): {', '.join(ds.variant_names)}")

    lab, code_a, code_b = _canonical_codes(ds)
    width = np.asarray(s.width, np.float64)
    height = np.asarray(s.height, np.float64)
    # kept beside the loader's detection cache entry by an earlier open: mapped, not computed
    kept = (prepared_cache.slot(ds, n_slots, (code_a, code_b, np.asarray(relation), width, height))
            if offsets is not None and len(d) else None)
    if kept is not None:
        loaded = prepared_cache.load(kept, _kept_arrays(n, n_slots, len(d), score_dtype(d.score)), len(d))
        if loaded is not None:
            return _finish(ds, fp, n_slots, relation, width * height, loaded, kept)
    score = _Col64(d.score)
    # detections grouped by sample: the loader keeps them sorted by sample; otherwise a stable
    # permutation (each sample's detections keep their row order, the score ties' order)
    perm: np.ndarray | None = None
    bounds = list(range(0, n, PREP_CHUNK)) + [n]
    chunks = [(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    if sample_idx is None:
        assert offsets is not None
        det_bounds = offsets[bounds]
    else:
        if len(sample_idx) > 1 and not bool((sample_idx[1:] >= sample_idx[:-1]).all()):
            perm = np.argsort(sample_idx, kind="stable")
        by_sample = sample_idx if perm is None else sample_idx[perm]
        det_bounds = np.searchsorted(by_sample, np.array(bounds, by_sample.dtype), side="left") if len(d) else \
            np.zeros(len(bounds), np.int64)
        del by_sample
    idt = _index_dtype(2 * len(d) + 1)

    row0 = np.full((4, n), -1, idt)
    vrow0 = np.full((2 * n_pert, n), -1, idt)
    sdt = score_dtype(d.score)
    score0 = np.empty((4, n), sdt)
    area0 = np.empty((4, n))
    vscore = np.empty((n_pert, n), sdt)
    varea = np.empty((2 * n_pert, n))
    s2 = np.full((2, n), -np.inf, sdt)
    geom = {k: np.empty(n) for k in _GEOM_1D} | {k: np.empty((n_pert, n)) for k in _GEOM_2D}
    orders: list[np.ndarray] = [np.zeros(0, idt)] * len(chunks)
    counts: list[np.ndarray] = [np.zeros((0, n_slots), np.uint8)] * len(chunks)  # seg_count by chunk
    order_base = np.zeros(n, idt) if perm is None else None

    def score_area(got: _Gathered, sl: int) -> tuple[np.ndarray, np.ndarray]:
        """Slot `sl`'s selected score and box area (-inf and inf where it has none)."""
        r = got.rows[sl]
        if not len(d):
            return np.full(len(r), -np.inf), np.full(len(r), np.inf)
        return np.where(r >= 0, got.take_score(sl), -np.inf), got.take_area(sl)

    def one_chunk(k: int) -> None:
        s0, s1 = chunks[k]
        nc = s1 - s0
        r0, r1 = int(det_bounds[k]), int(det_bounds[k + 1])
        # the chunk's detections: a slice of the columns when they are sorted by sample (the
        # loader's order), else gathered through the permutation
        rows_c: np.ndarray | slice = slice(r0, r1) if perm is None else perm[r0:r1].astype(np.int64)
        at: np.ndarray | None = None  # detections per sample of the chunk (sorted by sample)
        if sample_idx is None:  # each detection's sample in the chunk, from the offsets
            assert offsets is not None
            at = np.diff(offsets[s0:s1 + 1])
            si = np.repeat(np.arange(nc, dtype=np.int32), at)
        else:
            si = sample_idx[rows_c] - np.int32(s0)  # < PREP_CHUNK: int32 (int64 if the column is)
            at = np.bincount(si, minlength=nc) if order_base is not None else None
        src, var, lb = source[rows_c], variant[rows_c], lab[rows_c]
        # detections that can ever matter: primary on any variant, secondary on the original
        keep = ((src == PRIMARY) | ((src == SECONDARY) & (var == 0))) & (lb >= 0)
        role_a = np.flatnonzero(keep & (lb == code_a[s0:s1][si]))
        role_b = np.flatnonzero(keep & (lb == code_b[s0:s1][si]))
        del keep, lb
        loc = np.concatenate([role_a, role_b])
        role = np.zeros(len(loc), np.int32)
        role[len(role_a):] = 1
        del role_a, role_b
        # slot = 2 * group + role; group 0 primary on the original, 1 secondary (kept on the
        # original only), 1 + v primary on variant v >= 1
        kdt = np.int32 if (nc + 1) * n_slots < 2**31 else np.int64
        vl = var[loc].astype(kdt)
        group = vl + (vl > 0) + (src[loc] == SECONDARY)
        key = si[loc].astype(kdt) * kdt(n_slots) + 2 * group + role  # sample-major segments
        del vl, group, role, si, src, var
        rows = (loc + r0) if perm is None else rows_c[loc]  # type: ignore[index]
        del loc, rows_c
        o = by_segment_then_score(key, score[rows])  # ties: detection row order
        order_c = rows[o]
        seg = key[o]
        count = np.bincount(seg, minlength=n_slots * nc)
        del rows, key, o
        if order_base is not None:  # each sample's rows from its first one: small numbers
            assert at is not None
            base = r0 + np.concatenate([[0], np.cumsum(at)[:-1]]).astype(np.int64)
            order_base[s0:s1] = base
            rel = order_c - base[seg // n_slots]
            orders[k] = rel.astype(_count_dtype(int(rel.max()) if len(rel) else 0))
            del rel
        else:
            orders[k] = order_c.astype(idt)
        del seg
        # segment ends within the chunk; each sample's end is written to the chunk's own part
        # of ``sample_start`` (the chunks' offsets are added once all are done)
        ends = np.cumsum(count)
        sample_start[s0 + 1:s1 + 1] = ends[n_slots - 1::n_slots]
        count2 = count.reshape(nc, n_slots)
        counts[k] = count2.astype(_count_dtype(int(count.max()) if len(count) else 0))
        first2 = (ends - count).reshape(nc, n_slots)
        del count, ends

        # each slot's first row (its segment's best), -1 where the slot has none: (S, nc)
        row0_all = np.full((n_slots, nc), -1, np.int64)
        if len(order_c):
            last = len(order_c) - 1
            for sl in range(n_slots):
                np.copyto(row0_all[sl], order_c[np.minimum(first2[:, sl], last)], where=count2[:, sl] > 0)
        got = _Gathered(d, row0_all, areas=True)  # each slot's boxes read once: geometry and areas
        g = _geometry(ds, row0_all, np.arange(s0, s1), got)
        got.done(0, 1, 2, 3)  # the primary and secondary boxes: their areas are kept
        for name, arr in g.items():
            geom[name][..., s0:s1] = arr
        del g
        row0[:, s0:s1] = row0_all[:4]
        vrow0[:, s0:s1] = row0_all[4:]
        for sl in range(4):
            score0[sl, s0:s1], area0[sl, s0:s1] = score_area(got, sl)
        for v in range(n_pert):
            sa, aa = score_area(got, 4 + 2 * v)
            sb, ab = score_area(got, 5 + 2 * v)
            vscore[v, s0:s1] = np.minimum(sa, sb)
            varea[2 * v, s0:s1], varea[2 * v + 1, s0:s1] = aa, ab
        del row0_all, got
        for sl in (0, 1):
            two = np.flatnonzero(count2[:, sl] >= 2)
            s2[sl, s0 + two] = score[order_c[first2[two, sl] + 1]]
        totals[k] = len(order_c)

    sample_start = np.zeros(n + 1, idt)
    totals = [0] * len(chunks)
    _run_tasks(len(chunks), one_chunk)
    order = (np.concatenate(orders).astype(np.result_type(*[o.dtype for o in orders]), copy=False) if orders
             else np.zeros(0, idt))
    del orders
    offset = 0
    for (s0, s1), total in zip(chunks, totals):
        if offset:
            sample_start[s0 + 1:s1 + 1] += offset
        offset += total
    wide = np.result_type(*[c.dtype for c in counts]) if counts else np.dtype(np.uint8)
    seg_count = np.concatenate(counts).astype(wide, copy=False) if counts else np.zeros((0, n_slots), np.uint8)
    del counts
    arrays = {"order": order, "sample_start": sample_start, "seg_count": seg_count, "row0": row0, "vrow0": vrow0,
              "score0": score0, "area0": area0, "vscore": vscore, "varea": varea, "s2": s2,
              **({"order_base": order_base} if order_base is not None else {}),
              **{f"geom_{k}": a for k, a in geom.items()}}
    prep = _finish(ds, fp, n_slots, relation, width * height, arrays, kept)
    if kept is not None:  # the next open maps them (written while this one goes on), and so does this one
        expect = _kept_arrays(n, n_slots, len(d), score_dtype(d.score))
        prepared_cache.save_in_background(kept, arrays, then=functools.partial(
            _map_kept, weakref.ref(prep), kept, expect, len(d)))
    return prep


def _map_kept(prep_ref: Callable[[], Prepared | None], kept: prepared_cache.Slot,
              expect: prepared_cache.Expected, n_det: int) -> None:
    """Once `prepared_cache` has written a preparation, its `Prepared` (if still alive) reads
    the written files instead of its arrays in memory, which go (≈0.3 GB at 1M): what the
    decision passes read comes back into this process's memory page by page as they read it;
    the rest stays in the page cache, as on a later open. Each file must hold its array's
    values (else nothing is swapped)."""
    prep = prep_ref()
    if prep is None:
        return
    mapped = prepared_cache.load(kept, expect, n_det)
    if mapped is None:
        return
    if not _same_arrays(prep.kept(), mapped):
        log.warning("the checker's kept preparation %s differs from the one in memory: not used", kept.folder)
        return
    prep.use_kept(mapped)


def _same_arrays(now: dict[str, np.ndarray], mapped: dict[str, np.ndarray]) -> bool:
    """Whether the mapped arrays hold `now`'s names, dtypes and values; each file's pages are
    handed back once compared (the comparison reads it whole)."""
    if sorted(now) != sorted(mapped):
        return False
    for k, a in mapped.items():
        same = a.dtype == now[k].dtype and np.array_equal(a, now[k], equal_nan=a.dtype.kind == "f")
        drop_mapped_pages([a])
        if not same:
            return False
    return True


def _kept_arrays(n: int, n_slots: int, n_det: int, sdt: type[np.floating[Any]]
                 ) -> dict[str, tuple[tuple[int, ...], set[str]]]:
    """Shape (-1: any length) and allowed dtypes of each array `_prepare` computes for the
    loader's detections (sorted by sample: with ``order_base``), as `prepared_cache` keeps them."""
    n_pert = n_slots // 2 - 2
    idt = np.dtype(_index_dtype(2 * n_det + 1)).name
    count = {"uint8", "uint16", "int64"}
    score = {np.dtype(sdt).name}
    return {"order": ((-1,), count), "order_base": ((n,), {idt}), "sample_start": ((n + 1,), {idt}),
            "seg_count": ((n, n_slots), count), "row0": ((4, n), {idt}), "vrow0": ((2 * n_pert, n), {idt}),
            "score0": ((4, n), score),
            "area0": ((4, n), {"float64"}), "vscore": ((n_pert, n), score), "varea": ((2 * n_pert, n), {"float64"}),
            "s2": ((2, n), score), **{f"geom_{k}": ((n,), {"float64"}) for k in _GEOM_1D},
            **{f"geom_{k}": ((n_pert, n), {"float64"}) for k in _GEOM_2D}}


def _finish(ds: Dataset, fp: tuple[Any, ...], n_slots: int, relation: np.ndarray, wh: np.ndarray,
            arrays: dict[str, np.ndarray], kept_at: prepared_cache.Slot | None) -> Prepared:
    """The `Prepared` of `arrays` (computed, or kept by an earlier open at `kept_at`), cached in
    ``ds.cache``."""
    n = len(ds.samples)
    wh_scalar = float(wh[0]) if n and bool((wh == wh[0]).all()) else None
    geom = {k: arrays[f"geom_{k}"] for k in (*_GEOM_1D, *_GEOM_2D)}
    prep = Prepared(
        fingerprint=fp, n=n, n_slots=n_slots, order=arrays["order"],
        order_base=arrays.get("order_base"), sample_start=arrays["sample_start"], seg_count=arrays["seg_count"],
        row0=arrays["row0"], vrow0=arrays["vrow0"], score0=arrays["score0"], area0=arrays["area0"], vscore=arrays["vscore"],
        varea=arrays["varea"], s2=arrays["s2"],
        rel=np.asarray(relation).astype(np.int8), wh=None if wh_scalar is not None else wh, wh_scalar=wh_scalar,
        geom=geom,
        finite=_all_finite(geom), kept_at=kept_at,
    )
    ds.cache[_CACHE_KEY] = prep
    # the columns were read whole once (or, kept, not at all: the loader's checks read a few);
    # from here on only the area stage and shown pairs read a few rows: memory-mapped ones (the
    # loader's cache) go back to the page cache
    ds.drop_mapped_pages()
    return prep


# =============================================================================================
# Area stage: where the area filter moves a selection past its segment's first row
# =============================================================================================
@dataclass
class _Walked:
    """One slot's walk under one area filter: the samples ``cand`` (sorted) whose first row fails
    the filter and that have a later row; the first later row that passes it (``found``, -1
    where none does) with its area, and the largest area of the rows the walk passed over
    before it (all later rows where none passes; -inf where it passed over none). A walk under
    another filter value gives the same row wherever that value's threshold is above ``passed``
    and at most ``found_area`` (`_build_area_stage`)."""

    cand: np.ndarray
    found: np.ndarray
    found_area: np.ndarray
    passed: np.ndarray


@dataclass
class _AreaStage:
    """For one ``min_area_fraction``: the samples ``idx`` (sorted) where some slot's selection is
    not its first row (the first row fails the area filter and a later one passes it), with
    every input the decision pass reads for them, computed from their actual selections."""

    idx: np.ndarray
    rows: np.ndarray  # (S, K) int64 selected row per slot, -1 where none passes the area filter
    eff: np.ndarray  # (4, K) float64 score of the selection in slots 0..3 (-inf where none)
    veff: np.ndarray  # (V-1, K) float64 min of the scores of variant v's A and B selections
    geom: dict[str, np.ndarray]
    finite: bool
    ok: np.ndarray  # (4, N) bool: the first row of slot 0..3 passes the area filter (every sample)
    vok: np.ndarray  # (V-1, N) bool: the first rows of variant v's A and B both pass it
    walks: list[_Walked] = field(default_factory=list, repr=False)  # each slot's (a later build reuses them)


def _area_threshold(prep: Prepared, maf: float, idx: np.ndarray | None = None) -> np.ndarray | float:
    if prep.wh_scalar is not None:
        return maf * prep.wh_scalar
    assert prep.wh is not None
    return maf * (prep.wh if idx is None else prep.wh[idx])


def _build_area_stage(ds: Dataset, prep: Prepared, maf: float, near: _AreaStage | None = None) -> _AreaStage:
    """The area stage of ``min_area_fraction`` ``maf``. ``near``: a stage of the same preparation
    under another value. Its walks answer for every sample whose threshold lies between the
    largest area a walk passed over and the area of the row it found (`_Walked`): only the
    others are walked; and its geometry is taken for the samples whose selections are the same
    in every slot under both (the geometry depends on the selected rows alone)."""
    d = ds.detections
    n_slots = prep.n_slots
    if len(d):
        x1, y1, x2, y2 = (_Col64(a) for a in (d.x1, d.y1, d.x2, d.y2))
        score = _Col64(d.score)

    def area(r: np.ndarray) -> np.ndarray:
        return (x2[r] - x1[r]) * (y2[r] - y1[r])

    def walk(sl: int, cand: np.ndarray, thr_c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Samples ``cand`` (each with a later row) whose first row in slot ``sl`` fails the area
        filter (thresholds ``thr_c``): the first later row that passes it (-1 where none), its
        area and the largest area passed over before it. One row per step, vectorised."""
        pos, end = prep.segment(cand, sl)
        pos += 1
        found = np.full(len(cand), -1, np.int64)
        found_area = np.full(len(cand), np.nan)
        passed = np.full(len(cand), -np.inf)
        active = np.arange(len(cand))
        while len(active):
            rr = prep.rows_at(pos[active], cand[active])
            ar = area(rr)
            hit = ~(ar < thr_c[active])
            found[active[hit]] = rr[hit]
            found_area[active[hit]] = ar[hit]
            miss = active[~hit]
            passed[miss] = np.maximum(passed[miss], ar[~hit])
            active = miss[pos[miss] + 1 < end[miss]]
            pos[active] += 1
        return found, found_area, passed

    thr_all = _area_threshold(prep, maf)
    thr_rows = thr_all if isinstance(thr_all, float) else thr_all
    ok = np.empty((4, prep.n), bool)  # first rows that pass the area filter (a NaN area is not small)
    slot_ok = np.empty(prep.varea.shape, bool)  # the same of each variant slot
    empty = np.zeros(0, np.int64)
    walks: list[_Walked] = [_Walked(empty, empty, np.zeros(0), np.zeros(0))] * n_slots

    def find(sl: int) -> None:
        passes = ok[sl] if sl < 4 else slot_ok[sl - 4]
        with np.errstate(invalid="ignore"):
            np.less(prep.area0[sl] if sl < 4 else prep.varea[sl - 4], thr_rows, out=passes)  # small
        cand = np.flatnonzero(passes) if len(d) else empty  # its first row is small
        np.logical_not(passes, out=passes)
        if not len(d):
            return
        cand = cand[prep.seg_count[cand, sl] >= 2]  # with a later row to move to
        thr = _area_threshold(prep, maf, cand)
        thr_c = thr if isinstance(thr, np.ndarray) else np.full(len(cand), thr)
        found = np.full(len(cand), -1, np.int64)
        found_area = np.full(len(cand), np.nan)
        passed = np.full(len(cand), -np.inf)
        todo = np.arange(len(cand))
        if near is not None and near.walks and len(near.walks[sl].cand) and len(cand):
            w = near.walks[sl]
            at = np.minimum(np.searchsorted(w.cand, cand), len(w.cand) - 1)
            was = w.cand[at] == cand
            with np.errstate(invalid="ignore"):  # a NaN threshold or area: walked again
                same = was & (w.passed[at] < thr_c) & ((w.found[at] < 0) | ~(w.found_area[at] < thr_c))
            keep = np.flatnonzero(same)
            found[keep], found_area[keep], passed[keep] = w.found[at[keep]], w.found_area[at[keep]], w.passed[at[keep]]
            todo = np.flatnonzero(~same)
        if len(todo):
            found[todo], found_area[todo], passed[todo] = walk(sl, cand[todo], thr_c[todo])
        walks[sl] = _Walked(cand, found, found_area, passed)

    _run_tasks(n_slots, find)
    vok = slot_ok[0::2] & slot_ok[1::2]
    any_moved = np.zeros(prep.n, bool)
    for w in walks:
        any_moved[w.cand[w.found >= 0]] = True
    idx = np.flatnonzero(any_moved)
    k_n = len(idx)
    # every slot's selection: the first row where it passes the filter, the row moved to, or none
    rows = np.full((n_slots, k_n), -1, np.int64)
    if k_n:
        rows[:4] = np.where(ok[:, idx], prep.row0[:, idx], -1)
        rows[4:] = np.where(slot_ok[:, idx], prep.vrow0[:, idx], -1)
    for sl, w in enumerate(walks):
        got = w.found >= 0
        if got.any():
            rows[sl, np.searchsorted(idx, w.cand[got])] = w.found[got]

    # the selections' scores and geometry: taken from `near` where a sample's selections are
    # its there, else read and computed
    reuse = np.zeros(k_n, bool)
    at_near = np.zeros(k_n, np.int64)
    if near is not None and k_n and len(near.idx):
        at_near = np.minimum(np.searchsorted(near.idx, idx), len(near.idx) - 1)
        inside = np.flatnonzero(near.idx[at_near] == idx)
        reuse[inside] = (near.rows[:, at_near[inside]] == rows[:, inside]).all(axis=0)
    todo_g = np.flatnonzero(~reuse)
    kept = np.flatnonzero(reuse)
    parts: list[dict[str, np.ndarray]] = [{} for _ in range(-(-len(todo_g) // CHUNK))]

    def geometry(k: int) -> None:
        t = todo_g[k * CHUNK:(k + 1) * CHUNK]
        parts[k] = _geometry(ds, rows[:, t], idx[t])

    _run_tasks(len(parts), geometry)
    if not parts:
        parts = [_geometry(ds, rows[:, todo_g], idx[todo_g])]  # (empty arrays of the right shapes)
    r_todo = rows[:, todo_g]
    e_todo = np.where(r_todo >= 0, score[np.maximum(r_todo, 0)], -np.inf) if len(d) else \
        np.full(r_todo.shape, -np.inf)
    computed = {key: np.concatenate([g[key] for g in parts], axis=-1) for key in parts[0]}
    computed["eff"], computed["veff"] = e_todo[:4], np.minimum(e_todo[4::2], e_todo[5::2])
    merged: dict[str, np.ndarray] = {}
    for key, values in computed.items():
        if not len(kept):
            merged[key] = np.ascontiguousarray(values)
            continue
        assert near is not None
        out = np.empty(values.shape[:-1] + (k_n,), values.dtype)
        out[..., todo_g] = values
        out[..., kept] = (getattr(near, key) if key in ("eff", "veff") else near.geom[key])[..., at_near[kept]]
        merged[key] = out
    eff, veff = merged.pop("eff"), merged.pop("veff")
    geom = merged
    return _AreaStage(idx=idx, rows=rows, eff=eff, veff=veff, geom=geom, finite=_all_finite(geom),
                      ok=ok, vok=vok, walks=walks)


# =============================================================================================
# Stage cache
# =============================================================================================
_CONF_FIELDS = ("w_detection", "w_geometry", "w_stability", "w_agreement", "geom_slope")
_INERT_FIELDS = ("tau", "name", "extra")  # never change a verdict array
_DECISION_FIELDS = tuple(f.name for f in fields(CheckerConfig)
                         if f.name not in _CONF_FIELDS + _INERT_FIELDS + ("min_area_fraction",))


@dataclass
class _Result:
    key: tuple[Any, ...]  # min_area_fraction and the decision parameters
    flags: tuple[Callable[[], Any], ...]  # weak references to the per-sample flags it read
    conf_key: tuple[Any, ...]
    reach_key: tuple[Any, ...]  # what decides which samples reach the margin test (_reach_key)
    ref: Callable[[], Any]  # weak reference to the VerdictArrays


class _Stages:
    """The checker's caches for one prepared dataset: a few area stages (by
    ``min_area_fraction``) and weak references to recent results (reused while their owner
    keeps them alive, so the cache itself holds no result memory)."""

    MAX_AREA = 2
    MAX_SELECTIONS = 2
    MAX_RESULTS = 4

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.area: OrderedDict[float, _AreaStage] = OrderedDict()
        self.sel: list[tuple[tuple[Any, ...], tuple[Callable[[], Any], ...], dict[str, np.ndarray]]] = []
        self.results: list[_Result] = []
        self.flags: tuple[tuple[Callable[[], Any], ...], tuple[bool, bool]] | None = None

    def selection(self, key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...]) -> dict[str, np.ndarray] | None:
        with self.lock:
            for i, (k, f, arrays) in enumerate(self.sel):
                if k == key and _same_refs(f, flags):
                    self.sel.append(self.sel.pop(i))
                    return arrays
        return None

    def add_selection(self, key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...],
                      arrays: dict[str, np.ndarray]) -> None:
        with self.lock:
            self.sel.append((key, flags, arrays))
            del self.sel[:-self.MAX_SELECTIONS]

    def nbytes(self) -> int:
        """Memory held by the cached area and selection stages (selected-row arrays included,
        which live results share)."""
        seen: dict[int, int] = {}
        with self.lock:
            for st in self.area.values():
                for a in (st.idx, st.rows, st.eff, st.veff, st.ok, st.vok, *st.geom.values()):
                    seen[id(a)] = a.nbytes
            for _, _, arrays in self.sel:
                for a in arrays.values():
                    seen[id(a)] = a.nbytes
        return sum(seen.values())

    def flag_summary(self, flags: tuple[Callable[[], Any], ...], has_pert: np.ndarray,
                     recorded: np.ndarray) -> tuple[bool, bool]:
        """(some sample has perturbed detections, some other one a recorded stability)."""
        with self.lock:
            if self.flags is not None and _same_refs(self.flags[0], flags):
                return self.flags[1]
        summary = bool(has_pert.any()), bool((np.isfinite(recorded) & ~has_pert).any())
        with self.lock:
            self.flags = (flags, summary)
        return summary

    def area_stage(self, ds: Dataset, prep: Prepared, maf: float) -> _AreaStage:
        with self.lock:
            hit = self.area.get(maf)
            if hit is not None:
                self.area.move_to_end(maf)
                return hit
            # the cached stage nearest in value: most samples' selections are the same there
            near = min(self.area.items(), key=lambda kv: abs(kv[0] - maf) if math.isfinite(kv[0] - maf)
                       else math.inf, default=(None, None))[1]
        stage = _build_area_stage(ds, prep, maf, near)
        with self.lock:
            self.area[maf] = stage
            while len(self.area) > self.MAX_AREA:
                self.area.popitem(last=False)
        # kept arrays mapped from the cache (prepared_cache) that no move of a slider but the
        # area filter's reads again go back to the page cache: ≈0.1 GB of resident memory at 1M
        drop_mapped_pages(prep.area_only())
        return stage

    def find(self, key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...],
             conf_key: tuple[Any, ...]) -> tuple[VerdictArrays | None, bool]:
        """A live result with the same decision key and flags, and whether its conf_key is
        also the same (preferred when several match)."""
        with self.lock:
            self.results = [r for r in self.results if r.ref() is not None]
            found: VerdictArrays | None = None
            for r in reversed(self.results):
                v = r.ref()
                if v is None or r.key != key or not _same_refs(r.flags, flags):
                    continue
                if r.conf_key == conf_key:
                    return v, True
                found = found or v
            return found, False

    def find_reached(self, reach_key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...]) -> VerdictArrays | None:
        """The latest live result whose samples reach the margin test as under ``reach_key``."""
        with self.lock:
            for r in reversed(self.results):
                v = r.ref()
                if v is not None and r.reach_key == reach_key and _same_refs(r.flags, flags):
                    return v  # type: ignore[no-any-return]
        return None

    def find_margin_step(self, key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...],
                         conf_key: tuple[Any, ...], margin: float) -> VerdictArrays | None:
        """The live result nearest in margin to ``margin`` whose decision parameters (but the
        margin), flags and confidence parameters are those of ``key`` / ``conf_key``, for
        `_step_chunk`: both margins finite and >= 0, gamma finite and > 0; else None."""
        gamma = conf_key[_CONF_FIELDS.index("geom_slope")]
        if not (_nonnegative(margin) and _nonnegative(gamma) and gamma > 0):
            return None
        rest = key[:_MARGIN_AT] + key[_MARGIN_AT + 1:]
        best: tuple[float, VerdictArrays] | None = None
        with self.lock:
            for r in self.results:
                v = r.ref()
                m = r.key[_MARGIN_AT]
                if (v is None or r.conf_key != conf_key or not _nonnegative(m)
                        or r.key[:_MARGIN_AT] + r.key[_MARGIN_AT + 1:] != rest
                        or not _same_refs(r.flags, flags)):
                    continue
                if best is None or abs(m - margin) <= best[0]:
                    best = (abs(m - margin), v)
        return None if best is None else best[1]

    def find_area_step(self, key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...],
                       conf_key: tuple[Any, ...]) -> tuple[VerdictArrays, _AreaStage] | None:
        """The latest live result whose parameters are those of ``key`` / ``conf_key`` but the
        area filter, with its area stage (held from here on by the caller), for `_area_step`."""
        with self.lock:
            for r in reversed(self.results):
                v = r.ref()
                if (v is None or r.key[0] == key[0] or r.key[1:] != key[1:] or r.conf_key != conf_key
                        or not _same_refs(r.flags, flags)):
                    continue
                stage = self.area.get(r.key[0])
                if stage is not None:
                    return v, stage
        return None

    def add(self, key: tuple[Any, ...], flags: tuple[Callable[[], Any], ...],
            conf_key: tuple[Any, ...], reach_key: tuple[Any, ...], v: VerdictArrays) -> None:
        with self.lock:
            self.results.append(_Result(key, flags, conf_key, reach_key, weakref.ref(v)))
            del self.results[:-self.MAX_RESULTS]


def _reach_key(cfg: CheckerConfig) -> tuple[Any, ...]:
    """The parameters that decide which samples reach the margin test (objects found past the
    area filter and the primary cut, not ambiguous, not overlapping), and with it their delta,
    IoU, detection term and the reasons of the others."""
    return (cfg.min_area_fraction, max(cfg.t_det, cfg.primary_threshold), cfg.ambiguity_delta,
            cfg.max_overlap_iou)


_MARGIN_AT = 1 + _DECISION_FIELDS.index("margin")  # the margin's place in a decision key (`_keys`)


def _nonnegative(x: Any) -> bool:
    """Whether ``x`` is a finite number >= 0."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def _keys(cfg: CheckerConfig, ds: Dataset) -> tuple[tuple[Any, ...], tuple[Callable[[], Any], ...], tuple[Any, ...]]:
    """(decision key, flags, conf key) of an evaluation: every parameter that changes a verdict
    array, weak references to the sample flags it reads, and the confidence-only parameters."""
    s = ds.samples
    key = (cfg.min_area_fraction,) + tuple(getattr(cfg, f) for f in _DECISION_FIELDS)
    flags = tuple(weak(a) for a in (s.has_perturbed, s.has_secondary, s.recorded_stability))
    return key, flags, tuple(getattr(cfg, f) for f in _CONF_FIELDS)


# =============================================================================================
# Chunks on up to two threads
# =============================================================================================
# Samples per chunk of a pass: at least CHUNK, and as many as leave about CHUNKS_PER_PASS chunks
# (several per thread) up to MAX_CHUNK. A pass makes a few dozen numpy calls per chunk on
# subsets of it, so fewer, larger chunks spend less time outside numpy's loops; at a million
# samples 1 << 17 measured faster than 1 << 15 on two threads, though a chunk's temporaries no
# longer fit in a core's cache.
CHUNK = 1 << 15
MAX_CHUNK = 1 << 17
CHUNKS_PER_PASS = 8
THREADS: int | None = None  # None: WORKSTATION_CHECKER_THREADS, else min(2, usable cores)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool when needed."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _threads() -> int:
    if THREADS is not None:
        return max(1, int(THREADS))
    env = os.environ.get("WORKSTATION_CHECKER_THREADS", "").strip()
    if env.isdigit():
        return max(1, int(env))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(2, cores))


def _run_tasks(n_tasks: int, fn: Callable[[int], None], min_tasks: int = 2) -> None:
    """fn(0), ..., fn(n_tasks - 1) on up to two threads (numpy releases the GIL in its loops):
    both take the next task as they finish one, the calling thread too, so a core busy with
    other work slows the whole down to one thread's speed, not below it."""
    global _pool
    nt = min(_threads(), n_tasks) if n_tasks >= min_tasks else 1
    if nt <= 1:
        for k in range(n_tasks):
            fn(k)
        return
    with _pool_lock:
        if _pool is None or _pool._max_workers < nt - 1:
            _pool = ThreadPoolExecutor(max_workers=nt - 1, thread_name_prefix="checker")
        pool = _pool
    counter = itertools.count()  # next() is atomic under the GIL
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            k = next(counter)
            if k >= n_tasks:
                return
            try:
                fn(k)
            except BaseException:
                stop.set()
                raise

    futures = [pool.submit(run) for _ in range(nt - 1)]
    try:
        run()
    finally:
        for fut in futures:
            fut.result()


def _chunk_size(n: int) -> int:
    return max(1, CHUNK, min(MAX_CHUNK, -(-n // CHUNKS_PER_PASS)))


def _run_chunks(n: int, fn: Callable[[int, int], None]) -> None:
    """fn(lo, hi) over [0, n) in chunks of `_chunk_size` samples (``_run_tasks``; one thread
    below four chunks)."""
    size = _chunk_size(n)
    _run_tasks(-(-n // size), lambda k: fn(k * size, min((k + 1) * size, n)), min_tasks=4)


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


@dataclass(frozen=True)
class _Params:
    """The scalars one decision pass reads (derived from a CheckerConfig)."""

    cut1: float
    cut2: float
    maf: float
    amb: float
    max_iou: float
    margin: float
    ct: float
    neutral: float
    use2: bool
    stab_on: bool  # stability enabled with perturbations configured
    stab_dets: bool  # ... and computed from cached perturbed detections somewhere
    pvars: tuple[int, ...]
    use_rec: bool  # some sample uses a recorded stability
    finite: bool  # every geometry input is finite (see _masked)
    gamma: float
    wd: float
    wg: float
    ws: float
    wa: float

    @property
    def conf_bounded(self) -> bool:
        """With weights >= 0 every confidence is finite: a product of powers of (0, 1 + eps]."""
        return 0 <= min(self.wd, self.wg, self.ws, self.wa) and max(self.wd, self.wg, self.ws, self.wa) <= 1e6

    @staticmethod
    def of(cfg: CheckerConfig, prep: Prepared, pvars: list[int], stab_dets: bool, use_rec: bool = False,
           finite: bool = False) -> _Params:
        return _Params(
            cut1=max(cfg.t_det, cfg.primary_threshold), cut2=max(cfg.t_det, cfg.secondary_threshold),
            maf=cfg.min_area_fraction,
            amb=cfg.ambiguity_delta, max_iou=cfg.max_overlap_iou, margin=float(cfg.margin),
            ct=cfg.consistency_threshold, neutral=float(cfg.neutral_agreement), use2=cfg.use_secondary,
            stab_on=cfg.stability_enabled and len(cfg.perturbations) > 0, stab_dets=stab_dets,
            pvars=tuple(pvars), use_rec=use_rec, finite=finite, gamma=cfg.geom_slope, wd=cfg.w_detection, wg=cfg.w_geometry,
            ws=cfg.w_stability, wa=cfg.w_agreement)


_OUT_TYPES = {"verdict": np.int8, "reason": np.int8, "reason_detail": np.int8, "conf": np.float64,
              "c_detection": np.float64, "c_geometry": np.float64, "c_stability": np.float64,
              "c_agreement": np.float64, "delta": np.float64, "iou_ab": np.float64}
_SEL_TYPES = {"pa": np.bool_, "pb": np.bool_, "ok2": np.bool_, "iou_term": np.float64, "nobody": np.bool_,
              "sel_a": np.int64, "sel_b": np.int64, "sel2_a": np.int64, "sel2_b": np.int64}


def _b8(mask: np.ndarray) -> np.ndarray:
    """A bool array as int8 0/1 without copying."""
    return mask.view(np.int8)


def _masked(p: _Params, values: np.ndarray, mask: np.ndarray, out: np.ndarray, bounded: bool = True) -> None:
    """out = values where mask else 0.0. For finite values >= 0 (every input finite, and for
    conf weights >= 0) this is values * mask, bit for bit, and cheaper than np.where."""
    if p.finite and bounded:
        np.multiply(values, mask, out=out)
    else:
        out[...] = np.where(mask, values, 0.0)


def _rows_or_none(rows: np.ndarray, mask: np.ndarray, out: np.ndarray) -> None:
    """out = rows where mask else -1 (rows is -1 where a segment is empty)."""
    np.multiply(rows + 1, mask, out=out)
    out -= 1


def _select_chunk(p: _Params, x: dict[str, Any], out: dict[str, np.ndarray], s: slice) -> None:
    """Which selections pass the score cut and the area filter, the selected rows, and the
    stability terms that depend on the selections only (not on the margin): samples ``s``.
    ``x["ok"]`` / ``x["vok"]``: whether the first rows pass the area filter; None where
    ``x["sc"]`` / ``x["vsc"]`` already hold the scores of the selections that pass it (-inf
    where none)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        def present(scores: np.ndarray, area_ok: np.ndarray | None, row: int, cut: float) -> np.ndarray:
            ok = _at_least(scores[row, s], cut)
            if area_ok is not None:
                ok &= area_ok[row, s]
            return ok

        sc, ar, rows = x["sc"], x["ok"], x["rows"]
        pa, pb = present(sc, ar, 0, p.cut1), present(sc, ar, 1, p.cut1)
        out["pa"][s] = pa
        out["pb"][s] = pb
        _rows_or_none(rows[0, s], pa, out["sel_a"][s])
        _rows_or_none(rows[1, s], pb, out["sel_b"][s])
        if p.use2:
            has2 = x["has2"][s]
            p2a = has2 & present(sc, ar, 2, p.cut2)
            p2b = has2 & present(sc, ar, 3, p.cut2)
            out["ok2"][s] = p2a & p2b
            _rows_or_none(rows[2, s], p2a, out["sel2_a"][s])
            _rows_or_none(rows[3, s], p2b, out["sel2_b"][s])
        else:
            out["ok2"][s] = False
            out["sel2_a"][s] = -1
            out["sel2_b"][s] = -1
        if p.stab_dets:
            both = {v: present(x["vsc"], x["vok"], v - 1, p.cut1) for v in set(p.pvars)}
            for v, b in both.items():
                out[f"both{v}"][s] = b
            succ = np.zeros(len(pa), np.int16)
            iou_sum = np.zeros(len(pa))
            iouak, ioubk = x["iouak"], x["ioubk"]
            for v in p.pvars:  # the reference's order of additions
                b = both[v]
                succ += b
                iou_sum += iouak[v - 1, s] * b
                iou_sum += ioubk[v - 1, s] * b
            out["iou_term"][s] = 0.5 * (iou_sum / (2.0 * succ))  # NaN where no variant found both
            out["nobody"][s] = succ == 0


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


def _two_passes(n: int, idx: np.ndarray, kernel: Callable[..., None], p: _Params, x_all: dict[str, Any],
                x_sub: dict[str, Any], types: dict[str, Any]) -> dict[str, np.ndarray]:
    """``kernel`` over every sample from the prepared inputs, then over the area stage's samples
    ``idx`` from their own inputs (scattered over the first pass's values). Read-only results."""
    out = {k: np.empty(n, t) for k, t in types.items()}
    _run_chunks(n, lambda lo, hi: kernel(p, x_all, out, slice(lo, hi)))
    if len(idx):
        sub = {k: np.empty(len(idx), t) for k, t in types.items()}
        _run_chunks(len(idx), lambda lo, hi: kernel(p, x_sub, sub, slice(lo, hi)))
        for k in types:
            out[k][idx] = sub[k]
    for arr in out.values():
        arr.flags.writeable = False
    return out


# the share of the samples up to which `_patched` runs the passes again at the samples an area
# filter change reaches (each of their inputs gathered), above which it is the whole passes
PATCH_MAX_FRACTION = 0.125


def _patched(base: dict[str, np.ndarray], at: np.ndarray, idx: np.ndarray, kernel: Callable[..., None],
             p: _Params, x_all: dict[str, Any], x_sub: dict[str, Any], types: dict[str, Any]) -> dict[str, np.ndarray]:
    """`_two_passes`' arrays where they differ from ``base`` only at the samples ``at`` (sorted):
    ``base``'s arrays copied and ``kernel`` run again over those samples alone, from the prepared
    inputs or, for those among the area stage's samples ``idx``, from its own (each input
    gathered at them). Read-only results."""
    out: dict[str, np.ndarray] = {}

    def copy(k: int) -> None:
        name = list(types)[k]
        out[name] = np.array(base[name], dtype=types[name], copy=True)

    _run_tasks(len(types), copy)
    pos = np.minimum(np.searchsorted(idx, at), max(len(idx) - 1, 0))
    in_sub = (idx[pos] == at) if len(idx) else np.zeros(len(at), bool)
    for rows, x, where in ((at[~in_sub], x_all, at[~in_sub]), (at[in_sub], x_sub, pos[in_sub])):
        if not len(rows):
            continue
        xs = {k: (np.take(a, where, axis=-1) if isinstance(a, np.ndarray) else a) for k, a in x.items()}
        sub = {k: np.empty(len(rows), t) for k, t in types.items()}
        _run_chunks(len(rows), lambda lo, hi: kernel(p, xs, sub, slice(lo, hi)))
        for k in types:
            out[k][rows] = sub[k]
    for arr in out.values():
        arr.flags.writeable = False
    return out


def _changed_by_area(a: _AreaStage, b: _AreaStage) -> np.ndarray:
    """The samples (sorted) whose selection and decision inputs differ between the area stages
    ``a`` and ``b`` (two values of the area filter): a first row that passes one and not the
    other, or moved selections that are not the same in both. Every other sample reads the
    same values under both."""
    changed = (a.ok != b.ok).any(axis=0)
    changed |= (a.vok != b.vok).any(axis=0)
    for x, y in ((a, b), (b, a)):
        if not len(x.idx):
            continue
        if not len(y.idx):
            changed[x.idx] = True
            continue
        at = np.minimum(np.searchsorted(y.idx, x.idx), len(y.idx) - 1)
        same = y.idx[at] == x.idx
        same[same] = (y.rows[:, at[same]] == x.rows[:, same]).all(axis=0)
        changed[x.idx[~same]] = True
    return np.flatnonzero(changed)


def _reweigh(prep: Prepared, area: _AreaStage, hit: VerdictArrays, cfg: CheckerConfig) -> VerdictArrays:
    """``hit`` under ``cfg``, which differs from hit.config in confidence parameters only."""
    p = _Params.of(cfg, prep, [], False, finite=prep.finite and area.finite)
    x_all = {"reason": hit.reason, "delta": hit.delta, "logcd": prep.geom["logcd"],
             "c_stability": hit.c_stability, "c_agreement": hit.c_agreement}
    x_sub = {k: (a[area.idx] if k != "logcd" else area.geom["logcd"]) for k, a in x_all.items()}
    o = _two_passes(prep.n, area.idx, _reweigh_chunk, p, x_all, x_sub, {"conf": np.float64, "c_geometry": np.float64})
    return dataclasses_replace(hit, conf=o["conf"], c_geometry=o["c_geometry"], config=cfg)


def _selection(prep: Prepared, area: _AreaStage, p: _Params, has2: np.ndarray) -> dict[str, np.ndarray]:
    """The selection stage's arrays (see _select_chunk) for every sample."""
    idx = area.idx
    types = {k: (prep.row0.dtype if k.startswith("sel") else t) for k, t in _SEL_TYPES.items()
             if p.stab_dets or k not in ("iou_term", "nobody")}  # rows in the prepared index dtype
    types.update({f"both{v}": np.bool_ for v in set(p.pvars) if p.stab_dets})
    x_all: dict[str, Any] = {
        "sc": prep.score0, "ok": area.ok, "vsc": prep.vscore, "vok": area.vok, "rows": prep.row0,
        "has2": has2, "iouak": prep.geom["iouak"], "ioubk": prep.geom["ioubk"]}
    x_sub: dict[str, Any] = {
        "sc": area.eff, "ok": None, "vsc": area.veff, "vok": None, "rows": area.rows[:4],
        "has2": has2[idx], "iouak": area.geom["iouak"], "ioubk": area.geom["ioubk"]}
    return _two_passes(prep.n, idx, _select_chunk, p, x_all, x_sub, types)


def _decision(ds: Dataset, prep: Prepared, area: _AreaStage, cfg: CheckerConfig,
              flags: tuple[Callable[[], Any], ...], base: VerdictArrays | None = None,
              stepped: bool = False, area_step: tuple[VerdictArrays, _AreaStage] | None = None) -> VerdictArrays:
    """A new result: the selection stage (cached by the cuts, the area filter and the variants
    it reads), then the decision pass; from ``base`` (a result whose samples reach the margin
    test as under cfg: `_reach_key`) only the samples that reach it are decided again, and with
    ``stepped`` (``base`` under cfg but its margin: `_Stages.find_margin_step`) only those whose
    outputs can differ between the two margins (`_step_chunk`). With ``area_step`` (a live result
    under cfg but its area filter, and that filter's area stage: `_Stages.find_area_step`) its
    selection and decision arrays are copied and only the samples whose inputs the two area
    stages give differently are selected and decided again (`_changed_by_area`)."""
    s = ds.samples
    idx = area.idx
    has_pert = np.asarray(s.has_perturbed, bool)
    has2 = np.asarray(s.has_secondary, bool)
    recorded = np.asarray(s.recorded_stability, np.float64)
    any_pert, any_rec = prep.stages.flag_summary(flags, has_pert, recorded)
    stab_on = cfg.stability_enabled and len(cfg.perturbations) > 0
    stab_dets = stab_on and any_pert
    use_rec = stab_on and any_rec
    p = _Params.of(cfg, prep, _perturbation_variants(ds, cfg, needed=stab_dets), stab_dets, use_rec,
                   prep.finite and area.finite)
    sel_key = (cfg.min_area_fraction, p.cut1, p.cut2, p.use2, p.pvars if stab_dets else ())
    sel = prep.stages.selection(sel_key, flags)

    def inputs(sel: dict[str, np.ndarray]) -> dict[str, Any]:  # the decision pass's but the geometry
        return {"rel": prep.rel, "s2": prep.s2, "s1": prep.score0[:2], "has_pert": has_pert, "recorded": recorded,
                **{k: a for k, a in sel.items() if not k.startswith(("sel", "sub."))}}

    if area_step is not None:  # the selection and decision of `base_v` but where the area stages differ
        base_v, base_area = area_step
        base_key = (base_v.config.min_area_fraction,) + sel_key[1:]
        base_sel = prep.stages.selection(base_key, flags) if sel is None else None
        if sel is None and base_sel is None:
            area_step = None  # its selection stage is gone: selected and decided in full below
        else:
            changed = _changed_by_area(base_area, area)
            if len(changed) > PATCH_MAX_FRACTION * prep.n:  # gathering every input at so many
                area_step = None  # samples costs more than the passes over every sample
        if area_step is not None:
            if sel is None:
                assert base_sel is not None
                types = {k: a.dtype for k, a in base_sel.items() if not k.startswith("sub.")}
                x_all: dict[str, Any] = {"sc": prep.score0, "ok": area.ok, "vsc": prep.vscore, "vok": area.vok, "rows": prep.row0,
                         "has2": has2, "iouak": prep.geom["iouak"], "ioubk": prep.geom["ioubk"]}
                x_sub: dict[str, Any] = {"sc": area.eff, "ok": None, "vsc": area.veff, "vok": None, "rows": area.rows[:4],
                         "has2": has2[idx], "iouak": area.geom["iouak"], "ioubk": area.geom["ioubk"]}
                sel = _patched(base_sel, changed, idx, _select_chunk, p, x_all, x_sub, types)
                sel.update({f"sub.{k}": np.take(a, idx, axis=-1) for k, a in inputs(sel).items()})
                prep.stages.add_selection(sel_key, flags, sel)
            x_all = {**inputs(sel), **prep.geom}
            x_sub = {**{k[4:]: a for k, a in sel.items() if k.startswith("sub.")}, **area.geom}
            o = _patched({k: getattr(base_v, k) for k in _OUT_TYPES}, changed, idx, _decide_chunk, p, x_all, x_sub,
                         _OUT_TYPES)
            _, label_a, label_b = _spatial_columns(ds)
            return VerdictArrays(**o, sel_a=sel["sel_a"], sel_b=sel["sel_b"], sel2_a=sel["sel2_a"],
                                 sel2_b=sel["sel2_b"], label_a=label_a, label_b=label_b, config=cfg)
    if sel is None:
        sel = _selection(prep, area, p, has2)
        # those inputs at the area stage's samples, gathered once per selection stage (take:
        # a fifth of the time a[..., idx] takes on the two-row score arrays)
        sel.update({f"sub.{k}": np.take(a, idx, axis=-1) for k, a in inputs(sel).items()})
        prep.stages.add_selection(sel_key, flags, sel)
    x_all = {**inputs(sel), **prep.geom}
    x_sub = {**{k[4:]: a for k, a in sel.items() if k.startswith("sub.")}, **area.geom}
    if base is None:
        o = _two_passes(prep.n, idx, _decide_chunk, p, x_all, x_sub, _OUT_TYPES)
    else:  # the samples reach the margin test as in base: its _KEPT arrays are this result's
        if stepped:
            lo, hi = sorted((float(cfg.margin), float(base.config.margin)))
            kernel, taken = _step_chunk, {f"base.{k}": getattr(base, k) for k in _STEPPED}
            x_all["step"] = x_sub["step"] = (lo, hi, (hi + p.gamma) * (1 + 1e-9))
        else:
            kernel, taken = _redecide_chunk, {"reason": base.reason}
        taken["delta"] = base.delta
        x_all.update(taken)
        x_sub.update({k: a[idx] for k, a in taken.items()})
        o = _two_passes(prep.n, idx, kernel, p, x_all, x_sub, {k: _OUT_TYPES[k] for k in _STEPPED})
        o.update({k: getattr(base, k) for k in _KEPT})
    _, label_a, label_b = _spatial_columns(ds)
    return VerdictArrays(**o, sel_a=sel["sel_a"], sel_b=sel["sel_b"], sel2_a=sel["sel2_a"], sel2_b=sel["sel2_b"],
                         label_a=label_a, label_b=label_b, config=cfg)


def evaluate(ds: Dataset, cfg: CheckerConfig) -> VerdictArrays:
    """Evaluate every sample of ``ds`` under ``cfg`` (METHODS.md §1), vectorised.

    Uses ``prepare(ds)`` (cached) and the stage caches described in the module docstring.
    Raises WorkstationError when stability must be computed from cached perturbed detections
    and a perturbation of ``cfg`` has none cached. The arrays returned are read-only (results
    under configs that differ only in weights or tau share them).
    """
    prep = prepare(ds)
    stages = prep.stages
    key, flags, conf_key = _keys(cfg, ds)
    reach_key = _reach_key(cfg)
    hit, same_conf = stages.find(key, flags, conf_key)
    if hit is not None and same_conf:
        v = dataclasses_replace(hit, config=cfg)
    else:
        # a live result under this config but its area filter, with that filter's stage (held
        # here: building this one's may drop it from the cache)
        area_step = stages.find_area_step(key, flags, conf_key) if hit is None else None
        area = stages.area_stage(ds, prep, cfg.min_area_fraction)
        if hit is not None:
            v = _reweigh(prep, area, hit, cfg)
        else:
            step = stages.find_margin_step(key, flags, conf_key, cfg.margin)
            if step is not None:
                v = _decision(ds, prep, area, cfg, flags, step, stepped=True)
            elif area_step is not None:
                v = _decision(ds, prep, area, cfg, flags, area_step=area_step)
            else:
                v = _decision(ds, prep, area, cfg, flags, stages.find_reached(reach_key, flags))
    stages.add(key, flags, conf_key, reach_key, v)
    return v


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
    relation, label_a, label_b = _spatial_columns(ds)
    for i in range(n):
        rel = rel_names[int(relation[i])]
        horizontal = rel in ("left_of", "right_of")
        negative = rel in ("left_of", "above")
        la = str(label_a[i]).strip().lower()
        lb = str(label_b[i]).strip().lower()
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
        label_a=label_a, label_b=label_b, config=cfg,
    )
