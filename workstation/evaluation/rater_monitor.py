"""The rater monitor: per rater of one label task, from the label log — how many items, how fast,
how well they agree with their peers, with the automatic judge and with gold, and whether that
changes between the start and the end of their work (docs/statistics.md, "The rater monitor").

Per rater:

* **items**: targets with a standing label of theirs (their latest selected event carries a value);
* **median seconds per item**: the gaps between their consecutive labelling events (time order of
  ``created_at``) within a session; a gap longer than ``session_gap`` (10 minutes) ends a session
  and is not counted (a pause, not a judgement). A rater with at least ``SPEED_MIN_ITEMS`` timed
  gaps and a median below ``SPEEDER_FRACTION`` (⅓) of their peers' median (the median of the
  other raters' medians) is flagged a **speeder**;
* **agreement with peers**: every pair (their label, a peer's label) of an item both labelled:
  percent agreement and Cohen's κ over those pairs (the quadratic weighted κ on ordinal scales),
  with the prompt-clustered interval; beside it the group's α without them (Krippendorff's, nominal
  or ordinal) next to the group's α with everyone;
* **agreement with the judge**: the same against the automatic judge's outcome of each target
  (``judge``: target → outcome in the task's values; None or absent where it gave none);
* **gold accuracy**: the share of their labelled gold items (``gold``: target → its known answer,
  None where there is none) they answered right, with its Wilson interval;
* **drift**: their standing labels in time order, the first third against the last third
  (⌊n / 3⌋ labels each): agreement with peers on each, and gold accuracy on each.

Which events count is a `LabelSelection` (its annotators, audit sets, free labelling and re-checks;
the consensus rule plays no part here). The task's agreement among all raters (α, Fleiss' κ,
AC1, AC2) comes with the monitor (`workstation.evaluation.rater_agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..types import WorkstationError
from .intervals import N_BOOT, SEED, UNDEFINED, Estimate, kappa_estimate, ratio_estimates, wilson_estimate
from .rater_agreement import krippendorff_alpha, many_rater_agreement
from .selection import LabelSelection

__all__ = ["SESSION_GAP_S", "SPEEDER_FRACTION", "SPEED_MIN_ITEMS", "RaterFigures", "Monitor", "Standing",
           "standing_labels", "rater_monitor", "session_gaps"]

#: a gap between two labelling events longer than this (seconds) ends a session
SESSION_GAP_S = 600.0
#: a rater whose median seconds per item is below this share of their peers' median is a speeder
SPEEDER_FRACTION = 1.0 / 3.0
#: timed gaps a rater needs before their speed is judged
SPEED_MIN_ITEMS = 5
_RECHECK = "recheck"
_RESTORE = "undo-restore"
_NAN = float("nan")


@dataclass(frozen=True)
class Standing:
    """The labels that stand (one per target and rater) and the labelling events' times."""

    target: np.ndarray  # object: target id per standing label
    annotator: np.ndarray  # object
    code: np.ndarray  # int64: index of the value in the task's values
    time: np.ndarray  # datetime64[us] of the standing event (NaT when unknown)
    event_id: np.ndarray  # int64
    #: rater → the times of their labelling events with a value (every pass, re-checks included)
    event_times: dict[str, np.ndarray] = field(default_factory=dict)


def _column(events: Mapping[str, Any], name: str, n: int, default: Any = None) -> list[Any]:
    col = events.get(name)
    if col is None:
        return [default] * n
    out = list(col)
    if len(out) != n:
        raise WorkstationError(f"the label log's column {name} has {len(out)} entries for {n} events")
    return out


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _times(values: Sequence[Any]) -> np.ndarray:
    out = np.full(len(values), np.datetime64("NaT"), dtype="datetime64[us]")
    for i, v in enumerate(values):
        if _missing(v):
            continue
        try:
            out[i] = np.datetime64(v, "us")
        except (TypeError, ValueError):
            raise WorkstationError(f"label event {i + 1}: created_at {str(v)[:40]!r} is not a time") from None
    return out


def standing_labels(events: Mapping[str, Any], values: Sequence[str],
                    selection: LabelSelection | None = None) -> Standing:
    """Per (target, rater) their latest selected event, when it carries one of ``values`` (an event
    without a value takes the label back; a value outside the task's is no label). ``events``: the
    label log's columns of one task (`LabelsRepo.table`), in event order."""
    sel = replace(selection, rule="latest") if selection is not None else LabelSelection()
    n = len(events.get("target_id", ()))
    target = _column(events, "target_id", n)
    ann = _column(events, "annotator", n)
    val = _column(events, "value", n)
    aid = _column(events, "audit_set_id", n)
    src = _column(events, "source", n)
    eid = _column(events, "event_id", n)
    times = _times(_column(events, "created_at", n))
    index = {str(v): k for k, v in enumerate(values)}
    last: dict[tuple[str, str], int] = {}
    valued: dict[str, list[int]] = {}
    for i in range(n):
        a = str(ann[i])
        set_id = None if _missing(aid[i]) else int(aid[i])
        s = None if src[i] is None else str(src[i])
        if not sel.counts(a, set_id, s):
            continue
        last[(str(target[i]), a)] = i
        if not _missing(val[i]) and not (sel.restricted and s == _RESTORE):
            valued.setdefault(a, []).append(i)
    keep = []
    for (_t, _a), i in last.items():
        v = val[i]
        if _missing(v) or (sel.restricted and src[i] == _RESTORE) or str(v) not in index:
            continue
        keep.append(i)
    keep.sort()
    ev_times = {}
    for a, idx in valued.items():
        t = times[idx]
        ev_times[a] = np.sort(t[~np.isnat(t)])
    return Standing(
        target=np.array([str(target[i]) for i in keep], dtype=object),
        annotator=np.array([str(ann[i]) for i in keep], dtype=object),
        code=np.array([index[str(val[i])] for i in keep], np.int64),
        time=times[keep] if keep else np.zeros(0, "datetime64[us]"),
        event_id=np.array([int(eid[i]) if eid[i] is not None else i for i in keep], np.int64),
        event_times=ev_times,
    )


def session_gaps(times: np.ndarray, session_gap: float = SESSION_GAP_S) -> tuple[np.ndarray, int]:
    """(seconds between consecutive events within a session, number of sessions) of one rater's
    event times; a gap above ``session_gap`` seconds starts a new session and is not counted."""
    t = np.sort(np.asarray(times, dtype="datetime64[us]"))
    t = t[~np.isnat(t)]
    if len(t) == 0:
        return np.zeros(0), 0
    d = np.diff(t).astype(np.int64) / 1e6
    breaks = d > session_gap
    return d[~breaks], int(breaks.sum()) + 1


@dataclass(frozen=True)
class RaterFigures:
    """One rater's row of the monitor (module docstring)."""

    annotator: str
    items: int
    events: int
    sessions: int
    timed: int  # gaps counted in the median
    median_seconds: float
    speeder: bool
    peer_pairs: int
    peer_percent: Estimate
    peer_kappa: Estimate
    alpha_without: float
    judge_percent: Estimate = UNDEFINED
    judge_kappa: Estimate = UNDEFINED
    gold: Estimate = UNDEFINED  # accuracy on gold items, Wilson
    drift_peer_first: Estimate = UNDEFINED
    drift_peer_last: Estimate = UNDEFINED
    drift_gold_first: Estimate = UNDEFINED
    drift_gold_last: Estimate = UNDEFINED

    @property
    def drift_peer(self) -> float:
        """Agreement with peers, last third minus first third (NaN when either is undefined)."""
        return self.drift_peer_last.value - self.drift_peer_first.value

    @property
    def drift_gold(self) -> float:
        return self.drift_gold_last.value - self.drift_gold_first.value

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"annotator": self.annotator, "items": self.items, "events": self.events,
                               "sessions": self.sessions, "timed": self.timed,
                               "median_seconds": self.median_seconds, "speeder": self.speeder,
                               "peer_pairs": self.peer_pairs, "alpha_without": self.alpha_without,
                               "drift_peer": self.drift_peer, "drift_gold": self.drift_gold}
        for name in ("peer_percent", "peer_kappa", "judge_percent", "judge_kappa", "gold", "drift_peer_first",
                     "drift_peer_last", "drift_gold_first", "drift_gold_last"):
            out[name] = getattr(self, name).to_dict()
        return out


@dataclass(frozen=True)
class Monitor:
    """The monitor of one task: a row per rater, the group's figures and the settings used."""

    task: str
    values: tuple[str, ...]
    ordinal: bool
    rows: tuple[RaterFigures, ...]
    alpha_all: float  # the group's α (nominal, or ordinal for an ordinal scale)
    agreement: dict[str, Estimate]  # the many-rater statistics with their clustered intervals
    items: int  # targets with a standing label
    rated_twice: int  # targets with at least two raters' labels
    group_median_seconds: float  # the median of the raters' medians
    session_gap: float = SESSION_GAP_S
    speeder_fraction: float = SPEEDER_FRACTION

    def row(self, annotator: str) -> RaterFigures:
        for r in self.rows:
            if r.annotator == annotator:
                return r
        raise KeyError(annotator)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "values": list(self.values), "ordinal": self.ordinal, "items": self.items,
                "rated_twice": self.rated_twice, "alpha_all": self.alpha_all,
                "group_median_seconds": self.group_median_seconds, "session_gap_seconds": self.session_gap,
                "speeder_fraction": self.speeder_fraction,
                "agreement": {k: e.to_dict() for k, e in self.agreement.items()},
                "raters": [r.to_dict() for r in self.rows]}


def _unit_fn(unit_of: Callable[[str], Hashable] | Mapping[str, Hashable] | None) -> Callable[[str], Hashable]:
    if unit_of is None:
        return lambda t: t
    if isinstance(unit_of, Mapping):
        m = unit_of
        return lambda t: m.get(t, t)
    return unit_of


def _percent(x: np.ndarray, y: np.ndarray, unit: list[Hashable], n_boot: int, seed: int) -> Estimate:
    if not len(x):
        return UNDEFINED
    return ratio_estimates((x == y).astype(float), np.ones(len(x)), np.array(unit, dtype=object) if unit else None,
                           n_boot=n_boot, seed=seed)[0]


def _kappa(x: np.ndarray, y: np.ndarray, unit: list[Hashable], k: int, ordinal: bool, n_boot: int,
           seed: int) -> Estimate:
    """Cohen's κ (quadratic weighted on an ordinal scale) of code pairs, clustered by ``unit``."""
    if not len(x):
        return UNDEFINED
    return kappa_estimate(x, y, np.array(unit, dtype=object), categories=k, weighted=ordinal, n_boot=n_boot,
                          seed=seed)


def _thirds(order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = len(order) // 3
    if k == 0:
        return order[:0], order[:0]
    return order[:k], order[-k:]


def rater_monitor(events: Mapping[str, Any], values: Sequence[str], *, task: str = "", ordinal: bool = False,
                  selection: LabelSelection | None = None,
                  unit_of: Callable[[str], Hashable] | Mapping[str, Hashable] | None = None,
                  judge: Mapping[str, str | None] | None = None, gold: Mapping[str, str | None] | None = None,
                  session_gap: float = SESSION_GAP_S, speeder_fraction: float = SPEEDER_FRACTION,
                  n_boot: int = N_BOOT, seed: int = SEED) -> Monitor:
    """The monitor of one task's label log (module docstring). ``values``: the task's values in
    order (an ordinal scale's from low to high); ``unit_of``: the prompt of a target (a function or
    a mapping; the target itself when None), the unit of every interval; ``judge`` / ``gold``:
    target → the automatic judge's outcome / the gold answer (None or absent: none)."""
    if not session_gap > 0:
        raise WorkstationError(f"the session gap must be a positive number of seconds, got {session_gap!r}")
    vals = tuple(str(v) for v in values)
    k = len(vals)
    index = {v: i for i, v in enumerate(vals)}
    st = standing_labels(events, vals, selection)
    unit = _unit_fn(unit_of)
    targets = list(dict.fromkeys(st.target.tolist()))
    t_index = {t: i for i, t in enumerate(targets)}
    raters = sorted(set(st.annotator.tolist()) | set(st.event_times))
    r_index = {a: j for j, a in enumerate(raters)}
    mat = np.full((len(targets), len(raters)), np.nan)
    for t, a, c in zip(st.target.tolist(), st.annotator.tolist(), st.code.tolist()):
        mat[t_index[t], r_index[a]] = float(c)
    units = np.array([unit(t) for t in targets], dtype=object)
    cats = np.arange(k, dtype=np.float64)
    metric = "ordinal" if ordinal else "nominal"
    alpha_all = krippendorff_alpha(mat, metric, cats) if len(raters) else _NAN
    agreement = many_rater_agreement(mat, units if len(targets) else None, categories=cats, ordinal=ordinal,
                                     n_boot=n_boot, seed=seed)

    def code_of(m: Mapping[str, str | None] | None, t: str) -> int:
        if m is None:
            return -1
        v = m.get(t)
        return -1 if v is None else index.get(str(v), -1)

    # speed
    medians: dict[str, float] = {}
    timing: dict[str, tuple[int, int, int]] = {}
    for a in raters:
        times = st.event_times.get(a, np.zeros(0, "datetime64[us]"))
        gaps, sessions = session_gaps(times, session_gap)
        timing[a] = (len(times), sessions, len(gaps))
        medians[a] = float(np.median(gaps)) if len(gaps) else _NAN
    judged = {a: medians[a] for a in raters if timing[a][2] >= SPEED_MIN_ITEMS}
    group_median = float(np.median(list(medians[a] for a in raters if math.isfinite(medians[a])))) \
        if any(math.isfinite(m) for m in medians.values()) else _NAN

    rows = []
    for a in raters:
        j = r_index[a]
        mine = np.flatnonzero(np.isfinite(mat[:, j]))
        # time order of their standing labels
        sel = st.annotator == a
        when = st.time[sel].astype(np.int64)
        when = np.where(np.isnat(st.time[sel]), np.iinfo(np.int64).max, when)  # unknown times last
        row_of = np.array([t_index[t] for t in st.target[sel].tolist()], np.int64)
        order = row_of[np.lexsort((st.event_id[sel], when))]

        def peer_pairs(items: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
            """(their code, a peer's code, the item's unit) for every peer's label of ``items``."""
            sub = mat[items]
            xs, ys, us = [], [], []
            for jj in range(len(raters)):
                if jj == j:
                    continue
                both = np.isfinite(sub[:, j]) & np.isfinite(sub[:, jj])
                xs.append(sub[both, j])
                ys.append(sub[both, jj])
                us.append(units[items[both]])
            if not xs:
                return np.zeros(0, np.int64), np.zeros(0, np.int64), []
            return (np.concatenate(xs).astype(np.int64), np.concatenate(ys).astype(np.int64),
                    np.concatenate(us).tolist())

        def versus(m: Mapping[str, str | None] | None, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
            xs, ys, us = [], [], []
            for i in items.tolist():
                c = code_of(m, targets[i])
                if c >= 0:
                    xs.append(int(mat[i, j]))
                    ys.append(c)
                    us.append(units[i])
            return np.array(xs, np.int64), np.array(ys, np.int64), us

        def gold_acc(items: np.ndarray) -> Estimate:
            x, y, _u = versus(gold, items)
            return wilson_estimate(int((x == y).sum()), len(x)) if gold is not None else UNDEFINED

        px, py, pu = peer_pairs(mine)
        jx, jy, ju = versus(judge, mine)
        first, last = _thirds(order)
        f_x, f_y, f_u = peer_pairs(first)
        l_x, l_y, l_u = peer_pairs(last)
        others = [jj for jj in range(len(raters)) if jj != j]
        alpha_wo = krippendorff_alpha(mat[:, others], metric, cats) if others else _NAN
        peers_med = [m for b, m in judged.items() if b != a]
        speeder = bool(a in judged and peers_med and judged[a] < speeder_fraction * float(np.median(peers_med)))
        n_ev, sessions, timed = timing[a]
        rows.append(RaterFigures(
            annotator=a, items=len(mine), events=n_ev, sessions=sessions, timed=timed, median_seconds=medians[a],
            speeder=speeder, peer_pairs=len(px), peer_percent=_percent(px, py, pu, n_boot, seed),
            peer_kappa=_kappa(px, py, pu, k, ordinal, n_boot, seed), alpha_without=alpha_wo,
            judge_percent=_percent(jx, jy, ju, n_boot, seed) if judge is not None else UNDEFINED,
            judge_kappa=_kappa(jx, jy, ju, k, ordinal, n_boot, seed) if judge is not None else UNDEFINED,
            gold=gold_acc(mine),
            drift_peer_first=_percent(f_x, f_y, f_u, n_boot, seed),
            drift_peer_last=_percent(l_x, l_y, l_u, n_boot, seed),
            drift_gold_first=gold_acc(first), drift_gold_last=gold_acc(last),
        ))
    return Monitor(task=task, values=vals, ordinal=ordinal, rows=tuple(rows), alpha_all=alpha_all,
                   agreement=agreement, items=len(targets),
                   rated_twice=int((np.isfinite(mat).sum(axis=1) >= 2).sum()) if len(targets) else 0,
                   group_median_seconds=group_median, session_gap=session_gap, speeder_fraction=speeder_fraction)
