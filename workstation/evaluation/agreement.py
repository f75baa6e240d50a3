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

_NAN = float("nan")


def _floats(a: Any) -> np.ndarray:
    """Labels as one flat float64 array (a missing label: None or NaN becomes NaN)."""
    return np.asarray(a, dtype=np.float64).ravel()


def _event_order(n: int, order: Sequence[Any] | np.ndarray | None) -> np.ndarray:
    """Rank of each event in time: by `order` (timestamps, sequence numbers), then position."""
    pos = np.arange(n)
    if order is None:
        return pos
    o = np.asarray(order)
    if len(o) != n:
        raise WorkstationError(f"label order has {len(o)} entries for {n} label events")
    if o.dtype.kind not in ("i", "u", "f"):
        o = o.astype(str)  # ISO-8601 timestamps sort as text
    return np.lexsort((pos, o))


def _first_in(groups: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The first event of every group in the sequence ``seq`` of event indices, sorted."""
    _, first_idx = np.unique(groups[seq], return_index=True)
    return np.sort(seq[first_idx]).astype(np.int64)


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
    return _first_in(_group_codes(sample, annotator), _event_order(len(sample), order)[::-1])


def first_labels(
    sample: Sequence[Hashable] | np.ndarray,
    annotator: Sequence[Hashable] | np.ndarray,
    order: Sequence[Any] | np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the first label event per (sample, annotator) (see `latest_labels`)."""
    if len(sample) != len(annotator):
        raise WorkstationError("label events: sample and annotator columns differ in length")
    return _first_in(_group_codes(sample, annotator), _event_order(len(sample), order))


def _valid_pairs(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = _floats(a), _floats(b)
    if len(x) != len(y):
        raise WorkstationError(f"the two label lists differ in length ({len(x)} vs {len(y)})")
    ok = np.isfinite(x) & np.isfinite(y) & (x >= 0) & (y >= 0)
    return x[ok].astype(np.int64), y[ok].astype(np.int64)


def percent_agreement(a: Any, b: Any) -> float:
    """Fraction of pairs with the same label (pairs with a missing label, <0 or NaN, left out)."""
    x, y = _valid_pairs(a, b)
    if not len(x):
        return _NAN
    return float(np.mean(x == y))


def cohen_kappa(a: Any, b: Any) -> float:
    """Unweighted Cohen's κ for categorical labels (integer codes; <0 or NaN = missing, left out).

    κ = (p_o − p_e) / (1 − p_e). NaN for fewer than two pairs, and when p_e = 1 (both raters used one
    and the same category throughout: κ is undefined there).
    """
    x, y = _valid_pairs(a, b)
    n = len(x)
    if n < 2:  # one item agrees or not by chance alone: no κ (the same as `kappa_from_tables`)
        return _NAN
    cx, cy = np.bincount(x), np.bincount(y)  # how often each rater used each category
    k = min(len(cx), len(cy))
    po = float(np.mean(x == y))
    pe = float(cx[:k] @ cy[:k]) / (n * n)
    if pe >= 1.0:
        return _NAN
    return (po - pe) / (1.0 - pe)


def quadratic_weighted_kappa(a: Any, b: Any, n_categories: int = 4, min_rating: int = 1) -> float:
    """Quadratic weighted Cohen's κ for ordinal ratings min_rating..min_rating+n_categories-1.

    κ_w = 1 − Σ w·O / Σ w·E with w_ij = (i − j)² / (K − 1)², O the observed and E the expected
    (outer product of the marginals) rating matrices (the factor 1 / (K − 1)² cancels in the
    ratio, so w_ij = (i − j)² here). Missing ratings (NaN or below min_rating
    when given as 0/-1) are left out; a rating above the scale raises. NaN for fewer than two pairs or when
    the expected disagreement is zero.
    """
    if n_categories < 2:
        raise WorkstationError("quadratic weighted kappa needs at least 2 rating categories")
    x, y = _floats(a), _floats(b)
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
    if n < 2:  # as `cohen_kappa`: undefined for fewer than two pairs
        return _NAN
    xi = x.astype(np.int64)
    yi = y.astype(np.int64)
    K = n_categories
    obs = np.bincount(xi * K + yi, minlength=K * K).reshape(K, K)
    exp = np.outer(obs.sum(1), obs.sum(0)) / n
    i = np.arange(K)
    w = (i[:, None] - i[None, :]) ** 2
    den = float((w * exp).sum())
    if den == 0.0:
        return _NAN
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
    kappa_lo: float = _NAN  # 95 % bootstrap bounds of κ over the pairs
    kappa_hi: float = _NAN
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
    lab = _floats(label)
    if not (len(s) == len(a) == len(lab)):
        raise WorkstationError("label events: sample, annotator and label columns differ in length")
    groups = _group_codes(s, a)
    seq = _event_order(len(s), order)
    first = _first_in(groups, seq)
    last = _first_in(groups, seq[::-1])
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
    b = kappa_bounds(fl, ll, None, weighted_categories)
    return SelfAgreement(
        n_pairs=len(pairs), percent=percent_agreement(fl, ll), kappa=kappa,
        sample=s[li], annotator=a[li], first=fl, latest=ll,
        kappa_lo=b["kappa_lo"], kappa_hi=b["kappa_hi"], small=b["small"],
    )


def kappa_bounds(x: np.ndarray, y: np.ndarray, unit: Sequence[Hashable] | np.ndarray | None = None,
                 weighted_categories: int | None = None, n_boot: int | None = None) -> dict[str, Any]:
    """The 95 % bootstrap bounds of κ (Cohen's, or quadratic weighted over 1..`weighted_categories`
    ratings) and of the percent agreement between two label lists, resampling ``unit`` (the items'
    prompts; the items themselves when None): ``kappa_lo``, ``kappa_hi``, ``percent_lo``,
    ``percent_hi``, ``units`` and ``small`` (fewer than 10 items or units). Pairs with a missing
    label are left out, as `cohen_kappa` and `quadratic_weighted_kappa` leave them out."""
    from .intervals import N_BOOT, kappa_estimate, ratio_estimates

    a, b = _floats(x), _floats(y)
    if weighted_categories is not None:
        a, b = a - 1.0, b - 1.0  # ratings 1..K as codes 0..K-1
    ok = np.isfinite(a) & np.isfinite(b) & (a >= 0) & (b >= 0)
    a, b = a[ok], b[ok]
    if weighted_categories is not None:
        k = int(weighted_categories)
    else:
        k = int(max(a.max(), b.max())) + 1 if len(a) else 1
    u = None if unit is None else np.asarray(unit)[ok]
    nb = N_BOOT if n_boot is None else n_boot
    e = kappa_estimate(a, b, u, categories=k, weighted=weighted_categories is not None, n_boot=nb)
    p = ratio_estimates(a == b, np.ones(len(a)), u, n_boot=nb)[0]
    return {"kappa_lo": e.lo, "kappa_hi": e.hi, "percent_lo": p.lo, "percent_hi": p.hi, "units": e.units,
            "small": e.small}


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
    lab = _floats(label)
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
            x = np.array([by_ann[n1][c] for c in common])
            y = np.array([by_ann[n2][c] for c in common])
            k = cohen_kappa(x, y) if weighted_categories is None else \
                quadratic_weighted_kappa(x, y, weighted_categories)
            units = None if unit_of is None else [unit_of(first_of[c]) for c in common]
            row = {"annotator_a": n1, "annotator_b": n2, "n": len(common),
                   "percent_agreement": percent_agreement(x, y), "kappa": k}
            row.update(kappa_bounds(x, y, units, weighted_categories, n_boot))
            out.append(row)
    return out
