"""Audit → New audit set… for named raters: k raters per item on a share of the items, gold
items seeded at a rate — the same draw as `audit draw` — and each rater's progress in the window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QDoubleSpinBox, QLineEdit, QPushButton, QSpinBox

from ui import menus
from workstation.evaluation.audit_sets import audit_info
from workstation.evaluation.raters import rater_progress

from .conftest import on_next_modal

pytestmark = pytest.mark.gui

TASK = "spatial.verdict"


def _type_into(qtbot: Any, box: Any, value: str) -> None:
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, value)


def test_the_dialog_draws_an_overlap_set_with_gold_items_and_each_rater_sees_their_part(
        qtbot: Any, open_window: Any, sbuc_images_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = open_window(sbuc_images_project, annotator="r1")
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: "r1")
    menus.change_annotator(w)
    p = w.state.project
    gold_ids = [str(x) for x in w.spatial.dataset.samples.sample_id[-30:].tolist()]
    p.audit.add_gold(TASK, [(t, "PASS", "known") for t in gold_ids], "test")
    previews: list[str] = []

    def fill(dlg: Any) -> None:
        _type_into(qtbot, dlg.findChild(QSpinBox, "auditSize").lineEdit(), "40")
        _type_into(qtbot, dlg.findChild(QSpinBox, "auditSeed").lineEdit(), "5")
        _type_into(qtbot, dlg.findChild(QDoubleSpinBox, "auditRecheck").lineEdit(), "0.00")
        qtbot.keyClicks(dlg.findChild(QLineEdit, "auditRaters"), "r1, r2, r3")
        _type_into(qtbot, dlg.findChild(QSpinBox, "auditK").lineEdit(), "2")
        _type_into(qtbot, dlg.findChild(QDoubleSpinBox, "auditShare").lineEdit(), "0.50")
        _type_into(qtbot, dlg.findChild(QDoubleSpinBox, "auditGoldRate").lineEdit(), "0.10")
        previews.append(dlg.preview.text())
        qtbot.mouseClick(dlg.findChild(QPushButton, "auditCreate"), Qt.LeftButton)

    seen = on_next_modal(qtbot, fill)
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, Qt.Key_A,
                   Qt.ControlModifier | Qt.ShiftModifier)
    qtbot.waitUntil(lambda: bool(seen) and not seen[0].isVisible(), timeout=5000)
    assert "Raters r1, r2, r3: 2 per item on 20 of the 40 items, about 20 items each." in previews[0]
    assert "Gold items: about 10% of the first passes, from the task's 30 gold answers." in previews[0]

    aid = max(s["audit_set_id"] for s in p.audit.sets())
    info = audit_info(p, aid)
    assert info.overlap and info.blind
    assigned = p.audit.assignments(aid)
    assert sorted(assigned) == ["r1", "r2", "r3"]
    items = [t for t, _rc in p.audit.items(aid)]
    seeded = sorted(t for _a, t in p.audit.gold_items(aid))
    assert len(seeded) == 4 and len(items) == 44  # 40 drawn and 4 gold items (10 % of the first passes)
    assert set(seeded) <= set(gold_ids)
    per_item = {t: sum(t in v for v in assigned.values()) for t in items}
    assert sorted(per_item[t] for t in items if t not in seeded) == [1] * 20 + [2] * 20
    assert all(per_item[t] == 3 for t in seeded)  # every rater gets every gold item

    # r1's queue is r1's part, and the bar counts it against the set
    c = w.spatial.controller
    mine = rater_progress(p, aid)[0]
    assert mine["rater"] == "r1" and c.audit is not None and c.audit.audit_set_id == aid
    assert len(c.queue) == mine["assigned"] == len(assigned["r1"])
    assert w.labeling.bar.text() == f"0 / {mine['assigned']} labelled · r1's part of 44"
    assert w.statusBar().currentMessage() == \
        f"audit set #{aid}: {mine['assigned']} items for r1 (0 labelled) of the set's 44 (blind)"
