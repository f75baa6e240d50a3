"""The spatial method's view of the generic dataset: relation and objects A, B per sample.

A spatial prompt is a generic prompt with ``method = "spatial"``, ``entities = (A, B)`` and
``attrs = {"relation": "left_of" | "right_of" | "above" | "below"}``; its counterfactual twin
(``B r⁻¹ A``) is its ``twin_id`` and the two share a ``group_id`` (the pair).
`spatial_columns(ds)` gives the per-sample arrays the checker, metrics and audit read, computed
once per dataset from its prompts and cached in ``ds.cache``. `spatial_prompts` builds spatial
prompts and `spatial_dataset` a whole dataset from per-sample columns (importers, tests,
benchmarks). `recorded_stability(ds)` is the stability term an imported run recorded per sample
(NaN where none): the method's own table ``spatial_stability``, which its load attaches
(`store.attach_stability`) as the dataset's sample column `STABILITY`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset import Dataset, Detections, Prompts, Samples
from ...types import ORIGINAL_NAME, PRIMARY, WorkstationError
from .types import RELATION_CODE, RELATIONS

METHOD_NAME = "spatial"
_CACHE_KEY = "spatial.columns"
_LOCK_KEY = "spatial.columns_lock"
STABILITY = "spatial.recorded_stability"  # the sample column (`Dataset.sample_columns`)


def recorded_stability(ds: Dataset) -> np.ndarray:
    """The stability term each sample's imported run recorded (float64, NaN where none). A
    dataset given none has an all-NaN column, kept so that the same array is read each time
    (the checker's stages key on it)."""
    col = ds.sample_columns.get(STABILITY)
    if col is None or len(col) != ds.n:
        col = ds.sample_columns[STABILITY] = np.full(ds.n, np.nan)
    return col


def with_stability(ds: Dataset, recorded: Any) -> Dataset:
    """``ds`` with the recorded stability of each sample (NaN: none); returns ``ds``."""
    col = np.asarray(recorded, np.float64).reshape(-1)
    if len(col) != ds.n:
        raise WorkstationError(f"{len(col)} recorded stabilities for {ds.n} samples")
    ds.sample_columns[STABILITY] = col
    return ds


@dataclass
class SpatialColumns:
    relation: np.ndarray  # int8 per sample, types.RELATION_CODE (-1 where the prompt is not spatial)
    label_a: np.ndarray  # object (str), lower-case
    label_b: np.ndarray  # object (str), lower-case
    names: list[str]  # the distinct object names ("" first)
    code_a: np.ndarray  # int32: label_a's index in names
    code_b: np.ndarray  # int32: label_b's index in names


def _by_identity(objs: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """(code of each object, the distinct objects) by object identity: the loader hands out one
    attrs dict and one entity tuple per distinct value, shared by every prompt that has it, so
    a million prompts hold a few thousand distinct objects. `objs` keeps them alive (an id is
    unique among live objects)."""
    ids = np.fromiter(map(id, objs), np.uintp, len(objs))
    _, first, codes = np.unique(ids, return_index=True, return_inverse=True)
    return codes.reshape(-1), [objs[i] for i in first.tolist()]


def prompt_columns(p: Prompts) -> SpatialColumns:
    """Relation code and objects A, B of every prompt (-1 / "" for prompts of other methods),
    with A and B also as codes into their distinct names (in order of first appearance, A
    before B). Each distinct attrs dict and entity tuple is read once (`_by_identity`)."""
    n = len(p)
    rel = np.full(n, -1, np.int8)
    ca = np.zeros(n, np.int32)
    cb = np.zeros(n, np.int32)
    names: dict[str, int] = {"": 0}
    if n:
        at_code, attrs = _by_identity(p.attrs.tolist())
        en_code, ents = _by_identity(p.entities.tolist())

        def relation_code(at: Any) -> int:
            r = at.get("relation") if isinstance(at, dict) else None
            return RELATION_CODE[r] if isinstance(r, str) and r in RELATION_CODE else -1

        at_rel = np.array([relation_code(at) for at in attrs], np.int8)
        en_ok = np.array([e is not None and len(e) >= 2 for e in ents], bool)
        valid = np.flatnonzero((at_rel[at_code] >= 0) & en_ok[en_code])
        rel[valid] = at_rel[at_code[valid]]
        # names in order of first appearance: each entity tuple at its first valid prompt
        used, first = np.unique(en_code[valid], return_index=True)
        en_a = np.zeros(len(ents), np.int32)
        en_b = np.zeros(len(ents), np.int32)
        for t in used[np.argsort(first, kind="stable")].tolist():
            e = ents[t]
            en_a[t] = names.setdefault(e[0], len(names))
            en_b[t] = names.setdefault(e[1], len(names))
        ca[valid] = en_a[en_code[valid]]
        cb[valid] = en_b[en_code[valid]]
    table = np.empty(len(names), dtype=object)
    table[:] = list(names)
    return SpatialColumns(rel, table[ca], table[cb], list(names), ca, cb)


def spatial_columns(ds: Dataset) -> SpatialColumns:
    """Per-sample relation, A and B, from the samples' prompts (cached per dataset). Computed
    once even when two threads ask at once (the window's views and its background check): the
    checker keys its preparation on these arrays' identity."""
    cached = ds.cache.get(_CACHE_KEY)
    if cached is not None and len(cached.relation) == ds.n:
        return cached
    with ds.cache.setdefault(_LOCK_KEY, threading.Lock()):
        cached = ds.cache.get(_CACHE_KEY)
        if cached is not None and len(cached.relation) == ds.n:
            return cached
        return _spatial_columns(ds)


def _spatial_columns(ds: Dataset) -> SpatialColumns:
    rows = ds.prompt_rows()
    used = np.zeros(len(ds.prompts), bool)
    used[rows[rows >= 0]] = True
    if used.all():
        pc = prompt_columns(ds.prompts)
    else:  # a subset of the samples (an audit sample, a calibration): only the prompts they use
        keep = np.flatnonzero(used)
        pc = prompt_columns(ds.prompts.take(keep))
        new_row = np.full(len(ds.prompts), -1, np.int64)
        new_row[keep] = np.arange(len(keep))
        rows = np.where(rows >= 0, new_row[np.maximum(rows, 0)], -1)
    safe = np.maximum(rows, 0)
    if len(pc.relation):
        rel = pc.relation[safe]
        rel[rows < 0] = -1
    else:
        rel = np.full(ds.n, -1, np.int8)
    if ds.n and (rel < 0).any():
        bad = int(np.flatnonzero(rel < 0)[0])
        raise WorkstationError(
            f"sample {ds.samples.sample_id[bad]!r} has no spatial prompt (prompt {ds.samples.prompt_id[bad]!r} "
            "is missing or belongs to another method)")
    # every sample has a spatial prompt here
    cols = SpatialColumns(rel, pc.label_a[safe], pc.label_b[safe], pc.names, pc.code_a[safe], pc.code_b[safe])
    ds.cache[_CACHE_KEY] = cols
    return cols


def primary_score_floor(ds: Dataset) -> float | None:
    """The lowest primary detection score on the original images (None without one): below it
    a detection threshold changes nothing. Read in chunks (no whole-table temporaries) and
    cached per dataset; memory-mapped columns go back to the page cache after the pass."""
    d = ds.detections
    key = "spatial.primary_score_floor"
    hit = ds.cache.get(key)
    if hit is not None and hit[0] is d.score:
        return hit[1]
    score, source, variant = d.score, d.source, d.variant
    floor: float | None = None
    step = 1 << 20
    for lo in range(0, len(score), step):
        sl = slice(lo, lo + step)
        prim = score[sl][(source[sl] == PRIMARY) & (variant[sl] == 0)]
        if len(prim):
            low = float(prim.min())
            floor = low if floor is None or low < floor or np.isnan(low) else floor
    ds.cache[key] = (d.score, floor)
    ds.drop_mapped_pages()
    return floor


def object_codes(ds: Dataset, label_a: np.ndarray, label_b: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """(codes of A, codes of B, their names) when `label_a` and `label_b` are the dataset's
    cached `spatial_columns` (no hashing of every sample's names); None for other arrays."""
    sc = ds.cache.get(_CACHE_KEY)
    if sc is None or sc.label_a is not label_a or sc.label_b is not label_b:
        return None
    return sc.code_a, sc.code_b, sc.names


def spatial_prompts(prompt_id: Sequence[str] | np.ndarray, text: Sequence[str] | np.ndarray,
                    relation: Sequence[str] | Sequence[int] | np.ndarray,
                    label_a: Sequence[str] | np.ndarray, label_b: Sequence[str] | np.ndarray, *, counterfactual_id: Any = None,
                    pair_id: Any = None, suite: Any = "") -> Prompts:
    """Spatial prompts; ``relation`` as names or as `RELATION_CODE` codes."""
    rel = [RELATIONS[int(r)] if not isinstance(r, str) else r for r in relation]
    for r in rel:
        if r not in RELATION_CODE:
            raise WorkstationError(f"unknown relation {r!r}; expected one of {', '.join(RELATIONS)}")
    return Prompts.build(prompt_id, text, method=METHOD_NAME, suite=suite,
                         entities=[(str(a).lower(), str(b).lower()) for a, b in zip(label_a, label_b)],
                         attrs=[{"relation": r} for r in rel], twin_id=counterfactual_id, group_id=pair_id)


@dataclass
class PromptRows:
    """The columns of spatial prompts, filled a row at a time as a prompt file is read
    (`spatial_prompts` makes them prompts)."""

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    label_a: list[str] = field(default_factory=list)
    label_b: list[str] = field(default_factory=list)
    counterfactual_id: list[str] = field(default_factory=list)
    pair_id: list[str] = field(default_factory=list)

    def add(self, prompt_id: str, text: str, relation: str, a: str, b: str, twin: str, pair: str) -> None:
        for column, value in zip((self.ids, self.texts, self.relations, self.label_a, self.label_b,
                                  self.counterfactual_id, self.pair_id), (prompt_id, text, relation, a, b, twin, pair)):
            column.append(value)

    def prompts(self, suite: str) -> Prompts:
        return spatial_prompts(self.ids, self.texts, self.relations, self.label_a, self.label_b,
                               counterfactual_id=self.counterfactual_id, pair_id=self.pair_id, suite=suite)


def spatial_dataset(samples: Samples, relation: Sequence[Any] | np.ndarray, label_a: Sequence[str],
                    label_b: Sequence[str], detections: Detections | None = None,
                    variant_names: tuple[str, ...] = (ORIGINAL_NAME,), texts: Sequence[str] | None = None,
                    counterfactual_id: Any = None, pair_id: Any = None, suite: str = "",
                    recorded_stability: Any = None) -> Dataset:
    """A dataset whose prompts are made from per-sample relation / A / B columns.

    Samples sharing a prompt id must agree on its relation and objects. ``texts`` and the links
    default to empty; ``recorded_stability`` (per sample, NaN: none) to none. Meant for importers
    that read per-sample records, tests and benchmarks."""
    pid = np.asarray(samples.prompt_id).astype(str)
    uniq, first = np.unique(pid, return_index=True)
    rel_all = np.array([RELATION_CODE[r] if isinstance(r, str) else int(r) for r in relation], np.int8)
    la = np.asarray([str(x).lower() for x in label_a], dtype=object)
    lb = np.asarray([str(x).lower() for x in label_b], dtype=object)
    _, inv = np.unique(pid, return_inverse=True)
    inv = inv.reshape(-1)
    for col, name in ((rel_all, "relation"), (la, "object A"), (lb, "object B")):
        ref = col[first][inv]
        diff = np.flatnonzero(ref != col)
        if len(diff):
            i = int(diff[0])
            raise WorkstationError(f"samples of prompt {pid[i]!r} disagree on its {name}")
    pick = lambda v: None if v is None else [np.asarray(v, dtype=object)[i] for i in first]  # noqa: E731
    prompts = spatial_prompts(list(uniq), pick(texts) or [""] * len(uniq), rel_all[first], la[first], lb[first],
                              counterfactual_id=pick(counterfactual_id), pair_id=pick(pair_id), suite=suite)
    dets = detections if detections is not None else Detections.empty()
    ds = Dataset(samples, dets, prompts, variant_names)
    return ds if recorded_stability is None else with_stability(ds, recorded_stability)
