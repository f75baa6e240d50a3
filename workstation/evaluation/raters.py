"""Several raters, one protocol: overlap designs, gold items, qualification and adjudication.

**Overlap.** An audit set may name its raters and ask for ``k`` independent raters per item (on
every item, or on a stated share of them; the other items get one rater). `assign_raters` deals
the items out with the set's seed, each item to the least-loaded raters (ties in a seeded order);
the assignment is stored with the set (``audit_assignments``). A rater's queue holds only their
items (`workstation.evaluation.judging.JudgingQueue`) and never shows another rater's labels;
`rater_progress` counts, per rater, the queue items labelled in the pass out of those assigned.

**Gold items.** A gold answer is a target whose answer is known: imported by a lead
(`import_gold_file`, columns target, task, answer[, note]), known by the demo, or an
adjudicated label (below). `gold_answers` gives them per task: the adjudicated label where there
is one, else the latest imported answer. `draw_audit_set` can seed gold items into a set at a
stated rate: they are targets of the same kind, shuffled into the queue with the set's seed, and
every rater of the set is given all of them; nothing a queue shows says an item is gold. They are
seeded, not drawn: they carry no inclusion probability, and their labels are no population labels
of the set (`workstation.evaluation.selection.resolve` leaves them out of every estimate).

**Gold accuracy and qualification.** A rater's gold accuracy counts their first-pass labels of
the gold items seeded into audit sets (each set's standing label of the pass) against the gold
answer, with its Wilson interval. A project may keep a qualification rule (``qualification``
setting: at least ``min_accuracy`` on at least ``min_items`` gold items): the labels of a rater
who was given gold items and does not meet it are kept in the log but left out of every estimate
(the selection's resolution says who and why). ``strict``: raters never given a gold item are
left out too (by default they are not judged). Adjudicators are never left out.

**Adjudication.** A target whose raters' standing first-pass labels differ, or differ from its
gold answer, is open for adjudication (`adjudication_queue`: the labels without the raters'
names). An annotator the project marks as adjudicator (``adjudicators`` setting) records the
final label with a note (`record_adjudication`: a label event with source ``adjudication``). Under
the consensus rule ``adjudicated`` it is the target's label; no other rule counts it.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..types import InputError, WorkstationError
from .intervals import wilson_interval
from .judging import RECHECK

__all__ = ["ADJUDICATION", "Qualification", "assign_raters", "gold_answers", "import_gold_file", "rater_progress",
           "gold_accuracy", "load_qualification", "save_qualification", "unqualified", "adjudicators",
           "set_adjudicators", "adjudication_queue", "record_adjudication", "seed_gold"]

#: the source of an adjudicator's final label
ADJUDICATION = "adjudication"
QUALIFICATION_SETTING = "qualification"
ADJUDICATORS_SETTING = "adjudicators"


# ---------------------------------------------------------------------------------------------
# Overlap designs
# ---------------------------------------------------------------------------------------------

def check_raters(raters: Sequence[str]) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(str(r).strip() for r in raters if str(r).strip()))
    for r in names:
        if len(r) > 200 or any(c in r for c in "\x00\n\r,"):
            raise WorkstationError(f"a rater's name {r[:40]!r} holds a comma or line break, or is too long")
    return names


def assign_raters(target_ids: Sequence[str], raters: Sequence[str], k: int, *, share: float = 1.0, seed: int = 0,
                  everyone: Sequence[str] = ()) -> dict[str, tuple[str, ...]]:
    """target id → its raters: ``k`` of ``raters`` on round(share·n) of the targets (drawn with
    ``seed``), one on the others, each to the least-loaded raters (ties in a seeded order); the
    targets of ``everyone`` (gold items) go to every rater."""
    names = check_raters(raters)
    if not names:
        raise WorkstationError("an overlap design needs at least one named rater")
    if not 1 <= int(k) <= len(names):
        raise WorkstationError(f"k = {k} raters per item: choose between 1 and the {len(names)} rater(s) named")
    if not 0.0 < float(share) <= 1.0:
        raise WorkstationError(f"the overlap share must be in (0, 1], got {share}")
    ids = [str(t) for t in target_ids]
    all_of = {str(t) for t in everyone}
    rng = np.random.default_rng([int(seed), 51])
    plain = [t for t in ids if t not in all_of]
    n_over = int(round(float(share) * len(plain)))
    over = set(np.asarray(plain, dtype=object)[rng.permutation(len(plain))[:n_over]].tolist()) if plain else set()
    load = dict.fromkeys(names, 0)
    tie = {r: float(x) for r, x in zip(names, rng.random(len(names)))}
    out: dict[str, tuple[str, ...]] = {}
    for t in ids:
        if t in all_of:
            out[t] = names
            continue
        want = int(k) if t in over else 1
        pick = sorted(names, key=lambda r: (load[r], tie[r]))[:want]
        for r in pick:
            load[r] += 1
        out[t] = tuple(sorted(pick, key=names.index))
    return out


def rater_progress(project: Any, audit_set_id: int) -> list[dict[str, Any]]:
    """Per rater of an overlap set: the queue items (first passes and re-checks) assigned to
    them, how many they labelled in the pass, and the first passes alone."""
    task = next((str(s["task"]) for s in project.audit.sets() if s["audit_set_id"] == audit_set_id), None)
    if task is None:
        raise WorkstationError(f"no audit set #{audit_set_id} in this project")
    assigned = project.audit.assignments(audit_set_id)
    items = project.audit.items(audit_set_id)
    out = []
    for rater in sorted(assigned):
        mine = set(assigned[rater])
        targets, rc, has = project.labels.pass_values(task, rater, audit_set_id)
        done = {(str(t), bool(r)) for t, r, h in zip(targets.tolist(), rc.tolist(), has.tolist()) if h}
        queue = [(t, r) for t, r in items if t in mine]
        first = [q for q in queue if not q[1]]
        out.append({"rater": rater, "assigned": len(queue), "labelled": sum(q in done for q in queue),
                    "first_assigned": len(first), "first_labelled": sum(q in done for q in first)})
    return out


# ---------------------------------------------------------------------------------------------
# Gold answers
# ---------------------------------------------------------------------------------------------

def adjudicated(project: Any, task: str) -> dict[str, tuple[str, str | None, str]]:
    """target id → (value, note, adjudicator) of the standing adjudications of a task (the
    latest adjudication event per target; one without a value takes the adjudication back)."""
    ev = project.labels.table(task)
    out: dict[str, tuple[str, str | None, str]] = {}
    for i in range(len(ev.get("event_id", ()))):
        if ev["source"][i] != ADJUDICATION:
            continue
        t = str(ev["target_id"][i])
        v = ev["value"][i]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.pop(t, None)
        else:
            note = ev["notes"][i]
            out[t] = (str(v), None if note is None or (isinstance(note, float) and math.isnan(note)) else str(note),
                      str(ev["annotator"][i]))
    return out


def gold_answers(project: Any, task: str) -> dict[str, str]:
    """target id → the known answer of every gold target of ``task``: the adjudicated label where
    there is one, else the latest imported (or demo) answer."""
    if project is None:
        return {}
    out = {t: v for t, (v, _src) in project.audit.gold(task).items()}
    out.update({t: v for t, (v, _n, _a) in adjudicated(project, task).items()})
    return out


def import_gold_file(project: Any, path: Path | str, schemes: Mapping[str, Any],
                     source: str | None = None) -> dict[str, int]:
    """Read a gold file (CSV with columns target, task, answer and optionally note; one row a
    gold answer) and keep its answers with the project; returns the count per task. ``schemes``:
    task → its `LabelScheme` (the registered methods'). The whole file is checked first: a bad
    row is a `WorkstationError` naming the file and line, and nothing is written then."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise WorkstationError(f"{path}: not a UTF-8 text file") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise WorkstationError(f"{path}: the gold file is empty (expected a header: target,task,answer[,note])")
    head = [h.strip().lower() for h in rows[0]]
    need = ("target", "task", "answer")
    missing = [c for c in need if c not in head]
    if missing:
        raise WorkstationError(f"{path}:1: the header lacks {', '.join(missing)} (expected target,task,answer[,note])")
    col = {c: head.index(c) for c in head}
    by_task: dict[str, list[tuple[str, str, str | None]]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(x.strip() for x in row):
            continue
        cells = [x.strip() for x in row] + [""] * len(head)
        target, task, answer = (cells[col[c]] for c in need)
        note = cells[col["note"]] if "note" in col else ""
        if not target or not task or not answer:
            raise InputError(path, "a gold row needs a target, a task and an answer", line)
        if task not in schemes:
            raise InputError(path, f"unknown label task {task[:60]!r} (expected one of {', '.join(schemes)})", line)
        try:
            value = schemes[task].validate(answer)
        except WorkstationError as e:
            raise InputError(path, str(e), line) from None
        by_task.setdefault(task, []).append((target, value, note or None))
    if not by_task:
        raise WorkstationError(f"{path}: the gold file holds no answer")
    known: set[str] | None = None
    for task, got in by_task.items():
        if schemes[task].target in ("sample", "image"):  # ids of the samples table
            if known is None:
                known = {r[0] for r in project.con.execute("SELECT sample_id FROM samples").fetchall()}
            bad = next((t for t, _v, _n in got if t not in known), None)
            if bad is not None:
                line = next(i for i, r in enumerate(rows[1:], start=2) if r and r[col["target"]].strip() == bad)
                raise InputError(path, f"gold answer for unknown sample {bad[:60]!r}", line)
    with project.transaction():
        return {task: project.audit.add_gold(task, got, source or f"import:{path.name}")
                for task, got in by_task.items()}


def seed_gold(project: Any, task: str, candidates: Sequence[str], drawn: Sequence[str], n_drawn: int, rate: float,
              seed: int) -> list[str]:
    """The gold targets to seed into a set of ``n_drawn`` drawn items so that about ``rate`` of
    its first-pass items are gold: drawn with ``seed`` from the task's gold answers among
    ``candidates`` (the targets a queue can show), never one of ``drawn`` (none when the draw took
    every one); a task without gold answers among them is an error."""
    if not 0.0 <= float(rate) < 1.0:
        raise WorkstationError(f"the gold rate must be in [0, 1), got {rate}")
    if rate <= 0:
        return []
    answers = gold_answers(project, task)
    taken = {str(t) for t in drawn}
    known = {t for t in (str(c) for c in candidates) if t in answers}
    if not known:
        raise WorkstationError(f"no target of {task} has a gold answer to seed (import a gold file: audit gold import)")
    pool = sorted(known - taken)  # every gold target the draw took: none is left to seed
    want = int(round(float(rate) * n_drawn / (1.0 - float(rate))))
    rng = np.random.default_rng([int(seed), 52])
    return [pool[i] for i in sorted(rng.permutation(len(pool))[:min(want, len(pool))].tolist())]


# ---------------------------------------------------------------------------------------------
# Gold accuracy and qualification
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Qualification:
    """A rater qualifies with at least ``min_accuracy`` right on at least ``min_items`` gold items."""

    min_accuracy: float = 0.9
    min_items: int = 20
    strict: bool = False  # raters never given a gold item are left out too

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.min_accuracy) <= 1.0:
            raise WorkstationError(f"a qualification's accuracy must be in [0, 1], got {self.min_accuracy}")
        if int(self.min_items) < 1:
            raise WorkstationError(f"a qualification needs at least 1 gold item, got {self.min_items}")

    def text(self) -> str:
        return (f"≥ {self.min_accuracy * 100:.0f} % on ≥ {self.min_items} gold items"
                + (" (raters without gold left out)" if self.strict else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"min_accuracy": float(self.min_accuracy), "min_items": int(self.min_items), "strict": self.strict}


def load_qualification(project: Any) -> Qualification | None:
    """The project's qualification rule (None: every rater's labels count)."""
    from ..util.jsonsafe import JSONInputError, loads_strict

    text = project.get_setting(QUALIFICATION_SETTING) if project is not None else None
    if not text:
        return None
    try:
        d = loads_strict(str(text))
        if not isinstance(d, dict) or set(d) - {"min_accuracy", "min_items", "strict"}:
            raise WorkstationError("expected min_accuracy, min_items and strict")
        return Qualification(float(d.get("min_accuracy", 0.9)), int(d.get("min_items", 20)), bool(d.get("strict")))
    except (JSONInputError, WorkstationError, TypeError, ValueError) as e:
        why = getattr(e, "message", None) or str(e)
        raise WorkstationError(f"the project's setting {QUALIFICATION_SETTING} cannot be read ({why})") from None


def save_qualification(project: Any, rule: Qualification | None) -> None:
    """Keep (None: drop) the project's qualification rule."""
    from ..util.jsonsafe import dumps

    project.set_setting(QUALIFICATION_SETTING, "" if rule is None else dumps(rule.to_dict()))


@dataclass(frozen=True)
class GoldAccuracy:
    rater: str
    correct: int
    n: int
    lo: float
    hi: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan

    def text(self) -> str:
        if not self.n:
            return "no gold item labelled"
        return f"gold {self.correct}/{self.n} = {self.accuracy * 100:.0f} % [{self.lo * 100:.0f}, {self.hi * 100:.0f}]"


def gold_accuracy(project: Any, task: str) -> dict[str, GoldAccuracy]:
    """Per rater: their first-pass labels of the gold items seeded into the task's audit sets that
    match the gold answer, of those labelled (an abstention counts as a miss), with the Wilson
    interval; raters given gold who labelled none of it have n = 0."""
    if project is None:
        return {}
    answers = gold_answers(project, task)
    seeded: dict[int, set[str]] = {}
    for aid, t in project.audit.gold_items():
        seeded.setdefault(aid, set()).add(t)
    tasks = {int(s["audit_set_id"]): s["task"] for s in project.audit.sets(task)}
    right: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    given: set[str] = set()
    for aid, targets in seeded.items():
        if tasks.get(aid) != task:
            continue
        for rater, mine in project.audit.assignments(aid).items():
            if set(mine) & targets:
                given.add(rater)
        for t, ann, rc, value in project.labels.pass_latest(task, aid):
            if rc or t not in targets or value is None or t not in answers:
                continue
            given.add(ann)
            seen[ann] += 1
            right[ann] += int(str(value) == answers[t])
    out = {}
    for r in sorted(given):
        lo, hi = wilson_interval(right[r], seen[r]) if seen[r] else (math.nan, math.nan)
        out[r] = GoldAccuracy(r, int(right[r]), int(seen[r]), float(lo), float(hi))
    return out


def unqualified(project: Any, task: str, annotators: Sequence[str] | None = None) -> dict[str, str]:
    """annotator → why their labels of ``task`` are left out under the project's qualification
    rule (empty without one). ``annotators``: those to judge (every rater given gold by default;
    under a strict rule those without gold too)."""
    rule = load_qualification(project) if project is not None else None
    if rule is None:
        return {}
    acc = gold_accuracy(project, task)
    exempt = set(adjudicators(project))
    names = set(acc) | (set(annotators) if annotators is not None and rule.strict else set())
    out: dict[str, str] = {}
    for r in sorted(names - exempt):
        a = acc.get(r)
        if a is None or a.n == 0:
            if rule.strict:
                out[r] = "no gold item labelled"
            elif a is not None:
                out[r] = f"no gold item labelled yet ({rule.min_items} needed)"
            continue
        if a.n < rule.min_items:
            out[r] = f"gold {a.correct}/{a.n}: fewer than {rule.min_items} items"
        elif a.correct < rule.min_accuracy * a.n - 1e-9:
            out[r] = f"gold {a.correct}/{a.n} < {rule.min_accuracy * 100:.0f} %"
    return out


# ---------------------------------------------------------------------------------------------
# Adjudication
# ---------------------------------------------------------------------------------------------

def adjudicators(project: Any) -> list[str]:
    """The annotators the project marks as adjudicators."""
    text = project.get_setting(ADJUDICATORS_SETTING) if project is not None else None
    return [a for a in (x.strip() for x in str(text or "").split(",")) if a]


def set_adjudicators(project: Any, names: Sequence[str]) -> None:
    project.set_setting(ADJUDICATORS_SETTING, ",".join(check_raters(names)))


def rater_labels(project: Any, task: str) -> dict[str, dict[str, str]]:
    """target id → rater → their standing first-pass label (the latest first-pass event of the
    rater; an undo-restore reads as the label it restores; adjudications are not rater labels);
    labels on gold items seeded into a set count too."""
    ev = project.labels.table(task)
    standing: dict[tuple[str, str], Any] = {}
    order: dict[str, int] = {}
    for i in range(len(ev.get("event_id", ()))):
        src = ev["source"][i]
        if src in (ADJUDICATION, RECHECK):
            continue
        t, a = str(ev["target_id"][i]), str(ev["annotator"][i])
        v = ev["value"][i]
        standing[(t, a)] = None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
        order.setdefault(t, len(order))
    out: dict[str, dict[str, str]] = {}
    for (t, a), v in standing.items():
        if v is not None:
            out.setdefault(t, {})[a] = v
    return {t: out[t] for t in sorted(out, key=lambda x: order[x])}


@dataclass(frozen=True)
class AdjudicationItem:
    """One target open for (or given) adjudication: the raters' labels without their names."""

    target_id: str
    labels: tuple[str, ...]  # one per rater, sorted by value (no order that tells who)
    reason: str  # "raters disagree", "disagrees with gold", or "raters disagree, and with gold"
    gold: str | None = None
    final: str | None = None  # the adjudicated label, when there is one
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"target_id": self.target_id, "labels": list(self.labels), "counts": dict(Counter(self.labels)),
                "reason": self.reason, "gold": self.gold, "final": self.final, "note": self.note}


def adjudication_queue(project: Any, task: str, *, include_done: bool = False) -> list[AdjudicationItem]:
    """The targets of ``task`` whose raters' standing labels differ, or differ from the gold
    answer, in the order they were first labelled; those already adjudicated only with
    ``include_done``. The labels carry no rater's name."""
    labels = rater_labels(project, task)
    imported = {t: v for t, (v, _s) in project.audit.gold(task).items()}
    done = adjudicated(project, task)
    out = []
    for t, by in labels.items():
        values = [v for a, v in by.items()]
        why = []
        if len(set(values)) > 1:
            why.append("raters disagree")
        g = imported.get(t)
        if g is not None and any(v != g for v in values):
            why.append("disagrees with gold")
        if not why or (t in done and not include_done):
            continue
        fin = done.get(t)
        reason = "raters disagree, and with gold" if len(why) == 2 else why[0]
        out.append(AdjudicationItem(t, tuple(sorted(values)), reason, g,
                                    fin[0] if fin else None, fin[1] if fin else None))
    return out


def record_adjudication(project: Any, scheme: Any, target_id: str, value: str | None, note: str | None,
                        annotator: str) -> int:
    """Record ``annotator``'s final label of a target (None: take the adjudication back) with a
    note; refused unless the project marks them as adjudicator. Returns the event id."""
    who = str(annotator or "").strip()
    allowed = adjudicators(project)
    if who not in allowed:
        raise WorkstationError(f"{who or 'nobody'} is not an adjudicator of this project "
                               f"(adjudicators: {', '.join(allowed) or 'none'}; set them with audit adjudicators)")
    if project.read_only:
        raise WorkstationError("this project is open read-only: the adjudication cannot be recorded")
    val = None if value is None else scheme.validate(value)
    if val is not None and not (note or "").strip():
        raise WorkstationError("an adjudication needs a note (why this label)")
    return int(project.labels.add(scheme.task, scheme.target, str(target_id), who, val,
                                  notes=(note or "").strip() or None, source=ADJUDICATION))

