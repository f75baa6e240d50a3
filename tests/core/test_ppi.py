"""Prediction-powered and design-based estimates (`workstation.evaluation.ppi`)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from workstation.evaluation.ppi import (
    cluster_bootstrap_estimate,
    design_estimate,
    norm_ppf,
    ppi_mean_estimate,
    ppi_mean_interval,
    ppi_mean_interval_clustered,
    t_ppf,
    wilson_estimate,
    z_for,
)
from workstation.types import WorkstationError


def _data(seed: int, noise: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(20, 400)), int(rng.integers(50, 5000))
    p = rng.random(n + big_n)
    y = (rng.random(n + big_n) < p).astype(float)
    yhat = np.clip(p + noise * rng.normal(size=n + big_n), 0, 1)
    return y[:n], yhat[:n], yhat[n:]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.37])
@pytest.mark.parametrize("noise", [0.05, 0.8])
def test_the_ppi_interval_equals_the_reference_implementation(seed: int, lam: float | None, noise: float) -> None:
    ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (a dev extra) is not installed")
    y, yhat, unl = _data(seed, noise)
    lo_ref, hi_ref = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.05, lam=lam)
    est, lo, hi, lam_used = ppi_mean_interval(y, yhat, unl, alpha=0.05, lam=lam)
    assert abs(lo - float(np.ravel(lo_ref)[0])) <= 1e-9
    assert abs(hi - float(np.ravel(hi_ref)[0])) <= 1e-9
    assert abs(est - float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=lam))[0])) <= 1e-9
    if lam is not None:
        assert lam_used == lam


def test_power_tuning_finds_a_lambda_inside_the_interval_for_a_poor_prediction() -> None:
    """With a weak prediction PPI++ leans on it only partly (0 < λ < 1), and the reference agrees."""
    ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (a dev extra) is not installed")
    lams = []
    for seed in range(8):
        y, yhat, unl = _data(seed, 0.8)
        _e, lo, hi, lam = ppi_mean_interval(y, yhat, unl, alpha=0.1)
        lo_ref, hi_ref = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.1)
        assert abs(lo - float(np.ravel(lo_ref)[0])) <= 1e-9 and abs(hi - float(np.ravel(hi_ref)[0])) <= 1e-9
        lams.append(lam)
    assert any(0.0 < v < 1.0 for v in lams), lams


def test_a_good_prediction_narrows_the_interval_and_a_useless_one_does_not_hurt() -> None:
    rng = np.random.default_rng(3)
    big = 4000
    y_all = (rng.random(big) < 0.4).astype(float)
    good = np.clip(y_all + 0.05 * rng.normal(size=big), 0, 1)
    useless = rng.random(big)
    n = 200
    classic = ppi_mean_estimate(y_all[:n], good[:n], good[n:], lam=0.0)
    with_good = ppi_mean_estimate(y_all[:n], good[:n], good[n:])
    with_useless = ppi_mean_estimate(y_all[:n], useless[:n], useless[n:])
    assert with_good.half_width < 0.5 * classic.half_width
    assert with_useless.half_width <= classic.half_width * 1.02  # λ → 0: about the classical width


def test_t_quantiles_match_tables() -> None:
    for df, q in ((1, 12.706204736), (2, 4.302652730), (3, 3.182446305), (5, 2.570581836), (10, 2.228138852),
                  (30, 2.042272456), (120, 1.979930405)):
        assert abs(t_ppf(0.975, df) - q) < 5e-3 * (1 if df <= 3 else 0.1)
    assert t_ppf(0.975, float("inf")) == norm_ppf(0.975)


def test_t_quantiles_at_fractional_degrees_of_freedom_and_far_tails() -> None:
    # Satterthwaite's df is rarely whole: 1.6 is not 1 (a quantile far too short would make a
    # two-stratum plan stop early); exact values
    for p, df, q in ((0.975, 1.6, 5.517245438758762), (0.9995, 1.6, 64.79972529936686),
                     (0.9995, 3.0, 12.923978636687961), (0.975, 2.5, 3.5746548), (0.995, 7.3, 3.4510317)):
        assert t_ppf(p, df) == pytest.approx(q, rel=2e-4), (p, df)
    qs = [t_ppf(0.975, df) for df in (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.4, 3.0)]
    assert all(a > b for a, b in zip(qs, qs[1:]))  # shrinks steadily as df grows, no steps


def test_norm_ppf_matches_the_standard_library() -> None:
    nd = NormalDist()
    for p in (1e-8, 1e-4, 0.0125, 0.025, 0.2, 0.5, 0.8, 0.975, 0.9875, 1 - 1e-6):
        assert abs(norm_ppf(p) - nd.inv_cdf(p)) < 1e-9
    assert abs(z_for(0.95) - 1.959963984540054) < 1e-12
    with pytest.raises(WorkstationError):
        z_for(1.0)


def test_the_design_estimate_is_exact_when_every_unit_is_labelled() -> None:
    rng = np.random.default_rng(0)
    z = (rng.random(300) < 0.3).astype(float)
    strata = rng.integers(0, 4, 300)
    e = design_estimate(np.zeros(300), z, strata, 300)
    assert e.value == pytest.approx(z.mean(), abs=1e-12)
    assert e.half_width == 0.0 and e.low == e.high == pytest.approx(z.mean())


def test_the_design_estimate_of_one_stratum_is_the_sample_mean_with_the_finite_population_correction() -> None:
    rng = np.random.default_rng(1)
    big = 500
    z_all = (rng.random(big) < 0.35).astype(float)
    lab = rng.choice(big, 120, replace=False)
    z = np.full(big, np.nan)
    z[lab] = z_all[lab]
    e = design_estimate(np.zeros(big), z, np.zeros(big, np.int64), big)
    s2 = z_all[lab].var(ddof=1)
    k = z_all[lab].sum()
    adjusted = (k + z_for(0.95) ** 2 / 2) / (120 + z_for(0.95) ** 2)  # the floor: Agresti and Coull's rate
    s2 = max(s2, adjusted * (1 - adjusted))
    assert e.value == pytest.approx(z_all[lab].mean())
    assert e.half_width == pytest.approx(t_ppf(0.975, 119) * math.sqrt((1 - 120 / big) * s2 / 120))
    assert e.extra["df"] == pytest.approx(119)
    assert e.labels == 120 and e.population == big


def test_a_stratum_without_labels_leaves_the_estimate_undefined() -> None:
    z = np.array([1.0, 0.0, np.nan, np.nan])
    e = design_estimate(np.zeros(4), z, np.array([0, 0, 1, 1]), 4)
    assert not e.defined and "1 of 2 strata" in e.note


def test_few_equal_labels_never_look_certain() -> None:
    """Three labels that agree in a stratum of 100 still leave a clearly positive width."""
    z = np.full(100, np.nan)
    z[:3] = 1.0
    e = design_estimate(np.zeros(100), z, np.zeros(100, np.int64), 100)
    assert e.value == 1.0 and e.half_width > 0.3
    one = np.full(100, np.nan)
    one[0] = 1.0
    e1 = design_estimate(np.zeros(100), one, np.zeros(100, np.int64), 100)
    assert e1.half_width >= z_for(0.95) * math.sqrt(0.25 * 99 / 100)


def test_weights_follow_the_strata_not_the_labels() -> None:
    """Two strata of 900 and 100 items, 10 labels each: the estimate weighs them 0.9 / 0.1."""
    z = np.full(1000, np.nan)
    strata = np.r_[np.zeros(900, np.int64), np.ones(100, np.int64)]
    z[:10] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]  # 0.9 in the big stratum
    z[900:910] = 0.0  # 0 in the small one
    e = design_estimate(np.zeros(1000), z, strata, 1000)
    assert e.value == pytest.approx(0.9 * 0.9 + 0.1 * 0.0)
    w = wilson_estimate(z)
    assert w.value == pytest.approx(9 / 20)  # the unweighted share would be far off


def test_whole_prompt_units_use_prompt_totals() -> None:
    """Units of four items: the variance is that of the units' totals."""
    rng = np.random.default_rng(2)
    u = 60
    tot = rng.integers(0, 5, u).astype(float)
    lab = np.full(u, np.nan)
    lab[:20] = tot[:20]
    e = design_estimate(np.zeros(u), lab, np.zeros(u, np.int64), 4 * u, items_per_unit=np.full(u, 4.0))
    assert e.value == pytest.approx(tot[:20].sum() / 20 * u / (4 * u))
    var = (1 - 20 / u) * tot[:20].var(ddof=1) / 20 * u * u / (4 * u) ** 2
    assert e.half_width == pytest.approx(t_ppf(0.975, 19) * math.sqrt(var))
    assert e.labels == 80 and e.units == 20


def test_clustered_ppi_with_one_item_per_prompt_is_the_reference_with_a_small_sample_factor() -> None:
    y, yhat, unl = _data(5, 0.2)
    est, lo, hi, lam = ppi_mean_interval(y, yhat, unl, lam=1.0)
    e = ppi_mean_interval_clustered(y, yhat, np.arange(len(y)), unl, np.arange(len(unl)) + len(y), lam=1.0)
    assert e.value == pytest.approx(est)
    n, big = len(y), len(unl)
    v_ref = ((hi - lo) / 2 / z_for(0.95)) ** 2
    v_unl = (np.var(unl) / big) * big / (big - 1)
    v_lab = (np.var(y - yhat) / n) * n / (n - 1)
    assert v_ref == pytest.approx(np.var(unl) / big + np.var(y - yhat) / n)
    assert e.half_width == pytest.approx(z_for(0.95) * math.sqrt(v_unl + v_lab))


def test_the_prompt_bootstrap_is_seeded() -> None:
    rng = np.random.default_rng(4)
    z = (rng.random(80) < 0.5).astype(float)
    cl = np.repeat(np.arange(20), 4)
    a = cluster_bootstrap_estimate(z, cl, seed=3, n_boot=500)
    b = cluster_bootstrap_estimate(z, cl, seed=3, n_boot=500)
    c = cluster_bootstrap_estimate(z, cl, seed=4, n_boot=500)
    assert (a.low, a.high) == (b.low, b.high) and (a.low, a.high) != (c.low, c.high)
    assert a.units == 20 and a.extra == {"resamples": 500, "seed": 3}


def test_a_stratum_whose_labels_all_agree_is_bounded_as_an_exact_interval_bounds_it() -> None:
    """30 labels of 30 PASS from a large stratum: the rate may be as low as about 0.91."""
    z = np.full(5000, np.nan)
    z[:30] = 1.0
    e = design_estimate(np.zeros(5000), z, np.zeros(5000, np.int64), 5000)
    assert e.high == 1.0 and 0.88 <= e.low <= 0.92
    assert design_estimate(np.zeros(5000), 1.0 - z, np.zeros(5000, np.int64), 5000).high >= 0.08


def test_the_adjusted_rates_pseudo_labels_are_shared_by_the_strata_not_given_to_each() -> None:
    """Two strata of 500, 30 labels each, all PASS in one and all FAIL in the other: the z²/2
    pseudo-successes and pseudo-failures of Agresti and Coull's rate are added once to the 60
    labels, half to each stratum — not z²/2 to each, which charged a design of many nearly pure
    strata for pseudo-labels it never drew (it covered 99 % where 95 % was asked)."""
    big = 1000
    strata = np.r_[np.zeros(500, np.int64), np.ones(500, np.int64)]
    z = np.full(big, np.nan)
    z[:30], z[500:530] = 1.0, 0.0
    e = design_estimate(np.zeros(big), z, strata, big)
    c = z_for(0.95) ** 2 / 4  # half of z²/2 in each stratum
    q = c / (30 + 2 * c)
    var = 2 * 500 ** 2 * (1 - 30 / 500) * q * (1 - q) / 30 / big ** 2
    assert e.value == pytest.approx(0.5)
    assert e.extra["df"] == pytest.approx(58)
    assert e.half_width == pytest.approx(t_ppf(0.975, 58) * math.sqrt(var))
    q_each = 0.5 * z_for(0.95) ** 2 / (30 + z_for(0.95) ** 2)  # z²/2 given to each stratum
    assert e.half_width < 0.8 * t_ppf(0.975, 58) * math.sqrt(var * q_each * (1 - q_each) / (q * (1 - q)))


def test_a_plan_that_stops_at_its_width_covers_a_rate_near_one() -> None:
    """A single stratum whose rate is 0.95: labels in a random order, stopped as soon as the
    interval is ±0.04 — a lucky run of agreeing labels must not stop it with an interval that
    misses (a pseudo-variance of 0.5/(n+1) covered 84 % here)."""
    rng = np.random.default_rng(2024)
    big, audits, covered = 1000, 500, 0
    for _ in range(audits):
        z = (rng.random(big) < 0.95).astype(float)
        zz = np.full(big, np.nan)
        for i, u in enumerate(rng.permutation(big)):
            zz[u] = z[u]
            if i == 0:
                continue
            e = design_estimate(np.zeros(big), zz, np.zeros(big, np.int64), big)
            if e.half_width <= 0.04:
                break
        covered += int(e.low <= z.mean() <= e.high)
    assert covered / audits >= 0.925  # nominal 0.95, less three standard errors of 500 audits


def test_labels_that_all_agree_give_the_prompt_intervals_a_width() -> None:
    """Every label PASS over 30 prompts of 4 images: the prompt bootstrap and the clustered PPI
    give an interval reaching below 0.9 (Wilson over 30 prompts), not [1, 1]."""
    y = np.ones(120)
    prompts = np.repeat(np.arange(30), 4)
    b = cluster_bootstrap_estimate(y, prompts)
    assert b.high == 1.0 and b.half_width > 0.1 and 0.85 <= b.low <= 0.9
    rng = np.random.default_rng(0)
    c = ppi_mean_interval_clustered(y, rng.random(120), prompts, rng.random(400), np.repeat(np.arange(30, 130), 4))
    assert c.high == 1.0 and c.half_width > 0.1 and 0.85 <= c.low <= 0.9
    # labels that vary keep their own interval
    y2 = (rng.random(120) < 0.5).astype(float)
    assert cluster_bootstrap_estimate(y2, prompts).note == ""


def test_the_design_estimate_refuses_a_population_smaller_than_its_units_and_a_missing_prediction() -> None:
    z = np.array([1.0, 0.0, 1.0, np.nan])
    with pytest.raises(WorkstationError, match="population has 3 items but its units hold 4"):
        design_estimate(np.zeros(4), z, np.zeros(4, np.int64), 3)
    with pytest.raises(WorkstationError, match="population has 10 items but its units hold 16"):
        design_estimate(np.zeros(4), z, np.zeros(4, np.int64), 10, items_per_unit=np.full(4, 4.0))
    f = np.array([0.5, np.nan, 0.5, 0.5])
    with pytest.raises(WorkstationError, match="prediction of unit 2 is nan"):
        design_estimate(f, z, np.zeros(4, np.int64), 4, lam=1.0)
