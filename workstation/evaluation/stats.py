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
