"""Agreement between label lists: percent agreement, Cohen's κ, quadratic weighted κ, and
the label-log bookkeeping they rest on (latest / first event per target and annotator).

Pure functions over numpy arrays, shared by every method: P/F/U labels, pair judgements and
1-4 ratings alike. A missing label is a negative code or NaN and is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import WorkstationError
from ..util.grouping import group_codes as _group_codes


def _event_order(n: int, order: Sequence[Any] | np.ndarray | None) -> np.ndarray:
    """Rank of each event in time: by `order` (timestamps, sequence numbers), then position."""
    pos = np.arange(n)
    if order is None:
        return pos
    o = np.asarray(order)
    if len(o) != n:
        raise WorkstationError(f"label order has {len(o)} entries for {n} label events")
    if o.dtype.kind not in "iuf":
        o = o.astype(str)  # ISO-8601 timestamps sort as text
    return np.lexsort((pos, o))


def _pick_per_group(groups: np.ndarray, order: np.ndarray | Sequence[Any] | None, last: bool) -> np.ndarray:
    n = len(groups)
    if n == 0:
        return np.zeros(0, np.int64)
    seq = _event_order(n, order)  # event indices in time order
    if last:
        seq = seq[::-1]
    _, first_idx = np.unique(groups[seq], return_index=True)  # first occurrence in that order
    chosen = seq[first_idx]
    return np.sort(chosen).astype(np.int64)


def latest_labels(
    sample: Sequence[Hashable] | np.ndarray,
    annotator: Sequence[Hashable] | np.ndarray,
    order: Sequence[Any] | np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the label events that count: the latest per (sample, annotator).

    Events are append-only; "latest" is by `order` (timestamps or sequence numbers; ties and
    `order=None` fall back to position in the arrays, later wins). Returns sorted event indices.
    """
    if len(sample) != len(annotator):
        raise WorkstationError("label events: sample and annotator columns differ in length")
    return _pick_per_group(_group_codes(sample, annotator), order, last=True)


def first_labels(
    sample: Sequence[Hashable] | np.ndarray,
    annotator: Sequence[Hashable] | np.ndarray,
    order: Sequence[Any] | np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the first label event per (sample, annotator) (see `latest_labels`)."""
    if len(sample) != len(annotator):
        raise WorkstationError("label events: sample and annotator columns differ in length")
    return _pick_per_group(_group_codes(sample, annotator), order, last=False)


def _valid_pairs(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise WorkstationError(f"the two label lists differ in length ({len(x)} vs {len(y)})")
    ok = np.isfinite(x) & np.isfinite(y) & (x >= 0) & (y >= 0)
    return x[ok].astype(np.int64), y[ok].astype(np.int64)


def percent_agreement(a: Any, b: Any) -> float:
    """Fraction of pairs with the same label (pairs with a missing label, <0 or NaN, left out)."""
    x, y = _valid_pairs(a, b)
    return float(np.mean(x == y)) if len(x) else float("nan")


def cohen_kappa(a: Any, b: Any) -> float:
    """Unweighted Cohen's κ for categorical labels (integer codes; <0 or NaN = missing, left out).

    κ = (p_o − p_e) / (1 − p_e). NaN for no pairs, and when p_e = 1 (both raters used one
    and the same category throughout: κ is undefined there).
    """
    x, y = _valid_pairs(a, b)
    n = len(x)
    if n == 0:
        return float("nan")
    k = int(max(x.max(), y.max())) + 1
    m = np.bincount(x * k + y, minlength=k * k).reshape(k, k).astype(np.float64) / n
    po = float(np.trace(m))
    pe = float(m.sum(1) @ m.sum(0))
    if pe >= 1.0:
        return float("nan")
    return (po - pe) / (1.0 - pe)


def quadratic_weighted_kappa(a: Any, b: Any, n_categories: int = 4, min_rating: int = 1) -> float:
    """Quadratic weighted Cohen's κ for ordinal ratings min_rating..min_rating+n_categories-1.

    κ_w = 1 − Σ w·O / Σ w·E with w_ij = (i − j)² / (K − 1)², O the observed and E the expected
    (outer product of the marginals) rating matrices. Missing ratings (NaN or below min_rating
    when given as 0/-1) are left out; a rating above the scale raises. NaN for no pairs or when
    the expected disagreement is zero.
    """
    if n_categories < 2:
        raise WorkstationError("quadratic weighted kappa needs at least 2 rating categories")
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise WorkstationError(f"the two rating lists differ in length ({len(x)} vs {len(y)})")
    ok = np.isfinite(x) & np.isfinite(y) & (x >= min_rating) & (y >= min_rating)
    x = x[ok] - min_rating
    y = y[ok] - min_rating
    if len(x) and (x.max() >= n_categories or y.max() >= n_categories
                   or np.any(x != np.round(x)) or np.any(y != np.round(y))):
        raise WorkstationError(
            f"ratings must be whole numbers from {min_rating} to {min_rating + n_categories - 1}")
    n = len(x)
    if n == 0:
        return float("nan")
    xi = x.astype(np.int64)
    yi = y.astype(np.int64)
    K = n_categories
    obs = np.bincount(xi * K + yi, minlength=K * K).reshape(K, K).astype(np.float64)
    exp = np.outer(obs.sum(1), obs.sum(0)) / n
    i = np.arange(K)
    w = (i[:, None] - i[None, :]) ** 2 / (K - 1) ** 2
    den = float((w * exp).sum())
    if den == 0.0:
        return float("nan")
    return 1.0 - float((w * obs).sum()) / den


@dataclass(frozen=True)
class SelfAgreement:
    """Consistency re-checks: first vs latest label of one annotator on the same sample."""

    n_pairs: int
    percent: float
    kappa: float
    sample: np.ndarray  # the sample of each pair
    annotator: np.ndarray
    first: np.ndarray  # first label
    latest: np.ndarray  # latest label
    kappa_lo: float = float("nan")  # 95 % bootstrap bounds of κ over the pairs
    kappa_hi: float = float("nan")
    small: bool = True  # fewer than 10 pairs


def self_agreement(
    sample: Sequence[Hashable] | np.ndarray,
    annotator: Sequence[Hashable] | np.ndarray,
    label: np.ndarray | Sequence[float],
    order: Sequence[Any] | np.ndarray | None = None,
    weighted_categories: int | None = None,
) -> SelfAgreement:
    """Agreement of annotators with themselves on samples they labelled more than once.

    For every (sample, annotator) with at least two label events, the first and the latest
    label form a pair. `kappa` is Cohen's κ over those pairs, or the quadratic weighted κ over
    1..`weighted_categories` ratings when that is given. Empty input → n_pairs 0 and NaN.
    """
    s = np.asarray(sample)
    a = np.asarray(annotator)
    lab = np.asarray(label, dtype=np.float64)
    if not (len(s) == len(a) == len(lab)):
        raise WorkstationError("label events: sample, annotator and label columns differ in length")
    groups = _group_codes(s, a)
    if order is not None:
        order = np.asarray(order)
    first = _pick_per_group(groups, order, last=False)
    last = _pick_per_group(groups, order, last=True)
    # both are sorted by event index; align them by group
    f_by_g = dict(zip(groups[first].tolist(), first.tolist()))
    pairs = [(f_by_g[g], e) for g, e in zip(groups[last].tolist(), last.tolist()) if f_by_g[g] != e]
    fi = np.array([p[0] for p in pairs], np.int64)
    li = np.array([p[1] for p in pairs], np.int64)
    fl, ll = lab[fi], lab[li]
    if weighted_categories is None:
        kappa = cohen_kappa(fl, ll)
    else:
        kappa = quadratic_weighted_kappa(fl, ll, weighted_categories)
    b = kappa_bounds(fl, ll, None, weighted_categories) if len(pairs) else {"kappa_lo": float("nan"),
                                                                           "kappa_hi": float("nan"), "small": True}
    return SelfAgreement(
        n_pairs=len(pairs), percent=percent_agreement(fl, ll), kappa=kappa,
        sample=s[li] if len(li) else s[:0], annotator=a[li] if len(li) else a[:0], first=fl, latest=ll,
        kappa_lo=b["kappa_lo"], kappa_hi=b["kappa_hi"], small=bool(b["small"]),
    )


def kappa_bounds(x: np.ndarray, y: np.ndarray, unit: Sequence[Hashable] | np.ndarray | None = None,
                 weighted_categories: int | None = None, n_boot: int | None = None) -> dict[str, Any]:
    """The 95 % bootstrap bounds of κ (Cohen's, or quadratic weighted over 1..`weighted_categories`
    ratings) and of the percent agreement between two label lists, resampling ``unit`` (the items'
    prompts; the items themselves when None): ``kappa_lo``, ``kappa_hi``, ``percent_lo``,
    ``percent_hi``, ``units`` and ``small`` (fewer than 10 items or units)."""
    from .intervals import N_BOOT, SMALL_N, kappa_estimate, ratio_estimates

    nb = N_BOOT if n_boot is None else n_boot
    a = np.asarray(x, np.float64).reshape(-1)
    b = np.asarray(y, np.float64).reshape(-1)
    ok = np.isfinite(a) & np.isfinite(b)
    if weighted_categories is not None:
        a, b = a - 1.0, b - 1.0  # ratings 1..K as codes 0..K-1
        k = int(weighted_categories)
    else:
        k = int(max(a[ok].max(initial=0.0), b[ok].max(initial=0.0))) + 1
    ok &= (a >= 0) & (b >= 0)
    u = None if unit is None else np.asarray(unit, dtype=object)[ok]
    e = kappa_estimate(a[ok], b[ok], u, categories=k, weighted=weighted_categories is not None, n_boot=nb)
    same = (a[ok] == b[ok]).astype(np.float64)
    pe = ratio_estimates(same, np.ones(len(same)), u, n_boot=nb)[0] if len(same) else None
    n = int(ok.sum())
    return {"kappa_lo": e.lo, "kappa_hi": e.hi, "percent_lo": pe.lo if pe else float("nan"),
            "percent_hi": pe.hi if pe else float("nan"), "units": e.units, "small": min(n, e.units) < SMALL_N}


def annotator_agreement(
    sample: Sequence[Hashable] | np.ndarray,
    annotator: Sequence[Hashable] | np.ndarray,
    label: np.ndarray | Sequence[float],
    order: Sequence[Any] | np.ndarray | None = None,
    weighted_categories: int | None = None,
    unit_of: Callable[[Any], Hashable] | None = None,
    n_boot: int | None = None,
) -> list[dict[str, Any]]:
    """Per pair of annotators, over the samples both labelled (latest label of each counts):
    n, percent agreement and κ (Cohen's, or quadratic weighted over 1..`weighted_categories`),
    with their 95 % bootstrap bounds (`kappa_bounds`; ``unit_of(sample)`` names the unit a sample
    is resampled with, its prompt; ``n_boot`` 0: no bounds) and ``small`` (n below 10)."""
    s = np.asarray(sample)
    a = np.asarray(annotator)
    lab = np.asarray(label, dtype=np.float64)
    if not (len(s) == len(a) == len(lab)):
        raise WorkstationError("label events: sample, annotator and label columns differ in length")
    idx = latest_labels(s, a, order)
    s_codes = _group_codes(s)
    first_of: dict[int, Any] = {}
    by_ann: dict[str, dict[int, float]] = {}
    for e in idx.tolist():
        by_ann.setdefault(str(a[e]), {})[int(s_codes[e])] = float(lab[e])
        first_of.setdefault(int(s_codes[e]), s[e])
    names = sorted(by_ann)
    out = []
    for i, n1 in enumerate(names):
        for n2 in names[i + 1:]:
            common = sorted(set(by_ann[n1]) & set(by_ann[n2]))
            x = np.array([by_ann[n1][c] for c in common], np.float64)
            y = np.array([by_ann[n2][c] for c in common], np.float64)
            k = cohen_kappa(x, y) if weighted_categories is None else \
                quadratic_weighted_kappa(x, y, weighted_categories)
            units = None if unit_of is None else [unit_of(first_of[c]) for c in common]
            row = {"annotator_a": n1, "annotator_b": n2, "n": len(common),
                   "percent_agreement": percent_agreement(x, y), "kappa": k}
            row.update(kappa_bounds(x, y, units, weighted_categories, n_boot) if len(common) else
                       {"kappa_lo": float("nan"), "kappa_hi": float("nan"), "percent_lo": float("nan"),
                        "percent_hi": float("nan"), "units": 0, "small": True})
            out.append(row)
    return out
