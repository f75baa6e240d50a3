"""Another annotator on the same audit set (Audit → Annotator…): their own undo history, their own
place, their own "next unlabelled", re-checks only of their own labels; and the end of a queue
with items left leads back to them. Then a place kept per annotator when the project reopens.

The audit set: 33 samples and 6 re-checks (of the samples at 3, 6, 10, 15, 17 and 19 in the
queue), 39 items; annotator a1 labels items 1–15 with P, a2 labels with F."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ui import menus
from workstation.evaluation.audit_sets import self_agreement_report

pytestmark = pytest.mark.gui

TASK = "spatial.verdict"
# (final position, index of the re-checked sample among the 33)
RECHECKS = ((20, 2), (24, 5), (28, 9), (32, 14), (35, 16), (38, 18))
RECHECK_POS = {pos for pos, _ in RECHECKS}


def _key(qtbot: Any, w: Any, key: Any, modifier: Any = Qt.KeyboardModifier.NoModifier) -> None:
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, key, modifier)


def _switch(w: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Audit → Annotator…, answered with ``name``."""
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: name)
    menus.change_annotator(w)
    assert w.state.annotator == name


def _open_set(w: Any) -> tuple[int, list[str]]:
    s = w.spatial
    ids = [str(x) for x in s.dataset.samples.sample_id[:33].tolist()]
    aid = s.project.audit.create_set("two annotators", TASK, ids, {}, blind=True,
                                     rechecks=[(pos, ids[k]) for pos, k in RECHECKS])
    assert menus.start_audit_set(w, aid) == 39
    return aid, ids


def _events(w: Any, who: str) -> list[tuple[str, str | None, str | None, int | None]]:
    return [(e.target_id, e.value, e.source, e.audit_set_id) for e in w.state.project.labels.events(task=TASK)
            if e.annotator == who]


def _a1_labels_items_1_to_15(qtbot: Any, w: Any) -> None:
    c = w.spatial.controller
    w.labeling.auto.setChecked(True)
    for k in range(15):
        assert c.pos == k
        _key(qtbot, w, Qt.Key.Key_P)
    assert c.pos == 15 and w.labeling.bar.text() == "15 / 39 labelled"


def test_a2s_undo_and_redo_never_reach_a1s_labels(qtbot: Any, open_window: Any, sbuc_images_project: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="a1")
    w.state.set_annotator("a1")
    aid, ids = _open_set(w)
    c, bar = w.spatial.controller, w.labeling
    _a1_labels_items_1_to_15(qtbot, w)
    a1 = _events(w, "a1")
    assert a1 == [(t, "PASS", "ui", aid) for t in ids[:15]]

    _switch(w, monkeypatch, "a2")
    _key(qtbot, w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    _key(qtbot, w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert _events(w, "a2") == []  # no compensating event for a1's label, no a1 value in a2's name
    assert _events(w, "a1") == a1
    assert bar.yours.text() == "your label: —" and "PASS" not in bar.yours.text()
    assert "nothing to redo" in w.statusBar().currentMessage()

    # a2 judges the whole set with F: every re-check a2 meets pairs with a2's own first answer
    for _ in range(60):
        if c.progress()[0] == 39:
            break
        _key(qtbot, w, Qt.Key.Key_F)
    a2 = _events(w, "a2")
    assert {v for _t, v, _s, _a in a2} == {"FAIL"}, "a label by a2 carries a value a2 never gave"
    assert len(a2) == 39 and sum(src == "recheck" for _t, _v, src, _a in a2) == 6
    assert _events(w, "a1") == a1
    sa = self_agreement_report(w.state.project, c.scheme, aid).by_annotator["a2"]
    assert (sa.n_pairs, sa.percent) == (6, 1.0)


def test_each_annotator_has_their_own_place_next_unlabelled_and_rechecks(
        qtbot: Any, open_window: Any, sbuc_images_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="a1")
    w.state.set_annotator("a1")
    aid, ids = _open_set(w)
    c, bar = w.spatial.controller, w.labeling
    _a1_labels_items_1_to_15(qtbot, w)

    # a2 starts at a2's own first unlabelled item, not at a1's place
    _switch(w, monkeypatch, "a2")
    assert c.pos == 0 and c.current == ids[0]
    assert bar.bar.text() == "0 / 39 labelled" and bar.position.text() == "item 1 of 39"
    assert not c.is_recheck()
    for _ in range(3):
        _key(qtbot, w, Qt.Key.Key_F)
    assert c.pos == 3
    # each comes back to their own place
    _switch(w, monkeypatch, "a1")
    assert c.pos == 15 and bar.bar.text() == "15 / 39 labelled"
    _switch(w, monkeypatch, "a2")
    assert c.pos == 3 and bar.bar.text() == "3 / 39 labelled"

    # walking on without labelling: the only re-check a2 meets is of a sample a2 labelled (item 3)
    seen: list[tuple[int, bool]] = []
    for _ in range(60):
        seen.append((c.pos, c.is_recheck()))
        if c.core.at_end():
            break
        _key(qtbot, w, Qt.Key.Key_Right)
    rechecks_met = [p for p, rc in seen if rc]
    assert rechecks_met == [20], rechecks_met
    assert [p for p, _rc in seen] == [p for p in range(3, 39) if p not in RECHECK_POS - {20}]
    assert not {p for p, _rc in seen} & (RECHECK_POS - {20})

    # the end of the queue: how many are labelled, and the way back to the rest
    _key(qtbot, w, Qt.Key.Key_Right)
    assert bar.end_note.isVisible()
    assert "3 of 39 labelled" in bar.end_note.text() and "Next unlabelled" in bar.end_note.text()
    assert "3 of 39 labelled" in w.statusBar().currentMessage()
    assert bar.next_unlabelled_button.isVisible() and bar.next_unlabelled_button.isEnabled()
    _key(qtbot, w, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)  # Next unlabelled
    assert c.pos == 3 and not bar.end_note.isVisible()
    _key(qtbot, w, Qt.Key.Key_F)  # labels item 4, goes on to item 5
    qtbot.mouseClick(bar.next_unlabelled_button, Qt.MouseButton.LeftButton)
    assert c.pos == 5  # the next one after item 5 that a2 has not labelled
    # a1's labels and place are untouched by all of it
    assert [t for t, _v, _s, _a in _events(w, "a1")] == ids[:15]
    _switch(w, monkeypatch, "a1")
    assert c.pos == 15


def test_next_unlabelled_says_when_every_item_is_labelled(qtbot: Any, open_window: Any,
                                                          sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project, annotator="a1")
    w.state.set_annotator("a1")
    s = w.spatial
    ids = [str(x) for x in s.dataset.samples.sample_id[:3].tolist()]
    aid = s.project.audit.create_set("three", TASK, ids, {}, blind=True)
    menus.start_audit_set(w, aid)
    bar = w.labeling
    for _ in range(3):
        _key(qtbot, w, Qt.Key.Key_P)
    assert bar.end_note.isVisible() and bar.end_note.text().endswith("3 of 3 labelled")
    assert "Next unlabelled" not in bar.end_note.text() and not bar.next_unlabelled_button.isEnabled()
    assert w.statusBar().currentMessage().startswith("End of the queue: 3 of 3 labelled.")
    _key(qtbot, w, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    assert w.statusBar().currentMessage() == "every item of this queue is labelled"


def test_a_reopened_project_puts_each_annotator_back_at_their_own_place(
        qtbot: Any, open_window: Any, sbuc_images_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="a1")
    w.state.set_annotator("a1")
    aid, ids = _open_set(w)
    c = w.spatial.controller
    _a1_labels_items_1_to_15(qtbot, w)
    _key(qtbot, w, Qt.Key.Key_Left)  # a1's place: item 15 (the first unlabelled is item 16)
    _switch(w, monkeypatch, "a2")
    for _ in range(4):
        _key(qtbot, w, Qt.Key.Key_F)
    _key(qtbot, w, Qt.Key.Key_Left)
    _key(qtbot, w, Qt.Key.Key_Left)
    assert c.pos == 2  # a2's place: item 3 (the first unlabelled is item 5)
    w.close()

    # a2 was the annotator last: a2's place; then a1 takes over and is back at a1's
    w2 = open_window(sbuc_images_project, annotator="a2")
    c2 = w2.spatial.controller
    assert w2.state.annotator == "a2" and c2.audit is not None and c2.audit.audit_set_id == aid
    assert c2.pos == 2 and not c2.undo_stack  # the history is not kept across an open
    _switch(w2, monkeypatch, "a1")
    assert c2.pos == 14
    # someone new starts at their own first unlabelled item
    _switch(w2, monkeypatch, "a3")
    assert c2.pos == 0 and w2.labeling.bar.text() == "0 / 39 labelled"
    w2.close()
    w3 = open_window(sbuc_images_project, annotator="a3")
    assert w3.spatial.controller.pos == 0
