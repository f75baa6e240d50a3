"""DyEval's tab: the tree view, the node page (keys P / F, CLIPScore pre-marks), the split
diagram, proposals, the scene-graph editor and the next-step bar, on real projects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPointF, Qt

from workstation.methods import get_method
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.runner import DyEvalRunner
from workstation.methods.dyeval.store import TASK, TreeStore
from workstation.store import Project

pytestmark = pytest.mark.gui


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    """The small DyEval demo: a passing root, a failing 'Vehicles' with one finished failure
    location, a passing child, an open proposal."""
    folder = tmp_path / "demo"
    with Project.create(folder) as p:
        get_method("dyeval").build_demo(p, small=True)
    return folder


@pytest.fixture
def judging_project(tmp_path: Path) -> Path:
    """One node, 2 prompts × 2 images, nothing judged; CLIPScores pre-mark two images FAIL."""
    folder = tmp_path / "judge"
    with Project.create(folder) as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=2, premark_threshold=22.0), tree_id="j",
                                topics=["Animals"])
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=64)
        ids = list(r.tree.images)
        texts = [r.tree.step_owner_text(r.tree.images[i].owner) for i in ids]
        p.scores.add({"sample_id": ids, "scorer": ["clipscore@abc"] * 4, "text": texts,
                      "score": [30.0, 18.5, 25.0, 12.0]})
    return folder


def _page(open_window: Any, folder: Path) -> tuple[Any, Any]:
    w = open_window(folder, annotator="ann")
    assert "DyEval" in w.panels, "the DyEval tab is installed when a project with DyEval data opens"
    w.show_tab("DyEval")
    page = w.dyeval_page
    return w, page


def test_tree_view_shows_topics_figures_states_and_the_location(qtbot: Any, open_window: Any,
                                                                demo_project: Path) -> None:
    w, page = _page(open_window, demo_project)
    tv = page.tree_view
    t = page.session.tree
    root, veh = tv.items[("node", "n1")], tv.items[("node", "n2")]
    assert (root.text(0), root.text(1), root.text(2)) == ("Material objects", "1.00", "0")
    s = t.node_summary("n2")
    assert (veh.text(0), veh.text(1), veh.text(2), veh.text(3)) == ("Vehicles", f"{s.apr:.2f}", str(s.bugs), "locating")
    # colour by pass rate: the failing node reddish, the passing one green
    assert veh.background(1).color().hueF() < root.background(1).color().hueF()
    assert root.background(1).color().hueF() == pytest.approx(0.33, abs=0.02)
    # the failure location, its steps nested, the trigger marked; an open proposal
    loc = tv.items[("location", "L1")]
    assert loc.parent() is veh and loc.text(3) == "done"
    steps = [k for k in tv.items if k[0] == "step"]
    m = t.locations["L1"].machine
    assert len(steps) == len(m.steps) - 1
    trig = [loc.child(i).text(0) for i in range(loc.childCount()) if loc.child(i).text(0).startswith("trigger:")]
    assert trig == [f"trigger: {x.text}" for x in m.triggers]
    assert any(k[0] == "proposal" for k in tv.items)
    # selecting the location shows the split diagram; a proposal shows the proposals tab
    tv.select("location", "L1")
    assert page.tabs.currentWidget() is page.location and page.location.current_location() == "L1"
    pid = next(k[1] for k in tv.items if k[0] == "proposal")
    tv.select("proposal", pid)
    assert page.tabs.currentWidget() is page.proposals
    assert "DyEval" in page.summary.text() or "demo" in page.summary.text()


def test_node_page_judges_with_keys_and_shows_premarks(qtbot: Any, open_window: Any, judging_project: Path) -> None:
    w, page = _page(open_window, judging_project)
    img = page.images
    t = page.session.tree
    ids = list(img.controller.queue)
    assert len(ids) == 4 and set(ids) == set(t.images)
    # pre-marks: CLIPScore below 22 → amber corner with the score, caption says how to confirm / override
    marked = [i for i in ids if t.images[i].premark_fail]
    assert len(marked) == 2
    assert img.tiles[marked[0]].premark.startswith("CLIP ") and img.tiles[marked[0]].premark.endswith("⚑")
    assert img.premark_button.isEnabled() and "Confirm 2 pre-mark(s)" in img.premark_button.text()
    img.controller.go(ids.index(marked[0]))
    assert "pre-marked" in img.preview.caption.text() and "F confirms, P overrides" in img.preview.caption.text()
    # F on the first pre-marked image confirms it; P on the second overrides it
    img.setFocus()
    qtbot.keyClick(img, Qt.Key_F)
    img.controller.go(ids.index(marked[1]))
    qtbot.keyClick(img, Qt.Key_P)
    p = page.session.project
    ev = {e.target_id: (e.value, e.annotator) for e in p.labels.events(task=TASK)}
    assert ev == {marked[0]: ("FAIL", "ann"), marked[1]: ("PASS", "ann")}
    assert (t.images[marked[0]].label, t.images[marked[0]].premark_fail) == ("FAIL", True)  # both kept
    assert (t.images[marked[1]].label, t.images[marked[1]].premark_fail) == ("PASS", True)
    assert img.tiles[marked[1]].label_value == "PASS" and img.tiles[marked[0]].label_value == "FAIL"
    # the other two, by key from the first unjudged, auto-advancing
    rest = [i for i in ids if i not in marked]
    img.controller.go(ids.index(rest[0]))
    qtbot.keyClick(img, Qt.Key_P)
    assert img.controller.current == ids[ids.index(rest[0]) + 1] if ids.index(rest[0]) + 1 < 4 else True
    img.controller.go(ids.index(rest[1]))
    qtbot.keyClick(img, Qt.Key_F)
    assert all(t.images[i].label is not None for i in ids)
    # stored: a replay of the tree has the same judgements; the node moved on from judging
    again = TreeStore(p).load("j", persist=False)
    assert {i: again.images[i].label for i in ids} == {i: t.images[i].label for i in ids}
    assert t.node_state("n1") != "judging"
    assert page.tree_view.items[("node", "n1")].text(4) == "4/4"
    # undo takes the last judgement back (a compensating label event) and the tree follows
    qtbot.keyClick(img, Qt.Key_Z, Qt.ControlModifier)
    assert t.images[rest[1]].label is None and p.labels.events(task=TASK)[-1].value is None


def test_confirm_all_premarks_writes_one_fail_each(qtbot: Any, open_window: Any, judging_project: Path) -> None:
    w, page = _page(open_window, judging_project)
    t = page.session.tree
    page.images.premark_button.click()
    marked = [i for i in t.images if t.images[i].premark_fail]
    assert all(t.images[i].label == "FAIL" and t.images[i].annotator == "ann" for i in marked)
    src = {e.target_id: e.source for e in page.session.project.labels.events(task=TASK)}
    assert src == {i: "ui-premark" for i in marked}
    assert not page.images.premark_button.isEnabled()


def test_split_diagram_draws_the_steps_their_verdicts_and_triggers(qtbot: Any, open_window: Any,
                                                                   demo_project: Path) -> None:
    from ui.methods.dyeval.split_diagram import layout

    w, page = _page(open_window, demo_project)
    page.tree_view.select("location", "L1")
    d = page.location.diagram
    m = page.session.tree.locations["L1"].machine
    assert sorted(d.boxes) == [s.step_id for s in m.steps]
    for s in m.steps:
        pen = d.boxes[s.step_id].pen()
        if s.step_id in {t.step for t in m.triggers}:
            assert pen.color().name() == "#ff8c1a" and pen.widthF() >= 3.5
        elif s.verdict == "FAIL":
            assert pen.color().name() == "#d64541"
        if s.reused_from is not None:
            assert pen.style() == Qt.DashLine
    # parents sit above and between their halves
    pos = layout(m.steps)
    for s in m.steps[1:]:
        assert pos[s.step_id][1] == pos[int(s.parent)][1] + 1
    kids = [s.step_id for s in m.steps[1:] if s.parent == 0]
    assert pos[0][0] == pytest.approx((pos[kids[0]][0] + pos[kids[-1]][0]) / 2)
    # a click on a box tells what it tests
    sid = m.steps[-1].step_id
    d.boxes[sid].mousePressEvent(None)
    assert f"step {sid}" in page.location.detail.text() and "kept as context" in page.location.detail.text()
    texts = [" ".join(i.toPlainText().split()) for i in d.scene().items() if hasattr(i, "toPlainText")]
    assert any(x.startswith(f"trigger {m.triggers[0].cell_text}") for x in texts), texts


def test_proposals_are_accepted_edited_reordered_and_rejected(qtbot: Any, open_window: Any,
                                                              tmp_path: Path) -> None:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=1, n_x=1, d_max=2), tree_id="q", topics=["Animals"])
        r.tree.add_proposals("n1", ["Dogs", "Cats", "Birds"])
    w, page = _page(open_window, folder)
    pp = page.proposals
    page.tree_view.select("node", "n1")
    assert [pp.list.item(i).text() for i in range(3)] == ["Dogs", "Cats", "Birds"]
    pp.list.setCurrentRow(2)
    pp.up_button.click()
    t = page.session.tree
    assert [t.proposals[x].text for x in sorted(t.proposals, key=lambda k: t.proposals[k].order)] == \
        ["Dogs", "Birds", "Cats"]
    pp.list.setCurrentRow(1)
    pp.list.currentItem().setText("Birds of prey")  # edited in place
    pp.accept_button.click()
    pp.list.setCurrentRow(0)
    pp.reject_button.click()
    states = {p_.text: p_.state for p_ in t.proposals.values()}
    assert states == {"Dogs": "rejected", "Birds of prey": "edited", "Cats": "proposed"}
    assert [t.nodes[c].topic for c in t.nodes["n1"].child_ids] == ["Birds of prey"]
    assert page.tree_view.items[("node", t.nodes["n1"].child_ids[0])].text(0) == "Birds of prey"


def test_scene_graph_editor_corrects_a_graph(qtbot: Any, open_window: Any, tmp_path: Path) -> None:
    folder = tmp_path / "g"
    with Project.create(folder) as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=1, n_x=1), tree_id="g", topics=["Animals"])
        r.add_prompt("n1", "A dog chasing a red ball in the park.")
    w, page = _page(open_window, folder)
    ge = page.graph
    page.tabs.setCurrentWidget(ge)
    assert ge.objects.rowCount() == 2 and ge.relations.rowCount() == 1 and ge.context.rowCount() == 1
    ge.objects.item(1, 3).setText("red, bouncy")  # attributes of the ball
    assert "“A dog chasing a red bouncy ball in the park.”" in ge.preview.text()
    ge.relations.item(0, 2).setText("")  # a relation without a predicate is refused, said in red
    assert "no predicate" in ge.preview.text() and not ge.save_button.isEnabled()
    ge.relations.item(0, 2).setText("chasing")
    ge.save_button.click()
    g = page.session.tree.prompts["p1"].graph
    assert g.objects[1].attributes == ("red", "bouncy") and page.session.tree.prompts["p1"].graph_provenance.source \
        == "human"


def test_the_next_step_bar_leads_from_a_root_topic_to_images(qtbot: Any, open_window: Any, tmp_path: Path) -> None:
    folder = tmp_path / "n"
    with Project.create(folder) as p:
        DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=1), tree_id="n", topics=["Animals"])
    w, page = _page(open_window, folder)
    assert page.next_button.text() == "Write prompts" and "Write 2 prompts for 'Animals'" in page.next_label.text()
    page.next_button.click()
    assert page.next_button.text() == "Confirm prompts → generate" and len(page.session.tree.prompts) == 2
    page.session.size = 64
    page.next_button.click()  # confirm, and the generation job goes to the Jobs panel
    assert page.session.live_jobs and "Jobs panel" in page.next_label.text()
    qtbot.waitUntil(lambda: not page.session.live_jobs, timeout=60000)
    t = page.session.tree
    assert len(t.images) == 2 and page.next_button.text() == "Judge the images (P / F)"
    assert all((folder / i.path).is_file() for i in t.images.values())
    assert len(page.images.tiles) == 2 and all(tile.pix is not None for tile in page.images.tiles.values())


def test_tree_columns_and_legend_are_whole_and_every_cut_topic_has_its_tooltip(qtbot: Any, open_window: Any,
                                                                               demo_project: Path) -> None:
    from ui.methods.dyeval.tree_view import COLUMNS

    w, page = _page(open_window, demo_project)
    tv = page.tree_view
    hh, hfm, fm = tv.header(), tv.header().fontMetrics(), tv.fontMetrics()
    for i in range(1, len(COLUMNS)):  # every fixed column shows its header and its values whole
        assert hfm.horizontalAdvance(COLUMNS[i]) + 8 <= hh.sectionSize(i), COLUMNS[i]
        for it in tv.items.values():
            assert fm.horizontalAdvance(it.text(i)) + 8 <= tv.columnWidth(i), (COLUMNS[i], it.text(i))
    for (kind, _ident), it in tv.items.items():  # a topic cut at the column's edge reads whole in its tooltip
        text = it.text(0)
        shown = text if kind == "node" else text.split(": ", 1)[-1]  # past its "s1: " or "proposed: "
        assert shown in it.toolTip(0), (kind, text, it.toolTip(0))
    legend = page.images.legend
    assert legend.width() >= min(legend.sizeHint().width(), legend.parentWidget().width() - 20)
    assert "CLIP pre-mark" in legend.text()


def test_a_node_of_four_seeds_shows_its_images_whole_beside_the_tree(qtbot: Any, open_window: Any,
                                                                    tmp_path: Path) -> None:
    folder = tmp_path / "four"
    with Project.create(folder) as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=4), tree_id="f", topics=["Animals"])
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=64)
    w, page = _page(open_window, folder)
    w.resize(1600, 1000)
    t = page.session.tree
    node = next(iter(t.nodes))
    assert all(len(t.prompts[p].image_ids) == 4 for p in t.nodes[node].prompt_ids)
    page.tree_view.select("node", node)
    page.tabs.setCurrentWidget(page.images)
    qtbot.wait(50)
    assert page.images.scroll.horizontalScrollBar().maximum() == 0  # every seed's tile in view
    assert page.tree_view.columnWidth(0) >= 200  # room for the topics beside the fixed columns
