"""The built-in demo: procedural scenes, the OpenCV scene detectors, and the demo builder."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest

from workstation.perturb import DEFAULT_PERTURBATIONS
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.demo import (
    DemoCancelled,
    build_demo_dataset,
    encode_png,
    truth_agreement,
)
from workstation.demo.detector import SceneDetector, TemplateSceneDetector
from workstation.demo.scenes import (
    ERROR_KINDS,
    STYLES,
    box_iou,
    expected_verdict,
    prompt_rows,
    render,
)
from workstation.perturb import apply
from workstation.methods.spatial.suite import SPATIAL_OBJECTS, spatial_suite
from workstation.methods.spatial.types import FAIL, PASS
from workstation.types import PRIMARY, SECONDARY, WorkstationError
from workstation.methods.spatial.store import SpatialStore

ROWS = prompt_rows(spatial_suite())


@pytest.fixture(scope="module")
def detectors() -> tuple[SceneDetector, TemplateSceneDetector]:
    return SceneDetector(), TemplateSceneDetector()


def _top(dets, label):
    cand = [d for d in dets if d.label == label]
    return max(cand, key=lambda d: d.score) if cand else None


# ---- scenes --------------------------------------------------------------------------------------
def test_every_object_has_its_own_look() -> None:
    assert set(STYLES) == set(SPATIAL_OBJECTS)
    assert len(set(STYLES.values())) == len(STYLES) == 30


def test_render_is_deterministic_per_prompt_and_seed() -> None:
    a, ta = render(ROWS[0], 3)
    b, tb = render(dict(prompt_id=ROWS[0].prompt_id, relation=ROWS[0].relation,
                        label_a=ROWS[0].label_a, label_b=ROWS[0].label_b), 3)
    assert a.shape == (512, 512, 3) and a.dtype == np.uint8
    assert encode_png(a) == encode_png(b)  # same bytes
    assert ta == tb
    c, _ = render(ROWS[0], 4)
    assert not np.array_equal(a, c)
    small, ts = render(ROWS[0], 3, size=256)
    assert small.shape == (256, 256, 3) and ts["width"] == 256


def test_png_encoding_round_trips() -> None:
    import cv2

    img, _ = render(ROWS[5], 1)
    back = cv2.imdecode(np.frombuffer(encode_png(img), np.uint8), cv2.IMREAD_COLOR)[:, :, ::-1]
    assert np.array_equal(back, img)


def test_truth_matches_the_error_kind() -> None:
    for i, row in enumerate(ROWS[:24]):
        axis = 0 if row.relation in ("left_of", "right_of") else 1
        good_sign = -1 if row.relation in ("left_of", "above") else 1
        _, t = render(row, i, error="correct")
        (a,), (b,) = t["boxes_a"], t["boxes_b"]
        d = ((a[axis] + a[axis + 2]) - (b[axis] + b[axis + 2])) / 2 / 512
        assert np.sign(d) == good_sign and abs(d) > 0.15
        assert t["expected"] == "PASS"
        _, t = render(row, i, error="swapped")
        assert t["expected"] == "FAIL"
        _, t = render(row, i, error="omitted")
        assert (t["expected"], t["expected_reason"]) == ("UNDECIDABLE", "missing")
        assert len(t["boxes_a"]) + len(t["boxes_b"]) == 1
        _, t = render(row, i, error="duplicated")
        assert (t["expected"], t["expected_reason"]) == ("UNDECIDABLE", "ambiguous")
        _, t = render(row, i, error="distractor")
        assert t["expected"] == "PASS" and t["distractors"]
        _, t = render(row, i, error="overlap")
        assert t["expected"] == "UNDECIDABLE"
        assert t["expected_reason"] in ("high_overlap", "near_boundary")


def test_the_error_model_produces_every_kind_and_every_verdict() -> None:
    kinds = collections.Counter()
    verdicts = collections.Counter()
    reasons = collections.Counter()
    for seed in range(2):
        for row in ROWS:
            _, t = render(row, seed, size=128)
            kinds[t["error"]] += 1
            verdicts[t["expected"]] += 1
            reasons[t["expected_reason"]] += 1
    assert set(kinds) == set(ERROR_KINDS)
    assert kinds["correct"] > 120 and kinds["swapped"] > 30
    assert set(verdicts) == {"PASS", "FAIL", "UNDECIDABLE"}
    assert {"missing", "ambiguous", "near_boundary", "high_overlap"} <= set(reasons)


def test_expected_verdict_rules() -> None:
    a, b = (10, 10, 50, 50), (300, 20, 340, 60)
    assert expected_verdict("left_of", [a], [b], 512, 512) == ("PASS", "")
    assert expected_verdict("right_of", [a], [b], 512, 512) == ("FAIL", "")
    assert expected_verdict("left_of", [a], [], 512, 512) == ("UNDECIDABLE", "missing")
    assert expected_verdict("left_of", [a, a], [b], 512, 512) == ("UNDECIDABLE", "ambiguous")
    assert expected_verdict("above", [a], [(30, 12, 70, 52)], 512, 512) == ("UNDECIDABLE", "near_boundary")
    assert expected_verdict("left_of", [a], [(12, 10, 52, 50)], 512, 512) == ("UNDECIDABLE", "high_overlap")


def test_render_refuses_what_it_cannot_draw() -> None:
    with pytest.raises(WorkstationError, match="cannot draw 'unicorn'"):
        render({"prompt_id": "x", "relation": "left_of", "label_a": "unicorn", "label_b": "cat"}, 0)
    with pytest.raises(WorkstationError, match="unknown relation"):
        render({"prompt_id": "x", "relation": "beside", "label_a": "dog", "label_b": "cat"}, 0)


# ---- detectors ----------------------------------------------------------------------------------
def _clean_objects(truth):
    return [o for o in truth["objects"] if o["role"] in ("a", "b") and o["look"] == "normal"]


@pytest.mark.parametrize("which", ["primary", "secondary"])
def test_detector_finds_the_drawn_objects(detectors, which: str) -> None:
    det = detectors[0] if which == "primary" else detectors[1]
    ious, scores = [], []
    for i in range(0, 80, 2):
        img, t = render(ROWS[i], 11, error="correct")
        dets = det.detect(img)
        for o in _clean_objects(t):
            top = _top(dets, o["label"])
            ious.append(box_iou(top.box, o["box"]) if top else 0.0)
            scores.append(top.score if top else 0.0)
    ious_a = np.array(ious)
    assert len(ious_a) >= 60
    assert (ious_a > 0.7).mean() >= 0.95
    assert np.median(ious_a) > 0.85
    assert np.median(scores) > 0.7


def test_detector_is_robust_to_the_checker_perturbations(detectors) -> None:
    det = detectors[0]
    found = collections.Counter()
    total = 0
    for i in range(1, 60, 3):
        img, t = render(ROWS[i], 5, error="correct")
        objs = _clean_objects(t)
        total += len(objs)
        for p in DEFAULT_PERTURBATIONS:
            dets = det.detect(apply(img, p))
            for o in objs:
                top = _top(dets, o["label"])
                found[p.name] += bool(top and box_iou(top.box, o["box"]) > 0.7 and top.score >= 0.3)
    for name, n in found.items():
        assert n >= 0.9 * total, (name, n, total)


def test_look_alikes_give_lower_scoring_confusable_detections(detectors) -> None:
    det = detectors[0]
    lower = detected = n = 0
    for i in range(60):
        row = ROWS[i]
        img, t = render(row, 2, error="distractor")
        dets = det.detect(img)
        for dis in t["distractors"]:
            real_box = (t["boxes_a"] if dis["looks_like"] == row.label_a else t["boxes_b"])[0]
            on_real = [d.score for d in dets if d.label == dis["looks_like"] and box_iou(d.box, real_box) > 0.5]
            on_dis = [d.score for d in dets if d.label == dis["looks_like"] and box_iou(d.box, dis["box"]) > 0.5]
            n += 1
            detected += bool(on_dis)
            lower += bool(on_real and (not on_dis or max(on_dis) < max(on_real)))
    assert n >= 40
    assert detected >= 0.7 * n  # they do look like the object...
    assert lower >= 0.8 * n  # ...but score lower than the real one


def test_detections_come_from_pixels_not_from_truth(detectors) -> None:
    blank = np.full((512, 512, 3), 128, np.uint8)
    for det in detectors:
        assert det.detect(blank) == []
        assert det.detect_batch([blank, blank]) == [[], []]
    img, t = render(ROWS[0], 0, error="correct")
    dets = detectors[0].detect(img, queries=[ROWS[0].label_a])
    assert dets and {d.label for d in dets} == {ROWS[0].label_a}
    assert all(0.05 <= d.score <= 1.0 for d in detectors[0].detect(img))
    with pytest.raises(WorkstationError, match="RGB uint8"):
        detectors[0].detect(np.zeros((10, 10), np.uint8))


# ---- builder ------------------------------------------------------------------------------------
def test_build_demo_dataset(tmp_path: Path) -> None:
    import cv2

    prompts = spatial_suite(n_pairs=2)
    calls = []
    ds, truth = build_demo_dataset(tmp_path, n_seeds=2, prompts=prompts, workers=1,
                                   progress=lambda d, t: calls.append((d, t)))
    assert ds.n == 16 and len(truth) == 16
    assert calls[-1] == (16, 16)
    assert ds.variant_names == ("original", *(p.name for p in DEFAULT_PERTURBATIONS))
    assert ds.samples.has_secondary.all() and ds.samples.has_perturbed.all()
    assert len(set(ds.samples.sample_id.tolist())) == 16
    assert [t["sample_id"] for t in truth] == ds.samples.sample_id.tolist()
    for k in range(len(ds.variant_names)):
        assert ((ds.detections.variant == k) & (ds.detections.source == PRIMARY)).any()
    assert (ds.detections.source == SECONDARY).any()
    assert ds.detections.score.min() >= 0.05
    # every image is on disk and can be re-made bit for bit from (prompt, seed)
    i = 5
    path = tmp_path / ds.samples.image_path[i]
    on_disk = cv2.imread(str(path), cv2.IMREAD_COLOR)[:, :, ::-1]
    row = {r.prompt_id: r for r in prompt_rows(prompts)}[str(ds.samples.prompt_id[i])]
    again, t = render(row, int(ds.samples.seed[i]))
    assert np.array_equal(on_disk, again)
    assert t["expected"] == truth[i]["expected"]
    json.dumps(truth)  # storable as JSON


@pytest.mark.slow
def test_worker_processes_give_the_same_dataset(tmp_path: Path) -> None:
    prompts = spatial_suite(n_pairs=2)
    a, ta = build_demo_dataset(tmp_path / "a", n_seeds=2, prompts=prompts, workers=1)
    b, tb = build_demo_dataset(tmp_path / "b", n_seeds=2, prompts=prompts, workers=2, chunk_size=3)
    assert ta == tb
    assert a.samples.sample_id.tolist() == b.samples.sample_id.tolist()
    for f in ("sample_idx", "source", "variant", "label", "score", "x1", "y1", "x2", "y2"):
        assert np.array_equal(getattr(a.detections, f), getattr(b.detections, f)), f


def test_build_can_be_cancelled_and_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(DemoCancelled):
        build_demo_dataset(tmp_path, n_seeds=1, prompts=spatial_suite(n_pairs=1), workers=1,
                           cancel=lambda: True)
    with pytest.raises(WorkstationError, match="at least one seed"):
        build_demo_dataset(tmp_path, n_seeds=0)
    odd = spatial_suite(n_pairs=1, objects=["cat", "unicorn"])
    with pytest.raises(WorkstationError, match="unicorn"):
        build_demo_dataset(tmp_path, n_seeds=1, prompts=odd, workers=1)


def test_truth_agreement_counts() -> None:
    truth = [{"expected": "PASS", "error": "correct"}, {"expected": "FAIL", "error": "swapped"},
             {"expected": "UNDECIDABLE", "error": "omitted"}, {"expected": "PASS", "error": "correct"}]
    a = truth_agreement(np.array([PASS, FAIL, PASS, 2], np.int8), truth)
    assert a["decided"] == 3 and a["false_pass"] == 1
    assert a["decided_accuracy"] == pytest.approx(2 / 3)
    assert a["accuracy_on_decidable"] == 1.0
    assert a["confusion"]["UNDECIDABLE"]["PASS"] == 1
    assert a["by_error"]["correct"] == {"PASS": 1, "FAIL": 0, "UNDECIDABLE": 1}


# ---- with the checker and the project store --------------------------------------------------------
def test_checker_passes_correct_scenes_and_fails_swapped_ones(tmp_path: Path) -> None:
    checker = pytest.importorskip("workstation.methods.spatial.checker")
    ds, truth = build_demo_dataset(tmp_path, n_seeds=2, prompts=spatial_suite(n_pairs=8), workers=1)
    v = checker.evaluate(ds, CheckerConfig())
    kinds = np.array([t["error"] for t in truth])
    correct, swapped = kinds == "correct", kinds == "swapped"
    assert correct.sum() >= 20 and swapped.sum() >= 5
    assert (v.verdict[correct] == PASS).mean() >= 0.85
    assert (v.verdict[swapped] == FAIL).mean() >= 0.8
    assert not (v.verdict[swapped] == PASS).any()
    a = truth_agreement(v.verdict, truth)
    assert a["decided_accuracy"] >= 0.9
    assert a["coverage"] >= 0.5


def test_build_demo_project(tmp_path: Path) -> None:
    pytest.importorskip("workstation.methods.spatial.checker")
    store = pytest.importorskip("workstation.store")
    from workstation.methods.spatial.demo import build_demo_project

    folder = tmp_path / "demo"
    summary = build_demo_project(folder, n_seeds=2, prompts=spatial_suite(n_pairs=3), workers=1)
    assert summary["samples"] == 24
    assert sum(summary["verdicts"].values()) == 24
    assert 0.0 <= summary["truth"]["decided_accuracy"] <= 1.0
    with store.Project.open(folder, read_only=True) as p:
        assert p.samples.count() == 24
        ds = p.samples.load_dataset()
        assert set(ds.variant_names) == set(summary["variants"])
        truth = p.samples.truth()
        assert len(truth) == 24 and all("expected" in t for t in truth.values())
        cid = SpatialStore(p).active_config_id()
        assert cid == summary["config_id"]
        assert len(SpatialStore(p).load_verdict_table(cid)["sample_id"]) == 24
        for rel in ds.samples.image_path.tolist():
            assert p.samples.image_file(rel).is_file()
    with pytest.raises(WorkstationError, match="already exists"):
        build_demo_project(folder, n_seeds=1, prompts=spatial_suite(n_pairs=1), workers=1)
    with store.Project.open(folder, read_only=True) as p:  # the existing project is untouched
        assert p.samples.count() == 24


def test_cancelled_demo_project_leaves_nothing_behind(tmp_path: Path) -> None:
    pytest.importorskip("workstation.store")
    from workstation.methods.spatial.demo import build_demo_project

    seen = []

    def cancel() -> bool:
        seen.append(1)
        return len(seen) > 1  # after the first chunk

    with pytest.raises(DemoCancelled):
        build_demo_project(tmp_path / "new", n_seeds=2, prompts=spatial_suite(n_pairs=5), workers=1,
                           cancel=cancel)
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(DemoCancelled):
        build_demo_project(tmp_path / "mine", n_seeds=1, prompts=spatial_suite(n_pairs=1), workers=1,
                           cancel=lambda: True)
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


def test_detector_options_are_checked() -> None:
    with pytest.raises(WorkstationError, match="score_floor"):
        SceneDetector(score_floor=2.0)
    with pytest.raises(WorkstationError, match="shape in"):
        TemplateSceneDetector(classes={"cat": ("blob", "red")})
    det = SceneDetector(score_floor=0.5)
    img, _ = render(ROWS[3], 0, error="correct")
    assert all(d.score >= 0.5 for d in det.detect(img))
    assert det.provenance()["score_floor"] == 0.5
