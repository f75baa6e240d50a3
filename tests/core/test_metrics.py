"""Metrics: per image, by relation, best-of-K / all-of-K, counterfactual pairs, abstention."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workstation.methods.spatial.checker import VerdictArrays
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Detections, Samples
from workstation.methods.spatial.metrics import (
    COUNTERFACTUAL_COLUMNS,
    MAIN_RESULTS_COLUMNS,
    PROMPT_METRICS_COLUMNS,
    counterfactual,
    image_metrics,
    prompt_verdicts,
    summarize,
)
from workstation.evaluation.intervals import wilson_interval
from workstation.methods.spatial.types import FAIL, PASS, REASON_CODE, UNDECIDABLE
from workstation.methods.spatial.data import spatial_columns, spatial_prompts

P, F, U = PASS, FAIL, UNDECIDABLE


def build(rows: list[tuple[str, str, str, int, str]], prompts: list[tuple[str, str, str]]
          ) -> tuple[Dataset, VerdictArrays]:
    """rows: (run, prompt_id, relation, verdict, reason); prompts: (prompt_id, relation, twin)."""
    n = len(rows)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    samples = Samples(
        sample_id=o([f"s{i}" for i in range(n)]), run_id=o([r[0] for r in rows]),
        prompt_id=o([r[1] for r in rows]), seed=np.arange(n, dtype=np.int64), width=np.full(n, 100.0),
        height=np.full(n, 100.0), image_path=o([""] * n),
        has_secondary=np.zeros(n, bool), has_perturbed=np.zeros(n, bool))
    pr = spatial_prompts([p[0] for p in prompts], [""] * len(prompts), [p[1] for p in prompts],
                         ["dog"] * len(prompts), ["cat"] * len(prompts), counterfactual_id=[p[2] for p in prompts],
                         suite="t")
    ds = Dataset(samples, Detections.empty(), pr)
    verdict = np.array([r[3] for r in rows], np.int8)
    reason = np.array([REASON_CODE[r[4]] for r in rows], np.int8)
    conf = np.where(verdict == U, 0.0, 0.8)
    z = np.zeros(n)
    neg = np.full(n, -1, np.int64)
    v = VerdictArrays(verdict, reason, np.zeros(n, np.int8), conf, z, z, z, z, z, z, neg, neg, neg, neg,
                      spatial_columns(ds).label_a, spatial_columns(ds).label_b, CheckerConfig())
    return ds, v


def test_image_metrics_and_zero_decided_is_nan():
    m = image_metrics(np.array([P, P, F, U], np.int8), np.array([0.9, 0.7, 0.5, 0.0]))
    assert (m["pass_count"], m["fail_count"], m["undecidable_count"]) == (2, 1, 1)
    assert m["pass_rate"] == 0.5 and m["coverage"] == 0.75
    assert m["pass_rate_cond"] == pytest.approx(2 / 3) and m["mean_conf"] == pytest.approx(0.525)
    m = image_metrics(np.array([U, U], np.int8), np.array([0.0, 0.0]))
    assert m["coverage"] == 0.0 and m["pass_rate"] == 0.0 and math.isnan(m["pass_rate_cond"])


PROMPTS = [("p1", "left_of", "p2"), ("p2", "right_of", "p1"),
           ("p3", "above", "p4"), ("p4", "below", "p3"),
           ("p5", "left_of", "p6"), ("p6", "right_of", "p5"),
           ("p7", "above", "p8"), ("p8", "below", "p7")]


def test_best_of_k_and_all_of_k():
    rows = [
        ("r", "p1", "left_of", P, ""), ("r", "p1", "left_of", P, ""), ("r", "p1", "left_of", P, ""),
        ("r", "p2", "right_of", P, ""), ("r", "p2", "right_of", U, "missing"),
        ("r", "p2", "right_of", F, ""),
        ("r", "p3", "above", F, ""), ("r", "p3", "above", F, ""), ("r", "p3", "above", F, ""),
        ("r", "p4", "below", U, "ambiguous"), ("r", "p4", "below", F, ""), ("r", "p4", "below", U, "missing"),
        # p5 has only 2 of the 3 seeds
        ("r", "p5", "left_of", P, ""), ("r", "p5", "left_of", P, ""),
    ]
    ds, v = build(rows, PROMPTS)
    pv = prompt_verdicts(ds, v)
    assert pv.k == {"r": 3}
    got = {p: (int(b), int(a)) for p, b, a in zip(pv.prompt_id, pv.best_of_k, pv.all_of_k)}
    assert got == {"p1": (P, P), "p2": (P, F), "p3": (F, F), "p4": (U, F), "p5": (P, U)}
    s = summarize(ds, v)
    (pm,) = s.prompt_metrics
    assert pm["total_prompts"] == 5
    assert pm["best_of_k_pass_rate"] == 3 / 5 and pm["all_of_k_pass_rate"] == 1 / 5
    assert s.main_results[0]["prompt_pass_rate"] == 3 / 5
    # an explicit K of 2: p5 now has all its K samples
    pv2 = prompt_verdicts(ds, v, k=2)
    assert dict(zip(pv2.prompt_id, pv2.all_of_k.tolist()))["p5"] == P
    with pytest.raises(ValueError):
        prompt_verdicts(ds, v, k=0)


def test_fewer_seeds_than_four():
    # a run with two seeds per prompt: K = 2, every prompt complete
    rows = [("r", "p1", "left_of", P, ""), ("r", "p1", "left_of", P, ""),
            ("r", "p2", "right_of", P, ""), ("r", "p2", "right_of", F, "")]
    ds, v = build(rows, PROMPTS)
    (pm,) = summarize(ds, v).prompt_metrics
    assert pm["k"] == 2 and pm["all_of_k_pass_rate"] == 0.5 and pm["best_of_k_pass_rate"] == 1.0
    # forcing K = 4 makes every prompt UNDECIDABLE for all-of-K
    (pm,) = summarize(ds, v, k=4).prompt_metrics
    assert pm["all_of_k_pass_rate"] == 0.0 and pm["all_of_k_undecidable"] == 2


def test_counterfactual_categories_each_pair_once():
    rows = [
        ("r", "p1", "left_of", P, ""), ("r", "p2", "right_of", P, ""),  # both_pass
        ("r", "p3", "above", F, ""), ("r", "p4", "below", F, ""),  # both_fail
        ("r", "p5", "left_of", P, ""), ("r", "p6", "right_of", F, ""),  # one_sided
        ("r", "p7", "above", P, ""), ("r", "p8", "below", U, "missing"),  # undecidable
    ]
    ds, v = build(rows, PROMPTS)
    (cf,) = counterfactual(ds, v)
    assert cf["pairs"] == 4
    assert (cf["both_pass"], cf["both_fail"], cf["one_sided"], cf["undecidable_count"]) == (1, 1, 1, 1)
    assert cf["both_pass_rate"] == 0.25 and cf["undecidable_rate"] == 0.25
    # a twin without samples in the run forms no pair; no pairs -> NaN rates
    ds, v = build(rows[:1], PROMPTS)
    (cf,) = counterfactual(ds, v)
    assert cf["pairs"] == 0 and math.isnan(cf["both_pass_rate"])


def test_grouped_by_run_with_relation_and_abstention_tables():
    rows = [("a", "p1", "left_of", P, ""), ("a", "p1", "left_of", U, "near_boundary"),
            ("a", "p3", "above", F, ""), ("a", "p3", "above", U, "missing"),
            ("b", "p1", "left_of", U, "unstable"), ("b", "p1", "left_of", U, "unstable")]
    ds, v = build(rows, PROMPTS)
    s = summarize(ds, v)
    assert [r["run"] for r in s.main_results] == ["a", "b"]
    a, b = s.main_results
    assert a["pass_rate"] == 0.25 and a["coverage"] == 0.5 and a["pass_rate_cond"] == 0.5
    assert b["coverage"] == 0.0 and math.isnan(b["pass_rate_cond"]) and b["mean_conf"] == 0.0
    assert {k: x for k, x in s.by_relation[0].items() if not k.endswith(("_lo", "_hi"))} == \
        {"run": "a", "above_pass_rate": 0.0, "left_of_pass_rate": 0.5}
    # one prompt behind each relation: every resample agrees, so the bounds are Wilson's over that
    # one prompt, not a zero-width interval
    assert (s.by_relation[0]["above_pass_rate_lo"], s.by_relation[0]["above_pass_rate_hi"]) == \
        pytest.approx(wilson_interval(0, 1))
    assert (s.by_relation[0]["left_of_pass_rate_lo"], s.by_relation[0]["left_of_pass_rate_hi"]) == \
        pytest.approx(wilson_interval(0.5, 1))
    assert s.by_relation[1]["left_of_pass_rate"] == 0.0 and math.isnan(s.by_relation[1]["above_pass_rate"])
    ab = {(r["run"], r["reason"]): r for r in s.abstention}
    assert ab[("a", "near_boundary")]["count"] == 1 and ab[("a", "near_boundary")]["percent"] == 25.0
    assert ab[("a", "missing")]["share_of_undecidable"] == 0.5
    assert ab[("b", "unstable")]["count"] == 2 and ab[("b", "unstable")]["rate"] == 1.0
    assert ab[("b", "ambiguous")]["count"] == 0
    # every published column is present in every row
    for rows_, cols in ((s.main_results, MAIN_RESULTS_COLUMNS), (s.counterfactual, COUNTERFACTUAL_COLUMNS),
                        (s.prompt_metrics, PROMPT_METRICS_COLUMNS)):
        for r in rows_:
            assert list(r)[:len(cols)] == list(cols)
    assert len(s.prompts) == 3 and s.k == {"a": 2, "b": 2}



TOTALS_ROWS = [("a", "p1", "left_of", P, ""), ("a", "p1", "left_of", P, ""), ("a", "p3", "above", F, ""),
               ("a", "p3", "above", U, "missing"), ("b", "p1", "left_of", U, "unstable"),
               ("b", "p1", "left_of", P, ""), ("b", "p3", "above", F, ""), ("b", "p3", "above", F, "")]


def test_prompt_pass_totals_are_the_sums_of_the_per_run_tables():
    """The calibration panel's headline totals (no per-prompt tables built on a slider move) are
    the sums over runs of prompt_metrics' counts."""
    from workstation.methods.spatial.metrics import prompt_metrics, prompt_pass_totals

    ds, v = build(TOTALS_ROWS, PROMPTS)
    for k in (None, 1, 2, 3):
        pm = prompt_metrics(ds, v, k)
        want = (sum(r["total_prompts"] for r in pm), sum(r["best_of_k_pass"] for r in pm),
                sum(r["all_of_k_pass"] for r in pm))
        assert prompt_pass_totals(ds, v, k) == want
    assert want[0] == 4 and want[1] == 2  # (k = 3: no prompt has three seeds, so all-of-K passes none)


def test_the_totals_a_slider_move_recounts_follow_every_change_of_verdict_and_reason():
    """`verdict_totals` updates the previous call's counts from the samples that changed; after
    any sequence of changes (a few samples, many, back and forth, another K) its prompt totals
    equal `prompt_metrics`' sums and its (verdict, reason) counts a count over every sample."""
    from dataclasses import replace

    from workstation.methods.spatial.metrics import prompt_metrics, verdict_totals
    from workstation.methods.spatial.types import REASONS

    rng = np.random.default_rng(3)
    runs, prompts = ["a", "b", "c"], [f"p{i}" for i in range(40)]
    rows = [(r, p, "left_of", P, "") for r in runs for p in prompts for _ in range(int(rng.integers(1, 5)))]
    rows += [("d", "p0", "left_of", P, "")]  # a run of one prompt, one seed
    ds, v = build(rows, [(p, "left_of", "") for p in prompts])
    n = ds.n
    reasons_of = {P: [0], F: [0], U: list(range(1, len(REASONS)))}

    def with_changes(v, rows_changed):
        verdict, reason = v.verdict.copy(), v.reason.copy()
        for i in rows_changed:
            verdict[i] = rng.choice([P, F, U])
            reason[i] = rng.choice(reasons_of[int(verdict[i])])
        return replace(v, verdict=verdict, reason=reason)

    for step, (k, count) in enumerate([(None, 0), (None, 3), (None, 1), (None, 40), (2, 5), (2, n), (2, 2),
                                       (None, 10), (None, n // 3), (None, 1)]):
        v = with_changes(v, rng.choice(n, count, replace=False) if count else [])
        got = verdict_totals(ds, v, k)
        pm = prompt_metrics(ds, v, k)
        assert got[:3] == (sum(r["total_prompts"] for r in pm), sum(r["best_of_k_pass"] for r in pm),
                           sum(r["all_of_k_pass"] for r in pm)), step
        want = np.zeros((3, len(REASONS)), np.int64)
        np.add.at(want, (v.verdict.astype(np.intp), v.reason.astype(np.intp)), 1)
        assert np.array_equal(got[3], want), step
    assert 0 < got[1] < got[0]  # some prompts pass best-of-K, not all
    # a bad code in a changed sample is refused and leaves the kept counts as they were
    bad = replace(v, verdict=np.where(np.arange(n) == 5, np.int8(7), v.verdict).astype(np.int8))
    with pytest.raises(ValueError, match="verdict codes"):
        verdict_totals(ds, bad, None)
    again = verdict_totals(ds, v, None)
    assert again[:3] == got[:3] and np.array_equal(again[3], got[3])
