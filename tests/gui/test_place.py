"""Reopening a project puts the auditor back where they were: the tab, the
sample under review, the queue and the position in it, and the window's docks — per project."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gui


def test_reopening_restores_tab_sample_queue_and_layout(qtbot, open_window, sbuc_project: Path,
                                                        png_project: Path) -> None:
    w = open_window(sbuc_project)
    st = w.spatial
    ids = st.dataset.samples.sample_id
    # filter Browse to one relation, review its 4th row, step on twice
    w.browser.filters.text.setText("left of")
    qtbot.waitUntil(lambda: w.browser.model.total < st.dataset.n)
    rows = w.browser.model.all_rows()
    w.method_views["spatial"].review_from_browse(w, rows[3])
    w.spatial.controller.next()
    w.spatial.controller.next()
    assert st.queue_pos == 5 and st.current == rows[5]
    queue = [str(ids[r]) for r in st.queue]
    w.install_extra_panels()
    jobs = w.docks["Jobs"]  # hidden until asked for
    assert not jobs.isVisible()
    jobs.show()
    w.close()

    w2 = open_window(sbuc_project)
    st2 = w2.spatial
    ids2 = st2.dataset.samples.sample_id
    assert w2.tabs.currentWidget() is w2.review
    assert [str(ids2[r]) for r in st2.queue] == queue
    assert st2.queue_pos == 5
    assert str(ids2[st2.current]) == queue[5]
    assert w2.labeling.position.text().startswith(f"item 6 of {len(queue)}")
    w2.install_extra_panels()
    # (the jobs dock is installed after the project opened: it takes the kept layout too)
    assert w2.docks["Jobs"].isVisible()
    # per project: another project opens at its own start
    w2.tabs.setCurrentWidget(w2.method_views["spatial"].calibration_panel(w2).parentWidget())
    w2.close()
    w3 = open_window(png_project)
    assert w3.tabs.currentWidget() is w3.browser and w3.spatial.queue == []
    w3.close()
    # and the calibration tab comes back for the first project
    w4 = open_window(sbuc_project)
    assert w4.tabs.tabText(w4.tabs.currentIndex()) == "Calibration"
    assert w4.calibration is not None
