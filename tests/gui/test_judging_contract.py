"""The judging contract, run over every method whose views are registered in `ui.methods.VIEWS`.

**Blind audits are blind.** On a small demo project of the method, an annotator's own label
from before an audit set was drawn, another annotator's label, and the method's automated
outcome of one target are planted; a blind audit set with that target and a re-check of it is
opened from the Audit menu. On the blind first pass and again on the re-check (after a first
answer with a note), every visible widget of every page the window lets the auditor reach is
read — texts, tooltips, the rows of item models, tab titles, the window title and the status
bar — and none may show the automated outcome (`MethodViews.outcome_texts`), the other
annotator's name or note, the annotator's earlier note, or (on the re-check) the first answer;
no filter on hidden data may be usable; the judgement bar shows no earlier answer. Spatial's pair
view shows every judge's outcome and score of the sample outside the audit, and none of them in
it; its Browse table a column per judge and the filter "judges disagree" (set before the audit),
and in it neither. A fifth
method gets this by registering its views.

**Keys act at once.** After a switch to the method's judging page (by the tab bar, as a click
does), the scheme's first key labels the target shown; N puts the cursor at the end of the
note, typing adds to it, Esc leaves the box with the note saved.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QComboBox,
    QGraphicsView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

from ui import menus
from ui.methods import view_names
from workstation.methods import get_method
from tests import toy_method
from workstation.store import Project

pytestmark = pytest.mark.gui

NAMES = sorted(set(view_names()) | {toy_method.NAME})


@pytest.fixture(scope="module", autouse=True)
def lamp_method_registered() -> Any:
    """The Lamp method of the tests (core and views), registered for this module's tests."""
    with toy_method.registered():
        yield
OTHER = "bob-sentinel"
OTHER_NOTE = "BOB-NOTE-QX"
EARLIER_NOTE = "EARLIER-NOTE-QX"
FIRST_NOTE = "FIRSTPASS-NOTE-QX"


@pytest.fixture(scope="module", params=NAMES)
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    name = request.param
    folder = tmp_path_factory.mktemp(f"contract_{name}") / "p"
    with Project.create(folder) as p:
        get_method(name).build_demo(p, small=True, workers=0)
    return name, folder


@pytest.fixture
def project(demo: tuple[str, Path], tmp_path: Path) -> tuple[str, Path]:
    name, folder = demo
    dst = tmp_path / "p"
    shutil.copytree(folder, dst)
    return name, dst


def _window(open_window: Any, qtbot: Any, name: str, folder: Path) -> tuple[Any, Any, Any]:
    w = open_window(folder, annotator="alice")
    qtbot.waitUntil(lambda: name in w.method_views, timeout=20000)
    views = w.method_views[name]
    views.show_judging(w)
    QApplication.processEvents()
    c = views.controller(w)
    w.state.set_annotator("alice")
    return w, views, c


# ---- reading the window ----------------------------------------------------------------------------

def _model_texts(view: QAbstractItemView, limit: int = 400) -> list[str]:
    m = view.model()
    if m is None:
        return []
    out: list[str] = []
    rows = min(m.rowCount(QModelIndex()), limit)
    try:
        cols = m.columnCount(QModelIndex())
    except TypeError:  # a list model: one column
        cols = 1
    for r in range(rows):
        for col in range(cols):
            if isinstance(view, QAbstractItemView) and hasattr(view, "isColumnHidden") and view.isColumnHidden(col):
                continue
            ix = m.index(r, col)
            for role in (Qt.DisplayRole, Qt.ToolTipRole):
                v = m.data(ix, role)
                if v is not None:
                    out.append(str(v))
    for col in range(cols):
        for role in (Qt.DisplayRole, Qt.ToolTipRole):
            v = m.headerData(col, Qt.Horizontal, role)
            if v is not None:
                out.append(str(v))
    return out


def visible_texts(w: Any) -> list[tuple[QWidget | None, str]]:
    """(widget, text) of everything the auditor can read in the window now."""
    out: list[tuple[QWidget | None, str]] = [(None, w.windowTitle()), (None, w.statusBar().currentMessage())]
    for x in w.findChildren(QWidget):
        if not x.isVisible():
            continue
        texts: list[str] = [x.toolTip(), x.statusTip(), x.whatsThis()]
        if isinstance(x, (QLabel, QAbstractButton, QLineEdit)):
            texts.append(x.text())
        if isinstance(x, (QPlainTextEdit, QTextEdit)):
            texts.append(x.toPlainText())
        if isinstance(x, QComboBox):
            texts.append(x.currentText())  # its other entries are choices, not something shown
        if isinstance(x, QTabBar):
            texts += [x.tabText(i) + " " + x.tabToolTip(i) for i in range(x.count()) if x.isTabVisible(i)]
        if isinstance(x, QAbstractItemView):
            texts += _model_texts(x)
        if isinstance(x, QGraphicsView) and x.scene() is not None:
            for it in x.scene().items():
                if hasattr(it, "text") and callable(it.text) and it.isVisible():
                    try:
                        texts.append(str(it.text()))
                    except TypeError:
                        pass
                if it.toolTip():
                    texts.append(it.toolTip())
        out += [(x, t) for t in texts if t]
    return out


def _in_judge_bar(x: QWidget | None) -> bool:
    while x is not None:
        if x.objectName() == "judgeBar":
            return True
        x = x.parentWidget()
    return False


def assert_nothing_leaks(w: Any, views: Any, c: Any, index: int, extra: tuple[str, ...] = ()) -> int:
    """Read every visible widget; fail on anything the policy hides. Returns how much was read."""
    outcome = [t for t in views.outcome_texts(w, index) if t]
    if not c.scheme.ordinal:  # the annotator's earlier value (the scheme's last): only on the bar's buttons
        outcome.append(c.scheme.values[-1])
    never = (OTHER, OTHER_NOTE, EARLIER_NOTE) + extra
    texts = visible_texts(w)
    for x, t in texts:
        where = f"{type(x).__name__}#{x.objectName()}" if x is not None else "window"
        for bad in never:
            assert bad not in t, f"{bad!r} shown by {where}: {t[:200]!r}"
        if _in_judge_bar(x):
            continue  # the bar shows the scheme's values; what it shows of the target is checked below
        for bad in outcome:
            assert bad.lower() not in t.lower(), f"the automated outcome {bad!r} shown by {where}: {t[:200]!r}"
    for x in w.findChildren(QWidget):
        reveals = str(x.property("reveals") or "")
        if x.isVisible() and reveals and x.isEnabled():
            raise AssertionError(f"the filter {x.objectName()} on hidden data ({reveals}) is usable")
    bar = views.bar(w)
    assert bar.yours.text() == "your label: —"
    assert not any(b.isChecked() for b in bar.buttons.values())
    return len(texts)


def walk_every_page(w: Any, views: Any, c: Any, index: int, extra: tuple[str, ...] = ()) -> int:
    """`assert_nothing_leaks` on every page of the method the window lets the auditor reach
    (each enabled tab, and each enabled tab of the tab widgets in it), then back to judging."""
    read = 0
    for page in views.pages(w):
        i = w.tabs.indexOf(page)
        if not (w.tabs.isTabVisible(i) and w.tabs.isTabEnabled(i)):
            continue
        w.tabs.setCurrentIndex(i)
        QApplication.processEvents()
        read += assert_nothing_leaks(w, views, c, index, extra)
        for inner in [page] * isinstance(page, QTabWidget) + page.findChildren(QTabWidget):
            for k in range(inner.count()):
                if inner.isTabEnabled(k) and inner.isTabVisible(k):
                    inner.setCurrentIndex(k)
                    QApplication.processEvents()
                    read += assert_nothing_leaks(w, views, c, index, extra)
    views.show_judging(w)
    QApplication.processEvents()
    assert c.current_index == index, "walking the pages moved the queue"
    return read


def _plant(w: Any, c: Any, target: str) -> None:
    """The annotator's own label from before the audit, and another annotator's, of `target`."""
    p = w.state.project
    s = c.scheme
    p.labels.add(s.task, s.target, target, "alice", s.values[-1], notes=EARLIER_NOTE)
    p.labels.add(s.task, s.target, target, OTHER, s.values[0], notes=OTHER_NOTE)
    c.reload()


def _key(qtbot: Any, w: Any, key: str) -> None:
    target = QApplication.focusWidget()
    qtbot.keyClicks(target if target is not None and target.isVisible() else w, key)


# ---- the contract --------------------------------------------------------------------------------

def test_a_blind_audit_shows_nothing_it_hides_on_the_first_pass_and_on_the_recheck(
        qtbot: Any, open_window: Any, project: tuple[str, Path]) -> None:
    name, folder = project
    w, views, c = _window(open_window, qtbot, name, folder)
    pop = views.audit_population(w)
    assert pop is not None and len(pop) >= 2, f"{name}: nothing to audit in its demo"
    ids = [str(t) for t in pop.ids[:60].tolist()]
    # the target whose automated outcome says the most (a method without one has none to hide)
    target = max(ids, key=lambda t: len("".join(views.outcome_texts(w, c.index_of(t)))))
    other = next(t for t in ids if t != target)
    assert views.outcome_texts(w, c.index_of(target)) or name not in ("spatial", "metalogic", "protobias",
                                                                      "dyeval"), f"{name}: no outcome to hide"
    _plant(w, c, target)
    # spatial: outside an audit the pair view shows every judge's outcome and score of the sample;
    # in the blind audit none of it may show anywhere
    judges = ("Judges:", "GenEval") if name == "spatial" else ()
    if judges:
        c.go(c.index_of(target))
        QApplication.processEvents()
        line = w.viewer.left.judges
        assert line.isVisible() and all(t in line.text() for t in judges), line.text()
        # and Browse shows a column per judge, with a filter on where two of them disagree
        m = w.browser.model
        qtbot.waitUntil(lambda: len(m.q.judges) > 0 and not m.judges.computing, timeout=30000)
        heads = [m.headerData(k, Qt.Horizontal) for k in range(m.columnCount())]
        assert "GenEval" in heads and w.browser.filters.judges.count() > 1, heads
        w.browser.filters.pick_judges("checker", "spatial.geneval")
    aid = w.state.project.audit.create_set("contract", c.scheme.task, [target, other], {}, blind=True,
                                           rechecks=[(2, target)])
    assert menus.start_audit_set(w, aid) == 3
    assert c.audit is not None and c.audit.blind and c.current == target and not c.is_recheck()
    index = c.current_index
    # the first pass: the earlier label is not "done" and shows nowhere
    assert c.progress() == (0, 3)
    assert walk_every_page(w, views, c, index, extra=judges) > 20
    # a first answer, with a note typed after N
    bar = views.bar(w)
    _key(qtbot, w, "N")
    assert bar.notes.hasFocus()
    qtbot.keyClicks(bar.notes, FIRST_NOTE)
    qtbot.keyClick(bar.notes, Qt.Key_Escape)
    assert not bar.notes.hasFocus()
    _key(qtbot, w, c.scheme.keys[0])
    first = w.state.project.labels.events(task=c.scheme.task, target_id=target)[-1]
    assert (first.annotator, first.value, first.notes, first.audit_set_id) == \
        ("alice", c.scheme.values[0], FIRST_NOTE, aid)
    # the re-check: nothing of the first answer either
    c.go(2)
    assert c.is_recheck() and c.current == target
    assert walk_every_page(w, views, c, index, extra=(FIRST_NOTE, *judges)) > 20
    _key(qtbot, w, c.scheme.keys[-1])
    last = w.state.project.labels.events(task=c.scheme.task, target_id=target)[-1]
    assert (last.value, last.source, last.audit_set_id) == (c.scheme.values[-1], "recheck", aid)
    # leaving the audit: the method's pages open again
    menus.leave_audit(w)
    assert c.audit is None
    for page in views.pages(w):
        assert w.tabs.isTabEnabled(w.tabs.indexOf(page))
    if judges:
        views.show_judging(w)
        c.go(c.index_of(target))
        QApplication.processEvents()
        assert all(t in w.viewer.left.judges.text() for t in judges)


def test_label_keys_and_notes_act_at_once_after_a_tab_switch(qtbot: Any, open_window: Any,
                                                            project: tuple[str, Path]) -> None:
    name, folder = project
    w, views, c = _window(open_window, qtbot, name, folder)
    page = views.pages(w)[0]
    # away to the start of the window's tabs, then back by a click on the method's tab
    first_other = next((i for i in range(w.tabs.count()) if w.tabs.isTabVisible(i)
                        and w.tabs.widget(i) not in views.pages(w)), None)
    if first_other is not None:
        w.tabs.setCurrentIndex(first_other)
    bar_tabs = w.tabs.tabBar()
    qtbot.mouseClick(bar_tabs, Qt.LeftButton, pos=bar_tabs.tabRect(w.tabs.indexOf(page)).center())
    views.show_judging(w)
    QApplication.processEvents()
    assert c.current_index >= 0, f"{name}: no target to judge in its demo"
    target = c.current
    bar = views.bar(w)
    bar.auto.setChecked(False)  # stay on the target to read what the key wrote
    _key(qtbot, w, c.scheme.keys[0])
    ev = w.state.project.labels.events(task=c.scheme.task, target_id=target)
    assert ev and (ev[-1].annotator, ev[-1].value) == ("alice", c.scheme.values[0]), \
        f"{name}: the key did not label the target shown"
    # notes: a note exists; N puts the cursor at its end (nothing selected); typing adds to it
    c.save_notes("kept note")
    bar.refresh()
    _key(qtbot, w, "N")
    assert bar.notes.hasFocus()
    cur = bar.notes.textCursor()
    assert not cur.hasSelection() and cur.position() == len("kept note")
    qtbot.keyClicks(bar.notes, " and more")
    qtbot.keyClick(bar.notes, Qt.Key_Escape)  # leaves the box; what was typed is saved
    assert not bar.notes.hasFocus()
    assert c.current_state == (c.scheme.values[0], "kept note and more")
    assert "saved" in bar.notes_saved.text()
    # and the keys act again at once
    _key(qtbot, w, c.scheme.keys[-1])
    assert w.state.project.labels.events(task=c.scheme.task, target_id=target)[-1].value == c.scheme.values[-1]
    # Enter in the notes box saves too and hands the keys back
    _key(qtbot, w, "N")
    qtbot.keyClicks(bar.notes, "!")
    qtbot.keyClick(bar.notes, Qt.Key_Return)
    assert not bar.notes.hasFocus() and c.current_state[1] == "kept note and more!"


GOLD_NOTE = "GOLD-NOTE-QX"


def test_a_raters_queue_in_an_overlap_set_with_gold_shows_only_their_items_and_nothing_of_others_or_gold(
        qtbot: Any, open_window: Any, project: tuple[str, Path]) -> None:
    """An overlap set with a seeded gold item, opened by one of its raters: their queue holds
    their items only; on every page, on an item shared with the other rater and on the gold item,
    nothing shows the other rater's name or note, the gold answer's note, or the word gold."""
    import re

    name, folder = project
    w, views, c = _window(open_window, qtbot, name, folder)
    pop = views.audit_population(w)
    assert pop is not None and len(pop) >= 3, f"{name}: nothing to audit in its demo"
    ids = [str(t) for t in pop.ids[:60].tolist()]
    shared, theirs, gold = ids[0], ids[1], ids[2]
    p = w.state.project
    s = c.scheme
    p.labels.add(s.task, s.target, shared, OTHER, s.values[0], notes=OTHER_NOTE)
    p.audit.add_gold(s.task, [(gold, s.values[0], GOLD_NOTE)], "test")
    aid = p.audit.create_set("raters", s.task, [shared, theirs, gold], {}, blind=True, rechecks=[(3, shared)],
                             gold=[gold], assignment={shared: ("alice", OTHER), theirs: (OTHER,),
                                                      gold: ("alice", OTHER)})
    c.reload()
    assert menus.start_audit_set(w, aid) >= 3
    assert c.audit is not None and c.audit.overlap
    assert theirs not in c.queue and sorted(set(c.queue)) == sorted({shared, gold})
    assert c.progress() == (0, 3)
    word = re.compile(r"\bgold\b", re.IGNORECASE)
    for target in (shared, gold):
        c.go_target(c.index_of(target))
        index = c.current_index
        assert walk_every_page(w, views, c, index, extra=(GOLD_NOTE,)) > 20
        for x, t in visible_texts(w):
            assert not word.search(t), f"{type(x).__name__} says gold: {t[:200]!r}"
    _key(qtbot, w, s.keys[0])
    ev = p.labels.events(task=s.task, target_id=c.current or "")[-1]
    assert (ev.annotator, ev.audit_set_id) == ("alice", aid)
    menus.leave_audit(w)
