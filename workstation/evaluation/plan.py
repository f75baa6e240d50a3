"""Audit plans: a stated goal, the next items to label, the estimate as labels come in, and a
stopping rule — one core for every method with a human label and an automated outcome.

**The table.** A method's adapter fills an `AuditTable`: per item (an image, an image pair, a
triplet) its id, its cluster (the prompt its seeds share), the automated outcome (1 positive,
0 negative, -1 abstained or none: the checker's PASS / FAIL / UNDECIDABLE, a comparator's
MISALIGNED / ALIGNED / UNDECIDABLE, a metric's preference, a CLIPScore pre-mark), its confidence
in [0, 1], and the human label (1, 0, 2 = undecidable, -1 = none), plus the label targets an item
stands for.

**The goal.** `Goal`: a quantity (`QUANTITIES`: the true rate of the positive label over every
item, the automated outcome's precision on its positives, its agreement with humans on the items
it decides), a half-width, a confidence level and the sampling unit (single items, or whole
prompts with all their items). Each quantity is the mean of a 0/1 value ``z`` over a domain the
automated outcome fixes, so its denominator is known.

**The design.** `AuditPlan` splits the units in scope into strata by the automated outcome and
its confidence (quantile bins), fixes a seeded random order inside every stratum, and draws the
next unit from the stratum where one more label shrinks the variance most (sequential Neyman
allocation, N_h² σ_h² (1/d_h − 1/(d_h + 1))), with σ_h judged from the automated outcome's
confidence — as active inference draws where the model is unsure — never from the labels so far
(that would bias the estimate). Every stratum gets `MIN_PER_STRATUM` labels first. Inside a
stratum the labelled units are a simple random sample, so `ppi.design_estimate` (weights
N_h/n_h = 1/π) is the estimate.

**A second judge.** `SecondJudge`: another automatic judge's score per item (NaN where it did
not judge). A plan given one bins that score inside each outcome group (`make_strata_judged`;
the items it did not judge are strata of their own), takes the allocation's prior from it and
uses it as the prediction of the prediction-powered estimate; it records the judge's name and
the scores' digest, and `load_plan` refuses another judge or changed scores. Every status
reports the effective sample size (`AuditPlan.effective_labels`).

**The stopping rule.** The goal is reached when every stratum has its first labels and the
interval's half-width (t·SE, unclipped) is at most the goal's; when every unit is labelled the
rate is known exactly. A drawn unit without a label stays the next target (skipping it would let
the skipped items bias the estimate). Blind consistency re-checks of earlier units come back in
the queue at the plan's re-check fraction; they add no new unit.

Only units the plan drew count (labels made elsewhere were not drawn at random). The plan keeps
the table it was made on (outcomes and confidences frozen), so a later change of the checker's
config does not change what was sampled. `save_plan` / `load_plan` keep it in the project.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import WorkstationError
from .ppi import Estimate, design_estimate, wilson_estimate

__all__ = ["margin_confidence", "AuditTable", "SecondJudge", "Goal", "Quantity", "QUANTITIES", "UNITS", "PlanTarget", "PlanStatus", "AuditPlan",
           "PlanStale", "check_design", "save_plan", "load_plan", "stored_table", "list_plans", "POSITIVE", "NEGATIVE",
           "UNDECIDED", "NO_LABEL", "ABSTAINED"]

POSITIVE, NEGATIVE, UNDECIDED, NO_LABEL = 1, 0, 2, -1
ABSTAINED = -1  # automated outcome: abstained, or none

UNITS: dict[str, str] = {"item": "single items", "cluster": "whole prompts (every item of a drawn prompt)"}

MIN_PER_STRATUM = 2
MIN_STRATUM_UNITS = 20
DEFAULT_BINS = 3
RECHECK_GAP = 3
MAX_SEED = 2**63 - 1  # a plan's seed, as every seed of the project: a signed 64-bit integer
MAX_BINS = 50  # confidence bins per outcome group
MAX_MIN_PER_STRATUM = 1000
MAX_MIN_STRATUM_UNITS = 10**9
SCORE_BINS = 3  # a second judge's score bins inside each of the first judge's outcome groups


class PlanStale(WorkstationError):
    """A stored plan that cannot be used as it is: its method is gone, every item it was made on
    left the project, or what the project holds of it is not a plan (a value out of range, a draw
    of no unit). The message is one line naming the plan and the reason."""


def _whole(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        shown = repr(v)[:40]
        raise WorkstationError(f"the plan's {name} must be a whole number from {lo} to {hi:,}, got {shown}")
    return int(v)


def check_design(*, seed: Any = 0, bins: Any = DEFAULT_BINS, recheck_fraction: Any = 0.0,
                 min_per_stratum: Any = MIN_PER_STRATUM, min_stratum_units: Any = MIN_STRATUM_UNITS) -> dict[str, Any]:
    """A plan's design values checked (a seed, the confidence bins, the re-check fraction, the
    stratum minimums): whole numbers in range, a finite fraction in [0, 0.5]; anything else is one
    `WorkstationError` naming the value. Returns them as plain numbers."""
    rf = recheck_fraction
    if isinstance(rf, bool) or not isinstance(rf, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(rf)) or not 0.0 <= float(rf) <= 0.5:
        raise WorkstationError(f"the re-check fraction must be a number in [0, 0.5], got {repr(rf)[:40]}")
    return {"seed": _whole("seed", seed, 0, MAX_SEED), "bins": _whole("number of confidence bins", bins, 1, MAX_BINS),
            "recheck_fraction": float(rf),
            "min_per_stratum": _whole("first labels per stratum", min_per_stratum, 1, MAX_MIN_PER_STRATUM),
            "min_stratum_units": _whole("units per stratum", min_stratum_units, 1, MAX_MIN_STRATUM_UNITS)}


# ---------------------------------------------------------------------------------------------
# The generic table every adapter fills
# ---------------------------------------------------------------------------------------------


def _obj(values: Any) -> np.ndarray:
    seq = list(values)
    a = np.empty(len(seq), dtype=object)
    a[:] = seq
    return a


@dataclass
class AuditTable:
    """Items with an automated outcome and (maybe) a human label; see the module docstring.

    ``positive`` / ``negative`` name the two human values ("PASS" / "FAIL"); ``outcome_title``
    names what made the outcome ("the checker"); ``targets[i]`` is the tuple of label-target ids
    item i stands for (its own id by default); ``source`` records where the outcomes came from
    (config version, metric, threshold); ``titles`` may name a quantity in the method's own words
    ("share of triplets humans rate the correct image higher")."""

    method: str
    task: str
    item_id: np.ndarray
    cluster: np.ndarray
    outcome: np.ndarray
    confidence: np.ndarray
    human: np.ndarray
    targets: Any = None  # per item a sequence of label-target ids (default: the item id)
    positive: str = "PASS"
    negative: str = "FAIL"
    outcome_title: str = "the automated outcome"
    item_title: str = "item"
    cluster_title: str = "prompt"
    source: dict[str, Any] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)  # a quantity's name in the method's words

    def __post_init__(self) -> None:
        self.item_id = _obj(str(x) for x in np.asarray(self.item_id, dtype=object).tolist())
        self.cluster = _obj(str(x) for x in np.asarray(self.cluster, dtype=object).tolist())
        self.outcome = np.asarray(self.outcome, np.int8).reshape(-1)
        conf = np.asarray(self.confidence, np.float64).reshape(-1)
        self.confidence = np.clip(np.nan_to_num(conf, nan=0.0), 0.0, 1.0)
        self.human = np.asarray(self.human, np.int8).reshape(-1)
        if self.targets is None:
            self.targets = _obj((str(i),) for i in self.item_id.tolist())
        else:
            self.targets = _obj(tuple(str(t) for t in ts) for ts in list(self.targets))
        self.validate()

    def __len__(self) -> int:
        return len(self.item_id)

    def validate(self) -> None:
        n = len(self.item_id)
        for name in ("cluster", "outcome", "confidence", "human", "targets"):
            if len(getattr(self, name)) != n:
                raise WorkstationError(f"audit table of {self.method}: {name} has {len(getattr(self, name))} "
                                       f"entries for {n} items")
        if n and len(set(self.item_id.tolist())) != n:
            raise WorkstationError(f"audit table of {self.method}: item ids repeat")
        bad_o = ~np.isin(self.outcome, (POSITIVE, NEGATIVE, ABSTAINED))
        if bad_o.any():
            raise WorkstationError(f"audit table of {self.method}: outcome code {int(self.outcome[bad_o][0])} "
                                   "(expected 1, 0 or -1)")
        bad_h = ~np.isin(self.human, (POSITIVE, NEGATIVE, UNDECIDED, NO_LABEL))
        if bad_h.any():
            raise WorkstationError(f"audit table of {self.method}: human code {int(self.human[bad_h][0])} "
                                   "(expected 1, 0, 2 or -1)")

    def with_human(self, human: np.ndarray) -> AuditTable:
        """The same table with other human labels (aligned with the items)."""
        h = np.asarray(human, np.int8).reshape(-1)
        if len(h) != len(self.item_id):
            raise WorkstationError(f"{len(h)} human labels for a table of {len(self.item_id)} items")
        bad = ~np.isin(h, (POSITIVE, NEGATIVE, UNDECIDED, NO_LABEL))
        if bad.any():
            raise WorkstationError(f"audit table of {self.method}: human code {int(h[bad][0])} (expected 1, 0, 2 or -1)")
        out = copy.copy(self)
        out.human = h
        out.source = dict(self.source)
        out.titles = dict(self.titles)
        return out

    def human_for(self, item_ids: Sequence[str]) -> np.ndarray:
        """This table's human codes for ``item_ids`` (-1 for an item it does not hold)."""
        pos = {s: i for i, s in enumerate(self.item_id.tolist())}
        return np.array([self.human[pos[s]] if s in pos else NO_LABEL for s in item_ids], np.int8)

    def soft_prediction(self) -> np.ndarray:
        """The automated outcome as a number in [0, 1]: ½ ± ½·confidence for a positive / negative
        outcome, ½ for an abstention."""
        c = self.confidence
        return np.where(self.outcome == POSITIVE, 0.5 + 0.5 * c,
                        np.where(self.outcome == NEGATIVE, 0.5 - 0.5 * c, 0.5))


def margin_confidence(margin: np.ndarray) -> np.ndarray:
    """A confidence in [0, 1] from a margin (a score's distance from a threshold, a difference of
    two scores): the margin's rank among the finite ones (ties share their mean rank); 0 where it
    is not finite. Scale-free, so any metric's margins can stratify an audit."""
    x = np.asarray(margin, np.float64).reshape(-1)
    out = np.zeros(len(x))
    ok = np.isfinite(x)
    v = x[ok]
    if len(v) > 1:
        order = np.argsort(v, kind="stable")
        ranks = np.empty(len(v))
        ranks[order] = np.arange(len(v), dtype=np.float64)
        _, inv, counts = np.unique(v, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        mean_rank = np.bincount(inv, weights=ranks, minlength=len(counts)) / counts
        out[ok] = mean_rank[inv] / (len(v) - 1)
    elif len(v) == 1:
        out[ok] = 1.0
    return out


@dataclass(frozen=True)
class SecondJudge:
    """Another automatic judge of the table's items: its name and, per item of the table (aligned
    with it), a score in [0, 1] that predicts the human label — NaN where it did not judge the
    item. A plan given one stratifies by its score inside each of the first judge's outcome groups
    (the abstentions, where the first judge says nothing, included: `make_strata_judged`), keeps
    the items it did not judge in strata of their own (never a guessed score), draws by it (the
    allocation's prior) and uses it as the prediction of the prediction-powered estimate. ``digest`` fingerprints the scores: a stored
    plan refuses a judge whose scores changed."""

    name: str
    scores: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise WorkstationError(f"a second judge needs a name, got {repr(self.name)[:40]}")
        try:
            v = np.asarray(self.scores, np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise WorkstationError(f"the scores of the second judge {self.name[:40]!r} are not numbers") from None
        bad = np.flatnonzero(~np.isnan(v) & ~((v >= 0.0) & (v <= 1.0)))
        if len(bad):
            raise WorkstationError(f"the second judge {self.name[:40]!r} scores item {int(bad[0]) + 1} "
                                   f"{float(v[bad[0]])} (expected a number in [0, 1], or none where it did not judge)")
        v = v.copy()
        v.setflags(write=False)
        object.__setattr__(self, "scores", v)

    def __len__(self) -> int:
        return len(self.scores)

    @staticmethod
    def aligned(name: str, table: AuditTable, scores: Mapping[str, float]) -> SecondJudge:
        """The judge of ``table``'s items from its scores by item id (an item without a score: not
        judged, NaN — never a guess)."""
        return SecondJudge(name, np.array([scores.get(str(i), np.nan) for i in table.item_id.tolist()], np.float64))

    @property
    def judged(self) -> int:
        """How many items it judged."""
        return int(np.isfinite(self.scores).sum())

    @property
    def digest(self) -> str:
        """sha256 of the scores (little-endian float64, every NaN the same)."""
        import hashlib

        v = np.where(np.isnan(self.scores), np.nan, self.scores).astype("<f8")
        return hashlib.sha256(v.tobytes()).hexdigest()

    def record(self) -> dict[str, Any]:
        """What a stored plan keeps of it: the name, the scores' digest, the items judged."""
        return {"name": self.name, "digest": self.digest, "judged": self.judged, "items": len(self)}

    def coverage_text(self, item: str = "item") -> str:
        """``"judged 480 of the 800 items (320 without its score are their own strata)"``."""
        n, k = len(self), self.judged
        if k == n:
            return f"judged all {n:,} {item}s"
        return f"judged {k:,} of the {n:,} {item}s ({n - k:,} without its score are strata of their own)"


# ---------------------------------------------------------------------------------------------
# Quantities
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quantity:
    """A rate an audit estimates: the mean of a 0/1 value over a domain the outcome fixes."""

    key: str
    domain: Callable[[AuditTable], np.ndarray]  # bool per item
    value: Callable[[AuditTable], np.ndarray]  # float per item: 0/1, NaN without a human label
    prediction: Callable[[AuditTable], np.ndarray]  # float in [0, 1] per item
    group: Callable[[AuditTable], np.ndarray]  # int per item: the outcome group strata start from
    describe: Callable[[AuditTable], str]
    meaning: Callable[[AuditTable], str]


def _labelled(t: AuditTable, v: np.ndarray) -> np.ndarray:
    return np.where(t.human >= 0, v.astype(np.float64), np.nan)


def _conf_prediction(t: AuditTable) -> np.ndarray:
    return 0.5 + 0.5 * t.confidence


QUANTITIES: dict[str, Quantity] = {
    "rate": Quantity(
        "rate",
        domain=lambda t: np.ones(len(t), bool),
        value=lambda t: _labelled(t, t.human == POSITIVE),
        prediction=AuditTable.soft_prediction,
        group=lambda t: t.outcome.astype(np.int64) + 1,
        describe=lambda t: t.titles.get("rate") or f"true {t.positive} rate",
        meaning=lambda t: (f"share of all {t.item_title}s a human labels {t.positive} (an undecidable "
                           "label counts as not " + t.positive + ")"),
    ),
    "precision": Quantity(
        "precision",
        domain=lambda t: t.outcome == POSITIVE,
        value=lambda t: _labelled(t, t.human == POSITIVE),
        prediction=_conf_prediction,
        group=lambda t: np.zeros(len(t), np.int64),
        describe=lambda t: t.titles.get("precision") or f"{t.outcome_title}'s {t.positive} precision",
        meaning=lambda t: (f"share of the {t.item_title}s {t.outcome_title} calls {t.positive} that a human "
                           f"labels {t.positive}"),
    ),
    "agreement": Quantity(
        "agreement",
        domain=lambda t: t.outcome != ABSTAINED,
        value=lambda t: _labelled(t, t.human == t.outcome),
        prediction=_conf_prediction,
        group=lambda t: t.outcome.astype(np.int64),
        describe=lambda t: t.titles.get("agreement") or f"{t.outcome_title}'s agreement with humans",
        meaning=lambda t: (f"share of the {t.item_title}s {t.outcome_title} decides where a human gives the "
                           "same label (an undecidable human label counts as disagreement)"),
    ),
}


@dataclass(frozen=True)
class Goal:
    """What must be known, and how well: ``quantity`` to ± ``half_width`` at ``confidence``,
    sampling ``unit`` "item" or "cluster" (whole prompts)."""

    quantity: str
    half_width: float
    confidence: float = 0.95
    unit: str = "item"

    def validate(self) -> None:
        if not isinstance(self.quantity, str) or self.quantity not in QUANTITIES:
            raise WorkstationError(f"unknown audit quantity {repr(self.quantity)[:40]} (choose from "
                                   f"{', '.join(QUANTITIES)})")
        if not (isinstance(self.half_width, (int, float)) and not isinstance(self.half_width, bool)
                and 0.0 < float(self.half_width) < 0.5):
            raise WorkstationError(f"the goal's half-width must be between 0 and 0.5 (e.g. 0.02 for ±2 %), "
                                   f"got {repr(self.half_width)[:40]}")
        if not (isinstance(self.confidence, (int, float)) and not isinstance(self.confidence, bool)
                and 0.5 <= float(self.confidence) < 1.0):
            raise WorkstationError(f"the goal's confidence must be in [0.5, 1), got {repr(self.confidence)[:40]}")
        if not isinstance(self.unit, str) or self.unit not in UNITS:
            raise WorkstationError(f"unknown sampling unit {repr(self.unit)[:40]} (choose from {', '.join(UNITS)})")

    def to_dict(self) -> dict[str, Any]:
        return {"quantity": self.quantity, "half_width": float(self.half_width),
                "confidence": float(self.confidence), "unit": self.unit}

    @staticmethod
    def from_dict(d: Any) -> Goal:
        """A stored goal, every field checked (numbers must be numbers: no text, no booleans)."""
        if not isinstance(d, Mapping) or "quantity" not in d or "half_width" not in d:
            raise WorkstationError("an audit goal needs quantity and half_width")
        hw, conf = d["half_width"], d.get("confidence", 0.95)
        for v in (hw, conf):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise WorkstationError(f"an audit goal's half-width and confidence are numbers, got {repr(v)[:40]}")
        g = Goal(d["quantity"], float(hw), float(conf), d.get("unit", "item"))
        g.validate()
        return g

    def text(self, table: AuditTable | None = None) -> str:
        """``"the checker's PASS precision to ±2.0 % at 95 %"``."""
        what = QUANTITIES[self.quantity].describe(table) if table is not None else self.quantity
        unit = "" if self.unit == "item" else f", labelling whole {table.cluster_title if table else 'prompt'}s"
        return f"{what} to ±{100 * self.half_width:.1f} % at {100 * self.confidence:g} %{unit}"


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanTarget:
    """One entry of the plan's queue: a sampling unit, its items and their label targets."""

    unit: str  # the item id, or the cluster id for whole-prompt units
    items: tuple[str, ...]
    targets: tuple[str, ...]
    recheck: bool = False


@dataclass(frozen=True)
class PlanStatus:
    """What the window shows: the goal, the estimate, labels so far, and whether it is reached."""

    goal: Goal
    goal_text: str
    meaning: str
    estimate: Estimate
    alternatives: tuple[Estimate, ...]
    labels: int  # labelled items the estimate uses
    units_labelled: int
    units_drawn: int
    units: int  # sampling units in scope
    items: int  # items in scope
    strata: int
    strata_started: int  # strata with their first labels
    reached: bool
    exhausted: bool
    message: str
    removed: int = 0  # items in scope the plan was made on that are no longer in the project
    #: labels × the variance a uniform sample of as many items would have / the estimate's variance
    effective_labels: float = float("nan")
    second_judge: str = ""  # the second judge's name and what it covers, or ""

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal.to_dict(), "goal_text": self.goal_text, "estimate": self.estimate.to_dict(),
                "alternatives": [e.to_dict() for e in self.alternatives], "labels": self.labels,
                "units_labelled": self.units_labelled, "units_drawn": self.units_drawn, "units": self.units,
                "items": self.items, "strata": self.strata, "strata_started": self.strata_started,
                "reached": self.reached, "exhausted": self.exhausted, "message": self.message,
                "removed": self.removed,
                "effective_labels": self.effective_labels if math.isfinite(self.effective_labels) else None,
                "second_judge": self.second_judge}


def _quantile_bins(values: np.ndarray, k: int) -> np.ndarray:
    """Up to k groups of nearly equal count by value; equal values stay in one group (a heap of
    equal confidences — an abstention's 0 — is one stratum, not split at random)."""
    n = len(values)
    if k <= 1 or n == 0:
        return np.zeros(n, np.int64)
    uniq, inv = np.unique(values, return_inverse=True)
    counts = np.bincount(inv.reshape(-1), minlength=len(uniq))
    cum = np.cumsum(counts) - counts / 2.0  # each distinct value at the middle of its run
    group = np.minimum((cum * k / n).astype(np.int64), k - 1)
    _, group = np.unique(group, return_inverse=True)  # number the groups that occur 0, 1, ...
    return group.reshape(-1)[inv.reshape(-1)].astype(np.int64)


def make_strata(group: np.ndarray, conf: np.ndarray, bins: int, min_units: int = MIN_STRATUM_UNITS) -> np.ndarray:
    """Stratum per unit: within each outcome group, confidence quantile bins (as many as `bins`
    while each keeps `min_units` units). Strata are numbered by (group, bin)."""
    out = np.empty(len(group), np.int64)
    next_code = 0
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        k = max(1, min(int(bins), len(idx) // max(1, min_units)))
        b = _quantile_bins(conf[idx], k)
        out[idx] = next_code + b
        next_code += int(b.max()) + 1
    return out


def make_strata_judged(group: np.ndarray, conf: np.ndarray, score: np.ndarray, bins: int,
                       min_units: int = MIN_STRATUM_UNITS, score_bins: int = SCORE_BINS) -> np.ndarray:
    """Strata with a second judge's score (NaN: not judged). Within each outcome group of the
    first judge: the units the second judge judged in up to `score_bins` quantile bins of its
    score (the score predicts the human label; the first judge's confidence says nothing inside
    its abstentions and, inside its decisions, only how sure it is of itself); the units it did
    not judge in strata of their own, by the first judge's confidence as `make_strata` bins it —
    never given a guessed score. Each stratum keeps `min_units` units where it can; strata are
    numbered 0, 1, ... in order of appearance."""
    out = np.empty(len(group), np.int64)
    nxt = 0
    for g in np.unique(group):
        idx = np.flatnonzero(group == g)
        judged = np.isfinite(score[idx])
        for sub, by_score in ((idx[judged], True), (idx[~judged], False)):
            if len(sub) == 0:
                continue
            room = max(1, len(sub) // max(1, min_units))
            b = (_quantile_bins(score[sub], min(int(score_bins), room)) if by_score
                 else _quantile_bins(conf[sub], min(int(bins), room)))
            out[sub] = nxt + b
            nxt += int(b.max()) + 1
    return out


class AuditPlan:
    """An audit plan over a frozen `AuditTable` (see the module docstring).

    ``draws`` restores the units drawn so far, in order, as (unit id, is re-check). Human labels
    come from the table given (`update_labels` replaces them)."""

    def __init__(self, table: AuditTable, goal: Goal, *, seed: int = 0, bins: int = DEFAULT_BINS,
                 recheck_fraction: float = 0.0, draws: Sequence[tuple[str, bool]] = (), name: str = "",
                 plan_id: int | None = None, min_per_stratum: int = MIN_PER_STRATUM,
                 min_stratum_units: int = MIN_STRATUM_UNITS, present: np.ndarray | None = None,
                 second_judge: SecondJudge | None = None) -> None:
        goal.validate()
        if second_judge is not None:
            if not isinstance(second_judge, SecondJudge):
                raise WorkstationError("a plan's second judge is a SecondJudge (a name and a score per item)")
            if len(second_judge) != len(table):
                raise WorkstationError(f"the second judge {second_judge.name[:40]!r} scores {len(second_judge):,} "
                                       f"items, the table holds {len(table):,}")
        self.second_judge = second_judge
        design = check_design(seed=seed, bins=bins, recheck_fraction=recheck_fraction,
                              min_per_stratum=min_per_stratum, min_stratum_units=min_stratum_units)
        self.table = table
        self.goal = goal
        self.seed = design["seed"]
        self.bins = design["bins"]
        self.recheck_fraction = design["recheck_fraction"]
        self.name = name
        self.plan_id = plan_id
        self.audit_set_id: int | None = None
        self.min_per_stratum = design["min_per_stratum"]
        self.min_stratum_units = design["min_stratum_units"]
        q = QUANTITIES[goal.quantity]
        self.quantity = q
        dom = np.flatnonzero(q.domain(table))
        if len(dom) == 0:
            raise WorkstationError(f"nothing to audit: no {table.item_title} is in scope of "
                                   f"{q.describe(table)} ({q.meaning(table)})")
        self._dom = dom
        self._f_items = np.asarray(q.prediction(table), np.float64)[dom]
        groups = np.asarray(q.group(table), np.int64)[dom]
        conf = table.confidence[dom]
        if goal.unit == "item":
            self.unit_ids = table.item_id[dom]
            unit_of = np.arange(len(dom), dtype=np.int64)
        else:
            names, unit_of = np.unique(table.cluster[dom].astype(str), return_inverse=True)
            self.unit_ids = _obj(names.tolist())
            unit_of = unit_of.astype(np.int64).reshape(-1)
        self._unit_of = unit_of
        n_units = len(self.unit_ids)
        # the design is fixed on every item the plan was made on: strata and the order inside them
        # stay what they were when items leave the project (see `set_present`)
        m_all = np.bincount(unit_of, minlength=n_units).astype(np.float64)
        mean_f = np.bincount(unit_of, weights=self._f_items, minlength=n_units) / m_all
        mean_conf = np.bincount(unit_of, weights=conf, minlength=n_units) / m_all
        if goal.unit == "item":
            unit_group = groups
        else:  # a prompt's group: the share of its items the outcome predicts positive, in thirds
            unit_group = np.minimum((mean_f * 3).astype(np.int64), 2)
        # the second judge's score per item in scope (NaN: not judged) and per unit (the mean over
        # its items; a unit with an item it did not judge counts as not judged)
        self._s_items = (None if second_judge is None else np.asarray(second_judge.scores, np.float64)[dom])
        if self._s_items is None:
            self.stratum = make_strata(unit_group, mean_conf, self.bins, self.min_stratum_units)
        else:
            s_u = np.bincount(unit_of, weights=self._s_items, minlength=n_units) / m_all
            self.stratum = make_strata_judged(unit_group, mean_conf, s_u, self.bins, self.min_stratum_units)
        self.n_strata = int(self.stratum.max()) + 1
        # a seeded random order inside every stratum
        self._order: list[np.ndarray] = []
        for h in range(self.n_strata):
            members = np.flatnonzero(self.stratum == h)
            rng = np.random.default_rng([self.seed, 1729, h])
            self._order.append(members[rng.permutation(len(members))])
        self._unit_index = {str(u): i for i, u in enumerate(self.unit_ids.tolist())}
        self._item_rows: list[np.ndarray] | None = None
        self.draws: list[tuple[int, bool]] = []
        self._drawn = np.zeros(n_units, bool)
        self._rechecked: set[int] = set()
        self._restore(draws)
        self.set_present(present)
        self.update_labels(table.human)

    # ---- the population -------------------------------------------------------------------------
    def set_present(self, present: np.ndarray | None) -> None:
        """Which of the table's items are still in the project (bool per item; None: all). An item
        that left (its run was removed) leaves the plan: it is never drawn or handed out again, its
        label counts nowhere, and the estimate is over the items that remain. The strata and the
        seeded order stay those of the plan's making, so the units drawn from each stratum that
        remain are still a simple random sample of what remains of it, and the estimate stays the
        design's; an item that comes back (its run imported again) is in the plan again."""
        n = len(self.table)
        p = np.ones(n, bool) if present is None else np.asarray(present, bool).reshape(-1)
        if len(p) != n:
            raise WorkstationError(f"{len(p)} presence flags for a plan of {n} items")
        self._present = p
        live_item = p[self._dom]
        self._live_item = live_item
        n_units = self.n_units_made
        self.m_u = np.bincount(self._unit_of, weights=live_item.astype(np.float64), minlength=n_units)
        self._live_u = self.m_u > 0
        self.f_u = np.bincount(self._unit_of, weights=np.where(live_item, self._f_items, 0.0), minlength=n_units)
        # the prediction of the prediction-powered estimate: the second judge's score where it
        # judged, the first judge's prediction where it did not
        f_ppi = self._f_items if self._s_items is None else np.where(np.isfinite(self._s_items), self._s_items,
                                                                      self._f_items)
        self.fp_u = np.bincount(self._unit_of, weights=np.where(live_item, f_ppi, 0.0), minlength=n_units)
        live = self._live_u
        self.N_h = np.bincount(self.stratum[live], minlength=self.n_strata).astype(np.float64)
        # the prior of z per unit (its mean over the unit's items), for allocation before labels
        m = np.where(live, self.m_u, 1.0)
        p0 = np.clip(self.fp_u / m, 0.02, 0.98)
        rho = 0.3
        v0_u = m ** 2 * p0 * (1 - p0) * (rho + (1 - rho) / m)
        sums = np.bincount(self.stratum[live], weights=v0_u[live], minlength=self.n_strata)
        self.v0_h = np.maximum(sums / np.maximum(self.N_h, 1.0), 1e-3)
        self._d_h = np.bincount(self.stratum[self._drawn & live], minlength=self.n_strata).astype(np.int64)
        self._cursor = np.zeros(self.n_strata, np.int64)
        self._item_rows = None
        if hasattr(self, "_z_u"):
            self.update_labels(self.table.human)

    @property
    def removed_items(self) -> int:
        """Items in scope the plan was made on that are no longer in the project."""
        return int((~self._live_item).sum())

    @property
    def stale(self) -> bool:
        """Every item the plan was made on left the project: nothing is left to estimate."""
        return not bool(self._live_u.any())

    # ---- structure ------------------------------------------------------------------------------
    @property
    def n_units_made(self) -> int:
        """Sampling units the plan was made on (those that left the project included)."""
        return len(self.unit_ids)

    @property
    def n_units(self) -> int:
        """Sampling units in scope that are still in the project."""
        return int(self._live_u.sum())

    @property
    def n_items(self) -> int:
        """Items in scope that are still in the project."""
        return int(self._live_item.sum())

    def _items_of(self, u: int) -> np.ndarray:
        """Table rows of unit u's items in scope that are still in the project."""
        if self._item_rows is None:
            order = np.argsort(self._unit_of, kind="stable")
            bounds = np.searchsorted(self._unit_of[order], np.arange(self.n_units_made + 1))
            rows_all = self._dom[order]
            keep = self._live_item[order]
            self._item_rows = [rows_all[bounds[i]:bounds[i + 1]][keep[bounds[i]:bounds[i + 1]]]
                               for i in range(self.n_units_made)]
        return self._item_rows[u]

    def target_of(self, u: int, recheck: bool = False) -> PlanTarget:
        rows = self._items_of(u)
        items = tuple(str(x) for x in self.table.item_id[rows].tolist())
        targets: list[str] = []
        assert self.table.targets is not None
        for r in rows.tolist():
            targets.extend(self.table.targets[r])
        return PlanTarget(str(self.unit_ids[u]), items, tuple(dict.fromkeys(targets)), recheck)

    def _restore(self, draws: Sequence[tuple[str, bool]]) -> None:
        for unit, recheck in draws:
            u = self._unit_index.get(str(unit))
            if u is None:
                raise WorkstationError(f"the plan's draw {str(unit)[:60]!r} is not a unit of its table")
            if recheck and not self._drawn[u]:
                raise WorkstationError(f"the plan's re-check of {str(unit)[:60]!r} comes before its draw")
            self._record(u, bool(recheck))

    def _record(self, u: int, recheck: bool) -> None:
        self.draws.append((u, recheck))
        if recheck:
            self._rechecked.add(u)
            return
        if self._drawn[u]:
            raise WorkstationError(f"unit {str(self.unit_ids[u])[:60]!r} was drawn twice")
        self._drawn[u] = True
        if hasattr(self, "_d_h") and self._live_u[u]:
            self._d_h[self.stratum[u]] += 1

    # ---- labels ---------------------------------------------------------------------------------
    def update_labels(self, human: np.ndarray) -> None:
        """New human codes for the table's items (aligned with it); the estimate follows. Labels
        of items that left the project count nowhere."""
        h = np.asarray(human, np.int8).reshape(-1)
        if len(h) != len(self.table):
            raise WorkstationError(f"{len(h)} human labels for a table of {len(self.table)} items")
        self.table = self.table.with_human(h)
        z_items = np.asarray(self.quantity.value(self.table), np.float64)[self._dom]
        lab = np.isfinite(z_items) & self._live_item
        n_lab = np.bincount(self._unit_of, weights=lab.astype(np.float64), minlength=self.n_units_made)
        tot = np.bincount(self._unit_of, weights=np.where(lab, z_items, 0.0), minlength=self.n_units_made)
        complete = (n_lab == self.m_u) & self._live_u
        self._z_u = np.where(complete, tot, np.nan)

    def labelled_units(self) -> np.ndarray:
        """Drawn units still in the project with every item labelled (bool per unit)."""
        return self._drawn & np.isfinite(self._z_u)

    # ---- the queue ------------------------------------------------------------------------------
    def pending(self) -> list[PlanTarget]:
        """Drawn units still lacking a label, in the order they were drawn (units that left the
        project are not handed out)."""
        out = [u for u, r in self.draws if not r and self._live_u[u] and not np.isfinite(self._z_u[u])]
        return [self.target_of(u) for u in dict.fromkeys(out)]

    def _sigma2(self) -> np.ndarray:
        """Per stratum: the variance of a unit's total that the allocation assumes — from the
        automated outcome's confidence alone, never from the labels (see `draw`)."""
        return self.v0_h

    def _choose(self, d_h: np.ndarray, sigma2: np.ndarray) -> int | None:
        """The stratum for the next draw (None: every unit is drawn)."""
        left = d_h < self.N_h
        if not left.any():
            return None
        need = np.minimum(self.min_per_stratum, self.N_h)
        pilot = left & (d_h < need)
        if pilot.any():
            cand = np.flatnonzero(pilot)
            # the largest stratum first; then by index
            return int(cand[np.lexsort((cand, -self.N_h[cand], d_h[cand]))[0]])
        with np.errstate(divide="ignore"):
            gain = self.N_h ** 2 * sigma2 * (1.0 / np.maximum(d_h, 1) - 1.0 / (d_h + 1))
        gain = np.where(left, gain, -np.inf)
        return int(np.argmax(gain))

    def _next_in(self, h: int) -> int | None:
        """The first unit of stratum h's seeded order not drawn yet and still in the project."""
        order = self._order[h]
        c = int(self._cursor[h])
        while c < len(order) and (self._drawn[order[c]] or not self._live_u[order[c]]):
            c += 1
        self._cursor[h] = c
        return int(order[c]) if c < len(order) else None

    def draw(self, k: int = 1) -> list[PlanTarget]:
        """Draw up to ``k`` new units (and the re-checks that fall due); returns the queue entries
        added, in order. The caller stores them (`save_draws`).

        The next unit comes from the stratum where one more label shrinks the variance most,
        judged by the automated outcome's confidence (its prior variance per stratum), not by the
        labels so far: letting a stratum's own labels steer how many more it gets biases its
        estimate (a stratum whose first labels happen to agree gets few more and keeps its lucky
        rate). The labels decide only when to stop."""
        out: list[PlanTarget] = []
        sigma2 = self._sigma2()
        for _ in range(max(0, int(k))):
            h = self._choose(self._d_h, sigma2)
            if h is None:
                break
            u = self._next_in(h)
            if u is None:  # pragma: no cover - N_h counts the units left to draw
                break
            self._record(u, False)
            out.append(self.target_of(u))
            rc = self._due_recheck()
            if rc is not None:
                self._record(rc, True)
                out.append(self.target_of(rc, recheck=True))
        return out

    def _due_recheck(self) -> int | None:
        """A blind re-check of an earlier unit, when the fraction says one is due."""
        if self.recheck_fraction <= 0:
            return None
        new = [u for u, r in self.draws if not r]
        n_rc = sum(1 for _u, r in self.draws if r)
        if math.floor(len(new) * self.recheck_fraction) <= n_rc:
            return None
        eligible = [u for u in new[:max(0, len(new) - RECHECK_GAP)] if u not in self._rechecked and self._live_u[u]]
        if not eligible:
            return None
        rng = np.random.default_rng([self.seed, 7, n_rc])
        return int(eligible[int(rng.integers(len(eligible)))])

    def next_targets(self, k: int = 1) -> tuple[list[PlanTarget], list[PlanTarget]]:
        """(targets to label now, queue entries newly drawn): the pending units first, then new
        draws until ``k`` targets are given. Store the new entries with `save_draws`."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise WorkstationError(f"the number of targets must be a whole number, got {repr(k)[:40]}")
        now = self.pending()[:max(0, k)]
        new: list[PlanTarget] = []
        if len(now) < k and not self.status().reached:
            new = self.draw(k - len(now))
            now += [t for t in new if not t.recheck]
        return now, new

    # ---- estimates ------------------------------------------------------------------------------
    def _main(self, lab: np.ndarray) -> Estimate:
        live = self._live_u
        z = np.where(lab, self._z_u, np.nan)
        return design_estimate(self.f_u[live], z[live], self.stratum[live], self.n_items, items_per_unit=self.m_u[live],
                               confidence=self.goal.confidence)

    def _estimates(self) -> tuple[Estimate, Estimate, Estimate]:
        lab = self.labelled_units()
        live = self._live_u
        z = np.where(lab, self._z_u, np.nan)
        c = self.goal.confidence
        main = self._main(lab)
        ppi = design_estimate(self.fp_u[live], z[live], self.stratum[live], self.n_items,
                              items_per_unit=self.m_u[live], confidence=c, lam=1.0,
                              title=None if self.second_judge is None else
                              f"prediction-powered inside strata, {self.second_judge.name} as the prediction")
        # for comparison: the labels as if they were independent and uniformly drawn
        items_z = np.asarray(self.quantity.value(self.table), np.float64)[self._dom]
        in_lab = lab[self._unit_of] & self._live_item
        naive = wilson_estimate(np.where(in_lab, items_z, np.nan), confidence=c, population=self.n_items)
        return main, ppi, naive

    def estimate(self) -> Estimate:
        """The plan's estimate: stratified by the automated outcome, weighted by the design."""
        return self._main(self.labelled_units())

    def _progress(self, lab: np.ndarray) -> tuple[int, int, np.ndarray, np.ndarray]:
        """(strata with their first labels, strata still in the project, labels per stratum,
        labels each stratum needs first)."""
        started_h = np.bincount(self.stratum[lab], minlength=self.n_strata)
        need = np.minimum(self.min_per_stratum, self.N_h)
        held = self.N_h > 0
        return int(((started_h >= need) & held).sum()), int(held.sum()), started_h, need

    def removed_note(self) -> str:
        gone = self.removed_items
        if not gone:
            return ""
        t = self.table
        total = len(self._dom)
        return (f"{gone:,} of the {total:,} {t.item_title}s the plan was made on are no longer in the project "
                f"(their run was removed): the estimate is over the {self.n_items:,} that remain")

    def status(self) -> PlanStatus:
        t = self.table
        if self.stale:
            main, ppi, naive = self._estimates()
            msg = (f"the plan is stale: every one of the {len(self._dom):,} {t.item_title}s it was made on left the "
                   "project (their run was removed); make a new plan")
            return PlanStatus(self.goal, self.goal.text(t), self.quantity.meaning(t), main, (ppi, naive), 0, 0,
                              0, 0, 0, 0, 0, False, False, msg, self.removed_items)
        main, ppi, naive = self._estimates()
        lab = self.labelled_units()
        started, n_strata, started_h, need = self._progress(lab)
        exhausted = bool(lab[self._live_u].all())
        ok_width = main.defined and main.half_width <= self.goal.half_width + 1e-12
        reached = exhausted or (started == n_strata and ok_width)
        n_lab_items = int(self.m_u[lab].sum())
        if exhausted:
            msg = f"every {t.item_title} in scope is labelled: the rate is known exactly"
        elif reached:
            msg = (f"goal reached with {n_lab_items} labels: ±{100 * main.half_width:.1f} % ≤ "
                   f"±{100 * self.goal.half_width:.1f} %")
        elif started < n_strata:
            total_need = int(need[self.N_h > 0].sum())
            have = int(np.minimum(started_h, need)[self.N_h > 0].sum())
            msg = (f"first labels of every stratum: {have} of {total_need} ({n_strata} strata by "
                   f"{t.outcome_title} and its confidence)")
        else:
            more = self.labels_to_goal()
            what = "labels" if self.goal.unit == "item" else f"whole {t.cluster_title}s"
            msg = (f"±{100 * main.half_width:.1f} % now; the goal is ±{100 * self.goal.half_width:.1f} % "
                   f"(about {more} more {what}, if the labels keep varying as they do)")
        ess = self.effective_labels(main)
        if math.isfinite(ess) and not exhausted:
            msg = f"{msg}; as good as {ess:,.0f} labels of a uniform sample"
        judge = ""
        if self.second_judge is not None:
            judge = f"{self.second_judge.name}: {self.second_judge.coverage_text(t.item_title)}"
        note = self.removed_note()
        if note:
            msg = f"{msg}. {note}"
        return PlanStatus(self.goal, self.goal.text(t), self.quantity.meaning(t), main, (ppi, naive),
                          n_lab_items, int(lab.sum()), int((self._drawn & self._live_u).sum()), self.n_units,
                          self.n_items, n_strata, started, bool(reached), exhausted, msg, self.removed_items,
                          ess, judge)

    def effective_labels(self, est: Estimate | None = None) -> float:
        """The effective sample size of the plan's estimate: its labels × the variance a uniform
        sample of as many items would give the same rate (p(1 − p)/n with the finite-population
        correction, p the estimate) / the estimate's variance. NaN while undefined or exact."""
        e = self.estimate() if est is None else est
        se = float(e.extra.get("se", float("nan"))) if e.defined else float("nan")
        n, big = float(e.labels), float(self.n_items)
        if not (math.isfinite(se) and se > 0 and 0 < n < big):
            return float("nan")
        p = min(max(e.value, 0.0), 1.0)
        classical = p * (1.0 - p) / n * (1.0 - n / big)
        return n * classical / (se * se)

    def reached(self) -> bool:
        """The stopping rule alone (what `status` says as ``reached``)."""
        if self.stale:
            return False
        lab = self.labelled_units()
        if lab[self._live_u].all():
            return True
        started, n_strata, _s, _n = self._progress(lab)
        if started < n_strata:
            return False
        main = self._main(lab)
        return bool(main.defined and main.half_width <= self.goal.half_width + 1e-12)

    def labels_to_goal(self) -> int:
        """About how many more labelled units the goal needs if the variance per label stays what
        the labels so far say: with Var ∝ 1/n − 1/N, the n' where it shrinks to the goal's."""
        lab = self.labelled_units()
        main = self._main(lab)
        if not main.defined:
            return -1
        if main.half_width <= self.goal.half_width:
            return 0
        n_now = float(lab.sum())
        big = float(self.n_units)
        shrink = (self.goal.half_width / main.half_width) ** 2
        inv = (1.0 / n_now - 1.0 / big) * shrink + 1.0 / big
        return int(max(1, math.ceil(min(big, 1.0 / inv) - n_now)))

    def history(self) -> list[tuple[int, float, float, float]]:
        """(labels, estimate, low, high) after each labelled unit, in the order they were drawn."""
        lab = self.labelled_units()
        order = [u for u, r in self.draws if not r and lab[u]]
        out: list[tuple[int, float, float, float]] = []
        mask = np.zeros(self.n_units_made, bool)
        n_items = 0
        for u in order:
            mask[u] = True
            n_items += int(self.m_u[u])
            e = self._main(mask)
            if e.defined:
                out.append((n_items, e.value, e.low, e.high))
        return out

    # ---- persistence ------------------------------------------------------------------------------
    def design(self) -> dict[str, Any]:
        out = {"seed": self.seed, "bins": self.bins, "recheck_fraction": self.recheck_fraction,
               "min_per_stratum": self.min_per_stratum, "min_stratum_units": self.min_stratum_units}
        if self.second_judge is not None:
            out["second_judge"] = self.second_judge.record()
        return out

    def draw_records(self, entries: Sequence[PlanTarget]) -> list[tuple[str, bool, tuple[str, ...], dict[str, Any]]]:
        """(unit, is re-check, its targets, where it was drawn from) per queue entry: its stratum,
        the stratum's size in units and the unit's inclusion probability so far, d_h / N_h (the
        plan draws each stratum's units in a seeded random order, without replacement)."""
        out = []
        for e in entries:
            u = self._unit_index[str(e.unit)]
            h = int(self.stratum[u])
            big_n = int(self.N_h[h])
            out.append((e.unit, e.recheck, e.targets,
                        {"stratum": h, "stratum_size": big_n,
                         "inclusion": float(self._d_h[h]) / big_n if big_n else None}))
        return out


# ---------------------------------------------------------------------------------------------
# Keeping plans in the project (through `workstation.store.plans.PlansRepo`)
# ---------------------------------------------------------------------------------------------


def _table_columns(t: AuditTable) -> dict[str, Any]:
    assert t.targets is not None
    return {"item_id": t.item_id, "cluster": t.cluster, "outcome": t.outcome, "confidence": t.confidence,
            "targets": _obj(list(ts) for ts in t.targets.tolist())}


def _table_meta(t: AuditTable) -> dict[str, Any]:
    return {"positive": t.positive, "negative": t.negative, "outcome_title": t.outcome_title,
            "item_title": t.item_title, "cluster_title": t.cluster_title, "source": t.source, "titles": t.titles}


def blindness_note(goal: Goal, table: AuditTable | None = None) -> str:
    """What a blind queue of the plan cannot hide, said when the plan is made and in its queue: a
    precision plan hands out only the items the automated outcome calls positive ("" otherwise)."""
    if goal.quantity != "precision":
        return ""
    item = table.item_title if table is not None else "item"
    who = table.outcome_title if table is not None else "the automated outcome"
    pos = table.positive if table is not None else "positive"
    return (f"This plan hands out only the {item}s {who} calls {pos}: a blind queue of it cannot hide that "
            f"outcome — every {item} in it is {pos}.")


def save_plan(project: Any, plan: AuditPlan, *, name: str = "", blind: bool = True) -> int:
    """Store a new plan (its frozen table, goal and design) with its audit set; returns its id."""
    t = plan.table
    pid, aid = project.plans.create(
        name or plan.name or f"plan: {plan.goal.text(t)}", t.method, t.task, plan.goal.to_dict(), plan.design(),
        _table_meta(t), _table_columns(t), blind=blind, note=blindness_note(plan.goal, t))
    plan.plan_id, plan.audit_set_id, plan.name = pid, aid, name or plan.name
    project.audit.set_design(aid, "plan", plan.n_items)
    if plan.draws:
        save_draws(project, plan, [plan.target_of(u, r) for u, r in plan.draws])
    return int(pid)


def save_draws(project: Any, plan: AuditPlan, entries: Sequence[PlanTarget]) -> None:
    """Store queue entries the plan drew (one transaction; also appended to its audit set)."""
    if plan.plan_id is None:
        raise WorkstationError("store the plan first (save_plan)")
    if entries:
        project.plans.add_draws(plan.plan_id, plan.draw_records(entries))


def _stale(plan_id: Any, reason: str) -> PlanStale:
    return PlanStale(f"audit plan #{plan_id} cannot be used: {reason}")


def _text_field(meta: Mapping[str, Any], key: str, default: str) -> str:
    v = meta.get(key, default)
    if not isinstance(v, str):
        raise WorkstationError(f"its {key} is not text")
    return v


def stored_table(project: Any, plan_id: int, rec: Mapping[str, Any] | None = None) -> AuditTable:
    """The frozen table a stored plan was made on (without labels), every value checked as a
    file from outside is: ids and clusters are text, outcomes 1 / 0 / -1, confidences finite in
    [0, 1], every item with label targets, ids unique. Anything else is `PlanStale` with the
    reason in one line."""
    rec = project.plans.get(plan_id) if rec is None else rec
    pid = rec["plan_id"]
    try:
        if rec.get("problem"):
            raise WorkstationError(str(rec["problem"]))
        for key in ("method", "task"):
            if not isinstance(rec.get(key), str) or not rec[key]:
                raise WorkstationError(f"its {key} is not a name")
        meta = rec.get("meta") or {}
        cols = project.plans.items(plan_id)
        n = len(cols["item_id"])
        if n == 0:
            raise WorkstationError("it holds no items")
        for name in ("item_id", "cluster"):
            bad = next((i for i, v in enumerate(cols[name]) if not isinstance(v, str) or (name == "item_id" and not v)),
                       None)
            if bad is not None:
                raise WorkstationError(f"item {bad + 1} has no {'id' if name == 'item_id' else 'cluster'}")
        outcome = cols["outcome"]
        bad_o = np.flatnonzero(~np.isin(outcome, (POSITIVE, NEGATIVE, ABSTAINED)))
        if len(bad_o):
            raise WorkstationError(f"item {int(bad_o[0]) + 1} has the outcome code {int(outcome[bad_o[0]])} "
                                   "(expected 1, 0 or -1)")
        conf = cols["confidence"]
        bad_c = np.flatnonzero(~(np.isfinite(conf) & (conf >= 0.0) & (conf <= 1.0)))
        if len(bad_c):
            raise WorkstationError(f"item {int(bad_c[0]) + 1} has the confidence {conf[bad_c[0]]!r} "
                                   "(expected a number in [0, 1])")
        for i, ts in enumerate(cols["targets"]):
            if not ts or not all(isinstance(x, str) and x for x in ts):
                raise WorkstationError(f"item {i + 1} has no label target")
        source, titles = meta.get("source") or {}, meta.get("titles") or {}
        if not isinstance(source, dict) or not isinstance(titles, dict):
            raise WorkstationError("its meta's source and titles are not objects")
        table = AuditTable(rec["method"], rec["task"], cols["item_id"], cols["cluster"], outcome.astype(np.int8),
                           conf, np.full(n, NO_LABEL, np.int8), _obj(tuple(x) for x in cols["targets"]),
                           _text_field(meta, "positive", "PASS"), _text_field(meta, "negative", "FAIL"),
                           _text_field(meta, "outcome_title", "the automated outcome"),
                           _text_field(meta, "item_title", "item"), _text_field(meta, "cluster_title", "prompt"),
                           dict(source), {str(k): str(v) for k, v in titles.items()})
    except PlanStale:
        raise
    except WorkstationError as e:  # a ProjectError of the store, or a value above
        raise _stale(pid, str(e)) from None
    return table


def _check_second_judge(d: Mapping[str, Any], judge: SecondJudge | None) -> None:
    """A stored plan's second judge against the one given: the same name and the same scores."""
    rec = d.get("second_judge")
    if rec is None:
        if judge is not None:
            raise WorkstationError(f"it was made without a second judge (given {judge.name[:40]!r})")
        return
    if not isinstance(rec, Mapping) or not isinstance(rec.get("name"), str) or not isinstance(rec.get("digest"), str):
        raise WorkstationError("its second judge is not a name with a digest of its scores")
    name = rec["name"][:60]
    if judge is None:
        raise WorkstationError(f"it was made with the second judge {name!r}: open it with that judge's scores")
    if judge.name != rec["name"]:
        raise WorkstationError(f"it was made with the second judge {name!r}, not {judge.name[:60]!r}")
    if judge.digest != rec["digest"]:
        raise WorkstationError(f"the second judge {name!r} changed since the plan was made (its scores' digest was "
                               f"{rec['digest'][:12]}…, is {judge.digest[:12]}…): make a new plan")


def load_plan(project: Any, plan_id: int, human: Callable[[AuditTable], np.ndarray] | None = None,
              present: Callable[[AuditTable], np.ndarray] | None = None,
              second_judge: Callable[[AuditTable], SecondJudge] | None = None) -> AuditPlan:
    """A stored plan with its draws; ``human(table)`` gives the current human codes of the frozen
    table's items (without it the plan has no labels), ``present(table)`` which of them are still
    in the project (without it: all). What the project holds of the plan is checked as a file
    from outside: the goal, the design (seed, bins, re-check fraction), the items
    (`stored_table`) and the draws (each a unit of the table, drawn once, a re-check only after
    its draw); anything else is `PlanStale`, one line naming the plan and what is wrong, and so
    is a plan none of whose items is left in the project."""
    rec = project.plans.get(plan_id)
    pid = rec["plan_id"]
    table = stored_table(project, plan_id, rec)
    try:
        if human is not None:
            table = table.with_human(human(table))
        d = rec.get("design") or {}
        judge = None if second_judge is None else second_judge(table)
        _check_second_judge(d, judge)
        try:
            goal = Goal.from_dict(rec.get("goal"))
        except WorkstationError as e:
            raise WorkstationError(f"its goal: {e}") from None
        name = rec.get("name")
        if name is not None and not isinstance(name, str):
            raise WorkstationError("its name is not text")
        aid = rec.get("audit_set_id")
        if aid is not None:
            task = project.plans.audit_set_task(int(aid))
            if task is None:
                raise WorkstationError(f"its audit set #{int(aid)} is no longer in the project")
            if task != table.task:
                raise WorkstationError(f"its audit set #{int(aid)} is of another task ({task[:40]!r})")
        plan = AuditPlan(table, goal, seed=d.get("seed", 0), bins=d.get("bins", DEFAULT_BINS),
                         recheck_fraction=d.get("recheck_fraction", 0.0), draws=project.plans.draws(plan_id),
                         name=str(name or ""), plan_id=int(pid),
                         min_per_stratum=d.get("min_per_stratum", MIN_PER_STRATUM),
                         min_stratum_units=d.get("min_stratum_units", MIN_STRATUM_UNITS),
                         present=None if present is None else present(table), second_judge=judge)
    except PlanStale:
        raise
    except WorkstationError as e:
        raise _stale(pid, str(e)) from None
    if plan.stale:
        raise _stale(pid, f"every one of the {len(plan._dom):,} {table.item_title}s it was made on is no longer in "
                          "the project (their run was removed); make a new plan")
    plan.audit_set_id = None if aid is None else int(aid)
    return plan


def list_plans(project: Any, method: str | None = None) -> list[dict[str, Any]]:
    return list(project.plans.all(method))
