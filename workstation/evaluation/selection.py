"""Which labels count: a label selection and the consensus that turns labels into one per target.

Every figure that uses human labels takes a `LabelSelection`:

* **annotators** — whose labels (None: everyone's);
* **audit sets** — labels given in which audit sets (a plan's draws are its audit set), and
  whether labels given outside any audit set ("free labelling", in Browse or imported) count;
* **re-checks** — first passes only, or with the blind consistency re-checks (a re-check
  measures the annotator; it is a later label of the same target);
* **rule** — the consensus that turns several annotators' labels of one target into one:
  ``latest`` (the most recent label of anyone: the rule of earlier versions, named as such),
  ``annotator:<name>`` (that annotator's label alone), ``majority`` (the most frequent value; a
  tie is *disputed*, decided by no one), ``unanimous`` (every annotator agrees, else
  *disputed*), ``mean`` (ordinal ratings: their mean), ``adjudicated`` (an adjudicator's final
  label where there is one, else the majority; `workstation.evaluation.raters`).

Adjudications (label events with source ``adjudication``) count under ``adjudicated`` alone, and
only on targets where some selected label stands. Labels of seeded gold items
(`workstation.evaluation.raters`) are no population labels of their set: they are left out.
Under the project's qualification rule, the labels of raters who do not meet it are left out
too (`resolve_project`; ``left_out`` of `resolve`): `Resolved.left_out` says who and why, and the
one line of `Resolved.describe` mentions it.

Per (target, annotator) the annotator's latest selected event stands (an event without a value
takes their label back). In a selection restricted to audit sets, an ``undo-restore`` event — the
label from before the set written back when a label of the set was undone — reads as no label in
the set. `resolve` gives per target its value (or `DISPUTED`), how many labels stand behind it and
its inclusion probability (`workstation.evaluation.draws`): known when the labels that count all
come from one audit set whose draw is recorded; NaN otherwise (free labelling, several draws, an
old set). `Resolved.design` says which: an estimator that assumes a draw can hold only for
``uniform``, ``stratified`` or ``plan``.

The selection of a method is kept in the project's settings (``label_selection.<method>``,
`load_selection` / `save_selection`); `describe` is the one line shown beside every figure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import WorkstationError
from .draws import KNOWN_DESIGNS, Draw, draws_of

__all__ = ["DISPUTED", "RULES", "LabelSelection", "Resolved", "resolve", "resolve_project", "load_selection",
           "save_selection", "default_selection", "SETTING", "Standing", "standing_labels", "AgreementLabels",
           "agreement_labels", "agreement_labels_project", "with_annotator", "no_events"]

DISPUTED = "disputed"
RULES = ("latest", "majority", "unanimous", "mean", "adjudicated")  # and "annotator:<name>"
#: the source of an adjudicator's final label (`workstation.evaluation.raters.ADJUDICATION`)
_ADJUDICATION = "adjudication"
SETTING = "label_selection."
_RECHECK = "recheck"
_RESTORE = "undo-restore"
#: tasks whose default counts first passes only (the rule of earlier versions for them)
_FIRST_PASS_DEFAULT = ("dyeval.image", "protobias.fidelity")
#: tasks whose default rule is not ``latest`` (the rule of earlier versions for them)
_RULE_DEFAULT = {"protobias.fidelity": "mean"}


def _check_rule(rule: str) -> str:
    if not isinstance(rule, str):
        raise WorkstationError(f"a consensus rule must be a text, got {rule!r}")
    if rule in RULES:
        return rule
    if rule.startswith("annotator:") and rule[len("annotator:"):].strip():
        return "annotator:" + rule[len("annotator:"):].strip()
    raise WorkstationError(f"unknown consensus rule {rule[:40]!r}; expected one of {', '.join(RULES)} "
                           "or annotator:<name>")


@dataclass(frozen=True)
class LabelSelection:
    """Which labels count, and how several of one target become one (module docstring)."""

    annotators: tuple[str, ...] | None = None
    sets: tuple[int, ...] | None = None  # audit set ids (None: every set)
    free: bool = True  # labels given outside any audit set
    rechecks: bool = True
    rule: str = "latest"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", _check_rule(self.rule))
        if self.annotators is not None:
            names = tuple(dict.fromkeys(str(a).strip() for a in self.annotators if str(a).strip()))
            object.__setattr__(self, "annotators", names)
        if self.sets is not None:
            try:
                ids = tuple(sorted({int(s) for s in self.sets}))
            except (TypeError, ValueError):
                raise WorkstationError(f"audit sets must be numbers, got {list(self.sets)!r}"[:120]) from None
            object.__setattr__(self, "sets", ids)
        if self.sets == () and not self.free:
            raise WorkstationError("the selection holds no labels: choose an audit set or free labelling")

    @property
    def named(self) -> str | None:
        """The annotator of an ``annotator:<name>`` rule."""
        return self.rule[len("annotator:"):] if self.rule.startswith("annotator:") else None

    def counts(self, annotator: str, audit_set_id: int | None, source: str | None) -> bool:
        """Whether an event of this annotator, audit set and source is selected."""
        if self.annotators is not None and annotator not in self.annotators:
            return False
        if self.named is not None and annotator != self.named:
            return False
        if not self.rechecks and (source or "") == _RECHECK:
            return False
        if audit_set_id is None:
            return self.free
        return self.sets is None or int(audit_set_id) in self.sets

    @property
    def restricted(self) -> bool:
        """Whether only some audit sets' labels count (an ``undo-restore`` reads as no label)."""
        return self.sets is not None or not self.free

    def to_dict(self) -> dict[str, Any]:
        return {"annotators": None if self.annotators is None else list(self.annotators),
                "audit_sets": None if self.sets is None else list(self.sets), "free_labelling": self.free,
                "rechecks": self.rechecks, "rule": self.rule}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> LabelSelection:
        if not isinstance(d, Mapping):
            raise WorkstationError("a label selection must be a JSON object")
        known = {"annotators", "audit_sets", "free_labelling", "rechecks", "rule"}
        extra = sorted(set(d) - known)
        if extra:
            raise WorkstationError(f"a label selection has unknown keys: {', '.join(map(str, extra))[:80]}")
        ann, sets = d.get("annotators"), d.get("audit_sets")
        if ann is not None and not (isinstance(ann, list) and all(isinstance(a, str) for a in ann)):
            raise WorkstationError("a label selection's annotators must be a list of names")
        if sets is not None and not (isinstance(sets, list) and all(isinstance(s, int) and not isinstance(s, bool)
                                                                     for s in sets)):
            raise WorkstationError("a label selection's audit sets must be a list of numbers")
        for key in ("free_labelling", "rechecks"):
            if key in d and not isinstance(d[key], bool):
                raise WorkstationError(f"a label selection's {key} must be true or false")
        return LabelSelection(None if ann is None else tuple(ann), None if sets is None else tuple(sets),
                              bool(d.get("free_labelling", True)), bool(d.get("rechecks", True)),
                              str(d.get("rule", "latest")))

    def replace(self, **kw: Any) -> LabelSelection:
        from dataclasses import replace

        return replace(self, **kw)

    def describe(self, n_items: int | None = None, sets: Mapping[int, str] | None = None,
                 consensus: bool = True) -> str:
        """One line: "labels: audit set #3, a1 and a2, majority — 118 items" (without the rule when
        ``consensus`` is False: the line of an agreement table, which compares the annotators)."""
        parts: list[str] = []
        if self.sets is None:
            parts.append("every audit set and free labelling" if self.free else "every audit set")
        else:
            names = [f"audit set #{s}" + (f" ({sets[s]})" if sets and sets.get(s) else "") for s in self.sets]
            if self.free:
                names.append("free labelling")
            parts.append(_and(names) if names else "free labelling")
        if self.named is not None and consensus:
            parts.append(f"{self.named} only")
        elif self.annotators is None:
            parts.append("every annotator")
        else:
            parts.append(_and(list(self.annotators)))
        if not self.rechecks:
            parts.append("first passes")
        rule = {"latest": "latest label wins", "majority": "majority (ties disputed)",
                "unanimous": "unanimous only", "mean": "mean rating",
                "adjudicated": "adjudicated, else majority"}.get(self.rule, "")
        if rule and consensus:
            parts.append(rule)
        text = "labels: " + ", ".join(parts)
        if n_items is not None:
            text += f" — {n_items} item{'s' if n_items != 1 else ''}"
        return text


def _and(xs: Sequence[str]) -> str:
    xs = list(xs)
    if len(xs) <= 1:
        return "".join(xs)
    return ", ".join(xs[:-1]) + " and " + xs[-1]


def default_selection(task: str) -> LabelSelection:
    """The selection a method starts from: the rule of earlier versions — every label, the latest
    winning; DyEval's first passes only; ProtoBias's first-pass ratings, their mean per image."""
    return LabelSelection(rechecks=task not in _FIRST_PASS_DEFAULT, rule=_RULE_DEFAULT.get(task, "latest"))


def with_annotator(selection: LabelSelection, annotator: str | None) -> LabelSelection:
    """A report's ``annotator=`` option (``--annotator NAME``): the selection with the rule
    ``annotator:NAME`` (that annotator's labels alone); unchanged without one."""
    return selection.replace(rule=f"annotator:{annotator}") if annotator else selection


@dataclass
class Resolved:
    """The outcome of `resolve`: one entry per target with a standing selected label."""

    selection: LabelSelection
    target_ids: np.ndarray  # object
    values: np.ndarray  # object: the value, `DISPUTED`, or (rule "mean") a float
    n_labels: np.ndarray  # int64: the selected labels standing on the target
    inclusion: np.ndarray  # float64: the target's inclusion probability (NaN: not known)
    design: str  # uniform / stratified / plan (one recorded draw), free, mixed, unknown
    draw_sets: tuple[int, ...] = ()  # the audit sets the counted labels come from
    annotators: tuple[str, ...] = ()
    population: int | None = None  # the targets the one recorded draw was made from
    left_out: tuple[tuple[str, str], ...] = ()  # (annotator, why) of labels the qualification leaves out
    n_adjudicated: int = 0  # targets whose value is an adjudicator's final label

    def __len__(self) -> int:
        return len(self.target_ids)

    @property
    def n_disputed(self) -> int:
        return int(sum(1 for v in self.values.tolist() if v == DISPUTED))

    @property
    def known_draw(self) -> bool:
        """The counted labels come from one recorded draw, every inclusion probability known."""
        return self.design in KNOWN_DESIGNS and bool(np.isfinite(self.inclusion).all()) and len(self) > 0

    def as_dict(self) -> dict[str, Any]:
        """target id → value (disputed targets left out)."""
        return {str(t): v for t, v in zip(self.target_ids.tolist(), self.values.tolist()) if v != DISPUTED}

    def per_row(self, index: Mapping[str, int], n: int, code_of: Mapping[Any, int]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row of a method's ``n`` targets (``index``: target id → row): the code of its value
        (``code_of``; -1 where the selection gives none, a value outside ``code_of`` or a dispute),
        its inclusion probability (NaN: not known) and whether its annotators dispute it."""
        codes = np.full(n, -1, np.int8)
        incl = np.full(n, np.nan)
        disputed = np.zeros(n, bool)
        for t, v, pi in zip(self.target_ids.tolist(), self.values.tolist(), self.inclusion.tolist()):
            i = index.get(t)
            if i is None:
                continue
            if v == DISPUTED:
                disputed[i] = True
            elif v in code_of:
                codes[i] = code_of[v]
                incl[i] = pi
        return codes, incl, disputed

    def weights(self) -> np.ndarray:
        """1 / π per target (1 where the draw is not known)."""
        pi = self.inclusion
        return np.where(np.isfinite(pi) & (pi > 0), 1.0 / np.where(pi > 0, pi, 1.0), 1.0)

    def describe(self, sets: Mapping[int, str] | None = None) -> str:
        text = self.selection.describe(len(self) - self.n_disputed, sets)
        if self.n_disputed:
            text += f", {self.n_disputed} disputed"
        if self.n_adjudicated:
            text += f", {self.n_adjudicated} adjudicated"
        if self.left_out:
            text += "; " + "; ".join(f"{a} left out: {why}" for a, why in self.left_out)
        return text

    def provenance(self) -> dict[str, Any]:
        """What a report records about the labels behind its figures."""
        return {"selection": self.selection.to_dict(), "line": self.describe(), "items": len(self) - self.n_disputed,
                "disputed": self.n_disputed, "design": self.design, "audit_sets": list(self.draw_sets),
                "annotators": list(self.annotators), "adjudicated": self.n_adjudicated,
                "left_out": [{"annotator": a, "why": why} for a, why in self.left_out]}




def standing_labels(events: Mapping[str, Any], selection: LabelSelection, draws: Mapping[int, Draw] | None = None,
                    left_out: Mapping[str, str] | None = None, final: dict[str, Any] | None = None,
                    dropped: set[str] | None = None) -> list[Standing]:
    """Per (target, annotator) the annotator's latest selected label that carries a value (an
    event without one takes the label back; in a selection restricted to audit sets an
    ``undo-restore`` reads as none), targets in the order first labelled, each target's labels in
    event order. ``events``: the label log's columns of one task (`LabelsRepo.table`); ``draws``:
    the task's audit sets, whose seeded gold items' labels are left out; ``left_out``: annotator →
    why their labels do not count (the qualification rule; the names left out are added to
    ``dropped``). An adjudicator's final labels are no annotator's: they go to ``final`` (target →
    value, None where taken back)."""
    if final is None:
        final = {}
    if dropped is None:
        dropped = set()
    n = len(events.get("event_id", ()))
    standing: dict[tuple[str, str], tuple[int, Any, Any, int | None]] = {}
    order: dict[str, int] = {}
    ev = events
    restricted = selection.restricted
    for i in range(n):
        ann = str(ev["annotator"][i])
        aid_raw = ev["audit_set_id"][i]
        aid = None if aid_raw is None or (isinstance(aid_raw, float) and math.isnan(aid_raw)) else int(aid_raw)
        src = ev["source"][i]
        src = None if src is None else str(src)
        if src == _ADJUDICATION:
            adj = ev["value"][i]
            final[str(ev["target_id"][i])] = None if adj is None or (isinstance(adj, float) and math.isnan(adj)) \
                else adj
            continue
        if not selection.counts(ann, aid, src):
            continue
        target = str(ev["target_id"][i])
        if aid is not None and draws is not None:
            d_here = draws.get(aid)
            if d_here is not None and target in d_here.gold:
                continue  # a seeded gold item: no population label of its set
        if left_out and ann in left_out:
            dropped.add(ann)
            continue
        raw = ev["value"][i]
        if raw is not None and isinstance(raw, float) and math.isnan(raw):
            raw = None
        if restricted and src == _RESTORE:
            raw = None
        rating = ev["rating"][i] if "rating" in ev else None
        standing[(target, ann)] = (int(ev["event_id"][i]), raw, rating, aid)
        order.setdefault(target, len(order))
    out = [Standing(target, ann, eid, val, rating, aid) for (target, ann), (eid, val, rating, aid) in standing.items()
           if val is not None]
    out.sort(key=lambda s: (order[s.target], s.event_id))
    return out


@dataclass(frozen=True)
class Standing:
    """One annotator's standing selected label of one target (`standing_labels`)."""

    target: str
    annotator: str
    event_id: int
    value: Any
    rating: Any
    audit_set_id: int | None


@dataclass
class AgreementLabels:
    """The labels an agreement table compares: each selected annotator's standing label per
    target, before any consensus (the selection's annotators, audit sets and re-checks apply, its
    consensus rule does not; `agreement_labels`)."""

    selection: LabelSelection
    labels: list[Standing]

    @property
    def n_items(self) -> int:
        """Targets labelled by two or more of the selected annotators (what agreement rests on)."""
        per: dict[str, set[str]] = {}
        for s in self.labels:
            per.setdefault(s.target, set()).add(s.annotator)
        return sum(1 for a in per.values() if len(a) > 1)

    def columns(self) -> tuple[np.ndarray, np.ndarray, list[Any], np.ndarray]:
        """(target ids, annotators, values, event ids) as arrays for `agreement.annotator_agreement`."""
        return (np.array([s.target for s in self.labels], dtype=object),
                np.array([s.annotator for s in self.labels], dtype=object), [s.value for s in self.labels],
                np.array([s.event_id for s in self.labels], np.int64))

    def describe(self, sets: Mapping[int, str] | None = None) -> str:
        """"labels: audit set #3, a1 and a2, first passes — 40 items" (items two or more labelled)."""
        return self.selection.describe(self.n_items, sets, consensus=False)


def agreement_labels(events: Mapping[str, Any], selection: LabelSelection) -> AgreementLabels:
    """The labels an agreement table between annotators compares under ``selection``: its
    annotators (an ``annotator:<name>`` rule is a consensus and does not narrow them), its audit
    sets and re-checks."""
    sel = selection.replace(rule="latest")
    return AgreementLabels(sel, standing_labels(events, sel))


def agreement_labels_project(project: Any, task: str, selection: LabelSelection | None = None) -> AgreementLabels:
    """`agreement_labels` over a project's label log (its kept selection when none is given)."""
    sel = selection if selection is not None else load_selection(project, task)
    return agreement_labels(project.labels.table(task), sel)


def resolve(events: Mapping[str, Any], selection: LabelSelection,
            draws: Mapping[int, Draw] | None = None, left_out: Mapping[str, str] | None = None) -> Resolved:
    """Per target, the value the selection's labels give (module docstring). ``events``: the
    label log's columns of one task (`LabelsRepo.table`), in event order; ``draws``: the task's
    audit sets (`draws_of`), for the inclusion probabilities and the seeded gold items;
    ``left_out``: annotator → why their labels do not count (the qualification rule)."""
    final: dict[str, Any] = {}  # target → the adjudicator's standing final label
    dropped: set[str] = set()
    per_target: dict[str, list[tuple[int, Any, Any, int | None, str]]] = {}
    for st in standing_labels(events, selection, draws, left_out, final, dropped):
        per_target.setdefault(st.target, []).append((st.event_id, st.value, st.rating, st.audit_set_id,
                                                     st.annotator))
    ids, values, n_lab, incl = [], [], [], []
    used_sets: set[int | None] = set()
    anns: set[str] = set()
    rule = selection.rule
    n_adj = 0
    for target in per_target:
        labs = sorted(per_target[target])
        counted = labs
        if rule == "latest" or selection.named is not None:
            counted = [labs[-1]]
            value: Any = labs[-1][1]
        elif rule == "adjudicated" and final.get(target) is not None:
            value = final[target]
            n_adj += 1
        elif rule in ("majority", "adjudicated"):
            c = Counter(v for _e, v, _r, _a, _n in labs).most_common()
            value = c[0][0] if len(c) == 1 or c[0][1] > c[1][1] else DISPUTED
        elif rule == "unanimous":
            vals = {v for _e, v, _r, _a, _n in labs}
            value = labs[0][1] if len(vals) == 1 else DISPUTED
        else:  # mean of ordinal ratings
            nums = []
            for _e, v, r, _a, _n in labs:
                x = r if r is not None and not (isinstance(r, float) and math.isnan(r)) else v
                try:
                    nums.append(float(x))
                except (TypeError, ValueError):
                    pass
            if not nums:
                continue
            value = float(np.mean(nums))
        ids.append(target)
        values.append(value)
        n_lab.append(len(labs))
        sets_here = {a for _e, _v, _r, a, _n in counted}
        used_sets |= sets_here
        anns |= {nm for _e, _v, _r, _a, nm in labs}
        pi = math.nan
        if len(sets_here) == 1 and None not in sets_here and draws is not None:
            (aid,) = sets_here
            d = draws.get(int(aid)) if aid is not None else None
            if d is not None and d.known:
                pi = d.pi(target)
        incl.append(pi)
    population: int | None = None
    if not used_sets:
        design = "unknown"
    elif used_sets == {None}:
        design = "free"
    elif None in used_sets or len(used_sets) > 1:
        design = "mixed"
    else:
        (only,) = used_sets
        d = None if draws is None or only is None else draws.get(int(only))
        design = d.design if d is not None and d.known else "unknown"
        population = d.population if d is not None and d.known else None
    vals_arr = np.empty(len(values), dtype=object)
    vals_arr[:] = values
    return Resolved(selection, np.array(ids, dtype=object), vals_arr, np.asarray(n_lab, np.int64),
                    np.asarray(incl, np.float64), design, tuple(sorted(a for a in used_sets if a is not None)),
                    tuple(sorted(anns)), population,
                    tuple((a, str((left_out or {})[a])) for a in sorted(dropped)), n_adj)


def no_events() -> dict[str, np.ndarray]:
    """A label log's columns without any event (`resolve` of a project not open)."""
    return {k: np.zeros(0, dtype=object) for k in ("event_id", "target_id", "annotator", "value", "rating",
                                                   "audit_set_id", "source")}


def resolve_project(project: Any, task: str, selection: LabelSelection | None = None) -> Resolved:
    """`resolve` over a project's label log of ``task`` (its stored selection when none is given)."""
    from .raters import unqualified

    sel = selection if selection is not None else load_selection(project, task)
    events = project.labels.table(task)
    names = sorted({str(a) for a in events.get("annotator", ())})
    return resolve(events, sel, draws_of(project, task), unqualified(project, task, names))


def set_names(project: Any, task: str) -> dict[int, str]:
    """audit set id → its name (for `describe`)."""
    return {int(s["audit_set_id"]): str(s.get("name") or "") for s in project.audit.sets(task)}


def load_selection(project: Any, task: str) -> LabelSelection:
    """The selection kept in the project for a task (its default when none is kept). A kept
    value that cannot be read is a `WorkstationError` naming the setting."""
    from ..util.jsonsafe import JSONInputError, loads_strict

    text = project.get_setting(SETTING + task) if project is not None else None
    if not text:
        return default_selection(task)
    try:
        d = loads_strict(str(text))
    except JSONInputError as e:
        raise WorkstationError(f"the project's setting {SETTING + task} is not valid JSON ({e.message})") from None
    try:
        return LabelSelection.from_dict(d)
    except WorkstationError as e:
        raise WorkstationError(f"the project's setting {SETTING + task}: {e}") from None


def save_selection(project: Any, task: str, selection: LabelSelection) -> None:
    """Keep a task's selection with the project."""
    from ..util.jsonsafe import dumps

    project.set_setting(SETTING + task, dumps(selection.to_dict()))
