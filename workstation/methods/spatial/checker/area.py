"""Stage 2, the area stage: where the area filter (``min_area_fraction``) moves a selection past
its segment's first row, with those selections' scores and geometry; built from the cached
stage nearest in value, and the samples two stages give differently.
"""

from __future__ import annotations

import math

import numpy as np

from ....dataset import Dataset, Detections
from ....util.memory import drop_mapped_pages
from .geometry import _Col64, _geometry
from . import parallel
from .parallel import _run_tasks
from .prepared import Prepared, _all_finite
from .stages import _AreaIndex, _AreaStage, _Walked


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
    in every slot under both (the geometry depends on the selected rows alone). With the first
    rows' area index (`_area_index`), where a few first rows lie near the two thresholds (at most
    `INDEX_MAX_SHARE`), only those are compared again (`_FromNear`); else every one is."""
    index = _index_for(prep, maf, near)
    touched: np.ndarray | None = None
    if index is not None and near is not None and \
            _band_size(index, near.maf, maf) <= INDEX_MAX_SHARE * prep.n_slots * prep.n:
        ok, vok, walks, flipped, touched = _FromNear(ds.detections, prep, maf, near, index).run()
    else:
        ok, slot_ok, walks = _walk_slots(ds.detections, prep, maf, near)
        vok = slot_ok[0::2] & slot_ok[1::2]
        del slot_ok
        flipped = None
    idx, rows = _moved(prep, maf, ok, walks, near if touched is not None else None, touched)
    eff, veff, geom = _selected_geometry(ds, idx, rows, near)
    return _AreaStage(idx=idx, rows=rows, eff=eff, veff=veff, geom=geom, finite=_all_finite(geom),
                      ok=ok, vok=vok, walks=walks, maf=maf,
                      near_maf=near.maf if near is not None and flipped is not None else math.nan,
                      flipped=flipped)


# the area index answers for thresholds of min_area_fraction up to this size (beyond it, the
# rounding of a fraction could reach a bucket's width)
_INDEX_MAX_FRACTION = 1e6
# the share of the first rows (all slots together) up to which a stage is built from the nearest
# one through the area index: its first rows are read in bucket order, scattered, where the
# comparison of every one reads them in order
INDEX_MAX_SHARE = 1 / 32


def _band(index: _AreaIndex, maf_a: float, maf_b: float) -> tuple[int, int]:
    """The buckets whose first rows may compare differently with the thresholds of ``maf_a``
    and ``maf_b``: those of the two values and one on either side (first, last)."""
    n_b = index.BUCKETS
    qa, qb = (min(max(math.floor(m * n_b), 0), n_b - 1) for m in (maf_a, maf_b))
    return max(min(qa, qb) - 1, 0), min(max(qa, qb) + 1, n_b - 1)


def _band_size(index: _AreaIndex, maf_a: float, maf_b: float) -> int:
    """How many first rows (all slots together) lie in the buckets of `_band`."""
    lo, hi = _band(index, maf_a, maf_b)
    return int((index.start[:, hi + 1] - index.start[:, lo]).sum())


def _index_for(prep: Prepared, maf: float, near: _AreaStage | None) -> _AreaIndex | None:
    """The first rows' area index where it can build a stage of ``maf`` from ``near``: both
    values finite and at most `_INDEX_MAX_FRACTION` in size, every image's W*H finite and > 0,
    some detections; None where not (every first row is compared)."""
    if (near is None or not near.walks or prep.n == 0 or not prep.order.size
            or not all(math.isfinite(m) and abs(m) <= _INDEX_MAX_FRACTION for m in (maf, near.maf))):
        return None
    stages = prep.stages
    with stages.lock:
        index = stages.area_index
    if index is None:
        built = _area_index(prep)
        with stages.lock:
            stages.area_index = index = built if built is not None else False
    return index if isinstance(index, _AreaIndex) else None


def _area_index(prep: Prepared) -> _AreaIndex | None:
    """Each slot's samples by bucket of their first row's area as a fraction of the image (W*H):
    bucket floor(fraction * BUCKETS), clipped to [0, BUCKETS - 1]; an empty slot (an infinite
    area) or a NaN area in bucket BUCKETS, where no threshold finds a small first row. None
    where an image's W*H is not finite and > 0."""
    wh: np.ndarray | float
    if prep.wh_scalar is not None:
        wh = prep.wh_scalar
        if not (math.isfinite(wh) and wh > 0):
            return None
    else:
        assert prep.wh is not None
        wh = prep.wh
        if not bool((np.isfinite(wh) & (wh > 0)).all()):
            return None
    n_b = _AreaIndex.BUCKETS
    perm = np.empty((prep.n_slots, prep.n), np.int32)
    start = np.empty((prep.n_slots, n_b + 2), np.int64)

    def one(sl: int) -> None:
        area = prep.area0[sl] if sl < 4 else prep.varea[sl - 4]
        with np.errstate(invalid="ignore", over="ignore"):
            q = np.floor(area / wh * n_b)
            np.clip(q, 0, n_b - 1, out=q)
        q[~(area < np.inf)] = n_b  # empty slots (+inf) and NaN areas
        codes = q.astype(np.uint16)
        del q
        perm[sl] = np.argsort(codes, kind="stable")  # a radix sort of 16-bit keys
        start[sl, 0] = 0
        np.cumsum(np.bincount(codes, minlength=n_b + 1), out=start[sl, 1:])

    _run_tasks(prep.n_slots, one)
    return _AreaIndex(perm=perm, start=start)


class _FromNear:
    """The first rows' filter outcomes and the walks of the area stage of ``maf`` from those of
    the stage ``near`` (`run`): only the first rows in the buckets between the two thresholds,
    and one on either side, are compared again (every other one is below both or above both);
    the samples whose first row in some slot turns small or large leave or join that slot's
    walks, and the walks go on as `_walk_slots`' from ``near``'s."""

    def __init__(self, d: Detections, prep: Prepared, maf: float, near: _AreaStage,
                 index: _AreaIndex) -> None:
        self.d, self.prep, self.maf, self.near, self.index = d, prep, maf, near, index
        self.band = _band(index, near.maf, maf)
        self.boxes = tuple(_Col64(a) for a in (d.x1, d.y1, d.x2, d.y2))
        n_slots = prep.n_slots
        # each slot's samples whose first row turned small or large, and whether it is small now
        self.changed: list[np.ndarray] = [np.zeros(0, np.int64)] * n_slots
        self.small: list[np.ndarray] = [np.zeros(0, bool)] * n_slots
        self.walked: list[np.ndarray] = [np.zeros(0, np.int64)] * n_slots  # samples walked again
        self.walks: list[_Walked] = list(near.walks)

    def run(self) -> tuple[np.ndarray, np.ndarray, list[_Walked], np.ndarray, np.ndarray]:
        """(ok, vok, walks, the samples whose first row turned small or large in some slot, and
        those samples with the ones walked again: elsewhere the selections are ``near``'s)."""
        prep, near = self.prep, self.near
        _run_tasks(prep.n_slots, self._slot)
        ok = near.ok.copy()
        for sl in range(4):
            ok[sl, self.changed[sl]] = ~self.small[sl]
        vok = near.vok.copy()
        thr = self.maf * prep.wh_scalar if prep.wh_scalar is not None else None
        for v in range(len(vok)):
            c = np.union1d(self.changed[4 + 2 * v], self.changed[5 + 2 * v])
            if len(c):
                t = thr if thr is not None else _area_threshold(prep, self.maf, c)
                with np.errstate(invalid="ignore"):
                    vok[v, c] = ~(prep.varea[2 * v, c] < t) & ~(prep.varea[2 * v + 1, c] < t)
        return ok, vok, self.walks, _union(prep.n, self.changed), _union(prep.n, self.changed + self.walked)

    def _slot(self, sl: int) -> None:
        prep, index, near = self.prep, self.index, self.near
        lo, hi = self.band
        c = index.perm[sl, index.start[sl, lo]:index.start[sl, hi + 1]].astype(np.int64)
        area = (prep.area0[sl] if sl < 4 else prep.varea[sl - 4])[c]
        with np.errstate(invalid="ignore"):
            small = area < _area_threshold(prep, self.maf, c)
            was = area < _area_threshold(prep, near.maf, c)
        turned = small != was
        self.changed[sl], self.small[sl] = c[turned], small[turned]
        cand = near.walks[sl].cand  # the same array when no first row turned (`_walk_from` reuses its walk)
        if turned.any():
            multi = prep.seg_count[c, sl] >= 2  # with a later row to move to
            joined, left = c[turned & small & multi], c[turned & was & multi]
            if len(left):
                cand = cand[~np.isin(cand, left, assume_unique=True)]
            if len(joined):
                cand = np.sort(np.concatenate([cand, joined]))
        self.walks[sl], self.walked[sl] = _walk_from(prep, self.boxes, sl, self.maf, cand, near)


def _walk_from(prep: Prepared, boxes: tuple[_Col64, ...], sl: int, maf: float, cand: np.ndarray,
               near: _AreaStage | None) -> tuple[_Walked, np.ndarray]:
    """Slot ``sl``'s walk under ``maf`` of the samples ``cand`` (sorted; first row small, a later
    row to move to): taken from ``near``'s walk where it answers for the threshold, else walked
    (those samples, the second value)."""
    thr = _area_threshold(prep, maf, cand)
    thr_c = thr if isinstance(thr, np.ndarray) else np.full(len(cand), thr)
    found = np.full(len(cand), -1, np.int64)
    found_area = np.full(len(cand), np.nan)
    passed = np.full(len(cand), -np.inf)
    todo = np.arange(len(cand))
    if near is not None and near.walks and len(near.walks[sl].cand) and len(cand):
        w = near.walks[sl]
        if cand is w.cand:  # the same samples (`_FromNear`: no first row turned)
            w_found, w_area, w_passed = w.found, w.found_area, w.passed
            was: np.ndarray | bool = True
        else:
            at = np.minimum(np.searchsorted(w.cand, cand), len(w.cand) - 1)
            was = w.cand[at] == cand
            w_found, w_area, w_passed = w.found[at], w.found_area[at], w.passed[at]
        with np.errstate(invalid="ignore"):  # a NaN threshold or area: walked again
            same = was & (w_passed < thr_c) & ((w_found < 0) | ~(w_area < thr_c))
        keep = np.flatnonzero(same)
        found[keep], found_area[keep], passed[keep] = w_found[keep], w_area[keep], w_passed[keep]
        todo = np.flatnonzero(~same)
    if len(todo):
        found[todo], found_area[todo], passed[todo] = _walk(prep, boxes, sl, cand[todo], thr_c[todo])
    return _Walked(cand, found, found_area, passed), cand[todo]


def _walk_slots(d: Detections, prep: Prepared, maf: float, near: _AreaStage | None
                ) -> tuple[np.ndarray, np.ndarray, list[_Walked]]:
    """Whether each slot's first row passes the area filter (``ok``: slots 0..3, ``slot_ok``: the
    variant slots), and each slot's walk past the first rows that fail it (`_Walked`), taken
    from ``near``'s walks where they answer for the threshold."""
    n_slots = prep.n_slots
    boxes = tuple(_Col64(a) for a in (d.x1, d.y1, d.x2, d.y2)) if len(d) else ()
    thr_rows = _area_threshold(prep, maf)
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
        walks[sl] = _walk_from(prep, boxes, sl, maf, cand, near)[0]

    _run_tasks(n_slots, find)
    return ok, slot_ok, walks


def _walk(prep: Prepared, boxes: tuple[_Col64, ...], sl: int, cand: np.ndarray, thr_c: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples ``cand`` (each with a later row) whose first row in slot ``sl`` fails the area
    filter (thresholds ``thr_c``; ``boxes``: the x1, y1, x2, y2 columns): the first later row that
    passes it (-1 where none), its area and the largest area passed over before it. One row per
    step, vectorised."""
    x1, y1, x2, y2 = boxes
    pos, end = prep.segment(cand, sl)
    pos += 1
    found = np.full(len(cand), -1, np.int64)
    found_area = np.full(len(cand), np.nan)
    passed = np.full(len(cand), -np.inf)
    active = np.arange(len(cand))
    while len(active):
        rr = prep.rows_at(pos[active], cand[active])
        ar = (x2[rr] - x1[rr]) * (y2[rr] - y1[rr])
        hit = ~(ar < thr_c[active])
        found[active[hit]] = rr[hit]
        found_area[active[hit]] = ar[hit]
        miss = active[~hit]
        passed[miss] = np.maximum(passed[miss], ar[~hit])
        active = miss[pos[miss] + 1 < end[miss]]
        pos[active] += 1
    return found, found_area, passed


def _moved(prep: Prepared, maf: float, ok: np.ndarray, walks: list[_Walked], near: _AreaStage | None = None,
           touched: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The samples ``idx`` (sorted) where a walk moved some slot's selection past its first row,
    and every slot's selection there (``rows``, (S, K): -1 where none passes the filter). With
    ``near`` and ``touched`` (sorted: the samples whose first rows' outcomes or walks may differ
    from ``near``'s), the selections of the others among ``near``'s samples are ``near``'s."""
    n_slots = prep.n_slots
    any_moved = np.zeros(prep.n, bool)
    for w in walks:
        any_moved[w.cand[w.found >= 0]] = True
    idx = np.flatnonzero(any_moved)
    del any_moved
    k_n = len(idx)
    # every slot's selection: the first row where it passes the filter, the row moved to, or none
    rows = np.empty((n_slots, k_n), np.int64)
    fresh = idx
    fresh_at: np.ndarray | slice = slice(None)
    if near is not None and touched is not None and k_n and len(near.idx):
        at = np.minimum(np.searchsorted(near.idx, idx), len(near.idx) - 1)
        reuse = near.idx[at] == idx
        if len(touched):
            reuse &= touched[np.minimum(np.searchsorted(touched, idx), len(touched) - 1)] != idx
        rows[:] = np.take(near.rows, at, axis=1)  # (read in order; the others' are written below)
        fresh_at = np.flatnonzero(~reuse)
        fresh = idx[fresh_at]
    if len(fresh):
        rows[:4, fresh_at] = np.where(np.take(ok, fresh, axis=1), np.take(prep.row0, fresh, axis=1), -1)
        with np.errstate(invalid="ignore"):  # the variant slots' first rows (a NaN area is not small)
            small = np.take(prep.varea, fresh, axis=1) < _area_threshold(prep, maf, fresh)
        rows[4:, fresh_at] = np.where(small, -1, np.take(prep.vrow0, fresh, axis=1))
    if fresh is not idx and len(fresh) < k_n:  # the others: near's walks, rows written above
        for sl, w in enumerate(walks):
            moved = w.cand[w.found >= 0]
            if not len(fresh) or not len(moved):
                continue
            at_f = np.minimum(np.searchsorted(fresh, moved), len(fresh) - 1)
            hit = fresh[at_f] == moved
            rows[sl, np.asarray(fresh_at)[at_f[hit]]] = w.found[w.found >= 0][hit]
        return idx, rows
    for sl, w in enumerate(walks):
        got = w.found >= 0
        if got.any():
            rows[sl, np.searchsorted(idx, w.cand[got])] = w.found[got]
    return idx, rows


def _selected_geometry(ds: Dataset, idx: np.ndarray, rows: np.ndarray, near: _AreaStage | None
                       ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The scores (``eff``: slots 0..3, ``veff``: the lower of each variant's A and B) and the
    geometry of the selections ``rows`` at samples ``idx``."""
    d = ds.detections
    k_n = len(idx)
    if len(d):
        score = _Col64(d.score)
    # the selections' scores and geometry: taken from `near` where a sample's selections are
    # its there, else read and computed
    reuse = np.zeros(k_n, bool)
    at_near = np.zeros(k_n, np.int64)
    if near is not None and k_n and len(near.idx):
        at_near = np.minimum(np.searchsorted(near.idx, idx), len(near.idx) - 1)
        inside = np.flatnonzero(near.idx[at_near] == idx)
        reuse[inside] = (np.take(near.rows, at_near[inside], axis=1)
                         == np.take(rows, inside, axis=1)).all(axis=0)
    todo_g = np.flatnonzero(~reuse)
    kept = np.flatnonzero(reuse)
    parts: list[dict[str, np.ndarray]] = [{} for _ in range(-(-len(todo_g) // parallel.CHUNK))]

    def geometry(k: int) -> None:
        t = todo_g[k * parallel.CHUNK:(k + 1) * parallel.CHUNK]
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
        # near's values at every position (read in order), then the computed ones over them
        out = np.take(getattr(near, key) if key in ("eff", "veff") else near.geom[key], at_near, axis=-1)
        out[..., todo_g] = values
        merged[key] = out
    eff, veff = merged.pop("eff"), merged.pop("veff")
    return eff, veff, merged


def area_stage(ds: Dataset, prep: Prepared, maf: float) -> _AreaStage:
    """The area stage of ``min_area_fraction`` ``maf``: cached in ``prep.stages`` (the last
    `_Stages.MAX_AREA`), else built from the cached one nearest in value."""
    stages = prep.stages
    with stages.lock:
        hit = stages.area.get(maf)
        if hit is not None:
            stages.area.move_to_end(maf)
            return hit
        # the cached stage nearest in value: most samples' selections are the same there
        near = min(stages.area.items(), key=lambda kv: abs(kv[0] - maf) if math.isfinite(kv[0] - maf)
                   else math.inf, default=(None, None))[1]
    stage = _build_area_stage(ds, prep, maf, near)
    with stages.lock:
        stages.area[maf] = stage
        while len(stages.area) > stages.MAX_AREA:
            stages.area.popitem(last=False)
    # kept arrays mapped from the cache (prepared_cache) that no move of a slider but the
    # area filter's reads again go back to the page cache: ≈0.1 GB of resident memory at 1M
    drop_mapped_pages(prep.area_only())
    return stage


def _changed_by_area(a: _AreaStage, b: _AreaStage) -> np.ndarray:
    """The samples (sorted) whose selection and decision inputs differ between the area stages
    ``a`` and ``b`` (two values of the area filter), or a few more: a first row that passes one
    and not the other (where one was built from the other, among the first rows it compared
    again), or moved selections that are not the same in both. Every other sample reads the
    same values under both."""
    parts: list[np.ndarray] = []
    for x, y in ((a, b), (b, a)):
        if x.flipped is not None and x.near_maf == y.maf:
            parts.append(x.flipped)
            break
    else:
        changed = (a.ok != b.ok).any(axis=0)
        changed |= (a.vok != b.vok).any(axis=0)
        parts.append(np.flatnonzero(changed))
    for x, y in ((a, b), (b, a)):
        if not len(x.idx):
            continue
        if not len(y.idx):
            parts.append(x.idx)
            continue
        at = np.minimum(np.searchsorted(y.idx, x.idx), len(y.idx) - 1)
        same = y.idx[at] == x.idx
        same[same] = (y.rows[:, at[same]] == x.rows[:, same]).all(axis=0)
        parts.append(x.idx[~same])
    return _union(len(a.ok[0]), parts)


def _union(n: int, parts: list[np.ndarray]) -> np.ndarray:
    """The sorted union of arrays of samples (of ``n``), int64."""
    total = sum(len(p) for p in parts)
    if total * 16 < n:  # a few: sorted
        a = np.sort(np.concatenate([np.asarray(p, np.int64) for p in parts] or [np.zeros(0, np.int64)]))
        return a[np.concatenate([[True], a[1:] != a[:-1]])] if len(a) else a
    mark = np.zeros(n, bool)
    for p in parts:
        mark[p] = True
    return np.flatnonzero(mark)
