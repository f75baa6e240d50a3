"""The blind-audit contract, from what is visible to what is reachable, over every
method whose views are registered (`ui.methods.VIEWS`, and the tests' own Lamp method).

On the method's demo project a blind audit set of a target with a re-check is opened, as
`test_judging_contract` does (with an earlier label of the annotator's own and another
annotator's, planted). On the blind first pass and on the re-check, everything the window offers
is driven in turn, each from the audit's place:

* every action of every menu (the menus filled as they are when opened) and every action and
  key shortcut the window holds;
* a double-click (and so an activation, as Enter gives) of the first rows of every item view on
  every page the window lets the auditor reach.

Dialogs a route opens are read and closed without a choice; the question "Pause the blind audit
to show this?" is answered Stay in audit first, and Pause the second time. After each: the
window (and any window the route opened) shows nothing the audit hides — the automated outcome,
the other annotator's name or note, the annotator's earlier note — **unless** the audit is paused
and the pause recorded in the project; an audit no longer blind with no pause recorded fails.
Project-level entries that close or replace the open project (Quit, Close, Open, New, recent
projects) are left out: they show nothing of the audit's project.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex
from PySide6.QtGui import QAction, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDialog,
    QFileDialog,
    QInputDialog,
    QMenu,
    QMessageBox,
    QWidget,
)

from ui import menus
from ui.widgets import audit_pause
from .test_judging_contract import (  # noqa: F401 - the fixtures are used by name
    EARLIER_NOTE,
    FIRST_NOTE,
    NAMES,
    OTHER,
    OTHER_NOTE,
    _in_judge_bar,
    _plant,
    _window,
    demo,
    lamp_method_registered,
    project,
    visible_texts,
)

pytestmark = pytest.mark.gui

LEFT_OUT = ("quit", "close project", "open", "new project", "open read-only snapshot", "open recent")


class Driver:
    """Answers every dialog a route opens: the pause question by `pause` (Stay in audit / Pause),
    every other dialog read (its texts kept in `read`) and closed without a choice."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pause = False
        self.asked = 0
        self.read: list[tuple[str, str]] = []
        mp = monkeypatch
        mp.setattr(audit_pause, "ask", self._ask)
        def exec_(dlg: QDialog, *_a: Any) -> int:
            return self._exec(dlg)

        mp.setattr(QDialog, "exec", exec_)
        mp.setattr(QMessageBox, "exec", exec_)
        for name in ("information", "warning", "critical", "question"):
            mp.setattr(QMessageBox, name, staticmethod(self._box))
        for name in ("getOpenFileName", "getSaveFileName"):
            mp.setattr(QFileDialog, name, staticmethod(lambda *a, **k: ("", "")))
        mp.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: ""))
        for name in ("getText", "getItem", "getInt"):
            mp.setattr(QInputDialog, name, staticmethod(lambda *a, **k: ("", False)))

    def _ask(self, _parent: Any, _what: str, _aid: int, _who: str) -> bool:
        self.asked += 1
        return self.pause

    def _exec(self, dlg: QDialog) -> int:
        dlg.show()
        QApplication.processEvents()
        self.read += [(f"dialog {type(dlg).__name__}", t) for _x, t in _texts_of(dlg)]
        dlg.hide()
        return 0

    def _box(self, _parent: Any, title: str, text: str, *_a: Any, **_k: Any) -> Any:
        self.read.append((f"message {title}", text))
        return QMessageBox.StandardButton.No


def _texts_of(top: QWidget) -> list[tuple[Any, str]]:
    class _W:  # `visible_texts` reads a window: its title, status bar and children
        def __init__(self, w: QWidget) -> None:
            self.w = w

        def windowTitle(self) -> str:  # noqa: N802
            return self.w.windowTitle()

        def statusBar(self) -> Any:  # noqa: N802
            return type("S", (), {"currentMessage": lambda _s: ""})()

        def findChildren(self, t: Any) -> list[Any]:  # noqa: N802
            return self.w.findChildren(t)

    return visible_texts(_W(top))


def _in_sheet(x: QWidget | None) -> bool:
    while x is not None:
        if x.objectName() == "shortcutSheet":
            return True
        x = x.parentWidget()
    return False


def _menu_actions(w: Any) -> list[tuple[str, QAction]]:
    """Every action of the menu bar's menus (each filled as it is when opened), by its path."""
    out: list[tuple[str, QAction]] = []

    def walk(menu: QMenu, path: str) -> None:
        menu.aboutToShow.emit()
        for a in menu.actions():
            if a.isSeparator():
                continue
            name = f"{path} → {a.text().split(chr(9))[0]}"
            if a.menu() is not None:
                if a.text().replace("&", "").lower() not in LEFT_OUT:
                    walk(a.menu(), name)
            elif a.isEnabled() and a.isVisible():
                out.append((name, a))

    for a in w.menuBar().actions():
        if a.menu() is not None:
            walk(a.menu(), a.text().replace("&", ""))
    return out


def _left_out(name: str) -> bool:
    last = name.split(" → ")[-1].replace("&", "").rstrip("…. ").lower()
    return last in LEFT_OUT or name.replace("&", "").lower().startswith("file → open recent")


class Contract:
    def __init__(self, w: Any, views: Any, c: Any, aid: int, target: str, driver: Driver,
                 extra: tuple[str, ...]) -> None:
        self.w, self.views, self.c, self.aid, self.target = w, views, c, aid, target
        self.driver = driver
        self.extra = extra
        self.index = c.index_of(target)
        self.pos = c.pos
        self.driven: list[str] = []
        self.failures: list[str] = []
        self.paused: list[str] = []

    # ---- the audit's place ------------------------------------------------------------------
    def back(self) -> None:
        """Close what a route opened, take back the labels it wrote (by undo, as the auditor
        would), reopen the audit if it was left and go back to its place."""
        w, c = self.w, self.c
        for top in QApplication.topLevelWidgets():
            if top is not w and top.isVisible() and isinstance(top, (QDialog, QWidget)) and top.isWindow():
                top.hide()
        if c.audit is None or c.audit.audit_set_id != self.aid:
            menus.start_audit_set(w, self.aid)
        while c.undo_stack and c.undo():
            pass
        menus.start_audit_set(w, self.aid)  # opened afresh: no redo of what was taken back
        c.go(self.pos)
        self.views.show_judging(w)
        QApplication.processEvents()

    def blind(self) -> bool:
        c = self.c
        return c.audit is not None and c.audit.audit_set_id == self.aid and not c.view_visibility().outcome

    def recorded(self) -> bool:
        pauses = self.w.state.project.audit.pauses(self.aid)
        return any(p["annotator"] == "alice" and p["ended_at"] is None for p in pauses)

    # ---- what shows ----------------------------------------------------------------------------
    def leaks(self) -> list[str]:
        w, views = self.w, self.views
        outcome = [t for t in views.outcome_texts(w, self.index) if t]
        never = (OTHER, OTHER_NOTE, EARLIER_NOTE) + self.extra
        texts = list(visible_texts(w))
        for top in QApplication.topLevelWidgets():
            if top is not w and top.isVisible() and top.isWindow():
                texts += _texts_of(top)
        texts += [(None, f"{where}: {t}") for where, t in self.driver.read]
        own = self.c.current_state[0] is not None  # the route gave the current target a label
        out = []
        for x, t in texts:
            where = f"{type(x).__name__}#{x.objectName()}" if x is not None else "window"
            for bad in never:
                if bad in t:
                    out.append(f"{bad!r} shown by {where}: {t[:120]!r}")
            if _in_judge_bar(x) or _in_sheet(x) or (own and t.startswith("Your label in this audit")):
                continue  # the bar and the F1 sheet name the scheme's values; a label just given is one
            for bad in outcome:
                if bad.lower() in t.lower():
                    out.append(f"the outcome {bad!r} shown by {where}: {t[:120]!r}")
        return out

    # ---- one route -------------------------------------------------------------------------------
    def drive(self, name: str, act: Any) -> None:
        """Drive a route (Stay in audit; then, if it asked, again with Pause) and judge it."""
        for pause in (False, True):
            self.back()
            d = self.driver
            d.pause, d.asked, d.read = pause, 0, []
            try:
                act()
            except Exception as e:  # noqa: BLE001 - a route that raises is a failure of its own
                self.failures.append(f"{name}: raised {type(e).__name__}: {e}")
                return
            QApplication.processEvents()
            self.driven.append(name)
            shown = self.leaks()
            if self.blind():
                if shown:
                    self.failures.append(f"{name} (audit open): " + "; ".join(shown[:3]))
            elif not self.recorded():
                self.failures.append(f"{name}: left the blind audit without a recorded pause"
                                     + (" and showed " + "; ".join(shown[:2]) if shown else ""))
            else:
                self.paused.append(name)
            if not d.asked:
                return

    def run(self) -> None:
        w = self.w
        for name, a in _menu_actions(w):
            if not _left_out(name):
                self.drive(name, a.trigger)
        seen = {id(a) for _n, a in _menu_actions(w)}
        for a in w.findChildren(QAction):
            text = a.text().split("\t")[0].replace("&", "")
            if id(a) in seen or not text or a.menu() is not None or _left_out(text):
                continue
            if a.isEnabled() and (a.shortcut().toString() or a in w.actions()):
                self.drive(f"action {text} ({a.shortcut().toString()})", a.trigger)
        for sc in w.findChildren(QShortcut):
            if sc.isEnabled() and sc.key().toString() and not _left_out(sc.key().toString()):
                self.drive(f"key {sc.key().toString()}", sc.activated.emit)
        self.double_clicks()

    def double_clicks(self) -> None:
        w = self.w
        for page in self.views.pages(w):
            self.back()
            i = w.tabs.indexOf(page)
            if not (w.tabs.isTabVisible(i) and w.tabs.isTabEnabled(i)):
                continue
            for view in page.findChildren(QAbstractItemView):
                w.tabs.setCurrentIndex(i)
                QApplication.processEvents()
                if not view.isVisible() or view.model() is None:
                    continue
                n = min(view.model().rowCount(QModelIndex()), 4)
                for r in range(n):
                    def click(v: QAbstractItemView = view, row: int = r) -> None:
                        w.tabs.setCurrentIndex(w.tabs.indexOf(page))
                        ix = v.model().index(row, 0)
                        v.doubleClicked.emit(ix)
                        v.activated.emit(ix)

                    self.drive(f"double-click {type(view).__name__}#{view.objectName()} row {r}", click)


@pytest.mark.parametrize("recheck", [False, True], ids=["first pass", "re-check"])
def test_nothing_reachable_shows_what_a_blind_audit_hides_unless_paused_and_recorded(
        qtbot: Any, open_window: Any, project: tuple[str, Path], monkeypatch: pytest.MonkeyPatch,
        recheck: bool) -> None:
    name, folder = project
    w, views, c = _window(open_window, qtbot, name, folder)
    pop = views.audit_population(w)
    ids = [str(t) for t in pop.ids[:60].tolist()]
    target = max(ids, key=lambda t: len("".join(views.outcome_texts(w, c.index_of(t)))))
    other = next(t for t in ids if t != target)
    _plant(w, c, target)
    p = w.state.project
    aid = p.audit.create_set("contract", c.scheme.task, [target, other], {}, blind=True, rechecks=[(2, target)])
    p.audit.create_set("open one", c.scheme.task, [target], {}, blind=False)  # a way out: a set not blind
    driver = Driver(monkeypatch)
    assert menus.start_audit_set(w, aid) == 3
    extra: tuple[str, ...] = ()
    if recheck:
        p.labels.add(c.scheme.task, c.scheme.target, target, "alice", c.scheme.values[0], notes=FIRST_NOTE,
                     audit_set_id=aid)  # the first answer (no undo history: the drive's undos keep it)
        c.reload()
        c.go(2)
        assert c.is_recheck() and c.current == target
        extra = (FIRST_NOTE,)
    assert c.audit is not None and c.current == target
    k = Contract(w, views, c, aid, target, driver, extra)
    k.run()
    assert len(k.driven) > 30, f"{name}: only {len(k.driven)} routes driven"
    assert not k.failures, f"{name}: " + "\n".join(k.failures)
