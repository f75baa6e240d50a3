"""Agreement among many raters: Krippendorff's α, Fleiss' κ, Gwet's AC1 and AC2, each with a
prompt-clustered interval (docs/statistics.md, "Agreement among many raters").

Input: a ratings matrix, items × raters, NaN where a rater gave no rating, the values taken from a
scale (`categories`: the scale's values in order, e.g. 1..4 for ProtoBias's fidelity or the codes
0..K-1 of P / F / U); and the unit (prompt) of every item for the interval.

Every statistic is a function of sums over the items of a few per-item figures (the item's
coincidences for α; its agreement and its category shares for κ and AC), so an interval only
needs the units' sums: the **cluster bootstrap** resamples the units with replacement (all their
items with them) and recomputes the statistic from the resampled sums, 2,000 resamples with seed 0
(`intervals.N_BOOT`, `intervals.SEED`), the expanded BCa interval (`_bca`); above
`intervals.MAX_BOOT_UNITS` units (or on request) the **cluster jackknife** (leave one unit out,
the normal interval at t₍c−1₎ with the jackknife's variance).

Missing ratings, as the references do:

* **α** (Krippendorff 2011): items with fewer than two ratings are left out (they have no pair);
* **Fleiss' κ, AC1, AC2** (Gwet, Handbook of Inter-Rater Reliability, 4th ed., ch. 2–3): the
  observed agreement p_a is the mean over the items with at least two ratings; the category
  prevalences π_k behind the chance agreement are the mean over the items with at least one
  rating of the share r_ik / r_i of the item's ratings in category k.

Undefined (NaN, with NaN bounds): no item with two ratings; α and κ when there is no chance
disagreement (every rating in one category); AC1 / AC2 on a scale of one category. AC1 with every
rating in one category of a larger scale is 1 (it needs no disagreement to be defined: the
point of Gwet's coefficient where one answer dominates).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import WorkstationError
from .intervals import (
    BOOTSTRAP,
    CLUSTER_BOOTSTRAP,
    CLUSTER_JACKKNIFE,
    JACKKNIFE,
    LEVEL,
    MAX_BOOT_UNITS,
    N_BOOT,
    NO_INTERVAL,
    SEED,
    Estimate,
    expanded_alpha,
    resample_counts,
    t_ppf,
    unit_codes,
)

__all__ = ["METRICS", "WEIGHTS", "STATISTICS", "CLUSTER_JACKKNIFE", "JACKKNIFE", "rating_counts", "krippendorff_alpha",
           "fleiss_kappa", "gwet_ac1", "gwet_ac2", "agreement_weights", "agreement_estimate",
           "many_rater_agreement", "agreement_by_group", "statistics_for", "provenance"]

METRICS = ("nominal", "ordinal", "interval")
#: Gwet's weights for AC2 (Handbook, ch. 3): identity (AC2 = AC1), quadratic, linear, ordinal, radical
WEIGHTS = ("identity", "quadratic", "linear", "ordinal", "radical")
#: the statistics `many_rater_agreement` reports, by name
STATISTICS = ("alpha_nominal", "alpha_ordinal", "alpha_interval", "fleiss_kappa", "ac1", "ac2_quadratic",
              "ac2_linear", "ac2_ordinal")
_NAN = float("nan")


# =============================================================================================
# Ratings → per-item counts
# =============================================================================================
def _scale(ratings: np.ndarray, categories: Sequence[float] | np.ndarray | None) -> np.ndarray:
    seen = np.unique(ratings[np.isfinite(ratings)])
    if categories is None:
        return seen.astype(np.float64)
    cats = np.asarray(categories, np.float64).reshape(-1)
    if not len(cats) or not np.all(np.isfinite(cats)) or np.any(np.diff(cats) <= 0):
        raise WorkstationError("a rating scale must be increasing numbers, given once each")
    bad = seen[~np.isin(seen, cats)]
    if len(bad):
        raise WorkstationError(f"a rating {bad[0]:g} is not on the scale ({', '.join(f'{c:g}' for c in cats)})")
    return cats


def rating_counts(ratings: Any, categories: Sequence[float] | np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(r, values): r[i, k] the number of raters who gave item i the k-th value of the scale, and
    the scale's values (``categories``; the values seen when None). ``ratings``: items × raters,
    NaN (or None) for no rating."""
    x = np.asarray(ratings, dtype=np.float64)
    if x.ndim != 2:
        raise WorkstationError(f"a ratings matrix has items as rows and raters as columns; got {x.ndim} dimensions")
    values = _scale(x, categories)
    r = np.zeros((x.shape[0], len(values)))
    for k, v in enumerate(values.tolist()):
        r[:, k] = np.count_nonzero(x == v, axis=1)
    return r, values


# =============================================================================================
# The statistics as functions of per-item sums
# =============================================================================================
def agreement_weights(values: np.ndarray, kind: str) -> np.ndarray:
    """Gwet's agreement weights w_kl (1 on the diagonal) of a scale's ``values``: identity,
    quadratic 1 − (x_k − x_l)² / (x_max − x_min)², linear 1 − |x_k − x_l| / (x_max − x_min),
    ordinal 1 − M_kl / max M with M_kl = C(|k − l| + 1, 2) over the ranks, radical
    1 − √|x_k − x_l| / √(x_max − x_min)."""
    v = np.asarray(values, np.float64)
    q = len(v)
    if kind == "identity" or q < 2:
        return np.eye(q)
    d = np.abs(v[:, None] - v[None, :])
    span = float(v.max() - v.min())
    if kind == "quadratic":
        return 1.0 - d ** 2 / span ** 2
    if kind == "linear":
        return 1.0 - d / span
    if kind == "radical":
        return 1.0 - np.sqrt(d) / math.sqrt(span)
    if kind == "ordinal":
        i = np.arange(q)
        m = np.abs(i[:, None] - i[None, :]) + 1.0
        m = m * (m - 1.0) / 2.0
        return 1.0 - m / m.max()
    raise WorkstationError(f"unknown agreement weights {kind!r}; expected one of {', '.join(WEIGHTS)}")


@dataclass(frozen=True)
class _Statistic:
    """A statistic as per-item figures (``features``: n × d) and their sums' function (``of_sums``:
    b × d → b)."""

    name: str
    features: Callable[[np.ndarray], np.ndarray]
    of_sums: Callable[[np.ndarray], np.ndarray]


def _alpha_statistic(values: np.ndarray, metric: str) -> _Statistic:
    q = len(values)
    if metric not in METRICS:
        raise WorkstationError(f"unknown α metric {metric!r}; expected one of {', '.join(METRICS)}")

    def features(r: np.ndarray) -> np.ndarray:
        m = r.sum(axis=1)
        pair = m >= 2
        o = r[:, :, None] * r[:, None, :] - r[:, :, None] * np.eye(q)[None, :, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            o = np.where(pair[:, None, None], o / np.where(pair, m - 1.0, 1.0)[:, None, None], 0.0)
        return o.reshape(len(r), q * q)

    v = np.asarray(values, np.float64)
    fixed = (v[:, None] != v[None, :]).astype(float) if metric == "nominal" else (v[:, None] - v[None, :]) ** 2

    def of_sums(s: np.ndarray) -> np.ndarray:
        o = s.reshape(len(s), q, q)
        n_v = o.sum(axis=1)  # (b, q)
        n = n_v.sum(axis=1)
        if metric == "ordinal":
            cs = np.cumsum(n_v, axis=1)
            lo_i = np.minimum(np.arange(q)[:, None], np.arange(q)[None, :])
            hi_i = np.maximum(np.arange(q)[:, None], np.arange(q)[None, :])
            between = cs[:, hi_i] - cs[:, lo_i] + n_v[:, lo_i]  # Σ n_g for g from the lower to the higher value
            d = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2.0) ** 2
            d = d * (1.0 - np.eye(q))[None]
        else:
            d = np.broadcast_to(fixed, (len(s), q, q))
        obs = (o * d).sum(axis=(1, 2))
        exp = (n_v[:, :, None] * n_v[:, None, :] * d).sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((exp > 0) & (n > 1), 1.0 - (n - 1.0) * obs / np.where(exp > 0, exp, 1.0), np.nan)

    return _Statistic(f"alpha_{metric}", features, of_sums)


def _gwet_features(weights: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """[agreement · 1(r_i ≥ 2), 1(r_i ≥ 2), r_ik / r_i · 1(r_i ≥ 1) for each k, 1(r_i ≥ 1)] per item."""
    def features(r: np.ndarray) -> np.ndarray:
        m = r.sum(axis=1)
        pair = m >= 2
        rated = m >= 1
        rw = r @ weights.T  # r*_ik = Σ_l w_kl r_il
        with np.errstate(invalid="ignore", divide="ignore"):
            agree = np.where(pair, (r * (rw - 1.0)).sum(axis=1) / np.where(pair, m * (m - 1.0), 1.0), 0.0)
            share = np.where(rated[:, None], r / np.where(rated, m, 1.0)[:, None], 0.0)
        return np.column_stack([agree, pair.astype(float), share, rated.astype(float)])
    return features


def _gwet_statistic(values: np.ndarray, weights: str, fleiss: bool) -> _Statistic:
    q = len(values)
    w = agreement_weights(values, "identity" if fleiss else weights)
    t_w = float(w.sum())

    def of_sums(s: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            pa = s[:, 0] / s[:, 1]
            pi = s[:, 2:2 + q] / s[:, [2 + q]]
            if fleiss:
                pe = np.einsum("bk,kl,bl->b", pi, w, pi)
            elif q < 2:
                pe = np.full(len(s), np.nan)
            else:
                pe = t_w / (q * (q - 1.0)) * (pi * (1.0 - pi)).sum(axis=1)
            ok = (s[:, 1] > 0) & np.isfinite(pe) & (pe < 1.0)
            return np.where(ok, (pa - pe) / np.where(ok, 1.0 - pe, 1.0), np.nan)

    name = "fleiss_kappa" if fleiss else ("ac1" if weights == "identity" else f"ac2_{weights}")
    return _Statistic(name, _gwet_features(w), of_sums)


def _statistic(name: str, values: np.ndarray) -> _Statistic:
    if name.startswith("alpha_"):
        return _alpha_statistic(values, name[len("alpha_"):])
    if name == "fleiss_kappa":
        return _gwet_statistic(values, "identity", True)
    if name == "ac1":
        return _gwet_statistic(values, "identity", False)
    if name.startswith("ac2_"):
        return _gwet_statistic(values, name[len("ac2_"):], False)
    raise WorkstationError(f"unknown agreement statistic {name!r}; expected one of {', '.join(STATISTICS)}")


def _value(name: str, ratings: Any, categories: Sequence[float] | np.ndarray | None) -> float:
    r, values = rating_counts(ratings, categories)
    st = _statistic(name, values)
    return float(st.of_sums(st.features(r).sum(axis=0)[None, :])[0])


def krippendorff_alpha(ratings: Any, metric: str = "nominal",
                       categories: Sequence[float] | np.ndarray | None = None) -> float:
    """Krippendorff's α of a ratings matrix (items × raters, NaN missing) with the ``metric``'s
    distances: nominal (different or not), ordinal (the ranks' cumulated frequencies between two
    values), interval ((x − y)²). Items with fewer than two ratings are left out."""
    if metric not in METRICS:
        raise WorkstationError(f"unknown α metric {metric!r}; expected one of {', '.join(METRICS)}")
    return _value(f"alpha_{metric}", ratings, categories)


def fleiss_kappa(ratings: Any, categories: Sequence[float] | np.ndarray | None = None) -> float:
    """Fleiss' κ (Fleiss 1971; Gwet's generalisation to missing ratings, module docstring)."""
    return _value("fleiss_kappa", ratings, categories)


def gwet_ac1(ratings: Any, categories: Sequence[float] | np.ndarray | None = None) -> float:
    """Gwet's AC1: (p_a − p_e) / (1 − p_e), p_e = Σ π_k (1 − π_k) / (q − 1) over the scale's q
    values (``categories``: give the scale, since q enters p_e)."""
    return _value("ac1", ratings, categories)


def gwet_ac2(ratings: Any, categories: Sequence[float] | np.ndarray | None = None,
             weights: str = "quadratic") -> float:
    """Gwet's AC2 with the named weights (`agreement_weights`): p_a with the weighted counts
    r*_ik = Σ_l w_kl r_il, p_e = Σ_kl w_kl / (q (q − 1)) · Σ π_k (1 − π_k)."""
    if weights not in WEIGHTS:
        raise WorkstationError(f"unknown agreement weights {weights!r}; expected one of {', '.join(WEIGHTS)}")
    return _value(f"ac2_{weights}", ratings, categories)


# =============================================================================================
# The clustered interval
# =============================================================================================
def agreement_estimate(statistic: str, ratings: Any, unit: Sequence[Any] | np.ndarray | None = None, *,
                       categories: Sequence[float] | np.ndarray | None = None, interval: str = "auto",
                       n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> Estimate:
    """One statistic (`STATISTICS`) with its interval over the units (``unit``: one id per item,
    its prompt; None: every item its own unit). ``interval``: "bootstrap" (the cluster bootstrap,
    expanded BCa), "jackknife" (the cluster jackknife, t interval), "auto" (the bootstrap up
    to `intervals.MAX_BOOT_UNITS` units, the jackknife above). ``n`` of the estimate: the items
    with at least two ratings; ``units``: the units among them."""
    if interval not in ("auto", "bootstrap", "jackknife"):
        raise WorkstationError(f"unknown interval {interval!r}; expected auto, bootstrap or jackknife")
    r, values = rating_counts(ratings, categories)
    return _estimate(_statistic(statistic, values), r, unit, interval, n_boot, seed, level)


def _estimate(st: _Statistic, r: np.ndarray, unit: Sequence[Any] | np.ndarray | None, interval: str,
              n_boot: int, seed: int, level: float) -> Estimate:
    n_items = len(r)
    codes, c = unit_codes(unit, n_items)
    f = st.features(r)
    us = np.zeros((c, f.shape[1]))
    np.add.at(us, codes, f)
    value = float(st.of_sums(us.sum(axis=0)[None, :])[0])
    pair = r.sum(axis=1) >= 2
    n = int(pair.sum())
    units = int(len(np.unique(codes[pair]))) if n else 0
    clustered = unit is not None and c < n_items
    if not math.isfinite(value) or n_boot <= 0 or units < 2:
        return Estimate(value, n=n, units=units, method=NO_INTERVAL, level=level)
    if interval == "jackknife" or (interval == "auto" and c > MAX_BOOT_UNITS):
        lo, hi = _jackknife(st, us, value, level)
        method = CLUSTER_JACKKNIFE if clustered else JACKKNIFE
    else:
        boot = np.empty(n_boot)
        done = 0
        for counts in resample_counts(c, n_boot, seed):
            boot[done:done + len(counts)] = st.of_sums(counts @ us)
            done += len(counts)
        lo, hi = _bca(st, us, value, boot, level, units)
        method = CLUSTER_BOOTSTRAP if clustered else BOOTSTRAP
    if math.isfinite(lo) and math.isfinite(hi):
        lo, hi = min(lo, value), max(hi, value)
    else:
        lo, hi, method = _NAN, _NAN, NO_INTERVAL
    return Estimate(value, lo, hi, n=n, units=units, method=method, level=level)


def _leave_one_out(st: _Statistic, us: np.ndarray) -> np.ndarray:
    """The statistic without each unit in turn (units without a rating left out: they change nothing)."""
    u = us[np.abs(us).sum(axis=1) > 0]
    if len(u) < 2:
        return np.zeros(0)
    theta = st.of_sums(u.sum(axis=0)[None, :] - u)
    return theta[np.isfinite(theta)]


def _bca(st: _Statistic, us: np.ndarray, value: float, boot: np.ndarray, level: float,
         units: int) -> tuple[float, float]:
    """The expanded BCa interval: the bias-corrected and accelerated percentile interval (Efron 1987;
    z₀ from the resamples below the value, the acceleration from the cluster jackknife's skewness)
    at the expanded percentile's tails (`intervals.expanded_alpha`: widened for few units)."""
    from statistics import NormalDist

    b = boot[np.isfinite(boot)]
    if len(b) < 2:
        return _NAN, _NAN
    nd = NormalDist()
    below = (np.count_nonzero(b < value) + 0.5 * np.count_nonzero(b == value)) / len(b)
    z0 = nd.inv_cdf(min(max(below, 1.0 / (2 * len(b))), 1.0 - 1.0 / (2 * len(b))))
    theta = _leave_one_out(st, us)
    acc = 0.0
    if len(theta) >= 2:
        dev = theta.mean() - theta
        ss = float((dev ** 2).sum())
        if ss > 0:
            acc = float((dev ** 3).sum()) / (6.0 * ss ** 1.5)
    tail = expanded_alpha(level, units)
    qs = []
    for z in (nd.inv_cdf(tail), nd.inv_cdf(1.0 - tail)):
        den = 1.0 - acc * (z0 + z)
        qs.append(nd.cdf(z0 + (z0 + z) / den) if den > 0 else (0.0 if z < 0 else 1.0))
    lo, hi = np.quantile(b, qs)
    return float(lo), float(hi)


def _jackknife(st: _Statistic, us: np.ndarray, value: float, level: float) -> tuple[float, float]:
    """The cluster jackknife: the statistic without each unit in turn, var = (c − 1)/c Σ (θ_j − θ̄)²,
    value ± t₍c−1₎ · √var."""
    theta = _leave_one_out(st, us)
    if len(theta) < 2:
        return _NAN, _NAN
    var = (len(theta) - 1.0) / len(theta) * float(((theta - theta.mean()) ** 2).sum())
    t = t_ppf(0.5 + level / 2.0, max(len(theta) - 1, 1))
    half = t * math.sqrt(var)
    return value - half, value + half


def statistics_for(ordinal: bool) -> tuple[str, ...]:
    """The statistics reported for a scale: nominal α, Fleiss' κ and AC1 for categories; ordinal
    and interval α and AC2 (quadratic, linear and ordinal weights) beside them for ratings."""
    if ordinal:
        return ("alpha_ordinal", "alpha_interval", "alpha_nominal", "fleiss_kappa", "ac1", "ac2_quadratic",
                "ac2_linear", "ac2_ordinal")
    return ("alpha_nominal", "fleiss_kappa", "ac1")


def many_rater_agreement(ratings: Any, unit: Sequence[Any] | np.ndarray | None = None, *,
                         categories: Sequence[float] | np.ndarray | None = None, ordinal: bool = False,
                         statistics: Sequence[str] | None = None, interval: str = "auto", n_boot: int = N_BOOT,
                         seed: int = SEED, level: float = LEVEL) -> dict[str, Estimate]:
    """Every statistic of the scale (`statistics_for`, or ``statistics``) with its clustered
    interval (`agreement_estimate`), computed from one count table."""
    r, values = rating_counts(ratings, categories)
    names = tuple(statistics) if statistics is not None else statistics_for(ordinal)
    return {nm: _estimate(_statistic(nm, values), r, unit, interval, n_boot, seed, level) for nm in names}


def agreement_by_group(ratings: Any, group: Sequence[Any] | np.ndarray, unit: Sequence[Any] | np.ndarray | None = None,
                       **kw: Any) -> dict[str, dict[str, Estimate]]:
    """`many_rater_agreement` per group of items (a relation, a law, a skill: ``group`` names each
    item's), in the order the groups first appear; ``kw`` as `many_rater_agreement` takes them. The
    scale is the whole matrix's unless ``categories`` names it, so that AC1's q is the same in every group."""
    x = np.asarray(ratings, dtype=np.float64)
    g = np.asarray(group, dtype=object).reshape(-1)
    if x.ndim != 2 or len(g) != len(x):
        raise WorkstationError(f"{len(g)} group names for a ratings matrix of {len(x)} items")
    u = None if unit is None else np.asarray(unit).reshape(-1)
    if u is not None and len(u) != len(x):
        raise WorkstationError(f"{len(u)} units for a ratings matrix of {len(x)} items")
    if kw.get("categories") is None:
        kw["categories"] = _scale(x, None)
    out: dict[str, dict[str, Estimate]] = {}
    for name in dict.fromkeys(str(v) for v in g.tolist()):
        rows = np.array([str(v) == name for v in g.tolist()])
        out[name] = many_rater_agreement(x[rows], None if u is None else u[rows], **kw)
    return out


def provenance(unit: str, *, n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> dict[str, Any]:
    """What a report records about the many-rater intervals: level, resamples, seed, unit and form."""
    return {"level": level, "bootstrap_resamples": int(n_boot), "bootstrap_seed": int(seed), "bootstrap_unit": unit,
            "form": "expanded BCa (bias-corrected and accelerated, acceleration from the cluster jackknife, tails "
                    "widened to sqrt(n/(n-1)) t(n-1) for n units)",
            "many_units": f"more than {MAX_BOOT_UNITS:,} units: the cluster jackknife, the estimate +- t(c-1) sqrt(var)",
            "missing_ratings": "alpha: items with fewer than two ratings left out; Fleiss' kappa, AC1, AC2: Gwet's "
                               "formulas (agreement over items rated twice or more, category shares over items "
                               "rated once or more)"}
