"""The MetaLogic page in the real main window, on the method's own small demo project (20 image
pairs drawn procedurally with injected misalignments, detected by the scene detector): a heatmap
cell lists exactly its pairs, an omission pair is marked on both images, keys A / M / U write one
pair label each (undo, notes), the agreement follows, blind mode hides every computed outcome,
and the threshold sliders re-evaluate as the core says."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QWidget

from workstation.methods import get_method
from workstation.methods.metalogic.laws import DIMENSIONS, LAWS
from workstation.methods.metalogic.results import MISALIGNED, OMISSION, UNDECIDABLE, VERDICTS
from workstation.store import Project

pytestmark = pytest.mark.gui
METHOD = get_method("metalogic")
TASK = "metalogic.pair"
WARNING = QColor("#ff6d00")


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ml_views") / "demo"
    with Project.create(folder) as p:
        METHOD.build_demo(p, small=True, workers=1)  # 20 suite pairs, one seed, 256-pixel images
    return folder


@pytest.fixture
def demo_project(tmp_path: Path, demo_template: Path) -> Path:
    dst = tmp_path / "demo"
    shutil.copytree(demo_template, dst)
    return dst


def open_page(open_window: Any, folder: Path, annotator: str = "ann") -> tuple[Any, Any]:
    w = open_window(folder, annotator=annotator)
    assert "MetaLogic" in [w.tabs.tabText(i) for i in range(w.tabs.count())]
    w.show_tab("MetaLogic")
    page = w.metalogic_page
    assert page.session.data is not None and len(page.session.data) == 20
    return w, page


def truth(folder_project: Any, sample_id: str) -> dict[str, Any]:
    return folder_project.samples.truth()[sample_id]


def select_pair(qtbot: Any, page: Any, pair_id: str) -> None:
    page.show_all()
    row = page.model.pair_ids().index(pair_id)
    rect = page.list.visualRect(page.model.index(row, 0))
    page.list.scrollTo(page.model.index(row, 0))
    rect = page.list.visualRect(page.model.index(row, 0))
    qtbot.mouseClick(page.list.viewport(), Qt.LeftButton, pos=rect.center())
    assert page.controller.current == pair_id


def pen_colours(pane: Any) -> list[str]:
    return [it.pen().color().name() for it in pane.box_items]


def visible_texts(root: QWidget) -> str:
    return "\n".join(lab.text() + " " + lab.toolTip() for lab in root.findChildren(QLabel) if lab.isVisibleTo(root))


def iou(a: Any, b: Any) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


# ---- heatmap -> list -------------------------------------------------------------------------------
def test_a_heatmap_cell_click_lists_exactly_its_pairs(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    _w, page = open_page(open_window, demo_project)
    data, res = page.session.data, page.session.results
    heat = page.heat
    assert heat.rowCount() == len(LAWS) and heat.dims == ["none", "x", "y"]
    seen = 0
    for r, law in enumerate(LAWS):
        for c, dim in enumerate(heat.dims):
            idx = heat.index(r, c)
            page.heat_view.scrollTo(idx)
            qtbot.mouseClick(page.heat_view.viewport(), Qt.LeftButton, pos=page.heat_view.visualRect(idx).center())
            want = [str(x) for x in data.pair_id[(res.law == LAWS.index(law)) & (res.dimension == DIMENSIONS.index(dim))]]
            assert page.model.pair_ids() == want, (law, dim)
            assert page.controller.queue == want  # the cell's pairs are the judging queue
            assert f"{len(want)}</b> pairs of" in page.filter_label.text()
            # the cell shows the paper's rate (every pair decided) over exactly these rows, the
            # abstention-aware rate over the decided ones in its tooltip
            sel = np.isin(data.pair_id, want)
            dec = int((sel & (res.verdict != UNDECIDABLE)).sum())
            mis = int((sel & (res.verdict == MISALIGNED)).sum())
            pmis = int((sel & (res.paper_verdict == MISALIGNED)).sum())
            shown = heat.data(idx)
            assert shown == (f"{round(100 * pmis / len(want))}% · {len(want)}" if want else "–")
            tip = heat.data(idx, Qt.ToolTipRole)
            assert f"paper's rule (every pair decided) {pmis} of {len(want)} pairs" in tip
            assert f"abstention-aware: {mis} of {dec} decided pairs misaligned" in tip
            seen += len(want)
    assert seen == 20  # every pair sits in one cell
    qtbot.mouseClick(page.all_button, Qt.LeftButton)
    assert page.model.pair_ids() == [str(x) for x in data.pair_id]
    # sorting by a header reorders the list, and the judging queue with it
    page.list.sortByColumn(page.model.column_of("outcome"), Qt.AscendingOrder)
    order = np.argsort(res.verdict, kind="stable")
    assert page.model.pair_ids() == [str(x) for x in data.pair_id[order]] == page.controller.queue


# ---- the pair view ----------------------------------------------------------------------------------
def test_an_omission_is_marked_on_both_images(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    w, page = open_page(open_window, demo_project)
    data, res = page.session.data, page.session.results
    om = np.flatnonzero((res.verdict == MISALIGNED) & (res.kind == OMISSION))
    assert len(om) >= 2
    p = w.spatial.project
    for i in om.tolist():
        name = str(res.entity[i, int(res.slot[i])])
        missing_side = int(res.side[i])  # the image without it
        has_side = 1 - missing_side
        sid = (data.sample_a[i], data.sample_b[i])
        t_has, t_missing = truth(p, str(sid[has_side])), truth(p, str(sid[missing_side]))
        assert name in t_has["boxes"] and name not in t_missing["boxes"]  # the drawn truth agrees
        select_pair(qtbot, page, str(data.pair_id[i]))
        panes = (page.pair.pane_a, page.pair.pane_b)
        # the image that shows it: its box in the warning colour, where the entity was drawn
        warn = [it for it in panes[has_side].box_items if it.pen().color() == WARNING]
        assert warn, "the entity is not marked in the image that has it"
        rects = [it.rect() for it in warn]
        drawn = t_has["boxes"][name][0]
        assert max(iou((r.left(), r.top(), r.right(), r.bottom()), drawn) for r in rects) > 0.5
        # the image without it: a dashed warning box where the other image has it, and its caption
        # names what is missing
        ghost = [it for it in panes[missing_side].box_items if it.pen().color() == WARNING]
        assert ghost and all(it.pen().style() == Qt.DashLine for it in ghost)
        assert all(it.pen().style() == Qt.SolidLine for it in warn)
        assert sorted((g.rect().getCoords()) for g in ghost) == sorted(r.getCoords() for r in rects)
        assert f"missing here: {name}" in panes[missing_side].caption.text()
        assert "missing here" not in panes[has_side].caption.text()
        # prompts above their images, the outcome in words
        assert str(data.text_a[i]) in panes[0].caption.text() and str(data.text_b[i]) in panes[1].caption.text()
        assert f"omission: {name} missing in {'AB'[missing_side]}" in page.pair.outcome.text()


# ---- judgements ----------------------------------------------------------------------------------------
def test_keys_write_pair_labels_with_undo_notes_and_agreement(qtbot: Any, open_window: Any,
                                                             demo_project: Path) -> None:
    w, page = open_page(open_window, demo_project)
    data, res = page.session.data, page.session.results
    ids = [str(x) for x in data.pair_id]
    select_pair(qtbot, page, ids[0])
    focus = page.list
    focus.setFocus()
    # the computed outcomes of the first three pairs; the human says M, A, U
    for key in (Qt.Key_M, Qt.Key_A, Qt.Key_U):
        qtbot.keyClick(focus, key)
    ev = [e for e in w.spatial.project.labels.events(task=TASK) if e.annotator == "ann"]
    assert [(e.task, e.target_kind, e.target_id, e.value, e.source) for e in ev] == [
        (TASK, "pair", ids[0], "MISALIGNED", "ui"), (TASK, "pair", ids[1], "ALIGNED", "ui"),
        (TASK, "pair", ids[2], "UNDECIDABLE", "ui")]
    assert page.controller.current == ids[3]  # auto-advance
    human = np.array([1, 0, 2])
    comp = res.verdict[:3].astype(int)
    st = page.agreement_stats()
    assert st["n"] == 3 and st["agreement"] == pytest.approx(float((human == comp).mean()))
    assert f"{100 * (human == comp).mean():.0f}%</b> raw" in page.agreement.text()
    assert "3 of 20 pairs" in page.progress.text()
    col = page.model.column_of("human")
    assert [page.model.data(page.model.index(k, col)) for k in range(4)] == ["MISALIGNED", "ALIGNED", "UNDECIDABLE", ""]
    # undo: a compensating event puts the third pair back to unlabelled
    qtbot.keyClick(focus, Qt.Key_Z, Qt.ControlModifier)
    latest = {e.target_id: e.value for e in w.spatial.project.labels.latest(TASK, "ann")}
    assert latest[ids[2]] is None and latest[ids[0]] == "MISALIGNED"
    assert page.agreement_stats()["n"] == 2
    assert page.model.data(page.model.index(2, col)) == ""
    # notes are saved with the value
    page.bar.auto.setChecked(False)
    page.bar.notes.setPlainText("dog half hidden")
    qtbot.keyClick(focus, Qt.Key_A)
    e = w.spatial.project.labels.events(task=TASK)[-1]
    assert (e.target_id, e.value, e.notes) == (ids[2], "ALIGNED", "dog half hidden")
    # the labels are in the project after a reopen
    w.spatial.project.close()
    with Project.open(demo_project, read_only=True) as p:
        latest = {e.target_id: e.value for e in p.labels.latest(TASK, "ann")}
    assert latest == {ids[0]: "MISALIGNED", ids[1]: "ALIGNED", ids[2]: "ALIGNED"}


# ---- blind mode ----------------------------------------------------------------------------------------
def test_blind_mode_hides_every_computed_outcome(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    w, page = open_page(open_window, demo_project)
    data, res = page.session.data, page.session.results
    i = int(np.flatnonzero((res.verdict == MISALIGNED) & (res.kind == OMISSION))[0])
    select_pair(qtbot, page, str(data.pair_id[i]))
    assert "outcome" in [c[0] for c in page.model.columns]
    assert WARNING.name() in pen_colours(page.pair.pane_a) + pen_colours(page.pair.pane_b)
    qtbot.mouseClick(page.blind_box, Qt.LeftButton)
    assert page.blind
    assert not any(s.isEnabled() for s in page.sliders.values())  # no outcome to tune while blind
    keys = [c[0] for c in page.model.columns]
    assert not {"outcome", "kind", "detail", "conf"} & set(keys)
    headers = [page.model.headerData(k, Qt.Horizontal) for k in range(page.model.columnCount())]
    assert "outcome" not in headers
    # the heatmap shows how many pairs each cell holds, no rate, no published rate
    cells = [page.heat.data(page.heat.index(r, c)) for r in range(page.heat.rowCount())
             for c in range(page.heat.columnCount())]
    assert all(x == "–" or x.endswith(" pairs") for x in cells) and not any("%" in x for x in cells)
    assert sum(int(x.split()[0]) for x in cells if x != "–") == 20
    assert all("%" not in str(page.heat.headerData(r, Qt.Vertical)) for r in range(page.heat.rowCount()))
    # the pair: the same image, no marks, no outcome
    assert page.controller.current == str(data.pair_id[i])
    assert WARNING.name() not in pen_colours(page.pair.pane_a) + pen_colours(page.pair.pane_b)
    text = visible_texts(page)
    for word in ("MISALIGNED", "ALIGNED", "omission", "missing here", "κ"):
        assert word not in text, word
    assert "blind" in page.pair.outcome.text()
    # judging still works, and nothing computed appears after the key
    page.list.setFocus()
    qtbot.keyClick(page.list, Qt.Key_U)
    assert w.spatial.project.labels.events(task=TASK)[-1].value == "UNDECIDABLE"
    assert "κ" not in visible_texts(page)
    qtbot.mouseClick(page.blind_box, Qt.LeftButton)
    assert "outcome" in [c[0] for c in page.model.columns] and "κ" in page.agreement.text()


# ---- sliders ------------------------------------------------------------------------------------------
def test_sliders_reevaluate_as_the_core_predicts(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    w, page = open_page(open_window, demo_project)
    data = page.session.data
    base = METHOD.evaluate(data, METHOD.default_config())
    assert page.session.results.counts() == base.counts()
    cfg = METHOD.default_config().replace(near_band=0.2)
    want = METHOD.evaluate(data, cfg)
    assert want.counts()[2] > base.counts()[2]  # a wider band abstains on more pairs
    page.sliders["near_band"].slider.setValue(20)
    qtbot.waitUntil(lambda: page.session.config.near_band == pytest.approx(0.2), timeout=3000)
    res = page.session.results
    assert res.counts() == want.counts()
    assert np.array_equal(res.verdict, want.verdict)
    a, m, u = want.counts()
    assert f"<b>{u}</b> UNDECIDABLE" in page.summary.text() and f"<b>{a}</b> ALIGNED" in page.summary.text()
    hm = page.heat.hm
    assert int(hm["undecidable"].sum()) == u and int(hm["decided"].sum()) == a + m
    # the list follows: its outcome column is the new verdicts
    col = page.model.column_of("outcome")
    shown = [page.model.data(page.model.index(k, col)) for k in range(page.model.rowCount())]
    assert shown == [VERDICTS[v] for v in want.verdict[page.model.rows]]
    # two moves in quick succession: the newest wins, whichever evaluation returns first
    page.sliders["near_band"].slider.setValue(10)
    page.apply_sliders()
    page.sliders["near_band"].slider.setValue(20)
    page.apply_sliders()
    qtbot.waitUntil(lambda: not page.evaluating, timeout=3000)
    qtbot.wait(100)
    assert page.session.config.near_band == pytest.approx(0.2)
    assert np.array_equal(page.session.results.verdict, want.verdict)
    # the axis margin too; storing keeps the live parameters as a version
    page.sliders["axis_margin"].slider.setValue(30)
    qtbot.waitUntil(lambda: page.session.config.axis_margin == pytest.approx(0.3), timeout=3000)
    assert page.session.results.counts() == METHOD.evaluate(data, cfg.replace(axis_margin=0.3)).counts()
    qtbot.mouseClick(page.store_button, Qt.LeftButton)
    eid = w.spatial.project.evaluations.active_id("metalogic")
    assert page.session.eval_id == eid
    assert w.spatial.project.evaluations.get(eid)["content_hash"] == cfg.replace(axis_margin=0.3).content_hash()


def test_duplication_positional_and_undecidable_marks(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    w, page = open_page(open_window, demo_project)
    data, res = page.session.data, page.session.results
    p = w.spatial.project
    panes = (page.pair.pane_a, page.pair.pane_b)
    dup = np.flatnonzero((res.verdict == MISALIGNED) & (res.kind == 2))
    pos = np.flatnonzero((res.verdict == MISALIGNED) & (res.kind == 3))
    assert len(dup) and len(pos)
    for i in dup.tolist():
        name = str(res.entity[i, int(res.slot[i])])
        select_pair(qtbot, page, str(data.pair_id[i]))
        for side, sid in enumerate((data.sample_a[i], data.sample_b[i])):
            drawn = truth(p, str(sid))["boxes"][name]
            warn = [it for it in panes[side].box_items if it.pen().color() == WARNING]
            assert len(warn) == len(drawn) == int(res.count[side, int(res.slot[i]), i])  # every instance marked
            assert f"{name} × {len(drawn)} here" in panes[side].caption.text()
    for i in pos.tolist():
        names = {str(res.entity[i, int(res.slot[i])]), str(res.entity[i, int(res.slot2[i])])}
        select_pair(qtbot, page, str(data.pair_id[i]))
        for side, sid in enumerate((data.sample_a[i], data.sample_b[i])):
            t = truth(p, str(sid))["boxes"]
            warn = [it.rect() for it in panes[side].box_items if it.pen().color() == WARNING]
            assert len(warn) == 2  # the two entities whose order differs, in both images
            for nm in names:  # each marked box is where that entity was drawn
                assert max(iou((r.left(), r.top(), r.right(), r.bottom()), t[nm][0]) for r in warn) > 0.5
            assert "order of" in panes[side].caption.text()
    # a wider band around the threshold: a pair abstains, its doubtful entity dashed in the doubt colour
    page.sliders["near_band"].slider.setValue(20)
    qtbot.waitUntil(lambda: page.session.config.near_band == pytest.approx(0.2), timeout=3000)
    res = page.session.results
    i = int(np.flatnonzero(res.verdict == UNDECIDABLE)[0])
    select_pair(qtbot, page, str(data.pair_id[i]))
    doubt = [it for pane in panes for it in pane.box_items if it.pen().color() == QColor("#ffd54f")]
    assert doubt and all(it.pen().style() == Qt.DashLine for it in doubt)
    assert "UNDECIDABLE" in page.pair.outcome.text() and res.detail_text(i) in page.pair.outcome.text()


# ---- the headline and a project without MetaLogic data ----------------------------------------------
def test_the_page_headlines_the_papers_rate_and_names_the_abstention_aware_one(qtbot: Any, open_window: Any,
                                                                                 demo_project: Path) -> None:
    from workstation.methods.metalogic.metrics import rate_rows

    _w, page = open_page(open_window, demo_project)
    res = page.session.results
    assert res.paper_verdict is not None and (res.paper_verdict != UNDECIDABLE).all()
    (row,) = rate_rows(res)
    text = page.summary.text()
    assert (f"misalignment rate (the paper's rule, every pair decided) <b>{100 * row['paper_rate']:.1f}% "
            f"[{100 * row['paper_rate_lo']:.1f}, {100 * row['paper_rate_hi']:.1f}]</b> over 20 pairs") in text
    assert f"abstention-aware {100 * row['decided_rate']:.1f}% [" in text and "coverage" in text
    page.set_blind(True)
    assert "paper's rule" not in page.summary.text()  # blind: nothing computed shows


def test_the_metalogic_tab_of_a_project_without_its_data_says_so_without_a_judge_bar(
        qtbot: Any, open_window: Any, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    w.open_method("metalogic")
    page = w.metalogic_page
    qtbot.waitUntil(lambda: page.body.currentIndex() == 1, timeout=5000)
    assert page.empty.isVisibleTo(page) and not page.bar.isVisibleTo(page)
    assert "no MetaLogic pairs" in page.empty.text() and "suite --method metalogic" in page.empty.text()
    shown = visible_texts(page)
    assert "no items" not in shown and "labelled" not in shown
    assert not page.store_button.isEnabled()
