"""MetaLogic metrics: the paper's rate and the abstention-aware rate with their intervals, heatmap,
published figures, reasons, agreement with people, student scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workstation.methods.metalogic.config import MetaLogicConfig
from workstation.methods.metalogic.laws import DIMENSIONS, LAWS, MODIFIERS
from workstation.methods.metalogic.metrics import (
    PUBLISHED,
    heatmap,
    misalignment_tables,
    pair_scores,
    rate_rows,
    score_tables,
)
from workstation.methods.metalogic.results import (
    ALIGNED,
    DUPLICATION,
    MISALIGNED,
    OMISSION,
    POSITIONAL,
    PairResults,
    Selection,
)

A, M, U = ALIGNED, MISALIGNED, 2


def results(rows: list[tuple[str, str, str, int, int, str]], paper: list[int] | None = None,
            ids: list[str] | None = None) -> PairResults:
    """rows: (law, modifier, dimension, verdict, kind, run); ``paper``: the paper's decisions."""
    n = len(rows)
    z = np.zeros((2, 1, n), np.int32)
    return PairResults(
        paper_verdict=None if paper is None else np.array(paper, np.int8),
        ids=np.array(ids if ids is not None else [f"p{i}" for i in range(n)], dtype=object),
        verdict=np.array([r[3] for r in rows], np.int8), conf=np.ones(n), kind=np.array([r[4] for r in rows], np.int8),
        reason=np.zeros(n, np.int8), slot=np.zeros(n, np.int8), slot2=np.full(n, -1, np.int8),
        side=np.zeros(n, np.int8), ok_a=np.ones(n, bool), ok_b=np.ones(n, bool), count=z, count_lo=z, count_hi=z,
        selection=Selection(rows=np.full((2, 1, n), -1), coords=np.full((2, 1, n), np.nan)),
        entity=np.full((n, 1), "cat", dtype=object),
        law=np.array([LAWS.index(r[0]) for r in rows], np.int8),
        modifier=np.array([MODIFIERS.index(r[1]) for r in rows], np.int8),
        dimension=np.array([DIMENSIONS.index(r[2]) for r in rows], np.int8),
        run=np.array([r[5] for r in rows], dtype=object), config=MetaLogicConfig(),
    )


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


ROWS = (
    # Commutative, Flux.dev: 3 aligned, 1 omission, 2 undecidable
    [("Commutative", "AND", "none", A, 0, "Flux.dev")] * 3
    + [("Commutative", "OR", "x", M, OMISSION, "Flux.dev")]
    + [("Commutative", "AND", "y", U, 0, "Flux.dev")] * 2
    # Distributive, Flux.dev: 1 aligned, 3 misaligned (duplication, positional x2)
    + [("Distributive", "OR", "none", A, 0, "Flux.dev"), ("Distributive", "AND", "none", M, DUPLICATION, "Flux.dev"),
       ("Distributive", "AND", "x", M, POSITIONAL, "Flux.dev"), ("Distributive", "OR", "y", M, POSITIONAL, "Flux.dev")]
    # another run
    + [("Commutative", "AND", "none", M, OMISSION, "mine"), ("Commutative", "AND", "none", A, 0, "mine")]
)


def test_rates_exclude_undecidable_pairs_and_carry_wilson_intervals() -> None:
    r = results(ROWS)
    rows = {(x["run"], x["law"]): x for x in rate_rows(r, ["law"])}
    c = rows["Flux.dev", "Commutative"]
    assert (c["pairs"], c["aligned"], c["misaligned"], c["undecidable"], c["decided"]) == (6, 3, 1, 2, 4)
    assert c["decided_rate"] == 0.25 and c["coverage"] == pytest.approx(4 / 6)
    # one image pair per suite pair: independent items, Wilson's interval
    assert (c["decided_rate_lo"], c["decided_rate_hi"]) == pytest.approx(wilson(1, 4))
    assert (c["coverage_lo"], c["coverage_hi"]) == pytest.approx(wilson(4, 6))
    assert (c["omission"], c["duplication"], c["positional"]) == (1, 0, 0)
    assert c["published"] == PUBLISHED["law"]["Commutative"] == 0.54
    assert c["note"] == "fewer than 10 pairs"
    d = rows["Flux.dev", "Distributive"]
    assert d["decided_rate"] == 0.75 and (d["duplication"], d["positional"]) == (1, 2)
    assert rows["mine", "Commutative"]["decided_rate"] == 0.5
    assert list(rows) == [("Flux.dev", "Commutative"), ("Flux.dev", "Distributive"), ("mine", "Commutative")]
    # without the paper's decisions the headline is not made up
    assert math.isnan(c["paper_rate"]) and c["paper_misaligned"] is None


def test_the_headline_is_the_papers_rate_over_all_pairs_beside_the_abstention_aware_rate() -> None:
    # the paper decides every pair: the two UNDECIDABLE Commutative pairs are one M, one A
    paper = [A, A, A, M, M, A, A, M, M, M, M, A]
    r = results(ROWS, paper=paper)
    rows = {(x["run"], x["law"]): x for x in rate_rows(r, ["law"])}
    c = rows["Flux.dev", "Commutative"]
    assert (c["paper_misaligned"], c["pairs"]) == (2, 6) and c["paper_rate"] == pytest.approx(2 / 6)
    assert (c["paper_rate_lo"], c["paper_rate_hi"]) == pytest.approx(wilson(2, 6))
    assert c["decided_rate"] == 0.25  # 1 of the 4 decided, beside it
    (pooled,) = rate_rows(r, per_run=False)
    assert pooled["paper_misaligned"] == 6 and pooled["paper_rate"] == pytest.approx(6 / 12)
    h = heatmap(r, run="Flux.dev")
    i = LAWS.index("Commutative")
    j = h["dimensions"].index("y")
    assert h["paper_rate"][i, j] == 0.5 and h["pairs"][i, j] == 2 and h["paper_misaligned"][i, j] == 1
    assert math.isnan(h["decided_rate"][i, j])  # nothing decided in that cell under the abstention bands


def test_image_pairs_of_one_suite_pair_are_resampled_together() -> None:
    # 6 suite pairs × 4 seeds; the seeds of a pair agree: the interval must reflect 6 units, not 24
    rows = [("DeMorgan", "AND", "none", M if k < 3 else A, OMISSION if k < 3 else 0, "r")
            for k in range(6) for _ in range(4)]
    ids = [f"pair{k}|r|{s}" for k in range(6) for s in range(4)]
    r = results(rows, paper=[row[3] for row in rows], ids=ids)
    (row,) = rate_rows(r)
    assert row["suite_pairs"] == 6 and row["pairs"] == 24 and row["paper_rate"] == 0.5
    naive = wilson(12, 24)
    assert row["paper_rate_hi"] - row["paper_rate_lo"] > (naive[1] - naive[0]) * 1.5
    assert row["note"] == "fewer than 10 suite pairs"
    # the same call twice gives the same bounds (seeded); another seed other bounds
    rows = [("DeMorgan", "AND", "none", M if (k * 7 + s_) % 5 < 2 else A, 0, "r") for k in range(20) for s_ in range(3)]
    r = results(rows, paper=[row[3] for row in rows], ids=[f"q{k}|r|{s_}" for k in range(20) for s_ in range(3)])
    first, again, other = rate_rows(r)[0], rate_rows(r)[0], rate_rows(r, seed=7)[0]
    assert (first["paper_rate_lo"], first["paper_rate_hi"]) == (again["paper_rate_lo"], again["paper_rate_hi"])
    assert (other["paper_rate_lo"], other["paper_rate_hi"]) != (first["paper_rate_lo"], first["paper_rate_hi"])
    assert first["note"] == ""
    # and without resamples there are no bounds, only the rates
    (plain,) = rate_rows(r, n_boot=0)
    assert plain["paper_rate"] == first["paper_rate"] and math.isnan(plain["paper_rate_lo"]) and math.isnan(plain["coverage_hi"])


def test_overall_per_run_and_pooled() -> None:
    r = results(ROWS)
    per_run = {x["run"]: x for x in rate_rows(r)}
    assert per_run["Flux.dev"]["decided_rate"] == pytest.approx(4 / 8) and per_run["Flux.dev"]["published"] == 0.71
    assert per_run["mine"]["published"] is None
    (pooled,) = rate_rows(r, per_run=False)
    assert (pooled["pairs"], pooled["decided"], pooled["misaligned"]) == (12, 10, 5)
    by_dim = {x["dimension"]: x for x in rate_rows(r, ["dimension"], per_run=False)}
    assert by_dim["x"]["decided_rate"] == 1.0 and by_dim["x"]["published"] == 0.63
    assert by_dim["y"]["decided"] == 1 and by_dim["y"]["undecidable"] == 2 and by_dim["y"]["published"] == 0.85
    assert by_dim["none"]["dimension_title"] == "position-less"
    by_mod = {x["modifier"]: x for x in rate_rows(r, ["modifier"], per_run=False)}
    assert by_mod["AND"]["decided"] + by_mod["OR"]["decided"] == 10
    # a group with exactly one decided pair: its rate is that pair's, its interval Wilson's for n = 1
    y = by_dim["y"]
    assert y["decided_rate"] == 1.0 and (y["decided_rate_lo"], y["decided_rate_hi"]) == pytest.approx(wilson(1, 1))
    assert y["note"] == "fewer than 10 pairs"


def test_group_without_decided_pairs_has_no_rate() -> None:
    r = results([("DeMorgan", "AND", "y", U, 0, "x")] * 3)
    (row,) = rate_rows(r, ["law"])
    assert row["decided"] == 0 and math.isnan(row["decided_rate"]) and math.isnan(row["decided_rate_lo"])
    assert row["coverage"] == 0.0
    assert math.isnan(heatmap(r)["decided_rate"][LAWS.index("DeMorgan"), 0])


def test_heatmap_matrix() -> None:
    r = results(ROWS)
    h = heatmap(r, run="Flux.dev")
    assert h["laws"] == list(LAWS) and h["dimensions"] == ["none", "x", "y"]
    i, j = LAWS.index("Distributive"), h["dimensions"].index("x")
    assert h["decided_rate"][i, j] == 1.0 and h["decided"][i, j] == 1
    i = LAWS.index("Commutative")
    assert h["decided_rate"][i].tolist()[:2] == [0.0, 1.0] and math.isnan(h["decided_rate"][i, 2])
    assert h["undecidable"][i, 2] == 2 and h["pairs"][i, 2] == 2
    assert np.isnan(h["decided_rate"][LAWS.index("Associative")]).all()
    full = heatmap(r, dimensions=["none", "x", "y"])
    assert full["decided"].sum() == 10 and full["misaligned"].sum() == 5 and full["pairs"].sum() == 12
    assert (full["decided_lo"][i, 0], full["decided_hi"][i, 0]) == pytest.approx(wilson(1, 5))


def test_undecidable_pairs_by_reason_count_only_the_undecidable() -> None:
    from workstation.methods.metalogic.metrics import reason_rows

    r = results([("DeMorgan", "AND", "y", U, 0, "x")] * 3 + [("DeMorgan", "AND", "y", A, 0, "x")] * 2
                + [("DeMorgan", "AND", "y", M, OMISSION, "x")])
    r.reason[:] = [1, 1, 3, 1, 3, 0]  # decided pairs carry stray reason codes: they must not count
    rows = {x["reason"]: x for x in reason_rows(r)}
    assert (rows["near_threshold"]["count"], rows["near_boundary"]["count"], rows["ambiguous"]["count"]) == (2, 1, 0)
    assert rows["near_threshold"]["fraction"] == pytest.approx(2 / 6)


def test_computed_against_human_confusion_counts_every_cell_once() -> None:
    from workstation.methods.metalogic.metrics import agreement

    computed = np.array([A, A, M, M, M, U, A, U])
    human = np.array([A, M, M, M, U, U, -1, A])
    ag = agreement(computed, human)
    assert ag["confusion"].tolist() == [[1, 1, 0], [0, 2, 1], [1, 0, 1]]
    assert ag["n"] == 7 and ag["agreement"] == pytest.approx(4 / 7) and ag["small"]
    po, pe = 4 / 7, (2 * 2 + 3 * 3 + 2 * 2) / 49
    assert ag["kappa"] == pytest.approx((po - pe) / (1 - pe))
    assert ag["agreement_lo"] <= ag["agreement"] <= ag["agreement_hi"]
    assert ag["kappa_lo"] <= ag["kappa"] <= ag["kappa_hi"]


def test_tables_and_published_constants() -> None:
    t = misalignment_tables(results(ROWS))
    assert set(t) == {"overall", "law", "modifier", "dimension", "law_dimension", "law_modifier", "published"}
    pub = {(x["grouping"], x["group"]): x["rate"] for x in t["published"]}
    assert pub["model", "Flux.dev"] == 0.71 and pub["model", "DALL-E 3"] == 0.59
    assert pub["law", "Distributive"] == 0.86 and pub["dimension", "y"] == 0.85
    assert len(t["law_dimension"]) == 7  # Flux.dev: 2 laws x 3 dimensions; mine: 1


def test_student_pair_scores() -> None:
    s = pair_scores([31.5, 20.0], [29.0, 20.0], [0.8, 1.0], [0.6, 0.5])
    assert s["clip_diff"] == pytest.approx([0.025, 0.0])
    assert s["clip_stability"] == pytest.approx([0.975, 1.0])
    assert s["faith_diff"] == pytest.approx([0.2, 0.5]) and s["faith_stability"] == pytest.approx([0.8, 0.5])
    assert s["faith_mean"] == pytest.approx([0.7, 0.75])
    assert set(pair_scores([1.0], [2.0])) == {"clip_a", "clip_b", "clip_diff", "clip_stability"}
    with pytest.raises(ValueError):
        pair_scores([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        pair_scores([1.0], [1.0], [0.5])


def test_student_score_tables_without_resamples_have_means_and_no_bounds() -> None:
    s = pair_scores([30.0, 20.0], [28.0, 20.0])
    t = score_tables(["Commutative", "Commutative"], ["horizontal", "horizontal"], s, n_boot=0)
    (row,) = t["category"]
    assert row["clip_stability"] == pytest.approx(1 - 0.01) and math.isnan(row["clip_stability_lo"])


def test_student_aggregates_per_category() -> None:
    laws = ["Commutative", "Commutative", "DeMorgan", "DeMorgan"]
    dims = ["horizontal", "horizontal", "horizontal", "attributes"]
    s = pair_scores([30.0, 30.0, 25.0, 20.0], [28.0, 26.0, 25.0, 30.0], [1.0, 0.5, 0.75, 0.5], [1.0, 1.0, 0.25, np.nan])
    t = score_tables(laws, dims, s, n_boot=200)
    cat = {(r["law"], r["dimension"]): r for r in t["category"]}
    assert cat["Commutative", "horizontal"]["n"] == 2
    assert cat["Commutative", "horizontal"]["clip_stability"] == pytest.approx(1 - (0.02 + 0.04) / 2)
    assert cat["Commutative", "horizontal"]["faith_stability"] == pytest.approx((1.0 + 0.5) / 2)
    assert math.isnan(cat["DeMorgan", "attributes"]["faith_stability"])  # its only pair has no VQA score
    lo, hi = cat["Commutative", "horizontal"]["clip_stability_lo"], cat["Commutative", "horizontal"]["clip_stability_hi"]
    assert 0.96 <= lo <= hi <= 0.98
    law = {r["law"]: r for r in t["law"]}
    assert law["DeMorgan"]["clip_diff"] == pytest.approx((0.0 + 0.1) / 2)
    dim = [r["dimension"] for r in t["dimension"]]
    assert dim == ["horizontal", "attributes"]  # the student's order
    codes = score_tables(np.array([0, 0, 3, 3]), np.array([4, 4, 4, 6]), s, n_boot=50)
    assert codes["category"][0]["law"] == "Commutative" and codes["category"][0]["dimension"] == "horizontal"
