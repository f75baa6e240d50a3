"""MetaLogic metrics: rates over decided pairs with Wilson intervals, heatmap, published figures,
student scores."""

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


def results(rows: list[tuple[str, str, str, int, int, str]]) -> PairResults:
    """rows: (law, modifier, dimension, verdict, kind, run)."""
    n = len(rows)
    z = np.zeros((2, 1, n), np.int32)
    return PairResults(
        ids=np.array([f"p{i}" for i in range(n)], dtype=object),
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
    assert c["rate"] == 0.25 and c["coverage"] == pytest.approx(4 / 6)
    assert (c["rate_lo"], c["rate_hi"]) == pytest.approx(wilson(1, 4))
    assert (c["omission"], c["duplication"], c["positional"]) == (1, 0, 0)
    assert c["published"] == PUBLISHED["law"]["Commutative"] == 0.54
    d = rows["Flux.dev", "Distributive"]
    assert d["rate"] == 0.75 and (d["duplication"], d["positional"]) == (1, 2)
    assert rows["mine", "Commutative"]["rate"] == 0.5
    assert list(rows) == [("Flux.dev", "Commutative"), ("Flux.dev", "Distributive"), ("mine", "Commutative")]


def test_overall_per_run_and_pooled() -> None:
    r = results(ROWS)
    per_run = {x["run"]: x for x in rate_rows(r)}
    assert per_run["Flux.dev"]["rate"] == pytest.approx(4 / 8) and per_run["Flux.dev"]["published"] == 0.71
    assert per_run["mine"]["published"] is None
    (pooled,) = rate_rows(r, per_run=False)
    assert (pooled["pairs"], pooled["decided"], pooled["misaligned"]) == (12, 10, 5)
    by_dim = {x["dimension"]: x for x in rate_rows(r, ["dimension"], per_run=False)}
    assert by_dim["x"]["rate"] == 1.0 and by_dim["x"]["published"] == 0.63
    assert by_dim["y"]["decided"] == 1 and by_dim["y"]["undecidable"] == 2 and by_dim["y"]["published"] == 0.85
    assert by_dim["none"]["dimension_title"] == "position-less"
    by_mod = {x["modifier"]: x for x in rate_rows(r, ["modifier"], per_run=False)}
    assert by_mod["AND"]["decided"] + by_mod["OR"]["decided"] == 10


def test_group_without_decided_pairs_has_no_rate() -> None:
    r = results([("DeMorgan", "AND", "y", U, 0, "x")] * 3)
    (row,) = rate_rows(r, ["law"])
    assert row["decided"] == 0 and math.isnan(row["rate"]) and math.isnan(row["rate_lo"])
    assert math.isnan(heatmap(r)["rate"][LAWS.index("DeMorgan"), 0])


def test_heatmap_matrix() -> None:
    r = results(ROWS)
    h = heatmap(r, run="Flux.dev")
    assert h["laws"] == list(LAWS) and h["dimensions"] == ["none", "x", "y"]
    i, j = LAWS.index("Distributive"), h["dimensions"].index("x")
    assert h["rate"][i, j] == 1.0 and h["decided"][i, j] == 1
    i = LAWS.index("Commutative")
    assert h["rate"][i].tolist()[:2] == [0.0, 1.0] and math.isnan(h["rate"][i, 2])
    assert h["undecidable"][i, 2] == 2
    assert np.isnan(h["rate"][LAWS.index("Associative")]).all()
    full = heatmap(r, dimensions=["none", "x", "y"])
    assert full["decided"].sum() == 10 and full["misaligned"].sum() == 5
    assert (full["lo"][i, 0], full["hi"][i, 0]) == pytest.approx(wilson(1, 5))


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
