"""Learn then Test: a configuration whose risk is at most α with probability at least 1 − δ
(Angelopoulos, Bates, Candès, Jordan and Lei 2021).

For every configuration λ of a grid the null hypothesis is H_λ: risk(λ) > α. With n_λ audited
items the configuration covers (and a human decided) and k_λ errors among them, the p-value is
the binomial tail p_λ = P(Binomial(n_λ, α) ≤ k_λ): how likely so few errors would be if the risk
were α. Two ways to test the whole grid keep the family-wise error at δ:

* **fixed sequence** — test in an order fixed without the labels (most conservative first, e.g.
  by the coverage the configurations have on all items); reject while p_λ ≤ δ, stop at the first
  that is not rejected. A configuration with too few audited items to pass even without an
  error ((1 − α)^n > δ) is left out of the sequence rather than stopping it;
* **Bonferroni** — reject every λ with p_λ ≤ δ / (number of configurations).

Any rejected λ then has risk ≤ α with probability ≥ 1 − δ, together; the choice is the rejected
λ with the largest coverage. When none is rejected, `labels_needed` says about how many more
audit labels would let one qualify if its audited error rate stayed what it is.

The guarantee is about the population the audited items were drawn from uniformly and
independently (a uniform audit sample of the run's images; drawing without replacement from a
finite run only makes the binomial tail conservative). Audits that label whole prompts do not
give independent items.

**Unequal draws**. Where the audited items were drawn with known, unequal inclusion
probabilities π_i — a stratified audit set, an audit plan — `design_counts` weights each item by
1/π_i: the risk is the Hájek ratio r̂ = Σ w_i e_i / Σ w_i over the covered, human-decided items,
tested as a binomial with Kish's effective sample size n_eff = (Σ w)² / Σ w², rounded down, and
k = ⌈r̂ · n_eff⌉ errors (with equal weights these are n and k exactly). Where the draw could not
reach part of the population (a plan of the checker's PASS only), the covered items outside it
are counted as errors: the risk over the whole population is at most α when the drawn part's
risk is at most α' = (α·C − U) / C_in (C covered items in all, C_in of them in the drawn part,
estimated with the weights, U = C − C_in outside it). Labels with no recorded draw (free
labelling, several audit sets) still give figures, but no guarantee: the window says so.
`tests/benchmarks/bench_ltt_draws.py` measures how often the guaranteed choice's realised risk
exceeds α under each draw, with and without the weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import WorkstationError

__all__ = ["binom_cdf", "ltt_pvalues", "LTTResult", "learn_then_test", "labels_needed", "min_items", "METHODS",
           "DesignCounts", "design_counts"]

METHODS = ("fixed_sequence", "bonferroni")


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) ≤ k), summed in log space (exact to ~1e-14 for n up to millions of k
    terms; k < 0 → 0, k ≥ n → 1)."""
    if n < 0:
        raise WorkstationError(f"binom_cdf: n must be >= 0, got {n}")
    if not 0.0 <= p <= 1.0:
        raise WorkstationError(f"binom_cdf: p must be in [0, 1], got {p}")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    i = np.arange(0, k + 1, dtype=np.float64)
    lg = math.lgamma(n + 1)
    logs = (lg - np.array([math.lgamma(x + 1) for x in i.tolist()])
            - np.array([math.lgamma(n - x + 1) for x in i.tolist()])
            + i * math.log(p) + (n - i) * math.log1p(-p))
    m = float(logs.max())
    return float(min(1.0, math.exp(m) * float(np.exp(logs - m).sum())))


def ltt_pvalues(n: Sequence[int] | np.ndarray, k: Sequence[int] | np.ndarray, alpha: float) -> np.ndarray:
    """p_λ = P(Binomial(n_λ, α) ≤ k_λ) for every configuration (1 where n_λ = 0)."""
    n_ = np.asarray(n, np.int64).reshape(-1)
    k_ = np.asarray(k, np.int64).reshape(-1)
    if len(n_) != len(k_):
        raise WorkstationError(f"{len(n_)} counts of audited items but {len(k_)} error counts")
    if (k_ < 0).any() or (k_ > n_).any():
        raise WorkstationError("an error count is negative or larger than its number of audited items")
    if not 0.0 < alpha < 1.0:
        raise WorkstationError(f"the risk level α must be between 0 and 1, got {alpha!r}")
    return np.array([binom_cdf(int(kk), int(nn), alpha) for nn, kk in zip(n_.tolist(), k_.tolist())], np.float64)


@dataclass(frozen=True)
class DesignCounts:
    """Per configuration: the binomial test's n and k, and the level α' its p-value is taken at."""

    n: np.ndarray  # int64
    k: np.ndarray  # int64
    alpha: np.ndarray  # float64 (α itself where the draw covers the whole population)
    risk: np.ndarray  # the weighted estimate of the drawn part's risk (NaN: no item)


def design_counts(covered: np.ndarray, decided: np.ndarray, error: np.ndarray, weights: np.ndarray | None,
                  alpha: float, *, covered_all: np.ndarray | None = None, drawn_share: float = 1.0) -> DesignCounts:
    """The binomial counts of every configuration (rows) from its audited items (columns):
    ``covered`` / ``decided`` / ``error`` boolean (configurations × items), ``weights`` 1/π per
    item (None: equal). ``covered_all``: per configuration, the covered items of the whole
    population; ``drawn_share``: the share of the population the draw could reach (1: all of it;
    the module docstring says how a part out of its reach counts)."""
    cov = np.atleast_2d(np.asarray(covered, bool))
    m, n_items = cov.shape
    dec = np.broadcast_to(np.asarray(decided, bool), cov.shape)
    err = np.atleast_2d(np.asarray(error, bool)) & cov & dec
    w = np.ones(n_items) if weights is None else np.asarray(weights, np.float64).reshape(-1)
    if len(w) != n_items or not np.all(np.isfinite(w)) or (w <= 0).any():
        raise WorkstationError("the weights must be one positive number per audited item")
    use = cov & dec
    equal = bool(np.all(w == w[0])) if n_items else True
    sw = (use * w).sum(axis=1)
    se = (err * w).sum(axis=1)
    if equal:
        n_out = use.sum(axis=1).astype(np.int64)
        k_out = err.sum(axis=1).astype(np.int64)
    else:
        sw2 = (use * w * w).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            n_eff = np.where(sw2 > 0, sw * sw / np.where(sw2 > 0, sw2, 1.0), 0.0)
            r = np.where(sw > 0, se / np.where(sw > 0, sw, 1.0), 0.0)
        n_out = np.floor(n_eff + 1e-9).astype(np.int64)
        k_out = np.minimum(np.ceil(r * n_out - 1e-9), n_out).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.where(sw > 0, se / np.where(sw > 0, sw, 1.0), np.nan)
    level = np.full(m, float(alpha))
    if drawn_share < 1.0 and covered_all is not None:
        c_all = np.asarray(covered_all, np.float64).reshape(-1)
        total = float(w.sum())
        share_cov = (cov * w).sum(axis=1) / total if total > 0 else np.zeros(m)
        c_in = share_cov * drawn_share  # the drawn part's covered share of the whole population
        frac_all = c_all  # covered share of the whole population, per configuration
        outside = np.maximum(0.0, frac_all - c_in)
        with np.errstate(invalid="ignore", divide="ignore"):
            level = np.where(c_in > 0, (alpha * frac_all - outside) / np.where(c_in > 0, c_in, 1.0), 0.0)
        level = np.clip(level, 0.0, float(alpha) if alpha < 1 else 1.0)
    return DesignCounts(n_out, k_out, level, risk)


def _needed_n(rate: float, alpha: float, delta: float, n_now: int, cap: int = 10_000_000) -> int | None:
    """Smallest n ≥ n_now with P(Bin(n, α) ≤ ⌊rate·n⌋) ≤ δ (None: the rate is too close to α)."""
    if rate >= alpha:
        return None

    def ok(n: int) -> bool:
        return binom_cdf(int(math.floor(rate * n + 1e-9)), n, alpha) <= delta

    hi = max(1, n_now)
    while not ok(hi):
        hi *= 2
        if hi > cap:
            return None
    lo = max(1, n_now // 2) if n_now > 1 else 1
    if ok(lo):
        return lo
    while hi - lo > 1:  # ok(hi), not ok(lo); nearly monotone in n: a bisection finds a boundary
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def min_items(alpha: float, level: float) -> int:
    """The fewest audited items with which a configuration can pass at all (no error):
    (1 − α)^n ≤ level."""
    return int(math.ceil(math.log(level) / math.log1p(-alpha) - 1e-12))


def labels_needed(n: int, k: int, n_audited: int, alpha: float, delta: float) -> int | None:
    """About how many more audit labels would let one configuration pass its test at level
    ``delta`` if its audited error rate stayed k/n and a share n/n_audited of new labels fell
    in its covered, human-decided items. None: it cannot pass at that error rate (k/n ≥ α, or
    it covers no audited item)."""
    if n <= 0 or n_audited <= 0:
        return None
    need = _needed_n(k / n, alpha, delta, n)
    if need is None:
        return None
    return max(0, int(math.ceil((need - n) * n_audited / n)))


@dataclass
class LTTResult:
    """The test's outcome over a grid of configurations (arrays in the grid's order)."""

    alpha: float
    delta: float
    method: str
    pvalues: np.ndarray
    order: np.ndarray  # the testing order (fixed sequence), most conservative first
    rejected: np.ndarray  # bool: risk ≤ α certified
    chosen: int | None  # the rejected configuration with the largest score, or None
    more_labels: int | None = None  # when none is chosen: about how many more labels would do
    more_for: int | None = None  # ... for this configuration
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_rejected(self) -> int:
        return int(self.rejected.sum())

    def message(self, describe: Any = None) -> str:
        """One line for the window: the guaranteed choice, or why there is none."""
        name = (lambda i: f"configuration {i}") if describe is None else describe
        if self.chosen is not None:
            return (f"{name(self.chosen)}: risk ≤ {self.alpha:g} with probability ≥ {1 - self.delta:g} "
                    f"({self.n_rejected} of {len(self.pvalues)} configurations qualify, {self.method.replace('_', ' ')})")
        if self.more_labels is not None and self.more_for is not None:
            return (f"none qualifies with these labels; about {self.more_labels} more audit labels would let "
                    f"{name(self.more_for)} qualify if its audited error rate stays the same")
        return (f"none qualifies with these labels, and none would at its audited error rate "
                f"(every configuration's audited risk is at or above α = {self.alpha:g})")


def learn_then_test(n: Sequence[int] | np.ndarray, k: Sequence[int] | np.ndarray, alpha: float, delta: float, *,
                    order: Sequence[int] | np.ndarray | None = None, score: Sequence[float] | np.ndarray | None = None,
                    method: str = "fixed_sequence", n_audited: int | None = None,
                    levels: Sequence[float] | np.ndarray | None = None) -> LTTResult:
    """Learn then Test over a grid (see the module docstring).

    ``n``/``k``: audited covered items with a human decision, and errors among them, per
    configuration; ``order``: the fixed testing order, most conservative first (required for
    the fixed sequence; it must not depend on the labels); ``score``: what the choice maximises
    among the rejected (coverage; default: the order's last rejected); ``n_audited``: audit
    labels so far, for `labels_needed` when none qualifies; ``levels``: per configuration the
    risk level its test is taken at (`design_counts`'s α'; default α for every one)."""
    if method not in METHODS:
        raise WorkstationError(f"unknown testing method {method!r} (choose from {', '.join(METHODS)})")
    if not 0.0 < delta < 1.0:
        raise WorkstationError(f"δ must be between 0 and 1, got {delta!r}")
    p = ltt_pvalues(n, k, alpha)
    m = len(p)
    lv = None if levels is None else np.asarray(levels, np.float64).reshape(-1)
    if lv is not None:
        if len(lv) != m:
            raise WorkstationError(f"{len(lv)} risk levels for {m} configurations")
        p = np.array([binom_cdf(int(kk), int(nn), float(a)) if a > 0 else 1.0
                      for nn, kk, a in zip(np.asarray(n, np.int64).reshape(-1).tolist(),
                                           np.asarray(k, np.int64).reshape(-1).tolist(), lv.tolist())], np.float64)
    n_ = np.asarray(n, np.int64).reshape(-1)
    k_ = np.asarray(k, np.int64).reshape(-1)
    if order is None:
        if method == "fixed_sequence":
            raise WorkstationError("fixed-sequence testing needs an order fixed without the labels")
        order_ = np.arange(m)
    else:
        order_ = np.asarray(order, np.int64).reshape(-1)
        if sorted(order_.tolist()) != list(range(m)):
            raise WorkstationError("the testing order must list every configuration once")
    rejected = np.zeros(m, bool)
    level = delta if method == "fixed_sequence" else delta / max(m, 1)
    # a configuration with fewer audited items than n_min cannot pass even with no error: it is
    # not tested (in a fixed sequence it would stop every one after it)
    n_min = min_items(alpha, level)
    testable = n_ >= n_min
    if lv is not None:
        testable = np.array([a > 0 and nn >= min_items(min(float(a), 1 - 1e-12), level)
                             for nn, a in zip(n_.tolist(), lv.tolist())], bool)
    seq = [i for i in order_.tolist() if testable[i]]
    if method == "fixed_sequence":
        for i in seq:
            if p[i] <= level:
                rejected[i] = True
            else:
                break
    else:
        rejected = testable & (p <= level)
    chosen: int | None = None
    if rejected.any():
        idx = np.flatnonzero(rejected)
        if score is not None:
            sc = np.asarray(score, np.float64).reshape(-1)
            pos = {int(v): j for j, v in enumerate(order_.tolist())}
            chosen = int(max(idx.tolist(), key=lambda i: (sc[i], -pos[i])))
        else:
            chosen = int([i for i in order_.tolist() if rejected[i]][-1])
    res = LTTResult(float(alpha), float(delta), method, p, order_, rejected, chosen,
                    extra={"min_items": n_min, "tested": int(len(seq))})
    if chosen is None and n_audited:
        best: tuple[int, int] | None = None
        candidates = seq[:1] if method == "fixed_sequence" and seq else (
            seq if seq else [i for i in order_.tolist() if n_[i] > 0])
        for i in candidates:
            need = labels_needed(int(n_[i]), int(k_[i]), n_audited, alpha, level)
            if need is not None and (best is None or need < best[0]):
                best = (need, i)
        if best is not None:
            res.more_labels, res.more_for = best
    return res
