"""The ProtoBias views in the real main window: the rating mode (keys 1-4 write one fidelity label
per image, blind to metrics and to which image is the prototype, notes, undo / redo), the triplet
view (each metric's two scores as bars, failures and ties marked, filters and sorting) and the
metric table page (a cell click shows those triplets; the chart shows the table's rates)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from workstation.evaluation.intervals import wilson_interval
from workstation.methods.protobias.labels import blind_sides
from workstation.methods.protobias.project_demo import add_demo
from workstation.store import Project

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "methods" / "protobias"))
from test_protobias_project import make_project

pytestmark = pytest.mark.gui
TASK = "protobias.fidelity"


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    with Project.create(tmp_path / "demo") as p:
        add_demo(p, small=True)  # 12 procedural triplets, two toy metrics, two simulated annotators
    return tmp_path / "demo"


@pytest.fixture
def hand_project(tmp_path: Path) -> Path:
    make_project(tmp_path / "hand").close()
    return tmp_path / "hand"


def open_page(open_window: Any, folder: Path, page: str, annotator: str = "ann") -> tuple[Any, Any]:
    w = open_window(folder, annotator=annotator)
    assert "ProtoBias" in [w.tabs.tabText(i) for i in range(w.tabs.count())]
    w.show_tab("ProtoBias")
    pb = w.protobias_page
    pb.show_page(page)
    return w, pb


def own_events(w: Any, who: str = "ann") -> list[Any]:
    return [e for e in w.spatial.project.labels.events(task=TASK) if e.annotator == who]


def visible_texts(root: QWidget) -> str:
    parts = [lab.text() + " " + lab.toolTip() for lab in root.findChildren(QLabel) if lab.isVisibleTo(root)]
    return "\n".join(parts)


# ---- rating mode ------------------------------------------------------------------------------
def test_keys_1_to_4_rate_each_image_blind_with_notes_undo_and_redo(qtbot: Any, open_window: Any,
                                                                     demo_project: Path) -> None:
    w, pb = open_page(open_window, demo_project, "rating")
    r = pb.rating
    data = pb.session.data
    queue = list(r.controller.queue)
    assert len(queue) == 24 and len(set(queue)) == 24  # every image of the 12 triplets once
    # blind order: each triplet's two images are shown left / right as the seeded coin flip says
    lefts = []
    for k in range(12):
        i = r.where[queue[2 * k]][0]
        left, right = blind_sides(str(data.item_id[i]), 0)
        assert (queue[2 * k], queue[2 * k + 1]) == tuple(
            str(data.sample_corr[i] if role == "corr" else data.sample_adv[i]) for role in (left, right))
        assert [r.where[queue[2 * k + j]][2] for j in (0, 1)] == ["A", "B"]
        lefts.append(left)
    assert 0 < lefts.count("corr") < 12  # both orders occur
    shown: list[Any] = []
    for side in ("A", "B"):
        orig = r.panes[side].show_image
        r.panes[side].show_image = (lambda path, *a, _o=orig, _s=side, **k: (shown.append((_s, path)), _o(path, *a, **k)))
    messages: list[str] = []
    w.spatial.message.connect(messages.append)

    focus = r.panes["A"].view
    focus.setFocus()
    for key in (Qt.Key_1, Qt.Key_2, Qt.Key_3, Qt.Key_4):
        qtbot.keyClick(focus, key)
    ev = own_events(w)
    assert [(e.target_kind, e.target_id, e.value, e.source) for e in ev] == \
        [("image", queue[k], str(k + 1), "ui") for k in range(4)]
    assert r.controller.current == queue[4] and r.current_side() == "A"
    assert r.position.text().startswith("triplet 3 of 12 · image A") and "4 of 24 images rated by ann" in r.position.text()
    # the images shown are the queue's, on their side; the highlighted pane is the one being rated
    i3 = r.where[queue[4]][0]
    left3, right3 = blind_sides(str(data.item_id[i3]), 0)
    assert shown[-2:] == [("A", data.image_path(i3, left3)), ("B", data.image_path(i3, right3))]
    assert "rate this one" in r.panes["A"].caption.text() and "rate this one" not in r.panes["B"].caption.text()
    # nothing on the page says which image is the prototype, nor any metric, knob or sample id
    text = visible_texts(r)
    for leak in ("I_corr", "I_adv", "toy_proto", "FAIL", "knob", "prototyp", str(data.knob[i3]), queue[4]):
        assert leak not in text, leak
    assert not re.search(r"\b(corr|adv)\b", text)

    # a note, then a key: the label carries the note
    qtbot.mouseClick(r.bar.notes.viewport(), Qt.LeftButton)
    qtbot.keyClicks(r.bar.notes, "main shape tilted")
    qtbot.keyClick(r.bar.notes, Qt.Key_2)  # typing a digit in the notes box writes it there, no label
    assert len(own_events(w)) == 4
    focus.setFocus()
    qtbot.keyClick(focus, Qt.Key_3)
    e = own_events(w)[-1]
    assert (e.target_id, e.value, e.notes) == (queue[4], "3", "main shape tilted2")

    # undo (Ctrl+Z) takes the rating back with a compensating event and goes back to that image
    qtbot.keyClick(focus, Qt.Key_Z, Qt.ControlModifier)
    e = own_events(w)[-1]
    assert (e.target_id, e.value) == (queue[4], None) and r.controller.current == queue[4]
    qtbot.keyClick(focus, Qt.Key_Z, Qt.ControlModifier)  # the note, saved as the box was left
    assert (own_events(w)[-1].target_id, own_events(w)[-1].notes) == (queue[4], None)
    qtbot.keyClick(focus, Qt.Key_Z, Qt.ControlModifier)
    assert own_events(w)[-1].target_id == queue[3] and own_events(w)[-1].value is None
    qtbot.keyClick(focus, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)  # redo
    assert (own_events(w)[-1].target_id, own_events(w)[-1].value) == (queue[3], "4")
    assert messages and all(s not in m for m in messages for s in queue)  # blind status messages
    assert any("image B of triplet 2" in m for m in messages)
    # the spatial labels were not touched by Ctrl+Z
    assert not w.spatial.project.labels.events(task="spatial.verdict")

    # the latest event per image counts; the metric page reads the new ratings when it is shown
    latest = {e.target_id: e.value for e in w.spatial.project.labels.latest(TASK, "ann")}
    assert latest == {queue[0]: "1", queue[1]: "2", queue[2]: "3", queue[3]: "4", queue[4]: None}
    assert pb.metrics.stale
    pb.show_page("metrics")
    qtbot.waitUntil(lambda: not pb.metrics.stale and pb.metrics.ready, timeout=10000)
    rt = pb.session.data.ratings
    # 4 ratings, the note saved as the box was left, the rating with it, two undos and a redo
    assert int((rt.annotator == "ann").sum()) == len(own_events(w)) == 10


def test_reopening_starts_at_the_first_image_not_rated(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    w, pb = open_page(open_window, demo_project, "rating")
    focus = pb.rating.panes["A"].view
    focus.setFocus()
    for _ in range(3):
        qtbot.keyClick(focus, Qt.Key_4)
    queue = list(pb.rating.controller.queue)
    w.close_project()
    w.open_project(demo_project)
    assert pb.rating.controller.queue == queue and pb.rating.controller.current == queue[3]


# ---- triplet view -----------------------------------------------------------------------------
def test_triplet_view_bars_failure_marks_filters_and_sorting(qtbot: Any, open_window: Any, hand_project: Path) -> None:
    _w, pb = open_page(open_window, hand_project, "triplets")
    t = pb.triplets
    assert [t.metric.itemData(i) for i in range(t.metric.count())] == ["mA@abc123", "vqa_yes@def456"]
    assert t.model.rows.tolist() == [0, 1, 2] and t.count.text() == "3 of 3 triplets"

    def select(view_row: int) -> list[Any]:
        t.table.selectRow(view_row)
        return t.bars.rows

    a, v = select(0)  # t1: mA 0.30 < 0.50 fails; vqa 0.8 > 0.2 is right
    assert (a.metric, a.failed, a.tie, a.raw_corr, a.raw_adv) == ("mA@abc123", True, False, 0.30, 0.50)
    assert a.sc == pytest.approx(0.25) and a.pa == pytest.approx(0.5) and a.verdict() == "FAIL: M(adv) > M(corr)"
    assert not v.failed and v.verdict() == "ranks I_corr higher"
    a, v = select(1)  # t2: a tie fails; vqa has no score on I_adv
    assert a.failed and a.tie and a.verdict() == "FAIL: tie, M(adv) = M(corr)"
    assert not v.valid and v.verdict() == "not scored on both images"
    assert "T: T of t2" in t.text.text() and "knob <b>color</b>" in t.meta.text() and "rock" in t.meta.text()
    assert "I_corr" in t.left_pane.caption.text() and "I_adv" in t.right_pane.caption.text()
    assert t.model.index(0, 8).data() == "FAIL" and t.model.index(1, 8).data() == "FAIL (tie)"

    t.outcome.setCurrentIndex(t.outcome.findData("failed"))
    assert t.model.rows.tolist() == [0, 1]
    t.metric.setCurrentIndex(1)  # vqa_yes: only t3 fails, t2 is not scored
    assert t.model.rows.tolist() == [2]
    t.outcome.setCurrentIndex(t.outcome.findData("not scored"))
    assert t.model.rows.tolist() == [1]
    t.outcome.setCurrentIndex(t.outcome.findData("all"))
    t.metric.setCurrentIndex(0)
    t.margin_min.setValue(0.5)  # mA's rescaled margins: -0.25, 0, 1
    assert t.model.rows.tolist() == [2]
    t.margin_min.setValue(-1.0)
    t.domain.setCurrentIndex(t.domain.findData("objects"))
    assert t.model.rows.tolist() == [2]
    t.domain.setCurrentIndex(0)
    t.knob.setCurrentIndex(t.knob.findData("count"))
    assert t.model.rows.tolist() == [0]
    t.knob.setCurrentIndex(0)
    t.table.sortByColumn(7, Qt.DescendingOrder)  # margin, largest first
    assert t.model.rows.tolist() == [2, 1, 0]
    t.table.sortByColumn(5, Qt.AscendingOrder)  # M(corr)
    assert t.model.rows.tolist() == [0, 1, 2]
    t.search.setText("t2")
    assert t.model.rows.tolist() == [1]
    t.search.clear()

    # blind: roles, knob, scores and outcome disappear from the view
    select(0)
    t.blind.setChecked(True)
    assert t.left_pane.caption.text() == "Image A" and t.right_pane.caption.text() == "Image B"
    assert "color" not in t.meta.text() and "rock" not in t.meta.text() and t.prompts.text() == ""
    assert not t.bars_scroll.isVisible() and t.bars.rows == []
    assert all(t.table.isColumnHidden(c) for c in (3, 5, 6, 7, 8)) and not t.metric.isVisible()
    t.blind.setChecked(False)
    assert t.bars_scroll.isVisible() and len(t.bars.rows) == 2 and not t.table.isColumnHidden(5)


# ---- metric table page ------------------------------------------------------------------------
def test_metric_table_cell_click_shows_those_triplets(qtbot: Any, open_window: Any, hand_project: Path) -> None:
    _w, pb = open_page(open_window, hand_project, "metrics")
    m = pb.metrics
    qtbot.waitUntil(lambda: m.ready, timeout=10000)  # the tables are computed on a worker thread
    keys = [(r["metric"], r["domain"]) for r in m.rows]
    assert keys == [("mA@abc123", "animals"), ("mA@abc123", "objects"), ("mA@abc123", "all"),
                    ("vqa_yes@def456", "animals"), ("vqa_yes@def456", "objects"), ("vqa_yes@def456", "all")]
    from ui.methods.protobias.metric_table import COLUMNS

    col = {k: c for c, (k, _h) in enumerate(COLUMNS)}
    assert m.table.item(0, col["failure_rate"]).text().startswith("1.000")
    assert m.table.item(2, col["failure_rate"]).text().startswith("0.667")
    assert m.table.item(2, col["incorrect_margin"]).text().startswith("0.125")
    assert m.table.item(5, col["n"]).text() == "2 (+1 unscored)"
    # the agreement with people carries its interval (Wilson over 3 triplets) and says n is small
    lo, hi = wilson_interval(1, 3)
    assert m.table.item(2, col["agreement"]).text() == f"0.333 [{lo:.2f}, {hi:.2f}] (n 3: fewer than 10)"
    # the chart's bars are the table's failure rates (animals, objects, all)
    x, h = m.chart.bars["mA@abc123"]
    assert h.tolist() == pytest.approx([1.0, 0.0, 2 / 3]) and len(x) == 3
    assert "alice × bob: κ_w 0.73 [" in m.kappa.text() and "fewer than 10 images" in m.kappa.text()

    def click(row: int, column: int) -> None:
        rect = m.table.visualItemRect(m.table.item(row, column))
        qtbot.mouseClick(m.table.viewport(), Qt.LeftButton, pos=rect.center())

    click(0, col["failure_rate"])  # mA × animals, failure rate: the failures there
    t = pb.triplets
    assert pb.tabs.currentWidget() is t
    assert (t.metric.currentData(), t.domain.currentData(), t.outcome.currentData()) == ("mA@abc123", "animals", "failed")
    assert t.model.rows.tolist() == [0, 1]
    pb.show_page("metrics")
    click(5, col["correct_margin"])  # vqa × all, correct margin: the triplets it ranks correctly
    assert (t.metric.currentData(), t.domain.currentData(), t.outcome.currentData()) == ("vqa_yes@def456", "", "correct")
    assert t.model.rows.tolist() == [0]
    pb.show_page("metrics")
    click(4, col["metric"])  # vqa × objects: every triplet of the domain
    assert t.outcome.currentData() == "all" and t.model.rows.tolist() == [2]
