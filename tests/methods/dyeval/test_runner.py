"""The runner (what next, the automatic steps, the auditor's decisions) and the Method object
(per-node APR / AFR / #Bugs, stored results, report section, config files)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.evaluation.bundle import write_bundle
from workstation.evaluation.run import evaluate_and_store
from workstation.methods import get_method
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.demo import builtin_suite
from workstation.methods.dyeval.runner import DyEvalRunner
from workstation.methods.dyeval.scene_graph import SceneGraph, SceneObject
from workstation.methods.dyeval.store import TASK, TreeStore
from workstation.store import Project
from workstation.types import InputError, WorkstationError

M = get_method("dyeval")


def _grown(p: Project, judge: Callable[..., int]) -> DyEvalRunner:
    """Root 'Material objects' judged, its three proposals open."""
    r = DyEvalRunner.create(p, DyEvalConfig(n_i=3, n_x=2, d_max=2), tree_id="t", topics=["Material objects"])
    r.run_automatic(("write",), confirm=True)
    assert r.render_inline(size=64) == 6
    judge(r)
    r.run_automatic(("propose",))
    return r


def test_next_actions_say_what_the_tree_waits_for_and_who_does_it(tmp_path: Path,
                                                                  judge_truth: Callable[..., int]) -> None:
    with Project.create(tmp_path / "p") as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=3, n_x=2, d_max=2), tree_id="t", topics=["Material objects"])
        assert [(a.kind, a.by, a.text) for a in r.next_actions()] == [
            ("write", "engine", "write 3 prompts for 'Material objects'")]
        r.run_automatic(("write",))
        assert [(a.kind, a.by) for a in r.next_actions()] == [("confirm", "auditor")]
        r.confirm_prompts("n1")
        (a,) = r.next_actions()
        assert (a.kind, a.by, a.count, a.text) == ("generate", "jobs", 6, "generate 6 image(s) for 'Material objects'")
        r.render_inline(size=64)
        (a,) = r.next_actions()
        assert (a.kind, a.by, a.count) == ("judge", "judge", 6)
        judge_truth(r)
        (a,) = r.next_actions()
        assert (a.kind, a.by) == ("propose", "engine")
        r.run_automatic(("propose",))
        (a,) = r.next_actions()
        assert (a.kind, a.by, a.detail) == ("decide", "auditor", ("t1", "t2", "t3"))
        assert "t1 'Vehicles', t2 'Furniture', t3 'Food'" in a.text


def test_decisions_on_proposals_prompts_and_graphs(tmp_path: Path, judge_truth: Callable[..., int]) -> None:
    with Project.create(tmp_path / "p") as p:
        r = _grown(p, judge_truth)
        t = r.tree
        r.reorder("n1", ["t3", "t1", "t2"])
        assert [t.proposals[x].order for x in ("t3", "t1", "t2")] == [0, 1, 2]
        food = r.accept("t3")
        boats = r.accept("t1", "Boats and ships")
        r.reject("t2")
        assert (t.proposals["t1"].state, t.proposals["t1"].original_text, t.nodes[boats].topic) == \
            ("edited", "Vehicles", "Boats and ships")
        assert t.nodes[food].child_ids == [] and t.nodes["n1"].child_ids == [food, boats]
        with pytest.raises(WorkstationError, match="already rejected"):
            r.accept("t2")
        with pytest.raises(WorkstationError, match="no proposal 'zz'"):
            r.reject("zz")
        # the auditor adds a prompt (parsed by the rules) and corrects its graph before generation
        pid = r.add_prompt(food, "A green apple on a plate.")
        assert [o.name for o in t.prompts[pid].graph.objects] == ["apple", "plate"]
        fixed = SceneGraph((SceneObject("o1", "apple", ("green",)),))
        r.set_graph(pid, fixed)
        assert t.prompts[pid].graph == fixed and t.prompts[pid].graph_provenance.source == "human"
        r.remove_prompt(pid)
        assert pid not in t.prompts
        # everything above is stored: a replay gives the same tree
        assert TreeStore(p).load("t", persist=False).to_dict() == t.to_dict()


def test_a_located_prompts_graph_cannot_change(tmp_path: Path, judge_truth: Callable[..., int]) -> None:
    with Project.create(tmp_path / "p") as p:
        r = _grown(p, judge_truth)
        veh = r.accept("t1")
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=64)
        judge_truth(r)
        bug = r.tree.bugs(veh)[0]
        r.start_location(veh, bug)
        with pytest.raises(WorkstationError, match="being located already"):
            r.set_graph(bug, SceneGraph((SceneObject("o1", "boat"),)))
        with pytest.raises(WorkstationError, match="not a prompt of node"):
            r.start_location("n1", bug)


def test_label_import_is_all_or_nothing(tmp_path: Path, judge_truth: Callable[..., int]) -> None:
    with Project.create(tmp_path / "p") as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=1, n_x=2), tree_id="t", topics=["Animals"])
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=64)
        a, b = list(r.tree.images)
        with pytest.raises(WorkstationError, match="no image 'nope'"):
            r.import_labels([(a, "PASS", "ann", None), ("nope", "PASS", "ann", None)])
        with pytest.raises(WorkstationError, match="not one of PASS, FAIL"):
            r.import_labels([(a, "maybe", "ann", None)])
        assert p.labels.events(task=TASK) == [] and r.tree.images[a].label is None
        assert r.import_labels([(a, "pass", "ann", "ok"), (b, "FAIL", "ann", None)]) == 2
        assert (r.tree.images[a].label, r.tree.images[b].label) == ("PASS", "FAIL")


def _hand_tree(p: Project) -> DyEvalRunner:
    """Root with 2 prompts × 4 images, a child with 1 prompt × 4 images; labels set by hand."""
    r = DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=4, d_max=2), tree_id="h", topics=["Animals"])
    t = r.tree
    g = SceneGraph((SceneObject("o1", "dog"),))
    p1, p2 = r.add_prompt("n1", "A dog.", g), r.add_prompt("n1", "A cat.", g)
    r.confirm_prompts("n1")
    r.render_inline(size=64)
    (t1,) = t.add_proposals("n1", ["Dogs"])
    child = r.accept(t1)
    assert child is not None
    p3 = r.add_prompt(child, "A big dog.", g)
    r.add_prompt(child, "A small dog.", g)
    r.remove_prompt(t.nodes[child].prompt_ids[1])
    r.confirm_prompts(child)
    r.render_inline(size=64)
    labels = {p1: "PPPF", p2: "PFFF", p3: "FFFP"}  # pass rates 0.75, 0.25, 0.25
    for pid, vals in labels.items():
        for iid, v in zip(t.prompts[pid].image_ids, vals):
            r.label(iid, "PASS" if v == "P" else "FAIL", "ann")
    return r


def test_per_node_apr_afr_and_bugs_are_the_hand_computed_values(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        _hand_tree(p)
        data = M.load(p)
        res = M.evaluate(data, DyEvalConfig())
        assert res.item_kind == "node" and list(res.ids) == ["h/n1", "h/n2"]
        c = res.cols
        # root: 3 + 1 passes of 8 → APR 1/2; bugs: the cat (0.25 < 0.75), not the dog (0.75)
        assert (c["tests"].tolist(), c["passes"].tolist(), c["bugs"].tolist()) == ([8, 4], [4, 1], [1, 1])
        assert np.allclose(c["apr"], [1 / 2, 1 / 4]) and np.allclose(c["afr"], [1 / 2, 3 / 4])
        # ρ = 0.8: the dog's 0.75 is a bug too; ρ = 0.2: none of them
        assert M.evaluate(data, DyEvalConfig(rho=0.8)).cols["bugs"].tolist() == [2, 1]
        assert M.evaluate(data, DyEvalConfig(rho=0.2)).cols["bugs"].tolist() == [0, 0]
        tables = M.metrics(data, res)
        (tree,) = tables["trees"]
        assert (tree["tests"], tree["passes"], tree["bugs"]) == (12, 5, 2) and tree["apr"] == 5 / 12
        assert [r_["accumulated_bugs"] for r_ in tables["accumulated_bugs"]] == [1, 2]
        eid, _ = evaluate_and_store(p, M, cfg=DyEvalConfig(rho=0.8), data=data)
        stored = TreeStore(p).node_results(eid)
        assert [(s["node_id"], s["bugs"], s["apr"]) for s in stored] == [("n1", 2, 0.5), ("n2", 1, 0.25)]


def test_report_section_writes_tables_tree_json_and_safe_csv(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=1, n_x=1), tree_id="r", topics=["=HYPERLINK(\"x\")"])
        r.add_prompt("n1", "A dog.", SceneGraph((SceneObject("o1", "dog"),)))
        r.confirm_prompts("n1")
        r.render_inline(size=64)
        r.label(next(iter(r.tree.images)), "FAIL", "ann")

        def build(out: Path) -> list[Any]:
            return [M.report_section(p, out / "dyeval")]

        (sec,) = write_bundle(tmp_path / "rep", build, provenance={"project": "x"})
    d = tmp_path / "rep" / "dyeval"
    with open(d / "tables" / "nodes.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["topic"] == "'=HYPERLINK(\"x\")" and rows[0]["apr"] == "0.0" and rows[0]["bugs"] == "1"
    exported = json.loads((d / "trees" / "r.json").read_text())
    assert exported["derived"]["tree_summary"]["bugs"] == 1 and exported["images"][0]["label"] == "FAIL"
    index = (tmp_path / "rep" / "index.html").read_text()
    assert "dyeval/trees/r.json" in index and "class='dytree'" in index and "&quot;x&quot;" in index
    assert (d / "index.html").is_file() and "href='trees/r.json'" in (d / "index.html").read_text()


def test_config_files_are_checked_with_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("n_i: 3\nrho: 0.5\n")
    assert (M.load_config_file(f).n_i, M.load_config_file(f).rho) == (3, 0.5)
    f.write_text("n_i: 3\nrhoo: 0.5\n")
    with pytest.raises(InputError) as e:
        M.load_config_file(f)
    assert e.value.line == 2 and "unknown setting 'rhoo'" in str(e.value)
    f.write_text("n_i: 3\n\nrho: 1.5\n")
    with pytest.raises(InputError) as e:
        M.load_config_file(f)
    assert e.value.line == 3 and "rho must be between 0 and 1" in str(e.value)
    f.write_text("n_i: [3\n")
    with pytest.raises(InputError, match="not valid YAML"):
        M.load_config_file(f)


def test_the_builtin_suite_is_the_nine_initial_topics() -> None:
    s = builtin_suite(n_i=2)
    assert len(s) == 18 and set(s.method.tolist()) == {"dyeval"}
    topics = [a["topic"] for a in s.attrs]
    assert topics[0] == "Material objects" and topics[-1] == "Knowledge"
    assert all(a["graph"]["objects"] or a["graph"]["context"] for a in s.attrs)
    assert builtin_suite(n_i=2).content_hash() == s.content_hash() != builtin_suite(n_i=2, seed=1).content_hash()
