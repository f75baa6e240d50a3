"""Labelling with the keyboard: P / F / U, notes, undo / redo, jump to a sample, progress, F1."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit

from workstation.store import Project
from workstation.methods.spatial.store import SpatialStore

pytestmark = pytest.mark.gui


def _review(qtbot, w) -> None:
    """Open the Review tab on the filtered samples (Enter on the first table row)."""
    table = w.browser.table
    table.setFocus()
    table.setCurrentIndex(w.browser.model.index(0, 0))
    qtbot.keyClick(table, Qt.Key_Return)
    assert w.tabs.currentWidget() is w.review
    qtbot.waitUntil(lambda: w.viewer.left.view.hasFocus() or True)


def _key(qtbot, w, key, modifier=Qt.NoModifier) -> None:
    target = QApplication.focusWidget() or w
    qtbot.keyClick(target, key, modifier)


def _latest(folder_or_project, annotator="alice"):
    return {r.sample_id: r for r in SpatialStore(folder_or_project).latest_labels(annotator)}


def test_pfu_keys_record_and_advance(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    st = w.spatial
    ids = st.dataset.samples.sample_id
    first = st.current
    assert w.labeling.bar.text() == "0 / 800 labelled"
    _key(qtbot, w, Qt.Key_P)
    assert st.current == st.queue[1]
    _key(qtbot, w, Qt.Key_F)
    _key(qtbot, w, Qt.Key_U)
    labels = _latest(st.project)
    assert labels[ids[st.queue[0]]].verdict == "PASS"
    assert labels[ids[st.queue[1]]].verdict == "FAIL"
    assert labels[ids[st.queue[2]]].verdict == "UNDECIDABLE"
    assert st.current == st.queue[3]
    assert st.human[first] == 0
    # progress shows in the labelling bar and in the status bar
    assert w.labeling.bar.text() == "3 / 800 labelled"
    assert "labelled 3 / 800" in w.progress_label.text()
    assert w.labeling.position.text().startswith("item 4 of 800")
    # the table's Human column shows the label
    model = w.browser.model
    assert model.data(model.index(0, 8)) == "alice: PASS"


def test_notes_saved_with_or_without_a_verdict(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    st = w.spatial
    ids = st.dataset.samples.sample_id
    row0 = st.current
    # N puts the cursor in the notes field; Enter saves (no verdict yet)
    _key(qtbot, w, Qt.Key_N)
    assert w.labeling.notes.hasFocus()
    qtbot.keyClicks(w.labeling.notes, "bed hidden")
    qtbot.keyClick(w.labeling.notes, Qt.Key_Return)
    ev = SpatialStore(st.project).label_events(str(ids[row0]))
    assert [(e.verdict, e.notes) for e in ev] == [(None, "bed hidden")]
    assert not w.labeling.notes.hasFocus()  # the keys go back to the viewer
    # then P records the verdict, keeping the notes
    _key(qtbot, w, Qt.Key_P)
    assert _latest(st.project)[ids[row0]].verdict == "PASS"
    assert _latest(st.project)[ids[row0]].notes == "bed hidden"
    # notes typed and then moving on (▶ button) are saved too, with the current verdict
    row1 = st.current
    _key(qtbot, w, Qt.Key_F)  # row1 = FAIL
    qtbot.mouseClick(w.labeling.prev_button, Qt.LeftButton)
    assert st.current == row1
    w.labeling.notes.setFocus()
    qtbot.keyClicks(w.labeling.notes, "cake is tiny")
    qtbot.mouseClick(w.labeling.next_button, Qt.LeftButton)
    lab = _latest(st.project)[ids[row1]]
    assert (lab.verdict, lab.notes) == ("FAIL", "cake is tiny")
    # typing P in the notes field types a letter, it does not label
    w.labeling.notes.setFocus()
    qtbot.keyClicks(w.labeling.notes, "P")
    assert w.labeling.notes.text() == "P"
    assert ids[st.current] not in _latest(st.project)


def test_undo_redo_append_compensating_events(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    st = w.spatial
    sid0 = str(st.dataset.samples.sample_id[st.current])
    row0 = st.current
    _key(qtbot, w, Qt.Key_P)
    sid1 = str(st.dataset.samples.sample_id[st.current])
    _key(qtbot, w, Qt.Key_F)
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier)  # undo FAIL on sid1
    assert str(st.dataset.samples.sample_id[st.current]) == sid1
    assert _latest(st.project).get(sid1) is None or _latest(st.project)[sid1].verdict is None
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier)  # undo PASS on sid0
    assert st.current == row0
    assert st.human[row0] == -1
    assert w.labeling.yours.text() == "your label: —"
    # events are append-only: 2 labels + 2 compensating events
    assert len(SpatialStore(st.project).label_events(sid0)) == 2 and len(SpatialStore(st.project).label_events(sid1)) == 2
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)  # redo PASS
    assert _latest(st.project)[sid0].verdict == "PASS"
    assert w.labeling.yours.text() == "your label: PASS"
    assert len(SpatialStore(st.project).label_events(sid0)) == 3
    # re-labelling after an undo replaces the label; the undo restores the previous one
    _key(qtbot, w, Qt.Key_U)  # current is sid0 again after redo → UNDECIDABLE
    assert _latest(st.project)[sid0].verdict == "UNDECIDABLE"
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier)
    assert _latest(st.project)[sid0].verdict == "PASS"


def test_goto_sample_with_ctrl_g(qtbot, open_window, sbuc_images_project: Path) -> None:
    from tests.gui.conftest import on_next_modal

    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    target = "sd15_boxdiff_v1_000123_seed0002"

    def fill(dlg) -> None:
        edit = dlg.findChild(QLineEdit, "gotoEdit")
        qtbot.keyClicks(edit, target)
        popup = edit.completer().popup()
        qtbot.keyClick(popup if popup.isVisible() else edit, Qt.Key_Return)  # once
        closed.append(not dlg.isVisible())
        if dlg.isVisible():
            dlg.reject()

    closed: list[bool] = []
    seen = on_next_modal(qtbot, fill)
    _key(qtbot, w, Qt.Key_G, Qt.ControlModifier)
    assert seen, "Ctrl+G opened no dialog"
    assert closed == [True], "one Enter did not close the Go to sample dialog"
    st = w.spatial
    assert st.dataset.samples.sample_id[st.current] == target
    assert st.queue[st.queue_pos] == st.current  # in the queue: its position follows
    assert target in w.viewer.left.meta.text()


def test_shortcut_sheet_on_f1(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    w.tab_actions[("spatial", 1)].trigger()  # Review: the page whose keys label
    _key(qtbot, w, Qt.Key_F1)
    sheet = w._sheet
    qtbot.waitExposed(sheet)
    texts = [sheet.table.item(i, 2).text() for i in range(sheet.table.rowCount())]
    keys = [sheet.table.item(i, 1).text() for i in range(sheet.table.rowCount())]
    assert any("PASS" in t for t in texts)
    assert "P" in keys and "Ctrl+Z" in keys and "Ctrl+G" in keys
    sheet.close()


def test_annotator_asked_once_per_project(qtbot, sbuc_images_project: Path) -> None:
    """Browsing never asks; the first label asks the name, which is stored with the project."""
    from tests.gui.conftest import on_next_modal
    from ui.main_window import MainWindow

    def answer(dlg) -> None:
        edit = dlg.findChild(QLineEdit)
        edit.selectAll()
        qtbot.keyClicks(edit, "bob")
        qtbot.keyClick(edit, Qt.Key_Return)

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()
    qtbot.waitUntil(lambda: w.isActiveWindow(), timeout=3000)
    assert w.open_project(sbuc_images_project)
    assert w.spatial.annotator == ""  # opening and browsing ask nothing
    _review(qtbot, w)
    first = w.spatial.current
    seen = on_next_modal(qtbot, answer)
    _key(qtbot, w, Qt.Key_P)
    assert seen, "the annotator was not asked at the first label"
    assert w.spatial.annotator == "bob"
    assert "bob" in w.annotator_label.text()
    assert _latest(w.spatial.project, "bob")[w.spatial.dataset.samples.sample_id[first]].verdict == "PASS"
    w.close()
    assert Project.open(sbuc_images_project).get_setting("annotator") == "bob"

    w2 = MainWindow(ask_annotator=lambda: pytest.fail("asked the annotator a second time"))
    qtbot.addWidget(w2)
    w2.show()
    qtbot.waitExposed(w2)
    w2.activateWindow()
    qtbot.waitUntil(lambda: w2.isActiveWindow(), timeout=3000)
    assert w2.open_project(sbuc_images_project)
    assert w2.spatial.annotator == "bob"
    _review(qtbot, w2)
    _key(qtbot, w2, Qt.Key_F)
    w2.close()


def test_read_only_project_cannot_label(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project, read_only=True)
    assert w.spatial.project.read_only
    _review(qtbot, w)
    before = w.spatial.current
    _key(qtbot, w, Qt.Key_P)
    assert w.spatial.current == before  # nothing recorded, no advance
    assert not w.labeling.buttons["PASS"].isEnabled()
    assert "read-only" in w.windowTitle()


def test_undo_and_redo_buttons_follow_the_stacks(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    st = w.spatial
    bar = w.labeling
    assert not bar.undo_button.isEnabled() and not bar.redo_button.isEnabled()
    _key(qtbot, w, Qt.Key_P)
    assert bar.undo_button.isEnabled() and not bar.redo_button.isEnabled()
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier)
    assert bar.redo_button.isEnabled(), "Redo stays disabled after an undo"
    assert not bar.undo_button.isEnabled()
    qtbot.mouseClick(bar.redo_button, Qt.LeftButton)
    sid = str(st.dataset.samples.sample_id[st.current])
    assert _latest(st.project)[sid].verdict == "PASS"
    assert bar.undo_button.isEnabled() and not bar.redo_button.isEnabled()
    qtbot.mouseClick(bar.undo_button, Qt.LeftButton)
    assert bar.redo_button.isEnabled() and _latest(st.project)[sid].verdict is None


def test_labelling_bar_multiline_notes_no_auto_advance_position_and_export(
        qtbot, open_window, sbuc_images_project: Path, tmp_path: Path) -> None:
    import csv

    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    st = w.spatial
    bar = w.labeling
    ids = st.dataset.samples.sample_id
    # "item i of n" and the progress bar are on screen
    assert bar.position.isVisible() and bar.position.text() == "item 1 of 800"
    assert bar.bar.isVisible() and bar.bar.text() == "0 / 800 labelled"
    # auto-advance off: P records and stays, so a note can follow the key
    assert bar.auto.isVisible() and bar.auto.isChecked()
    bar.auto.click()
    assert not w.spatial.controller.auto_advance
    row0 = st.current
    _key(qtbot, w, Qt.Key_P)
    assert st.current == row0 and bar.yours.text() == "your label: PASS"
    assert bar.position.text() == "item 1 of 800" and bar.bar.text() == "1 / 800 labelled"
    # the notes box takes several lines: Shift+Enter is a new line, Enter saves
    _key(qtbot, w, Qt.Key_N)
    qtbot.keyClicks(bar.notes, "A is hidden")
    qtbot.keyClick(bar.notes, Qt.Key_Return, Qt.ShiftModifier)
    qtbot.keyClicks(bar.notes, "B cropped")
    qtbot.keyClick(bar.notes, Qt.Key_Return)
    lab = _latest(st.project)[ids[row0]]
    assert (lab.verdict, lab.notes) == ("PASS", "A is hidden\nB cropped")
    assert not bar.notes.hasFocus()
    _key(qtbot, w, Qt.Key_Right)
    assert bar.position.text() == "item 2 of 800"
    # the choice is remembered for the next window
    w2 = open_window(sbuc_images_project, read_only=True)
    assert not w2.labeling.auto.isChecked() and not w2.spatial.controller.auto_advance
    # labels are exported from the labelling bar
    out = tmp_path / "labels.csv"
    assert bar.export_button.isVisible()
    assert bar.export(str(out)) == 1
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1 and rows[0]["sample_id"] == ids[row0] and rows[0]["verdict"] == "PASS"
    assert rows[0]["notes"] == "A is hidden\nB cropped"
    assert "exported 1 label(s)" in w.statusBar().currentMessage()


def test_the_review_queue_is_one_compact_array_that_reads_as_rows() -> None:
    """The queue of a whole-project review is one int32 array (4 bytes a row, not a Python int
    each), and reads as the list of rows it replaces: positions, slices, ``in``, ``index``,
    equality, iteration and numpy."""
    import numpy as np

    from ui.methods.spatial.session import RowQueue

    rows = [7, 3, 9, 3, 100_000]
    q = RowQueue(np.array(rows, np.int64))
    assert q.rows.dtype == np.int32 and not q.rows.flags.writeable
    assert len(q) == 5 and q and not RowQueue() and RowQueue() == []
    assert q[0] == 7 and type(q[0]) is int and q[-1] == 100_000
    assert q[1:3] == [3, 9] and list(q) == rows and q == rows and q == RowQueue(rows) and q != [7, 3]
    assert 9 in q and 8 not in q and "9" not in q and np.int64(100_000) in q
    assert q.index(3) == 1 and q.index(3, 2) == 3
    with pytest.raises(ValueError, match="row 8 is not in the queue"):
        q.index(8)
    assert np.array(q).tolist() == rows and np.asarray(q, np.int64).dtype == np.int64
    assert RowQueue([2**40, 1]).rows.dtype == np.int64  # rows past int32 keep 8 bytes


def test_a_review_of_every_sample_keeps_its_queue_compact(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    _review(qtbot, w)
    st = w.spatial
    assert len(st.queue) == 800
    assert st.queue.rows.dtype.itemsize == 4
    assert st.queue == w.browser.model.all_rows()
    recheck = w.spatial.controller.core.recheck
    assert st.current == st.queue[0] and recheck.dtype == bool and len(recheck) == 800
    _key(qtbot, w, Qt.Key_P)
    assert st.current == st.queue[1] and w.labeling.bar.text() == "1 / 800 labelled"
