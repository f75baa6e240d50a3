"""MetaLogic's numbers read value by value: stored result sets, the units the intervals resample,
every table's rows and their bounds, agreement with people, the student scores (the mutation run
of `methods/metalogic/metrics.py` uses these)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workstation.evaluation.intervals import bootstrap_interval, kappa_estimate, ratio_estimates, wilson_interval
from workstation.methods.metalogic.laws import DIMENSIONS, LAWS, MODIFIERS
from workstation.methods.metalogic.metrics import (
    PUBLISHED_SOURCE,
    StoredOutcomes,
    agreement,
    heatmap,
    misalignment_tables,
    pair_scores,
    published_rate,
    rate_rows,
    reason_rows,
    score_tables,
)

A, M, U = 0, 1, 2


def stored(verdict: list[int], *, law: list[str] | None = None, dim: list[str] | None = None,
           run: list[str] | None = None, unit: list[str] | None = None, paper: list[int] | None = None,
           reason: list[int] | None = None, kind: list[int] | None = None) -> StoredOutcomes:
    n = len(verdict)
    return StoredOutcomes(
        verdict=np.array(verdict, np.int8), kind=np.array(kind or [1 if v == M else 0 for v in verdict], np.int8),
        reason=np.array(reason or [1 if v == U else 0 for v in verdict], np.int8),
        law=np.array([LAWS.index(x) for x in (law or ["Commutative"] * n)], np.int8),
        modifier=np.zeros(n, np.int8),
        dimension=np.array([DIMENSIONS.index(x) for x in (dim or ["none"] * n)], np.int8),
        run=np.array(run or ["r"] * n, dtype=object), unit=None if unit is None else np.array(unit, dtype=object),
        paper_verdict=None if paper is None else np.array(paper, np.int8))


# ---- stored result sets ----------------------------------------------------------------------------------
def test_a_stored_result_set_reads_as_codes_with_its_suite_pairs() -> None:
    cols = {"verdict": np.array(["ALIGNED", "MISALIGNED", "UNDECIDABLE"], dtype=object),
            "kind": np.array([None, "omission", ""], dtype=object),
            "reason": np.array(["", "", "near_boundary"], dtype=object),
            "law": np.array(["Commutative", "DeMorgan", "Complement"], dtype=object),
            "modifier": np.array(["AND", "OR", "AND"], dtype=object),
            "dimension": np.array(["none", "x", "y"], dtype=object),
            "run_id": np.array(["m1", "m1", "m2"], dtype=object), "pair_id": np.array(["p1", "p1", "p2"], dtype=object)}
    o = StoredOutcomes.from_columns(cols)
    assert o.verdict.tolist() == [A, M, U] and o.verdict.dtype == np.int8
    assert o.kind.tolist() == [0, 1, 0] and o.reason.tolist() == [0, 0, 3]
    assert o.law.tolist() == [0, LAWS.index("DeMorgan"), LAWS.index("Complement")]
    assert o.modifier.tolist() == [MODIFIERS.index("AND"), MODIFIERS.index("OR"), MODIFIERS.index("AND")]
    assert o.dimension.tolist() == [DIMENSIONS.index("none"), DIMENSIONS.index("x"), DIMENSIONS.index("y")]
    assert o.run.tolist() == ["m1", "m1", "m2"] and o.unit.tolist() == ["p1", "p1", "p2"] and len(o) == 3
    assert o.paper_verdict is None
    assert StoredOutcomes.from_columns({k: v for k, v in cols.items() if k != "pair_id"}).unit is None
    for key, bad in (("verdict", "MAYBE"), ("kind", "swap"), ("reason", "tired"), ("law", "Newton"),
                     ("modifier", "XOR"), ("dimension", "z")):
        broken = dict(cols)
        broken[key] = np.array([bad, *cols[key][1:]], dtype=object)
        with pytest.raises(ValueError, match=f"^stored MetaLogic result has an unknown {key} '{bad}'$"):
            StoredOutcomes.from_columns(broken)


def test_published_rates_and_where_there_are_none() -> None:
    assert published_rate("law", "Distributive") == 0.86 and published_rate("model", "Flux.dev") == 0.71
    assert published_rate("law", "Newton") is None and published_rate("nosuch", "x") is None


# ---- the units of the intervals --------------------------------------------------------------------
def test_the_intervals_resample_suite_pairs_named_by_unit_or_by_id() -> None:
    verdict = [M, M, A, A, M, A, A, A, M, A, M, A]
    by_unit = rate_rows(stored(verdict, unit=[f"p{i // 3}" for i in range(12)], paper=verdict), n_boot=400)[0]
    assert (by_unit["pairs"], by_unit["suite_pairs"]) == (12, 4)
    assert by_unit["paper_rate"] == pytest.approx(5 / 12)
    e = ratio_estimates((np.array(verdict) == M).astype(float), np.ones(12),
                        np.array([f"p{i // 3}" for i in range(12)], dtype=object), n_boot=400)[0]
    assert (by_unit["paper_rate_lo"], by_unit["paper_rate_hi"]) == (e.lo, e.hi)
    # without a unit: each image pair alone (Wilson)
    alone = rate_rows(stored(verdict, paper=verdict), n_boot=400)[0]
    assert alone["suite_pairs"] == 12
    assert (alone["paper_rate_lo"], alone["paper_rate_hi"]) == pytest.approx(wilson_interval(5, 12))


# ---- rate rows ------------------------------------------------------------------------------------------
def test_rate_rows_mask_groups_and_refusals() -> None:
    o = stored([M, A, U, M, A, A], law=["Commutative"] * 3 + ["DeMorgan"] * 3, paper=[M, A, M, M, A, A],
               run=["b", "b", "b", "a", "a", "a"])
    rows = rate_rows(o, ["law"])
    assert [(r["run"], r["law"]) for r in rows] == [("a", "DeMorgan"), ("b", "Commutative")]
    b = rows[1]
    assert (b["pairs"], b["aligned"], b["misaligned"], b["undecidable"], b["decided"], b["paper_misaligned"]) == \
        (3, 1, 1, 1, 2, 2)
    assert (b["paper_rate"], b["decided_rate"], b["coverage"]) == pytest.approx((2 / 3, 1 / 2, 2 / 3))
    assert b["omission"] == 1 and b["duplication"] == 0 and b["positional"] == 0
    masked = rate_rows(o, mask=np.array([True, True, False, False, False, True]))
    assert [(r["run"], r["pairs"]) for r in masked] == [("a", 1), ("b", 2)]
    assert rate_rows(o, mask=np.zeros(6, bool)) == []
    assert rate_rows(stored([]), ["law"]) == []
    with pytest.raises(ValueError, match="^cannot group MetaLogic pairs by 'run' \\(law, modifier or dimension\\)$"):
        rate_rows(o, ["run"])
    pooled = rate_rows(o, ["law", "dimension"], per_run=False)
    assert "run" not in pooled[0] and [r["law"] for r in pooled] == ["Commutative", "DeMorgan"]
    assert all(r["published"] is None for r in pooled)  # the paper has no figure per law × dimension
    assert pooled[0]["dimension_title"] == "position-less"


def test_the_note_names_what_is_few() -> None:
    # 12 pairs all decided by the paper, 5 decided under the bands: the abstention-aware rate is the small one
    verdict = [M, A, U, U, U, U, U, U, U, A, M, A]
    (r,) = rate_rows(stored(verdict, paper=[M, A] * 6))
    assert r["note"] == "fewer than 10 decided pairs"
    (r,) = rate_rows(stored(verdict[:4], paper=[M, A] * 2))
    assert r["note"] == "fewer than 10 pairs"
    (r,) = rate_rows(stored([M, A] * 6, unit=["p"] * 6 + ["q"] * 6, paper=[M, A] * 6))
    assert r["note"] == "fewer than 10 suite pairs"
    (r,) = rate_rows(stored([M, A] * 6, paper=[M, A] * 6))
    assert r["note"] == ""


def test_misalignment_tables_pass_their_options_on() -> None:
    verdict = [M, A, M, A, M, M, A, A, U, A, M, A] * 2
    o = stored(verdict, unit=[f"p{i % 12}" for i in range(24)], paper=[v if v != U else A for v in verdict])
    t = misalignment_tables(o, per_run=False, n_boot=300, seed=5)
    assert "run" not in t["overall"][0]
    direct = rate_rows(o, (), per_run=False, n_boot=300, seed=5)[0]
    assert t["overall"][0] == direct
    other = misalignment_tables(o, n_boot=300, seed=6)["overall"][0]
    assert (other["paper_rate_lo"], other["paper_rate_hi"]) != (direct["paper_rate_lo"], direct["paper_rate_hi"])
    assert math.isnan(misalignment_tables(o, n_boot=0)["law"][0]["paper_rate_lo"])
    pub = t["published"]
    assert all(set(p) == {"grouping", "group", "rate", "source"} and p["source"] == PUBLISHED_SOURCE for p in pub)


def test_heatmap_picks_its_run_and_its_columns() -> None:
    o = stored([M, A, M, U, A, M], law=["Commutative", "Commutative", "DeMorgan", "DeMorgan", "Commutative",
                                        "DeMorgan"],
               dim=["none", "x", "none", "x", "y", "none"], run=["a", "a", "a", "a", "b", "b"],
               paper=[M, A, M, M, A, M])
    h = heatmap(o, run="a")
    assert h["dimensions"] == ["none", "x"]  # run a has no Y pairs
    c, d = LAWS.index("Commutative"), LAWS.index("DeMorgan")
    assert (h["pairs"][c, 0], h["pairs"][d, 0], h["pairs"][d, 1]) == (1, 1, 1)
    assert h["paper_misaligned"][d, 1] == 1 and h["undecidable"][d, 1] == 1 and h["decided"][d, 1] == 0
    assert h["paper_rate"][d, 1] == 1.0 and math.isnan(h["decided_rate"][d, 1])
    assert int(h["pairs"].sum()) == 4
    # named columns: one the data lacks is empty; pairs of a dimension not asked for are left out
    g = heatmap(o, dimensions=["y", "none"])
    assert g["dimensions"] == ["y", "none"] and int(g["pairs"].sum()) == 4
    assert (g["pairs"][c, 0], g["pairs"][d, 1]) == (1, 2)
    assert math.isnan(g["paper_rate"][LAWS.index("Associative"), 0]) and g["pairs"][LAWS.index("Associative"), 0] == 0
    assert g["paper_rate"][d, 1] == 1.0 and (g["paper_lo"][d, 1], g["paper_hi"][d, 1]) == pytest.approx(
        wilson_interval(2, 2))
    assert heatmap(o, dimensions=["x"])["pairs"].sum() == 2
    assert (heatmap(o, n_boot=0)["paper_lo"] != heatmap(o, n_boot=0)["paper_lo"]).all()  # all NaN


def test_reasons_per_run_sorted() -> None:
    o = stored([U, U, A, U], reason=[1, 3, 0, 2], run=["z", "z", "z", "a"])
    rows = reason_rows(o)
    assert [(r["run"], r["reason"], r["count"]) for r in rows] == [
        ("a", "near_threshold", 0), ("a", "ambiguous", 1), ("a", "near_boundary", 0),
        ("z", "near_threshold", 1), ("z", "ambiguous", 0), ("z", "near_boundary", 1)]
    assert rows[1]["fraction"] == 1.0 and rows[3]["fraction"] == pytest.approx(1 / 3)


# ---- agreement with people -----------------------------------------------------------------------------
def test_agreement_with_people_resamples_suite_pairs() -> None:
    rng = np.random.default_rng(8)
    computed = rng.integers(0, 3, 60)
    human = np.where(rng.random(60) < 0.7, computed, rng.integers(0, 3, 60))
    human[:5] = -1
    unit = np.array([f"p{i // 4}" for i in range(60)], dtype=object)
    ag = agreement(computed, human, unit, n_boot=500, seed=4)
    sel = human >= 0
    k = kappa_estimate(computed[sel], human[sel], unit[sel], categories=3, n_boot=500, seed=4)
    p = ratio_estimates((computed[sel] == human[sel]).astype(float), np.ones(55), unit[sel], n_boot=500, seed=4)[0]
    assert ag["n"] == 55 and (ag["kappa"], ag["kappa_lo"], ag["kappa_hi"]) == (k.value, k.lo, k.hi)
    assert (ag["agreement"], ag["agreement_lo"], ag["agreement_hi"]) == (p.value, p.lo, p.hi)
    assert not ag["small"] and int(ag["confusion"].sum()) == 55
    assert ag["confusion"].tolist() == [[int(((computed == i) & (human == j)).sum()) for j in range(3)]
                                        for i in range(3)]
    alone = agreement(computed, human, n_boot=500, seed=4)
    assert alone["kappa_hi"] - alone["kappa_lo"] < ag["kappa_hi"] - ag["kappa_lo"]
    none = agreement(np.array([A, M]), np.array([-1, -1]))
    assert none["n"] == 0 and math.isnan(none["agreement"]) and math.isnan(none["kappa"]) and none["small"]
    with pytest.raises(ValueError, match="^computed and human outcomes differ in length$"):
        agreement(np.array([A]), np.array([A, M]))


# ---- the student scores ------------------------------------------------------------------------------------
def test_pair_scores_and_their_refusals() -> None:
    s = pair_scores([30, None], [28, 20], [1, 0.5], [None, 0.25])
    assert s["clip_diff"][0] == pytest.approx(0.02) and math.isnan(s["clip_diff"][1])
    assert math.isnan(s["faith_diff"][0]) and s["faith_stability"][1] == 0.75 and s["faith_mean"][1] == 0.375
    assert s["faith_a"].tolist() == [1.0, 0.5] and math.isnan(s["faith_b"][0]) and s["faith_b"][1] == 0.25
    assert s["clip_a"][0] == 30.0 and s["clip_b"].tolist() == [28.0, 20.0]
    with pytest.raises(ValueError, match="^clip_a and clip_b differ in length$"):
        pair_scores([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="^give both faith_a and faith_b$"):
        pair_scores([1.0], [1.0], None, [0.5])
    with pytest.raises(ValueError, match="^faithfulness arrays differ in length from the CLIPScore arrays$"):
        pair_scores([1.0], [1.0], [0.5, 0.5], [0.5])
    with pytest.raises(ValueError, match="differ in length from the CLIPScore"):
        pair_scores([1.0], [1.0], [0.5], [0.5, 0.5])


def test_score_tables_means_bounds_and_order() -> None:
    s = pair_scores([30.0, 20.0, 25.0, 10.0, 40.0], [28.0, 20.0, 15.0, 10.0, 35.0],
                    [1.0, 0.5, 0.2, 0.4, 1.0], [0.5, 0.5, 0.7, 0.4, 0.9])
    law = ["DeMorgan", "Commutative", "Commutative", "Newton", "Commutative"]
    dim = ["attributes", "horizontal", "horizontal", "x", "somewhere"]
    t = score_tables(law, dim, s, n_boot=300, seed=3)
    assert [r["law"] for r in t["law"]] == ["Commutative", "DeMorgan", "Newton"]  # an unknown law goes last
    assert [r["dimension"] for r in t["dimension"]] == ["horizontal", "attributes", "x", "somewhere"]
    row = t["law"][0]
    assert row["n"] == 3 and set(row) == {"law", "n", *(f"{k}{suf}" for k in ("clip_diff", "clip_stability",
                                                                           "faith_mean", "faith_diff",
                                                                           "faith_stability")
                                                           for suf in ("", "_lo", "_hi"))}
    x = s["clip_stability"][[1, 2, 4]]
    assert row["clip_stability"] == pytest.approx(x.mean())
    assert (row["clip_stability_lo"], row["clip_stability_hi"]) == bootstrap_interval(x, n_boot=300, seed=3)
    cat = {(r["law"], r["dimension"]): r for r in t["category"]}
    assert cat["Commutative", "horizontal"]["n"] == 2 and [(r["law"], r["dimension"]) for r in t["category"]][0] == \
        ("Commutative", "horizontal")
    codes = score_tables(np.array([0, 3], np.int64), np.array([4, 4], np.uint8), pair_scores([1.0, 2.0], [1.0, 2.0]))
    assert [r["law"] for r in codes["law"]] == ["Commutative", "DeMorgan"]
    assert codes["dimension"][0]["dimension"] == DIMENSIONS[4]
    empty = score_tables(["Commutative"], ["horizontal"], pair_scores([np.nan], [1.0]), n_boot=50)
    assert math.isnan(empty["law"][0]["clip_diff"]) and math.isnan(empty["law"][0]["clip_diff_lo"])


def test_the_heatmap_and_the_score_tables_pass_their_seed_and_units_on() -> None:
    verdict = [M, A, M, A, M, M, A, A, U, A, M, A] * 3
    units = [f"p{i % 12}" for i in range(36)]
    o = stored(verdict, unit=units, paper=[v if v != U else A for v in verdict])
    h = heatmap(o, n_boot=300, seed=5)
    (row,) = rate_rows(o, ["law", "dimension"], per_run=False, n_boot=300, seed=5)
    c = LAWS.index("Commutative")
    assert (h["paper_lo"][c, 0], h["paper_hi"][c, 0]) == (row["paper_rate_lo"], row["paper_rate_hi"])
    assert (h["decided_lo"][c, 0], h["decided_hi"][c, 0]) == (row["decided_rate_lo"], row["decided_rate_hi"])
    assert (heatmap(o, n_boot=300, seed=6)["paper_lo"][c, 0], heatmap(o, n_boot=300, seed=6)["paper_hi"][c, 0]) != \
        (h["paper_lo"][c, 0], h["paper_hi"][c, 0])
    rng = np.random.default_rng(1)
    sc = pair_scores(rng.random(30) * 100, rng.random(30) * 100)
    laws, dims = ["Commutative"] * 30, ["horizontal"] * 30
    assert score_tables(laws, dims, sc) == score_tables(laws, dims, sc, n_boot=1000, seed=0)
    assert score_tables(laws, dims, sc, seed=3)["law"][0]["clip_diff_lo"] != \
        score_tables(laws, dims, sc, seed=4)["law"][0]["clip_diff_lo"]
