"""Risk–coverage, the calibration objective and the grid search (METHODS.md §1).

Definitions (over the audited samples, i.e. the samples given to a function):

- covered(τ): checker PASS or FAIL with conf ≥ τ; coverage = covered / all audited.
- accuracy(τ): over covered samples whose human label is PASS or FAIL (human UNDECIDABLE and
  unlabelled samples are left out of the denominator); risk = 1 − accuracy. Coverage 0 → risk 0
  and accuracy 1 (METHODS.md's convention, the curve's start). Covered samples but none with a
  human PASS/FAIL label: accuracy and risk are **undefined** (NaN; shown as "—" with n_evaluated).
- FPR_PASS(τ): among checker PASS with conf ≥ τ that carry a human label, the fraction labelled
  FAIL; undefined (NaN) when there is none.
- J = w_fpr·FPR_PASS + w_risk·Risk + w_cov·(1 − Coverage), defaults 10, 2, 0.5. J itself keeps
  the published analysis's conventions: an undefined FPR_PASS counts as 1 (METHODS.md), an
  undefined risk as 1 (accuracy 0), so the search never prefers thresholds nobody audited.
- The risk band (`risk_band`): pointwise 95 % cluster-bootstrap bounds of the risk at every τ,
  resampling the audited samples' prompts (`workstation.evaluation.intervals`).

Everything over τ is vectorised: samples are sorted by confidence once and every threshold
reads prefix sums (`np.searchsorted` + `np.cumsum`); no Python loop runs over thresholds.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from .config import CheckerConfig
from ...dataset import Dataset
from ...evaluation.intervals import (
    LEVEL,
    N_BOOT,
    SEED,
    Estimate,
    bootstrap_weights,
    expanded_alpha,
    ratio_estimates,
    unit_codes,
    wilson_from_resamples,
    wilson_interval,
)
from .types import FAIL, PASS, UNDECIDABLE, VERDICT_CODE
from ...types import WorkstationError

# The grid of the SpatialBench-UC paper (it selected margin 0.10, t_det 0.2, tau 0.7).
PAPER_GRID: dict[str, tuple[float, ...]] = {
    "margin": (0.03, 0.05, 0.07, 0.10),
    "t_det": (0.2, 0.3, 0.4),
    "tau": (0.3, 0.5, 0.7),
}

# Limits of one grid search. Each combination of the non-τ parameters is one checker evaluation
# over the audited samples (~1 ms per 2,000 samples), and every (combination, τ) is one row of the
# result table (kept in memory and written as JSON, ~200 bytes each): 100,000 evaluations take
# about two minutes (with progress, and cancel), 500,000 rows about 100 MB of JSON. A
# 1000×1000×100 grid (10^6 evaluations, 10^8 rows) is refused before anything runs.
MAX_GRID_EVALUATIONS = 100_000
MAX_GRID_ROWS = 500_000

# J is compared after rounding to this many decimals, so that float noise in otherwise equal
# objective values does not decide the ranking (the tie-break rules do).
J_DECIMALS = 12


class VerdictLike(Protocol):
    verdict: np.ndarray
    conf: np.ndarray


Evaluator = Callable[[Dataset, CheckerConfig], VerdictLike]


class GridSearchCancelled(WorkstationError):
    """The user cancelled a calibration grid search."""


@dataclass(frozen=True)
class Weights:
    """Weights of the calibration objective J."""

    fpr_pass: float = 10.0
    risk: float = 2.0
    coverage: float = 0.5

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise WorkstationError(f"objective weight {f.name} must be a finite number >= 0, got {v!r}")


# ---------------------------------------------------------------------------------------------
# Risk–coverage
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RiskCoverage:
    """One point per threshold τ (arrays of equal length, τ in the order given / ascending)."""

    tau: np.ndarray
    coverage: np.ndarray
    risk: np.ndarray
    accuracy: np.ndarray
    n_covered: np.ndarray  # checker PASS/FAIL with conf >= tau
    n_evaluated: np.ndarray  # of those, with a human PASS/FAIL label
    fpr_pass: np.ndarray
    n_pass_covered: np.ndarray  # checker PASS with conf >= tau and a human label
    n_audited: int

    def __len__(self) -> int:
        return len(self.tau)

    def rows(self) -> list[dict[str, float]]:
        return [
            {"tau": float(self.tau[i]), "coverage": float(self.coverage[i]), "risk": float(self.risk[i]),
             "accuracy": float(self.accuracy[i]), "n_covered": int(self.n_covered[i]),
             "n_evaluated": int(self.n_evaluated[i]), "fpr_pass": float(self.fpr_pass[i]),
             "n_pass_covered": int(self.n_pass_covered[i])}
            for i in range(len(self.tau))
        ]

    def objective(self, weights: Weights | None = None) -> np.ndarray:
        return objective(self.fpr_pass, self.risk, self.coverage, weights)


def _as_codes(x: np.ndarray | Sequence[Any], what: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind in "OUS":
        out = np.empty(len(arr), np.int64)
        for i, s in enumerate(arr.tolist()):
            if s is None or s == "":
                out[i] = -1
            elif isinstance(s, (int, np.integer)) and not isinstance(s, bool):
                out[i] = int(s)
            elif str(s).upper() in VERDICT_CODE:
                out[i] = VERDICT_CODE[str(s).upper()]
            else:
                raise WorkstationError(f"{what}: unknown verdict {s!r} (expected PASS, FAIL or UNDECIDABLE)")
        return out
    return arr.astype(np.int64)


class _Sorted:
    """Decided samples sorted by confidence (descending) with prefix counts, for many τ."""

    def __init__(self, checker_verdict: np.ndarray, conf: np.ndarray, human_verdict: np.ndarray) -> None:
        c = _as_codes(checker_verdict, "checker verdicts")
        h = _as_codes(human_verdict, "human verdicts")
        cf = np.asarray(conf, dtype=np.float64)
        if not (len(c) == len(h) == len(cf)):
            raise WorkstationError(
                f"checker verdicts, confidences and human verdicts differ in length ({len(c)}, {len(cf)}, {len(h)})")
        self.n_audited = len(c)
        decided = ((c == PASS) | (c == FAIL)) & ~np.isnan(cf)
        c, h, cf = c[decided], h[decided], cf[decided]
        order = np.argsort(-cf, kind="stable")
        c, h, cf = c[order], h[order], cf[order]
        self.conf_asc = cf[::-1].copy()
        human_decided = (h == PASS) | (h == FAIL)
        labelled = (h >= 0) & (h <= UNDECIDABLE)
        is_pass = c == PASS

        def cum(mask: np.ndarray) -> np.ndarray:
            out = np.zeros(len(mask) + 1, np.int64)
            np.cumsum(mask, out=out[1:])
            return out

        self.c_eval = cum(human_decided)
        self.c_correct = cum(human_decided & (c == h))
        self.c_pass = cum(is_pass & labelled)
        self.c_false_pass = cum(is_pass & (h == FAIL))

    def at(self, taus: np.ndarray) -> RiskCoverage:
        taus = np.asarray(taus, dtype=np.float64).reshape(-1)
        d = len(self.conf_asc)
        k = d - np.searchsorted(self.conf_asc, taus, side="left")  # number with conf >= tau
        n_eval = self.c_eval[k]
        n_correct = self.c_correct[k]
        n_pass = self.c_pass[k]
        n_fp = self.c_false_pass[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            acc = np.where(k == 0, 1.0, np.where(n_eval > 0, n_correct / np.maximum(n_eval, 1), np.nan))
            risk = np.where(k == 0, 0.0, 1.0 - acc)
            cov = k / self.n_audited if self.n_audited else np.zeros(len(k))
            fpr = np.where(n_pass > 0, n_fp / np.maximum(n_pass, 1), np.nan)
        return RiskCoverage(
            tau=taus, coverage=np.asarray(cov, np.float64), risk=risk, accuracy=acc, n_covered=k.astype(np.int64),
            n_evaluated=n_eval, fpr_pass=fpr, n_pass_covered=n_pass, n_audited=self.n_audited,
        )

    def default_taus(self) -> np.ndarray:
        """Every unique confidence of a decided sample, with the end points 0 and 1."""
        return np.unique(np.concatenate([[0.0, 1.0], self.conf_asc]))


def risk_coverage(
    checker_verdict: np.ndarray | Sequence[Any],
    conf: np.ndarray | Sequence[float],
    human_verdict: np.ndarray | Sequence[Any],
    taus: np.ndarray | Sequence[float] | None = None,
) -> RiskCoverage:
    """Risk–coverage over thresholds τ for aligned arrays of the audited samples.

    Every entry given counts as audited (the coverage denominator); a human code outside 0..2
    (e.g. -1, no label) is left out of accuracy and FPR_PASS. Verdicts may be codes or names.
    `taus=None` sweeps every unique confidence of a checker-decided sample plus 0 and 1
    (ascending), as SpatialBench-UC's "unique" sweep does.
    """
    s = _Sorted(np.asarray(checker_verdict), np.asarray(conf), np.asarray(human_verdict))
    t = s.default_taus() if taus is None else np.asarray(taus, dtype=np.float64)
    return s.at(t)


def _unit_of(unit: np.ndarray | Sequence[Any] | None, n: int) -> np.ndarray | None:
    if unit is None:
        return None
    u = np.asarray(unit)
    if len(u) != n:
        raise WorkstationError(f"{len(u)} prompt ids for {n} audited samples")
    return u


def risk_band(
    checker_verdict: np.ndarray | Sequence[Any],
    conf: np.ndarray | Sequence[float],
    human_verdict: np.ndarray | Sequence[Any],
    unit: np.ndarray | Sequence[Any] | None,
    taus: np.ndarray | Sequence[float],
    *, n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise bounds (lo, hi) of the risk at every τ: the cluster bootstrap over ``unit`` (the
    audited samples' prompts; every sample its own unit when None), each resample's risk read
    from its weighted prefix sums. NaN where the risk is undefined (no covered sample with a
    human PASS/FAIL label); 0 where nothing is covered (the convention); where every resample
    agrees, Wilson's interval over the prompts behind the point."""
    c = _as_codes(checker_verdict, "checker verdicts")
    h = _as_codes(human_verdict, "human verdicts")
    cf = np.asarray(conf, dtype=np.float64)
    taus = np.asarray(taus, np.float64).reshape(-1)
    n = len(c)
    if not (len(h) == len(cf) == n):
        raise WorkstationError("checker verdicts, confidences and human verdicts differ in length")
    u = _unit_of(unit, n)
    lo = np.full(len(taus), np.nan)
    hi = np.full(len(taus), np.nan)
    if n == 0 or n_boot <= 0:
        return lo, hi
    decided = ((c == PASS) | (c == FAIL)) & ~np.isnan(cf)
    rows = np.flatnonzero(decided)
    order = rows[np.argsort(-cf[rows], kind="stable")]
    conf_asc = cf[order][::-1]
    k = len(order) - np.searchsorted(conf_asc, taus, side="left")
    hd = ((h == PASS) | (h == FAIL))[order].astype(np.float64)
    ok = (hd > 0) & (c[order] == h[order])
    units = unit_codes(u, n)[1]
    risks = np.empty((n_boot, len(taus)))
    done = 0
    for w in bootstrap_weights(u, n, n_boot, seed):
        wd = w[:, order]
        ev = np.zeros((len(w), len(order) + 1))
        cr = np.zeros((len(w), len(order) + 1))
        np.cumsum(wd * hd, axis=1, out=ev[:, 1:])
        np.cumsum(wd * ok, axis=1, out=cr[:, 1:])
        e, r = ev[:, k], cr[:, k]
        with np.errstate(divide="ignore", invalid="ignore"):
            risks[done:done + len(w)] = np.where(k == 0, 0.0, np.where(e > 0, 1.0 - r / np.where(e > 0, e, 1.0),
                                                                         np.nan))
        done += len(w)
    point = _Sorted(c, cf, h).at(taus).risk
    # the prompts behind each point (with a covered, human-decided sample)
    codes = unit_codes(u, n)[0][order]
    seen = np.zeros(units, bool)
    first = np.zeros(len(order), bool)
    for i in np.flatnonzero(hd > 0).tolist():
        if not seen[codes[i]]:
            seen[codes[i]] = True
            first[i] = True
    units_at = np.r_[0, np.cumsum(first)][k]
    # as `intervals.ratio_estimates` bounds a rate: Wilson's form with the resamples' spread; where
    # every resample agrees (no error among the covered, say) Wilson over the prompts behind the
    # point — a handful of prompts cannot make a risk certain
    for t in np.flatnonzero(np.isfinite(point) & np.isfinite(risks).any(axis=0)).tolist():
        if k[t] == 0:
            lo[t] = hi[t] = 0.0  # nothing covered: risk 0 by convention
            continue
        a = expanded_alpha(level, int(units_at[t]))
        q_lo, q_hi = np.nanquantile(risks[:, t], [a, 1.0 - a])
        if q_lo == q_hi:
            w_lo, w_hi = wilson_interval(point[t] * units_at[t], units_at[t])
        else:
            w_lo, w_hi = wilson_from_resamples(float(point[t]), risks[:, t], int(units_at[t]), level, q_lo, q_hi)
        lo[t], hi[t] = min(w_lo, point[t]), max(w_hi, point[t])
    return lo, hi


OPERATING_POINT_ROWS: tuple[tuple[str, str], ...] = (
    ("coverage", "coverage (covered / audited)"),
    ("risk", "risk (1 − accuracy on human PASS/FAIL)"),
    ("accuracy", "accuracy"),
    ("fpr_pass", "FPR_PASS (covered PASS that humans call FAIL)"),
)


def operating_point(
    checker_verdict: np.ndarray | Sequence[Any],
    conf: np.ndarray | Sequence[float],
    human_verdict: np.ndarray | Sequence[Any],
    unit: np.ndarray | Sequence[Any] | None,
    tau: float,
    *, weights: np.ndarray | Sequence[float] | None = None, n_boot: int = N_BOOT, seed: int = SEED,
) -> dict[str, Estimate]:
    """Coverage, risk, accuracy and FPR_PASS at τ over the audited samples, each an `Estimate`
    with its cluster-bootstrap interval over ``unit`` (one set of resamples for all four).
    Undefined rates are NaN with their n (module doc); nothing covered gives risk 0 and
    accuracy 1 without an interval.

    ``weights``: per audited sample 1/π, its inclusion probability in the audit draw (None, or
    all equal: the plain counts). Each rate is then the Hájek ratio Σ w·num / Σ w·den, an
    estimate of the rate over the samples the draw was made from rather than over the audited
    ones; `n` stays the number of audited samples each rate counts, and the resamples reweight
    the same sums (`store.SelectedHuman.draw_basis` gives the weights of a selection and says
    what the figures then rest on)."""
    c = _as_codes(checker_verdict, "checker verdicts")
    h = _as_codes(human_verdict, "human verdicts")
    cf = np.asarray(conf, dtype=np.float64)
    n = len(c)
    if not (len(h) == len(cf) == n):
        raise WorkstationError("checker verdicts, confidences and human verdicts differ in length")
    u = _unit_of(unit, n)
    covered = ((c == PASS) | (c == FAIL)) & (cf >= tau)
    hd = covered & ((h == PASS) | (h == FAIL))
    right = hd & (c == h)
    wrong = hd & (c != h)
    pass_l = covered & (c == PASS) & (h >= 0) & (h <= UNDECIDABLE)
    false_pass = pass_l & (h == FAIL)
    ones = np.ones(n)
    num = np.stack([covered, wrong, right, false_pass], axis=1).astype(np.float64)
    den = np.stack([ones, hd, hd, pass_l], axis=1).astype(np.float64)
    if weights is not None:
        w = np.asarray(weights, np.float64).reshape(-1)
        if len(w) != n or not np.all(np.isfinite(w)) or (w <= 0).any():
            raise WorkstationError(f"the operating point's weights must be one positive number per audited sample "
                                   f"({len(w)} for {n})")
        if n and not np.all(w == w[0]):  # equal weights are the plain counts
            w = w / w.mean()
            num, den = num * w[:, None], den * w[:, None]
    est = ratio_estimates(num, den, u, n_boot=n_boot, seed=seed)
    out = dict(zip(("coverage", "risk", "accuracy", "fpr_pass"), est))
    if not covered.any():
        out["risk"] = Estimate(0.0, n=0, units=0)
        out["accuracy"] = Estimate(1.0, n=0, units=0)
    return out


def objective(
    fpr_pass: np.ndarray | float,
    risk: np.ndarray | float,
    coverage: np.ndarray | float,
    weights: Weights | None = None,
) -> np.ndarray:
    """J = w_fpr·FPR_PASS + w_risk·Risk + w_cov·(1 − Coverage) (element-wise); an undefined
    (NaN) FPR_PASS or risk counts as 1 (module doc)."""
    w = weights or Weights()
    fpr = np.asarray(fpr_pass, np.float64)
    rk = np.asarray(risk, np.float64)
    return (w.fpr_pass * np.where(np.isnan(fpr), 1.0, fpr) + w.risk * np.where(np.isnan(rk), 1.0, rk)
            + w.coverage * (1.0 - np.asarray(coverage, np.float64)))


def apply_tau(verdict: np.ndarray, conf: np.ndarray, tau: float) -> np.ndarray:
    """Verdicts at operating point τ: a PASS/FAIL with conf < τ becomes UNDECIDABLE."""
    v = np.asarray(verdict).astype(np.int8, copy=True)
    low = ((v == PASS) | (v == FAIL)) & ~(np.asarray(conf, np.float64) >= tau)
    v[low] = UNDECIDABLE
    return v


# ---------------------------------------------------------------------------------------------
# Grid search
# ---------------------------------------------------------------------------------------------


@dataclass
class GridResult:
    """Every parameter combination with its objective, ranked.

    Ranking (`rank`, best first): lowest J (rounded to `J_DECIMALS`), then higher coverage,
    then grid order. Grid order is the product of the grids in the order given with τ
    innermost, e.g. margin × t_det × τ — so on a full tie the combination met first wins,
    as in SpatialBench-UC's own search.
    """

    params: tuple[str, ...]  # parameter names; "tau" last when searched
    columns: dict[str, np.ndarray]  # per parameter: its value for every combination (grid order)
    j: np.ndarray
    fpr_pass: np.ndarray
    risk: np.ndarray
    coverage: np.ndarray
    accuracy: np.ndarray
    n_covered: np.ndarray
    n_pass_covered: np.ndarray
    n_audited: int
    weights: Weights
    base_config: CheckerConfig
    rank: np.ndarray = field(init=False)
    #: J of the best combination with its 95 % interval (prompts resampled), when computed
    best_j: Any = None

    def __post_init__(self) -> None:
        self.rank = rank_combinations(self.j, self.coverage)

    @property
    def tied_first(self) -> int:
        """How many other combinations share the best one's J (rounded to `J_DECIMALS`): first
        place is then decided by the higher coverage, then by grid order."""
        jr = np.round(self.j, J_DECIMALS)
        return int((jr == jr[self.best_index]).sum()) - 1

    def optimised_text(self) -> str:
        """What the search minimised, its best value with its interval, and whether first place is tied."""
        w = self.weights
        b = self.best_j
        text = (f"minimised J = {w.fpr_pass:g}·FPR_PASS + {w.risk:g}·risk + {w.coverage:g}·(1 − coverage): "
                f"best J {float(self.j[self.best_index]):.4f}")
        if b is not None and np.isfinite(b.lo):
            text += f" [{b.lo:.4f}, {b.hi:.4f}] (95 %, {b.units} prompts resampled)"
        t = self.tied_first
        if t:
            same_cov = int(((np.round(self.j, J_DECIMALS) == np.round(self.j[self.best_index], J_DECIMALS))
                            & (self.coverage == self.coverage[self.best_index])).sum()) - 1
            text += (f"; first place is tied on J with {t} other combination{'s' if t != 1 else ''}, "
                     + ("chosen by its higher coverage" if same_cov == 0 else "chosen by grid order"))
        return text

    def __len__(self) -> int:
        return len(self.j)

    @property
    def best_index(self) -> int:
        return int(self.rank[0])

    def params_at(self, i: int) -> dict[str, Any]:
        return {p: _py(self.columns[p][i]) for p in self.params}

    @property
    def best(self) -> dict[str, Any]:
        """The best combination: its parameters and metrics."""
        return self.row(self.best_index)

    def row(self, i: int) -> dict[str, Any]:
        out = self.params_at(i)
        out.update(j=float(self.j[i]), fpr_pass=float(self.fpr_pass[i]), risk=float(self.risk[i]),
                   coverage=float(self.coverage[i]), accuracy=float(self.accuracy[i]),
                   n_covered=int(self.n_covered[i]), n_pass_covered=int(self.n_pass_covered[i]))
        return out

    def table(self, ranked: bool = True) -> list[dict[str, Any]]:
        """All combinations as rows (best first when `ranked`), with a 1-based `rank` column."""
        pos = np.empty(len(self.j), np.int64)
        pos[self.rank] = np.arange(1, len(self.j) + 1)
        order = self.rank if ranked else np.arange(len(self.j))
        rows = []
        for i in order.tolist():
            r = {"rank": int(pos[i])}
            r.update(self.row(i))
            rows.append(r)
        return rows

    def config_at(self, i: int) -> CheckerConfig:
        """The base config with the combination's parameters (τ included when searched)."""
        return self.base_config.replace(**self.params_at(i))

    def best_config(self) -> CheckerConfig:
        return self.config_at(self.best_index)


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def rank_combinations(j: np.ndarray, coverage: np.ndarray) -> np.ndarray:
    """Indices best first: lowest J (rounded), then higher coverage, then lower index."""
    idx = np.arange(len(j))
    jr = np.round(np.asarray(j, np.float64), J_DECIMALS)
    return np.lexsort((idx, -np.asarray(coverage, np.float64), jr)).astype(np.int64)


_CONFIG_FIELDS = {f.name: f for f in dataclasses.fields(CheckerConfig)}
_NOT_SEARCHABLE = {"name", "extra", "perturbations"}


def _check_grids(base_cfg: CheckerConfig, grids: Mapping[str, Sequence[Any]]) -> tuple[list[str], list[list[Any]], list[float] | None]:
    from .config import ConfigValueError, strict_bool, strict_number

    if not grids:
        raise WorkstationError("the calibration grid is empty: give at least one parameter with values")
    names: list[str] = []
    values: list[list[Any]] = []
    taus: list[float] | None = None
    for name, vals in grids.items():
        if name not in _CONFIG_FIELDS or name in _NOT_SEARCHABLE:
            ok = sorted(set(_CONFIG_FIELDS) - _NOT_SEARCHABLE)
            raise WorkstationError(f"unknown calibration parameter {name!r} (choose from {', '.join(ok)})")
        vals = list(vals) if not isinstance(vals, (str, bytes)) else [vals]
        if not vals:
            raise WorkstationError(f"calibration grid for {name!r} has no values")
        is_bool = isinstance(getattr(base_cfg, name), bool)
        conv: list[Any] = []
        for x in vals:
            try:
                conv.append(strict_bool(x, name) if is_bool else strict_number(x, name))
            except ConfigValueError as e:
                raise WorkstationError(f"calibration grid: {e}") from None
        if name == "tau":
            if not all(0.0 <= t <= 1.0 for t in conv):
                raise WorkstationError(f"calibration grid for 'tau' must hold numbers in [0, 1], got {vals!r}")
            taus = conv
            continue
        names.append(name)
        values.append(conv)
    evaluations = math.prod(len(v) for v in values) if values else 1
    rows = evaluations * (len(taus) if taus else 1)
    sizes = " × ".join(f"{len(v)} {n}" for n, v in zip(names, values)) + (f" × {len(taus)} tau" if taus else "")
    if evaluations > MAX_GRID_EVALUATIONS:
        raise WorkstationError(
            f"the calibration grid ({sizes}) needs {evaluations:,} checker evaluations; the limit is "
            f"{MAX_GRID_EVALUATIONS:,} (each non-tau combination re-runs the checker over every audited "
            "sample): use fewer values, or search in stages")
    if rows > MAX_GRID_ROWS:
        raise WorkstationError(
            f"the calibration grid ({sizes}) has {rows:,} combinations; the limit is {MAX_GRID_ROWS:,} "
            "(each is one row of the result table held in memory and written out): use fewer tau values")
    return names, values, taus


def human_by_row(ds: Dataset, human: Any) -> np.ndarray:
    """Human verdict code per sample row (-1 where none) from an array or a mapping."""
    if isinstance(human, Mapping):
        out = np.full(ds.n, -1, np.int64)
        index = ds.sample_index()
        for k, val in human.items():
            if isinstance(k, (int, np.integer)):
                r = int(k)
                if not 0 <= r < ds.n:
                    raise WorkstationError(f"human label for sample row {r}, which is outside the dataset")
            else:
                if str(k) not in index:
                    raise WorkstationError(f"human label for unknown sample {k!r}")
                r = index[str(k)]
            out[r] = _as_codes(np.array([val], dtype=object), "human verdicts")[0]
        return out
    arr = _as_codes(np.asarray(human) if not isinstance(human, np.ndarray) else human, "human verdicts")
    if len(arr) != ds.n:
        raise WorkstationError(f"human verdicts have {len(arr)} entries but the dataset has {ds.n} samples")
    return arr


def _default_evaluator(sub: Dataset) -> Evaluator:
    from . import checker

    prep = getattr(checker, "prepare", None)
    if prep is not None:
        prep(sub)
    return checker.evaluate  # type: ignore[no-any-return]


def iter_grid_search(
    ds: Dataset,
    base_cfg: CheckerConfig,
    human_verdict_by_row: np.ndarray | Sequence[Any] | Mapping[Any, Any],
    grids: Mapping[str, Sequence[Any]],
    weights: Weights | None = None,
    evaluator: Evaluator | None = None,
) -> Generator[tuple[int, int], None, GridResult]:
    """Grid search as a generator: yields (done, total) checker evaluations, returns a GridResult.

    Only the audited samples (rows with a human label 0..2) are evaluated (`ds.subset`). Every
    combination of the non-τ parameters is one checker evaluation; all τ values of the grid are
    then scored at once from the sorted confidences. Stop iterating (or `close()`) to cancel.
    `evaluator(ds, cfg)` defaults to `workstation.checker.evaluate`.
    """
    w = weights or Weights()
    names, values, taus = _check_grids(base_cfg, grids)
    human = human_by_row(ds, human_verdict_by_row)
    rows = np.flatnonzero((human >= 0) & (human <= UNDECIDABLE))
    if len(rows) == 0:
        raise WorkstationError("calibration needs human labels: no sample in this selection has one")
    combos = list(itertools.product(*values)) if names else [()]
    configs = []
    for combo in combos:
        cfg = base_cfg.replace(**dict(zip(names, combo)))
        try:
            cfg.validate()
        except ValueError as e:
            raise WorkstationError(f"calibration grid: {e}") from None
        configs.append(cfg)
    tau_values = np.asarray(taus if taus is not None else [base_cfg.tau], np.float64)
    n_tau = len(tau_values)
    total = len(configs)
    sub = ds.subset(rows)
    h = human[rows]
    ev = evaluator if evaluator is not None else _default_evaluator(sub)
    out = {k: np.empty(total * n_tau, np.float64) for k in ("fpr", "risk", "cov", "acc")}
    n_cov = np.empty(total * n_tau, np.int64)
    n_pass = np.empty(total * n_tau, np.int64)
    yield 0, total
    for i, cfg in enumerate(configs):
        v = ev(sub, cfg)
        verdict = np.asarray(v.verdict)
        if len(verdict) != len(rows):
            raise WorkstationError(f"checker returned {len(verdict)} verdicts for {len(rows)} samples")
        rc = _Sorted(verdict, np.asarray(v.conf), h).at(tau_values)
        sl = slice(i * n_tau, (i + 1) * n_tau)
        out["fpr"][sl] = rc.fpr_pass
        out["risk"][sl] = rc.risk
        out["cov"][sl] = rc.coverage
        out["acc"][sl] = rc.accuracy
        n_cov[sl] = rc.n_covered
        n_pass[sl] = rc.n_pass_covered
        yield i + 1, total
    columns: dict[str, np.ndarray] = {}
    for p, (name, vals) in enumerate(zip(names, values)):
        col = np.array([c[p] for c in combos for _ in range(n_tau)])
        columns[name] = col
    params = tuple(names)
    if taus is not None:
        columns["tau"] = np.tile(tau_values, total)
        params = params + ("tau",)
    res = GridResult(
        params=params, columns=columns, j=objective(out["fpr"], out["risk"], out["cov"], w),
        fpr_pass=out["fpr"], risk=out["risk"], coverage=out["cov"], accuracy=out["acc"],
        n_covered=n_cov, n_pass_covered=n_pass, n_audited=len(rows), weights=w, base_config=base_cfg,
    )
    # the figure it optimised, with its interval: the best combination once more, its J resampled
    b = res.best_index
    v = ev(sub, configs[b // n_tau])
    res.best_j = objective_estimate(np.asarray(v.verdict), np.asarray(v.conf), h,
                                    np.asarray(sub.samples.prompt_id, dtype=object), float(tau_values[b % n_tau]), w)
    return res


def objective_estimate(checker_verdict: np.ndarray, conf: np.ndarray, human_verdict: np.ndarray,
                       prompts: np.ndarray, tau: float, weights: Weights | None = None, *,
                       n_boot: int | None = None, seed: int | None = None) -> Any:
    """J at τ over audited samples with its interval: the cluster bootstrap over the prompts
    (the expanded percentile interval of a statistic that is not a proportion,
    docs/statistics.md), the counts as `risk_coverage` takes them."""
    from ...evaluation.intervals import BOOTSTRAP, LEVEL, N_BOOT, SEED, Estimate, bootstrap_weights, \
        percentile_bounds, unit_codes

    c = _as_codes(checker_verdict, "checker verdicts")
    h = _as_codes(human_verdict, "human verdicts")
    cf = np.asarray(conf, np.float64)
    covered = ((c == PASS) | (c == FAIL)) & ~np.isnan(cf) & (cf >= tau)
    he = (h == PASS) | (h == FAIL)
    labelled = (h >= 0) & (h <= UNDECIDABLE)
    cols = np.stack([np.ones(len(c)), covered, covered & he, covered & he & (c == h),
                     covered & (c == PASS) & labelled, covered & (c == PASS) & (h == FAIL)], axis=1).astype(np.float64)

    def j_of(sums: np.ndarray) -> np.ndarray:
        n, k, ne, nc, npc, nfp = (sums[:, i] for i in range(6))
        with np.errstate(divide="ignore", invalid="ignore"):
            acc = np.where(k == 0, 1.0, np.where(ne > 0, nc / np.maximum(ne, 1e-300), np.nan))
            risk = np.where(k == 0, 0.0, 1.0 - acc)
            cov = np.where(n > 0, k / np.maximum(n, 1e-300), 0.0)
            fpr = np.where(npc > 0, nfp / np.maximum(npc, 1e-300), np.nan)
        return objective(fpr, risk, cov, weights)

    value = float(j_of(cols.sum(axis=0)[None, :])[0])
    _codes, units = unit_codes(prompts, len(c))
    if units < 2:
        return Estimate(value, n=len(c), units=units)
    vals = np.concatenate([j_of(wts @ cols) for wts in bootstrap_weights(
        prompts, len(c), N_BOOT if n_boot is None else n_boot, SEED if seed is None else seed)])
    lo, hi = percentile_bounds(vals, LEVEL, units)
    return Estimate(value, float(lo[0]), float(hi[0]), n=len(c), units=units, method=BOOTSTRAP)


def grid_search(
    ds: Dataset,
    base_cfg: CheckerConfig,
    human_verdict_by_row: np.ndarray | Sequence[Any] | Mapping[Any, Any],
    grids: Mapping[str, Sequence[Any]] | None = None,
    weights: Weights | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    evaluator: Evaluator | None = None,
) -> GridResult:
    """Minimise J over a grid of CheckerConfig fields ("tau" = the confidence threshold).

    `grids` defaults to the paper's grid (`PAPER_GRID`). `progress(done, total)` is called after
    each checker evaluation; `cancel()` returning True stops the search and raises
    GridSearchCancelled. See `GridResult` for the ranking and its tie-break.
    """
    gen = iter_grid_search(ds, base_cfg, human_verdict_by_row, PAPER_GRID if grids is None else grids,
                           weights, evaluator)
    return run_steps(gen, progress, cancel, "calibration cancelled")


T = TypeVar("T")


def run_steps(gen: Generator[tuple[int, int], None, T], progress: Callable[[int, int], None] | None,
              cancel: Callable[[], bool] | None, cancelled: str) -> T:
    """A search's steps (``(done, total)`` checker evaluations) run to its result: `progress` after
    each step; `cancel()` returning True stops the search and raises GridSearchCancelled
    ("<cancelled> after <done> of <total> checker evaluations")."""
    try:
        while True:
            done, total = next(gen)
            if progress is not None:
                progress(done, total)
            if cancel is not None and cancel():
                gen.close()
                raise GridSearchCancelled(f"{cancelled} after {done} of {total} checker evaluations")
    except StopIteration as stop:
        return stop.value
