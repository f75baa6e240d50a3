"""Audit → Adjudicate… for every method: the item chosen is shown on the method's own judging
page (the one it judges on outside audit sets), that page's keys record nothing meanwhile, and
the final label is recorded with its note as an adjudication."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QPushButton

from ui import menus
from workstation.evaluation.raters import set_adjudicators
from workstation.store import Project

from .test_judging_contract import demo, lamp_method_registered  # noqa: F401 - the fixtures are used by name

pytestmark = pytest.mark.gui


def test_the_adjudicator_sees_the_item_on_the_methods_page_and_records_the_final_label(
        qtbot: Any, open_window: Any, demo: tuple[str, Path], tmp_path: Path) -> None:
    name, src = demo
    folder = tmp_path / "p"
    shutil.copytree(src, folder)
    w = open_window(folder, annotator="lead")
    qtbot.waitUntil(lambda: name in w.method_views, timeout=20000)
    views = w.method_views[name]
    views.show_judging(w)
    QApplication.processEvents()
    w.state.set_annotator("lead")
    c = views.controller(w)
    s = c.scheme
    pop = views.audit_population(w)
    assert pop is not None and len(pop), f"{name}: nothing to audit in its demo"
    target = str(pop.ids[0])
    p = w.state.project
    p.labels.add(s.task, s.target, target, "r1", s.values[0])
    p.labels.add(s.task, s.target, target, "r2", s.values[1])
    set_adjudicators(p, ["lead"])
    win = menus.open_adjudication(w)
    assert win is not None and win.scheme.task == s.task
    row = next(k for k, it in enumerate(win.items) if it.target_id == target)
    win.table.selectRow(row)
    QApplication.processEvents()
    assert c.current == target
    shown = [x.text() for x in w.findChildren(QLabel) if x.isVisible()]
    assert not any("No audit set is open here" in t for t in shown), f"{name}: the page shows no item"
    n = len(p.labels.events(task=s.task, target_id=target))
    assert not c.record(s.values[0]) and len(p.labels.events(task=s.task, target_id=target)) == n
    win.findChild(QLineEdit, "adjudicationNote").setText("checked against the instructions")
    win.findChild(QPushButton, f"adjudicate_{s.values[1]}").click()
    ev = p.labels.events(task=s.task, target_id=target)[-1]
    assert (ev.annotator, ev.value, ev.source) == ("lead", s.values[1], "adjudication")
    assert all(it.target_id != target for it in win.items)
    win.close()
    assert not c.refuse_writes
