"""The methods' keyboard judgement bar: keys commit label events of the scheme's task, notes,
undo / redo, auto-advance off, re-checks that show nothing of the first answer, export, and a
write that fails keeping the item."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from ui.state import AppState
from ui.widgets.judge import JudgeBar, JudgeController, csv_cell, install_shortcuts
from workstation.evaluation.base import LabelScheme
from workstation.store import LabelsRepo

SCHEME = LabelScheme(task="test.pair", target="pair", values=("ALIGNED", "MISALIGNED", "UNDECIDABLE"),
                     keys=("A", "M", "U"), titles=("aligned", "misaligned", "undecidable"), title="Same content?")


@pytest.fixture
def page(qtbot: Any, png_project: Path) -> tuple[QWidget, JudgeController, JudgeBar, AppState]:
    st = AppState()
    st.open_project(png_project)
    st.set_annotator("ann")
    c = JudgeController(SCHEME, st)
    w = QWidget()
    bar = JudgeBar(c, w)
    install_shortcuts(w, c, bar)
    qtbot.addWidget(w)
    w.show()
    c.set_queue(["pair-1", "pair-2", "pair-3"])
    w.setFocus()
    return w, c, bar, st


def events(st: AppState) -> list[Any]:
    return st.project.labels.events(task=SCHEME.task)


def test_keys_commit_one_event_each_and_advance(qtbot: Any, page: Any) -> None:
    w, c, bar, st = page
    qtbot.keyClick(w, Qt.Key_A)
    qtbot.keyClick(w, Qt.Key_M)
    ev = events(st)
    assert [(e.target_kind, e.target_id, e.value, e.annotator) for e in ev] == \
        [("pair", "pair-1", "ALIGNED", "ann"), ("pair", "pair-2", "MISALIGNED", "ann")]
    assert c.pos == 2 and bar.position.text() == "item 3 of 3"
    assert bar.bar.value() == 2
    # undo takes pair-2 back (a compensating event) and shows it; redo enables after undo
    assert not bar.redo_button.isEnabled()
    qtbot.keyClick(w, Qt.Key_Z, Qt.ControlModifier)
    assert c.current == "pair-2" and c.current_state == (None, None)
    assert bar.redo_button.isEnabled()
    assert events(st)[-1].value is None
    bar.redo_button.click()
    assert c.current_state[0] == "MISALIGNED"


def test_without_auto_advance_the_note_is_written_after_the_key(qtbot: Any, page: Any) -> None:
    w, c, bar, st = page
    bar.auto.setChecked(False)
    qtbot.keyClick(w, Qt.Key_U)
    assert c.current == "pair-1"
    bar.notes.setPlainText("both blurry\nsecond line")
    c.next()  # leaving saves the note with the value
    last = [e for e in events(st) if e.target_id == "pair-1"][-1]
    assert (last.value, last.notes) == ("UNDECIDABLE", "both blurry\nsecond line")


def test_a_recheck_shows_nothing_of_the_first_answer_and_is_recorded_as_one(qtbot: Any, page: Any) -> None:
    w, c, bar, st = page
    qtbot.keyClick(w, Qt.Key_A)  # pair-1 first pass
    c.set_queue(["pair-1", "pair-1"], recheck=[False, True])
    c.go(1)
    assert c.is_recheck() and c.current_state == (None, None)
    assert not any(b.isChecked() for b in bar.buttons.values()) and "(re-check)" in bar.position.text()
    qtbot.keyClick(w, Qt.Key_M)
    sources = [(e.value, e.source) for e in events(st) if e.target_id == "pair-1"]
    assert sources == [("ALIGNED", "ui"), ("MISALIGNED", "recheck")]


def test_export_escapes_formula_cells(qtbot: Any, page: Any, tmp_path: Path) -> None:
    w, c, bar, st = page
    bar.notes.setPlainText("=HYPERLINK(\"x\")")
    qtbot.keyClick(w, Qt.Key_A)
    out = tmp_path / "labels.csv"
    assert bar.export(str(out)) == 1
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert rows[0]["notes"] == "'=HYPERLINK(\"x\")" and rows[0]["value"] == "ALIGNED"
    assert csv_cell("-3") == "'-3" and csv_cell("plain") == "plain"


def test_a_failed_write_keeps_the_item_and_says_why(qtbot: Any, page: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    w, c, bar, st = page
    messages: list[str] = []
    st.message.connect(messages.append)

    def full(*a: Any, **k: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(LabelsRepo, "add", full)
    qtbot.keyClick(w, Qt.Key_A)
    assert c.current == "pair-1" and c.core.n_committed == 0
    assert any("disk full" in m for m in messages)


def test_progress_kept_in_step_with_labels_undo_and_redo_equals_a_recount(qtbot: Any, page: Any) -> None:
    w, c, bar, st = page
    c.set_queue(["pair-1", "pair-2", "pair-1", "pair-3"])  # a target queued twice counts twice

    def recount() -> int:
        c.reload()
        return c.progress()[0]

    assert c.progress() == (0, 4)
    qtbot.keyClick(w, Qt.Key_A)  # pair-1
    assert c.progress() == (2, 4) == (recount(), 4)
    qtbot.keyClick(w, Qt.Key_M)  # pair-2
    assert c.progress()[0] == 3 == recount()
    qtbot.keyClick(w, Qt.Key_Z, Qt.ControlModifier)  # pair-2 undone
    assert c.progress()[0] == 2 == recount()
    bar.redo_button.click()
    assert c.progress()[0] == 3 == recount()
    assert bar.bar.value() == 3


def test_a_view_that_requeues_on_a_policy_change_does_not_start_it_again(qtbot: Any, page: Any) -> None:
    """`policy_changed` says what the views may show changed, and only then: a new queue under the
    same policy (new targets, a plain queue again) is `queue_changed` alone, so a view that
    re-queues when the policy changes re-queues once, not for ever."""
    _w, c, _bar, _st = page
    seen: list[Any] = []

    def requeue() -> None:  # a view that refills its targets whenever the policy changes
        seen.append(c.view_visibility())
        if len(seen) < 50:
            c.set_targets(["pair-1", "pair-2", "pair-3"])

    queues: list[int] = []
    c.queue_changed.connect(lambda: queues.append(1))
    c.policy_changed.connect(requeue)
    c.set_targets(["pair-1", "pair-2", "pair-3"])
    c.set_queue(["pair-2", "pair-3"])
    assert seen == [] and len(queues) == 2  # two new queues, the policy unchanged
    c.set_page_blind(True)  # the policy does change: the view re-queues once, and that is all
    assert len(seen) == 1 and not seen[0].outcome
    assert c.view_visibility() == seen[0] and c.queue == ["pair-1", "pair-2", "pair-3"]
    c.set_page_blind(False)
    assert len(seen) == 2 and seen[1].outcome
