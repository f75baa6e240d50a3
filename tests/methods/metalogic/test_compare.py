"""MetaLogic comparison: hand-made detections for every outcome, and vectorised == reference."""

from __future__ import annotations

import numpy as np
import pytest

from workstation.methods.metalogic.compare import evaluate, prepare
from workstation.methods.metalogic.config import MetaLogicConfig
from workstation.methods.metalogic.data import PairData
from workstation.methods.metalogic.reference import evaluate_reference
from workstation.methods.metalogic.results import (
    ALIGNED,
    AMBIGUOUS,
    DUPLICATION,
    MISALIGNED,
    NEAR_BOUNDARY,
    NEAR_THRESHOLD,
    OMISSION,
    POSITIONAL,
    UNDECIDABLE,
)
from workstation.types import WorkstationError

CFG = MetaLogicConfig()  # t 0.3, band 0.05, delta 0.1, margin 0.05, dedup 0.7, slopes 0.2 / 0.15


def box(cx: float, cy: float = 50.0, half: float = 8.0) -> tuple[float, float, float, float]:
    """A box centred at (cx, cy) in a 100 x 100 image."""
    return (cx - half, cy - half, cx + half, cy + half)


def pairs(*specs: dict) -> PairData:
    """PairData of 100 x 100 image pairs; each spec: entities, counts (default 1s), dim, order,
    a / b = detection lists [(label, score, box)]."""
    da, db = [], []
    kw: dict = {"pair_id": [], "law": [], "modifier": [], "dimension": [], "entities": [],
                "expected_count": [], "expected_order": []}
    for i, s in enumerate(specs):
        kw["pair_id"].append(f"p{i}")
        kw["law"].append(s.get("law", "Commutative"))
        kw["modifier"].append("AND")
        kw["dimension"].append(s.get("dim", "none"))
        kw["entities"].append(s["entities"])
        kw["expected_count"].append(s.get("counts", [1] * len(s["entities"])))
        kw["expected_order"].append(s.get("order", [e for e, c in zip(s["entities"], s.get("counts", [1] * 9)) if c]))
        da.append(s.get("a", []))
        db.append(s.get("b", []))
    dp, dsd, dl, ds, dbx = [], [], [], [], []
    for i, (la, lb) in enumerate(zip(da, db)):
        for side, dets in ((0, la), (1, lb)):
            for lab, sc, bx in dets:
                dp.append(i)
                dsd.append(side)
                dl.append(lab)
                ds.append(sc)
                dbx.append(bx)
    return PairData.from_lists(**kw, width=100.0, height=100.0, det_pair=dp, det_side=dsd, det_label=dl,
                               det_score=ds, det_box=dbx if dbx else np.zeros((0, 4)))


def run(data: PairData, cfg: MetaLogicConfig = CFG):
    """Evaluate both ways, check they agree, return the vectorised result."""
    v, r = evaluate(data, cfg), evaluate_reference(data, cfg)
    assert_same(v, r)
    return v


FIELDS = ("verdict", "kind", "reason", "slot", "slot2", "side", "conf", "ok_a", "ok_b", "count", "count_lo",
          "count_hi", "sel_row")


def assert_same(v, r) -> None:
    for f in FIELDS:
        a, b = getattr(v, f), getattr(r, f)
        assert np.array_equal(a, b), (f, a, b)
    assert np.array_equal(v.coord, r.coord, equal_nan=True)


CAT_DOG = {"entities": ["cat", "dog"]}


# ---- presence and counts ------------------------------------------------------------------------
def test_aligned_pair_and_its_confidence() -> None:
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.4, box(20)), ("dog", 0.8, box(70))],
                   "b": [("cat", 0.9, box(25)), ("Dog", 0.7, box(60))]}))
    assert r.verdict[0] == ALIGNED and r.kind[0] == 0 and r.reason[0] == 0
    # weakest evidence: cat in A at 0.4 is 0.1 above t; min(1, 0.1 / 0.2) = 0.5
    assert r.conf[0] == pytest.approx(0.5)
    assert r.ok_a[0] and r.ok_b[0]
    assert r.count[:, :, 0].tolist() == [[1, 1], [1, 1]]
    assert r.detail_text(0) == ""


def test_omission() -> None:
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.42, box(70))], "b": [("cat", 0.9, box(20))]}))
    assert (r.verdict[0], r.kind[0], r.slot[0], r.side[0]) == (MISALIGNED, OMISSION, 1, 1)
    assert r.conf[0] == pytest.approx(0.6)  # dog in A: 0.12 / 0.2; in B no candidate: 1
    assert r.detail_text(0) == "omission: dog missing in B"
    assert r.ok_a[0] and not r.ok_b[0]
    cols = r.columns()
    assert (cols["verdict"][0], cols["kind"][0], cols["entity"][0], cols["side"][0]) == ("MISALIGNED", "omission",
                                                                                       "dog", "B")


def test_a_negated_entity_drawn_in_one_image_is_an_omission_blamed_on_that_image() -> None:
    r = run(pairs({"entities": ["cat", "dog"], "counts": [1, 0],
                   "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))], "b": [("cat", 0.9, box(20))]}))
    assert (r.verdict[0], r.kind[0], r.slot[0], r.side[0]) == (MISALIGNED, OMISSION, 1, 0)
    assert r.detail_text(0) == "omission: dog only in A"
    assert not r.ok_a[0] and r.ok_b[0]


def test_duplication() -> None:
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("cat", 0.8, box(50, 20)), ("dog", 0.9, box(70))],
                   "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]},
                  # both images wrong: the one with more instances is named
                  {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("cat", 0.9, box(50, 20)), ("cat", 0.9, box(50, 80)),
                                    ("dog", 0.9, box(80))],
                   "b": [("cat", 0.9, box(20)), ("cat", 0.9, box(50, 20)), ("dog", 0.9, box(80))]}))
    assert (r.verdict[0], r.kind[0], r.slot[0], r.side[0]) == (MISALIGNED, DUPLICATION, 0, 0)
    assert (r.verdict[1], r.kind[1], r.slot[1], r.side[1]) == (MISALIGNED, DUPLICATION, 0, 0)
    assert r.detail_text(0) == "duplication: cat × 2 in A, × 1 in B (A differs)"


def test_duplicate_boxes_and_second_labels_are_one_object() -> None:
    r = run(pairs(
        # the detector's own duplicate box (IoU 0.78 > 0.7): one cat
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("cat", 0.6, box(21)), ("dog", 0.9, box(70))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]},
        # the dog region also called "bird" (lower): still one dog, no bird
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(70)), ("bird", 0.4, box(70))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]},
        # a region called "dog" but more strongly "bird": no dog in A
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.5, box(70)), ("bird", 0.9, box(70))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]},
    ))
    assert r.verdict.tolist() == [ALIGNED, ALIGNED, MISALIGNED]
    assert (r.kind[2], r.slot[2], r.side[2]) == (OMISSION, 1, 0)
    assert r.sel_row[0, 0, 0] == 0  # the higher-scoring cat box is the one selected


def test_small_boxes_do_not_count() -> None:
    tiny = (10.0, 10.0, 13.0, 13.0)  # 9 px² < 0.005 * 100 * 100
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))],
                   "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70)), ("cat", 0.9, tiny)]}))
    assert r.verdict[0] == ALIGNED and r.count[1, 0, 0] == 1
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))],
                   "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70)), ("cat", 0.9, tiny)]}),
            CFG.replace(min_area_fraction=0.0))
    assert (r.verdict[0], r.kind[0]) == (MISALIGNED, DUPLICATION)


# ---- abstention ---------------------------------------------------------------------------------
def test_near_threshold() -> None:
    spec = {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.32, box(70))],
            "b": [("cat", 0.9, box(20)), ("dog", 0.8, box(70))]}
    r = run(pairs(spec))
    assert (r.verdict[0], r.reason[0], r.slot[0], r.conf[0]) == (UNDECIDABLE, NEAR_THRESHOLD, 1, 0.0)
    assert (r.count_lo[0, 1, 0], r.count_hi[0, 1, 0]) == (0, 1)
    assert r.detail_text(0) == "near_threshold: count of dog uncertain"
    # a narrower band decides it (0.32 is above t), a higher threshold the other way
    assert run(pairs(spec), CFG.replace(near_band=0.01)).verdict[0] == ALIGNED
    r = run(pairs(spec), CFG.replace(score_threshold=0.33, near_band=0.0))
    assert (r.verdict[0], r.kind[0], r.side[0]) == (MISALIGNED, OMISSION, 0)


def test_a_near_threshold_box_does_not_hide_a_certain_difference() -> None:
    # dog: A has one sure dog and one near the threshold ([1, 2]); B has none ([0, 0])
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(70)), ("dog", 0.31, box(50, 15))],
                   "b": [("cat", 0.9, box(20))]}))
    assert (r.verdict[0], r.kind[0], r.slot[0], r.side[0]) == (MISALIGNED, OMISSION, 1, 1)
    assert r.conf[0] == pytest.approx(0.05)  # dog in A: nearest candidate 0.01 from t -> 0.01 / 0.2


def test_label_ambiguity() -> None:
    # the dog region in A is almost as much a bird (0.6 vs 0.55): A may have 0, 1 or 2 dogs
    r = run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.6, box(70)), ("bird", 0.55, box(70))],
                   "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]}))
    assert (r.verdict[0], r.reason[0], r.slot[0]) == (UNDECIDABLE, AMBIGUOUS, 1)
    assert (r.count[0, 1, 0], r.count_lo[0, 1, 0], r.count_hi[0, 1, 0]) == (1, 0, 2)
    assert r.detail_text(0) == "ambiguous: dog"
    # with a small ambiguity delta the gap of 0.05 is clear
    assert run(pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.6, box(70)), ("bird", 0.55, box(70))],
                      "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]}), CFG.replace(ambiguity_delta=0.04)
               ).verdict[0] == ALIGNED


XY = {"entities": ["cat", "dog"], "dim": "x"}


def test_positional_misalignment() -> None:
    r = run(pairs({**XY, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(35))],
                   "b": [("cat", 0.9, box(70)), ("dog", 0.9, box(20))]}))
    assert (r.verdict[0], r.kind[0], r.slot[0], r.slot2[0], r.side[0]) == (MISALIGNED, POSITIONAL, 0, 1, 1)
    # d_A = (20 - 35) / 100, d_B = 0.5: evidence (0.15 - 0.05) / 0.15
    assert r.conf[0] == pytest.approx(2 / 3)
    assert r.detail_text(0) == "positional: cat / dog in a different order (B differs from the prompt)"
    assert r.ok_a[0] and not r.ok_b[0]
    assert r.coord[:, :, 0].tolist() == [[0.2, 0.35], [0.7, 0.2]]


def test_y_axis_and_three_entities() -> None:
    three = {"entities": ["cat", "dog", "cow"], "dim": "y", "order": ["cow", "cat", "dog"]}
    col = [("cow", 0.9, box(50, 15)), ("cat", 0.9, box(50, 50)), ("dog", 0.9, box(50, 85))]
    swapped = [("cow", 0.9, box(50, 15)), ("cat", 0.9, box(50, 85)), ("dog", 0.9, box(50, 50))]
    r = run(pairs({**three, "a": col, "b": col}, {**three, "a": col, "b": swapped}))
    assert r.verdict[0] == ALIGNED and r.ok_a[0] and r.ok_b[0]
    assert (r.verdict[1], r.kind[1], r.slot[1], r.slot2[1], r.side[1]) == (MISALIGNED, POSITIONAL, 0, 1, 1)
    # x positions do not matter on the Y axis
    moved = [(lab, s, box(10 + 30 * k, b[1] + 8)) for k, (lab, s, b) in enumerate(col)]
    assert run(pairs({**three, "a": col, "b": moved})).verdict[0] == ALIGNED


def test_near_boundary_and_instance_ambiguity() -> None:
    r = run(pairs(
        {**XY, "a": [("cat", 0.9, box(48)), ("dog", 0.9, box(51))], "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(80))]},
        # two cats in both images, scores 0.05 apart: which cat is "the" cat is unclear
        {**XY, "a": [("cat", 0.8, box(20)), ("cat", 0.75, box(90, 20)), ("dog", 0.9, box(60))],
         "b": [("cat", 0.8, box(20)), ("cat", 0.75, box(90, 20)), ("dog", 0.9, box(60))]},
        # ... 0.3 apart: the first cat
        {**XY, "a": [("cat", 0.9, box(20)), ("cat", 0.6, box(90, 20)), ("dog", 0.9, box(60))],
         "b": [("cat", 0.9, box(20)), ("cat", 0.6, box(90, 20)), ("dog", 0.9, box(60))]},
    ))
    assert (r.verdict[0], r.reason[0], r.slot[0], r.slot2[0]) == (UNDECIDABLE, NEAR_BOUNDARY, 0, 1)
    assert r.detail_text(0) == "near_boundary: cat / dog too close on the axis"
    assert (r.verdict[1], r.reason[1]) == (UNDECIDABLE, AMBIGUOUS)
    assert r.verdict[2] == ALIGNED and not r.ok_a[2]  # aligned, but two cats where one was asked
    # margin 0.02 decides the first pair: cat left of dog in both
    assert run(pairs({**XY, "a": [("cat", 0.9, box(48)), ("dog", 0.9, box(51))],
                      "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(80))]}), CFG.replace(axis_margin=0.02)
               ).verdict[0] == ALIGNED


def test_a_certain_swap_decides_although_another_count_is_uncertain() -> None:
    # "a cat left of a dog, and no cow": A shows a cow near the threshold (count 0 or 1)
    spec = {"entities": ["cat", "dog", "cow"], "counts": [1, 1, 0], "dim": "x", "order": ["cat", "dog"]}
    cow = ("cow", 0.31, box(50, 85))
    r = run(pairs({**spec, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(80)), cow],
                   "b": [("cat", 0.9, box(80)), ("dog", 0.9, box(20))]},
                  {**spec, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(80)), cow],
                   "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(80))]}))
    assert (r.verdict[0], r.kind[0], r.reason[0], r.slot[0], r.slot2[0], r.side[0]) == (
        MISALIGNED, POSITIONAL, 0, 0, 1, 1)
    assert (r.verdict[1], r.reason[1], r.slot[1]) == (UNDECIDABLE, NEAR_THRESHOLD, 2)


def test_consistent_mistakes_are_aligned_but_not_faithful() -> None:
    r = run(pairs({**XY, "a": [("cat", 0.9, box(20))], "b": [("cat", 0.9, box(30))]},
                  {**XY, "a": [("cat", 0.9, box(80)), ("dog", 0.9, box(20))],
                   "b": [("cat", 0.9, box(80)), ("dog", 0.9, box(20))]}))
    assert r.verdict.tolist() == [ALIGNED, ALIGNED]
    assert r.ok_a.tolist() == [False, False] and r.ok_b.tolist() == [False, False]


def test_selection_skips_a_box_that_is_too_small() -> None:
    tiny = (85.0, 45.0, 88.0, 48.0)
    r = run(pairs({**XY, "a": [("cat", 0.95, tiny), ("cat", 0.8, box(20)), ("dog", 0.9, box(60))],
                   "b": [("cat", 0.8, box(20)), ("dog", 0.9, box(60))]}))
    assert r.verdict[0] == ALIGNED
    assert r.sel_row[0, 0, 0] == 1 and r.coord[0, 0, 0] == pytest.approx(0.2)


def test_no_detections_at_all() -> None:
    r = run(pairs(CAT_DOG, {**XY}))
    assert r.verdict.tolist() == [ALIGNED, ALIGNED] and r.conf.tolist() == [1.0, 1.0]
    assert r.sel_row.max() == -1 and np.isnan(r.coord).all()


# ---- vectorised == reference on random data ----------------------------------------------------------
NAMES = ["cat", "dog", "cow", "bird", "car", "cup"]


def random_pairs(n: int, seed: int) -> PairData:
    """B is A's scene with jitter and random omissions, duplicates, swaps, second labels and
    scores near the threshold; some boxes are tiny, some images empty."""
    rng = np.random.default_rng(seed)
    specs = []
    for i in range(n):
        k = int(rng.integers(1, 5))
        ents = list(rng.choice(NAMES, k, replace=False))
        counts = [int(c) for c in rng.choice([0, 1, 1, 1, 2], k)]
        counts[0] = max(counts[0], 1)
        dim = str(rng.choice(["none", "x", "y", "horizontal", "attributes"]))
        order = list(rng.permutation([e for e, c in zip(ents, counts) if c == 1])) if dim in ("x", "y", "horizontal") \
            else []
        a = []
        for e, c in zip(ents, counts):
            for _ in range(c + int(rng.random() < 0.15)):
                cx, cy = rng.uniform(5, 95, 2)
                a.append((str(e), float(rng.choice([rng.uniform(0.05, 1), 0.3, 0.25, 0.35, 0.31])),
                          box(cx, cy, float(rng.choice([rng.uniform(1, 20), 8.0])))))
        for _ in range(int(rng.poisson(1.5))):
            cx, cy = rng.uniform(5, 95, 2)
            src = a[int(rng.integers(len(a)))] if a and rng.random() < 0.6 else None
            bb = (src[2][0] + rng.normal(0, 1), src[2][1] + rng.normal(0, 1), src[2][2] + rng.normal(0, 1),
                  src[2][3] + rng.normal(0, 1)) if src else box(cx, cy, float(rng.uniform(2, 15)))
            bb = (bb[0], bb[1], max(bb[0], bb[2]), max(bb[1], bb[3]))
            a.append((str(rng.choice(NAMES)), float(np.round(rng.uniform(0.05, 1), 2)), bb))
        b = []
        for lab, sc, bb in a:
            u = rng.random()
            if u < 0.06:
                continue
            j = rng.normal(0, 2, 4)
            nb = (bb[0] + j[0], bb[1] + j[1], max(bb[0] + j[0], bb[2] + j[2]), max(bb[1] + j[1], bb[3] + j[3]))
            b.append((lab, float(np.clip(sc + (rng.normal(0, 0.05) if u < 0.5 else 0.0), 0, 1)), nb))
            if u > 0.95:
                cx, cy = rng.uniform(5, 95, 2)
                b.append((lab, sc, box(cx, cy)))
        if order and len(order) >= 2 and rng.random() < 0.3:  # two positioned entities trade places in B
            e1, e2 = (str(x) for x in rng.choice(order, 2, replace=False))
            i1 = next((k for k, d in enumerate(b) if d[0] == e1), None)
            i2 = next((k for k, d in enumerate(b) if d[0] == e2), None)
            if i1 is not None and i2 is not None:
                (l1, s1, b1), (l2, s2, b2) = b[i1], b[i2]
                b[i1], b[i2] = (l1, s1, b2), (l2, s2, b1)
        if rng.random() < 0.1:
            a, b = b, a
        if rng.random() < 0.05:
            b = []
        specs.append({"entities": ents, "counts": counts, "dim": dim, "order": order, "a": a, "b": b,
                      "law": str(rng.choice(["Commutative", "DeMorgan", "Distributive"]))})
    return pairs(*specs)


CONFIGS = [
    MetaLogicConfig(),
    MetaLogicConfig(score_threshold=0.5, near_band=0.1, axis_margin=0.1, min_area_fraction=0.02),
    MetaLogicConfig(score_threshold=0.25, near_band=0.0, ambiguity_delta=0.0, axis_margin=0.0),
    MetaLogicConfig(score_threshold=0.35, near_band=0.04, ambiguity_delta=0.3, dedup_iou=0.4, score_slope=0.05),
    MetaLogicConfig(score_threshold=0.0, min_area_fraction=0.0, dedup_iou=1.0),
]


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_equals_reference_on_random_data(seed: int) -> None:
    data = random_pairs(150, seed)
    outcomes = set()
    for cfg in CONFIGS:
        v, r = evaluate(data, cfg), evaluate_reference(data, cfg)
        assert_same(v, r)
        outcomes |= set(zip(v.verdict.tolist(), v.kind.tolist(), v.reason.tolist()))
    assert len(outcomes) >= 6  # the data reach most outcomes, not just one


def test_every_outcome_is_reached_by_the_random_data() -> None:
    seen = set()
    for seed in range(6):
        v = evaluate(random_pairs(150, 100 + seed), CFG)
        seen |= set(zip(v.verdict.tolist(), v.kind.tolist(), v.reason.tolist()))
    assert seen == {(ALIGNED, 0, 0), (MISALIGNED, OMISSION, 0), (MISALIGNED, DUPLICATION, 0),
                    (MISALIGNED, POSITIONAL, 0), (UNDECIDABLE, 0, NEAR_THRESHOLD), (UNDECIDABLE, 0, AMBIGUOUS),
                    (UNDECIDABLE, 0, NEAR_BOUNDARY)}


def test_long_segments_take_the_wide_count_path() -> None:
    many = [("cat", 0.3 + 0.005 * k, box(2 + 0.7 * k, 50, 0.3)) for k in range(130)]  # 130 tiny boxes
    data = pairs({**CAT_DOG, "a": many + [("dog", 0.9, box(70))], "b": many[:-1] + [("dog", 0.9, box(70))]})
    cfg = CFG.replace(min_area_fraction=0.0, dedup_iou=1.0, near_band=0.0)
    r = run(data, cfg)
    assert prepare(data, cfg.dedup_iou).count_dtype == np.int16
    assert (r.count[0, 0, 0], r.count[1, 0, 0]) == (130, 129)
    assert (r.verdict[0], r.kind[0]) == (MISALIGNED, DUPLICATION)


# ---- config, data, cache ------------------------------------------------------------------------
def test_config_round_trip_hash_and_validation() -> None:
    cfg = MetaLogicConfig(score_threshold=0.4, name="mine")
    back = MetaLogicConfig.from_dict(cfg.to_dict())
    assert back == cfg and back.content_hash() == cfg.content_hash()
    assert cfg.content_hash() == cfg.replace(name="other").content_hash()
    assert cfg.content_hash() != cfg.replace(axis_margin=0.06).content_hash()
    assert MetaLogicConfig(score_threshold=1).content_hash() == MetaLogicConfig(score_threshold=1.0).content_hash()
    with pytest.raises(ValueError, match="unknown MetaLogic parameter"):
        MetaLogicConfig.from_dict({"margin": 0.1})
    with pytest.raises(ValueError, match="must be in"):
        MetaLogicConfig.from_dict({"score_threshold": 1.5})
    with pytest.raises(ValueError, match="finite"):
        MetaLogicConfig(near_band=float("nan")).validate()
    with pytest.raises(ValueError, match="number"):
        MetaLogicConfig.from_dict({"axis_margin": "wide"})
    with pytest.raises(ValueError, match="> 0"):
        MetaLogicConfig(geom_slope=0.0).validate()


def test_prepare_is_cached_per_dedup_iou() -> None:
    data = random_pairs(20, 1)
    p1 = prepare(data, 0.7)
    assert prepare(data, 0.7) is p1
    assert prepare(data, 0.5) is not p1
    evaluate(data, CFG.replace(score_threshold=0.6))
    assert data.cache["metalogic.prepared"].key[-1] == 0.7


def test_pair_data_refuses_bad_input() -> None:
    base = dict(pair_id=["p"], law=["Commutative"], modifier=["AND"], dimension=["x"], entities=[["cat", "dog"]])
    with pytest.raises(WorkstationError, match="unknown law"):
        PairData.from_lists(**{**base, "law": ["Modus"]})
    with pytest.raises(WorkstationError, match="unknown dimension"):
        PairData.from_lists(**{**base, "dimension": ["z"]})
    with pytest.raises(WorkstationError, match="2 expected counts for 3"):
        PairData.from_lists(**{**base, "entities": [["a", "b", "c"]], "expected_count": [[1, 1]]})
    with pytest.raises(WorkstationError, match="distinct"):
        PairData.from_lists(**{**base, "entities": [["cat", "Cat"]]})
    with pytest.raises(WorkstationError, match="not among its entities"):
        PairData.from_lists(**{**base, "expected_order": [["cat", "cow"]]})
    with pytest.raises(WorkstationError, match="det_side"):
        PairData.from_lists(**base, det_pair=[0], det_side=["C"], det_label=["cat"], det_score=[0.5],
                            det_box=[(0, 0, 1, 1)])
    with pytest.raises(WorkstationError, match="x2 >= x1"):
        PairData.from_lists(**base, det_pair=[0], det_side=[0], det_label=["cat"], det_score=[0.5],
                            det_box=[(5, 0, 1, 1)])
    with pytest.raises(WorkstationError, match="images that are not in the data"):
        PairData.from_lists(**base, det_pair=[1], det_side=[0], det_label=["cat"], det_score=[0.5],
                            det_box=[(0, 0, 1, 1)])
    with pytest.raises(WorkstationError, match="finite"):
        PairData.from_lists(**base, det_pair=[0], det_side=[0], det_label=["cat"], det_score=[float("nan")],
                            det_box=[(0, 0, 1, 1)])
    with pytest.raises(WorkstationError, match="positive"):
        PairData.from_lists(**base, width=0.0)
    with pytest.raises(WorkstationError, match="unique"):
        PairData.from_lists(**{**base, "pair_id": ["p", "p"], "law": ["Commutative"] * 2, "modifier": ["AND"] * 2,
                               "dimension": ["x"] * 2, "entities": [["cat"], ["dog"]]})
    d = PairData.from_lists(**base, width=[[640, 320]], height=[[480, 240]])
    assert d.width.tolist() == [[640.0, 320.0]] and d.expected_rank.tolist() == [[0, 1]]


# ---- the paper's decision: no abstention ------------------------------------------------------------
def test_the_papers_decision_decides_every_pair_the_abstention_bands_leave_open() -> None:
    from workstation.methods.metalogic.compare import paper_config, paper_outcomes

    data = pairs(
        # near_threshold under the bands: the dog at 0.32 counts (>= t 0.3), so A and B agree
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.32, box(70))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.8, box(70))]},
        # near_threshold the other way: the dog at 0.28 is not counted, an omission
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.28, box(70))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.8, box(70))]},
        # label-ambiguous dog (0.6 vs bird 0.55): counted as a dog
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.6, box(70)), ("bird", 0.55, box(70))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))]},
        # near_boundary: cat 0.03 left of dog in A, clearly left in B → the same order
        {**XY, "a": [("cat", 0.9, box(48)), ("dog", 0.9, box(51))], "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(80))]},
        # near_boundary: cat 0.03 right of dog in A, left in B → the order differs
        {**XY, "a": [("cat", 0.9, box(51)), ("dog", 0.9, box(48))], "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(80))]},
        # an exact tie of the centroids in A: "cat before dog" is false there, true in B → differs
        {**XY, "a": [("cat", 0.9, box(50, 20)), ("dog", 0.9, box(50, 80))],
         "b": [("cat", 0.9, box(20)), ("dog", 0.9, box(80))]},
        # a clear alignment stays one
        {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.9, box(70))], "b": [("cat", 0.9, box(25)), ("dog", 0.9, box(60))]},
    )
    banded = run(data)
    assert banded.verdict.tolist()[:5] == [UNDECIDABLE] * 5 and banded.verdict[6] == ALIGNED
    verdict, kind = paper_outcomes(data, CFG)
    assert verdict.tolist() == [ALIGNED, MISALIGNED, ALIGNED, ALIGNED, MISALIGNED, MISALIGNED, ALIGNED]
    assert kind.tolist() == [0, OMISSION, 0, 0, POSITIONAL, POSITIONAL, 0]
    # the same rule as the comparison without its bands (up to the exact tie, which that leaves open)
    plain = run(data, paper_config(CFG))
    assert plain.verdict.tolist()[:5] == verdict.tolist()[:5] and plain.verdict[5] == UNDECIDABLE
    # the bands do not change it; the threshold does (the 0.32 dog no longer counts at 0.35)
    again, _ = paper_outcomes(data, CFG.replace(near_band=0.2, axis_margin=0.2, ambiguity_delta=0.3))
    assert again.tolist() == verdict.tolist()
    strict, _ = paper_outcomes(data, CFG.replace(score_threshold=0.35))
    assert strict[0] == MISALIGNED and strict[1] == MISALIGNED


def test_the_method_evaluates_with_the_papers_decision_beside_it() -> None:
    from workstation.methods.metalogic.method import METHOD
    from workstation.methods.metalogic.metrics import rate_rows

    data = pairs({**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.32, box(70))],
                  "b": [("cat", 0.9, box(20)), ("dog", 0.8, box(70))]},
                 {**CAT_DOG, "a": [("cat", 0.9, box(20)), ("dog", 0.28, box(70))],
                  "b": [("cat", 0.9, box(20)), ("dog", 0.8, box(70))]},
                 {**CAT_DOG, "a": [("cat", 0.9, box(20))], "b": [("cat", 0.9, box(20)), ("dog", 0.8, box(70))]})
    res = METHOD.evaluate(data, CFG)
    assert res.verdict.tolist() == [UNDECIDABLE, UNDECIDABLE, MISALIGNED]
    assert res.paper_verdict.tolist() == [ALIGNED, MISALIGNED, MISALIGNED]
    (row,) = rate_rows(res, per_run=False)
    assert (row["paper_rate"], row["decided_rate"], row["coverage"]) == pytest.approx((2 / 3, 1.0, 1 / 3))
    lines = "\n".join(METHOD.summary_lines(data, res, 1, CFG))
    assert "misalignment rate (the paper's rule, every pair decided) 66.7%" in lines
    assert "abstention-aware 100.0%" in lines and "coverage 33.3%" in lines
