"""The MetaLogic method wired to a project: the adapter (== `PairData.from_lists` built by hand),
stored result sets, config files, suites and pair files as prompts, the demo renderer's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.dataset import Dataset, Detections, Prompts, Samples
from workstation.evaluation.run import evaluate_and_store
from workstation.methods import get_method
from workstation.methods.metalogic.adapter import pairs_from_dataset
from workstation.methods.metalogic.compare import evaluate
from workstation.methods.metalogic.config import MetaLogicConfig
from workstation.methods.metalogic.data import PairData
from workstation.methods.metalogic.demo import render_pair
from workstation.methods.metalogic.prompts import suite_prompts
from workstation.methods.metalogic.store import aligned_outcomes, human_labels
from workstation.methods.metalogic.suite import MetaLogicSuite, build_suite
from workstation.store import Project
from workstation.types import InputError, WorkstationError

METHOD = get_method("metalogic")
SUITE = build_suite("main", 60, objects="demo", seed=5)


def _pick() -> MetaLogicSuite:
    """Three pairs: position-less with a negated entity, X-axis with three entities, Y-axis."""
    none_neg = next(p for p in SUITE.pairs if p.dimension == "none" and 0 in p.expected_count)
    x3 = next(p for p in SUITE.pairs if p.dimension == "x" and len(p.expected_order) == 3)
    y = next(p for p in SUITE.pairs if p.dimension == "y")
    return MetaLogicSuite("hand", (none_neg, x3, y))


HAND = _pick()
# (pair index, run, seed, side, width, height); the last A image has no twin
SAMPLES = [(0, "r1", 0, "A", 512, 512), (0, "r1", 0, "B", 512, 480), (1, "r1", 0, "A", 640, 640),
           (0, "r2", 0, "B", 256, 256), (0, "r2", 0, "A", 256, 256), (1, "r1", 0, "B", 640, 640),
           (0, "r1", 1, "A", 512, 512), (0, "r1", 1, "B", 512, 512), (1, "r1", 7, "A", 512, 512)]


def _detections(rng: np.random.Generator, spec: Any, w: float) -> list[tuple[int, int, str, float, float, float,
                                                                              float, float]]:
    """(source, variant, label, score, box) rows: the entities (one missing at random), an
    extra label, a secondary detection and one on a perturbed copy (both must be left out)."""
    rows = []
    for e in spec.entities:
        if rng.random() < 0.2:
            continue
        x = float(rng.uniform(0, w - 60))
        rows.append((0, 0, e.upper() if rng.random() < 0.3 else e, float(rng.uniform(0.2, 0.95)), x, 40.0, x + 50,
                     120.0))
    rows.append((0, 0, "clutter", 0.9, 1.0, 1.0, 30.0, 30.0))
    rows.append((1, 0, spec.entities[0], 0.99, 5.0, 5.0, 90.0, 90.0))
    rows.append((0, 1, spec.entities[0], 0.99, 5.0, 5.0, 90.0, 90.0))
    return rows


def build_hand_project(folder: Path) -> tuple[Project, list[list[Any]]]:
    rng = np.random.default_rng(4)
    prompts = suite_prompts(HAND)
    ids, pids, runs, seeds, ws, hs, det_rows = [], [], [], [], [], [], []
    per_sample = []
    for k, (pi, run, seed, side, w, h) in enumerate(SAMPLES):
        spec = HAND.pairs[pi]
        ids.append(f"s{k}")
        pids.append(f"{spec.pair_id}.{side}")
        runs.append(run)
        seeds.append(seed)
        ws.append(w)
        hs.append(h)
        dets = _detections(rng, spec, w)
        per_sample.append(dets)
        det_rows += [(k, *d) for d in dets]
    n = len(ids)
    samples = Samples.build(ids, runs, pids, seeds, ws, hs, [f"images/{i}.png" for i in ids])
    d = list(zip(*det_rows))
    dets = Detections(np.array(d[0], np.int64), np.array(d[1], np.int8), np.array(d[2], np.int16),
                      np.array([str(x).lower() for x in d[3]], dtype=object), np.array(d[4], np.float64),
                      *(np.array(d[i], np.float64) for i in range(5, 9)))
    p = Project.create(folder)
    p.samples.add_run("r1", method="test")
    p.samples.add_run("r2", method="test")
    p.samples.add_dataset(Dataset(samples, dets, prompts, ("original", "brightness_1.1")))
    assert p.samples.count() == n
    return p, per_sample


def test_the_adapter_equals_pair_data_built_by_hand(tmp_path: Path) -> None:
    p, per_sample = build_hand_project(tmp_path / "p")
    try:
        data = METHOD.load(p)
    finally:
        p.close()
    # image pairs in the project order of their A image: (P0 r1 0), (P1 r1 0), (P0 r2 0), (P0 r1 1);
    # the A image of (P1, r1, 7) has no twin and is left out
    pairs = [(0, "r1", 0, 0, 1), (1, "r1", 0, 2, 5), (0, "r2", 0, 4, 3), (0, "r1", 1, 6, 7)]
    specs = [HAND.pairs[pi] for pi, *_ in pairs]
    det_pair, det_side, det_label, det_score, det_box = [], [], [], [], []
    for k in range(len(SAMPLES)):  # detections in sample order, primary and original only
        where = [(row, side) for row, (_, _, _, a, b) in enumerate(pairs) for side, s in ((0, a), (1, b)) if s == k]
        for src, var, lab, sc, *box in per_sample[k]:
            if where and src == 0 and var == 0:
                det_pair.append(where[0][0])
                det_side.append(where[0][1])
                det_label.append(lab.lower())
                det_score.append(sc)
                det_box.append(box)
    hand = PairData.from_lists(
        pair_id=[f"{s.pair_id}|{run}|{seed}" for s, (_, run, seed, _, _) in zip(specs, pairs)],
        law=[s.law for s in specs], modifier=[s.modifier for s in specs], dimension=[s.dimension for s in specs],
        entities=[list(s.entities) for s in specs], expected_count=[list(s.expected_count) for s in specs],
        expected_order=[list(s.expected_order) for s in specs],
        width=[[SAMPLES[a][4], SAMPLES[b][4]] for *_, a, b in pairs],
        height=[[SAMPLES[a][5], SAMPLES[b][5]] for *_, a, b in pairs],
        run=[r for _, r, *_ in pairs], seed=[s for _, _, s, *_ in pairs],
        det_pair=det_pair, det_side=det_side, det_label=det_label, det_score=det_score, det_box=det_box)
    got = data.pairs
    for f in ("pair_id", "law", "modifier", "dimension", "axis", "run", "seed", "entity", "expected_count",
              "expected_rank", "width", "height", "det_image", "det_label", "det_score", "det_x1", "det_y1",
              "det_x2", "det_y2"):
        a, b = getattr(got, f), getattr(hand, f)
        assert a.shape == b.shape and a.dtype.kind == b.dtype.kind, f
        assert np.array_equal(a, b), f
    assert data.sample_a.tolist() == ["s0", "s2", "s4", "s6"] and data.sample_b.tolist() == ["s1", "s5", "s3", "s7"]
    assert data.group.tolist() == [s.pair_id for s in specs]
    assert data.text_a[1] == HAND.pairs[1].text_a and data.text_b[1] == HAND.pairs[1].text_b
    assert data.n_suite_pairs == 3 and data.n_prompts == 6
    assert any("no twin image" in n and n.startswith("1 ") for n in data.notes)
    r1, r2 = METHOD.evaluate(data, MetaLogicConfig()), evaluate(hand, MetaLogicConfig())
    assert np.array_equal(r1.verdict, r2.verdict) and np.array_equal(r1.kind, r2.kind)


def test_results_are_stored_per_version_and_read_back_in_data_order(tmp_path: Path) -> None:
    p, _ = build_hand_project(tmp_path / "p")
    try:
        data = METHOD.load(p)
        eid, res = evaluate_and_store(p, METHOD, cfg=MetaLogicConfig(name="a"), data=data)
        eid2, res2 = evaluate_and_store(p, METHOD, cfg=MetaLogicConfig(score_threshold=0.9, name="b"), data=data)
        assert eid2 != eid and p.evaluations.active_id("metalogic") == eid2
        got = aligned_outcomes(p, eid, data)
        assert got["image_pair"].tolist() == data.pair_id.tolist()
        assert got["verdict"].tolist() == res.columns()["verdict"].tolist()
        assert got["sample_a"].tolist() == data.sample_a.tolist()
        assert [x for x in got["detail"]] == [res.detail_text(i) for i in range(len(res))]
        high = aligned_outcomes(p, eid2, data)["verdict"].tolist()
        assert high == res2.columns()["verdict"].tolist()
        # storing the same version again replaces its rows
        METHOD.save_results(p, eid, data, res)
        n = p.con.execute("SELECT count(*) FROM metalogic_outcomes WHERE eval_id = ?", [eid]).fetchone()
        assert n is not None and n[0] == len(data)
        # a pair without a stored result is named
        with pytest.raises(WorkstationError, match="have no result under version"):
            aligned_outcomes(p, 999, data)
        # human judgements: the latest of an annotator counts, an undo is no label
        p.labels.add("metalogic.pair", "pair", data.pair_id[0], "ann", "MISALIGNED")
        p.labels.add("metalogic.pair", "pair", data.pair_id[1], "ann", "ALIGNED")
        p.labels.add("metalogic.pair", "pair", data.pair_id[1], "ann", None)
        p.labels.add("metalogic.pair", "pair", data.pair_id[2], "bob", "UNDECIDABLE")
        assert human_labels(p, data).tolist() == [1, -1, 2, -1]
        assert human_labels(p, data, "ann").tolist() == [1, -1, -1, -1]
    finally:
        p.close()


def _with_prompts(prompts: Prompts) -> Dataset:
    return Dataset(Samples.empty(), Detections.empty(), prompts)


def test_inconsistent_prompts_are_named() -> None:
    good = suite_prompts(HAND)
    bad = suite_prompts(HAND)
    bad.attrs[0] = {k: v for k, v in bad.attrs[0].items() if k != "side"}
    with pytest.raises(WorkstationError, match=rf"prompt '{good.prompt_id[0]}'.*no side"):
        pairs_from_dataset(_with_prompts(bad))
    alone = good.take(np.array([0, 2, 3]))
    with pytest.raises(WorkstationError, match=rf"pair '{HAND.pairs[0].pair_id}' has only prompt"):
        pairs_from_dataset(_with_prompts(alone))
    other = suite_prompts(HAND)
    other.attrs[1] = dict(other.attrs[1], law="DeMorgan" if other.attrs[1]["law"] != "DeMorgan" else "Complement")
    with pytest.raises(WorkstationError, match="prompts A and B differ"):
        pairs_from_dataset(_with_prompts(other))
    counts = suite_prompts(HAND)
    counts.attrs[2] = dict(counts.attrs[2], expected={"counts": [1]})
    with pytest.raises(WorkstationError, match="do not give one count"):
        pairs_from_dataset(_with_prompts(counts))
    empty = pairs_from_dataset(_with_prompts(good))
    assert len(empty) == 0 and empty.n_suite_pairs == 3
    lines = METHOD.summary_lines(empty, METHOD.evaluate(empty, MetaLogicConfig()), 1, MetaLogicConfig())
    assert lines == ["metalogic: no image pairs to compare yet (the project holds 6 MetaLogic prompts of 3 pairs; "
                     "generate images for them and detect)"]


def test_render_demo_row_draws_each_side_as_the_pair_renderer_does() -> None:
    prompts = suite_prompts(HAND)
    from workstation.jobs.spec import prompt_row

    for k, spec in enumerate(HAND.pairs):
        for seed in (0, 3):
            a, b, truth = render_pair(spec, seed, size=128)
            ia, ta = METHOD.render_demo_row(prompt_row(prompts, 2 * k), seed, size=128)
            ib, tb = METHOD.render_demo_row(prompt_row(prompts, 2 * k + 1), seed, size=128)
            assert np.array_equal(ia, a) and np.array_equal(ib, b)
            assert ta["injected"] == tb["injected"] == truth["injected"] and ta["side"] == tb["side"]
            assert ta["boxes"] == truth["boxes_a"] and tb["boxes"] == truth["boxes_b"]
            assert (ta["image_side"], tb["image_side"]) == ("A", "B")


def test_suite_options_and_pair_files(tmp_path: Path) -> None:
    s = METHOD.suite(n_pairs=10, objects="demo", seed=2)
    assert len(s) == 20 and set(s.method.tolist()) == {"metalogic"}
    assert s.twin_id.tolist()[:2] == [s.prompt_id[1], s.prompt_id[0]] and s.group_id[0] == s.group_id[1]
    assert s.attrs[0]["side"] == "A" and s.attrs[1]["side"] == "B"
    custom = METHOD.suite(n_pairs=5, objects="cat, dog, apple, bowl")
    assert set(e for ents in custom.entities for e in ents) <= {"cat", "dog", "apple", "bowl"}
    with pytest.raises(WorkstationError, match="unknown option.*pairs.*known: variant, n_pairs"):
        METHOD.suite(pairs=3)
    with pytest.raises(WorkstationError, match="n_pairs must be a whole number"):
        METHOD.suite(n_pairs="many")
    csv = tmp_path / "pairs.csv"
    csv.write_text("pair_id,law,modifier,dimension,prompt_a,prompt_b,entities\n"
                   "p1,DeMorgan,AND,none,a cat and a dog,a dog and a cat,cat;dog\n"
                   "p2,Commutative,AND,x-axis,a cat left of a dog,a dog right of a cat,cat;dog\n", encoding="utf-8")
    pr = METHOD.read_suite_file(csv)
    assert pr.prompt_id.tolist() == ["p1.A", "p1.B", "p2.A", "p2.B"]
    assert pr.attrs[2]["expected"]["order"] == ["cat", "dog"] and pr.attrs[3]["dimension"] == "x"
    csv.write_text("pair_id,law,modifier,dimension,prompt_a,prompt_b,entities\n"
                   "p1,Transitive,AND,none,a,b,cat;dog\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"pairs.csv:2: unknown law 'Transitive'"):
        METHOD.read_suite_file(csv)


@pytest.mark.parametrize("name, text, message, line", [
    ("a.yaml", "score_threshold: &t 0.4\nnear_band: *t\n", "anchors (&t) are not allowed", 1),
    ("a.yaml", "score_threshold: 0.4\nnear_band: *t\n", "not valid YAML", 2),  # an alias without its anchor
    ("a.yaml", "score_threshold: 0.4\naxis_margin: 0.1\nscore_threshold: 0.5\n", "given twice", 3),
    ("a.yaml", "# thresholds\nscore_treshold: 0.4\n", "unknown MetaLogic parameter 'score_treshold'", 2),
    ("a.yaml", "name: x\nnear_band: high\n", "near_band must be a number", 2),
    ("a.yaml", "axis_margin: 1.5\n", "axis_margin must be in [0, 1]", 1),
    ("a.yaml", "axis_margin: [0.1]\n", "single value", 1),
    ("a.yaml", "- 0.3\n", "expected a mapping", 1),
    ("a.yaml", "a: [\n", "not valid YAML", 2),
    ("a.json", '{\n  "score_threshold": 0.4,\n  "nearband": 0.1\n}', "unknown MetaLogic parameter 'nearband'", 3),
    ("a.json", '{\n  "score_threshold": 0.4,\n  "score_threshold": 0.5\n}', "given twice", 3),
    ("a.json", '{\n  "score_threshold": 0.4\n  "near_band": 0.1\n}', "not valid JSON", 3),
    ("a.json", '{\n "ambiguity_delta": true\n}', "ambiguity_delta must be a number", 2),
])
def test_config_file_errors_name_file_and_line(tmp_path: Path, name: str, text: str, message: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as e:
        METHOD.load_config_file(path)
    assert message in str(e.value) and e.value.line == line and str(e.value).startswith(f"{path}:{line}: ")


def test_config_files_read(tmp_path: Path) -> None:
    y = tmp_path / "c.yml"
    y.write_text("name: strict\nscore_threshold: 0.35\naxis_margin: 0.08\n", encoding="utf-8")
    cfg = METHOD.load_config_file(y)
    assert cfg == MetaLogicConfig(name="strict", score_threshold=0.35, axis_margin=0.08)
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"near_band": 0.02, "ambiguity_delta": 0.2}), encoding="utf-8")
    assert METHOD.load_config_file(j) == MetaLogicConfig(near_band=0.02, ambiguity_delta=0.2)
    with pytest.raises(InputError, match="unsupported config file type"):
        METHOD.load_config_file(tmp_path / "c.toml") if (tmp_path / "c.toml").write_text("x") else None
    with pytest.raises(InputError, match="not found"):
        METHOD.load_config_file(tmp_path / "missing.yaml")
