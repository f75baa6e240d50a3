"""Audit → Adjudicate…: an adjudicator sees the items the raters disagree on (their labels
without names), records a final label with the method's key and a note, and the spatial
calibration's human labels follow under the `adjudicated` rule. Anyone else is told who the
adjudicators are; from a blind audit the window is reached only through a recorded pause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QLineEdit, QPushButton, QTableWidget

from ui import menus
from workstation.evaluation.raters import set_adjudicators
from workstation.evaluation.selection import LabelSelection
from workstation.methods.spatial.types import VERDICT_CODE

pytestmark = pytest.mark.gui

TASK = "spatial.verdict"


def _switch(w: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: name)
    menus.change_annotator(w)
    assert w.state.annotator == name


def _two_raters(w: Any) -> tuple[int, list[str]]:
    """An overlap set of four samples, both raters on each; they disagree on the first two."""
    s = w.spatial
    p = s.project
    ids = [str(x) for x in s.dataset.samples.sample_id[:4].tolist()]
    aid = p.audit.create_set("two raters", TASK, ids, {}, blind=True, assignment={t: ("r1", "r2") for t in ids})
    for k, t in enumerate(ids):
        p.labels.add(TASK, "sample", t, "r1", "PASS", audit_set_id=aid)
        p.labels.add(TASK, "sample", t, "r2", "FAIL" if k < 2 else "PASS", audit_set_id=aid)
    set_adjudicators(p, ["lead"])
    s.set_label_selection(LabelSelection(sets=(aid,), free=False, rule="adjudicated"))
    return aid, ids


def _texts(widget: Any) -> list[str]:
    out = [x.text() for x in widget.findChildren(QLabel) + widget.findChildren(QPushButton)]
    t = widget.findChild(QTableWidget, "adjudicationTable")
    out += [t.item(r, k).text() for r in range(t.rowCount()) for k in range(t.columnCount())]
    return out


def test_an_adjudicator_records_a_final_label_that_reaches_the_calibration(
        qtbot: Any, open_window: Any, sbuc_images_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="r1")
    _switch(w, monkeypatch, "r1")
    aid, ids = _two_raters(w)
    s = w.spatial
    row = 0  # ids[0] is the first sample
    assert s.calib_human[row] == -1  # one PASS, one FAIL: disputed under the majority

    # a rater is told who adjudicates, and gets no window
    menus._sync_adjudicate_action(w)
    assert not w.adjudicate_action.isEnabled()
    assert w.adjudicate_action.text() == "Adjudicate… (only an adjudicator records final labels; this project's: lead)"
    assert menus.open_adjudication(w) is None

    _switch(w, monkeypatch, "lead")
    menus._sync_adjudicate_action(w)
    assert w.adjudicate_action.isEnabled() and w.adjudicate_action.text() == "Adjudicate…"
    win = menus.open_adjudication(w)
    assert win is not None
    qtbot.waitExposed(win)
    assert win.count.text() == "2 items open for adjudication"
    table = win.findChild(QTableWidget, "adjudicationTable")
    assert [table.item(r, 1).text() for r in range(2)] == ["FAIL ×1 · PASS ×1"] * 2
    assert table.item(0, 2).text() == "raters disagree"
    assert not any("r1" in t or "r2" in t for t in _texts(win))  # no rater's name
    c = s.controller
    assert c.current == ids[0]  # the judging page shows the item chosen

    # the judging page's own keys record nothing while the window drives it
    n = len(s.project.labels.events(task=TASK))
    c.record("PASS")
    assert len(s.project.labels.events(task=TASK)) == n

    # a final label needs a note
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=3000)
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_F)
    assert win.status.text() == "a note is needed: why this is the final label"
    assert len(s.project.labels.events(task=TASK)) == n
    qtbot.keyClicks(win.findChild(QLineEdit, "adjudicationNote"), "the box is left of the cup")
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_F)
    ev = s.project.labels.events(task=TASK, target_id=ids[0])[-1]
    assert (ev.annotator, ev.value, ev.source, ev.notes) == ("lead", "FAIL", "adjudication", "the box is left of the cup")
    assert win.count.text() == "1 item open for adjudication" and c.current == ids[1]  # the queue moved on
    assert s.calib_human[row] == VERDICT_CODE["FAIL"]

    win.close()
    assert c.refuse_writes == "" and not c.core.page_blind

    # a blind audit opened while the window is open closes it, and the page records again
    win = menus.open_adjudication(w)
    qtbot.waitUntil(lambda: c.refuse_writes != "", timeout=3000)
    blind = s.project.audit.create_set("blind", TASK, [str(x) for x in s.dataset.samples.sample_id[4:10].tolist()],
                                       {}, blind=True)
    assert menus.start_audit_set(w, blind) == 6
    assert not win.isVisible() and c.refuse_writes == "" and c.record("PASS")


def test_from_a_blind_audit_the_window_opens_only_through_a_pause(
        qtbot: Any, open_window: Any, sbuc_images_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="lead")
    _switch(w, monkeypatch, "lead")
    aid, ids = _two_raters(w)
    s = w.spatial
    blind = s.project.audit.create_set("blind", TASK, [str(x) for x in s.dataset.samples.sample_id[4:10].tolist()],
                                       {}, blind=True)
    assert menus.start_audit_set(w, blind) == 6
    asked: list[Any] = []
    monkeypatch.setattr("ui.widgets.audit_pause.ask", lambda *a: asked.append(a) or False)
    assert menus.open_adjudication(w) is None and asked  # stays in the blind audit
    assert s.controller.audit is not None and s.controller.audit.audit_set_id == blind
    monkeypatch.setattr("ui.widgets.audit_pause.ask", lambda *a: True)
    win = menus.open_adjudication(w)
    assert win is not None and s.controller.audit is None
    assert [r["reason"] for r in s.project.audit.pauses(blind)] == ["Audit → Adjudicate…"]
    win.close()
