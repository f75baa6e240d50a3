"""The F1 sheet and the Label menu list the keys that act on the page shown
(MetaLogic's A / M / U on its page, ProtoBias's 1–4 on its rating page, spatial's P / F / U and
T on Review), never a key bound to nothing (J / K); every method's tab has a key of its own."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ui import menus
from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui

METHODS = ("spatial", "metalogic", "protobias", "dyeval")


@pytest.fixture(scope="module")
def all_methods_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("all_methods") / "p"
    with Project.create(folder) as p:
        for name in METHODS:
            get_method(name).build_demo(p, small=True, workers=0)
    return folder


@pytest.fixture
def all_methods(all_methods_template: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "p"
    shutil.copytree(all_methods_template, dst)
    return dst


def _window(open_window: Any, qtbot: Any, folder: Path) -> Any:
    w = open_window(folder)
    qtbot.waitUntil(lambda: all(n in w.method_views for n in METHODS), timeout=20000)
    return w


def _sheet_rows(w: Any) -> list[tuple[str, str]]:
    from ui.shortcuts import ShortcutSheet

    sheet = ShortcutSheet(w)
    try:  # (keys, what it does) of each row, as the sheet shows them
        t = sheet.table
        return [(t.item(r, 1).text(), t.item(r, 2).text()) for r in range(t.rowCount())]
    finally:
        sheet.deleteLater()


@pytest.mark.parametrize("name", METHODS)
def test_the_sheet_lists_the_keys_of_the_page_shown_and_only_those(qtbot: Any, open_window: Any,
                                                                    all_methods: Path, name: str) -> None:
    w = _window(open_window, qtbot, all_methods)
    views = w.method_views[name]
    views.show_judging(w)
    QApplication.processEvents()
    rows = _sheet_rows(w)
    keys = {k for k, _ in rows}
    scheme = views.controller(w).scheme
    def said(value: str) -> str:  # as the judgement bar's button names it
        return scheme.title_of(value) if scheme.ordinal else value

    for value, key in zip(scheme.values, scheme.keys):
        assert (key, f"Record {said(value)} and go to the next") in rows, (name, key, rows)
    recording = {k for k, what in rows if what.startswith("Record ")}
    assert recording == set(scheme.keys), f"{name}'s sheet lists another method's label keys: {recording}"
    assert "J" not in keys and "K" not in keys  # listed once, bound to nothing
    assert "Right" in keys and "Ctrl+Z" in keys and "N" in keys
    # every row is a binding that acts now, and one key is listed once
    from ui.shortcuts import active_bindings

    listed = active_bindings(w)
    assert len(listed) == len(rows) and len(keys) == len(rows)
    if name == "spatial":
        assert ("T", "Review the counterfactual twin instead") in rows
    else:  # the pair viewer's layer keys act on Review only
        assert not {"T", "]", "["} & keys
    # the Label menu shows the same label keys, and its entries do what the keys do
    menus.fill_label_menu(w)
    texts = [a.text() for a in w.label_menu.actions()]
    for value, key in zip(scheme.values, scheme.keys):
        assert f"{scheme.title_of(value)}\t{key}" in texts
    assert not any(t.endswith("\tJ") or t.endswith("\tK") for t in texts)


def test_every_method_tab_has_a_key_that_shows_it(qtbot: Any, open_window: Any, all_methods: Path) -> None:
    w = _window(open_window, qtbot, all_methods)
    QApplication.processEvents()
    seen: set[str] = set()
    tab_actions = getattr(w, "tab_actions", {})
    for name in METHODS:
        views = w.method_views[name]
        for i, page in enumerate(views.pages(w)):
            assert (name, i) in tab_actions, f"no key shows {name}'s tab {i}"
            act = tab_actions[(name, i)]
            key = act.shortcut().toString()
            assert key.startswith("Ctrl+") and key not in seen, (name, i, key)
            seen.add(key)
    assert w.tab_actions[("spatial", 0)].shortcut().toString() == "Ctrl+1"  # Browse, as before
    for (name, i), act in w.tab_actions.items():
        page = w.method_views[name].pages(w)[i]
        seq = act.shortcut()
        qtbot.keyClick(w, seq[0].key(), seq[0].keyboardModifiers())
        QApplication.processEvents()
        assert w.tabs.currentWidget() is page, (name, i, act.shortcut().toString())
    # the sheet lists them
    keys = {k for k, _ in _sheet_rows(w)}
    assert {f"Ctrl+{d}" for d in range(1, 7)} <= keys
    _ = Qt
