"""The spatial checker: each rule's edge on hand-made samples, and vectorised == reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from workstation.methods.spatial.checker import EPS, evaluate, evaluate_reference, prepare
from workstation.perturb import DEFAULT_PERTURBATIONS, Perturbation
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Detections, Prompts, Samples
from workstation.methods.spatial.types import FAIL, PASS, REASON_CODE, RELATION_CODE, UNDECIDABLE
from workstation.types import WorkstationError
from workstation.types import ORIGINAL_NAME, PRIMARY, SECONDARY, WorkstationError
from workstation.methods.spatial.data import spatial_columns, spatial_dataset

PERT_NAMES = tuple(p.name for p in DEFAULT_PERTURBATIONS)
NO_STAB_NO_SEC = CheckerConfig(use_secondary=False, stability_enabled=False)

Det = tuple[str, float, tuple[float, float, float, float]]


def make_ds(samples: list[dict[str, Any]], variants: tuple[str, ...] = PERT_NAMES) -> Dataset:
    """Samples given as dicts: rel, a, b, w, h, dets [(label, score, box)], sec (list or None),
    pert ({variant name: dets} or None), rec (recorded stability, default NaN)."""
    cols: dict[str, list[Any]] = {k: [] for k in ("si", "src", "var", "lab", "sc", "box")}
    names = (ORIGINAL_NAME,) + tuple(variants)

    def add(i: int, src: int, var: int, dets: list[Det]) -> None:
        for lab, sc, box in dets:
            cols["si"].append(i)
            cols["src"].append(src)
            cols["var"].append(var)
            cols["lab"].append(lab)
            cols["sc"].append(sc)
            cols["box"].append(box)

    for i, smp in enumerate(samples):
        add(i, PRIMARY, 0, smp.get("dets", []))
        if smp.get("sec") is not None:
            add(i, SECONDARY, 0, smp["sec"])
        for name, dets in (smp.get("pert") or {}).items():
            add(i, PRIMARY, names.index(name), dets)
    n = len(samples)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    boxes = np.array(cols["box"], np.float64).reshape(-1, 4)
    dets = Detections(
        sample_idx=np.array(cols["si"], np.int64), source=np.array(cols["src"], np.int8),
        variant=np.array(cols["var"], np.int16), label=o(cols["lab"]),
        score=np.array(cols["sc"], np.float64), x1=boxes[:, 0].copy(), y1=boxes[:, 1].copy(),
        x2=boxes[:, 2].copy(), y2=boxes[:, 3].copy())
    s = Samples(
        sample_id=o([f"s{i}" for i in range(n)]), run_id=o(["run"] * n),
        prompt_id=o([smp.get("prompt", f"p{i}") for i, smp in enumerate(samples)]),
        seed=np.zeros(n, np.int64),
        width=np.array([smp.get("w", 100.0) for smp in samples], np.float64),
        height=np.array([smp.get("h", 100.0) for smp in samples], np.float64),
        image_path=o([""] * n),
        has_secondary=np.array([smp.get("sec") is not None for smp in samples], bool),
        has_perturbed=np.array([smp.get("pert") is not None for smp in samples], bool))
    return spatial_dataset(s, [smp.get("rel", "left_of") for smp in samples], [smp.get("a", "dog") for smp in samples],
                           [smp.get("b", "cat") for smp in samples], dets, names,
                           recorded_stability=[smp.get("rec", math.nan) for smp in samples])


def set_in_checker(monkeypatch: pytest.MonkeyPatch, name: str, value: Any) -> None:
    """Set ``name`` in every module of the checker package that holds it: a tunable where it is
    read, a function where it is defined and in each module that imports it (each holds its own
    binding)."""
    import sys

    pkg = "workstation.methods.spatial.checker"
    holders = [m for k, m in list(sys.modules.items()) if k.startswith(pkg + ".") and hasattr(m, name)]
    assert holders, name
    for m in holders:
        monkeypatch.setattr(m, name, value)


def run(samples: list[dict[str, Any]], cfg: CheckerConfig = NO_STAB_NO_SEC, **kw: Any):
    ds = make_ds(samples, **kw)
    v = evaluate(ds, cfg)
    ref = evaluate_reference(ds, cfg)
    assert_same(v, ref)
    return v


def assert_same(v, ref) -> None:
    for k in ("verdict", "reason", "reason_detail", "sel_a", "sel_b", "sel2_a", "sel2_b"):
        np.testing.assert_array_equal(getattr(v, k), getattr(ref, k), err_msg=k)
    for k in ("delta", "iou_ab", "c_detection", "c_geometry", "c_stability", "c_agreement"):
        np.testing.assert_array_equal(getattr(v, k), getattr(ref, k), err_msg=k)
    np.testing.assert_allclose(v.conf, ref.conf, rtol=1e-12, atol=1e-300, err_msg="conf")
    assert list(v.reason_texts()) == list(ref.reason_texts())
    # every sample's text written reason by reason is the one its own reason_text gives
    assert list(v.reason_texts()) == [ref.reason_text(i) for i in range(len(ref))]


LEFT = (10.0, 40.0, 30.0, 60.0)  # centre x 20
RIGHT = (70.0, 40.0, 90.0, 60.0)  # centre x 80
TOP = (40.0, 5.0, 60.0, 25.0)  # centre y 15
BOTTOM = (40.0, 75.0, 60.0, 95.0)  # centre y 85


def pair(sa: float = 0.9, sb: float = 0.8, a: tuple = LEFT, b: tuple = RIGHT) -> list[Det]:
    return [("dog", sa, a), ("cat", sb, b)]


# ---------------------------------------------------------------------------------------------
# selection
# ---------------------------------------------------------------------------------------------
def test_labels_match_case_insensitively():
    v = run([{"dets": [("Dog", 0.9, LEFT), (" CAT", 0.8, RIGHT)]}, {"a": "Dog", "dets": pair()}])
    assert v.verdict.tolist() == [PASS, PASS]


def test_cutoff_is_max_of_t_det_and_detector_threshold():
    smp = [{"dets": pair(sb=0.4)}]
    assert run(smp, NO_STAB_NO_SEC.replace(t_det=0.2)).verdict[0] == PASS
    v = run(smp, NO_STAB_NO_SEC.replace(t_det=0.2, primary_threshold=0.5))
    assert v.verdict[0] == UNDECIDABLE and v.reason_text(0) == "missing: cat"
    assert run(smp, NO_STAB_NO_SEC.replace(t_det=0.45)).reason[0] == REASON_CODE["missing"]
    # score exactly at the cut-off is kept (>=)
    assert run([{"dets": pair(sb=0.5)}], NO_STAB_NO_SEC.replace(t_det=0.5)).verdict[0] == PASS


def test_secondary_threshold_applies_to_the_secondary_detector_only():
    smp = [{"dets": pair(), "sec": pair(sb=0.3)}]
    cfg = CheckerConfig(stability_enabled=False, t_det=0.2)
    assert run(smp, cfg).c_agreement[0] == 1.0  # identical boxes: full agreement
    v = run(smp, cfg.replace(secondary_threshold=0.35))
    assert v.c_agreement[0] == 0.5 and v.sel2_b[0] == -1 and v.verdict[0] == PASS


def test_area_filter_boundary_and_fallback_to_a_larger_box():
    # W*H = 10,000; min_area_fraction 0.005 -> 50 px^2; a 10 x 5 box is kept, 7 x 7 is not
    ok = [("dog", 0.9, (10.0, 40.0, 20.0, 45.0)), ("cat", 0.8, RIGHT)]
    small = [("dog", 0.9, (10.0, 40.0, 17.0, 47.0)), ("cat", 0.8, RIGHT)]
    v = run([{"dets": ok}, {"dets": small}])
    assert v.verdict[0] == PASS
    assert v.reason_text(1) == "missing: dog"
    # the best-scoring dog is tiny: the next dog that is large enough is selected
    fallback = [("dog", 0.9, (80.0, 40.0, 85.0, 45.0)), ("dog", 0.6, LEFT), ("cat", 0.8, RIGHT)]
    v = run([{"dets": fallback}])
    assert v.verdict[0] == PASS and v.sel_a[0] == 1
    assert v.c_detection[0] == pytest.approx(math.sqrt(0.6 * 0.8))


def test_ties_in_score_select_the_earlier_detection():
    dets = [("dog", 0.8, LEFT), ("dog", 0.8, (75.0, 40.0, 95.0, 60.0)), ("cat", 0.9, (40.0, 40.0, 60.0, 60.0))]
    v = run([{"dets": dets}], NO_STAB_NO_SEC.replace(ambiguity_delta=0.0))
    assert v.sel_a[0] == 0 and v.verdict[0] == PASS


# ---------------------------------------------------------------------------------------------
# abstention cascade
# ---------------------------------------------------------------------------------------------
def test_missing_names_every_missing_object_and_zeroes_everything():
    v = run([{"dets": []}, {"dets": [("dog", 0.9, LEFT)]}, {"a": "potted plant", "b": "bear", "dets": []}])
    assert [v.reason_text(i) for i in range(3)] == ["missing: dog, cat", "missing: cat",
                                                   "missing: potted plant, bear"]
    assert (v.verdict == UNDECIDABLE).all() and (v.conf == 0).all() and (v.c_detection == 0).all()
    assert np.isnan(v.delta).all() and v.sel_a.tolist() == [-1, 0, -1]


def test_ambiguity_bound_is_strict():
    # 0.75 - 0.5 == 0.25 exactly: not ambiguous; 0.75 - 0.5625 < 0.25: ambiguous
    cfg = NO_STAB_NO_SEC.replace(ambiguity_delta=0.25)
    at_bound = [("dog", 0.75, LEFT), ("dog", 0.5, (40.0, 0.0, 45.0, 5.0)), ("cat", 0.8, RIGHT)]
    inside = [("dog", 0.75, LEFT), ("dog", 0.5625, (40.0, 0.0, 45.0, 5.0)), ("cat", 0.8, RIGHT)]
    v = run([{"dets": at_bound}, {"dets": inside}], cfg)
    assert v.verdict[0] == PASS
    assert v.verdict[1] == UNDECIDABLE and v.reason_text(1) == "ambiguous: multiple dog"
    assert v.conf[1] == 0 and np.isnan(v.delta[1]) and v.sel_a[1] == 3  # rows of ds.detections, kept


def test_ambiguity_ignores_area_but_not_the_score_cutoff_and_checks_a_before_b():
    tiny_second = [("dog", 0.9, LEFT), ("dog", 0.85, (0.0, 0.0, 2.0, 2.0)), ("cat", 0.8, RIGHT)]
    below_cut = [("dog", 0.9, LEFT), ("dog", 0.15, (0.0, 0.0, 20.0, 20.0)), ("cat", 0.8, RIGHT)]
    both = [("dog", 0.9, LEFT), ("dog", 0.85, TOP), ("cat", 0.8, RIGHT), ("cat", 0.79, BOTTOM)]
    only_b = [("dog", 0.9, LEFT), ("cat", 0.8, RIGHT), ("cat", 0.79, BOTTOM)]
    v = run([{"dets": tiny_second}, {"dets": below_cut}, {"dets": both}, {"dets": only_b}])
    assert v.reason_text(0) == "ambiguous: multiple dog"
    assert v.verdict[1] == PASS
    assert v.reason_text(2) == "ambiguous: multiple dog"
    assert v.reason_text(3) == "ambiguous: multiple cat"


def test_high_overlap_bound_is_strict_and_horizontal_only():
    # IoU([0,0,30,10], [10,0,40,10]) = 200 / 400 = 0.5 exactly; d = (15 - 25)/100 = -0.1
    a, b = (0.0, 0.0, 30.0, 10.0), (10.0, 0.0, 40.0, 10.0)
    smp = [{"dets": pair(a=a, b=b)}]
    v = run(smp, NO_STAB_NO_SEC.replace(max_overlap_iou=0.5))
    assert v.iou_ab[0] == 0.5 and v.reason[0] == REASON_CODE["near_boundary"]
    v = run(smp, NO_STAB_NO_SEC.replace(max_overlap_iou=0.49))
    assert v.reason_text(0) == "high_overlap: IoU=0.50 > 0.49"
    assert v.conf[0] == 0 and v.c_geometry[0] == 0 and v.delta[0] == -0.1
    # above / below never abstain for overlap
    v = run([{"rel": "above", "dets": pair(a=(0.0, 0.0, 30.0, 30.0), b=(0.0, 10.0, 30.0, 60.0))}],
            NO_STAB_NO_SEC.replace(max_overlap_iou=0.1))
    assert v.iou_ab[0] > 0.1 and v.verdict[0] == PASS


def test_margin_tie_is_near_boundary():
    # |d| == m exactly (cx 20 vs 30 on W 100 -> -0.1) -> near_boundary; just past it -> PASS
    tie = pair(a=(10.0, 40.0, 30.0, 60.0), b=(20.0, 70.0, 40.0, 90.0))
    past = pair(a=(10.0, 40.0, 30.0, 60.0), b=(21.0, 70.0, 41.0, 90.0))
    v = run([{"dets": tie}, {"dets": past}])
    assert v.delta[0] == -0.1 and v.reason_text(0) == "near_boundary (|delta|=0.100 <= margin=0.1)"
    assert v.verdict[1] == PASS
    # a near_boundary sample keeps its (tiny) confidence: geometry 0, stability 1
    assert v.c_geometry[0] == 0 and v.c_stability[0] == 1.0 and 0 < v.conf[0] < 0.01


@pytest.mark.parametrize("rel,a,b,expected", [
    ("left_of", LEFT, RIGHT, PASS), ("left_of", RIGHT, LEFT, FAIL),
    ("right_of", RIGHT, LEFT, PASS), ("right_of", LEFT, RIGHT, FAIL),
    ("above", TOP, BOTTOM, PASS), ("above", BOTTOM, TOP, FAIL),  # y grows downward
    ("below", BOTTOM, TOP, PASS), ("below", TOP, BOTTOM, FAIL),
])
def test_relations(rel, a, b, expected):
    v = run([{"rel": rel, "dets": pair(a=a, b=b)}])
    assert v.verdict[0] == expected and v.reason[0] == 0 and v.reason_text(0) == ""


# ---------------------------------------------------------------------------------------------
# stability
# ---------------------------------------------------------------------------------------------
STAB = CheckerConfig(use_secondary=False)
SHIFTED_LEFT = (0.0, 40.0, 8.0, 60.0)  # a cat left of the dog: flips left_of


def test_stability_counts_a_missing_object_as_a_mismatch():
    base = pair()
    pert = {n: pair() for n in PERT_NAMES}
    pert[PERT_NAMES[2]] = [("dog", 0.9, LEFT)]  # the cat is lost under blur
    v = run([{"dets": base, "pert": pert}], STAB)
    # matches 3/4; IoUs of the 3 found perturbations all 1 -> 0.5*0.75 + 0.5*1
    assert v.c_stability[0] == 0.875 and v.verdict[0] == PASS


def test_stability_zero_when_no_perturbation_finds_both():
    v = run([{"dets": pair(), "pert": {n: [("dog", 0.9, LEFT)] for n in PERT_NAMES}}], STAB)
    assert v.c_stability[0] == 0.0 and v.verdict[0] == UNDECIDABLE
    assert v.reason_text(0) == "unstable: stability=0.00 < 0.5"
    assert 0 < v.conf[0] < 0.02  # unstable keeps its confidence, with stability ~0


def test_unstable_below_threshold_and_threshold_is_strict():
    pert = {n: [("dog", 0.9, LEFT)] for n in PERT_NAMES}
    pert[PERT_NAMES[0]] = pair(b=SHIFTED_LEFT)  # found, verdict flips, IoU(cat) = 0
    # matches 0; IoUs (1, 0) -> 0.5 * 0 + 0.5 * 0.5 = 0.25
    v = run([{"dets": pair(), "pert": pert}], STAB)
    assert v.c_stability[0] == 0.25 and v.reason_text(0) == "unstable: stability=0.25 < 0.5"
    v = run([{"dets": pair(), "pert": pert}], STAB.replace(consistency_threshold=0.25))
    assert v.verdict[0] == PASS


def test_stability_only_for_decided_samples_and_its_fallbacks():
    lost = {n: [] for n in PERT_NAMES}
    tie = pair(a=(10.0, 40.0, 30.0, 60.0), b=(20.0, 70.0, 40.0, 90.0))
    v = run([
        {"dets": tie, "pert": lost},  # near_boundary: stability not computed -> 1
        {"dets": pair(), "rec": 0.3},  # imported run: recorded stability is the input
        {"dets": pair(), "rec": 0.7},
        {"dets": pair()},  # nothing cached, nothing recorded: unavailable -> 1
    ], STAB)
    assert v.c_stability.tolist() == [1.0, 0.3, 0.7, 1.0]
    assert v.verdict.tolist() == [UNDECIDABLE, UNDECIDABLE, PASS, PASS]
    assert v.reason_text(1) == "unstable: stability=0.30 < 0.5"
    v = run([{"dets": pair(), "pert": lost}, {"dets": pair(), "rec": 0.3}],
            STAB.replace(stability_enabled=False))
    assert v.c_stability.tolist() == [1.0, 1.0] and (v.verdict == PASS).all()


def test_perturbations_are_matched_by_name():
    # the dataset caches the variants in another order than the config lists them
    pert = {n: pair() for n in PERT_NAMES}
    pert[PERT_NAMES[3]] = []
    ds = make_ds([{"dets": pair(), "pert": pert}], variants=tuple(reversed(PERT_NAMES)))
    v = evaluate(ds, STAB)
    assert v.c_stability[0] == 0.875
    only_lost = STAB.replace(perturbations=(Perturbation.from_name(PERT_NAMES[3]),))
    assert evaluate(ds, only_lost).c_stability[0] == 0.0


def test_missing_cached_perturbation_is_a_clear_error():
    ds = make_ds([{"dets": pair(), "pert": {n: pair() for n in PERT_NAMES}}])
    cfg = STAB.replace(perturbations=(Perturbation("brightness", 1.3),))
    with pytest.raises(WorkstationError, match="brightness_1.3"):
        evaluate(ds, cfg)


# ---------------------------------------------------------------------------------------------
# agreement and confidence
# ---------------------------------------------------------------------------------------------
def test_agreement_neutral_without_secondary_result_and_one_without_detector():
    cfg = CheckerConfig(stability_enabled=False)
    v = run([{"dets": pair(), "sec": None},  # the secondary did not run on this image
             {"dets": pair(), "sec": [("dog", 0.9, LEFT)]},  # found only A
             {"dets": pair(), "sec": pair()}], cfg)  # identical boxes
    assert v.c_agreement.tolist() == [0.5, 0.5, 1.0]
    assert v.sel2_a.tolist()[:2] == [-1, 4] and v.sel2_b.tolist()[:2] == [-1, -1]
    v = run([{"dets": pair(), "sec": [("dog", 0.9, LEFT)]}], cfg.replace(use_secondary=False))
    assert v.c_agreement[0] == 1.0 and v.sel2_a[0] == -1


def test_agreement_formula():
    # the secondary sees the cat left of the dog: verdict and sign disagree; IoU(A) 1, IoU(B) 0
    cfg = CheckerConfig(stability_enabled=False)
    v = run([{"dets": pair(), "sec": pair(b=SHIFTED_LEFT)}], cfg)
    assert v.c_agreement[0] == 0.25
    # the secondary's cat (cx 35) is within the margin of the dog (cx 20): d2 = -0.15, m = 0.2
    # -> v2 UNDECIDABLE != PASS (0), same sign (1): a = 0.5; IoU(A) 1, IoU(B) 0
    near2 = (25.0, 40.0, 45.0, 60.0)
    v = run([{"dets": pair(), "sec": pair(b=near2)}], cfg.replace(margin=0.2))
    assert v.verdict[0] == PASS and v.c_agreement[0] == 0.5 * 0.5 + 0.25 * 1.0 + 0.25 * 0.0


def test_confidence_formula():
    # det = sqrt(0.81 * 0.64) = 0.72; d = -0.6 -> geom = clip(0.5 / 0.15) = 1; stab 1; agree 1
    v = run([{"dets": pair(sa=0.81, sb=0.64)}])
    assert v.c_detection[0] == pytest.approx(0.72, abs=1e-15)
    assert v.c_geometry[0] == 1.0
    expected = (0.72 + EPS) ** 0.4 * (1 + EPS) ** 0.3 * (1 + EPS) ** 0.2 * (1 + EPS) ** 0.1
    assert v.conf[0] == pytest.approx(expected, rel=1e-12)
    # geometry inside the slope: d = -0.2, m = 0.1, gamma = 0.15 -> 2/3
    v = run([{"dets": pair(a=(10.0, 40.0, 30.0, 60.0), b=(30.0, 40.0, 50.0, 60.0))}])
    assert v.c_geometry[0] == pytest.approx((0.2 - 0.1) / 0.15, rel=1e-12)
    w = NO_STAB_NO_SEC.replace(w_detection=1.0, w_geometry=0.0, w_stability=0.0, w_agreement=0.0)
    v = run([{"dets": pair(sa=0.81, sb=0.64)}], w)
    assert v.conf[0] == pytest.approx(0.72 + EPS, rel=1e-12)


def test_take_and_cache_reuse():
    ds = make_ds([{"dets": pair()}, {"dets": []}, {"dets": pair(a=RIGHT, b=LEFT)}])
    p1 = prepare(ds)
    v = evaluate(ds, NO_STAB_NO_SEC)
    assert prepare(ds) is p1
    sub = v.take(np.array([2, 0]))
    assert sub.verdict.tolist() == [FAIL, PASS] and sub.reason_text(1) == "" and len(sub) == 2
    assert v.counts() == (1, 1, 1)
    v2 = evaluate(ds, NO_STAB_NO_SEC.replace(margin=0.7))
    assert prepare(ds) is p1 and (v2.verdict[[0, 2]] == UNDECIDABLE).all()


def test_empty_dataset_and_samples_without_detections():
    ds = make_ds([])
    v = evaluate(ds, CheckerConfig())
    assert len(v) == 0
    v = run([{"dets": [], "sec": [], "pert": {n: [] for n in PERT_NAMES}}], CheckerConfig())
    assert v.reason_text(0) == "missing: dog, cat"


# ---------------------------------------------------------------------------------------------
# vectorised == reference on random data (ties, tiny boxes, exact margins)
# ---------------------------------------------------------------------------------------------
LABELS = ["dog", "cat", "car", "Dog", "person"]


def random_samples(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        w, h = (100.0, 100.0) if rng.random() < 0.7 else (float(rng.integers(50, 200)), 80.0)

        def dets(k: int) -> list[Det]:
            res = []
            for _ in range(k):
                x1, y1 = float(rng.integers(0, 10)) * w / 10, float(rng.integers(0, 10)) * h / 10
                bw, bh = float(rng.choice([0.5, 1, 2, 5, 10, 20, 40])), float(rng.choice([0.5, 1, 5, 10, 30]))
                sc = float(rng.choice([0.1, 0.2, 0.3, 0.35, 0.5, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]))
                res.append((str(rng.choice(LABELS)), sc, (float(x1), float(y1), float(min(x1 + bw, w)),
                                                           float(min(y1 + bh, h)))))
            return res

        base = dets(int(rng.integers(0, 7)))
        smp: dict[str, Any] = {"rel": str(rng.choice(list(RELATION_CODE))), "w": w, "h": h, "dets": base,
                               "a": "dog", "b": "cat" if rng.random() < 0.95 else "person"}
        r = rng.random()
        if r < 0.5:
            smp["pert"] = {nm: [d for d in base if rng.random() < 0.8] + dets(int(rng.integers(0, 2)))
                           for nm in PERT_NAMES}
        elif r < 0.7:
            smp["rec"] = float(rng.choice([0.2, 0.5, 0.9, 1.0]))
        if rng.random() < 0.8:
            smp["sec"] = [d for d in base if rng.random() < 0.7] + dets(int(rng.integers(0, 3)))
        out.append(smp)
    return out


def random_config(rng: np.random.Generator) -> CheckerConfig:
    return CheckerConfig(
        t_det=float(rng.choice([0.0, 0.2, 0.3, 0.5])),
        min_area_fraction=float(rng.choice([0.0, 0.005, 0.01, 0.05])),
        ambiguity_delta=float(rng.choice([0.0, 0.05, 0.1, 0.2])),
        max_overlap_iou=float(rng.choice([0.0, 0.3, 0.5, 1.0])),
        margin=float(rng.choice([0.0, 0.05, 0.1, 0.2])),
        primary_threshold=float(rng.choice([0.0, 0.35])),
        secondary_threshold=float(rng.choice([0.0, 0.6])),
        use_secondary=bool(rng.random() < 0.8), stability_enabled=bool(rng.random() < 0.8),
        perturbations=DEFAULT_PERTURBATIONS if rng.random() < 0.8 else DEFAULT_PERTURBATIONS[1:3],
        consistency_threshold=float(rng.choice([0.3, 0.5, 0.8])),
        geom_slope=float(rng.choice([0.05, 0.15])),
    )


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_equals_reference_on_random_data(seed):
    rng = np.random.default_rng(seed)
    ds = make_ds(random_samples(rng, 300))
    for _ in range(6):
        cfg = random_config(rng)
        assert_same(evaluate(ds, cfg), evaluate_reference(ds, cfg))


# ---------------------------------------------------------------------------------------------
# stage caches: a cached result is never stale
# ---------------------------------------------------------------------------------------------
CHOICES: dict[str, list[Any]] = {
    "t_det": [0.0, 0.2, 0.3, 0.5],
    "min_area_fraction": [0.0, 0.005, 0.01, 0.05],
    "ambiguity_delta": [0.0, 0.05, 0.1, 0.2],
    "max_overlap_iou": [0.0, 0.3, 0.5, 1.0],
    "margin": [0.0, 0.05, 0.1, 0.2],
    "primary_threshold": [0.0, 0.35],
    "secondary_threshold": [0.0, 0.6],
    "use_secondary": [True, False],
    "stability_enabled": [True, False],
    "perturbations": [DEFAULT_PERTURBATIONS, DEFAULT_PERTURBATIONS[1:3], DEFAULT_PERTURBATIONS[::-1],
                      (DEFAULT_PERTURBATIONS[0], DEFAULT_PERTURBATIONS[0])],
    "consistency_threshold": [0.3, 0.5, 0.8],
    "neutral_agreement": [0.5, 0.3],
    "geom_slope": [0.05, 0.15],
    "w_detection": [0.4, 0.0, 1.0],
    "w_geometry": [0.3, 0.7],
    "w_stability": [0.2, 0.0],
    "w_agreement": [0.1, 0.5],
    "tau": [0.0, 0.3, 0.7],
}
CONF_ONLY = ["w_detection", "w_geometry", "w_stability", "w_agreement", "geom_slope", "tau"]


def assert_identical(a, b) -> None:
    """Every array bit for bit (NaN where NaN), the config equal."""
    for k in ("verdict", "reason", "reason_detail", "conf", "c_detection", "c_geometry", "c_stability",
              "c_agreement", "delta", "iou_ab", "sel_a", "sel_b", "sel2_a", "sel2_b"):
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype, k
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8), err_msg=k)
    assert a.config == b.config


def fresh_copy(ds: Dataset) -> Dataset:
    # the same arrays, an empty cache
    return Dataset(ds.samples, ds.detections, ds.prompts, ds.variant_names, ds.sample_columns)


@pytest.mark.parametrize("seed", range(6))
def test_cached_evaluate_equals_fresh_evaluate_and_reference(seed, monkeypatch):
    from workstation.methods.spatial import checker

    set_in_checker(monkeypatch, "CHUNK", 64)  # several chunks, taken by two threads
    set_in_checker(monkeypatch, "MAX_CHUNK", 64)
    set_in_checker(monkeypatch, "PREP_CHUNK", 97)  # prepared in chunks too
    set_in_checker(monkeypatch, "THREADS", 2)
    rng = np.random.default_rng(100 + seed)
    ds = make_ds(random_samples(rng, 500))
    cfg = random_config(rng)
    held: list[Any] = []  # results kept alive: the result cache reuses only live ones
    for step in range(30):
        r = rng.random()
        if r < 0.3 and held:  # back to an earlier config, sometimes with other weights / tau
            cfg = held[int(rng.integers(len(held)))].config
            names = list(rng.choice(CONF_ONLY, int(rng.integers(0, 3)), replace=False))
        elif r < 0.6:  # one slider
            names = [str(rng.choice(list(CHOICES)))]
        else:
            names = list(rng.choice(list(CHOICES), int(rng.integers(2, 6)), replace=False))
        for name in names:
            opts = CHOICES[name]
            cfg = cfg.replace(**{name: opts[int(rng.integers(len(opts)))]})
        cached = evaluate(ds, cfg)
        assert_identical(cached, evaluate(fresh_copy(ds), cfg))
        assert_same(cached, evaluate_reference(ds, cfg))
        if rng.random() < 0.5:
            held.append(cached)
        if len(held) > 4:
            held.pop(0)


@pytest.mark.parametrize("prep_chunk", [1, 13, 1 << 17])
def test_prepared_in_chunks_from_detections_in_any_order_equals_the_reference(prep_chunk, monkeypatch):
    """Samples are prepared chunk by chunk on two threads; detections stored in any order (not
    grouped by sample) give the same verdicts, selections and tie-breaks as the reference."""
    from workstation.methods.spatial import checker

    set_in_checker(monkeypatch, "PREP_CHUNK", prep_chunk)
    set_in_checker(monkeypatch, "THREADS", 2)
    rng = np.random.default_rng(55)
    ds = make_ds(random_samples(rng, 200))
    shuffled = Dataset(ds.samples, ds.detections.take(rng.permutation(len(ds.detections))), ds.prompts,
                       ds.variant_names)
    assert not bool((np.diff(shuffled.detections.sample_idx) >= 0).all())
    for _ in range(4):
        cfg = random_config(rng)
        assert_same(evaluate(shuffled, cfg), evaluate_reference(shuffled, cfg))
        assert_identical(evaluate(ds, cfg).take(np.arange(ds.n)), evaluate(fresh_copy(ds), cfg))


def test_caches_share_what_a_change_cannot_touch_and_results_are_read_only():
    rng = np.random.default_rng(7)
    ds = make_ds(random_samples(rng, 200))
    base = CheckerConfig()
    v = evaluate(ds, base)
    v_tau = evaluate(ds, base.replace(tau=0.5, name="other"))
    assert v_tau.verdict is v.verdict and v_tau.conf is v.conf and v_tau.config.tau == 0.5
    v_w = evaluate(ds, base.replace(w_detection=0.9))
    assert v_w.verdict is v.verdict and v_w.c_stability is v.c_stability
    assert v_w.conf is not v.conf and not np.array_equal(v_w.conf[v.conf > 0], v.conf[v.conf > 0])
    v_m = evaluate(ds, base.replace(margin=0.2))  # a verdict parameter: new verdicts, same selections
    assert v_m.verdict is not v.verdict and v_m.sel_a is v.sel_a
    assert v_m.delta is v.delta and v_m.c_detection is v.c_detection  # the same samples reach the margin test
    v_a = evaluate(ds, base.replace(ambiguity_delta=0.3))
    assert v_a.delta is not v.delta and v_a.sel_a is v.sel_a
    v_t = evaluate(ds, base.replace(t_det=0.5))
    assert v_t.sel_a is not v.sel_a
    with pytest.raises(ValueError):
        v.verdict[0] = FAIL
    with pytest.raises(ValueError):
        v_w.conf[:] = 0.0
    # a replaced per-sample flag is noticed (the caches hold weak references, not ids)
    ds.samples.has_secondary = ~ds.samples.has_secondary
    assert_same(evaluate(ds, base), evaluate_reference(ds, base))
    assert_identical(evaluate(ds, base), evaluate(fresh_copy(ds), base))


@pytest.mark.parametrize("seed", range(3))
def test_an_area_filter_drag_reuses_the_stage_before_it_and_gives_a_fresh_evaluations_bits(seed, monkeypatch):
    """Moving min_area_fraction alone while the previous result is alive: the new area stage takes
    the walks and geometry of the stage before it where a sample's selections are the same under
    both, and the selection and decision passes run again only for the samples whose inputs the
    two stages give differently; every array is the bits of a fresh evaluation, every verdict the
    reference's, up and down, in small steps and in jumps, on images of several sizes."""
    from workstation.methods.spatial import checker

    set_in_checker(monkeypatch, "CHUNK", 64)
    set_in_checker(monkeypatch, "MAX_CHUNK", 64)
    set_in_checker(monkeypatch, "THREADS", 2)
    geometry_of: list[int] = []
    patched_at: list[int] = []
    real_geometry, real_patched = checker.geometry._geometry, checker.passes._patched

    def geometry(ds, rows, idx, gathered=None):
        geometry_of.append(rows.shape[1])
        return real_geometry(ds, rows, idx, gathered)

    def patched(base, at, *a, **k):
        patched_at.append(len(at))
        return real_patched(base, at, *a, **k)

    set_in_checker(monkeypatch, "_geometry", geometry)
    set_in_checker(monkeypatch, "_patched", patched)
    set_in_checker(monkeypatch, "PATCH_MAX_FRACTION", 0.25)  # (a small dataset: a few samples are a large share)
    rng = np.random.default_rng(900 + seed)
    ds = make_ds(random_samples(rng, 600))
    cfg = random_config(rng).replace(min_area_fraction=0.01)
    held = [evaluate(ds, cfg)]
    built = len(prepare(ds).stages.area[0.01].idx)
    assert built > 20  # selections the area filter moves past their first row
    for maf in (0.0101, 0.0102, 0.011, 0.0105, 0.02, 0.005, 0.0, 0.05, 0.0499, 0.01):
        geometry_of.clear()
        patched_at.clear()
        v = evaluate(ds, cfg.replace(min_area_fraction=maf))
        computed, decided = sum(geometry_of), list(patched_at)
        assert_identical(v, evaluate(fresh_copy(ds), cfg.replace(min_area_fraction=maf)))
        assert_same(v, evaluate_reference(ds, cfg.replace(min_area_fraction=maf)))
        if maf in (0.0101, 0.0102):  # a small step: few selections change
            assert computed < len(prepare(ds).stages.area[maf].idx)
            assert len(decided) == 2 and max(decided) <= ds.n // 4  # selected, then decided
        held = [held[-1], v]


def test_an_area_filter_change_that_reaches_many_samples_runs_the_whole_passes(monkeypatch):
    from workstation.methods.spatial import checker

    patched_at: list[int] = []
    real_patched = checker.passes._patched
    set_in_checker(monkeypatch, "_patched", lambda base, at, *a, **k: patched_at.append(len(at)) or
                        real_patched(base, at, *a, **k))
    rng = np.random.default_rng(77)
    ds = make_ds(random_samples(rng, 400))
    cfg = random_config(rng).replace(min_area_fraction=0.0)
    held = evaluate(ds, cfg)  # noqa: F841 - the live result the change starts from
    v = evaluate(ds, cfg.replace(min_area_fraction=0.2))  # most small boxes filtered out at once
    assert patched_at == []
    assert_identical(v, evaluate(fresh_copy(ds), cfg.replace(min_area_fraction=0.2)))


def grid_samples(rng: np.random.Generator, n: int, sizes: list[tuple[float, float]],
                 nan: bool) -> list[dict[str, Any]]:
    """Samples whose boxes have whole-pixel sides on 64x64 images (an area of k pixels is k/4096
    of the image: the area index's bucket edges) or on other sizes: areas at and around a
    threshold, zero, larger than the image; with ``nan``, on the perturbed images also NaN."""
    def box(w: float, h: float, nan: bool = False) -> tuple[float, float, float, float]:
        r = rng.random()
        if nan and r < 0.05:
            return (0.0, 0.0, float("nan"), 10.0)
        bw = float(rng.integers(0, 12)) if r < 0.9 else float(rng.integers(40, 90))  # some beyond the image
        bh = float(rng.integers(1, 9))
        x1, y1 = float(rng.integers(0, int(w) // 2)), float(rng.integers(0, int(h) // 2))
        return (x1, y1, x1 + bw, y1 + bh)

    out = []
    for _ in range(n):
        w, h = sizes[int(rng.integers(len(sizes)))]

        def dets(k: int, nan: bool = False) -> list[Det]:
            return [(str(rng.choice(["dog", "cat", "car"])), float(rng.choice([0.3, 0.5, 0.7, 0.9])), box(w, h, nan))
                    for _ in range(k)]

        smp: dict[str, Any] = {"rel": str(rng.choice(list(RELATION_CODE))), "w": w, "h": h, "a": "dog", "b": "cat",
                               "dets": dets(int(rng.integers(0, 8))), "sec": dets(int(rng.integers(0, 4)))}
        if rng.random() < 0.7:
            smp["pert"] = {nm: dets(int(rng.integers(0, 6)), nan) for nm in PERT_NAMES}
        out.append(smp)
    return out


@pytest.mark.parametrize(("sizes", "nan"), [([(64.0, 64.0)], True),
                                             ([(64.0, 64.0), (100.0, 50.0), (37.0, 91.0)], False)])
def test_an_area_filter_change_compares_again_only_the_first_rows_near_the_two_thresholds(sizes, nan, monkeypatch):
    """A stage built from the one before it compares again only the first rows whose areas lie
    in the area index's buckets near the two thresholds: its record of the samples whose first
    rows turned small or large is short for a small step, and every array is the bits of a fresh
    evaluation and every verdict, reason and selection the reference's, for areas on the buckets'
    edges and on the thresholds, zero, NaN (on one image size) and larger than the image, with one
    image size or several, in small steps, across buckets, in jumps, and to values the index does
    not answer for."""
    from workstation.methods.spatial import checker

    set_in_checker(monkeypatch, "CHUNK", 64)
    set_in_checker(monkeypatch, "MAX_CHUNK", 64)
    set_in_checker(monkeypatch, "THREADS", 2)
    rng = np.random.default_rng(4242)
    ds = make_ds(grid_samples(rng, 700, sizes, nan))
    cfg = CheckerConfig(min_area_fraction=10 / 4096)
    held = [evaluate(ds, cfg)]
    stages = prepare(ds).stages
    steps = [11 / 4096, 11.5 / 4096, 11.5 / 4096 + 1e-9, 12 / 4096, 3 / 4096, 3 / 4096 - 1e-12, 0.0, 40 / 4096,
             1.25, 0.5, 2e6, 0.004, -0.01, 0.003, float("nan"), 0.003, 10 / 4096]
    flipped_small_step = None
    for i, maf in enumerate(steps):
        c = cfg.replace(min_area_fraction=maf)
        v = evaluate(ds, c)
        assert_identical(v, evaluate(fresh_copy(ds), c))
        ref = evaluate_reference(ds, c)
        for k in ("verdict", "reason", "reason_detail", "sel_a", "sel_b", "sel2_a", "sel2_b"):
            np.testing.assert_array_equal(getattr(v, k), getattr(ref, k), err_msg=k)
        stage = stages.area.get(maf)
        if stage is not None and maf == 11.5 / 4096 + 1e-9:
            flipped_small_step = getattr(stage, "flipped", None)
        held = [held[-1], v]
    assert isinstance(stages.area_index, checker.stages._AreaIndex)
    assert flipped_small_step is not None and len(flipped_small_step) < ds.n // 20


REACH_KEPT = ["margin", "consistency_threshold", "neutral_agreement", "use_secondary", "stability_enabled",
              "perturbations", "secondary_threshold", "geom_slope", "w_geometry", "w_stability"]


@pytest.mark.parametrize("seed", range(4))
def test_a_margin_drag_decides_again_only_the_samples_that_reach_the_test(seed, monkeypatch):
    """While a result is alive, a config that changes only what comes after the margin test
    (the margin, stability, agreement, weights) keeps its delta, IoU, detection term and the
    other samples' reasons, and decides again only the samples that reach the test: every
    array the bits of a fresh evaluation, every verdict the reference's; also at the area
    filter's moved selections, in several chunks on two threads."""
    from workstation.methods.spatial import checker

    set_in_checker(monkeypatch, "CHUNK", 64)
    set_in_checker(monkeypatch, "MAX_CHUNK", 64)
    set_in_checker(monkeypatch, "THREADS", 2)
    rng = np.random.default_rng(300 + seed)
    ds = make_ds(random_samples(rng, 400))
    base_cfg = random_config(rng).replace(min_area_fraction=0.01)
    base = evaluate(ds, base_cfg)
    reached = (base.reason == 0) | (base.reason >= REASON_CODE["near_boundary"])
    assert 0 < reached.sum() < ds.n
    for _ in range(12):
        cfg = base_cfg.replace(margin=float(rng.choice([0.0, 0.03, 0.05, 0.1, 0.2])))
        for name in rng.choice(REACH_KEPT, int(rng.integers(0, 3)), replace=False):
            opts = CHOICES[str(name)]
            cfg = cfg.replace(**{str(name): opts[int(rng.integers(len(opts)))]})
        v = evaluate(ds, cfg)
        assert v.delta is base.delta and v.iou_ab is base.iou_ab and v.reason_detail is base.reason_detail
        np.testing.assert_array_equal(v.reason[~reached], base.reason[~reached])
        assert_identical(v, evaluate(fresh_copy(ds), cfg))
        assert_same(v, evaluate_reference(ds, cfg))


def far_samples_with_near_twins() -> list[dict[str, Any]]:
    """Samples whose primary delta is far from any margin (0.6) while their secondary
    detector's or their perturbed images' delta is small (0.03 to 0.25): a margin step
    changes their agreement or stability, not their verdict's margin test."""
    def pair(center_a: float, center_b: float) -> list[Det]:
        return [("dog", 0.9, (center_a - 8, 40.0, center_a + 8, 56.0)),
                ("cat", 0.9, (center_b - 8, 40.0, center_b + 8, 56.0))]

    out = []
    far = pair(15.0, 75.0)
    for rel in ("left_of", "right_of"):
        for t in (0.03, 0.07, 0.12, 0.17, 0.25):
            for sign in (1, -1):
                near = pair(50.0, 50.0 + sign * 100 * t)
                common = {"rel": rel, "w": 100.0, "h": 100.0, "a": "dog", "b": "cat", "dets": far}
                out.append({**common, "sec": near, "pert": {nm: far for nm in PERT_NAMES}})
                out.append({**common, "sec": far, "pert": {nm: near for nm in PERT_NAMES}})
    return out


@pytest.mark.parametrize("seed", range(4))
def test_a_margin_step_decides_again_only_the_samples_the_margins_between_can_change(seed, monkeypatch):
    """A config that differs from a live result in its margin alone starts from that result
    (the nearest in margin): only the reached samples with |delta| between the two margins
    or on the geometry term's slope above them, or a secondary or perturbed delta between
    them, are decided again; every array has the bits of a fresh evaluation and every
    verdict the reference's, for steps up and down, large jumps, a zero margin, the area
    filter's moved selections and several chunks on two threads."""
    from workstation.methods.spatial import checker

    set_in_checker(monkeypatch, "CHUNK", 64)
    set_in_checker(monkeypatch, "MAX_CHUNK", 64)
    set_in_checker(monkeypatch, "THREADS", 2)
    decided, stepped = [], []
    real_decided, real_step = checker.decision._decided, checker.decision._step_chunk
    set_in_checker(monkeypatch, "_decided",
                        lambda p, x, s, r, d: decided.append(len(r)) or real_decided(p, x, s, r, d))
    set_in_checker(monkeypatch, "_step_chunk", lambda *a: stepped.append(1) or real_step(*a))
    rng = np.random.default_rng(700 + seed)
    ds = make_ds(random_samples(rng, 400) + far_samples_with_near_twins())
    # a steep geometry term (narrow slope) leaves samples whose own delta is far from both
    # margins while a secondary or perturbed delta lies between them
    cfg = random_config(rng).replace(min_area_fraction=0.01, geom_slope=float(rng.choice([0.001, 0.05])),
                                     use_secondary=True, stability_enabled=True)
    live = evaluate(ds, cfg)
    reached = (live.reason == 0) | (live.reason >= REASON_CODE["near_boundary"])
    assert 0 < reached.sum() < ds.n
    partial = 0
    for m in [0.1, 0.105, 0.11, 0.1, 0.0, 0.005, 0.3, 0.295, 0.05, 0.2, 0.02, 0.15]:
        decided.clear()
        stepped.clear()
        v = evaluate(ds, cfg.replace(margin=m))
        n_step = sum(decided)
        decided.clear()
        fresh = evaluate(fresh_copy(ds), cfg.replace(margin=m))  # decides every reached sample
        assert not stepped or live.config.margin != m
        if live.config.margin != m:
            assert stepped, m  # started from the live result
            assert v.delta is live.delta and v.c_detection is live.c_detection
            assert n_step <= sum(decided)
            partial += n_step < sum(decided)
        assert_identical(v, fresh)
        assert_same(v, evaluate_reference(ds, cfg.replace(margin=m)))
        live = v
    assert partial >= 4  # small steps decide again only some of the reached samples


def test_a_margin_step_starts_from_the_live_result_nearest_in_margin(monkeypatch):
    """Of two live results that differ from a config in the margin alone, the step starts from
    the one nearest in margin (fewer samples between); none starts from a result whose other
    parameters differ."""
    from workstation.methods.spatial import checker

    rng = np.random.default_rng(11)
    ds = make_ds(random_samples(rng, 300))
    cfg = random_config(rng).replace(geom_slope=0.05)
    far, near = evaluate(ds, cfg.replace(margin=0.3)), evaluate(ds, cfg.replace(margin=0.12))
    other = evaluate(ds, cfg.replace(margin=0.1, w_geometry=cfg.w_geometry + 0.5))
    prep = checker.prepare(ds)
    key, flags, conf_key = checker.stages._keys(cfg.replace(margin=0.1), ds)
    assert prep.stages.find_margin_step(key, flags, conf_key, 0.1) is near
    del near
    assert prep.stages.find_margin_step(key, flags, conf_key, 0.1) is far
    assert other is not None and prep.stages.find_margin_step(key, flags, conf_key, float("nan")) is None
    _, _, slope0 = checker.stages._keys(cfg.replace(margin=0.1, geom_slope=0.0), ds)
    assert prep.stages.find_margin_step(key, flags, slope0, 0.1) is None  # no slope: no step


def test_two_threads_give_the_bits_of_one(monkeypatch):
    from workstation.methods.spatial import checker

    rng = np.random.default_rng(8)
    ds = make_ds(random_samples(rng, 600))
    set_in_checker(monkeypatch, "CHUNK", 32)
    set_in_checker(monkeypatch, "MAX_CHUNK", 32)
    cfgs = [random_config(rng) for _ in range(4)]
    set_in_checker(monkeypatch, "THREADS", 1)
    one = [evaluate(fresh_copy(ds), c) for c in cfgs]
    set_in_checker(monkeypatch, "THREADS", 2)
    for c, v in zip(cfgs, one):
        assert_identical(evaluate(fresh_copy(ds), c), v)


def test_spatial_fields_are_read_through_one_function(monkeypatch):
    """relation, label_a and label_b reach the checker through the checker's _spatial_columns only."""
    import dataclasses

    from workstation.methods.spatial import checker

    rng = np.random.default_rng(9)
    ds = make_ds(random_samples(rng, 120))
    cfg = CheckerConfig()
    expected = evaluate_reference(ds, cfg)
    sc = spatial_columns(ds)
    cols = (sc.relation, sc.label_a, sc.label_b)
    bare = Dataset(dataclasses.replace(ds.samples), ds.detections, Prompts.empty(), ds.variant_names)
    with pytest.raises(WorkstationError):  # without its prompts the dataset has no spatial columns
        spatial_columns(bare)
    set_in_checker(monkeypatch, "_spatial_columns", lambda d: cols)
    assert_same(evaluate(bare, cfg), expected)
    assert_same(evaluate_reference(bare, cfg), expected)


def test_a_forked_child_evaluates_with_its_own_threads(monkeypatch):
    """After the parent used the thread pool, a forked child (a worker process) still gets
    results: it must not hand chunks to the parent's threads, which it does not have."""
    import os
    import signal
    import time

    from workstation.methods.spatial import checker

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    set_in_checker(monkeypatch, "CHUNK", 16)
    set_in_checker(monkeypatch, "MAX_CHUNK", 16)
    set_in_checker(monkeypatch, "THREADS", 2)
    rng = np.random.default_rng(10)
    ds = make_ds(random_samples(rng, 200))
    expected = evaluate(ds, CheckerConfig())  # starts the pool in this process
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: evaluate under another config, report PASS count, exit at once
        try:
            v = evaluate(fresh_copy(ds), CheckerConfig(margin=0.05))
            os.write(write, str(v.counts()[0]).encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 60
    while True:  # a child stuck on threads it does not have would never exit: bound the wait
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish its evaluation within 60 s")
        time.sleep(0.05)
    got = os.read(read, 64).decode()
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert got == str(evaluate(ds, CheckerConfig(margin=0.05)).counts()[0])
    assert expected.counts() == evaluate_reference(ds, CheckerConfig()).counts()


def test_prompt_rows_find_each_samples_prompt_first_row_or_none() -> None:
    """Every sample's prompt row: the first row of a repeated prompt id, -1 for a prompt that
    is not loaded; the same for a column the loader built and for a plain object array."""
    prompts = Prompts.build(["p2", "p0", "p1", "p0"], ["c", "a", "b", "a again"], method="spatial",
                            entities=[("x", "y")] * 4, attrs=[{"relation": "left_of"}] * 4)
    samples = Samples.build(["s0", "s1", "s2", "s3", "s4"], "run", ["p1", "p0", "gone", "p2", "p1"])
    ds = Dataset(samples, Detections.empty(), prompts, (ORIGINAL_NAME,))
    assert ds.prompt_rows().tolist() == [2, 1, -1, 0, 2]
    empty = Dataset(Samples.empty(), Detections.empty(), prompts, (ORIGINAL_NAME,))
    assert empty.prompt_rows().tolist() == []
    none = Dataset(samples, Detections.empty(), Prompts.empty(), (ORIGINAL_NAME,))
    assert none.prompt_rows().tolist() == [-1] * 5


def test_a_few_samples_among_many_prompts_find_their_rows_and_read_only_their_prompts() -> None:
    """A subset's samples use a few of the project's prompts: their rows are the same (first
    row of a repeated id, -1 for one not loaded), and the spatial columns read only the
    prompts used, so a malformed prompt that no sample of the subset uses is no error."""
    from workstation.methods.spatial.data import spatial_columns

    ids = [f"p{i}" for i in range(40)] + ["p7"]
    ents = [("cat", "dog")] * 41
    attrs = [{"relation": "left_of"}] * 41
    ents[3], attrs[5] = ("cat",), {"relation": "inside"}  # malformed prompts 3 and 5
    ents[7], attrs[7] = ("bird", "tree"), {"relation": "above"}
    prompts = Prompts.build(ids, ids, method="spatial", entities=ents, attrs=attrs)
    samples = Samples.build(["a", "b", "c", "d"], "run", ["p7", "p12", "gone", "p7"])
    ds = Dataset(samples, Detections.empty(), prompts, (ORIGINAL_NAME,))
    assert ds.prompt_rows().tolist() == [7, 12, -1, 7]
    good = ds.subset(np.array([0, 1, 3]))
    cols = spatial_columns(good)
    assert cols.relation.tolist() == [2, 0, 2] and cols.label_a.tolist() == ["bird", "cat", "bird"]
    assert cols.label_b.tolist() == ["tree", "dog", "tree"]
    assert [cols.names[c] for c in cols.code_b] == ["tree", "dog", "tree"]
    with pytest.raises(WorkstationError, match="sample 'c' has no spatial prompt"):
        spatial_columns(ds.subset(np.array([2, 0])))
    bad = Dataset(Samples.build(["x"], "run", ["p5"]), Detections.empty(), prompts, (ORIGINAL_NAME,))
    with pytest.raises(WorkstationError, match="prompt 'p5'"):
        spatial_columns(bad)


def test_objects_coded_once_per_prompt_give_the_verdicts_of_hashing_every_sample(monkeypatch) -> None:
    """A and B reach the checker as codes into the prompts' distinct names; verdicts equal
    those of hashing every sample's names, also where a name differs from a detection label
    only in case or surrounding spaces (the checker compares names case- and space-blind)."""
    from workstation.methods.spatial import checker, data

    rng = np.random.default_rng(21)
    rows = random_samples(rng, 300)
    ds = make_ds(rows)
    ents = ds.prompts.entities.copy()
    for i in range(0, len(ents), 3):  # " Dog" and "dog " are the detector's "dog"
        a, b = ents[i]
        ents[i] = (f" {a}", f"{b} ")
    ds.prompts.entities = ents
    ds.cache.clear()
    sc = spatial_columns(ds)
    assert sc.code_a is not None and sc.code_b is not None
    assert [sc.names[c] for c in sc.code_a] == sc.label_a.tolist()
    assert [sc.names[c] for c in sc.code_b] == sc.label_b.tolist()
    cfg = CheckerConfig()
    coded = evaluate(ds, cfg)
    assert_same(coded, evaluate_reference(ds, cfg))
    ds.cache.clear()
    set_in_checker(monkeypatch, "object_codes", lambda *a: None)  # hash every sample's names
    assert data.object_codes is not None
    assert_same(evaluate(ds, cfg), coded)


def test_float32_scores_are_cut_and_compared_in_float64() -> None:
    """Scores as the loader gives them (float32): the prepared arrays keep them in 4 bytes, and
    the cut and the ambiguity gap are still decided in float64, as the reference decides them
    (a float32 comparison would round the cut and the bound, and flip the samples below)."""
    import dataclasses

    from workstation.methods.spatial import checker

    f32 = lambda x: float(np.float32(x))  # noqa: E731
    s1, s2 = f32(0.9), f32(0.1)
    gap = s1 - s2  # exact in float64
    low = f32(0.3)  # a score a hair below the cut: float32(cut) == low
    cut = low + 1e-12
    assert f32(cut) == low and f32(gap + 1e-12) == f32(gap)
    other = (40.0, 0.0, 45.0, 5.0)
    rows = [{"dets": [("dog", s1, LEFT), ("dog", s2, other), ("cat", 0.8, RIGHT)]},
            {"dets": [("dog", 0.9, LEFT), ("cat", low, RIGHT)]}]
    ds = make_ds(rows)
    d = ds.detections
    ds.detections = dataclasses.replace(d, score=d.score.astype(np.float32), **{
        k: getattr(d, k).astype(np.float32) for k in ("x1", "y1", "x2", "y2")})
    ds.cache.clear()
    cfg = NO_STAB_NO_SEC.replace(ambiguity_delta=gap, t_det=0.05)
    v = evaluate(ds, cfg)
    assert checker.prepare(ds).score0.dtype == np.float32 and checker.prepare(ds).s2.dtype == np.float32
    assert v.verdict.tolist() == [PASS, PASS]  # the gap equals the bound: not ambiguous
    assert_same(v, evaluate_reference(ds, cfg))
    tight = cfg.replace(ambiguity_delta=gap + 1e-12)  # the gap now below the bound
    v = evaluate(ds, tight)
    assert v.reason_text(0) == "ambiguous: multiple dog" and v.verdict[1] == PASS
    assert_same(v, evaluate_reference(ds, tight))
    above = cfg.replace(t_det=cut)  # the cat's score now below the cut
    v = evaluate(ds, above)
    assert v.verdict[1] == UNDECIDABLE and v.reason_text(1) == "missing: cat"
    assert_same(v, evaluate_reference(ds, above))


def test_a_sample_with_hundreds_of_boxes_widens_the_compact_segments() -> None:
    """Segments and their rows are stored in one byte while every sample has fewer than 256
    detections; a sample with 300 widens them (to two bytes), and the area filter still walks
    past 290 small boxes to the large one, in detections sorted by sample or not."""
    from workstation.methods.spatial import checker

    tiny = [("dog", 0.99 - i * 1e-3, (0.0, 0.0, 1.0, 1.0)) for i in range(290)]
    big = [("dog", 0.5, LEFT)] + [("dog", 0.4 - i * 1e-3, (0.0, 0.0, 1.0, 1.0)) for i in range(9)]
    rows = [{"dets": pair()}, {"dets": tiny + big + [("cat", 0.8, RIGHT)]}, {"dets": pair(0.7, 0.6)}]
    cfg = NO_STAB_NO_SEC.replace(min_area_fraction=0.01, ambiguity_delta=0.0)
    small = make_ds([rows[0], rows[2]])
    prep = checker.prepare(small)
    assert prep.seg_count.dtype == np.uint8 and prep.order.dtype == np.uint8
    ds = make_ds(rows)
    v = run(rows, cfg)
    prep = checker.prepare(make_ds(rows))
    assert prep.seg_count.dtype == np.uint16 and prep.order.dtype == np.uint16
    assert v.verdict.tolist() == [PASS, PASS, PASS]
    assert ds.detections.score[v.sel_a[1]] == 0.5  # the large box, past the small ones
    shuffled = make_ds(rows)
    perm = np.random.default_rng(3).permutation(len(shuffled.detections))
    shuffled.detections = shuffled.detections.take(perm)
    shuffled.cache.clear()
    assert checker.prepare(shuffled).order_base is None  # rows kept whole when not sorted by sample
    w = evaluate(shuffled, cfg)
    assert_same(w, evaluate_reference(shuffled, cfg))
    assert shuffled.detections.score[w.sel_a[1]] == 0.5
