"""Agreement among many raters (`workstation.evaluation.rater_agreement`): Krippendorff's α and Fleiss' κ
against their reference packages, Gwet's AC1 / AC2 against his published formulas written out
here, cases worked by hand and from the literature, the edge cases, and the clustered intervals'
coverage on a small seeded simulation (`tests/benchmarks/bench_rater_agreement.py` prints the
full figures)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from workstation.evaluation import rater_agreement as raters
from workstation.evaluation.intervals import CLUSTER_BOOTSTRAP, NO_INTERVAL
from workstation.types import WorkstationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_rater_agreement as bench  # noqa: E402

N_MATRICES = 240


def _random_matrices(seed: int, complete: bool = False):
    """Seeded rating matrices: 2–7 raters, 2–5 categories, 0–40 % missing, 3–60 items; each with
    at least one item of two ratings and two values seen (what the references need)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < N_MATRICES:
        m, q, n = int(rng.integers(2, 8)), int(rng.integers(2, 6)), int(rng.integers(3, 61))
        x = rng.integers(1, q + 1, size=(n, m)).astype(float)
        if rng.random() < 0.3:  # a dominant answer, as PASS often is
            x[rng.random((n, m)) < 0.7] = 1.0
        if not complete:
            x[rng.random((n, m)) < rng.uniform(0.0, 0.4)] = np.nan
        if ((~np.isnan(x)).sum(axis=1) >= 2).any() and len(np.unique(x[~np.isnan(x)])) >= 2:
            out.append((x, np.arange(1.0, q + 1)))
    return out


# ---------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval"])
def test_alpha_equals_the_krippendorff_package_on_random_matrices_with_missing_ratings(metric: str) -> None:
    mats = _random_matrices(11)
    assert sum(np.isnan(x).any() for x, _ in mats) > N_MATRICES // 2  # most of them have missing ratings
    for x, cats in mats:
        ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=metric, value_domain=cats)
        assert raters.krippendorff_alpha(x, metric, cats) == pytest.approx(ref, abs=1e-9), (metric, x.tolist())


def test_fleiss_kappa_equals_statsmodels_on_random_complete_matrices() -> None:
    for x, cats in _random_matrices(12, complete=True):
        table, _ = raters.rating_counts(x, cats)
        ref = statsmodels_fleiss(table, method="fleiss")
        assert raters.fleiss_kappa(x, cats) == pytest.approx(ref, abs=1e-9), x.tolist()


def _gwet_weights(cats: np.ndarray, kind: str) -> np.ndarray:
    """Gwet's weights (Handbook of Inter-Rater Reliability, 4th ed., ch. 3), written out cell by cell."""
    q = len(cats)
    w = np.zeros((q, q))
    xmin, xmax = float(cats.min()), float(cats.max())
    for k in range(q):
        for l in range(q):
            d = abs(float(cats[k]) - float(cats[l]))
            if kind == "identity":
                w[k, l] = 1.0 if k == l else 0.0
            elif kind == "quadratic":
                w[k, l] = 1.0 - (d / (xmax - xmin)) ** 2
            elif kind == "linear":
                w[k, l] = 1.0 - d / (xmax - xmin)
            elif kind == "radical":
                w[k, l] = 1.0 - math.sqrt(d) / math.sqrt(xmax - xmin)
            elif kind == "ordinal":
                m = abs(k - l) + 1
                w[k, l] = math.comb(m, 2)
    if kind == "ordinal":
        w = 1.0 - w / w.max()
    return w


def _gwet_reference(x: np.ndarray, cats: np.ndarray, weights: str, fleiss: bool = False) -> float:
    """AC1 / AC2 (and Fleiss' generalised κ) with missing ratings, from Gwet's formulas: over the n
    subjects rated at least once, π_k = (1/n) Σ_i r_ik / r_i; over the n' subjects rated at least
    twice, p_a = (1/n') Σ_i Σ_k r_ik (r*_ik − 1) / (r_i (r_i − 1)), r*_ik = Σ_l w_kl r_il;
    p_e = T_w / (q (q − 1)) Σ_k π_k (1 − π_k) (AC) or Σ_kl w_kl π_k π_l (Fleiss)."""
    q = len(cats)
    w = _gwet_weights(cats, weights)
    pa_terms, pi_sum, n_rated = [], np.zeros(q), 0
    for row in x:
        vals = [v for v in row.tolist() if not math.isnan(v)]
        r = np.array([sum(1 for v in vals if v == c) for c in cats.tolist()], float)
        ri = len(vals)
        if ri >= 1:
            n_rated += 1
            pi_sum += r / ri
        if ri >= 2:
            star = [sum(w[k, l] * r[l] for l in range(q)) for k in range(q)]
            pa_terms.append(sum(r[k] * (star[k] - 1.0) for k in range(q)) / (ri * (ri - 1.0)))
    if not pa_terms:
        return float("nan")
    pa = sum(pa_terms) / len(pa_terms)
    pi = pi_sum / n_rated
    if fleiss:
        pe = sum(w[k, l] * pi[k] * pi[l] for k in range(q) for l in range(q))
    else:
        pe = w.sum() / (q * (q - 1.0)) * sum(p * (1.0 - p) for p in pi)
    return (pa - pe) / (1.0 - pe)


def test_fleiss_kappa_with_missing_ratings_follows_gwets_generalisation() -> None:
    for x, cats in _random_matrices(13):
        assert raters.fleiss_kappa(x, cats) == pytest.approx(_gwet_reference(x, cats, "identity", fleiss=True),
                                                             abs=1e-9), x.tolist()


@pytest.mark.parametrize("weights", ["identity", "quadratic", "linear", "ordinal", "radical"])
def test_ac1_and_ac2_equal_gwets_formulas_on_random_matrices_with_missing_ratings(weights: str) -> None:
    for x, cats in _random_matrices(14):
        ref = _gwet_reference(x, cats, weights)
        got = raters.gwet_ac1(x, cats) if weights == "identity" else raters.gwet_ac2(x, cats, weights)
        assert got == pytest.approx(ref, abs=1e-9), (weights, x.tolist())


def test_agreement_weights_are_gwets() -> None:
    cats = np.array([1.0, 2.0, 3.0, 4.0])
    for kind in raters.WEIGHTS:
        np.testing.assert_allclose(raters.agreement_weights(cats, kind), _gwet_weights(cats, kind), atol=1e-12)
    # a 4-point scale, one value against the others (0..3 apart): M = C(1, 2), C(2, 2), C(3, 2), C(4, 2) = 0, 1, 3, 6
    np.testing.assert_allclose(raters.agreement_weights(cats, "ordinal")[0], [1.0, 5 / 6, 1 / 2, 0.0])
    np.testing.assert_allclose(raters.agreement_weights(cats, "quadratic")[0], [1.0, 8 / 9, 5 / 9, 0.0])


# ---------------------------------------------------------------------------------------------
# By hand and from the literature
# ---------------------------------------------------------------------------------------------
HAND = np.array([[1, 1, 1], [1, 1, 2], [2, 2, np.nan], [1, np.nan, np.nan]], float)


def test_a_small_case_worked_by_hand() -> None:
    # items rated twice or more: p_a = (1 + 1/3 + 1) / 3 = 7/9; every rated item: π = (2/3, 1/3)
    assert raters.gwet_ac1(HAND, [1, 2]) == pytest.approx(3 / 5, abs=1e-12)  # p_e = 2·(2/3)(1/3) = 4/9
    assert raters.fleiss_kappa(HAND, [1, 2]) == pytest.approx(1 / 2, abs=1e-12)  # p_e = 4/9 + 1/9
    # coincidences of the three pairable items: o11 = 3 + 1, o12 = o21 = 1, o22 = 2; n = 8
    assert raters.krippendorff_alpha(HAND, "nominal") == pytest.approx(1 - 7 * 2 / (2 * 5 * 3), abs=1e-12)
    # AC2, quadratic weights on 1..3: item (1, 2) agrees 0.75, item (3, 3) 1; π = (1/4, 1/4, 1/2)
    assert raters.gwet_ac2(np.array([[1, 2], [3, 3]], float), [1, 2, 3]) == pytest.approx(2 / 3, abs=1e-12)


def test_fleiss_1971_example() -> None:
    """Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa": 10 subjects, 14 raters, 5 categories, κ = 0.210."""
    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    x = np.array([np.repeat(np.arange(1.0, 6), row) for row in table])
    assert round(raters.fleiss_kappa(x, [1, 2, 3, 4, 5]), 3) == 0.210


def test_krippendorff_2011_example_with_missing_ratings() -> None:
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: 4 observers,
    12 units, missing values: α nominal 0.743, interval 0.849."""
    nan = np.nan
    obs = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]])
    assert round(raters.krippendorff_alpha(obs.T, "nominal"), 3) == 0.743
    assert round(raters.krippendorff_alpha(obs.T, "interval"), 3) == 0.849


# ---------------------------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------------------------
def test_one_category_only() -> None:
    x = np.ones((6, 3))
    assert math.isnan(raters.krippendorff_alpha(x, "nominal", [1, 2, 3]))  # no chance disagreement
    assert math.isnan(raters.fleiss_kappa(x, [1, 2, 3]))
    assert raters.gwet_ac1(x, [1, 2, 3]) == 1.0  # AC1 stays defined where one answer is all there is
    assert math.isnan(raters.gwet_ac1(x))  # a scale of one value: no chance agreement to speak of
    e = raters.agreement_estimate("alpha_nominal", x, np.arange(6), categories=[1, 2, 3])
    assert math.isnan(e.value) and e.method == NO_INTERVAL and e.n == 6


def test_one_rater_and_all_missing_are_undefined_not_errors() -> None:
    one = np.array([[1.0], [2.0], [1.0]])
    empty = np.full((4, 3), np.nan)
    for x in (one, empty):
        est = raters.many_rater_agreement(x, categories=[1, 2], ordinal=True)
        assert set(est) == set(raters.statistics_for(True))
        assert all(math.isnan(e.value) and e.n == 0 and not e.has_interval for e in est.values())
    assert raters.many_rater_agreement(np.zeros((0, 3)), categories=[1, 2])["ac1"].n == 0


def test_items_with_fewer_than_two_ratings_are_left_out_of_alpha_and_of_the_observed_agreement() -> None:
    base = np.array([[1, 1, 2], [2, 2, 2], [1, 2, np.nan], [3, 3, 3], [1, 1, 1]], float)
    single = np.array([[3, np.nan, np.nan], [np.nan, 1, np.nan], [np.nan, np.nan, np.nan]], float)
    both = np.vstack([base, single])
    for metric in raters.METRICS:
        assert raters.krippendorff_alpha(both, metric, [1, 2, 3]) == raters.krippendorff_alpha(base, metric, [1, 2, 3])
    # Gwet: the single ratings only move the category shares π (as his formulas have it)
    assert raters.gwet_ac1(both, [1, 2, 3]) == pytest.approx(_gwet_reference(both, np.array([1.0, 2, 3]), "identity"))
    assert raters.gwet_ac1(both, [1, 2, 3]) != pytest.approx(raters.gwet_ac1(base, [1, 2, 3]))
    e = raters.agreement_estimate("ac1", both, np.arange(len(both)), categories=[1, 2, 3], n_boot=100)
    assert e.n == 5  # the items rated at least twice


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(WorkstationError, match="not on the scale"):
        raters.fleiss_kappa(np.array([[1, 5], [1, 2]], float), [1, 2, 3])
    with pytest.raises(WorkstationError, match="items as rows"):
        raters.fleiss_kappa(np.array([1.0, 2.0]))
    with pytest.raises(WorkstationError, match="increasing"):
        raters.gwet_ac1(np.ones((2, 2)), [2, 1])
    with pytest.raises(WorkstationError, match="unknown α metric"):
        raters.krippendorff_alpha(np.ones((2, 2)), "ratio")
    with pytest.raises(WorkstationError, match="unknown agreement weights"):
        raters.gwet_ac2(np.ones((2, 2)), [1, 2], "cubic")
    with pytest.raises(WorkstationError, match="unknown agreement statistic"):
        raters.agreement_estimate("kappa", np.ones((2, 2)))


# ---------------------------------------------------------------------------------------------
# The clustered interval
# ---------------------------------------------------------------------------------------------
def test_the_interval_is_clustered_by_prompt_and_brackets_the_value() -> None:
    d = bench.Design(prompts=40)
    x, prompt = bench.draw_audit(d, np.random.default_rng(3))
    clustered = raters.agreement_estimate("ac1", x, prompt, categories=d.values, n_boot=400)
    items = raters.agreement_estimate("ac1", x, None, categories=d.values, n_boot=400)
    assert clustered.method == CLUSTER_BOOTSTRAP and clustered.units == 40 and clustered.n > 100
    assert clustered.lo <= clustered.value <= clustered.hi
    assert clustered.value == pytest.approx(items.value, abs=1e-12)
    assert clustered.value == pytest.approx(raters.gwet_ac1(x, d.values), abs=1e-12)
    # four correlated images per prompt: the prompt-level interval is wider than the item-level one
    assert clustered.hi - clustered.lo > 1.1 * (items.hi - items.lo)
    again = raters.agreement_estimate("ac1", x, prompt, categories=d.values, n_boot=400)
    assert (again.lo, again.hi) == (clustered.lo, clustered.hi)  # seeded


def test_the_jackknife_takes_over_above_the_bootstraps_unit_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    d = bench.Design(prompts=30)
    x, prompt = bench.draw_audit(d, np.random.default_rng(4))
    boot = raters.agreement_estimate("alpha_nominal", x, prompt, categories=d.values, n_boot=500)
    jack = raters.agreement_estimate("alpha_nominal", x, prompt, categories=d.values, interval="jackknife")
    assert jack.method == raters.CLUSTER_JACKKNIFE and jack.value == boot.value
    assert jack.hi - jack.lo == pytest.approx(boot.hi - boot.lo, rel=0.35)  # two estimates of one spread
    monkeypatch.setattr(raters, "MAX_BOOT_UNITS", 20)
    assert raters.agreement_estimate("alpha_nominal", x, prompt, categories=d.values).method == raters.CLUSTER_JACKKNIFE


def test_agreement_per_group_is_the_agreement_of_the_groups_items_on_the_whole_scale() -> None:
    d = bench.Design(prompts=24)
    x, prompt = bench.draw_audit(d, np.random.default_rng(6))
    relation = np.where(prompt % 3 == 0, "left of", "above")
    by = raters.agreement_by_group(x, relation, prompt, n_boot=200)
    assert list(by) == ["left of", "above"]
    left = relation == "left of"
    for stat in raters.statistics_for(False):
        alone = raters.agreement_estimate(stat, x[left], prompt[left], categories=d.values, n_boot=200)
        assert by["left of"][stat] == alone
    assert by["above"]["ac1"].units == 16
    # the scale is the matrix's: a group that never saw the third value still has q = 3 in AC1
    y = np.array([[1, 1], [2, 2], [3, 3], [1, 2]], float)
    g = ["a", "a", "b", "b"]
    assert raters.agreement_by_group(y, g, n_boot=0)["a"]["ac1"].value == pytest.approx(
        raters.gwet_ac1(y[:2], [1, 2, 3]))
    with pytest.raises(WorkstationError, match="3 group names"):
        raters.agreement_by_group(y, g[:3])


def test_population_values_are_the_limit_of_ever_larger_audits() -> None:
    d = bench.Design()
    truth = bench.population_values(d)
    big = bench.Design(prompts=20_000)
    x, _ = bench.draw_audit(big, np.random.default_rng(5))
    for s in d.statistics:
        assert raters.agreement_estimate(s, x, categories=d.values, n_boot=0).value == pytest.approx(truth[s], abs=0.01)


def test_clustered_intervals_cover_the_population_value_in_at_least_90_percent_of_simulated_audits() -> None:
    rows = bench.simulate(audits=120, design=bench.Design(prompts=30), n_boot=300, seed=2, item_bootstrap=False)
    assert {r["statistic"] for r in rows} == set(raters.statistics_for(True))
    low = [(r["statistic"], r["interval"], r["coverage"]) for r in rows if float(r["coverage"]) < 0.90]
    assert not low, low
    assert all(r["audits"] == 120 for r in rows)
