"""Audit: stratified sampling, label bookkeeping, confusion and agreement."""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np
import pytest

from workstation.evaluation import agreement
from workstation.methods.spatial import audit
from workstation.dataset import Dataset, Samples
from workstation.methods.spatial.types import FAIL, PASS, UNDECIDABLE
from workstation.types import WorkstationError
from workstation.methods.spatial.data import spatial_dataset


@dataclass
class FakeVerdicts:
    verdict: np.ndarray
    conf: np.ndarray
    reason: np.ndarray


def make_dataset(n: int, runs: list[str], rng: np.random.Generator) -> Dataset:
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    samples = Samples(
        sample_id=o([f"s{i:05d}" for i in range(n)]), run_id=o(rng.choice(runs, n).tolist()),
        prompt_id=o([f"p{i}" for i in range(n)]), seed=np.arange(n) % 4,
        width=np.full(n, 512.0), height=np.full(n, 512.0), image_path=o([""] * n),
        has_secondary=np.ones(n, bool), has_perturbed=np.zeros(n, bool),
    )
    return spatial_dataset(samples, rng.integers(0, 4, n), ["cat"] * n, ["dog"] * n)


@pytest.fixture()
def population():
    rng = np.random.default_rng(7)
    ds = make_dataset(3000, ["sd15_promptonly", "sd15_boxdiff", "sd14_gligen"], rng)
    verdict = rng.choice([PASS, FAIL, UNDECIDABLE], ds.n, p=[0.4, 0.1, 0.5]).astype(np.int8)
    conf = np.where(verdict == UNDECIDABLE, rng.uniform(0, 0.3, ds.n), rng.uniform(0, 1, ds.n))
    v = FakeVerdicts(verdict, conf, np.where(verdict == UNDECIDABLE, 1, 0).astype(np.int8))
    return ds, v


def test_sample_is_deterministic_for_a_seed_and_has_no_duplicates(population):
    ds, v = population
    a = audit.stratified_sample(ds, v, 200, seed=42)
    b = audit.stratified_sample(ds, v, 200, seed=42)
    c = audit.stratified_sample(ds, v, 200, seed=43)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len(a) == 200 and len(np.unique(a)) == 200
    assert a.min() >= 0 and a.max() < ds.n


def test_sample_covers_every_stratum_proportionally(population):
    ds, v = population
    rows = audit.stratified_sample(ds, v, 200, seed=1)
    table = audit.strata_table(ds, v, rows)
    assert len(table) == 3 * 4 * 3  # method x relation x verdict, all non-empty here
    assert all(t["sampled"] >= 1 for t in table)
    assert sum(t["sampled"] for t in table) == 200
    for t in table:  # proportional within one draw of rounding (minimum-one bumps aside)
        quota = 200 * t["population"] / ds.n
        assert abs(t["sampled"] - quota) <= 1.5


def test_sample_spreads_over_confidence_bins(population):
    ds, v = population
    rows = audit.stratified_sample(ds, v, 600, seed=3, strata=("verdict",), conf_bins=5)
    bins = audit.confidence_bins(v.conf, 5)
    for verdict in (PASS, FAIL):
        present = set(bins[v.verdict == verdict].tolist())
        sampled = set(bins[rows][v.verdict[rows] == verdict].tolist())
        assert sampled == present


def test_sample_smaller_than_strata_and_larger_than_population(population):
    ds, v = population
    rows = audit.stratified_sample(ds, v, 5, seed=0)
    assert len(rows) == 5 and len(np.unique(rows)) == 5
    # strata are distinct when there are fewer draws than strata
    codes, _ = audit.stratum_codes(ds, v)
    assert len(np.unique(codes[rows])) == 5
    assert np.array_equal(audit.stratified_sample(ds, v, ds.n + 10, seed=0), np.arange(ds.n))
    assert len(audit.stratified_sample(ds, v, 0, seed=0)) == 0


def test_sample_excludes_already_audited_rows(population):
    ds, v = population
    first = audit.stratified_sample(ds, v, 300, seed=5)
    second = audit.stratified_sample(ds, v, 300, seed=5, exclude=first)
    assert len(np.intersect1d(first, second)) == 0
    mask = np.zeros(ds.n, bool)
    mask[first] = True
    assert np.array_equal(second, audit.stratified_sample(ds, v, 300, seed=5, exclude=mask))


def test_sample_strata_subset_and_errors(population):
    ds, v = population
    rows = audit.stratified_sample(ds, None, 50, seed=0, strata=("run", "relation"))
    assert len(rows) == 50
    with pytest.raises(WorkstationError, match="unknown audit stratum"):
        audit.stratified_sample(ds, v, 10, seed=0, strata=("colour",))
    with pytest.raises(WorkstationError, match="verdict set"):
        audit.stratified_sample(ds, None, 10, seed=0)
    with pytest.raises(WorkstationError):
        audit.stratified_sample(ds, v, -1, seed=0)


def test_allocate_respects_sizes_and_minimum():
    rng = np.random.default_rng(0)
    a = audit.allocate(np.array([100, 1, 0, 10]), 20, rng)
    assert a.tolist()[1] == 1 and a[2] == 0 and a.sum() == 20 and np.all(a <= [100, 1, 0, 10])
    assert audit.allocate(np.array([3, 2]), 10, rng).tolist() == [3, 2]


# ---- labels ------------------------------------------------------------------------------


def test_latest_label_per_sample_and_annotator_counts():
    sample = ["a", "a", "b", "a", "b"]
    annot = ["ann", "ann", "ann", "bob", "ann"]
    assert agreement.latest_labels(sample, annot).tolist() == [1, 3, 4]
    assert agreement.first_labels(sample, annot).tolist() == [0, 2, 3]
    # an explicit order (timestamps) decides, not the position
    ts = ["2026-01-02", "2026-01-01", "2026-01-03", "2026-01-01", "2026-01-01"]
    assert agreement.latest_labels(sample, annot, ts).tolist() == [0, 2, 3]
    assert len(agreement.latest_labels([], [])) == 0


def test_labels_by_row_latest_and_majority():
    rows = [0, 0, 1, 1, 1, 2]
    ann = ["x", "x", "x", "y", "z", "x"]
    verd = [PASS, FAIL, PASS, FAIL, FAIL, UNDECIDABLE]
    out = audit.labels_by_row(4, rows, verd, ann)
    assert out.tolist() == [FAIL, FAIL, UNDECIDABLE, audit.NO_LABEL]
    maj = audit.labels_by_row(4, rows, verd, ann, policy="majority")
    assert maj.tolist() == [FAIL, FAIL, UNDECIDABLE, audit.NO_LABEL]
    tie = audit.labels_by_row(1, [0, 0], [PASS, FAIL], ["x", "y"], policy="majority")
    assert tie.tolist() == [UNDECIDABLE]
    only_x = audit.labels_by_row(4, rows, verd, ann, only_annotator="x")
    assert only_x.tolist() == [FAIL, PASS, UNDECIDABLE, audit.NO_LABEL]
    with pytest.raises(WorkstationError, match="outside"):
        audit.labels_by_row(2, [5], [PASS])


# ---- confusion and agreement ---------------------------------------------------------------


def test_confusion_reproduces_the_published_audit_counts():
    # calibrated checker vs humans over 200 audited samples (SpatialBench-UC, METHODS.md §1)
    pairs = ([(PASS, PASS)] * 51 + [(PASS, FAIL)] * 1 + [(FAIL, PASS)] * 2 + [(FAIL, FAIL)] * 17
             + [(UNDECIDABLE, UNDECIDABLE)] * 75 + [(UNDECIDABLE, PASS)] * 30 + [(UNDECIDABLE, FAIL)] * 4
             + [(PASS, UNDECIDABLE)] * 20)
    c = np.array([p[0] for p in pairs])
    h = np.array([p[1] for p in pairs])
    s = audit.confusion_summary(c, h)
    assert s.total == 200
    assert (s.tp, s.fp, s.fn, s.tn) == (51, 1, 2, 17)
    assert s.undecidable_checker == 109 and s.undecidable_human == 95
    assert audit.decided_confusion(s.matrix).tolist() == [[51, 1], [2, 17]]
    assert s.accuracy == pytest.approx(68 / 71)
    assert s.precision == pytest.approx(51 / 52)


def test_confusion_skips_unlabelled_and_handles_empty():
    m = audit.confusion([PASS, FAIL, PASS], [PASS, -1, FAIL])
    assert m.sum() == 2 and m[PASS, PASS] == 1 and m[PASS, FAIL] == 1
    e = audit.confusion_summary([], [])
    assert e.total == 0 and np.isnan(e.accuracy) and np.isnan(e.f1)


def test_cohen_kappa_textbook_values():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> kappa 0.4
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.4)
    assert agreement.percent_agreement(a, b) == pytest.approx(0.7)
    # 100 items: 45 / 15 / 25 / 15 -> p_o 0.60, p_e 0.54, kappa 0.1304
    a = [1] * 60 + [0] * 40
    b = [1] * 45 + [0] * 15 + [1] * 25 + [0] * 15
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.06 / 0.46)
    assert agreement.cohen_kappa([0, 1, 2], [0, 1, 2]) == pytest.approx(1.0)
    assert np.isnan(agreement.cohen_kappa([], []))
    assert np.isnan(agreement.cohen_kappa([1, 1], [1, 1]))  # p_e = 1: undefined
    assert np.isnan(agreement.percent_agreement([], []))
    # missing labels (-1) are left out pairwise
    assert agreement.cohen_kappa([0, 1, -1], [0, 1, 0]) == pytest.approx(1.0)


def test_quadratic_weighted_kappa():
    assert agreement.quadratic_weighted_kappa([1, 2, 3, 4], [1, 2, 3, 4], 4) == pytest.approx(1.0)
    assert agreement.quadratic_weighted_kappa([1, 1, 4, 4], [4, 4, 1, 1], 4) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    a = rng.integers(1, 5, 300)
    b = np.clip(a + rng.integers(-1, 2, 300), 1, 4)
    # identity for quadratic weights: 2·cov / (var_a + var_b + (mean_a − mean_b)²)
    ref = 2 * np.cov(a, b, bias=True)[0, 1] / (a.var() + b.var() + (a.mean() - b.mean()) ** 2)
    assert agreement.quadratic_weighted_kappa(a, b, 4) == pytest.approx(ref)
    assert np.isnan(agreement.quadratic_weighted_kappa([], [], 4))
    with pytest.raises(WorkstationError, match="ratings"):
        agreement.quadratic_weighted_kappa([1, 5], [1, 2], 4)


def test_self_agreement_first_vs_latest():
    sample = ["a", "a", "a", "b", "b", "c"]
    ann = ["x", "x", "x", "x", "x", "x"]
    lab = [PASS, FAIL, PASS, FAIL, PASS, PASS]  # a: PASS then PASS (latest); b: FAIL then PASS
    r = agreement.self_agreement(sample, ann, lab)
    assert r.n_pairs == 2
    assert r.percent == pytest.approx(0.5)
    assert sorted(r.sample.tolist()) == ["a", "b"]
    empty = agreement.self_agreement([], [], [])
    assert empty.n_pairs == 0 and np.isnan(empty.percent) and np.isnan(empty.kappa)


def test_annotator_agreement_pairs():
    sample = ["a", "b", "c", "a", "b", "c", "a"]
    ann = ["x", "x", "x", "y", "y", "y", "y"]
    rating = [1, 2, 4, 1, 3, 4, 2]  # y re-rated "a": latest (2) counts
    rows = agreement.annotator_agreement(sample, ann, rating, weighted_categories=4)
    assert len(rows) == 1 and rows[0]["n"] == 3
    assert rows[0]["kappa"] == pytest.approx(agreement.quadratic_weighted_kappa([1, 2, 4], [2, 3, 4], 4))


# ---- agreement: what each number is computed over -------------------------------------------------


def test_a_rating_above_the_scale_is_refused_in_either_list():
    with pytest.raises(WorkstationError, match="whole numbers from 1 to 4"):
        agreement.quadratic_weighted_kappa([1, 2, 3], [1, 2, 5], 4)
    with pytest.raises(WorkstationError, match="whole numbers from 1 to 4"):
        agreement.quadratic_weighted_kappa([1, 2, 3], [1, 2.5, 3], 4)
    with pytest.raises(WorkstationError, match="at least 2"):
        agreement.quadratic_weighted_kappa([1], [1], 1)
    with pytest.raises(WorkstationError, match="differ in length"):
        agreement.quadratic_weighted_kappa([1, 2], [1], 4)
    # a rating below the scale (0) is a missing one, left out pairwise
    assert agreement.quadratic_weighted_kappa([1, 4, 0], [1, 4, 3], 4) == pytest.approx(1.0)


def test_self_agreement_pairs_each_annotators_own_labels_only():
    # x labels "a" PASS; y re-checks "a" FAIL: two different people, no self-agreement pair
    r = agreement.self_agreement(["a", "a"], ["x", "y"], [PASS, FAIL])
    assert r.n_pairs == 0
    # x labels a PASS, y labels a FAIL, then x re-checks PASS: x's pair is (PASS, PASS)
    r = agreement.self_agreement(["a", "a", "a"], ["x", "y", "x"], [PASS, FAIL, PASS])
    assert r.n_pairs == 1 and r.first.tolist() == [PASS] and r.latest.tolist() == [PASS] and r.percent == 1.0
    assert r.annotator.tolist() == ["x"] and r.sample.tolist() == ["a"]
    # the first and the latest of three labels pair up, the middle one is passed over
    r = agreement.self_agreement(["b"] * 3, ["x"] * 3, [FAIL, PASS, PASS], order=[1, 2, 3])
    assert (r.first.tolist(), r.latest.tolist()) == ([FAIL], [PASS]) and r.percent == 0.0
    # by time, not position
    r = agreement.self_agreement(["b", "b"], ["x", "x"], [FAIL, PASS], order=["2026-01-02", "2026-01-01"])
    assert (r.first.tolist(), r.latest.tolist()) == ([PASS], [FAIL])
    assert r.small and math.isnan(r.kappa) and r.percent == 0.0  # one pair: κ undefined, agreement 0 %


def test_agreement_with_two_items_says_its_n_is_small_and_carries_bounds():
    rows = agreement.annotator_agreement(["a", "b", "a", "b"], ["x", "x", "y", "y"], [1, 4, 4, 1],
                                         weighted_categories=4)
    (r,) = rows
    assert r["n"] == 2 and r["kappa"] == pytest.approx(-1.0) and r["small"]
    assert r["kappa_lo"] <= r["kappa"] <= r["kappa_hi"]
    # with a prompt per sample, the bootstrap resamples prompts: two samples of one prompt are one unit
    rows = agreement.annotator_agreement(["a", "b", "c"] * 2, ["x"] * 3 + ["y"] * 3, [1, 2, 3, 1, 2, 3],
                                         unit_of=lambda s: "p" if s in ("a", "b") else "q")
    assert rows[0]["units"] == 2 and rows[0]["kappa"] == pytest.approx(1.0)
    assert agreement.annotator_agreement(["a"], ["x"], [1], n_boot=0) == []


def test_latest_labels_rejects_misaligned_columns():
    with pytest.raises(WorkstationError, match="differ in length"):
        agreement.latest_labels(["a", "b"], ["x"])
    with pytest.raises(WorkstationError, match="differ in length"):
        agreement.first_labels(["a"], ["x", "y"])
    with pytest.raises(WorkstationError, match="2 entries for 3"):
        agreement.latest_labels(["a", "b", "c"], ["x"] * 3, [1, 2])
    with pytest.raises(WorkstationError, match="differ in length"):
        agreement.self_agreement(["a"], ["x"], [1, 2])
    with pytest.raises(WorkstationError, match="differ in length"):
        agreement.annotator_agreement(["a"], ["x", "y"], [1])
    with pytest.raises(WorkstationError, match="differ in length"):
        agreement.percent_agreement([1, 2], [1])
    # numeric orders sort as numbers, text as ISO times; equal orders keep the later position
    assert agreement.latest_labels(["a", "a"], ["x", "x"], [10, 9]).tolist() == [0]
    assert agreement.latest_labels(["a", "a"], ["x", "x"], [5, 5]).tolist() == [1]
    assert agreement.first_labels(["a", "a"], ["x", "x"], [5, 5]).tolist() == [0]
