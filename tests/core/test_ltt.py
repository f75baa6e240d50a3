"""Learn then Test (`workstation.evaluation.ltt`) and the spatial method's guaranteed choice
(`workstation.methods.spatial.guarantee`)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_sim import population  # noqa: E402
from workstation.evaluation.ltt import binom_cdf, labels_needed, learn_then_test, ltt_pvalues, min_items  # noqa: E402
from workstation.types import WorkstationError  # noqa: E402


def test_binomial_tail_matches_the_exact_sum() -> None:
    for n in (1, 7, 40, 300):
        for p in (0.01, 0.1, 0.37):
            for k in (0, 1, n // 3, n - 1):
                exact = sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))
                assert binom_cdf(k, n, p) == pytest.approx(exact, rel=1e-10, abs=1e-300)
    assert binom_cdf(-1, 10, 0.2) == 0.0 and binom_cdf(10, 10, 0.2) == 1.0


def test_p_values_and_their_checks() -> None:
    p = ltt_pvalues([0, 50, 50], [0, 0, 10], 0.1)
    assert p[0] == 1.0 and p[1] == pytest.approx(0.9 ** 50) and p[2] > 0.5
    with pytest.raises(WorkstationError):
        ltt_pvalues([5], [6], 0.1)
    with pytest.raises(WorkstationError):
        learn_then_test([5], [1], 0.1, 0.1, method="fixed_sequence")  # no order given


def test_the_fixed_sequence_stops_at_its_first_failure() -> None:
    n = [100, 100, 100, 100]
    k = [0, 2, 12, 0]  # the third fails; the fourth would pass alone but comes after it
    r = learn_then_test(n, k, 0.1, 0.1, order=[0, 1, 2, 3], score=[0.1, 0.2, 0.3, 0.4])
    assert r.rejected.tolist() == [True, True, False, False] and r.chosen == 1
    b = learn_then_test(n, k, 0.1, 0.1, order=[0, 1, 2, 3], score=[0.1, 0.2, 0.3, 0.4], method="bonferroni")
    assert b.rejected.tolist() == [True, True, False, True] and b.chosen == 3  # the largest coverage


def test_too_few_items_to_pass_do_not_stop_the_sequence() -> None:
    assert min_items(0.1, 0.1) == 22  # 0.9^22 < 0.1 < 0.9^21
    r = learn_then_test([5, 100], [0, 1], 0.1, 0.1, order=[0, 1], score=[0.05, 0.5])
    assert r.rejected.tolist() == [False, True] and r.chosen == 1 and r.extra["tested"] == 1


def test_none_qualifies_and_how_many_labels_would_do() -> None:
    r = learn_then_test([40, 60], [2, 3], 0.1, 0.1, order=[0, 1], score=[0.2, 0.3], n_audited=200)
    assert r.chosen is None and r.more_for == 0 and r.more_labels is not None
    more = r.more_labels
    n_new = 40 + more * 40 / 200  # the same share of new labels lands in its covered items
    assert binom_cdf(int(math.floor(0.05 * n_new + 1e-9)), int(round(n_new)), 0.1) <= 0.1
    assert "about" in r.message() and "more audit labels" in r.message()
    # at or above α no number of labels helps
    bad = learn_then_test([40], [8], 0.1, 0.1, order=[0], n_audited=100)
    assert bad.more_labels is None and "at or above" in bad.message()
    assert labels_needed(40, 8, 100, 0.1, 0.1) is None


def test_the_guarantee_holds_in_simulation_and_js_choice_breaks_it_more_often() -> None:
    """Uniform audits of 400 images, 12 thresholds: the chosen threshold's risk over the whole run
    exceeds α in at most δ of the audits (plus simulation noise) — more often for J's choice."""
    from workstation.methods.spatial.calibration import objective, rank_combinations

    alpha, delta, labels = 0.05, 0.1, 400
    taus = np.array([0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.96])
    ltt_bad, j_bad, found = 0, 0, 0
    runs = 200
    for r in range(runs):
        pop = population(5000 + r)
        rng = np.random.default_rng(r)
        audit = np.zeros(pop.n, bool)
        audit[rng.choice(pop.n, labels, replace=False)] = True
        hv = np.where(pop.human == 1, 0, np.where(pop.human == 0, 1, 2))
        dh = pop.human < 2
        real, n, k, fpr, risk, cov_a, cov_all = (np.empty(len(taus)) for _ in range(7))
        for i, t in enumerate(taus):
            c = (pop.verdict < 2) & (pop.conf >= t)
            wrong = c & dh & (pop.verdict != hv)
            real[i] = wrong.sum() / max((c & dh).sum(), 1)
            n[i], k[i] = (c & audit & dh).sum(), (wrong & audit).sum()
            passes = c & audit & (pop.verdict == 0)
            fpr[i] = (passes & (pop.human == 0)).sum() / passes.sum() if passes.sum() else 1.0
            risk[i] = k[i] / n[i] if n[i] else 0.0
            cov_a[i], cov_all[i] = (c & audit).sum() / labels, c.mean()
        j_pick = int(rank_combinations(objective(fpr, risk, cov_a), cov_a)[0])
        j_bad += real[j_pick] > alpha
        res = learn_then_test(n.astype(int), k.astype(int), alpha, delta, order=np.argsort(cov_all, kind="stable"),
                              score=cov_all)
        if res.chosen is not None:
            found += 1
            ltt_bad += real[res.chosen] > alpha
    assert ltt_bad / runs <= delta + 0.03
    assert j_bad > ltt_bad
    assert found >= 0.3 * runs  # it does choose, not only abstain


def test_the_spatial_comparison_finds_js_choice_and_a_guaranteed_one(sbuc_parsed) -> None:  # type: ignore[no-untyped-def]
    from workstation.methods.spatial.calibration import grid_search
    from workstation.methods.spatial.guarantee import compare

    ds = sbuc_parsed.dataset
    rng = np.random.default_rng(7)
    rows = rng.choice(ds.n, 300, replace=False)
    rec = sbuc_parsed.recorded.verdict[rows].astype(int)
    human = np.full(ds.n, -1)
    human[rows] = np.where(rng.random(300) < 0.08, rng.integers(0, 3, 300), rec)
    c = compare(ds, sbuc_parsed.config, human, alpha=0.1, delta=0.1)
    g = grid_search(ds, sbuc_parsed.config, human)
    assert {p: c.j_choice[p] for p in g.params} == {p: g.best[p] for p in g.params}
    assert c.j_choice["j"] == pytest.approx(g.best["j"])
    assert len(c.rows) == 36 and c.n_audited == 300
    chosen = c.guaranteed
    assert chosen is not None and chosen["qualifies"] and chosen["p_value"] <= 0.1
    # the fixed sequence: everything before the chosen configuration (by coverage) qualified too
    cov = np.array([r["coverage_all"] for r in c.rows])
    before = [r for r in c.rows if r["coverage_all"] < chosen["coverage_all"] and r["n"] >= 22]
    assert all(r["qualifies"] for r in before)
    assert "risk ≤ 0.1 with probability ≥ 0.9" in c.message()
    strict = compare(ds, sbuc_parsed.config, human, alpha=0.001, delta=0.05)
    assert strict.guaranteed is None and "none qualifies" in strict.message()
    assert cov.max() <= 1.0
