"""ProtoBias's numbers read value by value: inputs refused with their message, rescaling at its
edges, every table's bounds against the resamples they are documented to come from, and what
each human statistic counts (the mutation run of `methods/protobias/metrics.py` uses these)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workstation.evaluation.agreement import annotator_agreement
from workstation.evaluation.intervals import ratio_estimates
from workstation.methods.protobias.metrics import (
    Ratings,
    Scale,
    TripletScores,
    _seed,
    annotator_kappa_table,
    failures,
    human_agreement_table,
    human_scores,
    human_table,
    metric_table,
    rescale,
    sc_pa_table,
)
from workstation.types import WorkstationError

NAN = float("nan")


def scores(n: int = 24, seed: int = 0) -> TripletScores:
    rng = np.random.default_rng(seed)
    ids = [f"t{i:02d}" for i in range(n)]
    dom = ["animals" if i % 2 else "objects" for i in range(n)]
    knob = ["count" if i % 3 else "color" for i in range(n)]
    corr, adv = rng.random(n), rng.random(n)
    return TripletScores.from_mapping(ids, dom, knob, {"toy_proto": (corr, adv), "clipscore": (corr * 30 + 10, adv * 30)})


def ratings_of(pairs: list[tuple[str, str, str, float]]) -> Ratings:
    cols = list(zip(*pairs))
    return Ratings.from_columns(cols[0], cols[1], cols[2], cols[3])


# ---- inputs -------------------------------------------------------------------------------------------
def test_triplet_scores_refuse_what_does_not_fit_with_one_message() -> None:
    ids, dom, knob = ["a", "b"], ["animals", "objects"], ["count", "count"]
    with pytest.raises(WorkstationError, match="^triplet scores: triplet_id, domain and knob differ in length$"):
        TripletScores(np.array(ids, dtype=object), np.array(dom[:1], dtype=object), np.array(knob, dtype=object),
                      ("m",), np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(WorkstationError, match="differ in length"):
        TripletScores(np.array(ids, dtype=object), np.array(dom, dtype=object), np.array(knob[:1], dtype=object),
                      ("m",), np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(WorkstationError, match=r"^triplet scores: score arrays must be 2×1$"):
        TripletScores(np.array(ids, dtype=object), np.array(dom, dtype=object), np.array(knob, dtype=object),
                      ("m",), np.zeros((2, 1)), np.zeros((2, 2)))
    with pytest.raises(WorkstationError, match=r"score arrays must be 2×1"):
        TripletScores(np.array(ids, dtype=object), np.array(dom, dtype=object), np.array(knob, dtype=object),
                      ("m",), np.zeros((1, 1)), np.zeros((2, 1)))
    with pytest.raises(WorkstationError, match="^triplet scores: a metric name repeats$"):
        TripletScores(np.array(ids, dtype=object), np.array(dom, dtype=object), np.array(knob, dtype=object),
                      ("m", "m"), np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(WorkstationError, match="^triplet scores: a triplet id repeats$"):
        TripletScores.from_mapping(["a", "a"], dom, knob, {"m": ([0.1, 0.2], [0.1, 0.2])})
    with pytest.raises(WorkstationError, match="^metric 'm': expected 2 scores per image role, got 1 and 2$"):
        TripletScores.from_mapping(ids, dom, knob, {"m": ([0.1], [0.1, 0.2])})
    with pytest.raises(WorkstationError, match="got 2 and 3"):
        TripletScores.from_mapping(ids, dom, knob, {"m": ([0.1, 0.2], [0.1, 0.2, 0.3])})
    # None is a missing score; a column reads back, a subset keeps every field
    s = TripletScores.from_mapping([1, 2], dom, knob, {"m": ([0.5, None], [0.25, 0.75]), "k": ([1, 2], [3, 4])})
    assert s.triplet_id.tolist() == ["1", "2"] and len(s) == 2
    c, a = s.column("m")
    assert c[0] == 0.5 and math.isnan(c[1]) and a.tolist() == [0.25, 0.75]
    assert s.column("k")[0].tolist() == [1.0, 2.0]
    sub = s.subset(np.array([False, True]))
    assert (sub.triplet_id.tolist(), sub.domain.tolist(), sub.knob.tolist(), sub.metrics) == (["2"], ["objects"],
                                                                                            ["count"], ("m", "k"))
    assert sub.score_adv.tolist() == [[0.75, 4.0]] and math.isnan(sub.score_corr[0, 0])


def test_ratings_refuse_what_does_not_fit_with_one_message() -> None:
    with pytest.raises(WorkstationError, match="^ratings: the columns differ in length$"):
        Ratings.from_columns(["t"], ["corr", "adv"], ["A"], [1])
    with pytest.raises(WorkstationError, match="^ratings: the columns differ in length$"):
        Ratings.from_columns(["t"], ["corr"], ["A"], [1], order=[1, 2])
    with pytest.raises(WorkstationError, match="^ratings: role must be corr or adv, got left, up$"):
        Ratings.from_columns(["t", "t", "t"], ["up", "left", "corr"], ["A"] * 3, [1, 2, 3])
    with pytest.raises(WorkstationError, match="^ratings must be whole numbers 1..4$"):
        Ratings.from_columns(["t"], ["corr"], ["A"], [0])
    with pytest.raises(WorkstationError, match="^ratings: infinite rating$"):
        Ratings.from_columns(["t"], ["corr"], ["A"], [np.inf])
    r = Ratings.from_columns([7], ["adv"], [3], [None])
    assert r.triplet_id.tolist() == ["7"] and r.annotator.tolist() == ["3"] and math.isnan(r.rating[0])
    assert r.image_ids().tolist() == ["7:adv"] and r.image_ids().dtype == object
    ev = Ratings.from_label_events(["t1:corr", "t1:adv", "t2:corr", "t2:adv"], ["A"] * 4, ["4", None, " ", "2"],
                                   order=[4, 3, 2, 1])
    assert ev.triplet_id.tolist() == ["t1", "t1", "t2", "t2"] and ev.role.tolist() == ["corr", "adv", "corr", "adv"]
    assert ev.rating[0] == 4.0 and math.isnan(ev.rating[1]) and math.isnan(ev.rating[2]) and ev.rating[3] == 2.0
    assert ev.order.tolist() == [4, 3, 2, 1]
    with pytest.raises(WorkstationError, match="^rating of t1:corr: 'good' is not a number 1..4$"):
        Ratings.from_label_events(["t1:corr"], ["A"], ["good"])


# ---- rescaling and failures -----------------------------------------------------------------------
def test_rescaling_at_its_edges() -> None:
    c, a = rescale(np.array([1, 4, None], dtype=float), np.array([2.5, 1.0, 4.0]), Scale("range", 1, 4))
    assert c[:2].tolist() == [0.0, 1.0] and math.isnan(c[2]) and a.tolist() == [0.5, 0.0, 1.0]
    # within the tolerance of the range: kept and clipped to [0, 1]
    c, a = rescale(np.array([-1e-12, 1 + 1e-12]), np.array([0.5, 0.5]), Scale("range", 0, 1))
    assert c.tolist() == [0.0, 1.0]
    with pytest.raises(WorkstationError, match=r"^clipscore: scores from -0.1 to 0.5 lie outside its stated range \[0, 1\]$"):
        rescale(np.array([-0.1]), np.array([0.5]), Scale("range", 0, 1), "clipscore")
    with pytest.raises(WorkstationError, match="^metric: scores from 0.5 to 1.1 lie outside"):
        rescale(np.array([0.5]), np.array([1.1]), Scale("range", 0, 1))
    with pytest.raises(WorkstationError, match=r"^m: scale range \[1.0, 1.0\] is empty$"):
        rescale(np.array([1.0]), np.array([1.0]), Scale("range", 1, 1), "m")
    with pytest.raises(WorkstationError, match="^m: unknown scale kind 'log'$"):
        rescale(np.array([1.0]), np.array([1.0]), Scale("log"), "m")
    # min–max: a constant metric maps to 0.5, a missing score stays missing, nothing finite passes through
    c, a = rescale(np.array([3.0, NAN]), np.array([3.0, 3.0]), Scale("minmax"))
    assert c[0] == 0.5 and math.isnan(c[1]) and a.tolist() == [0.5, 0.5]
    c, a = rescale(np.array([7.0]), np.array([NAN]), Scale("minmax"))
    assert c.tolist() == [0.5] and math.isnan(a[0])
    c, a = rescale(np.array([NAN]), np.array([NAN]), Scale("minmax"))
    assert math.isnan(c[0]) and math.isnan(a[0])
    c, a = rescale(np.array([10.0, 30.0]), np.array([20.0, 10.0]), Scale("minmax"))
    assert c.tolist() == [0.0, 1.0] and a.tolist() == [0.5, 0.0]
    fail, valid = failures([0.5, None], [0.5, 0.2])
    assert fail.tolist() == [True, False] and valid.tolist() == [True, False]


# ---- the tables' bounds ----------------------------------------------------------------------------------
def test_metric_table_bounds_come_from_the_documented_resamples() -> None:
    s = scores()
    rows = metric_table(s, n_boot=400, level=0.9, seed=7)
    row = next(r for r in rows if r["metric"] == "toy_proto" and r["domain"] == "objects")
    corr, adv = s.column("toy_proto")
    m = s.domain == "objects"
    f = (adv[m] >= corr[m]).astype(float)
    # the failure rate: Wilson at 90 %
    fr = ratio_estimates(f, np.ones(int(m.sum())), None, n_boot=400, seed=_seed(7, "metric_table", "objects", "all"),
                         level=0.9)[0]
    assert (row["failure_rate_lo"], row["failure_rate_hi"]) == pytest.approx((fr.lo, fr.hi), rel=1e-12)
    assert fr.method == "wilson"
    # SC: the bootstrap over the group's triplets, with the seed derived from (seed, table, domain, knob)
    sc = ratio_estimates(corr[m], np.ones(int(m.sum())), None, proportion=False, n_boot=400,
                         seed=_seed(7, "metric_table", "objects", "all"), level=0.9)[0]
    assert (row["sc_lo"], row["sc_hi"]) == pytest.approx((sc.lo, sc.hi), rel=1e-12)
    # the defaults: 1,000 resamples, 95 %, seed 0
    assert metric_table(s) == metric_table(s, n_boot=1000, level=0.95, seed=0)
    assert _seed(0, "a", 1) == _seed(0, "a", 1) != _seed(0, "a", 2)
    assert _seed(1, "a", 1) != _seed(0, "a", 1) and 0 <= _seed(5, "x") < 2 ** 32
    assert _seed(0, "ab") != _seed(0, "a", "b")  # keys are kept apart
    by_knob = metric_table(s, by_knob=True, n_boot=300, seed=1)
    k = next(r for r in by_knob if r["metric"] == "clipscore" and r["domain"] == "all" and r["knob"] == "color")
    mk = s.knob == "color"
    kc, ka = s.column("clipscore")
    ref = ratio_estimates((ka[mk] >= kc[mk]).astype(float), np.ones(int(mk.sum())), None, n_boot=300,
                          seed=_seed(1, "metric_table", "all", "color"))[0]
    assert (k["failure_rate"], k["failure_rate_lo"]) == pytest.approx((ref.value, ref.lo), rel=1e-12)
    sc_row = next(r for r in metric_table(s, n_boot=300, seed=1) if r["metric"] == "clipscore" and r["domain"] == "all")
    # SC on the min–max scale (10 + 30·u over 0..40 → (x − min) / (max − min)) with its bootstrap
    allc = np.concatenate([kc, ka])
    scaled = (kc - allc.min()) / (allc.max() - allc.min())
    ref = ratio_estimates(scaled, np.ones(len(scaled)), None, proportion=False, n_boot=300,
                          seed=_seed(1, "metric_table", "all", "all"))[0]
    assert (sc_row["sc"], sc_row["sc_lo"], sc_row["sc_hi"]) == pytest.approx((ref.value, ref.lo, ref.hi))


def test_human_tables_count_rated_triplets_and_use_their_own_seeds() -> None:
    s = scores(12)
    pairs = []
    rng = np.random.default_rng(3)
    for i, t in enumerate(s.triplet_id.tolist()[:10]):
        for role in ("corr", "adv"):
            pairs.append((t, role, "A", int(rng.integers(1, 5))))
    pairs.append(("t10", "corr", "A", 4))  # t10: one image rated only
    r = ratings_of(pairs)
    rows = human_table(r, s.triplet_id, s.domain, n_boot=300, seed=2)
    al = next(x for x in rows if x["domain"] == "all")
    assert (al["n"], al["n_unrated"]) == (10, 2)
    hc, ha = human_scores(r).lookup(s.triplet_id)
    ok = np.isfinite(hc) & np.isfinite(ha)
    # every triplet is resampled (an unrated one counts nothing), SC over the rated ones
    rated = ok.astype(float)
    sc = np.where(ok, (hc - 1) / 3, 0.0)
    pa = np.where(ok, (ha - 1) / 3, 0.0)
    ref = ratio_estimates(sc, rated, None, proportion=False, n_boot=300, seed=_seed(2, "human", "all"))[0]
    assert (al["sc"], al["sc_lo"], al["sc_hi"]) == pytest.approx((ref.value, ref.lo, ref.hi), rel=1e-12)
    fr = ratio_estimates((pa >= sc) * rated, rated, None, n_boot=300, seed=_seed(2, "human", "all"))[0]
    assert (al["failure_rate"], al["failure_rate_lo"]) == pytest.approx((fr.value, fr.lo), rel=1e-12)
    assert fr.method == "wilson" and ref.n == 10
    assert al["metric"] == "human"
    assert human_table(r, s.triplet_id, s.domain) == human_table(r, s.triplet_id, s.domain, n_boot=1000, seed=0)
    only = human_table(r, s.triplet_id, s.domain, domains=("animals",), n_boot=0)
    assert [x["domain"] for x in only] == ["animals", "all"]
    # Table 2: metrics and humans over the same rated triplets, metrics rescaled over all of them
    t2 = sc_pa_table(s, r, scales={"clipscore": Scale("range", 0, 40)}, n_boot=200, level=0.9, seed=4)
    cl = next(x for x in t2 if x["metric"] == "clipscore" and x["domain"] == "all")
    kc, _ = s.column("clipscore")
    # (Table 2's rows are over the rated triplets only: those are its items)
    ref = ratio_estimates(kc[ok] / 40, np.ones(10), None, proportion=False, n_boot=200, level=0.9,
                          seed=_seed(4, "sc_pa_table", "all", "all"))[0]
    assert cl["n"] == 10 and (cl["sc"], cl["sc_lo"], cl["sc_hi"]) == pytest.approx((ref.value, ref.lo, ref.hi),
                                                                                  rel=1e-12)
    hu = next(x for x in t2 if x["metric"] == "human" and x["domain"] == "all")
    assert hu["n"] == 10 and hu["sc"] == pytest.approx(al["sc"])
    assert [x["domain"] for x in sc_pa_table(s, r, domains=("objects",), n_boot=0) if x["metric"] == "human"] == \
        ["objects", "all"]
    assert sc_pa_table(s, r) == sc_pa_table(s, r, n_boot=1000, level=0.95, seed=0)


def test_agreement_with_humans_counts_ties_missing_and_unrated_apart() -> None:
    s = TripletScores.from_mapping(["a", "b", "c", "d", "e"], ["animals"] * 5, ["count"] * 5,
                                   {"m": ([0.9, 0.2, 0.5, NAN, 0.6], [0.1, 0.8, 0.4, 0.3, 0.6])})
    r = ratings_of([("a", "corr", "A", 4), ("a", "adv", "A", 1), ("b", "corr", "A", 4), ("b", "adv", "A", 1),
                    ("c", "corr", "A", 2), ("c", "adv", "A", 2), ("d", "corr", "A", 4), ("d", "adv", "A", 1),
                    ("e", "corr", "A", 3), ("e", "adv", "A", 4)])
    rows = human_agreement_table(s, r, n_boot=200, seed=3)
    al = next(x for x in rows if x["domain"] == "all")
    # a: metric corr, humans corr → agree; b: metric adv, humans corr → disagree; c: human tie (out);
    # d: score missing; e: metric tie → prefers adv, humans adv → agree
    assert (al["n"], al["n_agree"], al["n_human_tie"], al["n_missing"], al["n_unrated"]) == (3, 2, 1, 1, 0)
    ref = ratio_estimates(np.array([1.0, 0.0, 1.0]), np.ones(3), None, n_boot=200, seed=_seed(3, "agreement", "all"))[0]
    assert (al["agreement"], al["agreement_lo"], al["agreement_hi"]) == (ref.value, ref.lo, ref.hi)
    assert human_agreement_table(s, r) == human_agreement_table(s, r, n_boot=1000, level=0.95, seed=0)
    assert [x["domain"] for x in human_agreement_table(s, r, domains=("objects",), n_boot=0)] == ["objects", "all"]


def test_annotator_kappas_carry_their_bounds_and_the_note_at_ten() -> None:
    def table(n_triplets: int, n_boot: int = 200) -> dict:
        rng = np.random.default_rng(n_triplets)
        pairs = []
        for t in range(n_triplets):
            for role in ("corr", "adv"):
                base = int(rng.integers(1, 5))
                pairs += [(f"t{t}", role, "A", base), (f"t{t}", role, "B", int(np.clip(base + rng.integers(-1, 2), 1, 4)))]
        (row,) = annotator_kappa_table(ratings_of(pairs), n_boot=n_boot)
        return row

    r5, r4 = table(5), table(4)  # 10 images of 5 triplets; 8 images of 4
    assert (r5["n"], r5["triplets"], r5["note"]) == (10, 5, "fewer than 10 triplets")
    assert (r4["n"], r4["note"]) == (8, "fewer than 10 images")
    r10 = table(10)
    assert (r10["n"], r10["triplets"], r10["note"]) == (20, 10, "")
    # the bounds are annotator_agreement's over triplets, weighted and plain
    rng = np.random.default_rng(10)
    pairs = []
    for t in range(10):
        for role in ("corr", "adv"):
            base = int(rng.integers(1, 5))
            pairs += [(f"t{t}", role, "A", base), (f"t{t}", role, "B", int(np.clip(base + rng.integers(-1, 2), 1, 4)))]
    rt = ratings_of(pairs)
    ids = rt.image_ids()
    unit = lambda i: str(i).split(":")[0]  # noqa: E731
    w = annotator_agreement(ids, rt.annotator, rt.rating, weighted_categories=4, unit_of=unit, n_boot=200)[0]
    p = annotator_agreement(ids, rt.annotator, rt.rating, unit_of=unit, n_boot=200)[0]
    assert (r10["kappa_w"], r10["kappa_w_lo"], r10["kappa_w_hi"]) == (w["kappa"], w["kappa_lo"], w["kappa_hi"])
    assert (r10["kappa"], r10["kappa_lo"], r10["kappa_hi"]) == (p["kappa"], p["kappa_lo"], p["kappa_hi"])
    assert (r10["percent_agreement"], r10["percent_agreement_lo"], r10["percent_agreement_hi"]) == \
        (w["percent_agreement"], w["percent_lo"], w["percent_hi"])
    assert math.isnan(table(10, n_boot=0)["kappa_w_lo"])
    assert annotator_kappa_table(rt)[0]["kappa_w_lo"] == annotator_agreement(
        ids, rt.annotator, rt.rating, weighted_categories=4, unit_of=unit)[0]["kappa_lo"]


def test_human_scores_average_each_images_latest_ratings() -> None:
    r = Ratings.from_columns(["t1", "t1", "t1", "t2"], ["corr", "corr", "adv", "adv"], ["A", "B", "A", "A"],
                             [4, 2, 3, 1], order=[1, 2, 3, 4])
    h = human_scores(r)
    assert h.triplet_id.tolist() == ["t1", "t2"] and h.triplet_id.dtype == object
    assert h.mean_corr[0] == 3.0 and math.isnan(h.mean_corr[1]) and h.mean_adv.tolist() == [3.0, 1.0]
    assert h.n_corr.tolist() == [2, 0] and h.n_adv.tolist() == [1, 1] and h.n_corr.dtype == np.int64
    c, a = h.lookup(np.array(["t2", "zz"], dtype=object))
    assert math.isnan(c[0]) and a[0] == 1.0 and math.isnan(c[1]) and math.isnan(a[1])
    numeric = human_scores(Ratings.from_columns([1, 10, 2], ["corr"] * 3, ["A"] * 3, [1, 2, 3]))
    assert numeric.triplet_id.tolist() == ["1", "10", "2"]  # text order
