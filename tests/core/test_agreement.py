"""Agreement statistics read value by value: which events count, what each κ is over, the bounds
and the small-n flag each row carries (the mutation run of `evaluation/agreement.py` uses these)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from workstation.evaluation import agreement as ag
from workstation.evaluation.intervals import N_BOOT, kappa_estimate, ratio_estimates
from workstation.types import WorkstationError


# ---- which events count ------------------------------------------------------------------------
def test_the_latest_and_the_first_event_by_every_kind_of_order() -> None:
    s, a = ["a", "a", "b"], ["x", "x", "x"]
    assert ag.latest_labels(s, a).tolist() == [1, 2] and ag.first_labels(s, a).tolist() == [0, 2]
    assert ag.latest_labels(["a"], ["x"]).tolist() == [0] and ag.first_labels(["a"], ["x"]).tolist() == [0]
    # numbers sort as numbers — signed, unsigned, floats — text as ISO times
    for order in ([10, 9, 1], np.array([10, 9, 1], np.uint16), [10.0, 9.0, 1.0]):
        assert ag.latest_labels(s, a, order).tolist() == [0, 2]
        assert ag.first_labels(s, a, order).tolist() == [1, 2]
    iso = ["2026-01-02T10:00:00Z", "2026-01-01T10:00:00Z", "2026-01-01T09:00:00Z"]
    assert ag.latest_labels(s, a, iso).tolist() == [0, 2] and ag.first_labels(s, a, iso).tolist() == [1, 2]
    with pytest.raises(WorkstationError, match="^label events: sample and annotator columns differ in length$"):
        ag.latest_labels(["a"], [])
    with pytest.raises(WorkstationError, match="^label events: sample and annotator columns differ in length$"):
        ag.first_labels([], ["x"])
    with pytest.raises(WorkstationError, match="label order has 1 entries for 3 label events"):
        ag.first_labels(s, a, [1])
    assert ag.first_labels([], []).tolist() == [] and ag.latest_labels([], [], []).tolist() == []


# ---- percent agreement and κ ------------------------------------------------------------------------
def test_missing_labels_none_nan_or_negative_are_left_out_pairwise() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing here warns: an empty mean is answered before it is taken
        assert ag.percent_agreement([1, None, 2, -1, 0], [1, 2, None, 0, 0]) == 1.0
        assert math.isnan(ag.percent_agreement([None], [1]))
        assert ag.cohen_kappa([0, 1, None, 1], [0, 1, 1, np.nan]) == pytest.approx(1.0)
        assert math.isnan(ag.cohen_kappa([None], [None]))
        assert ag.quadratic_weighted_kappa([1, 4, None], [1, 4, 2]) == pytest.approx(1.0)
        assert math.isnan(ag.quadratic_weighted_kappa([None, 0], [1, 1]))
    # lists of columns count as one list
    assert ag.percent_agreement([[1], [2], [3]], [[1], [2], [2]]) == pytest.approx(2 / 3)
    with pytest.raises(WorkstationError, match=r"the two label lists differ in length \(2 vs 1\)"):
        ag.percent_agreement([1, 2], [1])


def test_cohens_kappa_by_hand_with_categories_only_one_rater_used() -> None:
    # rater a uses 0, 1, 2; rater b only 0 and 1: p_o = 3/5, p_e = (2·2 + 2·3 + 1·0) / 25 = 10/25
    a, b = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert ag.cohen_kappa(a, b) == pytest.approx((3 / 5 - 10 / 25) / (1 - 10 / 25))
    assert ag.cohen_kappa(b, a) == pytest.approx((3 / 5 - 10 / 25) / (1 - 10 / 25))
    # perfect disagreement on two categories: κ = −1; one category both ways: undefined
    assert ag.cohen_kappa([0, 1], [1, 0]) == pytest.approx(-1.0)
    assert math.isnan(ag.cohen_kappa([2, 2, 2], [2, 2, 2]))
    assert ag.cohen_kappa([0, 0, 0, 1], [0, 0, 0, 0]) == pytest.approx(0.0)  # p_e = p_o = 3/4


def test_quadratic_weighted_kappa_edges_of_its_scale() -> None:
    with pytest.raises(WorkstationError, match="^quadratic weighted kappa needs at least 2 rating categories$"):
        ag.quadratic_weighted_kappa([1], [1], 1)
    assert ag.quadratic_weighted_kappa([1, 2, 2], [1, 2, 1], 2) == pytest.approx(0.4)  # two categories are enough
    with pytest.raises(WorkstationError, match="^ratings must be whole numbers from 1 to 4$"):
        ag.quadratic_weighted_kappa([1, 5], [1, 2])  # the default scale is 1-4
    with pytest.raises(WorkstationError, match="from 1 to 4"):
        ag.quadratic_weighted_kappa([1, 2], [1, 5])
    with pytest.raises(WorkstationError, match="from 1 to 4"):
        ag.quadratic_weighted_kappa([1.5, 2], [1, 2])
    with pytest.raises(WorkstationError, match="from 1 to 4"):
        ag.quadratic_weighted_kappa([1, 2], [1, 2.5])
    with pytest.raises(WorkstationError, match="from 0 to 2"):
        ag.quadratic_weighted_kappa([0, 3], [0, 1], 3, min_rating=0)
    assert ag.quadratic_weighted_kappa([0, 1, 2], [0, 1, 2], 3, min_rating=0) == pytest.approx(1.0)
    # weights grow with the squared distance: a 1↔4 swap costs more than a 1↔2 swap
    near = ag.quadratic_weighted_kappa([1, 2, 3, 4], [2, 1, 3, 4])
    far = ag.quadratic_weighted_kappa([1, 2, 3, 4], [4, 2, 3, 1])
    # by hand: near Σw·O = 2, Σw·E = (1/4)·Σ(i−j)² over all 16 cells = 40/4 = 10 → 1 − 2/10
    assert near == pytest.approx(0.8) and far == pytest.approx(1 - 18 / 10)
    with pytest.raises(WorkstationError, match=r"rating lists differ in length \(1 vs 2\)"):
        ag.quadratic_weighted_kappa([1], [1, 2])


# ---- bounds and the small-n flag --------------------------------------------------------------------
def test_kappa_bounds_are_the_bootstrap_of_the_pairs_or_their_prompts() -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(1, 5, 60).astype(float)
    y = np.clip(x + rng.integers(-1, 2, 60), 1, 4)
    x[3], y[5] = np.nan, 0  # one missing each side: left out
    keep = np.isfinite(x) & (y >= 1)
    unit = np.repeat([f"p{i:02d}" for i in range(20)], 3).astype(object)
    b = ag.kappa_bounds(x, y, unit, 4)
    e = kappa_estimate(x[keep] - 1, y[keep] - 1, unit[keep], categories=4, weighted=True, n_boot=N_BOOT)
    p = ratio_estimates((x[keep] == y[keep]).astype(float), np.ones(int(keep.sum())), unit[keep])[0]
    assert (b["kappa_lo"], b["kappa_hi"], b["units"]) == (e.lo, e.hi, 20)
    assert (b["percent_lo"], b["percent_hi"]) == (p.lo, p.hi) and not b["small"]
    assert e.value == pytest.approx(ag.quadratic_weighted_kappa(x, y))
    assert b["kappa_lo"] < e.value < b["kappa_hi"]
    # unweighted codes: the categories are those used; without units every pair is one
    c = ag.kappa_bounds([0, 1, 2, 2, 1, 0, 2, 1, 0, 1, 2, 0], [0, 1, 2, 1, 1, 0, 2, 2, 0, 1, 2, 1], n_boot=300)
    ce = kappa_estimate([0, 1, 2, 2, 1, 0, 2, 1, 0, 1, 2, 0], [0, 1, 2, 1, 1, 0, 2, 2, 0, 1, 2, 1], categories=3,
                        n_boot=300)
    assert (c["kappa_lo"], c["kappa_hi"], c["units"], c["small"]) == (ce.lo, ce.hi, 12, False)
    small = ag.kappa_bounds([1, 4], [4, 1], None, 4, n_boot=200)
    assert small["small"] and small["units"] == 2
    none = ag.kappa_bounds([], [], None, None)
    assert none["small"] and none["units"] == 0 and math.isnan(none["kappa_lo"]) and math.isnan(none["percent_hi"])
    # no resamples: no bounds, of κ or of the percent agreement
    none_b = ag.kappa_bounds(x, y, unit, 4, n_boot=0)
    assert math.isnan(none_b["kappa_lo"]) and math.isnan(none_b["percent_lo"])


def test_annotator_agreement_rows_carry_every_figure() -> None:
    sample = ["a", "b", "c", "d", "a", "b", "c", "d", "a", "e"]
    ann = ["x"] * 4 + ["y"] * 4 + ["z", "z"]
    lab = [1, 2, 3, 4, 1, 2, 4, 4, 2, 3]
    rows = ag.annotator_agreement(sample, ann, lab, order=list(range(10)), weighted_categories=4,
                                  unit_of=lambda s_: "p" if s_ in ("a", "b") else s_, n_boot=400)
    assert [(r["annotator_a"], r["annotator_b"], r["n"]) for r in rows] == [("x", "y", 4), ("x", "z", 1),
                                                                            ("y", "z", 1)]
    xy = rows[0]
    assert xy["percent_agreement"] == 0.75 and xy["kappa"] == pytest.approx(
        ag.quadratic_weighted_kappa([1, 2, 3, 4], [1, 2, 4, 4]))
    assert xy["units"] == 3 and xy["small"]  # a and b are one prompt
    ref = ag.kappa_bounds([1, 2, 3, 4], [1, 2, 4, 4], ["p", "p", "c", "d"], 4, 400)
    assert {k: xy[k] for k in ref} == ref
    xz = rows[1]
    # one shared item: κ is undefined (it would be 0 or undefined by chance alone), its share is not
    assert xz["percent_agreement"] == 0.0 and math.isnan(xz["kappa"]) and xz["units"] == 1
    # unweighted and the latest event of each: x re-labels "a" last
    rows = ag.annotator_agreement(["a", "b", "a", "b", "a"], ["x", "x", "y", "y", "x"], [0, 1, 0, 1, 1],
                                  n_boot=0)
    assert (rows[0]["n"], rows[0]["percent_agreement"]) == (2, 0.5)
    assert rows[0]["kappa"] == pytest.approx(ag.cohen_kappa([1, 1], [0, 1]))
    assert math.isnan(rows[0]["kappa_lo"]) and rows[0]["units"] == 2
    with pytest.raises(WorkstationError, match="^label events: sample, annotator and label columns differ in length$"):
        ag.annotator_agreement(["a"], ["x"], [1, 2])
    # the order decides which label of an annotator counts: y's first "a" is its latest by time
    by_time = ag.annotator_agreement(["a", "a", "a"], ["x", "y", "y"], [1, 1, 0], order=[1, 3, 2])
    assert by_time[0]["percent_agreement"] == 1.0
    by_position = ag.annotator_agreement(["a", "a", "a"], ["x", "y", "y"], [1, 1, 0])
    assert by_position[0]["percent_agreement"] == 0.0
    # a three-step scale: the categories are the ones asked for
    three = ag.annotator_agreement(["a", "b", "c"] * 2, ["x"] * 3 + ["y"] * 3, [1, 2, 3, 1, 3, 3],
                                   weighted_categories=3, n_boot=0)
    assert three[0]["kappa"] == pytest.approx(ag.quadratic_weighted_kappa([1, 2, 3], [1, 3, 3], 3))


def test_self_agreement_reports_its_bounds_and_a_weighted_kappa() -> None:
    sample = ["s1", "s1", "s2", "s2", "s3", "s3"]
    ann = ["x"] * 6
    lab = [1, 2, 4, 4, 3, 1]  # first / latest: (1, 2), (4, 4), (3, 1)
    r = ag.self_agreement(sample, ann, lab, weighted_categories=4)
    assert r.n_pairs == 3 and r.first.tolist() == [1, 4, 3] and r.latest.tolist() == [2, 4, 1]
    assert r.kappa == pytest.approx(ag.quadratic_weighted_kappa([1, 4, 3], [2, 4, 1]))
    b = ag.kappa_bounds([1, 4, 3], [2, 4, 1], None, 4)
    assert (r.kappa_lo, r.kappa_hi, r.small) == (b["kappa_lo"], b["kappa_hi"], True)
    assert r.percent == pytest.approx(1 / 3) and r.sample.tolist() == ["s1", "s2", "s3"]
    plain = ag.self_agreement(sample, ann, [0, 1, 1, 1, 2, 0])
    assert plain.kappa == pytest.approx(ag.cohen_kappa([0, 1, 2], [1, 1, 0]))
    empty = ag.self_agreement(["a"], ["x"], [1])
    assert empty.n_pairs == 0 and empty.sample.tolist() == [] and empty.annotator.tolist() == []
    assert empty.small and math.isnan(empty.kappa_lo)
    with pytest.raises(WorkstationError, match="^label events: sample, annotator and label columns differ in length$"):
        ag.self_agreement(["a", "b"], ["x"], [1, 2])
    # on a 3-step scale, and with enough re-checks to say nothing about their number
    three = ag.self_agreement(sample, ann, [1, 2, 3, 3, 2, 1], weighted_categories=3)
    assert three.kappa == pytest.approx(ag.quadratic_weighted_kappa([1, 3, 2], [2, 3, 1], 3))
    many = ag.self_agreement([f"s{i // 2}" for i in range(24)], ["x"] * 24, [i % 3 for i in range(24)])
    assert many.n_pairs == 12 and not many.small
