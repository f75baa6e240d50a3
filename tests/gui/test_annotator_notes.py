"""Imported auditors' labels and notes are shown: every annotator's latest
label and note beside the sample in the review view, and a Notes column in Browse."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from workstation.methods.spatial.store import SpatialStore
from .conftest import add_label, blind_queue

pytestmark = pytest.mark.gui


def test_every_annotators_label_and_note_show_in_review_and_browse(qtbot, open_window,
                                                                  png_project: Path) -> None:
    w = open_window(png_project)
    st = w.spatial
    SpatialStore(st.project).add_labels_bulk({
        "sample_id": ["s_p0_seed0", "s_p0_seed0", "s_p1_seed0", "s_p0_seed0"],
        "annotator": ["bob", "carol", "bob", "bob"],
        "verdict": ["FAIL", "PASS", "UNDECIDABLE", "UNDECIDABLE"],  # bob changed his mind later
        "notes": ["cat hidden", "", "dog cut off", "cat half hidden behind the dog"]})
    st.reload_labels()
    row = st.dataset.sample_index()["s_p0_seed0"]
    st.set_annotator("alice")
    add_label(st, row, "PASS", notes="clear")  # alice, typed in the UI
    w.method_views["spatial"].review_from_browse(w, row)
    left = w.viewer.left.labels.text()
    assert "<b>alice</b>: PASS — <i>“clear”</i>" in left
    assert "<b>bob</b>: UNDECIDABLE — <i>“cat half hidden behind the dog”</i>" in left
    assert "<b>carol</b>: PASS" in left and "cat hidden”" not in left  # bob's earlier note is replaced
    assert "<b>bob</b>: UNDECIDABLE — <i>“dog cut off”</i>" in w.viewer.right.labels.text()  # the twin's
    # a blind audit shows only the auditor's own label of the audit: nobody else's, and not the
    # label alice gave before the audit was drawn
    blind_queue(st, [row])
    blind = w.viewer.left.labels.text()
    assert "bob" not in blind and "carol" not in blind and "alice" not in blind and "clear" not in blind
    assert blind.startswith("Your label in this audit: none yet")
    qtbot.keyClick(w.review, Qt.Key_F)
    assert w.viewer.left.labels.text().startswith("Your label in this audit: <b>alice</b>: FAIL")
    # undone: the audit's label is gone, and alice's label from before the audit stands again
    qtbot.keyClick(w.review, Qt.Key_Z, Qt.ControlModifier)
    assert w.viewer.left.labels.text().startswith("Your label in this audit: none yet")
    st.controller.leave_audit()
    # Browse: a Notes column with each annotator's latest note
    m = w.browser.model
    assert m.headerData(10, Qt.Horizontal) == "Notes"
    notes = {m.data(m.index(i, 0)): m.data(m.index(i, 10)) for i in range(m.rowCount())}
    assert notes["s_p0_seed0"] == "alice: clear; bob: cat half hidden behind the dog"
    assert notes["s_p1_seed0"] == "bob: dog cut off"
    assert notes["s_p0_seed1"] == ""
    assert m.data(m.index(list(notes).index("s_p0_seed0"), 8)) == "alice: PASS, bob: UNDECIDABLE, carol: PASS"
