"""Intervals for rates and means: Wilson score intervals and seeded percentile bootstraps."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; (nan, nan) when n == 0."""
    if n <= 0:
        return float("nan"), float("nan")
    p = successes / n
    z2 = z * z
    den = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / den
    half = z * math.sqrt(max(p * (1 - p) / n + z2 / (4 * n * n), 0.0)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_arrays(successes: np.ndarray, n: np.ndarray, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """`wilson_interval` over arrays (NaN where n == 0)."""
    s = np.asarray(successes, np.float64)
    m = np.asarray(n, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = s / m
        z2 = z * z
        den = 1.0 + z2 / m
        centre = (p + z2 / (2 * m)) / den
        half = z * np.sqrt(np.maximum(p * (1 - p) / m + z2 / (4 * m * m), 0.0)) / den
        lo = np.clip(centre - half, 0.0, 1.0)
        hi = np.clip(centre + half, 0.0, 1.0)
    bad = m <= 0
    lo[bad] = np.nan
    hi[bad] = np.nan
    return lo, hi


def bootstrap_interval(values: np.ndarray, stat: Callable[[np.ndarray], float] | None = None, *,
                       n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` (the mean by default) over ``values``.

    Seeded, so a report is reproducible; (nan, nan) for empty input. With the mean, resamples are
    drawn as one matrix (fast); another ``stat`` is called once per resample."""
    x = np.asarray(values, np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    if stat is None:
        boots = x[idx].mean(axis=1)
    else:
        boots = np.array([stat(x[i]) for i in idx], np.float64)
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(boots, [a, 1.0 - a])
    return float(lo), float(hi)


def bootstrap_ratio_intervals(num: np.ndarray, den: np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
                              seed: int = 0, chunk: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals of Σ num[:, j] / Σ den[:, j] for every column j at once.

    Rows are the units resampled with replacement (the same resamples for every column, so
    columns stay paired); with ``den`` all ones a column's statistic is the mean of ``num``, with
    ``den`` a 0/1 mask it is the mean over the masked rows (a conditional mean, whose interval
    then also reflects how many rows the mask takes). Resamples are made as count vectors, in
    chunks of ``chunk`` rows, and applied with one matrix product: fast for many columns and
    large n. A resample whose denominator sums to 0 is left out; a column with no usable
    resample, or empty input, gives (nan, nan). Seeded, so a report is reproducible.
    """
    x = np.asarray(num, np.float64)
    d = np.asarray(den, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if d.ndim == 1:
        d = d[:, None]
    if x.shape != d.shape:
        raise ValueError(f"bootstrap_ratio_intervals: num {x.shape} and den {d.shape} differ")
    n, k = x.shape
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    if n == 0 or k == 0 or n_boot <= 0:
        return lo, hi
    rng = np.random.default_rng(seed)
    ratios = np.empty((n_boot, k))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        idx = rng.integers(0, n, size=(b, n))
        idx += (np.arange(b) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        s_num, s_den = counts @ x, counts @ d
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios[done:done + b] = np.where(s_den != 0, s_num / np.where(s_den != 0, s_den, 1.0), np.nan)
        done += b
    usable = np.isfinite(ratios).any(axis=0)
    if usable.any():
        a = (1.0 - level) / 2.0
        q = np.nanquantile(ratios[:, usable], [a, 1.0 - a], axis=0)
        lo[usable], hi[usable] = q[0], q[1]
    return lo, hi
