"""Judges: every automatic source of an outcome or a score for a method's items, side by side.

A *judge* is a named, versioned source of an automatic outcome and/or score for the targets of
one label task: the spatial checker under one stored config (``spatial.checker:<config hash>``),
GenEval's position rule on the same detections, MetaLogic's comparison, a ProtoBias metric, a
DyEval pre-mark. It speaks the values of its task (PASS / FAIL / UNDECIDABLE, ALIGNED /
MISALIGNED / UNDECIDABLE, …); the value that abstains is ``abstain``. A method lists its judges
with its optional ``judges(project)`` hook (`workstation.evaluation.base.METHOD_HOOKS`), which
returns a `MethodJudges`: the judges, how to load the targets (their ids and the cluster each
belongs to, the prompt its seeds share) and how to read the humans' value of each target through
the task's kept label selection (`workstation.evaluation.selection`).

Nothing is computed when the judges are listed: a judge's output is computed when asked
(`judge_output`), over all the targets at once, and kept for the `JudgeRun` it was asked in.
An item a judge did not judge has no outcome (None) and no score (NaN): it is its own stratum,
never a guess. `JudgeOutput.covered` says how many it judged.

The agreement table (`agreement_rows`) sets every two judges that give outcomes against each
other, and each against the humans: over the items both judged, the share both decided
(``coverage``), the accuracy (agreement) over the items both decided and Cohen's κ there, each
with its 95 % interval resampling the clusters (prompts) with all their items
(`workstation.evaluation.intervals`). The window, the report and the `judges` command read the
same rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import WorkstationError
from .intervals import N_BOOT, Estimate, kappa_estimate, ratio_estimates

__all__ = ["Judge", "Targets", "MethodJudges", "JudgeOutput", "JudgeRun", "judge_output", "agreement_rows",
           "judge_rows", "disagreement_strata", "HUMAN", "AGREEMENT_COLUMNS", "JUDGE_COLUMNS",
           "report_tables", "report_html", "interval_text"]

#: the name of the humans' column in the agreement table
HUMAN = "human"

#: the columns of one row of the agreement table
AGREEMENT_COLUMNS = ("judge_a", "judge_b", "items", "both_judged", "both_decided", "coverage", "coverage_lo",
                     "coverage_hi", "accuracy", "accuracy_lo", "accuracy_hi", "kappa", "kappa_lo", "kappa_hi",
                     "units", "interval")
#: the columns of one row of the judges' list
JUDGE_COLUMNS = ("judge", "title", "version", "task", "items", "covered", "decided", "kind")


@dataclass(frozen=True)
class Targets:
    """The targets the judges of one method speak of: their ids (object), the cluster each
    belongs to (object: the prompt its seeds share, the interval's unit) and, in ``cache``,
    whatever the judges load once and share (the dataset, the detections)."""

    ids: np.ndarray
    cluster: np.ndarray
    cache: dict[str, Any] = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len(self.ids)


#: a judge's computation: (project, targets) -> (outcome: object array of values or None,
#: score: float64 array, NaN where none), both aligned with ``targets.ids``
Compute = Callable[[Any, Targets], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Judge:
    """A named, versioned source of automatic outcomes and/or scores for a task's targets.

    ``name`` is unique within its method ("spatial.checker:1a2b3c4d", "spatial.geneval:0.3/0.1");
    ``version`` what changes it (a config hash, a scorer id); ``values`` the task's values it can
    give (empty: score only); ``abstain`` its abstaining value ("" when it never abstains);
    ``score`` what its score is ("" when it gives none)."""

    name: str
    title: str
    version: str
    task: str
    values: tuple[str, ...]
    compute: Compute = field(compare=False, repr=False)
    abstain: str = ""
    score: str = ""
    description: str = ""
    short: str = ""  # a few words for a column header ("GenEval"); the name where empty

    @property
    def kind(self) -> str:
        if self.values and self.score:
            return "outcome and score"
        return "outcome" if self.values else "score"


@dataclass(frozen=True)
class MethodJudges:
    """What a method's ``judges(project)`` hook returns: its judges (listed, not computed), how to
    load the targets, and the humans' value of each target through the kept label selection
    (None where a target has none; None as the function: the task has no human labels to read).
    ``values`` are the values the judges and humans speak, ``abstain`` the abstaining one."""

    method: str
    task: str
    values: tuple[str, ...]
    judges: tuple[Judge, ...]
    targets: Callable[[Any], Targets]
    human: Callable[[Any, Targets], np.ndarray] | None = None
    abstain: str = ""
    item: str = "item"
    cluster: str = "prompt"
    human_title: str = "the humans (kept label selection)"

    def judge(self, name: str) -> Judge:
        for j in self.judges:
            if j.name == name:
                return j
        raise WorkstationError(f"{self.method} has no judge {name!r} (judges: "
                               f"{', '.join(j.name for j in self.judges) or 'none'})")


@dataclass(frozen=True)
class JudgeOutput:
    """One judge over all the targets: ``outcome`` (object: a value of the judge's, or None where
    it did not judge the item) and ``score`` (float64, NaN where it gave none)."""

    judge: Judge
    outcome: np.ndarray
    score: np.ndarray

    def __len__(self) -> int:
        return len(self.outcome)

    @property
    def judged(self) -> np.ndarray:
        """Items the judge gave an outcome or a score."""
        return _present(self.outcome) | np.isfinite(self.score)

    @property
    def decided(self) -> np.ndarray:
        """Items the judge gave an outcome that is not its abstaining value."""
        return _decided(self.outcome, self.judge.abstain)

    @property
    def covered(self) -> int:
        return int(self.judged.sum())


def _present(values: np.ndarray) -> np.ndarray:
    return np.fromiter((v is not None for v in values.tolist()), bool, len(values))


def _decided(values: np.ndarray, abstain: str) -> np.ndarray:
    return np.fromiter((v is not None and v != abstain for v in values.tolist()), bool, len(values))


def _check(judge: Judge, targets: Targets, outcome: Any, score: Any) -> JudgeOutput:
    n = len(targets)
    o = np.empty(n, dtype=object)
    o[:] = list(outcome) if len(outcome) == n else [None] * n
    s = np.asarray(score, np.float64)
    if len(outcome) != n or len(s) != n:
        raise WorkstationError(f"judge {judge.name!r} gave {len(outcome)} outcomes and {len(s)} scores for "
                               f"{n} items")
    bad = {v for v in o.tolist() if v is not None and v not in judge.values}
    if bad:
        raise WorkstationError(f"judge {judge.name!r} gave {', '.join(map(repr, sorted(map(str, bad))))}, "
                               f"not one of its values {', '.join(judge.values)}")
    return JudgeOutput(judge, o, s)


class JudgeRun:
    """A method's judges over one project, computed when asked and kept: the targets are loaded
    once, each judge computed once, the humans read once."""

    def __init__(self, project: Any, judges: MethodJudges) -> None:
        self.project = project
        self.spec = judges
        self._targets: Targets | None = None
        self._out: dict[str, JudgeOutput] = {}
        self._human: np.ndarray | None = None

    @property
    def targets(self) -> Targets:
        if self._targets is None:
            self._targets = self.spec.targets(self.project)
        return self._targets

    def output(self, name: str) -> JudgeOutput:
        hit = self._out.get(name)
        if hit is None:
            j = self.spec.judge(name)
            t = self.targets
            outcome, score = j.compute(self.project, t)
            hit = self._out[name] = _check(j, t, outcome, score)
        return hit

    def human(self) -> np.ndarray:
        """The humans' value per target (None: no selected label; a disputed target has none)."""
        if self._human is None:
            n = len(self.targets)
            if self.spec.human is None:
                self._human = np.full(n, None, dtype=object)
            else:
                h = np.asarray(self.spec.human(self.project, self.targets), dtype=object)
                if len(h) != n:
                    raise WorkstationError(f"{self.spec.method}: {len(h)} human values for {n} items")
                self._human = h
        return self._human


def judge_output(project: Any, judges: MethodJudges, name: str) -> JudgeOutput:
    """One judge's output over the method's targets (computed now)."""
    return JudgeRun(project, judges).output(name)


def judge_rows(run: JudgeRun) -> list[dict[str, Any]]:
    """One row per judge (and the humans): its name, title, version, task, the items, how many it
    judged and how many it decided."""
    n = len(run.targets)
    rows = []
    for j in run.spec.judges:
        o = run.output(j.name)
        rows.append({"judge": j.name, "title": j.title, "version": j.version, "task": j.task, "items": n,
                     "covered": o.covered, "decided": int(o.decided.sum()), "kind": j.kind})
    if run.spec.human is not None:
        h = run.human()
        rows.append({"judge": HUMAN, "title": run.spec.human_title, "version": "", "task": run.spec.task,
                     "items": n, "covered": int(_present(h).sum()),
                     "decided": int(_decided(h, run.spec.abstain).sum()), "kind": "outcome"})
    return rows


def _codes(values: np.ndarray, names: Sequence[str], abstain: str) -> np.ndarray:
    """-2 not judged, -1 abstained, else the index of the value in ``names``."""
    pos = {v: i for i, v in enumerate(names)}
    return np.fromiter((-2 if v is None else -1 if v == abstain else pos.get(v, -2) for v in values.tolist()),
                       np.int64, len(values))


def _kappa_units(unit: np.ndarray) -> np.ndarray:
    """The units κ's bootstrap resamples: the clusters themselves, or — past `MAX_BOOT_UNITS` of
    them, where resampling each would cost seconds per row — the clusters dealt into that many
    groups (cluster code modulo the number): groups of independent clusters are independent, so
    the interval still resamples whole clusters, only coarser."""
    from ..util.grouping import factorize
    from .intervals import MAX_BOOT_UNITS

    codes, names = factorize(unit, sort=False)
    if len(names) <= MAX_BOOT_UNITS:
        return unit
    return np.asarray(codes, np.int64) % MAX_BOOT_UNITS


def pair_agreement(a: np.ndarray, b: np.ndarray, cluster: np.ndarray, *, values: Sequence[str], abstain: str,
                   n_boot: int = N_BOOT) -> dict[str, Any]:
    """Two outcome columns (object: a value, the abstaining value, or None for not judged) over the
    same items: coverage (both decided / both judged), accuracy (equal / both decided) and Cohen's κ
    over the items both decided, each with its interval resampling ``cluster``."""
    names = [v for v in values if v != abstain]
    ca, cb = _codes(np.asarray(a, dtype=object), names, abstain), _codes(np.asarray(b, dtype=object), names, abstain)
    both = (ca > -2) & (cb > -2)
    dec = (ca >= 0) & (cb >= 0)
    unit = np.asarray(cluster, dtype=object)
    cov, acc = ratio_estimates(np.stack([dec, (ca == cb) & dec], axis=1).astype(np.float64),
                               np.stack([both, dec], axis=1).astype(np.float64), unit, n_boot=n_boot)
    k = kappa_estimate(np.where(dec, ca, -1), np.where(dec, cb, -1), _kappa_units(unit),
                       categories=max(len(names), 1), n_boot=n_boot)
    return {"items": len(ca), "both_judged": int(both.sum()), "both_decided": int(dec.sum()),
            **cov.columns("coverage"), **acc.columns("accuracy"), **k.columns("kappa"),
            "units": int(len(set(unit[dec].tolist()))), "interval": acc.method,
            "_estimates": (cov, acc, k)}


def agreement_rows(run: JudgeRun, *, n_boot: int = N_BOOT, human: bool = True) -> list[dict[str, Any]]:
    """The agreement table: every two judges that give outcomes (in listing order), then each
    against the humans (when the method reads them). Columns `AGREEMENT_COLUMNS`."""
    spec = run.spec
    outcome_judges = [j for j in spec.judges if j.values]
    cols = [(j.name, run.output(j.name).outcome) for j in outcome_judges]
    pairs = [(cols[i], cols[k]) for i in range(len(cols)) for k in range(i + 1, len(cols))]
    if human and spec.human is not None:
        h = run.human()
        pairs += [(c, (HUMAN, h)) for c in cols]
    rows = []
    for (na, a), (nb, b) in pairs:
        r = pair_agreement(a, b, run.targets.cluster, values=spec.values, abstain=spec.abstain, n_boot=n_boot)
        r.pop("_estimates")
        rows.append({"judge_a": na, "judge_b": nb, **r})
    return rows


def disagreement_strata(a: JudgeOutput, b: JudgeOutput) -> tuple[np.ndarray, list[str]]:
    """The stratum of every item by two judges: 0 both decided and agree, 1 both decided and
    disagree, 2 not both decided (one did not judge it or abstained), with their names."""
    da, db = a.decided, b.decided
    same = np.fromiter((x == y for x, y in zip(a.outcome.tolist(), b.outcome.tolist())), bool, len(a))
    code = np.where(da & db, np.where(same, 0, 1), 2).astype(np.int64)
    return code, ["agree", "disagree", "not both decided"]


# ---- report --------------------------------------------------------------------------------------

def report_tables(run: JudgeRun, *, n_boot: int = N_BOOT) -> dict[str, list[dict[str, Any]]]:
    """The report's two tables of a method's judges: ``judges`` (`judge_rows`) and
    ``judge_agreement`` (`agreement_rows`)."""
    return {"judges": judge_rows(run), "judge_agreement": agreement_rows(run, n_boot=n_boot)}


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "—" if not math.isfinite(x) else f"{x:.4f}"
    return str(x)


def interval_text(row: Mapping[str, Any], name: str) -> str:
    """``0.8123 [0.7512, 0.8650]`` of a row's figure ``name``; "—" where it is undefined (the
    command, the window and the report write the figures so)."""
    v, lo, hi = row[name], row[f"{name}_lo"], row[f"{name}_hi"]
    if not (isinstance(v, float) and math.isfinite(v)):
        return "—"
    if isinstance(lo, float) and math.isfinite(lo) and isinstance(hi, float) and math.isfinite(hi):
        return f"{v:.4f} [{lo:.4f}, {hi:.4f}]"
    return f"{v:.4f}"


def report_html(tables: Mapping[str, Sequence[Mapping[str, Any]]], *, item: str = "items",
                cluster: str = "prompt") -> str:
    """The judges' part of a method's report section (HTML)."""
    import html

    e = html.escape
    parts = ["<h3>Judges</h3>",
             f"<p class='src'>Every automatic source of an outcome for these {e(item)}s; an item a judge did not "
             "judge is counted as not judged, never guessed.</p>",
             "<table><tr><th>judge</th><th>what</th><th>version</th><th>judged</th><th>decided</th></tr>"]
    for r in tables.get("judges", ()):
        parts.append(f"<tr><td>{e(str(r['judge']))}</td><td class='text'>{e(str(r['title']))}</td>"
                     f"<td>{e(str(r['version']))}</td><td>{r['covered']} of {r['items']}</td>"
                     f"<td>{r['decided']}</td></tr>")
    parts.append("</table>")
    rows = tables.get("judge_agreement", ())
    if rows:
        parts += ["<h3>Judge agreement</h3>",
                  f"<p class='src'>Over the {e(item)}s both judged: coverage is the share both decided; accuracy "
                  f"and Cohen's κ are over the {e(item)}s both decided; 95 % intervals resample the {e(cluster)}s "
                  "with all their items.</p>",
                  "<table><tr><th>judge</th><th>against</th><th>both judged</th><th>both decided</th>"
                  "<th>coverage</th><th>accuracy</th><th>κ</th></tr>"]
        for r in rows:
            parts.append(f"<tr><td>{e(str(r['judge_a']))}</td><td>{e(str(r['judge_b']))}</td>"
                         f"<td>{r['both_judged']}</td><td>{r['both_decided']}</td>"
                         f"<td>{interval_text(r, 'coverage')}</td><td>{interval_text(r, 'accuracy')}</td>"
                         f"<td>{interval_text(r, 'kappa')}</td></tr>")
        parts.append("</table>")
    return "\n".join(parts)


def estimate_of(row: Mapping[str, Any], name: str) -> Estimate:
    """A row's ``name`` (coverage, accuracy, kappa) as an `Estimate`."""
    return Estimate(float(row[name]), float(row[f"{name}_lo"]), float(row[f"{name}_hi"]))
