"""Two raters of an overlap set in one window: the queue the views show follows Audit →
Annotator…, and the status bar counts the rater's part of the set, not the whole of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ui import menus

pytestmark = pytest.mark.gui

TASK = "spatial.verdict"


def _switch(w: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: name)
    menus.change_annotator(w)
    assert w.state.annotator == name


def test_switching_the_annotator_shows_the_other_raters_part_of_an_overlap_set(
        qtbot: Any, open_window: Any, sbuc_images_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="a1")
    s = w.spatial
    c = s.controller
    ids = [str(x) for x in s.dataset.samples.sample_id[:12].tolist()]
    a1, a2 = ids[:8], ids[4:]  # four items both raters judge, four each alone
    assignment = {t: tuple(r for r, part in (("a1", a1), ("a2", a2)) if t in part) for t in ids}
    aid = s.project.audit.create_set("two raters", TASK, ids, {}, blind=True, assignment=assignment)
    _switch(w, monkeypatch, "a1")
    n = menus.start_audit_set(w, aid)
    assert n == 8, w.statusBar().currentMessage()
    assert w.statusBar().currentMessage() == f"audit set #{aid}: 8 items for a1 (0 labelled) of the set's 12 (blind)"
    assert c.queue == a1
    w.labeling.auto.setChecked(True)
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, Qt.Key.Key_P)
    assert w.labeling.bar.text() == "1 / 8 labelled · a1's part of 12"

    seen: list[list[str]] = []
    s.queue_changed.connect(lambda: seen.append(list(c.queue)))
    _switch(w, monkeypatch, "a2")
    assert seen and seen[-1] == a2  # the views were told: the queue they show is a2's
    assert c.queue == a2 and c.current in a2
    assert w.labeling.bar.text() == "0 / 8 labelled · a2's part of 12"
    # the blind contract holds through the switch: a1's label of a shared item is not shown to a2
    c.go_target(c.index_of(a1[0] if a1[0] in a2 else a2[0]))
    assert all(x.annotator == "a2" for x in c.shown_labels())

    _switch(w, monkeypatch, "a1")
    assert seen[-1] == a1 and c.queue == a1 and w.labeling.bar.text() == "1 / 8 labelled · a1's part of 12"
    # opened again by a2: the status bar counts a2's part
    _switch(w, monkeypatch, "a2")
    menus.start_audit_set(w, aid)
    assert w.statusBar().currentMessage() == f"audit set #{aid}: 8 items for a2 (0 labelled) of the set's 12 (blind)"
