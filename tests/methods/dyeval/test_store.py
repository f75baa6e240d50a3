"""How a tree lives in a project: one committed row per event, several trees, replay, the label
log and the scores table brought into the tree (`store.py`, `link.py`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workstation.dataset import Dataset, Detections, Samples
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.link import latest_judgements, prompt_id_for, request_prompts, sync_tree
from workstation.methods.dyeval.scene_graph import SceneGraph, SceneObject
from workstation.methods.dyeval.store import MIGRATIONS, TASK, TreeStore
from workstation.store import Project
from workstation.types import WorkstationError

KIMONO = SceneGraph((SceneObject("o1", "kimono", ("silk",)),))


def _tree_with_images(p: Project, n_x: int = 2, threshold: float | None = None):  # type: ignore[no-untyped-def]
    """A tree with one node, one confirmed prompt and its n_x images as samples of the project."""
    st = TreeStore(p)
    t = st.create(DyEvalConfig(n_i=1, n_x=n_x, premark_threshold=threshold), "a")
    n = t.add_root("Clothing")
    pid = t.add_prompt(n, "A silk kimono.", KIMONO)
    t.confirm_prompts(n)
    prompts = request_prompts(t, [pid])
    sids = [f"run1_{prompt_id_for('a', pid)}_seed{s:04d}" for s in range(n_x)]
    samples = Samples.build(sids, "run1", [prompts.prompt_id[0]] * n_x, list(range(n_x)), 64.0, 64.0,
                            [f"images/{s}.png" for s in sids])
    with p.transaction():
        p.samples.add_run("run1", method="test")
        p.samples.add_dataset(Dataset(samples, Detections.empty(), prompts))
    return st, t, pid, sids


def test_every_event_is_one_committed_row_and_a_replay_is_the_same_tree(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        st = TreeStore(p)
        t = st.create(DyEvalConfig(n_i=2, n_x=1), "t1")
        root = t.add_root("Animals")
        t.add_prompt(root, "A red dog.", SceneGraph((SceneObject("o1", "dog", ("red",)),)))
        # committed as it happened: a snapshot copy of the database file already holds the events
        with Project.open_snapshot(tmp_path / "p") as snap:
            assert [e["kind"] for e in TreeStore(snap).events("t1")] == ["tree_created", "node_added", "prompt_added"]
        rows = p.con.execute("SELECT seq, kind FROM dyeval_events WHERE tree_id = 't1' ORDER BY seq").fetchall()
        assert rows == [(1, "tree_created"), (2, "node_added"), (3, "prompt_added")]
        before = t.to_dict()
        # several trees per project, each its own log; ensure_schema is a no-op the second time
        t2 = st.create(DyEvalConfig(), None)
        assert t2.tree_id == "t2" and st.tree_ids() == ["t1", "t2"]
        assert p.ensure_schema("dyeval", MIGRATIONS) == 1
        assert [s["roots"] for s in st.summaries()] == [["Animals"], []]
    with Project.open(tmp_path / "p") as p:
        again = TreeStore(p).load("t1")
        assert again.to_dict() == before
        again.add_root("Vehicles")  # a reopened tree keeps writing its events
        assert len(TreeStore(p).events("t1")) == 4


def test_bad_tree_ids_and_missing_trees_are_one_clear_error(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        st = TreeStore(p)
        with pytest.raises(WorkstationError, match="letters, digits"):
            st.create(DyEvalConfig(), "a b")
        st.create(DyEvalConfig(), "x")
        with pytest.raises(WorkstationError, match="already has a DyEval tree 'x'"):
            st.create(DyEvalConfig(), "x")
        with pytest.raises(WorkstationError, match="no DyEval tree 'y'.*its trees: x"):
            st.load("y")
    with Project.open(tmp_path / "p", read_only=True) as p:
        t = TreeStore(p).load("x")
        assert t.on_event is None  # a read-only tree is not written


def test_the_label_log_is_the_truth_of_judgements(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        st, t, pid, (s0, s1) = _tree_with_images(p)
        assert sync_tree(p, t).images == 2 and t.prompts[pid].image_ids == [s0, s1]
        p.labels.add(TASK, "image", s0, "alice", "PASS")
        p.labels.add(TASK, "image", s0, "bob", "FAIL")
        p.labels.add(TASK, "image", s1, "alice", "FAIL")
        rep = sync_tree(p, t)
        assert rep.labels == 2
        assert (t.images[s0].label, t.images[s0].annotator) == ("FAIL", "bob")  # the most recent counts
        assert t.outcome(pid).passes == 0 and t.outcome(pid).is_bug
        p.labels.add(TASK, "image", s0, "bob", None)  # bob takes his back: alice's PASS counts again
        assert latest_judgements(p, [s0]) == {s0: ("PASS", "alice")}
        sync_tree(p, t)
        assert (t.images[s0].label, t.images[s0].annotator) == ("PASS", "alice")
        p.labels.add(TASK, "image", s0, "alice", None)  # nobody's judgement left: unlabelled
        sync_tree(p, t)
        assert t.images[s0].label is None and t.outcome(pid).judged == 1
        assert sync_tree(p, t).changed == 0
        # the tree's events hold the same story, stored
        assert TreeStore(p).load("a", persist=False).to_dict() == t.to_dict()


def test_clipscore_premarks_come_from_the_scores_table_and_stay_beside_the_human_label(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        st, t, pid, (s0, s1) = _tree_with_images(p, threshold=22.0)
        sync_tree(p, t)
        # scores of two CLIP folders: the one with more scores counts; text must be the image's own text
        p.scores.add({"sample_id": [s0, s1, s0], "scorer": ["clipscore@aaa", "clipscore@aaa", "clipscore@bbb"],
                      "text": ["A silk kimono.", "A silk kimono.", "A silk kimono."], "score": [18.5, 30.0, 5.0]})
        p.scores.add({"sample_id": [s1], "scorer": ["pickscore@ccc"], "text": ["A silk kimono."], "score": [1.0]})
        assert sync_tree(p, t).premarks == 2
        assert (t.images[s0].clip_score, t.images[s0].premark_fail) == (18.5, True)
        assert (t.images[s1].clip_score, t.images[s1].premark_fail) == (30.0, False)
        q = t.judging_queue()
        assert [j.image_id for j in q] == [s1, s0]  # pre-marked images last, for confirmation
        p.labels.add(TASK, "image", s0, "alice", "PASS")  # the auditor overrides the pre-mark
        sync_tree(p, t)
        assert t.images[s0].label == "PASS" and t.images[s0].premark_fail  # both kept
        assert t.outcome(pid).judged == 1  # pre-marks do not count by default


def test_prompts_carry_the_graph_entities_and_group(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        st, t, pid, _ = _tree_with_images(p)
        pr = p.samples.load_prompts("dyeval")
        assert pr.prompt_id.tolist() == ["dyeval-a-p1"] and pr.group_id.tolist() == ["a/n1"]
        assert pr.entities[0] == ("kimono",)
        a = pr.attrs[0]
        assert (a["tree"], a["owner"], a["kind"], a["node"]) == ("a", "p1", "prompt", "n1")
        assert SceneGraph.from_dict(a["graph"]) == KIMONO and "relation" not in a
        assert np.all(p.samples.load_dataset(method="dyeval").samples.prompt_id == "dyeval-a-p1")
