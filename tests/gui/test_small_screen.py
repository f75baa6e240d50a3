"""At 1024 × 700 (a lab laptop) every tab of every method is usable: the window
keeps to the screen (no page forces it wider or taller, the jobs panel included), no page needs
scrolling, no one-line label is cut, and MetaLogic's heatmap and the images keep a
usable size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel, QTabWidget, QWidget

from .test_shortcut_sheet import METHODS, all_methods, all_methods_template  # noqa: F401

pytestmark = pytest.mark.gui

SMALL = (1024, 700)


def _settle(qtbot: Any) -> None:
    for _ in range(3):
        QApplication.processEvents()
    qtbot.wait(30)


def _cut_labels(page: Any) -> list[str]:
    """One-line labels whose text is wider than the label (the end would be cut)."""
    out = []
    for lab in page.findChildren(QLabel):
        if not lab.isVisible() or lab.wordWrap() or not lab.text() or lab.textFormat() == 1 \
                or "<" in lab.text() or lab.pixmap() is not None and not lab.pixmap().isNull():
            continue
        for line in lab.text().split("\n"):
            if lab.fontMetrics().horizontalAdvance(line) > lab.contentsRect().width() + 1:
                out.append(f"{lab.objectName() or type(lab.parent()).__name__}: {line!r} "
                           f"({lab.fontMetrics().horizontalAdvance(line)} > {lab.contentsRect().width()})")
    return out


def _pages(w: Any) -> list[tuple[str, Any]]:
    """Every tab shown and every page of its own first tab widget, made current in turn."""
    out = []
    for i in range(w.tabs.count()):
        if not (w.tabs.isTabVisible(i) and w.tabs.isTabEnabled(i)):
            continue
        w.tabs.setCurrentIndex(i)
        QApplication.processEvents()
        page = w.tabs.widget(i)
        out.append((w.tabs.tabText(i), page))
        inner = [t for t in page.findChildren(QTabWidget) if t.isVisible()]
        if inner:
            t = inner[0]
            for j in range(1, t.count()):
                if t.isTabEnabled(j):
                    out.append((f"{w.tabs.tabText(i)} / {t.tabText(j)}", (t, j)))
    return out


def test_every_tab_fits_a_1024_by_700_window(qtbot: Any, open_window: Any, all_methods: Path) -> None:  # noqa: F811
    w = open_window(all_methods)
    qtbot.waitUntil(lambda: all(n in w.method_views for n in METHODS), timeout=20000)
    w.install_extra_panels()
    w.dyeval_page.session.open_tree("demo")
    w.resize(*SMALL)
    _settle(qtbot)
    problems: list[str] = []
    for title, page in _pages(w):
        if isinstance(page, tuple):
            t, j = page
            t.setCurrentIndex(j)
            page = t.widget(j)
        _settle(qtbot)
        w.resize(*SMALL)
        _settle(qtbot)
        if w.width() > SMALL[0] or w.height() > SMALL[1]:
            problems.append(f"{title}: the window grew to {w.width()}×{w.height()}")
        central = w.centralWidget()
        view = getattr(central, "viewport", lambda: central)()
        if w.tabs.width() > view.width():
            problems.append(f"{title}: {w.tabs.width()} px wide in a {view.width()} px window (scrolls sideways)")
        if w.tabs.height() > view.height():
            problems.append(f"{title}: {w.tabs.height()} px high in a {view.height()} px window (scrolls)")
        problems += [f"{title}: cut {x}" for x in _cut_labels(page)]
    # the jobs panel shown below a page keeps the window on the screen
    w.docks["Jobs"].show()
    w.tabs.setCurrentWidget(w.review)
    _settle(qtbot)
    w.resize(*SMALL)
    _settle(qtbot)
    if w.height() > SMALL[1] or w.width() > SMALL[0]:
        problems.append(f"jobs panel: the window grew to {w.width()}×{w.height()}")
    w.docks["Jobs"].hide()
    assert not problems, "\n".join(problems)


def test_the_heatmap_and_the_images_keep_a_usable_size(qtbot: Any, open_window: Any, all_methods: Path) -> None:  # noqa: F811
    w = open_window(all_methods)
    qtbot.waitUntil(lambda: all(n in w.method_views for n in METHODS), timeout=20000)
    w.resize(*SMALL)
    w.tabs.setCurrentWidget(w.metalogic_tabs)
    w.metalogic_tabs.setCurrentWidget(w.metalogic_page)
    _settle(qtbot)
    heat = w.metalogic_page.heat_view
    assert heat.width() >= 240 and heat.height() >= 220, heat.size()
    # every line of the heatmap's headers is whole ("position-less", not "sition-l")
    hh, m = heat.horizontalHeader(), heat.model()
    assert m.columnCount() >= 3
    for c in range(m.columnCount()):
        for line in str(m.headerData(c, Qt.Horizontal)).split("\n"):
            assert hh.fontMetrics().horizontalAdvance(line) + 8 <= hh.sectionSize(c), (line, hh.sectionSize(c))
    w.tabs.setCurrentWidget(w.review)
    w.method_views["spatial"].review_from_browse(w, 0)
    _settle(qtbot)
    for pane in (w.viewer.left.view, w.viewer.right.view):
        assert pane.height() >= 180 and pane.width() >= 300, pane.size()  # was about 130 px high


def test_the_confusion_headers_are_whole_in_a_small_window(qtbot: Any, labelled_state: Any) -> None:
    """Calibration's confusion matrix in the room a 1024 × 700 window leaves it: its headers
    read whole ("human PASS", not "ıma PAS")."""
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    panel = CalibrationPanel(labelled_state)
    qtbot.addWidget(panel)
    panel.resize(SMALL[0], SMALL[1] - 80)  # less the menu bar, the tab bar and the status bar
    panel.show()
    qtbot.waitExposed(panel)
    _settle(qtbot)
    cv = panel.plots.confusion_view
    assert cv.isVisible() and cv.columnCount() >= 3
    hint = panel.minimumSizeHint()
    assert hint.width() <= SMALL[0] and hint.height() <= SMALL[1] - 80, hint  # fits without scrolling
    for header, count, item in ((cv.horizontalHeader(), cv.columnCount(), cv.horizontalHeaderItem),
                                (cv.verticalHeader(), cv.rowCount(), cv.verticalHeaderItem)):
        fm = header.fontMetrics()
        for c in range(count):
            text = item(c).text()
            for line in text.split("\n"):
                room = header.sectionSize(c) if header is cv.horizontalHeader() else header.width()
                assert fm.horizontalAdvance(line) + 12 <= room, (line, room)
            if header is cv.horizontalHeader():
                assert len(text.split("\n")) * fm.height() <= header.height(), text


def test_protobias_agreement_text_sits_below_its_table_whole(qtbot: Any, open_window: Any,  # noqa: F811
                                                             all_methods: Path) -> None:
    w = open_window(all_methods)
    qtbot.waitUntil(lambda: all(n in w.method_views for n in METHODS), timeout=20000)
    w.resize(*SMALL)
    page = w.findChild(QWidget, "protobiasMetrics")
    w.show_page(w.method_views["protobias"].pages(w)[0])
    page.parentWidget().parentWidget().setCurrentWidget(page)
    _settle(qtbot)
    humans, kappa = page.humans, page.kappa
    assert kappa.isVisible() and kappa.text()
    top_of_text = kappa.mapTo(page, kappa.rect().topLeft()).y()
    bottom_of_table = humans.mapTo(page, humans.rect().bottomLeft()).y()
    assert top_of_text > bottom_of_table, (top_of_text, bottom_of_table)
    assert kappa.height() >= kappa.heightForWidth(kappa.width()), "the agreement text is cut"
