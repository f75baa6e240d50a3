"""The views' half of the method contract (`tests/methods/test_contract.py` is the core's half),
run over every method whose views are registered in `ui.methods.VIEWS`.

On a small demo project of that method alone, opened in the real main window offscreen: the
window installs the method's views by itself (it knows no method by name), its tab is shown and
painted, the Methods menu lists it, and closing the project and opening it again keeps the views
working. A second window on a project without the method's data shows none of its tabs (and builds
them only if they are built with the window) until the user asks from the Methods menu.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from PySide6.QtWidgets import QWidget

from ui.methods import view_names, views_for
from workstation.methods import get_method
from tests import toy_method
from workstation.store import Project

NAMES = sorted(set(view_names()) | {toy_method.NAME})


@pytest.fixture(scope="module", autouse=True)
def lamp_method_registered() -> Any:
    """The Lamp method of the tests (core and views), registered for this module's tests."""
    with toy_method.registered():
        yield


@pytest.fixture(scope="module", params=NAMES)
def method_demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    name = request.param
    folder = tmp_path_factory.mktemp(f"views_{name}") / "p"
    with Project.create(folder) as p:
        get_method(name).build_demo(p, small=True, workers=0)
    return name, folder


def _tab_titles(w: Any) -> list[str]:
    """The tabs the window shows (a method's tabs are hidden while the project has no data of it)."""
    return [w.tabs.tabText(i) for i in range(w.tabs.count()) if w.tabs.isTabVisible(i)]


def test_views_install_by_themselves_and_paint(qtbot: Any, open_window: Any, method_demo: tuple[str, Path]) -> None:
    name, folder = method_demo
    title = views_for(name).title
    w = open_window(folder)
    qtbot.waitUntil(lambda: name in w.method_views, timeout=20000)
    assert title in _tab_titles(w)
    w.show_tab(title)
    assert w.tabs.tabText(w.tabs.currentIndex()) == title
    page = w.tabs.currentWidget()
    qtbot.wait(200)
    shot = page.grab()
    assert shot.width() > 200 and shot.height() > 200
    w.methods_menu.aboutToShow.emit()  # the menu is filled as it opens
    menu = [a.text() for a in w.methods_menu.actions()]
    assert any(t.startswith(f"{name}:") for t in menu), menu
    # the project closed and opened again: the views follow without raising
    w.close_project()
    assert w.open_project(folder)
    qtbot.wait(200)
    assert title in _tab_titles(w)


def test_views_wait_for_the_methods_menu_without_data(qtbot: Any, open_window: Any, tmp_path: Path) -> None:
    with Project.create(tmp_path / "empty"):
        pass
    w = open_window(tmp_path / "empty")
    qtbot.wait(200)
    eager = {n for n in NAMES if getattr(views_for(n), "eager", False)}
    assert not ((set(NAMES) - eager) & set(w.method_views))
    assert _tab_titles(w) == ["Start"]  # no method's tab without its data: the start page says what to do
    for name in NAMES:
        w.open_method(name)
        assert views_for(name).title in _tab_titles(w)
        assert w.tabs.tabText(w.tabs.currentIndex()) == views_for(name).title


class _HalfViews:
    """Views written as the window's tab alone (no judging controller, pages, data check):
    what docs/adding-a-method.md once showed."""

    method = "half"
    title = "Half"
    noun = "item"

    def install(self, window: Any) -> None:
        window.add_panel(self.title, QWidget(), "tab")

    def on_project(self, window: Any) -> None:
        pass


def test_views_that_lack_a_member_are_refused_at_registration_in_one_line() -> None:
    """A views object is checked against `MethodViews` when it registers: the one line names
    each member it lacks, and nothing is registered."""
    from ui.methods import VIEWS
    from ui.method_views import MEMBERS, ViewsBase, ViewsRefused

    with pytest.raises(ViewsRefused) as e:
        VIEWS.register("half", _HalfViews())
    msg = str(e.value)
    assert "\n" not in msg and "'half'" in msg and "_HalfViews" in msg
    lacks = msg.split(" lack ", 1)[1].split(":", 1)[0].split(", ")
    assert lacks == [m for m in MEMBERS if not hasattr(_HalfViews, m)]
    assert {"controller", "pages", "has_data", "focus_target"} <= set(lacks)
    assert "half" not in VIEWS

    class NoController(ViewsBase):  # a views class that put something else where a member goes
        method, title = "half", "Half"
        controller = None

        def install(self, window: Any) -> None:
            pass

    with pytest.raises(ViewsRefused, match=r"^the 'half' views \(.*NoController\): controller not as "):
        VIEWS.register("half", NoController())
    assert "half" not in VIEWS

    class Other(NoController):
        controller = ViewsBase.controller
        method = "lamp"

    with pytest.raises(ViewsRefused, match="views of 'lamp', registered as 'half'"):
        VIEWS.register("half", Other())


def test_views_registered_by_import_string_are_checked_when_first_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Views registered lazily (``"module:attr"``) are checked when the window first asks for them."""
    import sys
    import types

    from ui.method_views import ViewsRefused
    from ui.methods import VIEWS, views_for

    module = types.ModuleType("half_views_of_the_tests")
    module.VIEWS = _HalfViews()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    VIEWS.register("half", f"{module.__name__}:VIEWS")
    try:
        with pytest.raises(ViewsRefused, match=r"lack .*controller"):
            views_for("half")
    finally:
        VIEWS._entries.pop("half", None)
    for name in NAMES:  # the registered ones pass
        assert views_for(name).method == name
