"""DyEval's labels line: one line above the tree says which judgements its figures count, the
Labels… dialog chooses them, the tree's APR, AFR and #Bugs are recomputed from the choice, it
is kept with the project, and the window's figures of a node equal the report's for the same
selection."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from workstation.dataset import Dataset, Detections, Samples
from workstation.evaluation.selection import load_selection
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.link import prompt_id_for, request_prompts, sync_tree
from workstation.methods.dyeval.scene_graph import SceneGraph, SceneObject
from workstation.methods.dyeval.store import TASK, TreeStore
from workstation.store import Project

from tests.gui.conftest import choose_rule

pytestmark = pytest.mark.gui


@pytest.fixture
def two_annotators(tmp_path: Path) -> tuple[Path, str]:
    """One node, "A ceramic drum." × 4 seeds and "A glass bell." × 4: a1 passes every image,
    a2's later blind judgements fail two drums and one bell."""
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        t = TreeStore(p).create(DyEvalConfig(n_i=2, n_x=4), "a")
        node = t.add_root("Material objects")
        pids = [t.add_prompt(node, "A ceramic drum.", SceneGraph((SceneObject("o1", "drum", ("ceramic",)),))),
                t.add_prompt(node, "A glass bell.", SceneGraph((SceneObject("o1", "bell", ("glass",)),)))]
        t.confirm_prompts(node)
        prompts = request_prompts(t, pids)
        sids: list[str] = []
        pid_col: list[str] = []
        for k, pid in enumerate(pids):
            for s in range(4):
                sids.append(f"run1_{prompt_id_for('a', pid)}_seed{s:04d}")
                pid_col.append(str(prompts.prompt_id[k]))
        samples = Samples.build(sids, "run1", pid_col, [i % 4 for i in range(8)], 64.0, 64.0,
                                [f"images/{s}.png" for s in sids])
        with p.transaction():
            p.samples.add_run("run1", method="test")
            p.samples.add_dataset(Dataset(samples, Detections.empty(), prompts))
        sync_tree(p, t)
        for s in sids:
            p.labels.add(TASK, "image", s, "a1", "PASS")
        for s in sids[:2] + sids[4:5]:
            p.labels.add(TASK, "image", s, "a2", "FAIL")
    return folder, node


def _choose(page: Any, rule: str) -> None:
    choose_rule(page, page.labels_line, rule)


def _window_and_report(page: Any, node: str, out: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The node's figures as the window shows them and as the report writes them."""
    from ui.methods.dyeval.style import fmt_rate
    from workstation.methods.dyeval.report import report_section

    item = page.tree_view.items[("node", node)]
    page.tree_view.select("node", node)
    header = page.node_title.text()
    shown = {"apr": item.text(1), "bugs": item.text(2),
             "afr": header.split("AFR ", 1)[1].split(" ", 1)[0]}
    report_section(page.session.project, out)
    with open(out / "tables" / "nodes.csv", newline="") as f:
        (row,) = [r for r in csv.DictReader(f) if r["node_id"] == node]
    written = {"apr": fmt_rate(float(row["apr"])) if row["apr"] else fmt_rate(None),
               "bugs": row["bugs"],
               "afr": fmt_rate(float(row["afr"])) if row["afr"] else fmt_rate(None)}
    return shown, written


def test_the_labels_line_chooses_the_judgements_and_the_window_equals_the_report(
        qtbot: Any, open_window: Any, two_annotators: tuple[Path, str], tmp_path: Path) -> None:
    folder, node = two_annotators
    w = open_window(folder, annotator="a1")
    w.show_tab("DyEval")
    page = w.dyeval_page
    line = page.labels_line.line()
    assert line.startswith("labels: every audit set and free labelling, every annotator, first passes, "
                           "latest label wins — 8 items"), line
    item = page.tree_view.items[("node", node)]
    assert (item.text(1), item.text(4)) == ("0.62", "8/8")  # a2's later judgements win: 5 of 8 pass
    shown, written = _window_and_report(page, node, tmp_path / "latest")
    assert shown == written

    _choose(page, "majority")
    assert load_selection(page.session.project, TASK).rule == "majority"  # kept with the project
    item = page.tree_view.items[("node", node)]
    assert (item.text(1), item.text(4)) == ("1.00", "5/8 ⚠3")  # the disagreements count for no one
    assert page.labels_line.line().startswith("labels: every audit set and free labelling, every annotator, "
                                              "first passes, majority (ties disputed) — 5 items, 3 disputed")
    shown, written = _window_and_report(page, node, tmp_path / "majority")
    assert shown == written

    _choose(page, "annotator:a1")
    item = page.tree_view.items[("node", node)]
    assert (item.text(1), item.text(2), item.text(4)) == ("1.00", "0", "8/8")  # a1's judgements, unchanged by a2
    assert "a1 only" in page.labels_line.line()
    shown, written = _window_and_report(page, node, tmp_path / "a1")
    assert shown == written
    assert page.grab().save(str(tmp_path / "dyeval_labels_line.png"))  # docs/images/ holds one
