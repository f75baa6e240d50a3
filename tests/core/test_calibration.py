"""Calibration: risk–coverage, objective, grid search (against definitions written out by hand)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from workstation.methods.spatial import calibration as cal
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Samples
from workstation.methods.spatial.types import FAIL, PASS, UNDECIDABLE
from workstation.types import WorkstationError
from workstation.methods.spatial.data import recorded_stability, spatial_dataset

P, F, U = PASS, FAIL, UNDECIDABLE


# ---- risk–coverage on hand-made cases --------------------------------------------------------


def test_risk_coverage_hand_made_case_with_ties_and_human_undecidable():
    checker = [P, P, F, F, U]
    conf = [0.9, 0.6, 0.6, 0.3, 0.8]
    human = [P, F, F, U, P]
    rc = cal.risk_coverage(checker, conf, human)
    # unique confidences of decided samples plus the end points 0 and 1
    assert rc.tau.tolist() == [0.0, 0.3, 0.6, 0.9, 1.0]
    assert rc.n_covered.tolist() == [4, 4, 3, 1, 0]
    assert rc.coverage.tolist() == pytest.approx([0.8, 0.8, 0.6, 0.2, 0.0])
    # the human-UNDECIDABLE sample (conf 0.3) is covered but not in the accuracy denominator
    assert rc.n_evaluated.tolist() == [3, 3, 3, 1, 0]
    assert rc.accuracy.tolist() == pytest.approx([2 / 3, 2 / 3, 2 / 3, 1.0, 1.0])
    assert rc.risk.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.0, 0.0])  # coverage 0 -> risk 0
    # checker PASS covered: {0.9 P, 0.6 F} -> 1/2, then {0.9 P} -> 0, then none -> undefined
    assert rc.fpr_pass[:4].tolist() == pytest.approx([0.5, 0.5, 0.5, 0.0]) and np.isnan(rc.fpr_pass[4])
    assert rc.n_pass_covered.tolist() == [2, 2, 2, 1, 0]


def test_risk_coverage_on_a_given_grid_and_verdict_names():
    rc = cal.risk_coverage(["PASS", "FAIL", "UNDECIDABLE"], [0.5, 0.7, 0.9], ["FAIL", "FAIL", "PASS"],
                           taus=[0.0, 0.6, 0.95])
    assert rc.n_covered.tolist() == [2, 1, 0]
    assert rc.coverage.tolist() == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert rc.risk.tolist() == pytest.approx([0.5, 0.0, 0.0])


def test_covered_samples_all_human_undecidable_have_an_undefined_risk_that_j_counts_as_one():
    rc = cal.risk_coverage([P, F], [0.9, 0.8], [U, U], taus=[0.5])
    assert rc.n_covered[0] == 2 and rc.n_evaluated[0] == 0
    assert np.isnan(rc.accuracy[0]) and np.isnan(rc.risk[0])  # shown as "—", not as risk 1.0
    assert rc.rows()[0]["n_evaluated"] == 0
    # the objective keeps the published convention: undefined risk and FPR_PASS count as 1
    assert rc.fpr_pass[0] == 0.0  # the covered PASS is human UNDECIDABLE: labelled, not an error
    assert rc.objective()[0] == pytest.approx(10 * 0.0 + 2 * 1.0 + 0.5 * 0.0)
    assert cal.objective(np.nan, np.nan, 0.5)[()] == pytest.approx(10 + 2 + 0.25)


def test_fpr_pass_is_undefined_when_no_pass_is_covered():
    rc = cal.risk_coverage([F, F, P], [0.9, 0.8, 0.2], [F, P, F], taus=[0.5, 0.1])
    assert np.isnan(rc.fpr_pass[0]) and rc.n_pass_covered[0] == 0
    assert rc.fpr_pass[1] == 1.0  # at 0.1 the only PASS is human FAIL
    rc = cal.risk_coverage([F, P], [0.9, 0.8], [F, U], taus=[0.5])
    assert rc.fpr_pass[0] == 0.0  # a human-UNDECIDABLE PASS is in the denominator, not an error


def test_risk_coverage_empty_and_length_mismatch():
    rc = cal.risk_coverage([], [], [])
    assert rc.coverage.tolist() == [0.0, 0.0] and rc.risk.tolist() == [0.0, 0.0]
    with pytest.raises(WorkstationError, match="differ in length"):
        cal.risk_coverage([P], [0.5, 0.4], [P])
    with pytest.raises(WorkstationError, match="unknown verdict"):
        cal.risk_coverage(["MAYBE"], [0.5], ["PASS"])


def test_objective_terms_and_weights():
    j = cal.objective(0.5, 1 / 3, 0.6)
    assert j == pytest.approx(10 * 0.5 + 2 / 3 + 0.5 * 0.4)
    w = cal.Weights(fpr_pass=1.0, risk=0.0, coverage=0.0)
    assert cal.objective(np.array([0.2, 1.0]), 0.9, 0.1, w).tolist() == pytest.approx([0.2, 1.0])
    with pytest.raises(WorkstationError):
        cal.Weights(risk=-1.0)


def test_apply_tau():
    v = cal.apply_tau(np.array([P, F, U, P]), np.array([0.9, 0.2, 0.9, 0.5]), 0.5)
    assert v.tolist() == [P, U, U, P]


def test_rank_tie_break_is_lowest_j_then_coverage_then_grid_order():
    j = np.array([1.0, 0.5, 0.5, 0.5 + 1e-15, 0.7])
    cov = np.array([0.9, 0.2, 0.4, 0.4, 0.1])
    assert cal.rank_combinations(j, cov).tolist() == [2, 3, 1, 4, 0]


# ---- grid search with a stand-in checker ------------------------------------------------------
# The stand-in decides left_of from a per-sample delta (kept as its recorded stability) and a
# detection score (kept in width): missing below t_det, near_boundary within the margin.


@dataclass
class V:
    verdict: np.ndarray
    conf: np.ndarray


def stand_in_evaluate(ds: Dataset, cfg: CheckerConfig) -> V:
    d = recorded_stability(ds)
    score = ds.samples.width / 1000.0
    verdict = np.where(d < -cfg.margin, P, np.where(d > cfg.margin, F, U))
    verdict = np.where(score < cfg.t_det, U, verdict)
    conf = np.sqrt(score) * np.clip((np.abs(d) - cfg.margin) / 0.15, 0, 1)
    conf = np.where(score < cfg.t_det, 0.0, conf)
    return V(verdict.astype(np.int8), conf)


def make_dataset(delta: np.ndarray, score: np.ndarray) -> Dataset:
    n = len(delta)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    s = Samples(
        sample_id=o([f"s{i}" for i in range(n)]), run_id=o(["r"] * n), prompt_id=o([f"p{i}" for i in range(n)]),
        seed=np.zeros(n, np.int64),
        width=np.asarray(score, float) * 1000.0, height=np.full(n, 512.0), image_path=o([""] * n),
        has_secondary=np.zeros(n, bool), has_perturbed=np.zeros(n, bool),
    )
    return spatial_dataset(s, np.zeros(n, np.int8), ["a"] * n, ["b"] * n,
                           recorded_stability=np.asarray(delta, float))


def brute_force(ds: Dataset, human: np.ndarray, grids: dict[str, list[float]], evaluate: Any,
                w: cal.Weights = cal.Weights(), base: CheckerConfig = CheckerConfig()) -> list[dict[str, Any]]:
    """Every (params, tau) combination separately, with plain loops over the samples."""
    import itertools

    rows_audited = [i for i in range(ds.n) if human[i] in (P, F, U)]
    sub = ds.subset(np.array(rows_audited))
    names = [k for k in grids if k != "tau"]
    out = []
    for combo in itertools.product(*[grids[k] for k in names]):
        cfg = base.replace(**dict(zip(names, combo)))
        v = evaluate(sub, cfg)
        for tau in grids["tau"]:
            covered = [i for i in range(sub.n) if v.verdict[i] in (P, F) and v.conf[i] >= tau]
            hv = [human[rows_audited[i]] for i in covered]
            decided = [(v.verdict[i], h) for i, h in zip(covered, hv) if h in (P, F)]
            if not covered:
                risk = 0.0
            else:
                acc = sum(c == h for c, h in decided) / len(decided) if decided else float("nan")
                risk = 1.0 - acc
            passes = [h for i, h in zip(covered, hv) if v.verdict[i] == P]
            fpr = sum(h == F for h in passes) / len(passes) if passes else float("nan")
            cov = len(covered) / sub.n
            # J: an undefined FPR_PASS or risk counts as 1 (METHODS.md's convention)
            j = (w.fpr_pass * (1.0 if fpr != fpr else fpr) + w.risk * (1.0 if risk != risk else risk)
                 + w.coverage * (1.0 - cov))
            out.append({**dict(zip(names, combo)), "tau": tau, "j": j, "fpr_pass": fpr, "risk": risk,
                        "coverage": cov, "n_covered": len(covered)})
    return out


def test_grid_search_picks_the_known_best():
    rng = np.random.default_rng(0)
    delta = rng.uniform(-0.5, 0.5, 400)
    score = np.full(400, 0.9)
    # humans see PASS only left of -0.05 and FAIL elsewhere; a margin below 0.05 lets false
    # PASS through, a wider one loses coverage
    human = np.where(delta < -0.05, P, F)
    grids = {"margin": [0.03, 0.05, 0.07, 0.10], "tau": [0.0, 0.3]}
    res = cal.grid_search(make_dataset(delta, score), CheckerConfig(), human, grids, evaluator=stand_in_evaluate)
    assert res.best["margin"] == 0.05 and res.best["tau"] == 0.0
    assert res.best["fpr_pass"] == 0.0 and res.best["risk"] == 0.0
    assert len(res) == 8 and res.params == ("margin", "tau")
    assert res.best_config().margin == 0.05 and res.best_config().tau == 0.0
    table = res.table()
    assert [r["rank"] for r in table] == list(range(1, 9))
    assert all(table[i]["j"] <= table[i + 1]["j"] for i in range(7))


def test_grid_search_matches_brute_force_on_random_data():
    rng = np.random.default_rng(1)
    n = 300
    delta = rng.uniform(-0.4, 0.4, n)
    score = rng.uniform(0.1, 1.0, n)
    human = rng.choice([P, F, U, -1], n, p=[0.4, 0.3, 0.2, 0.1])
    grids = {"margin": [0.02, 0.05, 0.1], "t_det": [0.2, 0.3, 0.5], "tau": [0.0, 0.1, 0.25, 0.5, 0.9]}
    ds = make_dataset(delta, score)
    res = cal.grid_search(ds, CheckerConfig(), human, grids, evaluator=stand_in_evaluate)
    ref = brute_force(ds, human, grids, stand_in_evaluate)
    got = res.table(ranked=False)
    assert len(got) == len(ref) == 45
    assert res.n_audited == int(np.sum(human >= 0))
    for g, r in zip(got, ref):
        for k in ("margin", "t_det", "tau", "n_covered"):
            assert g[k] == r[k]
        for k in ("j", "fpr_pass", "risk", "coverage"):
            assert g[k] == pytest.approx(r[k], abs=1e-12, nan_ok=True)
    best = min(range(len(ref)), key=lambda i: (round(ref[i]["j"], 12), -ref[i]["coverage"], i))
    assert res.best_index == best


def test_grid_search_progress_cancel_and_errors():
    rng = np.random.default_rng(2)
    ds = make_dataset(rng.uniform(-0.3, 0.3, 50), np.full(50, 0.8))
    human = np.full(50, P)
    seen: list[tuple[int, int]] = []
    cal.grid_search(ds, CheckerConfig(), human, {"margin": [0.05, 0.1], "t_det": [0.2, 0.3], "tau": [0.5]},
                    progress=lambda d, t: seen.append((d, t)), evaluator=stand_in_evaluate)
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    calls = []
    with pytest.raises(cal.GridSearchCancelled, match="after 1 of 4"):
        cal.grid_search(ds, CheckerConfig(), human, {"margin": [0.05, 0.1], "t_det": [0.2, 0.3]},
                        cancel=lambda: len(calls) > 0,
                        evaluator=lambda d, c: calls.append(c) or stand_in_evaluate(d, c))
    # the generator form yields progress and returns the result
    gen = cal.iter_grid_search(ds, CheckerConfig(), human, {"margin": [0.05], "tau": [0.1, 0.2]},
                               evaluator=stand_in_evaluate)
    steps = []
    try:
        while True:
            steps.append(next(gen))
    except StopIteration as stop:
        result = stop.value
    assert steps == [(0, 1), (1, 1)] and len(result) == 2
    with pytest.raises(WorkstationError, match="unknown calibration parameter 'marginn'"):
        cal.grid_search(ds, CheckerConfig(), human, {"marginn": [0.1]}, evaluator=stand_in_evaluate)
    with pytest.raises(WorkstationError, match="no values"):
        cal.grid_search(ds, CheckerConfig(), human, {"margin": []}, evaluator=stand_in_evaluate)
    with pytest.raises(WorkstationError, match="t_det must be in"):
        cal.grid_search(ds, CheckerConfig(), human, {"t_det": [1.5]}, evaluator=stand_in_evaluate)
    with pytest.raises(WorkstationError, match="needs human labels"):
        cal.grid_search(ds, CheckerConfig(), np.full(50, -1), {"margin": [0.1]}, evaluator=stand_in_evaluate)
    with pytest.raises(WorkstationError, match="entries but the dataset has"):
        cal.grid_search(ds, CheckerConfig(), np.full(3, P), {"margin": [0.1]}, evaluator=stand_in_evaluate)


def test_grid_search_accepts_labels_by_sample_id_and_uses_base_tau():
    ds = make_dataset(np.array([-0.3, 0.3, -0.3, 0.0]), np.full(4, 0.9))
    res = cal.grid_search(ds, CheckerConfig(tau=0.0), {"s0": "PASS", "s1": "FAIL", "s3": "UNDECIDABLE"},
                          {"margin": [0.1]}, evaluator=stand_in_evaluate)
    assert res.n_audited == 3 and res.params == ("margin",)
    assert res.best["coverage"] == pytest.approx(2 / 3) and res.best["risk"] == 0.0


# ---- with the real checker on the published SpatialBench-UC run ----------------------------


def test_paper_grid_with_the_checker_matches_brute_force(sbuc_parsed):
    from workstation.methods.spatial import audit, checker

    ds, cfg = sbuc_parsed.dataset, sbuc_parsed.config
    v = checker.evaluate(ds, cfg)
    rows = audit.stratified_sample(ds, v, 200, seed=11)
    rng = np.random.default_rng(11)
    human = np.full(ds.n, -1)
    human[rows] = v.verdict[rows]  # humans mostly agree with the checker ...
    flip = rows[rng.random(len(rows)) < 0.2]
    human[flip] = rng.choice([P, F, U], len(flip))  # ... but not always
    res = cal.grid_search(ds, cfg, human, cal.PAPER_GRID)
    assert len(res) == 4 * 3 * 3 and res.n_audited == 200
    ref = brute_force(ds, human, {k: list(vals) for k, vals in cal.PAPER_GRID.items()}, checker.evaluate,
                      base=cfg)
    for g, r in zip(res.table(ranked=False), ref):
        assert (g["margin"], g["t_det"], g["tau"], g["n_covered"]) == (r["margin"], r["t_det"], r["tau"], r["n_covered"])
        for k in ("j", "fpr_pass", "risk", "coverage"):
            assert g[k] == pytest.approx(r[k], abs=1e-12, nan_ok=True)
    best = min(range(len(ref)), key=lambda i: (round(ref[i]["j"], 12), -ref[i]["coverage"], i))
    assert res.best_index == best
    # the selected config evaluates to the reported operating point
    bc = res.best_config()
    vb = checker.evaluate(ds.subset(rows), bc)
    rc = cal.risk_coverage(vb.verdict, vb.conf, human[rows], taus=[bc.tau])
    assert rc.coverage[0] == pytest.approx(res.best["coverage"]) and rc.risk[0] == pytest.approx(res.best["risk"])


# ---- the operating point and the risk band ------------------------------------------------------------
def test_operating_point_and_risk_band_resample_prompts_and_say_what_is_undefined():
    from workstation.evaluation.intervals import wilson_interval

    rng = np.random.default_rng(5)
    n_prompts, k = 40, 4
    prompt = np.repeat(np.arange(n_prompts), k)
    checker = rng.choice([P, F, U], n_prompts * k, p=[0.5, 0.3, 0.2])
    conf = rng.random(n_prompts * k)
    wrong_prompt = rng.random(n_prompts) < 0.25  # the checker errs on a quarter of the prompts, on all their seeds
    human = np.where(wrong_prompt[prompt], np.where(checker == P, F, P), checker)
    human[::17] = U
    op = cal.operating_point(checker, conf, human, prompt, 0.3)
    rc = cal.risk_coverage(checker, conf, human, taus=[0.3])
    assert op["coverage"].value == pytest.approx(rc.coverage[0]) and op["risk"].value == pytest.approx(rc.risk[0])
    assert op["fpr_pass"].value == pytest.approx(rc.fpr_pass[0]) and op["accuracy"].value == pytest.approx(rc.accuracy[0])
    assert op["risk"].n == rc.n_evaluated[0] and op["risk"].units <= n_prompts
    assert op["risk"].method == "cluster bootstrap" and op["risk"].lo < op["risk"].value < op["risk"].hi
    lo, hi = cal.risk_band(checker, conf, human, prompt, [0.0, 0.3, 0.6])
    assert (lo[1], hi[1]) == pytest.approx((op["risk"].lo, op["risk"].hi))  # one interval, two callers
    naive = cal.risk_band(checker, conf, human, None, [0.3])
    assert hi[1] - lo[1] > naive[1][0] - naive[0][0]  # prompts, not samples, are the units
    # nothing covered: risk 0 by convention, accuracy 1, no interval; undefined: NaN, n 0
    none = cal.operating_point(checker, conf, human, prompt, 1.1)
    assert (none["risk"].value, none["accuracy"].value, none["coverage"].value) == (0.0, 1.0, 0.0)
    assert not none["risk"].has_interval
    und = cal.operating_point([P, F], [0.9, 0.8], [U, U], ["a", "b"], 0.5)
    assert np.isnan(und["risk"].value) and und["risk"].n == 0 and not und["risk"].has_interval
    b_lo, b_hi = cal.risk_band([P, F], [0.9, 0.8], [U, U], ["a", "b"], [0.5, 0.95])
    assert np.isnan(b_lo[0]) and (b_lo[1], b_hi[1]) == (0.0, 0.0)  # 0.95 covers nothing: the convention
    # no error among the covered: every resample says 0, and the band is Wilson's over the prompts
    good = cal.risk_band([P] * 8, [0.9] * 8, [P] * 8, np.repeat([1, 2, 3, 4], 2), [0.5])
    assert (good[0][0], good[1][0]) == pytest.approx(wilson_interval(0, 4))
    with pytest.raises(WorkstationError, match="prompt ids"):
        cal.operating_point([P], [0.5], [P], ["a", "b"], 0.1)


def test_grid_search_reports_the_figure_it_optimised_with_its_interval_and_its_ties():
    """The best J with its cluster-bootstrap interval (recomputed over the prompts by
    hand here) and, when first place is tied, by what it was decided."""
    rng = np.random.default_rng(1)
    n = 300
    delta = rng.uniform(-0.4, 0.4, n)
    score = rng.uniform(0.1, 1.0, n)
    human = rng.choice([P, F, U, -1], n, p=[0.4, 0.3, 0.2, 0.1])
    grids = {"margin": [0.02, 0.05, 0.1], "t_det": [0.2, 0.3, 0.5], "tau": [0.0, 0.1, 0.25, 0.5, 0.9]}
    ds = make_dataset(delta, score)
    res = cal.grid_search(ds, CheckerConfig(), human, grids, evaluator=stand_in_evaluate)
    b = res.best_j
    assert b.value == pytest.approx(float(res.j[res.best_index]), abs=1e-12)
    # by hand: prompts resampled (one sample per prompt here), J recomputed as brute_force does
    rows = np.flatnonzero(human >= 0)
    sub = ds.subset(rows)
    v = stand_in_evaluate(sub, res.best_config())
    tau = res.best["tau"]
    from workstation.evaluation.intervals import bootstrap_weights

    boots = []
    prompts = np.asarray(sub.samples.prompt_id, dtype=object)
    draws = [w for block in bootstrap_weights(prompts, len(rows), 2000, 0) for w in block]
    assert len(draws) == 2000
    for w in draws:  # the same resamples of the prompts; J from the samples they draw
        pick = np.repeat(np.arange(len(rows)), w.astype(np.int64))
        vv, cc, hh = v.verdict[pick], v.conf[pick], human[rows][pick]
        cov = ((vv == P) | (vv == F)) & (cc >= tau)
        dec = cov & ((hh == P) | (hh == F))
        risk = 0.0 if not cov.any() else (1.0 - ((vv == hh) & dec).sum() / dec.sum()) if dec.any() else np.nan
        pas = cov & (vv == P) & (hh >= 0)
        fpr = ((pas & (hh == F)).sum() / pas.sum()) if pas.any() else np.nan
        boots.append(10 * (1.0 if fpr != fpr else fpr) + 2 * (1.0 if risk != risk else risk) + 0.5 * (1 - cov.mean()))
    from workstation.evaluation.intervals import expanded_alpha

    a = expanded_alpha(0.95, len(rows))
    assert (b.lo, b.hi) == pytest.approx(tuple(np.quantile(boots, [a, 1 - a])), abs=1e-9)
    assert b.lo <= b.value <= b.hi and b.units == len(rows)
    text = res.optimised_text()
    assert text.startswith(f"minimised J = 10·FPR_PASS + 2·risk + 0.5·(1 − coverage): best J {b.value:.4f} [")
    # every combination alike: first place is tied, decided by grid order
    flat = cal.grid_search(ds, CheckerConfig(), human, {"margin": [0.02, 0.05], "tau": [0.0]},
                           evaluator=lambda s, c: stand_in_evaluate(s, CheckerConfig()))
    assert flat.tied_first == 1 and flat.best_index == 0
    assert flat.optimised_text().endswith("first place is tied on J with 1 other combination, chosen by grid order")
    assert res.tied_first == int((np.round(res.j, cal.J_DECIMALS) == np.round(res.j[res.best_index],
                                                                               cal.J_DECIMALS)).sum()) - 1
