"""ProtoBias statistics against hand-computed values on small hand-made tables."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from workstation.evaluation.agreement import cohen_kappa, quadratic_weighted_kappa
from workstation.evaluation.intervals import bootstrap_interval, bootstrap_ratio_intervals, wilson_interval
from workstation.methods.protobias.metrics import (Ratings, Scale, TripletScores, annotator_kappa_table, failures,
                                                   human_agreement_table, human_scores, human_table, metric_table,
                                                   rescale, sc_pa_table)
from workstation.methods.protobias.published import (PUBLISHED_FAILURE_RATES, PUBLISHED_MARGINS, PUBLISHED_SC_PA,
                                                     published_failure_table)
from workstation.types import WorkstationError

SEED_003 = Path(__file__).resolve().parents[3].parent / "shared" / "seeds" / "003_8ca214b1bbcdd317.txt"
NAN = float("nan")

# Six triplets; "vqa_yes" is already in [0, 1] (identity rescaling), "clipscore" is min-max rescaled.
#   id  domain   vqa corr / adv            clip corr / adv
#   t1  animals  0.9 / 0.5  correct, +0.4   30 / 25
#   t2  animals  0.3 / 0.7  fails,   0.4    20 / 26
#   t3  animals  0.6 / 0.6  TIE → fails, 0  25 / 25
#   t4  objects  0.8 / 0.2  correct, +0.6   28 / 20
#   t5  objects  NaN / 0.4  missing         NaN / 40   (its adv score still sets the clip maximum)
#   t6  objects  0.1 / 0.5  fails,   0.4    22 / 30
IDS = ["t1", "t2", "t3", "t4", "t5", "t6"]
DOMS = ["animals"] * 3 + ["objects"] * 3
KNOBS = ["count", "color", "count", "spatial", "count", "scale_size"]
VQA = ([0.9, 0.3, 0.6, 0.8, NAN, 0.1], [0.5, 0.7, 0.6, 0.2, 0.4, 0.5])
CLIP = ([30, 20, 25, 28, NAN, 22], [25, 26, 25, 20, 40, 30])


def _scores() -> TripletScores:
    return TripletScores.from_mapping(IDS, DOMS, KNOBS, {"vqa_yes": VQA, "clipscore": CLIP})


def _row(rows: list[dict], **keys: str) -> dict:
    hit = [r for r in rows if all(r[k] == v for k, v in keys.items())]
    assert len(hit) == 1, (keys, hit)
    return hit[0]


def test_failures_ties_fail_and_nan_is_missing() -> None:
    fail, valid = failures(np.array([0.9, 0.3, 0.6, NAN, 0.5, np.inf]), np.array([0.5, 0.7, 0.6, 0.4, NAN, 1.0]))
    assert fail.tolist() == [False, True, True, False, False, False]
    assert valid.tolist() == [True, True, True, False, False, False]


def test_failure_rates_and_margins_by_hand() -> None:
    rows = metric_table(_scores(), domains=("animals", "objects", "demography"), n_boot=200, seed=1)
    a = _row(rows, metric="vqa_yes", domain="animals", knob="all")
    # animals: fails t2, t3 (tie) → 2/3; SC = (.9+.3+.6)/3 = .6; PA = (.5+.7+.6)/3 = .6
    # correct margin = t1's .4; incorrect margin = (t2's .4 + t3's 0) / 2 = .2
    assert (a["n"], a["n_fail"], a["n_tie"], a["n_correct"], a["n_missing"]) == (3, 2, 1, 1, 0)
    assert a["failure_rate"] == pytest.approx(2 / 3)
    assert (a["sc"], a["pa"], a["delta"]) == pytest.approx((0.6, 0.6, 0.0))
    assert (a["correct_margin"], a["incorrect_margin"]) == pytest.approx((0.4, 0.2))
    o = _row(rows, metric="vqa_yes", domain="objects", knob="all")
    # objects: t5 missing; t4 correct (.6), t6 fails (.4); SC = (.8+.1)/2 = .45; PA = (.2+.5)/2 = .35
    assert (o["n"], o["n_missing"], o["n_fail"], o["n_tie"]) == (2, 1, 1, 0)
    assert o["failure_rate"] == pytest.approx(0.5)
    assert (o["sc"], o["pa"], o["delta"]) == pytest.approx((0.45, 0.35, 0.1))
    assert (o["correct_margin"], o["incorrect_margin"]) == pytest.approx((0.6, 0.4))
    al = _row(rows, metric="vqa_yes", domain="all", knob="all")
    # all: 3 failures of 5; SC = 2.7/5 = .54; PA = 2.5/5 = .5; correct (.4+.6)/2 = .5;
    # incorrect (.4 + 0 + .4)/3 = .26667
    assert (al["n"], al["n_fail"], al["n_missing"]) == (5, 3, 1)
    assert (al["failure_rate"], al["sc"], al["pa"]) == pytest.approx((0.6, 0.54, 0.5))
    assert (al["correct_margin"], al["incorrect_margin"]) == pytest.approx((0.5, 0.8 / 3))
    # the empty domain: a row with n = 0 and NaN statistics
    d = _row(rows, metric="vqa_yes", domain="demography", knob="all")
    assert d["n"] == 0 and math.isnan(d["failure_rate"]) and math.isnan(d["failure_rate_lo"])
    assert math.isnan(d["correct_margin"]) and math.isnan(d["sc"])
    assert [r["domain"] for r in rows if r["metric"] == "vqa_yes"] == ["animals", "objects", "demography", "all"]


def test_min_max_rescaling_by_hand() -> None:
    rows = metric_table(_scores(), n_boot=0)
    # clipscore: finite scores range 20..40 (t5's adv 40 counts) → (x − 20) / 20
    # scaled corr: t1 .5, t2 0, t3 .25, t4 .4, t6 .1; adv: t1 .25, t2 .3, t3 .25, t4 0, t6 .5
    a = _row(rows, metric="clipscore", domain="animals")
    assert a["failure_rate"] == pytest.approx(2 / 3)  # t2 fails, t3 ties
    assert (a["sc"], a["pa"]) == pytest.approx((0.75 / 3, 0.8 / 3))
    assert (a["correct_margin"], a["incorrect_margin"]) == pytest.approx((0.25, 0.15))  # t1 .25; (t2 .3 + 0)/2
    o = _row(rows, metric="clipscore", domain="objects")
    assert (o["sc"], o["pa"], o["correct_margin"], o["incorrect_margin"]) == pytest.approx((0.25, 0.25, 0.4, 0.4))
    assert a["scale"] == "min-max over the data set"
    assert _row(rows, metric="vqa_yes", domain="animals")["scale"] == "linear from [0, 1]"
    # n_boot = 0: no intervals
    assert math.isnan(a["sc_lo"]) and math.isnan(a["failure_rate_hi"])


def test_by_knob_rows() -> None:
    rows = metric_table(_scores(), by_knob=True, n_boot=0)
    # animals × count: t1 (correct) and t3 (tie → fail) → 1/2; objects × count: only t5, missing
    assert _row(rows, metric="vqa_yes", domain="animals", knob="count")["failure_rate"] == pytest.approx(0.5)
    oc = _row(rows, metric="vqa_yes", domain="objects", knob="count")
    assert (oc["n"], oc["n_missing"]) == (0, 1) and math.isnan(oc["failure_rate"])
    # all domains × count: t1, t3 (t5 missing) → 1/2
    assert _row(rows, metric="vqa_yes", domain="all", knob="count")["failure_rate"] == pytest.approx(0.5)
    assert _row(rows, metric="vqa_yes", domain="objects", knob="scale_size")["failure_rate"] == 1.0


def test_bootstrap_intervals_are_seeded_and_bracket_the_estimate() -> None:
    s = _scores()
    r1 = metric_table(s, n_boot=500, seed=3)
    r2 = metric_table(s, n_boot=500, seed=3)
    r3 = metric_table(s, n_boot=500, seed=4)
    assert str(r1) == str(r2)  # as text: NaN != NaN
    assert str(r1) != str(r3)
    for r in r1:
        for stat in ("failure_rate", "sc", "pa", "delta", "correct_margin", "incorrect_margin"):
            if r["n"] and not math.isnan(r[stat]):
                assert r[f"{stat}_lo"] - 1e-12 <= r[stat] <= r[f"{stat}_hi"] + 1e-12, (r, stat)
    # a group where every triplet fails: a failure rate of independent triplets has Wilson's interval,
    # not the bootstrap's point [1, 1] (one triplet cannot make a failure rate certain)
    sc = _row(metric_table(s, by_knob=True, n_boot=300), metric="vqa_yes", domain="objects", knob="scale_size")
    assert (sc["n"], sc["failure_rate"]) == (1, 1.0)
    assert (sc["failure_rate_lo"], sc["failure_rate_hi"]) == pytest.approx(wilson_interval(1, 1))


def test_bootstrap_ratio_intervals() -> None:
    # 30 ones and 70 zeros: the bootstrap mean is Binomial(100, .3) / 100, whose 2.5 % and 97.5 %
    # quantiles are 21 and 39 (binomial table) → about [.21, .39]
    x = np.r_[np.ones(30), np.zeros(70)]
    lo, hi = bootstrap_ratio_intervals(x, np.ones(100), n_boot=20000, seed=1)
    assert abs(lo[0] - 0.21) <= 0.011 and abs(hi[0] - 0.39) <= 0.011
    # the same resampling as bootstrap_interval (another random stream): same interval up to noise
    y = np.random.default_rng(0).normal(size=60)
    lo, hi = bootstrap_ratio_intervals(y, np.ones(60), n_boot=20000, seed=2)
    ref = bootstrap_interval(y, n_boot=20000, seed=3)
    assert abs(lo[0] - ref[0]) < 0.02 and abs(hi[0] - ref[1]) < 0.02
    # columns share resamples: identical columns get identical intervals
    lo, hi = bootstrap_ratio_intervals(np.c_[y, y, 2 * y], np.ones((60, 3)), n_boot=300, seed=4)
    assert lo[0] == lo[1] and lo[2] == pytest.approx(2 * lo[0])
    # a conditional mean: resamples without a denominator are left out; none at all → NaN
    lo, hi = bootstrap_ratio_intervals(np.c_[[5.0, 0.0], [1.0, 1.0]], np.c_[[1.0, 0.0], [0.0, 0.0]], n_boot=200)
    assert (lo[0], hi[0]) == (5.0, 5.0) and math.isnan(lo[1]) and math.isnan(hi[1])
    lo, hi = bootstrap_ratio_intervals(np.zeros((0, 2)), np.zeros((0, 2)))
    assert np.isnan(lo).all() and np.isnan(hi).all()


def test_rescale_rules() -> None:
    c, a = rescale(np.array([1.0, 4.0, NAN]), np.array([2.0, 3.0, 1.0]), Scale("range", 1, 4))
    assert np.allclose(c[:2], [0.0, 1.0]) and math.isnan(c[2]) and np.allclose(a, [1 / 3, 2 / 3, 0.0])
    with pytest.raises(WorkstationError, match="outside its stated range"):
        rescale(np.array([0.5]), np.array([1.2]), Scale("range", 0, 1), "vqa_yes")
    c, a = rescale(np.array([7.0, NAN]), np.array([7.0, 7.0]), Scale("minmax"))  # constant → 0.5
    assert c[0] == 0.5 and math.isnan(c[1]) and a.tolist() == [0.5, 0.5]
    s = TripletScores.from_mapping(["a"], ["animals"], ["count"], {"judge": ([5.0], [1.0])})
    with pytest.raises(WorkstationError, match="outside its stated range"):
        metric_table(s, scales={"judge": Scale("range", 1, 4)})


def test_all_nan_metric_and_input_checks() -> None:
    s = TripletScores.from_mapping(["a", "b"], ["animals", "objects"], ["count", "count"],
                                   {"m": ([NAN, NAN], [0.1, NAN])})
    r = _row(metric_table(s, n_boot=100), metric="m", domain="all")
    assert (r["n"], r["n_missing"]) == (0, 2) and math.isnan(r["failure_rate"])
    with pytest.raises(WorkstationError, match="expected 2 scores"):
        TripletScores.from_mapping(["a", "b"], ["x", "y"], ["k", "k"], {"m": ([1.0], [1.0, 2.0])})
    with pytest.raises(WorkstationError, match="triplet id repeats"):
        TripletScores.from_mapping(["a", "a"], ["x", "y"], ["k", "k"], {"m": ([1.0, 2], [1.0, 2.0])})


# ---- humans ----------------------------------------------------------------------------------------
# Events (order = sequence number; A's first rating of t6:corr, 2, is superseded by a later 4 even
# though it comes later in the arrays):
#   t1:corr A 4, B 3 → 3.5   t1:adv A 1, B 2 → 1.5        humans prefer corr
#   t4:corr A 3, B 3 → 3     t4:adv A 3, B 3 → 3          tie
#   t5:corr A 4      → 4     t5:adv A 1      → 1          corr
#   t6:corr A 4, B 4 → 4     t6:adv A 1, B 1, C 2 → 4/3   corr
EVENTS = [
    ("t1", "corr", "A", 4, 1), ("t1", "corr", "B", 3, 2), ("t1", "adv", "A", 1, 3), ("t1", "adv", "B", 2, 4),
    ("t4", "corr", "A", 3, 5), ("t4", "corr", "B", 3, 6), ("t4", "adv", "A", 3, 7), ("t4", "adv", "B", 3, 8),
    ("t5", "corr", "A", 4, 9), ("t5", "adv", "A", 1, 10),
    ("t6", "corr", "A", 4, 12), ("t6", "corr", "B", 4, 13), ("t6", "adv", "A", 1, 14), ("t6", "adv", "B", 1, 15),
    ("t6", "adv", "C", 2, 16), ("t6", "corr", "A", 2, 11),
]


def _ratings() -> Ratings:
    cols = list(zip(*EVENTS))
    return Ratings.from_columns(cols[0], cols[1], cols[2], cols[3], order=np.array(cols[4]))


def test_human_scores_use_the_latest_rating() -> None:
    h = human_scores(_ratings())
    c, a = h.lookup(np.array(["t1", "t4", "t5", "t6", "t2"], dtype=object))
    assert np.allclose(c[:4], [3.5, 3.0, 4.0, 4.0]) and np.allclose(a[:4], [1.5, 3.0, 1.0, 4 / 3])
    assert math.isnan(c[4]) and math.isnan(a[4])
    assert h.n_adv[list(h.triplet_id).index("t6")] == 3


def test_human_table_by_hand() -> None:
    rows = human_table(_ratings(), IDS, DOMS, n_boot=200)
    # scaled (r − 1)/3. animals: t1 → SC 5/6, PA 1/6, Δ 2/3
    a = _row(rows, domain="animals")
    assert (a["n"], a["n_unrated"]) == (1, 2)
    assert (a["sc"], a["pa"], a["delta"]) == pytest.approx((5 / 6, 1 / 6, 2 / 3))
    # objects: t4 (2/3, 2/3), t5 (1, 0), t6 (1, 1/9) → SC 8/9, PA 7/27, Δ 17/27; one tie
    o = _row(rows, domain="objects")
    assert (o["sc"], o["pa"], o["delta"]) == pytest.approx((8 / 9, 7 / 27, 17 / 27))
    assert (o["n_prefer_corr"], o["n_tie"], o["n_prefer_adv"]) == (2, 1, 0)
    assert o["failure_rate"] == pytest.approx(1 / 3)  # the tie counts as a failure
    al = _row(rows, domain="all")
    # all four: SC (5/6 + 2/3 + 1 + 1)/4 = 7/8; PA (1/6 + 2/3 + 0 + 1/9)/4 = 17/72
    assert (al["n"], al["sc"], al["pa"]) == (4, pytest.approx(7 / 8), pytest.approx(17 / 72))


def test_table2_restricts_to_rated_triplets_after_rescaling() -> None:
    rows = sc_pa_table(_scores(), _ratings(), n_boot=0)
    # vqa_yes, animals: only t1 is rated → SC .9, PA .5
    v = _row(rows, metric="vqa_yes", domain="animals")
    assert (v["n"], v["sc"], v["pa"], v["delta"]) == (1, 0.9, 0.5, pytest.approx(0.4))
    # objects: t4, t6 (t5 rated but unscored) → SC .45, PA .35
    v = _row(rows, metric="vqa_yes", domain="objects")
    assert (v["n"], v["n_missing"]) == (2, 1) and (v["sc"], v["pa"]) == pytest.approx((0.45, 0.35))
    # clipscore is min-max rescaled over ALL six triplets (20..40), then restricted: t1 → .5 / .25
    c = _row(rows, metric="clipscore", domain="animals")
    assert (c["sc"], c["pa"]) == pytest.approx((0.5, 0.25))
    h = _row(rows, metric="human", domain="objects")
    assert (h["sc"], h["pa"]) == pytest.approx((8 / 9, 7 / 27))


def test_agreement_with_humans_by_hand() -> None:
    rows = human_agreement_table(_scores(), _ratings(), n_boot=100)
    # vqa_yes: t1 metric corr / humans corr → agree; t4 human tie (left out); t5 metric missing;
    # t6 metric adv / humans corr → disagree
    a = _row(rows, metric="vqa_yes", domain="animals")
    assert (a["n"], a["n_agree"], a["agreement"], a["n_unrated"]) == (1, 1, 1.0, 2)
    o = _row(rows, metric="vqa_yes", domain="objects")
    assert (o["n"], o["n_agree"], o["n_human_tie"], o["n_missing"]) == (1, 0, 1, 1)
    al = _row(rows, metric="vqa_yes", domain="all")
    assert (al["n"], al["agreement"]) == (2, 0.5)
    # clipscore (raw): t1 30 > 25 agree; t6 22 < 30 disagree
    assert _row(rows, metric="clipscore", domain="all")["agreement"] == 0.5


def test_annotator_kappas_by_hand() -> None:
    rows = annotator_kappa_table(_ratings())
    ab = _row(rows, annotator_a="A", annotator_b="B")
    # A vs B on six images: (4,3) (1,2) (3,3) (3,3) (4,4) (1,1)
    # Σ w·O = (1 + 1)/9 = 2/9. Marginals A: r1 2, r2 0, r3 2, r4 2; B: r1 1, r2 1, r3 3, r4 1.
    # Σ a_i b_j (i−j)² = 44 (i=1) + 0 + 12 (i=3) + 32 (i=4) = 88 → Σ w·E = 88 / (9·6)
    # κ_w = 1 − (2/9) / (88/54) = 1 − 108/792 = 19/22
    # unweighted: p_o = 4/6, p_e = (2·1 + 0·1 + 2·3 + 2·1)/36 = 10/36 → κ = (24 − 10)/(36 − 10) = 7/13
    assert ab["n"] == 6 and ab["percent_agreement"] == pytest.approx(4 / 6)
    assert ab["kappa_w"] == pytest.approx(19 / 22) and ab["kappa"] == pytest.approx(7 / 13)
    # A vs C share one image, (1, 2): with one item κ is 0 or undefined by chance alone (the same
    # rating or two): undefined, as for a pair who gave one image the same rating
    ac = _row(rows, annotator_a="A", annotator_b="C")
    assert ac["n"] == 1 and math.isnan(ac["kappa_w"]) and math.isnan(ac["kappa"])


def test_weighted_kappa_matches_methods_formula() -> None:
    # METHODS.md §3: κ_w = 1 − Σ w_ij O_ij / Σ w_ij E_ij, w_ij = (i − j)² / (k − 1)².
    # a = [1,2,3,4,4], b = [1,2,4,4,3]: Σ w·O = 2/9; both marginals (1,1,1,2);
    # Σ a_i b_j (i−j)² = 23 + 10 + 7 + 28 = 68 → Σ w·E = 68/45 → κ_w = 1 − 90/612 = 29/34
    assert quadratic_weighted_kappa([1, 2, 3, 4, 4], [1, 2, 4, 4, 3]) == pytest.approx(29 / 34)
    # unweighted: p_o = 3/5, p_e = 7/25 → κ = (15 − 7)/(25 − 7) = 4/9
    assert cohen_kappa([1, 2, 3, 4, 4], [1, 2, 4, 4, 3]) == pytest.approx(4 / 9)
    # perfect agreement → 1; complete reversal on a symmetric table → −1
    assert quadratic_weighted_kappa([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert quadratic_weighted_kappa([1, 4], [4, 1]) == pytest.approx(-1.0)
    assert math.isnan(quadratic_weighted_kappa([NAN], [2]))


def test_ratings_validation_and_label_events() -> None:
    with pytest.raises(WorkstationError, match="whole numbers 1..4"):
        Ratings.from_columns(["t"], ["corr"], ["A"], [5])
    with pytest.raises(WorkstationError, match="whole numbers 1..4"):
        Ratings.from_columns(["t"], ["corr"], ["A"], [2.5])
    with pytest.raises(WorkstationError, match="role must be"):
        Ratings.from_columns(["t"], ["left"], ["A"], [2])
    r = Ratings.from_label_events(["pb-a-1:corr", "pb-a-1:adv", "pb-a-1:adv"], ["A", "A", "A"], ["4", "2", None],
                                  order=[1, 2, 3])
    assert r.triplet_id.tolist() == ["pb-a-1"] * 3 and r.role.tolist() == ["corr", "adv", "adv"]
    h = human_scores(r)
    assert h.mean_corr.tolist() == [4.0] and math.isnan(h.mean_adv[0])  # the latest event cleared the rating


def test_published_reference_matches_the_seed() -> None:
    assert {m: fr for m, _s, fr, _r in PUBLISHED_FAILURE_RATES}["CLIPScore"] == 0.7162
    assert [r["relation"] for r in published_failure_table()] == ["=", "=", ">", ">", "=", "="]
    if not SEED_003.is_file():
        pytest.skip(f"seed text not found at {SEED_003} (needs ../shared beside the checkout)")
    text = SEED_003.read_text(encoding="utf-8")
    for metric, _scorer, fr, rel in PUBLISHED_FAILURE_RATES:
        pct = f"{fr * 100:.2f}%" if rel == "=" else f"over {fr * 100:.0f}%"
        assert pct in text, (metric, pct)
    rows: dict[str, list[list[float]]] = {}
    for ln in text.splitlines():
        m = re.match(r"^(?:<b>)?([A-Za-z0-9-]+)(?: \(Ours\))?(?:</b>)?\t(.*)$", ln)
        if m:
            cells = re.sub(r"</?[bu]>", "", m.group(2)).split("\t")
            if all(re.fullmatch(r"-?\d\.\d+", c) for c in cells):
                rows.setdefault(m.group(1).lower(), []).append([float(c) for c in cells])
    doms = ("animals", "demography", "objects")
    for metric, per in PUBLISHED_MARGINS.items():  # Table 1: six margins, three decimals
        table1 = [r for r in rows[metric.lower()] if len(r) == 6]
        assert table1 == [[per[d][0] for d in doms] + [per[d][1] for d in doms]], metric
    for metric, per2 in PUBLISHED_SC_PA.items():  # Table 2: SC, PA, Δ per domain
        table2 = [r for r in rows[metric.lower()] if len(r) == 9]
        assert table2 == [[v for d in ("animals", "demography", "objects") for v in per2[d]]], metric


def test_a_kappa_from_two_images_says_so_and_carries_its_interval() -> None:
    # two annotators who rated the same two images in opposite ways: κ_w = −1 from n = 2
    r = Ratings.from_columns(["t1", "t1", "t1", "t1"], ["corr", "adv", "corr", "adv"], ["A", "A", "B", "B"],
                             [1, 4, 4, 1])
    (row,) = annotator_kappa_table(r)
    assert (row["n"], row["triplets"], row["kappa_w"]) == (2, 1, pytest.approx(-1.0))
    assert row["note"] == "fewer than 10 images"
    assert row["kappa_w_lo"] <= row["kappa_w"] <= row["kappa_w_hi"]
    many = annotator_kappa_table(_many_ratings(30))
    assert many[0]["note"] == "" and many[0]["triplets"] == 30 and many[0]["n"] == 60
    assert many[0]["kappa_w_lo"] < many[0]["kappa_w"] < many[0]["kappa_w_hi"]


def _many_ratings(n: int) -> Ratings:
    rng = np.random.default_rng(4)
    tid, role, ann, rating = [], [], [], []
    for t in range(n):
        for rl in ("corr", "adv"):
            base = int(rng.integers(1, 5))
            for a in ("A", "B"):
                tid.append(f"t{t}")
                role.append(rl)
                ann.append(a)
                rating.append(int(np.clip(base + rng.integers(-1, 2), 1, 4)))
    return Ratings.from_columns(tid, role, ann, rating)


def test_human_statistics_count_a_triplet_only_when_both_images_are_rated() -> None:
    # t1: both images rated; t2: only I_corr rated; t3: nothing
    r = Ratings.from_columns(["t1", "t1", "t2"], ["corr", "adv", "corr"], ["A", "A", "A"], [4, 1, 4])
    rows = human_table(r, ["t1", "t2", "t3"], ["animals"] * 3, n_boot=0)
    a = _row(rows, domain="animals")
    assert (a["n"], a["n_unrated"]) == (1, 2)
    assert (a["sc"], a["pa"], a["failure_rate"]) == (1.0, 0.0, 0.0)
    assert (a["n_prefer_corr"], a["n_tie"], a["n_prefer_adv"]) == (1, 0, 0)
