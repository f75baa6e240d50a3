"""The undo / redo contract, run over every method whose views are registered (the Lamp method of
the tests included): undo and redo belong to the annotator who labelled.

On a small demo project of the method, annotator a1 labels three targets with the scheme's first
key; Audit → Annotator… makes a2 the annotator. a2's Ctrl+Z and Ctrl+Shift+Z then write nothing
(the history a2 starts with is empty: a1's labels are not a2's to take back or to write again),
and a2's "your label" never shows a1's value on any of a1's targets. a2 labels a target with the
scheme's last key and undoes and redoes it: every event by a2 carries a value a2 pressed (or none:
the undo), a1's events are unchanged. Back to a1: a1's history is a1's again — their undo takes
back their own last label and touches none of a2's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests import toy_method
from ui import menus
from ui.methods import view_names
from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui

NAMES = sorted(set(view_names()) | {toy_method.NAME})


@pytest.fixture(scope="module", autouse=True)
def lamp_method_registered() -> Any:
    with toy_method.registered():
        yield


@pytest.fixture(scope="module", params=NAMES)
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    name = request.param
    folder = tmp_path_factory.mktemp(f"undo_{name}") / "p"
    with Project.create(folder) as p:
        get_method(name).build_demo(p, small=True, workers=0)
    return name, folder


def _key(qtbot: Any, w: Any, key: Any, modifier: Any = Qt.KeyboardModifier.NoModifier) -> None:
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, key, modifier)


def _undo(qtbot: Any, w: Any) -> None:
    _key(qtbot, w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)


def _redo(qtbot: Any, w: Any) -> None:
    _key(qtbot, w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)


def _switch(w: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Audit → Annotator…, answered with ``name``."""
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: name)
    menus.change_annotator(w)
    assert w.state.annotator == name


def _events(w: Any, task: str, who: str) -> list[tuple[str, str | None, str | None]]:
    p = w.state.project
    return [(e.target_id, e.value, e.source) for e in p.labels.events(task=task) if e.annotator == who]


def test_undo_and_redo_touch_only_the_current_annotators_labels(qtbot: Any, open_window: Any,
                                                               demo: tuple[str, Path], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    name, folder = demo
    dst = tmp_path / "p"
    shutil.copytree(folder, dst)
    w = open_window(dst, annotator="a1")
    qtbot.waitUntil(lambda: name in w.method_views, timeout=20000)
    views = w.method_views[name]
    views.show_judging(w)
    QApplication.processEvents()
    c = views.controller(w)
    w.state.set_annotator("a1")
    bar = views.bar(w)
    bar.auto.setChecked(True)
    s = c.scheme
    first, last = s.values[0], s.values[-1]
    assert first != last
    task = s.task
    # a1 labels three targets
    a1_targets = []
    for _ in range(3):
        a1_targets.append(c.current)
        _key(qtbot, w, s.keys[0])
    a1_before = _events(w, task, "a1")
    assert [t for t, _v, _s in a1_before] == a1_targets and {v for _t, v, _s in a1_before} == {first}
    assert c.undo_stack, f"{name}: a1's labels are in a1's undo history"

    _switch(w, monkeypatch, "a2")
    _undo(qtbot, w)
    assert _events(w, task, "a2") == [], f"{name}: a2's undo wrote a compensating event for a1's label"
    assert "nothing to undo" in w.statusBar().currentMessage()
    _redo(qtbot, w)
    assert _events(w, task, "a2") == [], f"{name}: a2's redo wrote a label in a2's name"
    assert _events(w, task, "a1") == a1_before
    assert not c.undo_stack and not c.redo_stack, f"{name}: a2 starts with an empty history"
    assert not bar.undo_button.isEnabled() and not bar.redo_button.isEnabled()
    # a2's "your label" never shows a1's value
    assert bar.yours.text() == "your label: —"
    for t in a1_targets:
        c.go_to_id(t)
        QApplication.processEvents()
        assert bar.yours.text() == "your label: —", f"{name}: a2 is shown a1's label of {t}"

    # a2's own label, undone and redone: only values a2 pressed, under a2's name
    bar.auto.setChecked(False)
    mine = c.current
    _key(qtbot, w, s.keys[-1])
    assert bar.yours.text().startswith(f"your label: {last}")
    _undo(qtbot, w)
    assert bar.yours.text() == "your label: —"
    _redo(qtbot, w)
    assert bar.yours.text().startswith(f"your label: {last}")
    _redo(qtbot, w)  # nothing left to redo
    a2 = _events(w, task, "a2")
    assert [t for t, _v, _s in a2] == [mine] * 3
    assert [v for _t, v, _s in a2][0::2] == [last, last] and all(v in (None, last) for _t, v, _s in a2)
    assert _events(w, task, "a1") == a1_before, f"{name}: a2's undo / redo changed a1's events"

    # back to a1: a1's own history; the undo takes back a1's last label, nothing of a2's
    _switch(w, monkeypatch, "a1")
    assert c.undo_stack and not c.redo_stack
    _undo(qtbot, w)
    assert c.current == a1_targets[-1]
    a1_after = _events(w, task, "a1")
    assert a1_after[:3] == a1_before and len(a1_after) == 4 and a1_after[3][0] == a1_targets[-1]
    assert a1_after[3][1] != first  # a compensating event: the target is unlabelled again for a1
    assert _events(w, task, "a2") == a2
