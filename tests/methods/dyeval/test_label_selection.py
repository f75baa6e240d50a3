"""DyEval's results from a label selection: a second annotator's labels do not replace
the first's under "first annotator", and a disagreement shows as disputed under "majority"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workstation.dataset import Dataset, Detections, Samples
from workstation.evaluation.selection import LabelSelection, save_selection
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.link import prompt_id_for, request_prompts, sync_tree
from workstation.methods.dyeval.report import report_section
from workstation.methods.dyeval.results import load_data, node_summary
from workstation.methods.dyeval.scene_graph import SceneGraph, SceneObject
from workstation.methods.dyeval.store import TASK, TreeStore
from workstation.store import Project

DRUM = SceneGraph((SceneObject("o1", "drum", ("ceramic",)),))


def _project(folder: Path) -> tuple[str, str, list[str]]:
    with Project.create(folder) as p:
        st = TreeStore(p)
        t = st.create(DyEvalConfig(n_i=1, n_x=4), "a")
        node = t.add_root("Material objects")
        pid = t.add_prompt(node, "A ceramic drum.", DRUM)
        t.confirm_prompts(node)
        prompts = request_prompts(t, [pid])
        sids = [f"run1_{prompt_id_for('a', pid)}_seed{s:04d}" for s in range(4)]
        samples = Samples.build(sids, "run1", [prompts.prompt_id[0]] * 4, list(range(4)), 64.0, 64.0,
                                [f"images/{s}.png" for s in sids])
        with p.transaction():
            p.samples.add_run("run1", method="test")
            p.samples.add_dataset(Dataset(samples, Detections.empty(), prompts))
        sync_tree(p, t)
        for s in sids:  # the first annotator: every image passes
            p.labels.add(TASK, "image", s, "a1", "PASS")
        for s in sids[:2]:  # later, a second annotator's blind judgements disagree on two
            p.labels.add(TASK, "image", s, "a2", "FAIL")
    return node, pid, sids


def _apr(folder: Path, node: str, selection: LabelSelection | None) -> tuple[float | None, object]:
    with Project.open(folder) as p:
        if selection is not None:
            save_selection(p, TASK, selection)
        data = load_data(p)
        t = data.trees["a"]
        return node_summary(t, node, t.config).apr, t


def test_the_first_annotators_apr_is_unchanged_by_a_second_annotator(tmp_path: Path) -> None:
    node, _pid, sids = _project(tmp_path / "p")
    latest, _ = _apr(tmp_path / "p", node, None)
    assert latest == 0.5  # the rule of earlier versions: the second annotator's labels win
    first, t = _apr(tmp_path / "p", node, LabelSelection(rule="annotator:a1"))
    assert first == 1.0
    assert all(t.images[s].label == "PASS" and t.images[s].annotator == "a1" for s in sids)  # type: ignore[attr-defined]


def test_a_disagreement_is_disputed_under_majority(tmp_path: Path) -> None:
    node, pid, sids = _project(tmp_path / "p")
    apr, t = _apr(tmp_path / "p", node, LabelSelection(rule="majority"))
    imgs = t.images  # type: ignore[attr-defined]
    assert [imgs[s].disputed for s in sids] == [True, True, False, False]
    assert all(imgs[s].label is None for s in sids[:2])  # neither annotator wins
    assert sorted(imgs[sids[0]].annotator.split(", ")) == ["a1", "a2"]
    assert apr == 1.0 and t.outcome(pid).judged == 2  # type: ignore[attr-defined]
    with Project.open(tmp_path / "p") as p:
        sec = report_section(p, tmp_path / "out")
    prov = sec.meta["provenance"]["labels"]
    assert prov["selection"]["rule"] == "majority" and prov["disputed"] == 2
    assert "majority (ties disputed) — 2 items, 2 disputed" in sec.html


@pytest.mark.gui
def test_the_tree_view_shows_the_disputed_images(tmp_path: Path, qtbot: Any) -> None:
    from ui.methods.dyeval.tree_view import TreeView

    node, _pid, _sids = _project(tmp_path / "p")
    _apr(tmp_path / "p", node, LabelSelection(rule="majority"))
    with Project.open(tmp_path / "p") as p:
        t = load_data(p).trees["a"]
    view = TreeView()
    qtbot.addWidget(view)
    view.resize(700, 160)
    view.fill(t)
    item = view.items[("node", node)] if ("node", node) in view.items else next(iter(view.items.values()))
    assert item.text(4) == "2/4 ⚠2" and item.text(1) == "1.00"
    assert item.toolTip(4).startswith("2 images disputed: the annotators disagree")
    view.show()
    qtbot.waitExposed(view)
    assert view.grab().save(str(tmp_path / "dyeval_disputed.png"))  # docs/images/ holds one
