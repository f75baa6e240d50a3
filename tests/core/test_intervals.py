"""Intervals: Wilson, the cluster bootstrap over prompts, κ intervals, the rules at the edges
(undefined, all resamples agreeing, small n, many units) and the seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workstation.evaluation import intervals as iv
from workstation.evaluation.intervals import (
    Estimate,
    kappa_estimate,
    ratio_estimates,
    rate_estimate,
    wilson_estimate,
    wilson_interval,
)


def test_wilson_by_hand_and_undefined() -> None:
    # 8 of 10: p 0.8, z² 3.8415; centre (0.8 + 0.19207) / 1.38415, half 1.96·√(0.016 + 0.0096)/1.38415
    lo, hi = wilson_interval(8, 10)
    z = iv.Z95
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)  # the textbook values
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    e = wilson_estimate(8, 10)
    assert (e.value, e.n, e.units, e.method) == (0.8, 10, 10, iv.WILSON)
    u = wilson_estimate(0, 0)
    assert not u.defined and not u.has_interval and u.text() == "— (n 0)"
    lo_a, hi_a = iv.wilson_arrays(np.array([8, 0, 3]), np.array([10, 0, 3]))
    assert lo_a[0] == pytest.approx(lo) and math.isnan(lo_a[1]) and hi_a[2] == 1.0


def test_independent_items_get_wilson_and_prompts_the_cluster_bootstrap() -> None:
    y = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1, 0] * 4, np.float64)
    (e,) = ratio_estimates(y, np.ones(40))
    assert e.method == iv.WILSON and (e.lo, e.hi) == pytest.approx(wilson_interval(16, 40))
    # the same outcomes as 10 prompts × 4 seeds whose seeds agree: only 10 independent units
    y10 = np.repeat([1.0, 0, 0, 1, 1, 0, 0, 0, 1, 0], 4)
    prompt = np.repeat(np.arange(10), 4)
    (c,) = ratio_estimates(y10, np.ones(40), prompt)
    assert c.method == iv.CLUSTER_BOOTSTRAP and (c.n, c.units) == (40, 10) and c.value == 0.4
    assert c.hi - c.lo > 1.5 * (e.hi - e.lo)
    # one prompt per item again: Wilson, whatever the unit ids are
    (w,) = ratio_estimates(y, np.ones(40), np.arange(40) * 7)
    assert w.method == iv.WILSON and (w.lo, w.hi) == (e.lo, e.hi)


def test_conditional_rates_count_only_their_denominator() -> None:
    passed = np.array([1, 0, 1, 0, 0, 1], np.float64)
    decided = np.array([1, 1, 1, 0, 0, 1], np.float64)
    rate, cov = ratio_estimates(np.c_[passed, decided], np.c_[decided, np.ones(6)])
    assert (rate.value, rate.n, cov.value, cov.n) == (0.75, 4, pytest.approx(4 / 6), 6)
    assert (rate.lo, rate.hi) == pytest.approx(wilson_interval(3, 4))


def test_all_resamples_agreeing_give_wilson_over_the_units_not_a_point() -> None:
    prompt = np.repeat(np.arange(12), 3)
    (zero,) = ratio_estimates(np.zeros(36), np.ones(36), prompt)
    assert zero.value == 0.0 and zero.method == iv.WILSON_UNITS
    assert (zero.lo, zero.hi) == pytest.approx(wilson_interval(0, 12)) and zero.hi > 0.2
    (one,) = ratio_estimates(np.ones(36), np.ones(36), prompt)
    assert (one.lo, one.hi) == pytest.approx(wilson_interval(12, 12))
    # a single prompt holding every item: its rate is not known better than one item's
    (single,) = ratio_estimates(np.array([1.0, 0, 1, 1]), np.ones(4), np.zeros(4))
    assert single.units == 1 and (single.lo, single.hi) == pytest.approx(wilson_interval(0.75, 1))
    # a mean (not a proportion) whose resamples agree keeps its point interval
    (mean,) = ratio_estimates(np.full(36, 0.3), np.ones(36), prompt, proportion=False)
    assert (mean.lo, mean.hi) == pytest.approx((0.3, 0.3))


def test_undefined_rates_and_no_resamples() -> None:
    (e,) = ratio_estimates(np.zeros(5), np.zeros(5), np.arange(5))
    assert math.isnan(e.value) and not e.has_interval and e.n == 0 and e.text() == "— (n 0)"
    (none,) = ratio_estimates(np.array([1.0, 0, 1]), np.ones(3), np.arange(3), n_boot=0)
    assert none.value == pytest.approx(2 / 3) and not none.has_interval and none.method == iv.NO_INTERVAL
    (empty,) = ratio_estimates(np.zeros(0), np.zeros(0), np.zeros(0))
    assert math.isnan(empty.value)
    assert math.isnan(rate_estimate(np.zeros(0)).value)
    assert rate_estimate(np.array([1.0, 0, 0, 1]), n_boot=0).method == iv.NO_INTERVAL


def test_small_n_is_said() -> None:
    e = Estimate(0.5, 0.1, 0.9, n=4, units=4, method=iv.WILSON)
    assert e.small and e.small_note() == "fewer than 10 items"
    assert e.text() == "0.5000 [0.1000, 0.9000] (n 4: fewer than 10 items)"
    p = Estimate(0.5, 0.1, 0.9, n=40, units=6, method=iv.CLUSTER_BOOTSTRAP)
    assert p.small and p.small_note() == "fewer than 10 prompts"
    assert p.text("%") == "50.0% [10.0, 90.0] (n 40: fewer than 10 prompts)"
    big = Estimate(0.5, 0.4, 0.6, n=100, units=25)
    assert not big.small and big.small_note() == "" and big.text() == "0.5000 [0.4000, 0.6000]"


def test_the_bootstrap_is_seeded() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(120)  # a mean of continuous scores: the bounds are not stuck on a grid of k / n
    prompt = np.repeat(np.arange(30), 4)
    a = ratio_estimates(y, np.ones(120), prompt, proportion=False)[0]
    b = ratio_estimates(y, np.ones(120), prompt, proportion=False)[0]
    c = ratio_estimates(y, np.ones(120), prompt, proportion=False, seed=1)[0]
    assert (a.lo, a.hi) == (b.lo, b.hi) and (a.lo, a.hi) != (c.lo, c.hi)
    assert iv.SEED == 0 and iv.N_BOOT == 2000
    # the resample counts themselves come from the seed: every unit drawn n times per resample
    blocks = list(iv.resample_counts(30, n_boot=250, seed=5))
    assert [len(x) for x in blocks] == [100, 100, 50]
    assert all((x.sum(axis=1) == 30).all() for x in blocks)
    again = np.concatenate(list(iv.resample_counts(30, n_boot=250, seed=5)))
    assert np.array_equal(np.concatenate(blocks), again)
    assert not np.array_equal(again, np.concatenate(list(iv.resample_counts(30, n_boot=250, seed=6))))
    z = rng.normal(size=50)
    first = iv.bootstrap_interval(z, n_boot=400)
    assert first == iv.bootstrap_interval(z, n_boot=400) and first != iv.bootstrap_interval(z, n_boot=400, seed=2)


def test_the_expanded_percentile_widens_small_samples_only() -> None:
    assert iv.expanded_alpha(0.95, 2) == pytest.approx(0.025)
    assert iv.expanded_alpha(0.95, 10) < 0.01 < iv.expanded_alpha(0.95, 30) < 0.02
    assert iv.expanded_alpha(0.95, 5000) == pytest.approx(0.025, abs=2e-4)
    assert iv.t_ppf(0.975, 10) == pytest.approx(2.2281, abs=1e-4)  # Student's t table
    assert iv.t_ppf(0.975, 30) == pytest.approx(2.0423, abs=1e-4)


def test_t_quantiles_are_exact_at_few_degrees_of_freedom() -> None:
    # scipy.stats.t.ppf's values: an expansion in 1/df around the normal quantile is far off here
    # (4.17 for 4.30 at df 2 and 0.975; 21.3 for 31.6 at df 2 and 0.9995)
    exact = {(1.5, 0.975): 6.016663104427929, (1.5, 0.9995): 82.84744670366369,
             (2.0, 0.975): 4.302652729749462, (2.0, 0.9995): 31.599054576445365,
             (3.0, 0.975): 3.1824463052837078, (3.0, 0.9995): 12.923978636687961}
    for (df, p), q in exact.items():
        assert iv.t_ppf(p, df) == pytest.approx(q, rel=1e-9), (df, p)
    # the expanded percentile's z for 3 units: sqrt(3/2) * t(2) at 0.975
    assert iv._z_expanded(0.95, 3) == pytest.approx(math.sqrt(1.5) * 4.302652729749462, rel=1e-9)


def test_many_units_use_the_design_effect_wilson(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(2, 3, 400)
    y = (rng.random((400, 4)) < p[:, None]).astype(np.float64).ravel()
    prompt = np.repeat(np.arange(400), 4)
    boot = ratio_estimates(y, np.ones(1600), prompt)[0]
    monkeypatch.setattr(iv, "MAX_BOOT_UNITS", 100)
    lin = ratio_estimates(y, np.ones(1600), prompt)[0]
    assert lin.method == iv.LINEARISED and lin.value == boot.value
    # the normal approximation of the same cluster-robust spread: the two agree closely
    assert lin.lo == pytest.approx(boot.lo, abs=0.01) and lin.hi == pytest.approx(boot.hi, abs=0.01)
    naive = wilson_interval(y.sum(), 1600)
    assert lin.hi - lin.lo > 1.1 * (naive[1] - naive[0])  # design effect about 1.5: √1.5 ≈ 1.22
    (zero,) = ratio_estimates(np.zeros(1600), np.ones(1600), prompt)
    assert zero.method == iv.WILSON_UNITS and zero.hi == pytest.approx(wilson_interval(0, 400)[1])
    (mean,) = ratio_estimates(y * 0.5, np.ones(1600), prompt, proportion=False)
    assert mean.method == iv.LINEARISED and mean.lo < mean.value < mean.hi


def test_kappa_interval_by_cluster_and_its_edges() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 3, 200))
    e = kappa_estimate(a, b, categories=3)
    po = float(np.mean(a == b))
    pe = sum(np.mean(a == k) * np.mean(b == k) for k in range(3))
    assert e.value == pytest.approx((po - pe) / (1 - pe))
    assert e.lo < e.value < e.hi and e.method == iv.BOOTSTRAP and e.n == 200
    clustered = kappa_estimate(np.repeat(a[:50], 4), np.repeat(b[:50], 4), np.repeat(np.arange(50), 4),
                               categories=3)
    alone = kappa_estimate(np.repeat(a[:50], 4), np.repeat(b[:50], 4), categories=3)
    assert clustered.units == 50 and clustered.hi - clustered.lo > 1.5 * (alone.hi - alone.lo)
    # codes outside the scale are left out; no chance disagreement: undefined, no interval
    assert kappa_estimate([0, 1, 5, -1], [0, 1, 1, 0], categories=3).n == 2
    u = kappa_estimate([1, 1, 1], [1, 1, 1], categories=3)
    assert math.isnan(u.value) and not u.has_interval
    with pytest.raises(ValueError, match="differ in length"):
        kappa_estimate([0, 1], [0], categories=2)
    # the weighted table agrees with the textbook formula on a reversal
    w = iv.kappa_from_tables(np.array([[0, 2], [2, 0]]), weighted=True)
    assert float(w) == pytest.approx(-1.0)


def test_cluster_bootstrap_of_ratios_keeps_the_units_together() -> None:
    x = np.array([1.0, 1, 0, 0, 1, 0])
    lo_i, hi_i = iv.bootstrap_ratio_intervals(x, np.ones(6), n_boot=3000, seed=1)
    lo_u, hi_u = iv.bootstrap_ratio_intervals(x, np.ones(6), n_boot=3000, seed=1, unit=[0, 0, 1, 1, 2, 2])
    # three units of 1, 0 and ½: a resample mean is a multiple of 1/6 — and the interval is wider than
    # the six items' would be
    assert hi_u[0] - lo_u[0] >= hi_i[0] - lo_i[0]
    assert np.allclose((np.array([lo_u[0], hi_u[0]]) * 6) % 1, 0)


def test_t_quantiles_match_scipys_from_half_a_degree_of_freedom_to_millions() -> None:
    """The workstation's own t quantile (no scipy at run time) against scipy's `stdtrit` over
    fractional and whole degrees of freedom, both tails, and the large-df expansion's range."""
    from scipy.special import stdtrit

    for df in (0.5, 1.0, 1.6, 2.0, 3.0, 4.5, 7.3, 12.0, 29.0, 99.5, 1000.0, 9999.0, 1e4, 3e5, 9e6):
        for p in (1e-9, 1e-4, 0.001, 0.025, 0.1, 0.3, 0.7, 0.9, 0.975, 0.995, 0.9995, 1 - 1e-7):
            assert iv.t_ppf(p, df) == pytest.approx(float(stdtrit(df, p)), rel=1e-9, abs=1e-12), (df, p)
    assert iv.t_ppf(0.5, 3.0) == 0.0
    assert iv.t_ppf(0.9, math.inf) == pytest.approx(iv.norm_ppf(0.9), rel=1e-15)
