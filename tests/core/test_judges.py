"""Judges: GenEval's position rule on hand-made boxes and on the published SpatialBench-UC run, the
twin consistency, and the agreement table of every method on the demo (the report's equals the
`judges` command's)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.cli import main
from workstation.dataset import Detections, Samples
from workstation.methods.spatial.data import spatial_dataset
from workstation.methods.spatial.judges import (geneval_components, geneval_outcomes, relative_position,
                                                twin_outcomes)
from workstation.types import PRIMARY, SECONDARY


def _box(cx: float, cy: float, w: float = 10.0, h: float = 10.0) -> list[float]:
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def _dataset(scenes: list[dict[str, Any]]) -> Any:
    """One sample per scene: ``rel``, and ``dets`` as (label, score, box[, source, variant])."""
    n = len(scenes)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    s = Samples.build(o([f"s{i}" for i in range(n)]), o(["run"] * n),
                      o([sc.get("prompt", f"p{i}") for i, sc in enumerate(scenes)]),
                      seed=[sc.get("seed", 0) for sc in scenes], width=100.0, height=100.0)
    rows = [(i, *d) for i, sc in enumerate(scenes) for d in sc["dets"]]
    src = [r[4] if len(r) > 4 else PRIMARY for r in rows]
    var = [r[5] if len(r) > 5 else 0 for r in rows]
    dets = Detections(np.array([r[0] for r in rows], np.int64), np.array(src, np.int8), np.array(var, np.int16),
                      o([r[1] for r in rows]), np.array([r[2] for r in rows], np.float64),
                      *(np.array([r[3][k] for r in rows], np.float64) for k in range(4)))
    return spatial_dataset(s, [sc["rel"] for sc in scenes], ["dog"] * n, ["cat"] * n, dets,
                           variant_names=("original", "blur"),
                           counterfactual_id=[sc.get("twin", "") for sc in scenes])


# ---- GenEval's rule on hand-made boxes -----------------------------------------------------------

@pytest.mark.parametrize("rel, a, b, expected", [
    ("left_of", _box(20, 50), _box(80, 50), {"left of"}),
    ("right_of", _box(80, 50), _box(20, 50), {"right of"}),
    ("above", _box(50, 20), _box(50, 80), {"above"}),  # image rows grow downwards
    ("below", _box(50, 80), _box(50, 20), {"below"}),
])
def test_each_relation_holds_where_geneval_says_and_passes_the_judge(rel: str, a: list[float], b: list[float],
                                                                    expected: set[str]) -> None:
    assert relative_position(a, b) == expected
    others = {"left_of": "right_of", "right_of": "left_of", "above": "below", "below": "above"}
    ds = _dataset([{"rel": rel, "dets": [("dog", 0.9, a), ("cat", 0.9, b)]},
                   {"rel": others[rel], "dets": [("dog", 0.9, a), ("cat", 0.9, b)]}])
    passed, score = geneval_outcomes(ds)
    assert passed.tolist() == [1, 0]  # the asked relation passes, its opposite fails
    assert score[0] > 0.5 > score[1]


def test_a_diagonal_offset_holds_no_relation_after_shrinking() -> None:
    # A is up and to the left of B at 45°: each component 0.707 of the offset before shrinking,
    # below 0.5 after it (boxes 40 wide: 0.1 × 80 = 8 pixels off each of 10)
    a, b = _box(40, 40, 40, 40), _box(50, 50, 40, 40)
    assert relative_position(a, b) == set()
    ds = _dataset([{"rel": "left_of", "dets": [("dog", 0.9, a), ("cat", 0.9, b)]},
                   {"rel": "above", "dets": [("dog", 0.9, a), ("cat", 0.9, b)]}])
    assert geneval_outcomes(ds)[0].tolist() == [0, 0]


@pytest.mark.parametrize("gap, inside", [(4.0, False), (4.01, True), (3.99, False)])
def test_the_half_after_shrinking_is_the_edge(gap: float, inside: bool) -> None:
    # boxes 10 × 10: each component shrinks by 0.1 × (10 + 10) = 2; an offset of 4 along x leaves
    # 2 of 4 = exactly 0.5, which is not "below −0.5"; 4.01 leaves 0.50125, 3.99 leaves 0.4987
    a, b = _box(50, 50), _box(50 + gap, 50)
    assert ("left of" in relative_position(a, b)) is inside
    dx, dy, some = geneval_components(np.array([a]), np.array([b]))
    assert bool(dx[0] < -0.5) == inside and dy[0] == 0.0 and bool(some[0])
    # the same on the y axis: B below A by the gap → A above B
    av, bv = _box(50, 50), _box(50, 50 + gap)
    assert ("above" in relative_position(av, bv)) is inside
    ds = _dataset([{"rel": "left_of", "dets": [("dog", 0.9, a), ("cat", 0.9, b)]},
                   {"rel": "above", "dets": [("dog", 0.9, av), ("cat", 0.9, bv)]}])
    assert geneval_outcomes(ds)[0].tolist() == [int(inside)] * 2


def test_a_shift_within_the_shrinking_holds_nothing() -> None:
    a, b = _box(50, 50), _box(51.5, 50)  # 1.5 < 2: shrunk to 0 on x, nothing on y
    assert relative_position(a, b) == set()
    dx, dy, some = geneval_components(np.array([a]), np.array([b]))
    assert not some[0]


def test_only_boxes_above_the_detection_threshold_count_and_the_most_confident_decides() -> None:
    left, right = _box(20, 50), _box(80, 50)
    ds = _dataset([
        # A's only box scores 0.3: not above the threshold → no box → FAIL
        {"rel": "left_of", "dets": [("dog", 0.3, left), ("cat", 0.9, right)]},
        # 0.31 counts
        {"rel": "left_of", "dets": [("dog", 0.31, left), ("cat", 0.9, right)]},
        # two boxes of A: the more confident one, on the wrong side, decides
        {"rel": "left_of", "dets": [("dog", 0.5, left), ("dog", 0.8, _box(95, 50)), ("cat", 0.9, _box(60, 50))]},
        # no box of B at all → FAIL
        {"rel": "left_of", "dets": [("dog", 0.9, left)]},
        # the secondary detector's and a perturbed image's boxes are not GenEval's detections
        {"rel": "left_of", "dets": [("dog", 0.9, left, SECONDARY, 0), ("cat", 0.9, right),
                                    ("dog", 0.9, left, PRIMARY, 1)]},
        # another label is not the object
        {"rel": "left_of", "dets": [("cow", 0.9, left), ("cat", 0.9, right)]},
    ])
    passed, score = geneval_outcomes(ds)
    assert passed.tolist() == [0, 1, 0, 0, 0, 0]
    assert math.isnan(score[0]) and math.isnan(score[3]) and score[1] > 0.5 and score[2] < -0.5


def test_the_twin_consistency_vouches_only_where_the_equivalent_images_agree() -> None:
    left, right = _box(20, 50), _box(80, 50)
    dog_left = [("dog", 0.9, left), ("cat", 0.9, right)]
    dog_right = [("dog", 0.9, right), ("cat", 0.9, left)]
    # twins p0 "dog left_of cat" / p1 "dog right_of cat" (each image read by its own prompt): seed 0
    # both show theirs, seed 1 only p0's does; twins p3 / p4 both show the wrong order; p2 has no twin
    ds = _dataset([
        {"prompt": "p0", "rel": "left_of", "twin": "p1", "seed": 0, "dets": dog_left},
        {"prompt": "p1", "rel": "right_of", "twin": "p0", "seed": 0, "dets": dog_right},
        {"prompt": "p0", "rel": "left_of", "twin": "p1", "seed": 1, "dets": dog_left},
        {"prompt": "p1", "rel": "right_of", "twin": "p0", "seed": 1, "dets": dog_left},
        {"prompt": "p2", "rel": "left_of", "seed": 0, "dets": dog_left},
        {"prompt": "p3", "rel": "left_of", "twin": "p4", "seed": 0, "dets": dog_right},
        {"prompt": "p4", "rel": "right_of", "twin": "p3", "seed": 0, "dets": dog_left},
    ])
    outcome, score = twin_outcomes(ds)
    assert outcome.tolist() == ["PASS", "PASS", "UNDECIDABLE", "UNDECIDABLE", None, "FAIL", "FAIL"]
    assert [score[i] for i in (0, 1, 2, 3, 5, 6)] == [1.0, 1.0, 0.5, 0.5, 0.0, 0.0] and math.isnan(score[4])


# ---- on the published SpatialBench-UC run ---------------------------------------------------------

def _geneval_reference(rec: dict[str, Any]) -> bool:
    """GenEval's rule read straight from a per_sample.jsonl record (the test's own count)."""
    dets = rec["detectors"]["primary"]["detections"]

    def best(name: str) -> list[float] | None:
        cand = [d for d in dets if d["label"].strip().lower() == name.strip().lower() and d["score"] > 0.3]
        if not cand:
            return None
        return max(cand, key=lambda d: d["score"])["box_xyxy"]

    a, b = best(rec["object_a"]), best(rec["object_b"])
    if a is None or b is None:
        return False
    want = {"left_of": "left of", "right_of": "right of", "above": "above", "below": "below"}[rec["relation"]]
    return want in relative_position(a, b)


def test_on_the_published_run_it_reports_where_geneval_and_the_checker_disagree(imported: Path,
                                                                                sbuc_run_dir: Path) -> None:
    from workstation.evaluation.judges import JudgeRun, disagreement_strata
    from workstation.methods import method_judges
    from workstation.methods.spatial.judges import disagreement_counts
    from workstation.store import Project

    records = [json.loads(x) for x in (sbuc_run_dir / "eval" / "per_sample.jsonl").read_text("utf-8").splitlines()
               if x.strip()]
    expected: Counter[tuple[str, str]] = Counter()
    for rec in records:
        g = "PASS" if _geneval_reference(rec) else "FAIL"
        c = rec["verdict_raw"]
        kind = "agree" if c == g else "undecided" if c == "UNDECIDABLE" else "disagree"
        expected[(rec["relation"], kind)] += 1
    with Project.open(imported) as p:
        spec = method_judges(p, "spatial")
        run = JudgeRun(p, spec)
        checker = next(j.name for j in spec.judges if j.name.startswith("spatial.checker:"))
        counts = disagreement_counts(run, checker, "spatial.geneval")
        a, b = run.output(checker), run.output("spatial.geneval")
        strata, _names = disagreement_strata(a, b)
    got = {(r["relation"], k): r[k] for r in counts for k in ("agree", "disagree", "undecided")}
    assert got == {k: expected.get(k, 0) for k in got} and sum(got.values()) == len(records) == 800
    assert sum(v for (_r, k), v in expected.items() if k == "disagree") == int((strata == 1).sum()) > 0
    # the published checker PASSes where GenEval's stricter axis rule FAILs far more often than the reverse
    flips = Counter((x, y) for x, y in zip(a.outcome.tolist(), b.outcome.tolist()) if x != y and x != "UNDECIDABLE")
    assert flips[("PASS", "FAIL")] > flips[("FAIL", "PASS")]


# ---- every method's agreement table on the demo ---------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo of all four methods (spatial: 4 object pairs × 2 seeds), with the labels an auditor
    would have given: spatial samples labelled by their truth, MetaLogic pairs by the comparison
    with every fourth one flipped, and a DyEval tree whose images a CLIPScore job scored against a
    pre-mark threshold, judged by truth."""
    from workstation.methods import get_method
    from workstation.methods.dyeval.config import DyEvalConfig
    from workstation.methods.dyeval.runner import DyEvalRunner
    from workstation.methods.spatial.demo import add_demo
    from workstation.methods.spatial.suite import spatial_suite
    from workstation.store import Project

    folder = tmp_path_factory.mktemp("judges") / "demo"
    with Project.create(folder) as p:
        add_demo(p, n_seeds=2, prompts=spatial_suite(4), size=128, workers=0)
        for m in ("metalogic", "protobias", "dyeval"):
            get_method(m).build_demo(p, small=True, workers=0)
        truth = {s: json.loads(t)["expected"] for s, t in p.con.execute(
            "SELECT s.sample_id, s.truth FROM samples s JOIN prompts q USING (prompt_id) "
            "WHERE q.method = 'spatial'").fetchall()}
        p.labels.add_bulk("spatial.verdict", "sample", {"target_id": list(truth), "annotator": ["ann"] * len(truth),
                                                        "value": list(truth.values())})
        from workstation.methods.metalogic.store import load_outcomes

        cols = load_outcomes(p, int(p.evaluations.active_id("metalogic")))
        pairs = [str(x) for x in cols["image_pair"].tolist()]
        flip = {"ALIGNED": "MISALIGNED", "MISALIGNED": "ALIGNED", "UNDECIDABLE": "ALIGNED"}
        vals = [flip[v] if i % 4 == 0 else str(v) for i, v in enumerate(cols["verdict"].tolist())]
        p.labels.add_bulk("metalogic.pair", "pair", {"target_id": pairs, "annotator": ["ann"] * len(pairs),
                                                     "value": vals})
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=3, n_x=2, premark_threshold=22.0), tree_id="scored",
                                topics=["Animals", "Vehicles"])
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=64)
        ids = sorted(r.tree.images)
        rng = np.random.default_rng(5)
        passed = {i: rng.random() < 0.6 for i in ids}
        score = [float(26 + rng.normal(0, 3)) if passed[i] else float(18 + rng.normal(0, 3)) for i in ids]
        p.scores.add({"sample_id": ids, "scorer": ["clipscore@demo"] * len(ids),
                      "text": [r.tree.step_owner_text(r.tree.images[i].owner) for i in ids], "score": score})
        r.import_labels([(i, "PASS" if passed[i] else "FAIL", "ann", None) for i in ids])
    return folder


def test_every_method_s_agreement_table_on_the_demo_has_intervals_and_the_report_shows_the_command_s(
        demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.evaluation.judges import JudgeRun, agreement_rows
    from workstation.methods import method_judges
    from workstation.store import Project

    out = tmp_path / "judges.json"
    assert main(["judges", "--project", str(demo), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    got = json.loads(out.read_text("utf-8"))
    assert sorted(got) == ["dyeval", "metalogic", "protobias", "spatial"]
    assert main(["report", "--project", str(demo), "--out", str(tmp_path / "report")]) == 0
    meta = json.loads((tmp_path / "report" / "report_meta.json").read_text("utf-8"))
    index = (tmp_path / "report" / "index.html").read_text("utf-8")
    sections = {s["method"]: s for s in meta["sections"]}
    with Project.open(demo) as p:
        for method, t in got.items():
            rows = t["judge_agreement"]
            # the report's table is the command's, number for number
            assert sections[method]["tables"]["judge_agreement"] == rows
            assert sections[method]["tables"]["judges"] == t["judges"]
            # … and the core's
            core = agreement_rows(JudgeRun(p, method_judges(p, method)))
            assert [[r[k] for k in ("judge_a", "judge_b", "both_judged", "both_decided")] for r in core] == \
                   [[r[k] for k in ("judge_a", "judge_b", "both_judged", "both_decided")] for r in rows]
            for c, r in zip(core, rows):
                for k in ("accuracy", "accuracy_lo", "accuracy_hi", "kappa_lo", "coverage_hi"):
                    assert (r[k] is None and not math.isfinite(c[k])) or r[k] == pytest.approx(c[k], abs=1e-12)
            # rows with intervals, judge × judge and judge × human
            with_interval = [r for r in rows if r["accuracy_lo"] is not None and r["accuracy_hi"] is not None
                             and r["accuracy_lo"] <= r["accuracy"] <= r["accuracy_hi"]]
            assert any(r["judge_b"] == "human" for r in with_interval), method
            if method != "dyeval" or len(t["judges"]) > 2:
                assert any(r["judge_b"] != "human" for r in with_interval), method
            for r in rows:
                assert f"{r['judge_a']}</td><td>{r['judge_b']}</td>" in index
                assert f"{r['judge_a']} × {r['judge_b']}: both judged {r['both_judged']}," in printed
    # the spatial section sets the checker against GenEval's rule and the twin consistency
    spatial = {(r["judge_a"].split(":")[0], r["judge_b"]) for r in got["spatial"]["judge_agreement"]}
    assert {("spatial.checker", "spatial.geneval"), ("spatial.checker", "spatial.twin"),
            ("spatial.geneval", "human"), ("spatial.twin", "human")} <= spatial
    # the humans labelled by truth: the judges that decide agree with them far above chance
    human = {r["judge_a"].split(":")[0]: r for r in got["spatial"]["judge_agreement"] if r["judge_b"] == "human"}
    assert human["spatial.checker"]["accuracy"] > 0.8 and human["spatial.geneval"]["accuracy"] > 0.6


def test_an_agreement_row_over_many_prompts_resamples_them_in_groups() -> None:
    from workstation.evaluation.intervals import MAX_BOOT_UNITS
    from workstation.evaluation.judges import _kappa_units, pair_agreement

    rng = np.random.default_rng(2)
    n = 3 * MAX_BOOT_UNITS
    truth = rng.random(n) < 0.5
    a = np.where(truth, "PASS", "FAIL").astype(object)
    b = np.where(truth ^ (rng.random(n) < 0.1), "PASS", "FAIL").astype(object)
    prompts = np.array([f"p{i // 2}" for i in range(n)], dtype=object)  # two seeds per prompt
    grouped = _kappa_units(prompts)
    assert len(set(grouped.tolist())) == MAX_BOOT_UNITS
    # the two seeds of a prompt stay in one group
    assert all(grouped[i] == grouped[i + 1] for i in range(0, n, 2))
    row = pair_agreement(a, b, prompts, values=("PASS", "FAIL"), abstain="", n_boot=200)
    assert row["kappa_lo"] < row["kappa"] < row["kappa_hi"] and 0.75 < row["kappa"] < 0.85
    assert row["accuracy_lo"] < 0.9 < row["accuracy_hi"]


def test_a_judge_that_cannot_be_read_is_named_and_the_rest_still_reported(
        demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import workstation.methods.spatial.judges as sj
    from workstation.types import WorkstationError

    def broken(project: Any, t: Any) -> Any:
        raise WorkstationError("the detections of sample s1 cannot be read")

    monkeypatch.setattr(sj, "_geneval", broken)
    assert main(["judges", "--project", str(demo), "--method", "spatial", "--method", "metalogic"]) == 0
    out = capsys.readouterr().out
    assert "spatial:\n  the judges could not be compared: the detections of sample s1 cannot be read" in out
    assert "metalogic.compare:" in out
    assert main(["report", "--project", str(demo), "--out", str(tmp_path / "r")]) == 0
    index = (tmp_path / "r" / "index.html").read_text("utf-8")
    assert "The judges could not be compared: the detections of sample s1 cannot be read" in index
    assert index.count("<h3>Judge agreement</h3>") == 3  # the other three methods' tables


def test_a_project_whose_detector_never_ran_is_not_judged_by_the_rules_on_detections(imported: Path,
                                                                                     tmp_path: Path) -> None:
    import shutil

    from workstation.evaluation.judges import JudgeRun
    from workstation.methods import method_judges
    from workstation.store import Project

    folder = tmp_path / "p"
    shutil.copytree(imported, folder)
    with Project.open(folder) as p:
        run = JudgeRun(p, method_judges(p, "spatial"))
        # detected images without a box of the object are GenEval's FAILs: all 800 are judged
        assert run.output("spatial.geneval").covered == 800
        p.con.execute("DELETE FROM detections")
    with Project.open(folder) as p:
        run = JudgeRun(p, method_judges(p, "spatial"))
        assert run.output("spatial.geneval").covered == 0 and run.output("spatial.twin").covered == 0
