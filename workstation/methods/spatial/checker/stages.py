"""What the checker keeps between evaluations of one prepared dataset: the area stages, the
selection stages and weak references to recent results (`_Stages`), and the keys that say
which of them a config may reuse (stage 5 of the package docstring).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ....dataset import Dataset
from ....util.refs import weak
from ..config import CheckerConfig
from ..data import recorded_stability
from .verdicts import VerdictArrays


def _same_refs(a: tuple[Callable[[], Any], ...], b: tuple[Callable[[], Any], ...]) -> bool:
    return len(a) == len(b) and all(x() is not None and x() is y() for x, y in zip(a, b))


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
    maf: float = math.nan  # its min_area_fraction
    # built from the stage of min_area_fraction ``near_maf`` (NaN: from no stage): ``flipped`` holds
    # (sorted) every sample whose first rows may pass the filter under one value and not the other
    # (a superset: elsewhere ``ok`` and ``vok`` are that stage's), None where it is not known
    near_maf: float = math.nan
    flipped: np.ndarray | None = field(default=None, repr=False)


@dataclass
class _AreaIndex:
    """Every slot's samples ordered by the area of the slot's first row as a fraction of the
    image, in ``BUCKETS`` buckets of equal width (`area._area_index`): ``perm[sl]`` holds the
    samples bucket by bucket, bucket j at ``perm[sl, start[sl, j]:start[sl, j + 1]]``; values
    of 1 and above in the last bucket but one, and an empty slot or a NaN area in the last. A
    threshold's bucket and its neighbours hold every first row whose comparison with it is
    close; the buckets below it are smaller, those above larger."""

    BUCKETS = 4096
    perm: np.ndarray  # (S, N) int32
    start: np.ndarray  # (S, BUCKETS + 2) int64


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
        # the first rows' areas by bucket, built at the first area stage built from another
        # (False: this preparation's image sizes do not allow one)
        self.area_index: _AreaIndex | None | bool = None

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
            if isinstance(self.area_index, _AreaIndex):
                seen[id(self.area_index.perm)] = self.area_index.perm.nbytes
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
    flags = tuple(weak(a) for a in (s.has_perturbed, s.has_secondary, recorded_stability(ds)))
    return key, flags, tuple(getattr(cfg, f) for f in _CONF_FIELDS)
