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
from .stages import _AreaStage, _Walked


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
    ok, slot_ok, walks = _walk_slots(ds.detections, prep, maf, near)
    vok = slot_ok[0::2] & slot_ok[1::2]
    idx, rows = _moved(prep, ok, slot_ok, walks)
    eff, veff, geom = _selected_geometry(ds, idx, rows, near)
    return _AreaStage(idx=idx, rows=rows, eff=eff, veff=veff, geom=geom, finite=_all_finite(geom),
                      ok=ok, vok=vok, walks=walks)


def _walk_slots(d: Detections, prep: Prepared, maf: float, near: _AreaStage | None
                ) -> tuple[np.ndarray, np.ndarray, list[_Walked]]:
    """Whether each slot's first row passes the area filter (``ok``: slots 0..3, ``slot_ok``: the
    variant slots), and each slot's walk past the first rows that fail it (`_Walked`), taken
    from ``near``'s walks where they answer for the threshold."""
    n_slots = prep.n_slots
    boxes = tuple(_Col64(a) for a in (d.x1, d.y1, d.x2, d.y2)) if len(d) else ()
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
            found[todo], found_area[todo], passed[todo] = _walk(prep, boxes, sl, cand[todo], thr_c[todo])
        walks[sl] = _Walked(cand, found, found_area, passed)

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


def _moved(prep: Prepared, ok: np.ndarray, slot_ok: np.ndarray, walks: list[_Walked]
           ) -> tuple[np.ndarray, np.ndarray]:
    """The samples ``idx`` (sorted) where a walk moved some slot's selection past its first row,
    and every slot's selection there (``rows``, (S, K): -1 where none passes the filter)."""
    n_slots = prep.n_slots
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
        reuse[inside] = (near.rows[:, at_near[inside]] == rows[:, inside]).all(axis=0)
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
        out = np.empty(values.shape[:-1] + (k_n,), values.dtype)
        out[..., todo_g] = values
        out[..., kept] = (getattr(near, key) if key in ("eff", "veff") else near.geom[key])[..., at_near[kept]]
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
