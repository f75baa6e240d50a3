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
