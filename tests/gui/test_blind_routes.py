"""Spatial's Browse is no way out of a blind audit, and a Grid double-click
during one raises nothing.

During a blind spatial audit the auditor shows Browse (Ctrl+1), types the current sample's id
in the search, and double-clicks its row, presses Enter on it or clicks "Review these ▶": the
audit stays open and the sample is shown in its blind view. A sample outside the audit asks
"Pause the blind audit to show this?": Stay in audit shows nothing; Pause records the pause, and
the samples shown unblinded until the audit is reopened are recorded as seen unblinded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ui.widgets import audit_pause
from .conftest import blind_queue

pytestmark = pytest.mark.gui


class Answers:
    """Answers the pause question in turn (`answers`: True is Pause; none left: Stay in audit)
    and keeps the questions asked (`asked`: what, audit set, annotator)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int, str]] = []
        self.answers: list[bool] = []

    def __call__(self, _parent: Any, what: str, aid: int, who: str) -> bool:
        self.asked.append((what, aid, who))
        return self.answers.pop(0) if self.answers else False


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> Answers:
    a = Answers()
    monkeypatch.setattr(audit_pause, "ask", a)
    return a


def _blind(w: Any, qtbot: Any) -> tuple[Any, int, list[int]]:
    st = w.spatial
    w.state.set_annotator("alice")
    rows = [0, 2, 4]
    aid = blind_queue(st, rows)
    w.method_views["spatial"].show_judging(w)
    QApplication.processEvents()
    assert st.controller.audit is not None and st.controller.audit.blind
    return st, aid, rows


def _search(qtbot: Any, w: Any, sample_id: str) -> None:
    w.tab_actions[("spatial", 0)].trigger()
    assert w.tabs.currentWidget() is w.browser
    f = w.browser.filters.text
    f.clear()
    qtbot.keyClicks(f, sample_id)
    qtbot.waitUntil(lambda: w.browser.model.total == 1, timeout=5000)


def _still_blind(w: Any, st: Any, aid: int, row: int) -> None:
    c = st.controller
    assert c.audit is not None and c.audit.audit_set_id == aid, "the audit was left"
    assert c.current_index == row and c.on_queue()
    assert w.tabs.currentWidget() is w.review
    assert w.viewer.left.card.chip.text() == "BLIND"
    assert w.counts_label.text() == ""


def test_browse_search_and_open_of_the_current_sample_stays_in_the_blind_audit(
        qtbot: Any, open_window: Any, png_project: Path, answers: Answers) -> None:
    w = open_window(png_project)
    st, aid, rows = _blind(w, qtbot)
    c = st.controller
    c.go(1)
    cur = st.dataset.samples.sample_id[rows[1]]
    table = w.browser.table
    for how in ("double-click", "Enter", "Review these"):
        _search(qtbot, w, str(cur))
        ix = w.browser.model.index(0, 0)
        table.setCurrentIndex(ix)
        if how == "double-click":
            rect = table.visualRect(ix)
            qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())
            qtbot.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())
        elif how == "Enter":
            table.setFocus()
            qtbot.keyClick(table, Qt.Key_Return)
        else:
            qtbot.mouseClick(w.browser.review_button, Qt.LeftButton)
        QApplication.processEvents()
        _still_blind(w, st, aid, rows[1])
    assert answers.asked == [], "a sample of the audit's queue needs no pause"
    assert w.state.project.audit.pauses(aid) == []


def test_opening_a_sample_outside_the_audit_asks_to_pause_and_records_it(
        qtbot: Any, open_window: Any, png_project: Path, answers: Answers) -> None:
    w = open_window(png_project)
    st, aid, rows = _blind(w, qtbot)
    c = st.controller
    views = w.method_views["spatial"]
    outside = 1
    sid = str(st.dataset.samples.sample_id[outside])
    # Stay in audit: nothing is shown, the audit stays
    answers.answers.append(False)
    views.review_from_browse(w, outside)
    assert len(answers.asked) == 1 and answers.asked[0][1:] == (aid, "alice")
    assert c.audit is not None and c.audit.audit_set_id == aid and c.current_index != outside
    assert w.state.project.audit.pauses(aid) == []
    # Pause: recorded, the sample shown unblinded and marked so; the next one shown too
    answers.answers.append(True)
    views.review_from_browse(w, outside)
    assert c.audit is None and c.current_index == outside and w.viewer.left.card.chip.text() != "BLIND"
    c.next()
    (pause,) = w.state.project.audit.pauses(aid)
    assert pause["annotator"] == "alice" and pause["ended_at"] is None and "Browse" in pause["reason"]
    shown = {sid, str(st.dataset.samples.sample_id[c.current_index])}
    assert set(pause["unblinded"]) == shown
    # reopening the audit ends the pause; what it shows then is not recorded
    from ui import menus

    menus.start_audit_set(w, aid)  # as Audit → Open audit set does
    (pause,) = w.state.project.audit.pauses(aid)
    assert pause["ended_at"] is not None
    c.next()
    assert set(w.state.project.audit.pauses(aid)[0]["unblinded"]) == shown


def test_grid_double_click_during_a_blind_audit_raises_nothing_and_stays_blind(
        qtbot: Any, open_window: Any, png_project: Path, answers: Answers) -> None:
    w = open_window(png_project)
    st, aid, rows = _blind(w, qtbot)
    st.controller.go(2)
    w.tab_actions[("spatial", 0)].trigger()
    qtbot.mouseClick(w.browser.view_buttons.button(1), Qt.LeftButton)
    grid = w.browser.grid
    qtbot.waitExposed(grid)
    from ui.methods.spatial.sample_table import ROW_ROLE

    m = grid.model()
    i = next(k for k in range(m.rowCount()) if m.index(k, 0).data(ROW_ROLE) == rows[2])
    rect = grid.visualRect(m.index(i, 0))
    qtbot.mouseClick(grid.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(grid.viewport(), Qt.LeftButton, pos=rect.center())
    QApplication.processEvents()
    _still_blind(w, st, aid, rows[2])
    assert answers.asked == []
    # a tile outside the audit: asked once (Stay in audit), nothing raised, still blind
    w.tab_actions[("spatial", 0)].trigger()
    j = next(k for k in range(m.rowCount()) if m.index(k, 0).data(ROW_ROLE) not in rows)
    rect = grid.visualRect(m.index(j, 0))
    qtbot.mouseClick(grid.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(grid.viewport(), Qt.LeftButton, pos=rect.center())
    QApplication.processEvents()
    assert len(answers.asked) == 1
    c = st.controller
    assert c.audit is not None and c.audit.audit_set_id == aid
