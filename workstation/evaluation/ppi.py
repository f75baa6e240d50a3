"""Estimates of a rate from human labels and an automated outcome: prediction-powered inference,
its design-weighted (active) form, and the labels-only estimates they are compared with.

Notation: ``z`` is the quantity's value per item as a human judges it (0 or 1: "a human labels
this image PASS"), ``f`` the automated outcome's prediction of it (a number in [0, 1]) known for
every item, ``n`` labelled items out of ``N``.

* `ppi_mean_interval` — prediction-powered inference for a mean (Angelopoulos et al., Science
  2023; PPI++ power tuning, Angelopoulos, Duchi and Zrnic 2023): the labelled and the unlabelled
  items are independent draws from one distribution and the target is that distribution's mean.
  It is, number for number, ``ppi_py.ppi_mean_ci`` (the reference implementation).
* `ppi_mean_interval_clustered` — the same estimate with cluster-robust variances: the items of
  one prompt (its seeds) are correlated, the prompts independent.
* `design_estimate` — the estimate an audit plan reports: the items in scope are a finite
  population (these images of this run), labels come from a stratified random sample of
  sampling units (single items, or whole prompts with all their items), each unit of stratum h
  labelled with probability π = n_h / N_h. It is the active-inference estimate
  θ̂ = (1/N) Σ_i [f_i + (ξ_i / π_i)(z_i − f_i)] (Zrnic and Candès 2024) with the stratum's mean
  prediction as f, which is the stratified estimate Σ_h (N_h/N) z̄_h: the automated outcome fixes
  the strata and their sizes, the labels each stratum's rate (``lam=1`` also corrects an
  item-level prediction inside strata: the difference estimator of survey sampling). Its
  variance is the stratified design's, with the finite-population correction, computed on unit
  totals — so a sample of whole prompts is not treated as independent images.
* `wilson_estimate`, `cluster_bootstrap_estimate` — labels alone, for comparison: Wilson treats
  the labelled items as independent; the cluster bootstrap resamples prompts.

Every estimate is an `Estimate`: the value, the interval, the method's name, what it assumes and
the labels it used. Numpy only: Student's t quantile (`t_ppf`, which `intervals` holds for every
interval of the project) is exact to about 1e-12 and `norm_ppf` to ~1e-15, without scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import WorkstationError
from .intervals import norm_cdf, norm_ppf, t_ppf

__all__ = ["Estimate", "norm_cdf", "norm_ppf", "t_ppf", "z_for", "ppi_mean_interval", "ppi_mean_estimate",
           "ppi_mean_interval_clustered", "design_estimate", "wilson_estimate", "cluster_bootstrap_estimate",
           "ASSUMES"]

#: what each estimate assumes, in the user's terms (the panel and docs/audit-plans.md say the same)
ASSUMES: dict[str, str] = {
    "design": ("the labelled units of each stratum were drawn at random by the plan (probability n_h/N_h); "
               "the automated outcome forms the strata, so their sizes are known exactly; the target is "
               "these items, a finite population"),
    "design_ppi": ("as the stratified estimate, and inside each stratum the automated outcome's prediction is "
                   "corrected item by item by the labels"),
    "ppi": ("labelled and unlabelled items are independent draws from one distribution (no two share "
            "a prompt); the target is that distribution's mean"),
    "ppi_clustered": ("prompts are independent draws, the items of one prompt may be correlated; labelled "
                      "and unlabelled prompts come from one distribution"),
    "wilson": "the labelled items are independent and drawn uniformly (seeds of one prompt are not)",
    "cluster_bootstrap": "the labelled prompts were drawn uniformly and independently; every item of a "
                         "drawn prompt is labelled",
}


# ---------------------------------------------------------------------------------------------
# The normal and Student's t distributions (`norm_cdf`, `norm_ppf`, `t_ppf`: from `intervals`)
# ---------------------------------------------------------------------------------------------


def z_for(confidence: float) -> float:
    """The two-sided normal critical value of a confidence level (0.95 → 1.959964)."""
    if not 0.0 < confidence < 1.0:
        raise WorkstationError(f"a confidence level must be between 0 and 1, got {confidence!r}")
    return norm_ppf(1.0 - (1.0 - confidence) / 2.0)


# ---------------------------------------------------------------------------------------------
# The estimate record
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """One estimate of a rate with its interval, how it was made and what it used.

    ``half_width`` is the quantile times the standard error (z; t for the design estimate)
    before the interval is clipped to [0, 1] — what an audit goal is compared with; ``labels``
    counts labelled items, ``units`` labelled sampling units (items or prompts), ``population``
    the items the rate is over. NaN value / bounds: not estimable yet (``note`` says why)."""

    key: str
    title: str
    value: float
    low: float
    high: float
    half_width: float
    confidence: float
    labels: int
    units: int
    population: int
    assumes: str = ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def defined(self) -> bool:
        return bool(np.isfinite(self.value) and np.isfinite(self.half_width))

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "value": self.value, "low": self.low, "high": self.high,
                "half_width": self.half_width, "confidence": self.confidence, "labels": self.labels,
                "units": self.units, "population": self.population, "assumes": self.assumes, "note": self.note,
                **{k: v for k, v in self.extra.items()}}

    def text(self, digits: int = 1) -> str:
        """``"41.2 % [37.9, 44.5] (95 %)"`` or ``"—"``."""
        if not self.defined:
            return "—"
        pct = 100.0
        return (f"{pct * self.value:.{digits}f} % [{pct * self.low:.{digits}f}, {pct * self.high:.{digits}f}] "
                f"({100 * self.confidence:g} %)")


def _undefined(key: str, title: str, confidence: float, labels: int, units: int, population: int,
               note: str, assumes: str = "") -> Estimate:
    nan = float("nan")
    return Estimate(key, title, nan, nan, nan, nan, confidence, labels, units, population,
                    assumes or ASSUMES.get(key, ""), note)


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


# ---------------------------------------------------------------------------------------------
# Prediction-powered inference (independent items): the reference's numbers
# ---------------------------------------------------------------------------------------------


def _as_1d(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x, np.float64).reshape(-1)
    if not np.isfinite(a).all():
        raise WorkstationError(f"{what} holds a value that is not a finite number")
    return a


def _ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unl: np.ndarray) -> float:
    """PPI++'s power-tuning λ for a mean, clipped to [0, 1] (the reference's `_calc_lam_glm`)."""
    n, big_n = len(y), len(yhat_unl)
    gc = y - y.mean()
    hc = yhat - yhat.mean()
    cov = (1.0 / n) * 2.0 * float(gc @ hc)
    both = np.concatenate([yhat, yhat_unl])
    var = float(np.var(both, ddof=1)) if len(both) > 1 else 0.0
    den = 2.0 * (1.0 + n / big_n) * var
    if den == 0.0:
        return 0.0 if cov == 0.0 else (1.0 if cov > 0 else 0.0)
    return float(np.clip(cov / den, 0.0, 1.0))


def ppi_mean_interval(y: Any, yhat: Any, yhat_unlabeled: Any, *, alpha: float = 0.05,
                      lam: float | None = None) -> tuple[float, float, float, float]:
    """(estimate, low, high, λ) of the prediction-powered interval for a mean.

    ``y`` labels and ``yhat`` predictions of the n labelled items, ``yhat_unlabeled``
    predictions of the N unlabelled ones; ``lam=None`` tunes λ (PPI++), ``lam=1`` is plain PPI,
    ``lam=0`` the classical interval. Equal to ``ppi_py.ppi_mean_ci(y, yhat, yhat_unlabeled,
    alpha=alpha, lam=lam)`` (which returns the two bounds)."""
    y_ = _as_1d(y, "labels")
    h_ = _as_1d(yhat, "predictions of the labelled items")
    u_ = _as_1d(yhat_unlabeled, "predictions of the unlabelled items")
    if len(y_) != len(h_):
        raise WorkstationError(f"{len(y_)} labels but {len(h_)} predictions of the labelled items")
    if len(y_) < 1 or len(u_) < 1:
        raise WorkstationError("prediction-powered inference needs at least one labelled and one unlabelled item")
    if not 0.0 < alpha < 1.0:
        raise WorkstationError(f"alpha must be between 0 and 1, got {alpha!r}")
    n, big_n = len(y_), len(u_)
    lam_ = _ppi_lambda(y_, h_, u_) if lam is None else float(lam)
    est = float((lam_ * u_).mean() + (y_ - lam_ * h_).mean())
    imputed = float((lam_ * u_).std()) / math.sqrt(big_n)
    rectifier = float((y_ - lam_ * h_).std()) / math.sqrt(n)
    se = math.sqrt(imputed ** 2 + rectifier ** 2)
    z = norm_ppf(1.0 - alpha / 2.0)
    return est, est - z * se, est + z * se, lam_


def ppi_mean_estimate(y: Any, yhat: Any, yhat_unlabeled: Any, *, confidence: float = 0.95,
                      lam: float | None = None, title: str = "prediction-powered (PPI++)") -> Estimate:
    """`ppi_mean_interval` as an `Estimate` (interval clipped to [0, 1])."""
    est, lo, hi, lam_ = ppi_mean_interval(y, yhat, yhat_unlabeled, alpha=1.0 - confidence, lam=lam)
    n, big_n = len(np.asarray(y).reshape(-1)), len(np.asarray(yhat_unlabeled).reshape(-1))
    return Estimate("ppi", title, est, _clip01(lo), _clip01(hi), (hi - lo) / 2.0, confidence, n, n, n + big_n,
                    ASSUMES["ppi"], extra={"lambda": lam_})


# ---------------------------------------------------------------------------------------------
# Prediction-powered inference with prompt clusters
# ---------------------------------------------------------------------------------------------


def _cluster_sums(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    return np.bincount(codes, weights=values, minlength=n_groups)


def _cr_var_mean(v: np.ndarray, codes: np.ndarray) -> float:
    """Cluster-robust variance of the mean of ``v`` (CR1: G/(G−1) Σ_g (Σ_{i∈g} (v_i − v̄))² / n²)."""
    n = len(v)
    if n == 0:
        return float("nan")
    g = int(codes.max()) + 1 if n else 0
    s = _cluster_sums(v - v.mean(), codes, g)
    used = np.bincount(codes, minlength=g) > 0
    n_g = int(used.sum())
    if n_g < 2:
        return float("nan")
    return float((s[used] ** 2).sum()) / (n * n) * n_g / (n_g - 1)


def _cr_cov_mean(a: np.ndarray, b: np.ndarray, codes: np.ndarray) -> float:
    n = len(a)
    g = int(codes.max()) + 1 if n else 0
    sa = _cluster_sums(a - a.mean(), codes, g)
    sb = _cluster_sums(b - b.mean(), codes, g)
    used = np.bincount(codes, minlength=g) > 0
    n_g = int(used.sum())
    if n_g < 2:
        return float("nan")
    return float((sa[used] * sb[used]).sum()) / (n * n) * n_g / (n_g - 1)


def _codes_of(clusters: Any, n: int, what: str) -> np.ndarray:
    c = np.asarray(clusters).reshape(-1)
    if len(c) != n:
        raise WorkstationError(f"{what}: {len(c)} cluster ids for {n} items")
    _, codes = np.unique(c.astype(str), return_inverse=True)
    return codes.astype(np.int64).reshape(-1)


def ppi_mean_interval_clustered(y: Any, yhat: Any, clusters: Any, yhat_unlabeled: Any, clusters_unlabeled: Any,
                                *, confidence: float = 0.95, lam: float | None = None) -> Estimate:
    """Prediction-powered estimate of a mean with cluster-robust (CR1) variances: items of one
    prompt may be correlated, prompts are independent. λ is tuned as PPI++ tunes it, with the
    cluster-robust variance and covariance in place of the independent ones."""
    y_ = _as_1d(y, "labels")
    h_ = _as_1d(yhat, "predictions of the labelled items")
    u_ = _as_1d(yhat_unlabeled, "predictions of the unlabelled items")
    if len(y_) != len(h_):
        raise WorkstationError(f"{len(y_)} labels but {len(h_)} predictions of the labelled items")
    cl = _codes_of(clusters, len(y_), "labelled items")
    cu = _codes_of(clusters_unlabeled, len(u_), "unlabelled items")
    n, big_n = len(y_), len(u_)
    key = "ppi_clustered"
    title = "prediction-powered, prompt clusters"
    g_l = len(np.unique(cl))
    if n < 2 or big_n < 2 or g_l < 2 or len(np.unique(cu)) < 2:
        return _undefined(key, title, confidence, n, g_l, n + big_n, "needs labelled items from at least two prompts")
    v_u = _cr_var_mean(u_, cu)
    if lam is None:
        v_h = _cr_var_mean(h_, cl)
        c_yh = _cr_cov_mean(y_, h_, cl)
        den = v_h + v_u
        lam_ = float(np.clip(c_yh / den, 0.0, 1.0)) if den > 0 else 0.0
    else:
        lam_ = float(lam)
    est = float(lam_ * u_.mean() + (y_ - lam_ * h_).mean())
    var = lam_ ** 2 * v_u + _cr_var_mean(y_ - lam_ * h_, cl)
    hw = z_for(confidence) * math.sqrt(max(var, 0.0))
    note = ""
    if float(np.ptp(y_)) == 0.0:  # every label agrees: the prompts' labels never look certain
        hw = max(hw, _agreeing_half_width(est, g_l, confidence))
        note = _AGREEING_NOTE
    return Estimate(key, title, est, _clip01(est - hw), _clip01(est + hw), hw, confidence, n, g_l, n + big_n,
                    ASSUMES[key], note, extra={"lambda": lam_})


_AGREEING_NOTE = "every label agrees: Wilson's interval over the labelled prompts"


def _agreeing_half_width(value: float, units: int, confidence: float) -> float:
    """The half-width an interval needs when every label agrees (its spread says nothing): the
    distance from ``value`` to the far end of Wilson's interval of that rate over ``units``
    independent units (all 30 of 30 prompts PASS at 95 %: down to 0.886)."""
    from .intervals import wilson_interval

    lo, hi = wilson_interval(value * units, units, z_for(confidence))
    return float(max(value - lo, hi - value))


# ---------------------------------------------------------------------------------------------
# The design-based (active) estimate of an audit plan
# ---------------------------------------------------------------------------------------------


def design_estimate(f_units: Any, z_units: Any, stratum: Any, n_items: int, *, items_per_unit: Any = None,
                    confidence: float = 0.95, lam: float = 0.0, key: str | None = None,
                    title: str | None = None) -> Estimate:
    """The stratified (active-inference) estimate of a rate over a finite population of items.

    Per sampling unit u (an item, or a prompt with its items in scope): ``f_units`` the sum of
    the prediction over its items, ``z_units`` the sum of the human values (NaN: not labelled),
    ``stratum`` its stratum, ``items_per_unit`` how many items it holds (1 by default);
    ``n_items`` is the number of items in scope (the rate's denominator). Labelled units of a
    stratum must be a simple random sample of it (the plan draws them so).

    θ̂ = (1/N)[λ Σ_u F_u + Σ_h (N_h/n_h) Σ_{u∈s_h} (Z_u − λ F_u)],
    Var = (1/N²) Σ_h N_h² (1 − n_h/N_h) s²_h / n_h with s²_h the sample variance of Z − λF in h;
    the interval is Student's t with Satterthwaite's effective degrees of freedom.
    ``lam=0`` (the default) is the stratified estimate: the automated outcome fixes the strata and
    their sizes, the labels give each stratum's rate — the active-inference estimate with the
    stratum's mean prediction, whatever that prediction is. ``lam=1`` also corrects the prediction
    item by item inside a stratum (it helps only when the prediction varies there and tracks the
    labels). λ is fixed, not tuned on the labels: tuned on a stratum's few labels it makes the
    variance look smaller than it is. A stratum whose labels all have the same value gets the
    variance of Agresti and Coull's adjusted rate, c_h / (n_h + 2c_h), and with ``lam=0`` no
    stratum's variance per item is below that of the adjusted rate (k + c_h) / (n_h + 2c_h) of
    its k positive labels in n_h (the plan stops on its width, and a lucky run must not stop it):
    c_h = (z²/2)·n_h/n, Agresti and Coull's z²/2 pseudo-successes and pseudo-failures (z the
    confidence's normal quantile) added once to the n labelled units and shared by the strata as
    their labels are (one stratum: Agresti and Coull's rate, (z²/2) / (n_h + z²), 0.054 at 30
    labels). A stratum with a single label gets the largest variance a rate can have
    (0.25 per item): few labels never look certain. A stratum without labels (or N = 0) leaves
    the estimate undefined. Every unit needs a finite prediction, and ``n_items`` must be at
    least the items the units hold; anything else is a `WorkstationError`.
    """
    f = np.asarray(f_units, np.float64).reshape(-1)
    z = np.asarray(z_units, np.float64).reshape(-1)
    s = np.asarray(stratum, np.int64).reshape(-1)
    m = np.ones(len(f)) if items_per_unit is None else np.asarray(items_per_unit, np.float64).reshape(-1)
    if not (len(f) == len(z) == len(s) == len(m)):
        raise WorkstationError("design_estimate: unit columns differ in length")
    if len(s) and s.min() < 0:
        raise WorkstationError("design_estimate: a unit has no stratum")
    if not 0.0 <= lam <= 1.0:
        raise WorkstationError(f"design_estimate: λ must be in [0, 1], got {lam!r}")
    bad_f = np.flatnonzero(~np.isfinite(f))
    if len(bad_f):
        raise WorkstationError(f"design_estimate: the prediction of unit {int(bad_f[0]) + 1} is {float(f[bad_f[0]])}, "
                               "not a number (every unit in scope needs one; none is guessed)")
    bad_m = np.flatnonzero(~(np.isfinite(m) & (m >= 0)))
    if len(bad_m):
        raise WorkstationError(f"design_estimate: unit {int(bad_m[0]) + 1} holds {float(m[bad_m[0]])} items")
    held = float(m.sum())
    if len(f) and n_items < held - 1e-9:
        raise WorkstationError(f"design_estimate: the population has {n_items:,} items but its units hold "
                               f"{held:,.0f}: a rate cannot be over fewer items than were labelled")
    key = key or ("design" if lam == 0 else "design_ppi")
    title = title or ("stratified by the automated outcome, weighted by the plan's design" if lam == 0 else
                      "prediction-powered inside strata, weighted by the plan's design")
    lab = np.isfinite(z)
    n_lab_units = int(lab.sum())
    n_lab_items = int(m[lab].sum())
    if n_items <= 0 or len(f) == 0:
        return _undefined(key, title, confidence, n_lab_items, n_lab_units, int(n_items), "nothing in scope")
    h_count = int(s.max()) + 1
    big_nh = np.bincount(s, minlength=h_count).astype(np.float64)
    nh = np.bincount(s[lab], minlength=h_count).astype(np.float64)
    present = big_nh > 0
    missing = present & (nh == 0)
    if missing.any():
        return _undefined(key, title, confidence, n_lab_items, n_lab_units, int(n_items),
                          f"{int(missing.sum())} of {int(present.sum())} strata have no label yet")
    sl, zl, fl = s[lab], z[lab], f[lab]
    fpc = np.where(present, 1.0 - nh / np.where(present, big_nh, 1.0), 0.0)
    a = np.where(nh > 0, big_nh ** 2 * fpc / np.where(nh > 0, nh, 1.0), 0.0)

    def moments(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per stratum: sample covariance (ddof 1) of x and y over the labelled units."""
        sx = np.bincount(sl, weights=x, minlength=h_count)
        sy = np.bincount(sl, weights=y, minlength=h_count)
        sxy = np.bincount(sl, weights=x * y, minlength=h_count)
        with np.errstate(invalid="ignore", divide="ignore"):
            c = (sxy - sx * sy / np.where(nh > 0, nh, 1.0)) / np.where(nh > 1, nh - 1.0, 1.0)
        return np.where(nh > 1, c, 0.0)

    lam_ = float(lam)
    r = zl - lam_ * fl
    var_h = np.maximum(moments(r, r), 0.0)
    # few labels never look certain: a constant stratum, and a stratum of one label
    mbar = np.bincount(s, weights=m, minlength=h_count) / np.where(present, big_nh, 1.0)
    r_sum = np.bincount(sl, weights=r, minlength=h_count)
    r_sq = np.bincount(sl, weights=r * r, minlength=h_count)
    spread = np.where(nh > 0, r_sq - r_sum ** 2 / np.where(nh > 0, nh, 1.0), 0.0)
    constant = (nh > 1) & (spread <= 1e-12 * np.maximum(1.0, r_sq))
    # few labels that agree must not look certain: a stopping rule that waits for a narrow
    # interval stops on a lucky run otherwise (0.5 / (n_h + 1) for a constant stratum covered 84 %
    # at a rate of 0.95, and a floor on constant strata alone 90 %). The floor is the variance of
    # Agresti and Coull's adjusted rate, whose z²/2 successes and z²/2 failures are added once to
    # the whole sample and shared by the strata as their labels are: stratum h gets
    # c_h = (z²/2)·n_h/n of each, so one stratum is Agresti and Coull's own rate (30 labels of 30
    # at 95 %: at least 0.91, as Clopper and Pearson's one-sided bound says), and a design of many
    # strata is not charged the pseudo-labels once per stratum (nine strata, most of them nearly
    # pure, covered 99 % at the stopping point with z²/2 in every stratum)
    zc2 = z_for(confidence) ** 2
    c_h = 0.5 * zc2 * nh / max(float(nh.sum()), 1.0)
    q = c_h / (nh + 2.0 * c_h)
    var_h = np.where(constant, np.maximum(var_h, mbar ** 2 * q * (1.0 - q)), var_h)
    if lam_ == 0.0:
        # the same floor for every stratum of a rate: the variance of the adjusted rate
        # (k + c_h) / (n_h + 2c_h) per item, so a run of agreeing labels with one exception cannot
        # stop a plan early either
        ml = np.bincount(sl, weights=m[lab], minlength=h_count)
        k = np.bincount(sl, weights=zl, minlength=h_count) / np.where(ml > 0, ml, 1.0) * nh
        pt = np.clip((k + c_h) / (nh + 2.0 * c_h), 0.0, 1.0)
        var_h = np.where(nh > 1, np.maximum(var_h, mbar * pt * (1.0 - pt)), var_h)
    var_h = np.where(nh == 1, 0.25 * mbar ** 2, var_h)
    total = lam_ * float(f.sum()) + float((big_nh / np.where(nh > 0, nh, 1.0) * r_sum).sum())
    est = total / n_items
    contrib = a * var_h
    var = float(contrib.sum()) / (n_items * n_items)
    # Satterthwaite's effective degrees of freedom of the stratified variance, and Student's t:
    # with few labelled units (whole prompts, small strata) the normal quantile is too short
    den = float((contrib ** 2 / np.maximum(nh - 1.0, 1.0)).sum())
    df = float(contrib.sum()) ** 2 / den if den > 0 else float("inf")
    tq = t_ppf(1.0 - (1.0 - confidence) / 2.0, df)
    hw = tq * math.sqrt(max(var, 0.0))
    lo_, hi_ = est - hw, est + hw
    return Estimate(key, title, est, _clip01(lo_), _clip01(hi_), hw, confidence, n_lab_items,
                    n_lab_units, int(n_items), ASSUMES.get(key, ""),
                    extra={"lambda": lam_, "strata": int(present.sum()), "df": df, "se": math.sqrt(max(var, 0.0))})


# ---------------------------------------------------------------------------------------------
# Labels alone
# ---------------------------------------------------------------------------------------------


def wilson_estimate(z: Any, *, confidence: float = 0.95, population: int | None = None) -> Estimate:
    """The labelled items' rate with a Wilson interval (independent items, no weights)."""
    from .intervals import wilson_interval

    v = np.asarray(z, np.float64).reshape(-1)
    v = v[np.isfinite(v)]
    n = len(v)
    pop = int(population if population is not None else n)
    if n == 0:
        return _undefined("wilson", "labels only, Wilson (independent items)", confidence, 0, 0, pop, "no labels")
    k = float(v.sum())
    zc = z_for(confidence)
    lo, hi = wilson_interval(k, n, zc)
    return Estimate("wilson", "labels only, Wilson (independent items)", k / n, lo, hi, (hi - lo) / 2.0,
                    confidence, n, n, pop, ASSUMES["wilson"])


def cluster_bootstrap_estimate(z: Any, clusters: Any, *, confidence: float = 0.95, n_boot: int = 2000,
                               seed: int = 0, population: int | None = None) -> Estimate:
    """The labelled items' rate with a percentile interval from resampling whole prompts
    (`n_boot` resamples, seeded): Σ z / Σ items over the resampled prompts."""
    v = np.asarray(z, np.float64).reshape(-1)
    codes = _codes_of(clusters, len(v), "labelled items")
    ok = np.isfinite(v)
    v, codes = v[ok], codes[ok]
    n = len(v)
    pop = int(population if population is not None else n)
    title = "labels only, prompt bootstrap"
    if n == 0:
        return _undefined("cluster_bootstrap", title, confidence, 0, 0, pop, "no labels")
    _, codes = np.unique(codes, return_inverse=True)
    g = int(codes.max()) + 1
    tot = np.bincount(codes, weights=v, minlength=g)
    cnt = np.bincount(codes, minlength=g).astype(np.float64)
    if g < 2:
        return _undefined("cluster_bootstrap", title, confidence, n, g, pop, "needs labels from two prompts")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, g, size=(n_boot, g))
    boots = tot[idx].sum(1) / cnt[idx].sum(1)
    a = (1.0 - confidence) / 2.0
    lo, hi = (float(x) for x in np.quantile(boots, [a, 1.0 - a]))
    value = float(tot.sum() / cnt.sum())
    hw, note = (hi - lo) / 2.0, ""
    if float(np.ptp(tot / cnt)) == 0.0:  # every prompt has the same rate: resamples cannot vary
        hw = _agreeing_half_width(value, g, confidence)
        lo, hi, note = _clip01(value - hw), _clip01(value + hw), _AGREEING_NOTE
    return Estimate("cluster_bootstrap", title, value, lo, hi, hw, confidence, n, g, pop,
                    ASSUMES["cluster_bootstrap"], note, extra={"resamples": n_boot, "seed": seed})
