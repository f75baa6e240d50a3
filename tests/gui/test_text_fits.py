"""Texts are shown whole: "your label: UNDECIDABLE", the applied version's
column header, "15 / 800 labelled" on one line; the grid's P / F / U badges are explained."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from .conftest import blind_queue

pytestmark = pytest.mark.gui


def _fits(widget, text: str, pad: int = 0) -> bool:
    return widget.fontMetrics().horizontalAdvance(text) + pad <= widget.contentsRect().width()


def test_labelling_bar_texts_are_whole(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    w.resize(1100, 800)  # narrower than usual: the bar must still not cut its texts
    w.method_views["spatial"].review_from_browse(w, 0)
    assert w.labeling.c.record("UNDECIDABLE")  # goes on to the next item
    w.labeling.c.prev()
    qtbot.waitUntil(lambda: w.labeling.yours.text() == "your label: UNDECIDABLE")
    qtbot.wait(20)
    assert _fits(w.labeling.yours, "your label: UNDECIDABLE")
    bar = w.labeling.bar
    text = bar.text()
    assert text.endswith("labelled") and "\n" not in text
    # on one line: the bar is wider than its text (plus the frame), at any count up to 5 digits
    assert _fits(bar, "00000 / 00000 labelled", 8)


def test_applied_version_header_is_whole(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    w.resize(1600, 1000)
    w.tabs.setCurrentWidget(w._calibration_tab)
    t = w.method_views["spatial"].calibration_panel(w).deltas_box.delta_table
    qtbot.waitUntil(lambda: t.isVisible())
    qtbot.wait(50)
    hh = t.horizontalHeader()
    labels = [t.horizontalHeaderItem(c).text() for c in range(3)]
    assert labels[1] == "v1\n(applied)"  # two short lines: the column is narrow
    fm = hh.fontMetrics()
    for c, label in enumerate(labels):
        for line in label.split("\n"):
            # the header's style pads each section by about 6 px a side
            assert fm.horizontalAdvance(line) + 12 <= hh.sectionSize(c), (line, hh.sectionSize(c))
    assert hh.height() >= 2 * fm.height()  # both lines shown


def test_grid_badges_have_a_legend(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    b = w.browser
    assert not b.badge_legend.isVisible()  # the table needs none
    qtbot.mouseClick(b.view_buttons.button(1), Qt.LeftButton)
    assert b.badge_legend.isVisible()
    text = b.badge_legend.text()
    assert "P = PASS, F = FAIL, U = UNDECIDABLE" in text
    assert "top-right badge and frame: checker verdict" in text and "top-left badge: human label" in text
    # in a blind queue the checker's and the annotators' badges are hidden, and so are their explanations
    blind_queue(w.spatial, [0, 1])
    assert "checker" not in b.badge_legend.text() and "human label" not in b.badge_legend.text()


def test_live_verdicts_intervals_and_the_confusion_headers_are_whole(qtbot, labelled_state) -> None:
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    panel = CalibrationPanel(labelled_state)
    qtbot.addWidget(panel)
    panel.resize(1500, 980)
    panel.show()
    qtbot.waitExposed(panel)
    panel.params_box.sliders["tau"].spin.setValue(0.54)
    panel.flush_intervals()
    qtbot.wait(50)
    t = panel.live_box.metrics_table
    fm = t.fontMetrics()
    for r in range(t.rowCount()):
        for c in range(t.columnCount()):
            lines = t.item(r, c).text().split("\n")
            assert len(lines) * fm.height() <= t.rowHeight(r), (r, c)  # a value and its interval below it
            for line in lines:
                assert fm.horizontalAdvance(line) + 8 <= t.columnWidth(c), (line, t.columnWidth(c))
    cv = panel.plots.confusion_view
    hh = cv.horizontalHeader()
    hfm = hh.fontMetrics()
    for c in range(cv.columnCount()):
        for line in cv.horizontalHeaderItem(c).text().split("\n"):
            assert hfm.horizontalAdvance(line) + 12 <= hh.sectionSize(c), (line, hh.sectionSize(c))


def test_calibrated_minus_uncalibrated_shows_every_row_without_a_scroller(qtbot, labelled_state) -> None:
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    panel = CalibrationPanel(labelled_state)
    qtbot.addWidget(panel)
    panel.resize(1500, 980)
    panel.show()
    qtbot.waitExposed(panel)
    t = panel.deltas_box.delta_table
    assert t.rowCount() >= 5
    assert t.verticalScrollBar().maximum() == 0  # every row in view: the column scrolls, not the table
    last = t.visualItemRect(t.item(t.rowCount() - 1, 0))
    assert t.viewport().rect().contains(last)


def test_the_live_verdicts_counts_of_a_million_samples_are_whole(qtbot, open_window, sbuc_project: Path) -> None:
    """The stored version's column and Δ show six- and seven-digit counts whole (a 1M project)."""
    from ui.methods.spatial.calibration.deltas import Summary

    w = open_window(sbuc_project)
    w.resize(1600, 1000)
    w.tabs.setCurrentWidget(w._calibration_tab)
    panel = w.method_views["spatial"].calibration_panel(w)
    box = panel.live_box
    qtbot.waitUntil(lambda: box.metrics_table.isVisible())
    live = Summary({"pass_count": 224_363.0, "fail_count": 223_637.0, "undecidable_count": 552_000.0}, [])
    active = Summary({"pass_count": 323_864.0, "fail_count": 323_382.0, "undecidable_count": 352_754.0}, [])
    box.show_summaries(live, active)
    t = box.metrics_table
    hh, fm = t.horizontalHeader(), t.fontMetrics()
    shown = {t.item(r, c).text() for r in range(3) for c in (2, 3)}
    assert {"323864", "+199246", "-99501"} <= shown, shown  # the counts of the 1M screen
    for r in range(t.rowCount()):
        for c in (2, 3):
            text = t.item(r, c).text()
            assert fm.horizontalAdvance(text) + 8 <= hh.sectionSize(c), (text, hh.sectionSize(c))
