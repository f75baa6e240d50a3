"""ProtoBias in a project: triplets as samples and prompts, metric scores from the scores table,
ratings from the label log — loaded, evaluated, stored and reported, checked against values
worked out by hand (ties fail, a missing score is left out, a score against another text is
ignored, the latest rating counts, an undo clears it)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.dataset import Dataset, Detections, Prompts, Samples
from workstation.evaluation.run import evaluate_and_store
from workstation.methods import get_method
from workstation.methods.protobias.config import ProtoBiasConfig, load_config
from workstation.methods.protobias.results import stored_results
from workstation.store import Project
from workstation.types import InputError, WorkstationError

M = get_method("protobias")
TRIPLETS = (("t1", "animals", "count"), ("t2", "animals", "color"), ("t3", "objects", "spatial"),
            ("t4", "objects", "count"))


def _prompts() -> Prompts:
    ids, texts, attrs, groups = [], [], [], []
    for tid, dom, knob in TRIPLETS:
        for role in ("corr", "adv"):
            ids.append(f"{tid}:{role}")
            texts.append(f"{role} prompt of {tid}")
            attrs.append({"domain": dom, "knob": knob, "role": role, "triplet_id": tid, "score_text": f"T of {tid}",
                          "eval_text": f"T of {tid}", "extra_element": "rock", "knob_value_text": "2",
                          "knob_value_adv": "3"})
            groups.append(tid)
    return Prompts.build(ids, texts, method="protobias", suite="hand", attrs=attrs, group_id=groups)


def make_project(folder: Path) -> Project:
    """3 complete triplets and one with its I_adv missing; two metrics; two annotators."""
    p = Project.create(folder)
    sids = ["s1c", "s1a", "s2c", "s2a", "s3c", "s3a", "s4c"]
    pids = ["t1:corr", "t1:adv", "t2:corr", "t2:adv", "t3:corr", "t3:adv", "t4:corr"]
    with p.transaction():
        p.samples.add_run("r1", method="hand")
        p.samples.add_dataset(Dataset(Samples.build(sids, "r1", pids, image_path=[f"images/{s}.png" for s in sids]),
                                      Detections.empty(), _prompts()))
    T = {s: f"T of t{s[1]}" for s in sids}
    a = {"s1c": 0.30, "s1a": 0.50, "s2c": 0.70, "s2a": 0.70, "s3c": 0.90, "s3a": 0.10, "s4c": 0.5}
    v = {"s1c": 0.8, "s1a": 0.2, "s2c": 0.4, "s3c": 0.3, "s3a": 0.6}  # s2a: no score
    rows: dict[str, list[Any]] = {"sample_id": [], "scorer": [], "text": [], "score": []}
    for scorer, vals in (("mA@abc123", a), ("vqa_yes@def456", v)):
        for s, x in vals.items():
            rows["sample_id"].append(s)
            rows["scorer"].append(scorer)
            rows["text"].append(T[s])
            rows["score"].append(x)
    rows["sample_id"].append("s1c")  # scored against its generation prompt, not T: ignored
    rows["scorer"].append("mA@abc123")
    rows["text"].append("corr prompt of t1")
    rows["score"].append(0.99)
    p.scores.add(rows)
    for who, ratings in (("alice", {"s1c": "4", "s1a": "2", "s2c": "3", "s2a": "3", "s3c": "4", "s3a": "1"}),
                         ("bob", {"s1c": "3", "s1a": "2", "s2c": "4", "s2a": "2", "s3c": "4", "s3a": "1"})):
        for s, r in ratings.items():
            p.labels.add("protobias.fidelity", "image", s, who, r)
    p.labels.add("protobias.fidelity", "image", "s3a", "alice", "2")  # alice changes her mind
    p.labels.add("protobias.fidelity", "image", "s2a", "bob", None)  # bob's undo
    p.labels.add("protobias.fidelity", "image", "s4c", "bob", "4")  # an image of an incomplete triplet
    return p


@pytest.fixture
def project(tmp_path: Path) -> Any:
    p = make_project(tmp_path / "p")
    yield p
    p.close()


def row(rows: list[dict[str, Any]], **keys: Any) -> dict[str, Any]:
    (r,) = [x for x in rows if all(x.get(k) == v for k, v in keys.items())]
    return r


def test_load_reads_complete_triplets_scores_against_t_and_ratings(project: Project) -> None:
    d = M.load(project)
    assert d.item_id.tolist() == ["r1/t1/s0", "r1/t2/s0", "r1/t3/s0"] and d.n_incomplete == 1
    assert d.domain.tolist() == ["animals", "animals", "objects"] and d.text.tolist()[0] == "T of t1"
    assert d.sample_corr.tolist() == ["s1c", "s2c", "s3c"] and d.sample_adv.tolist() == ["s1a", "s2a", "s3a"]
    assert d.scores.metrics == ("mA@abc123", "vqa_yes@def456")
    np.testing.assert_array_equal(d.scores.score_corr, [[0.30, 0.8], [0.70, 0.4], [0.90, 0.3]])
    np.testing.assert_array_equal(d.scores.score_adv, [[0.50, 0.2], [0.70, np.nan], [0.10, 0.6]])
    assert [m.metric_id for m in d.metric_info] == ["mA@abc123", "vqa_yes@def456"]
    assert d.metric_info[0].name == "mA" and d.metric_info[0].weights == "abc123"
    # 14 events on complete triplets (the one on the incomplete triplet's image is left out)
    assert len(d.ratings.rating) == 14 and set(d.ratings.annotator.tolist()) == {"alice", "bob"}


def test_failures_ties_and_margins_by_hand(project: Project) -> None:
    d = M.load(project)
    r = M.evaluate(d, M.default_config())
    assert r.item_kind == "triplet" and r.metrics == ("mA@abc123", "vqa_yes@def456")
    # mA: t1 0.30 < 0.50 fails, t2 0.70 = 0.70 is a tie and fails, t3 0.90 > 0.10 is right
    np.testing.assert_array_equal(r.failed[:, 0], [True, True, False])
    np.testing.assert_array_equal(r.tie[:, 0], [False, True, False])
    # min-max over mA's finite scores on both images (0.10 .. 0.90): 0.30 -> 0.25, 0.50 -> 0.5, ...
    np.testing.assert_allclose(r.sc[:, 0], [0.25, 0.75, 1.0])
    np.testing.assert_allclose(r.pa[:, 0], [0.5, 0.75, 0.0])
    np.testing.assert_allclose(r.margin[:, 0], [-0.25, 0.0, 1.0])
    # vqa_yes: [0, 1] kept as is; t2 has no score on I_adv: neither failure nor success
    np.testing.assert_array_equal(r.valid[:, 1], [True, False, True])
    np.testing.assert_array_equal(r.failed[:, 1], [False, False, True])
    np.testing.assert_allclose(r.margin[:, 1], [0.6, np.nan, -0.3])
    assert r.scales["vqa_yes@def456"].describe() == "linear from [0, 1]"
    assert r.scales["mA@abc123"].describe() == "min-max over the data set"
    cols = r.columns()
    assert cols["mA@abc123:failed"].tolist() == [1.0, 1.0, 0.0] and math.isnan(cols["vqa_yes@def456:failed"][1])
    # a config naming one metric audits that one; a metric the project has not scored is refused
    only = M.evaluate(d, ProtoBiasConfig(metrics=("vqa_yes@def456",)))
    assert only.metrics == ("vqa_yes@def456",)
    with pytest.raises(WorkstationError, match="clipscore@x"):
        M.evaluate(d, ProtoBiasConfig(metrics=("clipscore@x",)))
    # a range from the config replaces min-max: mA from [0, 1] keeps its raw values
    ranged = M.evaluate(d, ProtoBiasConfig(ranges={"mA": (0.0, 1.0)}))
    np.testing.assert_allclose(ranged.sc[:, 0], [0.30, 0.70, 0.90])


def test_metric_tables_by_hand(project: Project) -> None:
    d = M.load(project)
    t = M.metrics(d, M.evaluate(d, ProtoBiasConfig(n_boot=200)))
    fd = t["failure_by_domain"]
    a_all = row(fd, metric="mA@abc123", domain="all")
    assert (a_all["n"], a_all["n_fail"], a_all["n_tie"]) == (3, 2, 1)
    assert a_all["failure_rate"] == pytest.approx(2 / 3)
    assert a_all["sc"] == pytest.approx((0.25 + 0.75 + 1.0) / 3) and a_all["pa"] == pytest.approx(1.25 / 3)
    assert a_all["correct_margin"] == pytest.approx(1.0)  # t3 only
    assert a_all["incorrect_margin"] == pytest.approx((0.25 + 0.0) / 2)  # t1 and the tie t2
    assert a_all["failure_rate_lo"] <= a_all["failure_rate"] <= a_all["failure_rate_hi"]
    assert row(fd, metric="mA@abc123", domain="animals")["failure_rate"] == 1.0
    assert row(fd, metric="mA@abc123", domain="objects")["failure_rate"] == 0.0
    v_all = row(fd, metric="vqa_yes@def456", domain="all")
    assert (v_all["n"], v_all["n_missing"], v_all["failure_rate"]) == (2, 1, 0.5)
    assert row(t["failure_by_knob"], metric="mA@abc123", domain="animals", knob="color")["n_tie"] == 1
    # humans (latest rating per annotator, averaged): t1 3.5 / 2, t2 3.5 / 3 (bob's undo), t3 4 / 1.5
    h = row(t["human"], domain="all")
    assert h["n"] == 3 and h["n_prefer_corr"] == 3 and h["failure_rate"] == 0.0
    assert h["sc"] == pytest.approx(np.mean([2.5, 2.5, 3.0]) / 3)
    assert h["pa"] == pytest.approx(np.mean([1.0, 2.0, 0.5]) / 3)
    assert row(t["sc_pa"], metric="human", domain="all")["delta"] == pytest.approx(0.5)
    # agreement with the humans' preference (always I_corr here): mA right on t3 only, vqa on t1 only
    ag = t["human_agreement"]
    assert (row(ag, metric="mA@abc123", domain="all")["n"], row(ag, metric="mA@abc123", domain="all")["n_agree"]) == (3, 1)
    va = row(ag, metric="vqa_yes@def456", domain="all")
    assert (va["n"], va["n_agree"], va["n_missing"]) == (2, 1, 1)
    # κ over the 5 images both rated (bob cleared s2a): pairs (4,3) (2,2) (3,4) (4,4) (2,1)
    (k,) = t["annotator_kappa"]
    assert (k["annotator_a"], k["annotator_b"], k["n"]) == ("alice", "bob", 5)
    assert k["percent_agreement"] == pytest.approx(0.4)
    assert k["kappa_w"] == pytest.approx(8 / 11)  # 1 - (3/5) / 2.2
    assert k["kappa"] == pytest.approx(1 / 6)  # (0.4 - 0.28) / 0.72
    # one annotator only: humans from alice alone
    t_alice = M.metrics(d, M.evaluate(d, ProtoBiasConfig(n_boot=0, annotators=("alice",))))
    assert row(t_alice["human"], domain="all")["pa"] == pytest.approx(np.mean([1, 2, 1]) / 3)
    assert t_alice["annotator_kappa"] == []
    m = row(t["metrics"], metric="mA@abc123")
    assert m["triplets_scored"] == 3 and m["scale"] == "min-max over the data set"
    assert t["summary"][0]["triplets"] == 3 and t["summary"][0]["incomplete_triplets"] == 1


def test_results_are_stored_per_version(project: Project) -> None:
    eid, _ = evaluate_and_store(project, M)
    st = stored_results(project, eid)
    assert len(st["item_id"]) == 6  # 3 triplets × 2 metrics
    a = {(i, m): (f, s, pa) for i, m, f, s, pa in zip(st["item_id"], st["metric"], st["failed"], st["sc"], st["pa"])}
    assert bool(a[("r1/t2/s0", "mA@abc123")][0]) and not bool(a[("r1/t3/s0", "mA@abc123")][0])
    assert a[("r1/t3/s0", "mA@abc123")][1:] == pytest.approx((1.0, 0.0))
    eid2, _ = evaluate_and_store(project, M, cfg=ProtoBiasConfig(metrics=("vqa_yes@def456",)))
    assert eid2 != eid and len(stored_results(project, eid2)["item_id"]) == 3
    assert len(stored_results(project, eid)["item_id"]) == 6  # the first version is kept


def test_report_section_files(project: Project, tmp_path: Path) -> None:
    evaluate_and_store(project, M)
    sec = M.report_section(project, tmp_path / "protobias")
    assert (tmp_path / "protobias" / "index.html").is_file()
    for name in ("failure_rates", "margins"):
        assert sec.figures[name].is_file() and sec.figures[name].read_bytes()[:4] == b"\x89PNG"
    with open(tmp_path / "protobias" / "tables" / "failure_by_domain.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    r = next(x for x in rows if x["metric"] == "mA@abc123" and x["domain"] == "all")
    assert float(r["failure_rate"]) == pytest.approx(2 / 3) and r["scale"] == "min-max over the data set"
    assert "protobias/assets/failure_rates.png" in sec.html and "mA@abc123" in sec.html
    assert "min-max" in sec.html  # the rescaling is stated


def test_csv_cells_are_spreadsheet_safe(tmp_path: Path) -> None:
    from workstation.methods.protobias.report import write_table_csv

    write_table_csv(tmp_path / "t.csv", [{"metric": "=cmd()", "x": -0.5, "y": "+1", "z": "@a", "w": "plain"}])
    with open(tmp_path / "t.csv", newline="", encoding="utf-8") as fh:
        (r,) = list(csv.DictReader(fh))
    assert (r["metric"], r["x"], r["y"], r["z"], r["w"]) == ("'=cmd()", "-0.5", "'+1", "'@a", "plain")


def test_config_round_trip_and_file_errors(tmp_path: Path) -> None:
    cfg = ProtoBiasConfig(metrics=("a@1",), ranges={"pickscore": (0.0, 30.0)}, n_boot=50, name="x")
    again = ProtoBiasConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.content_hash() == cfg.content_hash()
    assert cfg.replace(name="y").content_hash() == cfg.content_hash()
    assert cfg.replace(n_boot=51).content_hash() != cfg.content_hash()
    f = tmp_path / "c.yaml"
    f.write_text("n_boot: 10\nlevel: 0.9\nranges:\n  clipscore: [0, 100]\n", encoding="utf-8")
    assert load_config(f).ranges == {"clipscore": (0.0, 100.0)}
    f.write_text("n_boot: 10\nbogus: 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="c.yaml:2: unknown ProtoBias parameter"):
        load_config(f)
    f.write_text("ranges:\n  clipscore: [5, 1]\n", encoding="utf-8")
    with pytest.raises(InputError, match="hi > lo"):
        load_config(f)
    f.write_text("n_boot: [1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c.yaml:\d+: not valid YAML"):
        load_config(f)


def test_an_empty_project_has_no_protobias_data(tmp_path: Path) -> None:
    with Project.create(tmp_path / "e") as p:
        assert not M.has_data(p)
        d = M.load(p)
        assert len(d) == 0 and d.scores.metrics == ()
        with pytest.raises(WorkstationError, match="no complete ProtoBias triplets"):
            M.report_section(p, tmp_path / "out")
