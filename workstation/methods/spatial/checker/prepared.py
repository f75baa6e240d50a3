"""Stage 1, the parameter-independent preparation (`prepare`): detections matched to (sample,
slot) segments sorted by score, and the geometry of every segment's first row; mapped from
`prepared_cache` when an earlier open kept it beside the loader's detection cache entry.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....dataset import Dataset, label_codes
from ....store.detection_cache import note_rebuilt
from ....types import PRIMARY, SECONDARY, WorkstationError
from ....util.grouping import by_segment_then_score, factorize
from ....util.memory import drop_mapped_pages
from ....util.refs import weak
from .. import prepared_cache
from ..data import object_codes
from .geometry import _Col64, _Gathered, _geometry, _spatial_columns
from .parallel import _run_tasks
from .stages import _Stages, _same_refs

log = logging.getLogger(__name__)


_CACHE_KEY = "checker.prepared"
# the prepared arrays that only an area stage's build reads (`Prepared.area_only`)
_AREA_ONLY = ("order", "order_base", "sample_start", "seg_count", "area0", "varea", "vrow0")
_LOCK_KEY = "checker.prepare_lock"


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
    n_slots = 2 * (1 + len(ds.variant_names))  # primary original, secondary original, primary variants 1..V
    # the loader's detections come as each sample's first row (sorted by sample); others as
    # a sample_idx column
    offsets = d.sample_offsets()
    sample_idx = np.asarray(d.sample_idx) if offsets is None else None
    _check_detections(ds, offsets, sample_idx)
    lab, code_a, code_b = _canonical_codes(ds)
    width = np.asarray(s.width, np.float64)
    height = np.asarray(s.height, np.float64)
    # kept beside the loader's detection cache entry by an earlier open: mapped, not computed
    kept = (prepared_cache.slot(ds, n_slots, (code_a, code_b, np.asarray(relation), width, height))
            if offsets is not None and len(d) else None)
    if kept is not None:
        notes: list[str] = []
        loaded = prepared_cache.load(kept, _kept_arrays(n, n_slots, len(d), score_dtype(d.score)), len(d),
                                     notes=notes)
        for line in notes:  # one found unusable: prepared again, and the open says so
            note_rebuilt(ds, line)
        if loaded is not None:
            return _finish(ds, fp, n_slots, relation, width * height, loaded, kept)
    work = _Chunks(ds, (lab, code_a, code_b), offsets, sample_idx)
    _run_tasks(len(work.chunks), work.one)
    arrays = work.arrays()
    prep = _finish(ds, fp, n_slots, relation, width * height, arrays, kept)
    if kept is not None:  # the next open maps them (written while this one goes on), and so does this one
        expect = _kept_arrays(n, n_slots, len(d), score_dtype(d.score))
        prepared_cache.save_in_background(kept, arrays, then=functools.partial(
            _map_kept, weakref.ref(prep), kept, expect, len(d)))
    return prep


def _check_detections(ds: Dataset, offsets: np.ndarray | None, sample_idx: np.ndarray | None) -> None:
    """Every detection's sample and image variant is the dataset's, else WorkstationError."""
    d = ds.detections
    n, n_var = len(ds.samples), len(ds.variant_names)
    if offsets is not None and len(offsets) != n + 1:
        raise WorkstationError("detections refer to samples that are not in the dataset")
    if len(d):
        variant = np.asarray(d.variant)
        if sample_idx is not None and (sample_idx.min() < 0 or sample_idx.max() >= n):
            raise WorkstationError("detections refer to samples that are not in the dataset")
        if variant.min() < 0 or variant.max() >= n_var:
            raise WorkstationError(
                f"detections refer to image variant {int(variant.max())} but the dataset names only "
                f"{n_var} variant(s): {', '.join(ds.variant_names)}")


class _Chunks:
    """The preparation of a dataset's samples in chunks of ``PREP_CHUNK`` (`one`, on up to two
    threads): every segment is one sample's, so a chunk of samples with its detections is
    independent of the others and fills its own part of the prepared arrays."""

    def __init__(self, ds: Dataset, codes: tuple[np.ndarray, np.ndarray, np.ndarray],
                 offsets: np.ndarray | None, sample_idx: np.ndarray | None) -> None:
        d = ds.detections
        n = len(ds.samples)
        n_var = len(ds.variant_names)
        self.ds, self.d, self.offsets, self.sample_idx = ds, d, offsets, sample_idx
        self.lab, self.code_a, self.code_b = codes
        self.n_slots = 2 * (1 + n_var)
        n_pert = self.n_pert = n_var - 1
        self.variant, self.source = np.asarray(d.variant), np.asarray(d.source)
        self.score = _Col64(d.score)
        # detections grouped by sample: the loader keeps them sorted by sample; otherwise a stable
        # permutation (each sample's detections keep their row order, the score ties' order)
        self.perm: np.ndarray | None = None
        bounds = list(range(0, n, PREP_CHUNK)) + [n]
        self.chunks = [(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        if sample_idx is None:
            assert offsets is not None
            self.det_bounds = offsets[bounds]
        else:
            if len(sample_idx) > 1 and not bool((sample_idx[1:] >= sample_idx[:-1]).all()):
                self.perm = np.argsort(sample_idx, kind="stable")
            by_sample = sample_idx if self.perm is None else sample_idx[self.perm]
            self.det_bounds = np.searchsorted(by_sample, np.array(bounds, by_sample.dtype), side="left") \
                if len(d) else np.zeros(len(bounds), np.int64)
            del by_sample
        idt = self.idt = _index_dtype(2 * len(d) + 1)
        self.row0 = np.full((4, n), -1, idt)
        self.vrow0 = np.full((2 * n_pert, n), -1, idt)
        sdt = score_dtype(d.score)
        self.score0 = np.empty((4, n), sdt)
        self.area0 = np.empty((4, n))
        self.vscore = np.empty((n_pert, n), sdt)
        self.varea = np.empty((2 * n_pert, n))
        self.s2 = np.full((2, n), -np.inf, sdt)
        self.geom = {k: np.empty(n) for k in _GEOM_1D} | {k: np.empty((n_pert, n)) for k in _GEOM_2D}
        self.orders: list[np.ndarray] = [np.zeros(0, idt)] * len(self.chunks)
        self.counts: list[np.ndarray] = [np.zeros((0, self.n_slots), np.uint8)] * len(self.chunks)  # seg_count
        self.order_base = np.zeros(n, idt) if self.perm is None else None
        self.sample_start = np.zeros(n + 1, idt)
        self.totals = [0] * len(self.chunks)

    def one(self, k: int) -> None:
        """Chunk ``k``: its segments, then each slot's first row with its score, area and geometry."""
        order_c, count2, first2 = self._segments(k)
        self._first_rows(k, order_c, count2, first2)

    def _segments(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Chunk ``k``'s detections that can matter, by segment (sample-major, slot, score
        descending): their rows (``order_c``), each segment's count and first position
        ((samples, slots) each); its part of ``orders``, ``counts`` and ``sample_start``."""
        d, n_slots, sample_idx, perm = self.d, self.n_slots, self.sample_idx, self.perm
        s0, s1 = self.chunks[k]
        nc = s1 - s0
        r0, r1 = int(self.det_bounds[k]), int(self.det_bounds[k + 1])
        # the chunk's detections: a slice of the columns when they are sorted by sample (the
        # loader's order), else gathered through the permutation
        rows_c: np.ndarray | slice = slice(r0, r1) if perm is None else perm[r0:r1].astype(np.int64)
        at: np.ndarray | None = None  # detections per sample of the chunk (sorted by sample)
        if sample_idx is None:  # each detection's sample in the chunk, from the offsets
            assert self.offsets is not None
            at = np.diff(self.offsets[s0:s1 + 1])
            si = np.repeat(np.arange(nc, dtype=np.int32), at)
        else:
            si = sample_idx[rows_c] - np.int32(s0)  # < PREP_CHUNK: int32 (int64 if the column is)
            at = np.bincount(si, minlength=nc) if self.order_base is not None else None
        src, var, lb = self.source[rows_c], self.variant[rows_c], self.lab[rows_c]
        # detections that can ever matter: primary on any variant, secondary on the original
        keep = ((src == PRIMARY) | ((src == SECONDARY) & (var == 0))) & (lb >= 0)
        role_a = np.flatnonzero(keep & (lb == self.code_a[s0:s1][si]))
        role_b = np.flatnonzero(keep & (lb == self.code_b[s0:s1][si]))
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
        o = by_segment_then_score(key, self.score[rows])  # ties: detection row order
        order_c = rows[o]
        seg = key[o]
        count = np.bincount(seg, minlength=n_slots * nc)
        del rows, key, o
        if self.order_base is not None:  # each sample's rows from its first one: small numbers
            assert at is not None
            base = r0 + np.concatenate([[0], np.cumsum(at)[:-1]]).astype(np.int64)
            self.order_base[s0:s1] = base
            rel = order_c - base[seg // n_slots]
            self.orders[k] = rel.astype(_count_dtype(int(rel.max()) if len(rel) else 0))
            del rel
        else:
            self.orders[k] = order_c.astype(self.idt)
        del seg
        # segment ends within the chunk; each sample's end is written to the chunk's own part
        # of ``sample_start`` (the chunks' offsets are added once all are done)
        ends = np.cumsum(count)
        self.sample_start[s0 + 1:s1 + 1] = ends[n_slots - 1::n_slots]
        count2 = count.reshape(nc, n_slots)
        self.counts[k] = count2.astype(_count_dtype(int(count.max()) if len(count) else 0))
        first2 = (ends - count).reshape(nc, n_slots)
        self.totals[k] = len(order_c)
        return order_c, count2, first2

    def _score_area(self, got: _Gathered, sl: int) -> tuple[np.ndarray, np.ndarray]:
        """Slot `sl`'s selected score and box area (-inf and inf where it has none)."""
        r = got.rows[sl]
        if not len(self.d):
            return np.full(len(r), -np.inf), np.full(len(r), np.inf)
        return np.where(r >= 0, got.take_score(sl), -np.inf), got.take_area(sl)

    def _first_rows(self, k: int, order_c: np.ndarray, count2: np.ndarray, first2: np.ndarray) -> None:
        """Each slot's first row (its segment's best) in chunk ``k``, with its score, its box's
        area and the geometry of the first rows; the second-best scores of primary A and B."""
        s0, s1 = self.chunks[k]
        row0_all = np.full((self.n_slots, s1 - s0), -1, np.int64)  # -1 where the slot has none
        if len(order_c):
            last = len(order_c) - 1
            for sl in range(self.n_slots):
                np.copyto(row0_all[sl], order_c[np.minimum(first2[:, sl], last)], where=count2[:, sl] > 0)
        got = _Gathered(self.d, row0_all, areas=True)  # each slot's boxes read once: geometry and areas
        g = _geometry(self.ds, row0_all, np.arange(s0, s1), got)
        got.done(0, 1, 2, 3)  # the primary and secondary boxes: their areas are kept
        for name, arr in g.items():
            self.geom[name][..., s0:s1] = arr
        del g
        self.row0[:, s0:s1] = row0_all[:4]
        self.vrow0[:, s0:s1] = row0_all[4:]
        for sl in range(4):
            self.score0[sl, s0:s1], self.area0[sl, s0:s1] = self._score_area(got, sl)
        for v in range(self.n_pert):
            sa, aa = self._score_area(got, 4 + 2 * v)
            sb, ab = self._score_area(got, 5 + 2 * v)
            self.vscore[v, s0:s1] = np.minimum(sa, sb)
            self.varea[2 * v, s0:s1], self.varea[2 * v + 1, s0:s1] = aa, ab
        del row0_all, got
        for sl in (0, 1):
            two = np.flatnonzero(count2[:, sl] >= 2)
            self.s2[sl, s0 + two] = self.score[order_c[first2[two, sl] + 1]]

    def arrays(self) -> dict[str, np.ndarray]:
        """The prepared arrays by name, once every chunk is done (as `prepared_cache` keeps them)."""
        orders, self.orders = self.orders, []
        order = (np.concatenate(orders).astype(np.result_type(*[o.dtype for o in orders]), copy=False) if orders
                 else np.zeros(0, self.idt))
        del orders
        offset = 0
        for (s0, s1), total in zip(self.chunks, self.totals):
            if offset:
                self.sample_start[s0 + 1:s1 + 1] += offset
            offset += total
        counts, self.counts = self.counts, []
        wide = np.result_type(*[c.dtype for c in counts]) if counts else np.dtype(np.uint8)
        seg_count = (np.concatenate(counts).astype(wide, copy=False) if counts
                     else np.zeros((0, self.n_slots), np.uint8))
        del counts
        return {"order": order, "sample_start": self.sample_start, "seg_count": seg_count, "row0": self.row0,
                "vrow0": self.vrow0, "score0": self.score0, "area0": self.area0, "vscore": self.vscore,
                "varea": self.varea, "s2": self.s2,
                **({"order_base": self.order_base} if self.order_base is not None else {}),
                **{f"geom_{k}": a for k, a in self.geom.items()}}


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
    mapped = prepared_cache.load(kept, expect, n_det, check=False)  # every value is compared below
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
