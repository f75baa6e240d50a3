"""Intervals for every rate and agreement statistic the workstation reports (docs/statistics.md).

One place decides how uncertain a number is, so that the window and the report, and every
method, say the same thing:

* **Independent items** (prompts, counterfactual pairs, a unit with one item each): the
  **Wilson score interval** of a proportion (`wilson_interval`, `wilson_estimate`;
  `ratio_estimates` picks it when no unit holds more than one counted item).
* **Items that share a prompt** (the K seeds of a prompt, the images of a DyEval prompt, the
  image pairs of one MetaLogic pair, the two images of a ProtoBias triplet): a **cluster
  bootstrap** — resample the units (prompts, pairs, triplets) with replacement, keep all their
  items, recompute the statistic; ``N_BOOT`` resamples, seeded (`ratio_estimates`,
  `kappa_estimate`, `bootstrap_weights`). Every statistic here is a ratio Σnum / Σden over the
  items (a rate is Σsuccess / Σcounted), so a resample only needs the units' sums. For a
  **proportion** the interval is Wilson's score interval at the effective sample size
  n_eff = p(1 − p) / var, var the resamples' variance (so the clustering is in it), with z
  widened for few units to √(n/(n−1))·t₍ₙ₋₁₎: the percentile interval of a small proportion
  is skewed the wrong way and covered 92–94 % in the simulation benchmark, this one 94–96 %.
  For other statistics (means, margins, κ) the expanded percentile interval (`expanded_alpha`).
* A **proportion whose resamples all agree** (every unit at 0, or at 1, or a single unit) has
  the Wilson interval over the units instead (a zero-width interval would claim a certainty that
  a handful of prompts cannot give).
* **More than ``MAX_BOOT_UNITS`` units** (5,000 prompts: 20,000 images of 4 seeds): the bootstrap and its
  normal approximation agree there; the interval is Wilson's with the design-effect-adjusted
  sample size n_eff = p(1 − p) / var, var the cluster-robust (linearised) variance of the ratio,
  for proportions, and the ratio ± z·√var otherwise. It costs one pass over the items.
* An **undefined** statistic (a rate with nothing to count, κ with no pairs or no chance
  disagreement) is NaN with NaN bounds; `Estimate.text` shows it as "—" with its n.
* An estimate over **fewer than ``SMALL_N`` items** (or units) says so (`Estimate.small`).

`PROVENANCE` (via `provenance()`) is what a report records: level, resample count, seed, unit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Z95 = 1.959963984540054
LEVEL = 0.95
#: resamples of every bootstrap, in the window and in reports alike (so both show the same bounds)
N_BOOT = 2000
#: the seed of every bootstrap unless a caller gives another
SEED = 0
#: an estimate over fewer items (or units) than this is flagged
SMALL_N = 10
#: above this many units the linearised (design-effect) interval replaces the bootstrap (the two
#: agree there; 2,000 resamples of 5,000 units take a few hundred milliseconds)
MAX_BOOT_UNITS = 5_000
#: resamples drawn per block (part of the seeded stream: changing it changes the bounds)
CHUNK = 100

WILSON = "wilson"
CLUSTER_BOOTSTRAP = "cluster bootstrap"
BOOTSTRAP = "bootstrap"
WILSON_UNITS = "wilson over units"
LINEARISED = "linearised (design effect)"
CLUSTER_JACKKNIFE = "cluster jackknife"
JACKKNIFE = "jackknife"
NO_INTERVAL = "none"

METHOD_TEXT: dict[str, str] = {
    WILSON: "Wilson score interval (independent items)",
    CLUSTER_BOOTSTRAP: ("cluster bootstrap (units resampled with all their items): for a proportion Wilson's "
                        "interval at the bootstrap's effective sample size, otherwise the expanded percentile"),
    BOOTSTRAP: "bootstrap (items resampled): as the cluster bootstrap with every item its own unit",
    WILSON_UNITS: "Wilson score interval over the units (every resample gave the same value)",
    LINEARISED: "Wilson with the design-effect sample size (cluster-robust variance; many units)",
    CLUSTER_JACKKNIFE: "cluster jackknife (leave one unit out; the estimate ± t·√var): many-rater agreement over "
                       "many units",
    JACKKNIFE: "jackknife (leave one item out): as the cluster jackknife with every item its own unit",
    NO_INTERVAL: "no interval",
}


def provenance(unit: str, *, n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> dict[str, Any]:
    """What a report records about its intervals: level, resamples, seed and the resampled unit."""
    return {"level": level, "bootstrap_resamples": int(n_boot), "bootstrap_seed": int(seed),
            "bootstrap_unit": unit, "independent_items": "Wilson score interval",
            "proportions": "Wilson's interval at the bootstrap's effective sample size p(1-p)/var, z widened to "
                           "sqrt(n/(n-1)) t(n-1) for n units",
            "other_statistics": "expanded percentile interval (Hesterberg 2015)",
            "boundary": "a proportion whose resamples all agree (all 0, all 1, one unit): Wilson over the units",
            "many_units": f"more than {MAX_BOOT_UNITS:,} units: Wilson with the design-effect sample size "
                          "(cluster-robust variance)",
            "small": f"an estimate over fewer than {SMALL_N} items or units is flagged"}


# =============================================================================================
# The estimate
# =============================================================================================
@dataclass(frozen=True)
class Estimate:
    """A statistic with its interval: ``value`` (NaN when undefined), ``lo`` / ``hi`` (NaN
    without an interval), ``n`` the items it is computed over (a rate's denominator), ``units``
    the independent units behind them (prompts, pairs; ``n`` for independent items), ``method``
    one of the method names above."""

    value: float
    lo: float = float("nan")
    hi: float = float("nan")
    n: int = 0
    units: int = 0
    method: str = NO_INTERVAL
    level: float = LEVEL

    @property
    def defined(self) -> bool:
        return math.isfinite(self.value)

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    @property
    def small(self) -> bool:
        """Fewer than ``SMALL_N`` items or units: the interval is wide and its level approximate."""
        return min(self.n, self.units) < SMALL_N

    def small_note(self, item: str = "items", unit: str = "prompts") -> str:
        """"fewer than 10 items" / "fewer than 10 prompts", or "" when there are enough."""
        if self.n < SMALL_N:
            return f"fewer than {SMALL_N} {item}"
        if self.units < SMALL_N:
            return f"fewer than {SMALL_N} {unit}"
        return ""

    def text(self, kind: str = "f", digits: int = 4, item: str = "items", unit: str = "prompts") -> str:
        """For people: "0.3638 [0.3311, 0.3980]", "36.4% [33.1, 39.8]"; "— (n 0)" when undefined;
        "(n 4: fewer than 10 items)" appended for small n."""
        if not self.defined:
            return f"— (n {self.n})"
        out = fmt_value(self.value, kind, digits) + (" " + self.bounds_text(kind, digits) if self.has_interval else "")
        note = self.small_note(item, unit)
        return out + (f" (n {self.n}: {note})" if note else "")

    def bounds_text(self, kind: str = "f", digits: int = 4) -> str:
        if not self.has_interval:
            return ""
        if kind == "%":
            return f"[{100 * self.lo:.{max(digits - 3, 0)}f}, {100 * self.hi:.{max(digits - 3, 0)}f}]"
        return f"[{self.lo:.{digits}f}, {self.hi:.{digits}f}]"

    def columns(self, name: str) -> dict[str, Any]:
        """``{name: value, name_lo, name_hi}`` for a table row."""
        return {name: self.value, f"{name}_lo": self.lo, f"{name}_hi": self.hi}

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "n": self.n, "units": self.units,
                "method": self.method, "level": self.level, "small": self.small}


def fmt_value(x: float, kind: str = "f", digits: int = 4) -> str:
    if not math.isfinite(x):
        return "—"
    if kind == "%":
        return f"{100 * x:.{max(digits - 3, 0)}f}%"
    return f"{x:.{digits}f}"


UNDEFINED = Estimate(float("nan"))


# =============================================================================================
# Wilson
# =============================================================================================
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
    lo = np.where(bad, np.nan, lo)
    hi = np.where(bad, np.nan, hi)
    return lo, hi


def _z(level: float) -> float:
    if level == LEVEL:
        return Z95
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson_estimate(successes: int, n: int, level: float = LEVEL) -> Estimate:
    """A proportion of ``n`` independent items with its Wilson interval (undefined for n = 0)."""
    s, m = int(successes), int(n)
    if m <= 0:
        return Estimate(float("nan"), n=0, units=0, method=NO_INTERVAL, level=level)
    lo, hi = wilson_interval(s, m, _z(level))
    return Estimate(s / m, lo, hi, n=m, units=m, method=WILSON, level=level)


# =============================================================================================
# Resampling units
# =============================================================================================
def unit_codes(unit: Sequence[Any] | np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """(code 0..C-1 of every item's unit, C); every item its own unit when ``unit`` is None."""
    if unit is None:
        return np.arange(n, dtype=np.int64), n
    u = np.asarray(unit)
    if len(u) != n:
        raise ValueError(f"{len(u)} unit ids for {n} items")
    if n == 0:
        return np.zeros(0, np.int64), 0
    if u.dtype.kind in "iub":
        _, inv = np.unique(u, return_inverse=True)
    else:
        _, inv = np.unique(u.astype(str), return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    return inv, int(inv.max()) + 1


def resample_counts(n_units: int, n_boot: int = N_BOOT, seed: int = SEED,
                    chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Blocks of bootstrap resamples of ``n_units`` units as count matrices (b × n_units, float64:
    how often each unit is drawn), ``n_boot`` rows in all, from one seeded stream."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        idx = rng.integers(0, n_units, size=(b, n_units))
        idx += (np.arange(b) * n_units)[:, None]
        yield np.bincount(idx.ravel(), minlength=b * n_units).reshape(b, n_units).astype(np.float64)
        done += b


def bootstrap_weights(unit: Sequence[Any] | np.ndarray | None, n: int, n_boot: int = N_BOOT,
                      seed: int = SEED) -> Iterator[np.ndarray]:
    """Blocks of item weights (b × n): each item weighted by how often its unit was drawn."""
    codes, c = unit_codes(unit, n)
    if c == 0:
        return
    for counts in resample_counts(c, n_boot, seed):
        yield counts[:, codes]


def _unit_sums(x: np.ndarray, codes: np.ndarray, c: int) -> np.ndarray:
    """(c, k) sums of the rows of ``x`` (n, k) per unit code."""
    out = np.empty((c, x.shape[1]))
    for j in range(x.shape[1]):
        out[:, j] = np.bincount(codes, weights=x[:, j], minlength=c)
    return out


# =============================================================================================
# The normal and Student's t distributions (one quantile function for every interval)
# =============================================================================================
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
      -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
      -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
      4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)


def norm_cdf(x: float) -> float:
    """Φ(x), the standard normal distribution function."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def norm_ppf(p: float) -> float:
    """Φ⁻¹(p) for 0 < p < 1: Acklam's rational approximation refined by one Halley step."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"norm_ppf: p must be in (0, 1), got {p!r}")
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2.0 * math.log(p))
        x = ((((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5])
             / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0))
    elif p > 1.0 - lo:
        q = math.sqrt(-2.0 * math.log1p(-p))
        x = -((((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5])
              / ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0))
    else:
        q = p - 0.5
        r = q * q
        x = ((((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
             / (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0))
    for _ in range(2):  # Halley's method: cubic convergence from ~1e-9
        e = norm_cdf(x) - p
        u = e * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
        x = x - u / (1.0 + 0.5 * x * u)
    return x


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float, y: float | None = None) -> float:
    """The regularized incomplete beta function I_x(a, b); ``y`` = 1 − x where the caller knows it
    more exactly than 1 − x is computed."""
    y = 1.0 - x if y is None else y
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def _t_upper(t: float, df: float) -> float:
    """P(T > t) for t ≥ 0: ½ · I_x(df / 2, ½) with x = df / (df + t²) (and 1 − x = t² / (df + t²)
    as such, exact for small t)."""
    s = df + t * t
    return 0.5 * _betainc(df / 2.0, 0.5, df / s, t * t / s)


@functools.lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """Student's t quantile for any positive degrees of freedom, whole or not (Satterthwaite's
    effective df is rarely whole), exact to about 1e-12 relative: the tail's regularized
    incomplete beta function inverted by bisection, then polished by Newton's steps on the t
    density; from 10⁴ degrees of freedom the expansion in 1/df (no scipy: opening the window,
    whose intervals ask for it, pays no import; the tests hold it to ``scipy.special.stdtrit``).
    The normal quantile for infinite df."""
    if not math.isfinite(df) or df > 1e7:
        return norm_ppf(p)
    if df <= 0:
        raise ValueError(f"t_ppf: degrees of freedom must be > 0, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_ppf: p must be in (0, 1), got {p!r}")
    if p == 0.5:
        return 0.0
    if df >= 1e4:  # the expansion in 1/df (Abramowitz and Stegun 26.7.5): its next term is below 1e-15
        z = norm_ppf(p)
        z2 = z * z
        g1 = (z2 + 1.0) * z / 4.0
        g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
        g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
        g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
        return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4
    tail = 1.0 - p if p > 0.5 else p  # P(T > t) wanted, t > 0
    # I_x(df/2, 1/2) = 2·tail with x = df / (df + t²): x rises as t falls; bisect log x on
    # (log 1e-300, 0), then Newton's steps below polish t
    target = 2.0 * tail
    lo, hi = math.log(1e-300), 0.0
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if _betainc(df / 2.0, 0.5, math.exp(mid), -math.expm1(mid)) < target:
            lo = mid
        else:
            hi = mid
    u = 0.5 * (lo + hi)
    x, y = math.exp(u), -math.expm1(u)
    t = math.sqrt(df * y / x) if x > 0 else math.inf
    log_c = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    for _ in range(8):  # Newton on P(T > t) = tail, the density as the derivative
        if not math.isfinite(t) or t <= 0:
            break
        dens = math.exp(log_c - (df + 1.0) / 2.0 * math.log1p(t * t / df))
        if dens <= 0:
            break
        step = (_t_upper(t, df) - tail) / dens
        if not math.isfinite(step) or abs(step) > 0.5 * t:
            break
        t += step
        if abs(step) <= 1e-16 * t:
            break
    return t if p > 0.5 else -t


def expanded_alpha(level: float, units: int) -> float:
    """The tail probability of the expanded percentile interval (Hesterberg 2015): the percentile
    bootstrap is too narrow by about √((n−1)/n) and the normal-for-t factor for n units, so its
    tails are taken at Φ(−√(n/(n−1)) · t_{n−1}) instead of (1 − level) / 2. Tends to
    (1 − level) / 2 as n grows; for n < 3 the plain tail."""
    a = (1.0 - level) / 2.0
    if units < 3:
        return a
    from statistics import NormalDist

    t = t_ppf(1.0 - a, units - 1)
    return float(NormalDist().cdf(-math.sqrt(units / (units - 1)) * t))


def _z_expanded(level: float, units: int) -> float:
    """z widened for few units: √(n/(n−1)) · t₍ₙ₋₁₎ (the expanded percentile's factor); z for n < 3."""
    a = (1.0 - level) / 2.0
    if units < 3:
        return _z(level)
    return math.sqrt(units / (units - 1)) * t_ppf(1.0 - a, units - 1)


def _wilson_from_resamples(value: float, resampled: np.ndarray, units: int, level: float, lo: float,
                           hi: float) -> tuple[float, float]:
    """The interval of a proportion from its bootstrap: Wilson's score interval at the effective
    sample size n_eff = p(1 − p) / var (var: the resamples' variance, which carries the
    clustering), z widened for few units (`_z_expanded`). ``lo`` / ``hi`` (the percentile bounds)
    are kept when the resamples have no spread (the caller's rule for that case applies)."""
    r = resampled[np.isfinite(resampled)]
    if not math.isfinite(value) or len(r) < 2:
        return lo, hi
    var = float(np.var(r, ddof=1))
    if not var > 0.0 or value in (0.0, 1.0):
        return lo, hi
    n_eff = value * (1.0 - value) / var
    return wilson_interval(value * n_eff, n_eff, _z_expanded(level, units))


def _percentile(values: np.ndarray, level: float, units: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise percentile bounds over the finite entries (NaN for a column without any); with
    ``units`` the expanded percentile interval's tails (`expanded_alpha`)."""
    a = expanded_alpha(level, units) if units else (1.0 - level) / 2.0
    k = values.shape[1] if values.ndim == 2 else 1
    v = values.reshape(values.shape[0], k)
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    ok = np.isfinite(v).any(axis=0)
    if ok.any():
        q = np.nanquantile(v[:, ok], [a, 1.0 - a], axis=0)
        lo[ok], hi[ok] = q[0], q[1]
    return lo, hi


# =============================================================================================
# Ratios Σnum / Σden (rates, conditional rates, means)
# =============================================================================================
def bootstrap_ratio_intervals(num: np.ndarray, den: np.ndarray, *, n_boot: int = 1000, level: float = 0.95,
                              seed: int = 0, chunk: int = CHUNK,
                              unit: Sequence[Any] | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals of Σ num[:, j] / Σ den[:, j] for every column j at once.

    Rows are items; ``unit`` (one id per row) makes it a cluster bootstrap: the units are resampled
    with replacement and keep all their rows (without it every row is its own unit). The same
    resamples serve every column, so columns stay paired. With ``den`` all ones a column's
    statistic is the mean of ``num``, with ``den`` a 0/1 mask the mean over the masked rows (a
    conditional mean, whose interval then also reflects how many rows the mask takes). A
    resample whose denominator sums to 0 is left out; a column with no usable resample, or empty
    input, or ``n_boot`` 0, gives (nan, nan). Seeded, so a report is reproducible.
    """
    x, d = _columns(num, den, "bootstrap_ratio_intervals")
    n, k = x.shape
    if n == 0 or k == 0 or n_boot <= 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    if unit is not None:
        codes, c = unit_codes(unit, n)
        x, d = _unit_sums(x, codes, c), _unit_sums(d, codes, c)
    ratios = np.empty((n_boot, k))
    done = 0
    for counts in resample_counts(len(x), n_boot, seed, chunk):
        s_num, s_den = counts @ x, counts @ d
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios[done:done + len(counts)] = np.where(s_den != 0, s_num / np.where(s_den != 0, s_den, 1.0), np.nan)
        done += len(counts)
    return _percentile(ratios, level)


def _columns(num: Any, den: Any, who: str) -> tuple[np.ndarray, np.ndarray]:
    """``num`` and ``den`` as (n, k) float arrays of the same shape (a 1-d input is one column)."""
    x = np.asarray(num, np.float64)
    d = np.asarray(den, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if d.ndim == 1:
        d = d[:, None]
    if x.shape != d.shape:
        raise ValueError(f"{who}: num {x.shape} and den {d.shape} differ")
    return x, d


def _linearised(xs: np.ndarray, ds: np.ndarray, value: float, proportion: bool, level: float
                ) -> tuple[float, float, str]:
    """Interval of Σx / Σd from the units' sums by the cluster-robust (linearised) variance."""
    c = len(xs)
    tot = float(ds.sum())
    resid = xs - value * ds
    var = c / max(c - 1, 1) * float(resid @ resid) / (tot * tot)
    z = _z(level)
    if proportion:
        if var <= 0.0:
            lo, hi = wilson_interval(value * c, c, z)
            return lo, hi, WILSON_UNITS
        n_eff = value * (1.0 - value) / var
        lo, hi = wilson_interval(value * n_eff, n_eff, z)
        return lo, hi, LINEARISED
    half = z * math.sqrt(max(var, 0.0))
    return value - half, value + half, LINEARISED


def ratio_estimates(num: np.ndarray, den: np.ndarray, unit: Sequence[Any] | np.ndarray | None = None, *,
                    proportion: bool | Sequence[bool] = True, n_boot: int = N_BOOT, seed: int = SEED,
                    level: float = LEVEL) -> list[Estimate]:
    """Σ num[:, j] / Σ den[:, j] for every column j, each with its interval (module doc).

    ``num`` / ``den``: (n,) or (n, k) per item (a rate: num 0/1 success, den 0/1 counted);
    ``unit``: the unit of every item (a prompt id) for a cluster bootstrap, None for independent
    items; ``proportion``: whether each column is a proportion in [0, 1] (its bounds then use the
    Wilson rules at 0 / 1 and for many units). ``n`` of an estimate is the number of items its
    denominator counts (Σ of a 0/1 ``den``), ``units`` the units among them. ``n_boot`` 0: no
    intervals. The columns share one set of resamples.
    """
    x, d = _columns(num, den, "ratio_estimates")
    n, k = x.shape
    props = [bool(proportion)] * k if isinstance(proportion, (bool, np.bool_)) else [bool(p) for p in proportion]
    if len(props) != k:
        raise ValueError(f"ratio_estimates: {len(props)} proportion flags for {k} columns")
    codes, c = unit_codes(unit, n)
    xs, ds = _unit_sums(x, codes, c), _unit_sums(d, codes, c)
    tot_x, tot_d = xs.sum(axis=0), ds.sum(axis=0)
    items = np.count_nonzero(d != 0, axis=0)
    units_in = np.count_nonzero(ds != 0, axis=0)
    clustered = unit is not None and c < n
    boot = CLUSTER_BOOTSTRAP if clustered else BOOTSTRAP
    values = np.where(tot_d != 0, tot_x / np.where(tot_d != 0, tot_d, 1.0), np.nan)
    lo = np.full(k, np.nan)
    hi = np.full(k, np.nan)
    method = [NO_INTERVAL] * k
    big = c > MAX_BOOT_UNITS
    if n_boot > 0 and c and not big:
        ratios = np.empty((n_boot, k))
        done = 0
        for counts in resample_counts(c, n_boot, seed):
            s_num, s_den = counts @ xs, counts @ ds
            with np.errstate(invalid="ignore", divide="ignore"):
                ratios[done:done + len(counts)] = np.where(s_den != 0, s_num / np.where(s_den != 0, s_den, 1.0),
                                                           np.nan)
            done += len(counts)
        for j in range(k):  # the expanded tails by the units the column counts
            lo_j, hi_j = _percentile(ratios[:, [j]], level, int(units_in[j]))
            lo[j], hi[j] = lo_j[0], hi_j[0]
        method = [boot] * k
        for j in range(k):
            if props[j]:  # a proportion: Wilson's form with the bootstrap's spread (module doc)
                lo[j], hi[j] = _wilson_from_resamples(float(values[j]), ratios[:, j], int(units_in[j]), level,
                                                      float(lo[j]), float(hi[j]))
    binary = ((x == 0) | (x == 1)) & ((d == 0) | (d == 1)) if n else np.ones((0, k), bool)
    out = []
    for j in range(k):
        v = float(values[j])
        m_j, l_j, h_j = method[j], float(lo[j]), float(hi[j])
        if not math.isfinite(v) or n_boot <= 0:
            l_j, h_j, m_j = float("nan"), float("nan"), NO_INTERVAL
        elif props[j] and units_in[j] == items[j] and bool(binary[:, j].all()):
            # every unit holds one counted item: independent items, Wilson's interval
            l_j, h_j = wilson_interval(float(tot_x[j]), float(tot_d[j]), _z(level))
            m_j = WILSON
        elif big:
            l_j, h_j, m_j = _linearised(xs[:, j], ds[:, j], v, props[j], level)
        elif props[j] and l_j == h_j:
            l_j, h_j = wilson_interval(v * units_in[j], units_in[j], _z(level))
            m_j = WILSON_UNITS
        if math.isfinite(l_j) and math.isfinite(h_j):  # bounds bracket the estimate (quantile rounding)
            l_j, h_j = min(l_j, v), max(h_j, v)
        out.append(Estimate(v, l_j, h_j, n=int(items[j]), units=int(units_in[j]), method=m_j, level=level))
    return out


def rate_estimate(success: np.ndarray, counted: np.ndarray | None = None,
                  unit: Sequence[Any] | np.ndarray | None = None, **kw: Any) -> Estimate:
    """One rate: Σsuccess / Σcounted over items (``counted`` all ones by default); Wilson for
    independent items (``unit`` None), the cluster bootstrap otherwise."""
    s = np.asarray(success, np.float64).reshape(-1)
    c = np.ones(len(s)) if counted is None else np.asarray(counted, np.float64).reshape(-1)
    if unit is None:
        level = kw.get("level", LEVEL)
        n = int(c.sum())
        if kw.get("n_boot", N_BOOT) <= 0:
            return Estimate(float(s.sum()) / n if n else float("nan"), n=n, units=n, level=level)
        return wilson_estimate(int(round(float((s * (c != 0)).sum()))), n, level)
    return ratio_estimates(s * (c != 0), c, unit, **kw)[0]


# =============================================================================================
# Agreement: Cohen's κ and the quadratic weighted κ
# =============================================================================================
def kappa_from_tables(tables: np.ndarray, weighted: bool) -> np.ndarray:
    """κ (or quadratic weighted κ) of every K × K table of counts in ``tables`` (…, K, K); NaN
    for a table of fewer than two items (one item's κ is 0 or undefined by chance alone: the same
    answer, or two) or one without chance disagreement."""
    t = np.asarray(tables, np.float64)
    k = t.shape[-1]
    n = t.sum(axis=(-2, -1))
    i = np.arange(k)
    w = ((i[:, None] - i[None, :]) ** 2 / max(k - 1, 1) ** 2) if weighted else (i[:, None] != i[None, :]).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        exp = t.sum(axis=-1)[..., :, None] * t.sum(axis=-2)[..., None, :] / n[..., None, None]
        obs_d = (w * t).sum(axis=(-2, -1))
        exp_d = (w * exp).sum(axis=(-2, -1))
        kappa = np.where((n >= 2) & (exp_d > 0), 1.0 - obs_d / np.where(exp_d > 0, exp_d, 1.0), np.nan)
    return kappa


def kappa_estimate(a: np.ndarray, b: np.ndarray, unit: Sequence[Any] | np.ndarray | None = None, *,
                   categories: int, weighted: bool = False, n_boot: int = N_BOOT, seed: int = SEED,
                   level: float = LEVEL) -> Estimate:
    """κ between two lists of codes 0..categories-1 (pairs with a code outside that range left
    out) with a bootstrap interval over the units (the items themselves without ``unit``).

    Resamples whose κ is undefined (no chance disagreement) are left out of the percentiles."""
    x = np.asarray(a, np.float64).reshape(-1)
    y = np.asarray(b, np.float64).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"the two label lists differ in length ({len(x)} vs {len(y)})")
    ok = np.isfinite(x) & np.isfinite(y) & (x >= 0) & (y >= 0) & (x < categories) & (y < categories)
    u = None if unit is None else np.asarray(unit)[ok]
    xi, yi = x[ok].astype(np.int64), y[ok].astype(np.int64)
    n = len(xi)
    codes, c = unit_codes(u, n)
    kk = categories * categories
    cells = np.zeros((c, kk))
    if n:
        np.add.at(cells, (codes, xi * categories + yi), 1.0)
    value = float(kappa_from_tables(cells.sum(axis=0).reshape(categories, categories), weighted))
    method = CLUSTER_BOOTSTRAP if (unit is not None and c < n) else BOOTSTRAP
    if not math.isfinite(value) or n_boot <= 0 or c == 0:
        return Estimate(value, n=n, units=c, method=NO_INTERVAL, level=level)
    ks = np.empty(n_boot)
    done = 0
    for counts in resample_counts(c, n_boot, seed):
        tabs = (counts @ cells).reshape(len(counts), categories, categories)
        ks[done:done + len(counts)] = kappa_from_tables(tabs, weighted)
        done += len(counts)
    lo, hi = _percentile(ks[:, None], level, c)
    l_, h_ = float(lo[0]), float(hi[0])
    if math.isfinite(l_):
        l_, h_ = min(l_, value), max(h_, value)
    return Estimate(value, l_, h_, n=n, units=c, method=method, level=level)


# =============================================================================================
# Means (the student scores of MetaLogic)
# =============================================================================================
def bootstrap_interval(values: np.ndarray, stat: Callable[[np.ndarray], float] | None = None, *,
                       n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` (the mean by default) over ``values``.

    Seeded, so a report is reproducible; (nan, nan) for empty input or ``n_boot`` 0. With the
    mean, resamples are drawn as one matrix (fast); another ``stat`` is called once per resample."""
    x = np.asarray(values, np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0 or n_boot <= 0:
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


__all__ = [
    "wilson_from_resamples", "percentile_bounds", "norm_cdf", "norm_ppf", "t_ppf",
    "Z95", "LEVEL", "N_BOOT", "SEED", "SMALL_N", "MAX_BOOT_UNITS", "Estimate", "UNDEFINED", "fmt_value",
    "wilson_interval", "wilson_arrays", "wilson_estimate", "unit_codes", "resample_counts", "bootstrap_weights",
    "bootstrap_ratio_intervals", "ratio_estimates", "rate_estimate", "kappa_from_tables", "kappa_estimate",
    "bootstrap_interval", "provenance", "METHOD_TEXT", "WILSON", "CLUSTER_BOOTSTRAP", "BOOTSTRAP",
    "WILSON_UNITS", "LINEARISED", "CLUSTER_JACKKNIFE", "JACKKNIFE", "NO_INTERVAL",
]


wilson_from_resamples = _wilson_from_resamples
percentile_bounds = _percentile
