"""The geometry both the preparation and the passes compute, so that both give identical floats:
delta and IoU of selected boxes, detection columns read as float64 where gathered, and the
exact float64 comparisons of prepared score arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....dataset import Dataset, Detections
from ..data import spatial_columns
from ..types import RELATION_CODE


EPS = 1e-10

# relations whose PASS needs a negative delta (A left of / above B)
_NEGATIVE = np.zeros(len(RELATION_CODE), dtype=bool)
_NEGATIVE[RELATION_CODE["left_of"]] = True
_NEGATIVE[RELATION_CODE["above"]] = True
_HORIZONTAL = np.zeros(len(RELATION_CODE), dtype=bool)
_HORIZONTAL[RELATION_CODE["left_of"]] = True
_HORIZONTAL[RELATION_CODE["right_of"]] = True


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
