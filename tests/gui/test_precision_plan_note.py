"""An audit plan for a precision hands out only the items the automated outcome calls positive,
so its blind queue cannot hide that outcome: the panel says so when the plan
is made, and the judging bar says so while its queue is open; a plan of the true rate says
nothing of the kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
    return folder


def _plan(qtbot: Any, w: Any, quantity: str) -> Any:
    from ui import menus

    menus.leave_audit(w)
    menus.open_audit_plans(w)
    panel = w.audit_plans_window.panel
    panel.method_combo.setCurrentIndex(panel.method_combo.findData("spatial"))
    panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData(quantity))
    plan = panel.start_plan()
    assert plan is not None
    return panel, plan


def test_a_precision_plan_says_its_blind_queue_cannot_hide_the_verdict(qtbot: Any, open_window: Any,
                                                                       demo_project: Path) -> None:
    w = open_window(demo_project)
    panel, plan = _plan(qtbot, w, "precision")
    said = panel.goal_label.text()
    assert "hands out only the" in said and "calls PASS" in said and "cannot hide" in said
    panel.batch_spin.setValue(2)
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    c = w.method_views["spatial"].controller(w)
    assert c.audit is not None and c.audit.blind and c.audit.audit_set_id == plan.audit_set_id
    bar = w.method_views["spatial"].bar(w)
    QApplication.processEvents()
    assert bar.queue_note.isVisible()
    assert "calls PASS" in bar.queue_note.text() and "cannot hide" in bar.queue_note.text()
    # every sample it handed out is one the checker calls PASS: what the note says is so
    v = w.spatial.verdicts
    assert all(int(v.verdict[int(i)]) == 0 for i in c.queue_indices.tolist())
    # a plan of the true rate draws every verdict: no such note
    panel, _rate = _plan(qtbot, w, "rate")
    assert "cannot hide" not in panel.goal_label.text()
    panel.batch_spin.setValue(2)
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    assert c.audit is not None and c.audit.audit_set_id == _rate.audit_set_id
    assert not bar.queue_note.isVisible()
