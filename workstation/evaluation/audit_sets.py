"""Audit sets of any method: a seeded stratified sample of a label task's targets, stored as a
labelling queue with blind consistency re-checks, and the self-agreement those re-checks give.

A method describes what may be audited as an `AuditPopulation` (its targets, the strata an
auditor may choose, the automated confidence where it has one, and which targets are labelled);
`draw_audit_set` samples it (`stratified_indices`: proportional allocation over the strata, at
least one per stratum where the size allows, spread over confidence bins), shuffles the queue
with the same seed (so the seeds of one prompt do not come in a row) and puts a chosen fraction
of the items back later in the queue as re-checks (`recheck_plan`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import WorkstationError
from .agreement import cohen_kappa, percent_agreement
from .base import LabelScheme
from .judging import AuditInfo


@dataclass
class AuditPopulation:
    """What a method lets an auditor sample: ``ids`` of the task's targets; ``strata`` by name,
    each (code per target, name per code); ``default_strata``; ``conf`` the automated confidence
    per target (None: no confidence bins); ``labelled`` True where a target has a standing label
    of anyone (for "leave out labelled targets"); ``noun``: what a target is called ("samples")."""

    ids: np.ndarray
    strata: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)
    default_strata: tuple[str, ...] = ()
    conf: np.ndarray | None = None
    labelled: np.ndarray | None = None
    noun: str = "items"
    titles: dict[str, str] = field(default_factory=dict)  # stratum key -> what the dialog calls it

    def __len__(self) -> int:
        return len(self.ids)

    def codes(self, strata: Sequence[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Joint stratum code per target over ``strata`` and the names of each code."""
        unknown = [s for s in strata if s not in self.strata]
        if unknown:
            raise WorkstationError(f"unknown audit stratum {', '.join(map(repr, unknown))} "
                                   f"(choose from {', '.join(self.strata) or 'none'})")
        n = len(self.ids)
        if not strata:
            return np.zeros(n, np.int64), [()]
        cols = [np.asarray(self.strata[s][0], np.int64) for s in strata]
        for s, c in zip(strata, cols):
            if len(c) != n:
                raise WorkstationError(f"audit stratum {s!r} has {len(c)} codes for {n} targets")
        stacked = np.stack(cols, axis=1)
        uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
        names = [tuple(self.strata[s][1][int(u[j])] for j, s in enumerate(strata)) for u in uniq]
        return inv.astype(np.int64).reshape(-1), names


def allocate(sizes: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Split `total` draws over groups of the given sizes.

    Proportional allocation with at least one per non-empty group where `total` allows, never
    more than a group holds. When `total` is smaller than the number of non-empty groups, the
    groups that get one are drawn at random (weighted by size). The remainder after the minimum
    goes, one at a time, to the group furthest below its proportional quota (ties: lower index).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    alloc = np.zeros(len(sizes), np.int64)
    avail = int(sizes.sum())
    total = int(min(max(total, 0), avail))
    if total == 0:
        return alloc
    nonempty = np.flatnonzero(sizes > 0)
    if total < len(nonempty):
        p = sizes[nonempty] / sizes[nonempty].sum()
        pick = rng.choice(nonempty, size=total, replace=False, p=p)
        alloc[pick] = 1
        return alloc
    alloc[nonempty] = 1
    quota = total * sizes / avail
    for _ in range(total - len(nonempty)):
        deficit = np.where(alloc < sizes, quota - alloc, -np.inf)
        alloc[int(np.argmax(deficit))] += 1
    return alloc


def confidence_bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bins over [0, 1] (the last one closed); NaN counts as 0."""
    c = np.nan_to_num(np.asarray(conf, dtype=np.float64), nan=0.0)
    if n_bins <= 1:
        return np.zeros(len(c), np.int64)
    return np.clip(np.floor(c * n_bins), 0, n_bins - 1).astype(np.int64)


def stratified_indices(codes: np.ndarray, size: int, seed: int, conf: np.ndarray | None = None,
                       conf_bins: int = 5, exclude: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
    """A seeded stratified sample of target indices (sorted).

    ``codes``: the stratum of each target. The size is split over the non-empty strata
    proportionally with at least one per stratum where `size` allows (`allocate`); inside a
    stratum the same way over `conf_bins` equal-width bins of ``conf`` (when given); inside a bin
    the targets are drawn without replacement. ``exclude`` (indices or a boolean mask) leaves
    targets out. Same inputs and seed → same targets; never duplicates; all eligible targets
    when `size` reaches their number."""
    if size < 0:
        raise WorkstationError(f"audit sample size must be >= 0, got {size}")
    if conf_bins < 1:
        raise WorkstationError(f"confidence bins must be >= 1, got {conf_bins}")
    codes = np.asarray(codes, np.int64)
    n = len(codes)
    eligible = np.ones(n, bool)
    if exclude is not None:
        ex = np.asarray(exclude)
        if ex.dtype == bool:
            if len(ex) != n:
                raise WorkstationError(f"exclude mask has {len(ex)} entries for {n} targets")
            eligible &= ~ex
        elif len(ex):
            ex = ex.astype(np.int64)
            if ex.min() < 0 or ex.max() >= n:
                raise WorkstationError("exclude lists a target outside the population")
            eligible[ex] = False
    rows = np.flatnonzero(eligible)
    if size >= len(rows):
        return rows.astype(np.int64)
    rng = np.random.default_rng(seed)
    cbin = confidence_bins(np.asarray(conf), conf_bins)[rows] if conf is not None and conf_bins > 1 \
        else np.zeros(len(rows), np.int64)
    scode = codes[rows]
    n_strata = int(codes.max()) + 1 if n else 0
    s_alloc = allocate(np.bincount(scode, minlength=n_strata), size, rng)
    picked: list[np.ndarray] = []
    for s in np.flatnonzero(s_alloc):
        in_s = np.flatnonzero(scode == s)
        b = cbin[in_s]
        b_alloc = allocate(np.bincount(b, minlength=conf_bins), int(s_alloc[s]), rng)
        for k in np.flatnonzero(b_alloc):
            picked.append(rng.choice(rows[in_s[b == k]], size=int(b_alloc[k]), replace=False))
    out = np.sort(np.concatenate(picked)) if picked else np.zeros(0, np.int64)
    return out.astype(np.int64)


def strata_counts(pop: AuditPopulation, strata: Sequence[str], picked: np.ndarray) -> list[dict[str, Any]]:
    """Per stratum: its names, the population count and how many targets the sample holds."""
    codes, names = pop.codes(strata)
    return count_strata(codes, names, strata, picked)


def count_strata(codes: np.ndarray, names: Sequence[Sequence[Any]], strata: Sequence[str],
                 picked: np.ndarray) -> list[dict[str, Any]]:
    """Per stratum (``codes``: each row's stratum, ``names``: each stratum's value per name of
    ``strata``): its names, the population count and how many of the ``picked`` rows it holds."""
    popn = np.bincount(codes, minlength=len(names))
    smp = np.bincount(codes[np.asarray(picked, np.int64)], minlength=len(names))
    out = []
    for i, nm in enumerate(names):
        row: dict[str, Any] = dict(zip(strata, nm))
        row.update(population=int(popn[i]), sampled=int(smp[i]))
        out.append(row)
    return out


def recheck_plan(n: int, fraction: float, seed: int) -> list[tuple[int, int]]:
    """(original position, final position) of the re-checks for a queue of n items.

    round(fraction·n) items are re-checked; each comes back at least max(3, n // 4) items after
    the original (or at the end). Final positions index the queue with the re-checks in it.
    """
    k = int(round(max(0.0, min(fraction, 1.0)) * n))
    if n == 0 or k == 0:
        return []
    rng = np.random.default_rng([seed, 7])
    originals = np.sort(rng.choice(n, size=k, replace=False))
    gap = max(3, n // 4)
    # target slot: "after original item j" for j in [orig + gap, n - 1] (n - 1 = at the end)
    after = [int(rng.integers(min(o + gap, n - 1), n)) for o in originals.tolist()]
    # final positions: items are placed after base item `a`, in order of a (ties by original)
    order = sorted(range(k), key=lambda i: (after[i], originals[i]))
    out = []
    for rank, i in enumerate(order):
        out.append((int(originals[i]), after[i] + 1 + rank))
    return sorted(out, key=lambda t: t[1])


def draw_audit_set(project: Any, scheme: LabelScheme, pop: AuditPopulation, *, name: str, size: int, seed: int,
                   strata: Sequence[str] | None = None, conf_bins: int = 5, blind: bool = True,
                   recheck_fraction: float = 0.1, exclude_labelled: bool = False,
                   params: dict[str, Any] | None = None, raters: Sequence[str] = (), k: int = 1,
                   overlap_share: float = 1.0, gold_rate: float = 0.0) -> int:
    """Draw, store and return the id of a new audit set of ``scheme``'s task over ``pop``.

    ``raters`` (names) with ``k`` raters per item on ``overlap_share`` of the items make it an
    overlap set (`workstation.evaluation.raters.assign_raters`); ``gold_rate`` seeds gold items
    (about that share of its first-pass items) from the task's gold answers among the population,
    shuffled into the queue with the same seed (`raters.seed_gold`)."""
    if project is None:
        raise WorkstationError("open a project first")
    if project.read_only:
        raise WorkstationError("this project is open read-only: an audit set cannot be stored")
    strata = tuple(pop.default_strata if strata is None else strata)
    codes, _names = pop.codes(strata)
    exclude = pop.labelled if exclude_labelled and pop.labelled is not None else None
    picked = stratified_indices(codes, size, seed, conf=pop.conf, conf_bins=conf_bins, exclude=exclude)
    if len(picked) == 0:
        raise WorkstationError(f"no {pop.noun} are eligible for this audit (all labelled already?)")
    from .raters import assign_raters, check_raters, seed_gold

    names = check_raters(raters)
    if gold_rate and not blind:
        raise WorkstationError("gold items are seeded into blind audit sets only")
    if names and not 1 <= int(k) <= len(names):
        raise WorkstationError(f"k = {k} raters per item: choose between 1 and the {len(names)} rater(s) named")
    rng = np.random.default_rng(seed)
    picked = picked[rng.permutation(len(picked))]
    drawn = [str(x) for x in np.asarray(pop.ids, dtype=object)[picked].tolist()]
    gold = seed_gold(project, scheme.task, [str(x) for x in np.asarray(pop.ids, dtype=object).tolist()], drawn,
                     len(drawn), gold_rate, seed) if gold_rate else []
    ids = drawn
    if gold:  # gold among the drawn items in a seeded order (a set without gold keeps its order)
        mixed = drawn + gold
        ids = [mixed[i] for i in np.random.default_rng([int(seed), 53]).permutation(len(mixed)).tolist()]
    plan = recheck_plan(len(ids), recheck_fraction, seed)
    rechecks = [(final, ids[orig]) for orig, final in plan]
    stored = {"size": int(size), "seed": int(seed), "strata": list(strata), "conf_bins": int(conf_bins),
              "recheck_fraction": float(recheck_fraction), "rechecks": len(rechecks),
              "exclude_labelled": bool(exclude_labelled), "blind": bool(blind), **(params or {})}
    assignment = None
    if names:
        assignment = assign_raters(ids, names, int(k), share=overlap_share, seed=seed, everyone=gold)
        stored.update(raters=list(names), k=int(k), overlap_share=float(overlap_share))
    if gold:
        stored.update(gold_rate=float(gold_rate), gold_items=len(gold))
    design, population, draw = draw_provenance(codes, picked, conf=pop.conf, conf_bins=conf_bins, exclude=exclude)
    if gold:  # the gold items carry no draw provenance: they were seeded, not drawn
        at = {t: i for i, t in enumerate(drawn)}
        draw = {c: [draw[c][at[t]] if t in at else None for t in ids] for c in draw}
    return int(project.audit.create_set(name, scheme.task, ids, stored, blind=blind, rechecks=rechecks,
                                        design=design, population=population, draw=draw, gold=gold,
                                        assignment=assignment))


def disagreement_indices(strata: np.ndarray, size: int, seed: int, *, share: float = 0.8,
                         disagree: int = 1, exclude: np.ndarray | None = None) -> np.ndarray:
    """A seeded stratified draw that puts ``share`` of ``size`` into the ``disagree`` stratum (the
    items where two judges disagree; all of them when there are fewer) and the rest over the other
    strata (proportionally, at least one each where the size allows: `allocate`). Inside a stratum
    the items are drawn without replacement, so `draw_provenance` records each one's inclusion
    probability n_h / N_h and the Horvitz–Thompson estimate over the whole population stays
    unbiased. Returns the sorted indices drawn; ``exclude`` (a boolean mask) leaves items out."""
    if size < 0:
        raise WorkstationError(f"audit sample size must be >= 0, got {size}")
    if not (isinstance(share, (int, float)) and 0.0 <= float(share) <= 1.0):
        raise WorkstationError(f"the share of the disagreements must be between 0 and 1, got {share!r}")
    codes = np.asarray(strata, np.int64)
    n = len(codes)
    eligible = np.ones(n, bool) if exclude is None else ~np.asarray(exclude, bool)
    rows = np.flatnonzero(eligible)
    if size >= len(rows):
        return rows.astype(np.int64)
    rng = np.random.default_rng(seed)
    sc = codes[rows]
    k = int(codes.max()) + 1 if n else 0
    k = max(k, disagree + 1)
    sizes = np.bincount(sc, minlength=k)
    alloc = np.zeros(k, np.int64)
    alloc[disagree] = min(int(sizes[disagree]), int(round(float(share) * size)))
    others = sizes.copy()
    others[disagree] = 0
    rest = allocate(others, size - int(alloc[disagree]), rng)
    alloc += rest
    short = size - int(alloc.sum())  # the other strata held fewer than their part: the disagreements take it
    if short > 0:
        alloc[disagree] = min(int(sizes[disagree]), int(alloc[disagree]) + short)
    picked = [rng.choice(rows[sc == h], size=int(alloc[h]), replace=False) for h in np.flatnonzero(alloc)]
    return np.sort(np.concatenate(picked)).astype(np.int64) if picked else np.zeros(0, np.int64)


def draw_provenance(codes: np.ndarray, picked: np.ndarray, *, conf: np.ndarray | None = None, conf_bins: int = 5,
                    exclude: np.ndarray | None = None) -> tuple[str, int, dict[str, list[Any]]]:
    """(design, population, per picked target: inclusion, stratum, stratum size) of a draw by
    `stratified_indices`: its cells are (stratum × confidence bin) over the eligible targets,
    each drawn without replacement, so a target's inclusion probability is n_cell / N_cell. One
    non-empty cell is a uniform draw."""
    codes = np.asarray(codes, np.int64)
    n = len(codes)
    eligible = np.ones(n, bool) if exclude is None else ~np.asarray(exclude, bool)
    cbin = (confidence_bins(np.asarray(conf), conf_bins) if conf is not None and conf_bins > 1
            else np.zeros(n, np.int64))
    cell = codes * max(conf_bins, 1) + cbin
    size_of = np.bincount(cell[eligible], minlength=int(cell.max()) + 1 if n else 0)
    picked = np.asarray(picked, np.int64)
    drawn = np.bincount(cell[picked], minlength=len(size_of))
    pc = cell[picked]
    design = "uniform" if int((size_of > 0).sum()) <= 1 else "stratified"
    return design, int(eligible.sum()), {
        "inclusion": (drawn[pc] / size_of[pc]).astype(np.float64).tolist(),
        "stratum": pc.astype(np.int64).tolist(), "stratum_size": size_of[pc].astype(np.int64).tolist()}


def audit_info(project: Any, audit_set_id: int) -> AuditInfo:
    """The stored audit set as a queue sees it; an error naming it when it is gone."""
    for a in project.audit.sets():
        if a["audit_set_id"] == audit_set_id:
            params: dict[str, Any] = a["params"] if isinstance(a["params"], dict) else {}
            kept = params.get("note")
            note: str = kept if isinstance(kept, str) else ""
            goal = params.get("plan")
            plan: dict[str, Any] = goal if isinstance(goal, dict) else {}
            if not note and plan.get("quantity") == "precision":  # a plan stored before the note was kept
                note = ("This audit plan's queue holds only the items the automated outcome calls positive: "
                        "being blind cannot hide that outcome.")
            assigned = project.audit.assignments(int(audit_set_id))
            return AuditInfo(int(audit_set_id), str(a["name"]), bool(a["blind"]), note=note[:400],
                             assignment=tuple((r, frozenset(ts)) for r, ts in sorted(assigned.items())))
    raise WorkstationError(f"no audit set #{audit_set_id} in this project")


def audit_task(project: Any, audit_set_id: int) -> str:
    for a in project.audit.sets():
        if a["audit_set_id"] == audit_set_id:
            return str(a["task"])
    raise WorkstationError(f"no audit set #{audit_set_id} in this project")


@dataclass
class SelfAgreement:
    n_pairs: int
    percent: float
    kappa: float
    kappa_lo: float = float("nan")
    kappa_hi: float = float("nan")
    small: bool = True  # fewer than `SMALL_N` re-checks (or units) stand behind it
    by_annotator: dict[str, "SelfAgreement"] = field(default_factory=dict)
    unblinded: int = 0  # re-checks of items the annotator saw unblinded during a pause (flagged)

    def text(self) -> str:
        from .intervals import SMALL_N

        if not self.n_pairs:
            return "no re-checked item has both labels yet"
        pct = f"{self.percent * 100:.0f}%" if math.isfinite(self.percent) else "—"
        k = f"{self.kappa:.2f}" if math.isfinite(self.kappa) else "undefined"
        if math.isfinite(self.kappa) and math.isfinite(self.kappa_lo) and math.isfinite(self.kappa_hi):
            k += f" [{self.kappa_lo:.2f}, {self.kappa_hi:.2f}]"
        small = f" (fewer than {SMALL_N} re-checks)" if self.small else ""
        flag = f"; {self.unblinded} of them seen unblinded during a pause (flagged)" if self.unblinded else ""
        return f"{self.n_pairs} re-checks: {pct} the same, κ = {k}{small}{flag}"


def self_agreement_report(project: Any, scheme: LabelScheme, audit_set_id: int | None = None,
                          unit_of: Callable[[str], Hashable] | None = None) -> SelfAgreement:
    """Per annotator and overall, for the re-checked targets: the pass's first label against the
    re-check label (percent agreement and Cohen's κ with its 95 % bootstrap interval), within one
    audit set when given. The bootstrap resamples ``unit_of(target)`` (a sample's prompt: a
    prompt's seeds are judged alike), the targets themselves when None."""
    from .agreement import kappa_bounds

    if project is None:
        return SelfAgreement(0, float("nan"), float("nan"))
    first: dict[tuple[str, str], str | None] = {}
    again: dict[tuple[str, str], str | None] = {}
    for tid, ann, rc, value in project.labels.pass_latest(scheme.task, audit_set_id):
        (again if rc else first)[(tid, ann)] = value
    pairs = [(k, first[k], again[k]) for k in again
             if k in first and scheme.code(first[k]) >= 0 and scheme.code(again[k]) >= 0]

    def summary(ps: list[Any]) -> SelfAgreement:
        if not ps:
            return SelfAgreement(0, float("nan"), float("nan"))
        a = np.array([scheme.code(x[1]) for x in ps], np.int64)
        b = np.array([scheme.code(x[2]) for x in ps], np.int64)
        unit = [unit_of(x[0][0]) if unit_of is not None else x[0][0] for x in ps]
        bounds = kappa_bounds(a, b, unit)
        return SelfAgreement(len(ps), percent_agreement(a, b), cohen_kappa(a, b), float(bounds["kappa_lo"]),
                             float(bounds["kappa_hi"]), bool(bounds["small"]))

    seen = seen_unblinded(project, audit_set_id)
    out = summary(pairs)
    out.unblinded = sum(k in seen for k, _, _ in pairs)
    for ann in sorted({k[1] for k, _, _ in pairs}):
        mine = [x for x in pairs if x[0][1] == ann]
        out.by_annotator[ann] = summary(mine)
        out.by_annotator[ann].unblinded = sum(k in seen for k, _, _ in mine)
    return out


def task_agreement(project: Any, scheme: LabelScheme, labels: Any = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Agreement between annotators on a task and the targets whose annotators' standing labels
    differ, in the order they were first labelled: each selected annotator's standing label of
    each target under the task's kept label selection (its annotators, audit sets and re-checks;
    a consensus rule does not apply to a comparison of annotators) or under ``labels``
    (`selection.agreement_labels`); quadratic weighted κ for ordinal schemes, Cohen's κ otherwise."""
    from .agreement import annotator_agreement
    from .selection import agreement_labels_project

    if project is None:
        return [], []
    # an adjudicator's final labels are no rater's independent judgement: `standing_labels` leaves them out
    if labels is None:
        labels = agreement_labels_project(project, scheme.task)
    kept = [s for s in labels.labels if scheme.code(s.value) >= 0]
    if not kept:
        return [], []
    tid = np.array([s.target for s in kept], dtype=object)
    ann = np.array([s.annotator for s in kept], dtype=object)
    code = np.array([scheme.code(s.value) for s in kept], np.float64)
    order = np.array([s.event_id for s in kept], np.int64)
    rows = annotator_agreement(tid, ann, code + (1 if scheme.ordinal else 0), order,
                               weighted_categories=len(scheme.values) if scheme.ordinal else None) \
        if len(set(ann.tolist())) > 1 else []
    seen: dict[str, set[int]] = {}
    for t, c in zip(tid.tolist(), code.tolist()):
        seen.setdefault(t, set()).add(int(c))
    return rows, [t for t, codes in seen.items() if len(codes) > 1]


# ---------------------------------------------------------------------------------------------
# Pauses of blind audits: the labels given on items their annotator saw unblinded
# ---------------------------------------------------------------------------------------------

def seen_unblinded(project: Any, audit_set_id: int | None = None) -> set[tuple[str, str]]:
    """(target id, annotator) of the items shown unblinded to their annotator during a recorded
    pause of a blind audit (of audit set ``audit_set_id``; of any set when None): those labels
    are flagged in the audit's figures and the report."""
    if project is None:
        return set()
    sets = [audit_set_id] if audit_set_id is not None else [int(s["audit_set_id"]) for s in project.audit.sets()]
    out: set[tuple[str, str]] = set()
    for aid in sets:
        out |= {(t, a) for a, t in project.audit.seen_unblinded(aid)}
    return out


def flagged_labels(project: Any, task: str, audit_set_id: int | None = None) -> int:
    """How many standing labels of ``task`` (given in audit set ``audit_set_id``; in any set when
    None) are on items their annotator saw unblinded during a pause of that set."""
    if project is None:
        return 0
    sets = [audit_set_id] if audit_set_id is not None else [int(a["audit_set_id"]) for a in project.audit.sets()]
    seen = {aid: {(t, a) for a, t in project.audit.seen_unblinded(aid)} for aid in sets}
    if not any(seen.values()):
        return 0
    return sum(1 for e in project.labels.latest(task) if e.value is not None and e.audit_set_id in seen
               and (e.target_id, e.annotator) in seen[e.audit_set_id])


def flag_text(n: int) -> str:
    """The figures' flag: how many of their labels were given on items seen unblinded."""
    return f"{n} label(s) on items seen unblinded during a pause (flagged)" if n else ""


def blind_audits_section(project: Any, out_dir: Any) -> Any:
    """The report's "Blind audits" section: every recorded pause of a blind audit (set,
    annotator, start, end, why) and the items it showed unblinded, with how many of the set's
    labels by that annotator stand on them (flagged); None when no audit was ever paused."""
    import html
    from pathlib import Path

    from ..util.csvsafe import write_dict_rows
    from .base import ReportSection

    pauses = project.audit.pauses()
    if not pauses:
        return None
    names = {int(s["audit_set_id"]): (str(s["name"]), str(s["task"])) for s in project.audit.sets()}
    rows: list[dict[str, Any]] = []
    for pz in pauses:
        aid = int(pz["audit_set_id"])
        name, task = names.get(aid, ("", ""))
        seen = set(pz["unblinded"])
        labelled = {e.target_id for e in project.labels.latest(task) if e.audit_set_id == aid
                    and e.annotator == pz["annotator"] and e.value is not None} if task else set()
        rows.append({"pause_id": pz["pause_id"], "audit_set_id": aid, "audit_set": name, "task": task,
                     "annotator": pz["annotator"], "started_at": str(pz["started_at"]),
                     "ended_at": str(pz["ended_at"]) if pz["ended_at"] is not None else "",
                     "reason": pz["reason"], "seen_unblinded": len(seen),
                     "flagged_labels": len(seen & labelled), "items": " ".join(sorted(seen))})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_dict_rows(out / "pauses.csv", rows)
    body = ["<p class='text'>Each pause of a blind audit was asked for and recorded; the items shown to its "
            "annotator unblinded while it lasted are listed, and that annotator's labels of them in the set are "
            "flagged in the audit's figures.</p><table><tr><th>pause</th><th>audit set</th><th>annotator</th>"
            "<th>started</th><th>ended</th><th>why</th><th>seen unblinded</th><th>flagged labels</th></tr>"]
    for r in rows:
        items = html.escape(r["items"]) or "—"
        body.append(
            f"<tr><td>#{r['pause_id']}</td><td>#{r['audit_set_id']} {html.escape(r['audit_set'])}</td>"
            f"<td>{html.escape(r['annotator'])}</td><td>{html.escape(r['started_at'])}</td>"
            f"<td>{html.escape(r['ended_at']) or 'not resumed'}</td><td class='text'>{html.escape(r['reason'])}</td>"
            f"<td title='{items}'>{r['seen_unblinded']}</td><td>{r['flagged_labels']}</td></tr>")
    body.append("</table><p class='src'>The items of each pause: <code>blind_audits/pauses.csv</code>.</p>")
    return ReportSection("blind_audits", "Blind audits", html="".join(body), tables={"pauses": rows},
                         meta={"pauses": len(rows), "flagged_labels": sum(r["flagged_labels"] for r in rows)})
