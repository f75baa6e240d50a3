"""Audit → Raters…: the rater monitor panel on a project whose MetaLogic pairs three raters
labelled (one of them fast and careless) shows the figures of the `raters` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.store import Project

from tests.core.test_raters_command import make_rated

pytestmark = pytest.mark.gui


def _audit_action(w: Any, text: str) -> Any:
    for a in w.audit_menu.actions():
        if a.text() == text:
            return a
    raise AssertionError(f"no Audit → {text}")


def test_the_rater_panel_shows_the_commands_numbers(open_window: Any, tmp_path: Path, monkeypatch: Any) -> None:
    folder = make_rated(tmp_path / "rated")
    out = tmp_path / "raters.json"
    assert main(["raters", "--project", str(folder), "--boot", "60", "--json", str(out)]) == 0
    (task,) = json.loads(out.read_text(encoding="utf-8"))

    from ui.widgets import rater_monitor

    made: list[Any] = []
    real_init = rater_monitor.RaterMonitorPanel.__init__

    def init(self: Any, *a: Any, **k: Any) -> None:
        real_init(self, *a, **k)
        self.n_boot = 60  # the command's --boot
        made.append(self)

    monkeypatch.setattr(rater_monitor.RaterMonitorPanel, "__init__", init)
    w = open_window(folder)
    _audit_action(w, "Raters…").trigger()
    win = w.raters_window
    assert win.isVisible() and win.windowTitle() == "Raters"
    panel = win.panel
    assert panel.task_combo.currentData() == "metalogic.pair"
    assert "3 raters, 24 items, 24 rated by two or more (3 raters on 24 items)" in panel.summary.text()
    shown = {panel.cell(panel.raters, i, "rater"): i for i in range(panel.raters.rowCount())}
    assert set(shown) == {"ann", "bea", "cy"}
    for r in task["raters"]:
        i = shown[r["annotator"]]
        assert panel.cell(panel.raters, i, "items") == str(r["items"])
        assert panel.cell(panel.raters, i, "s/item") == f"{r['median_seconds']:.1f}"
        assert (panel.cell(panel.raters, i, "speed") == "SPEEDER") == r["speeder"]
        p = r["peer_percent"]
        assert panel.cell(panel.raters, i, "peers (%)") == \
            f"{100 * p['value']:.1f}% [{100 * p['lo']:.1f}, {100 * p['hi']:.1f}]"
        k = r["peer_kappa"]
        assert panel.cell(panel.raters, i, "peers κ") == f"{k['value']:.3f} [{k['lo']:.3f}, {k['hi']:.3f}]"
        assert panel.cell(panel.raters, i, "α without") == f"{r['alpha_without']:.3f}"
        first, last = r["drift_peer_first"]["value"], r["drift_peer_last"]["value"]
        assert panel.cell(panel.raters, i, "drift (peers)") == f"{100 * first:.0f}% → {100 * last:.0f}%"
    assert panel.cell(panel.raters, shown["cy"], "speed") == "SPEEDER"
    stats = {panel.cell(panel.agreement, i, "Statistic"): i for i in range(panel.agreement.rowCount())}
    for name, title in (("alpha_nominal", "Krippendorff's α (nominal)"), ("fleiss_kappa", "Fleiss' κ"),
                        ("ac1", "Gwet's AC1")):
        e = task["agreement"][name]
        assert panel.cell(panel.agreement, stats[title], "Value [95 %]") == \
            f"{e['value']:.3f} [{e['lo']:.3f}, {e['hi']:.3f}]"
        assert panel.cell(panel.agreement, stats[title], "Ratings") == str(e["n"])
    win.close()


def test_the_rater_panel_on_a_project_without_labels(open_window: Any, tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    Project.create(folder).close()
    w = open_window(folder)
    _audit_action(w, "Raters…").trigger()
    panel = w.raters_window.panel
    assert "No labels in this project yet" in panel.summary.text() and panel.raters.rowCount() == 0
    w.raters_window.close()


def test_during_a_blind_audit_the_monitor_opens_only_after_a_recorded_pause(open_window: Any, png_project: Path,
                                                                          monkeypatch: Any) -> None:
    """The monitor sets a rater's labels against the others' and gold: Stay in audit shows
    nothing of it, Pause records the pause and opens it."""
    from PySide6.QtWidgets import QApplication

    from ui.widgets import audit_pause

    from .conftest import blind_queue

    asked: list[tuple[str, int]] = []
    answer = [False, True]
    monkeypatch.setattr(audit_pause, "ask", lambda _p, what, aid, _who: asked.append((what, aid)) or answer.pop(0))
    w = open_window(png_project)
    w.state.set_annotator("alice")
    st = w.spatial
    aid = blind_queue(st, [0, 2, 4])
    w.method_views["spatial"].show_judging(w)
    QApplication.processEvents()
    assert st.controller.audit is not None and st.controller.audit.blind
    _audit_action(w, "Raters…").trigger()
    assert asked == [("Audit → Raters…", aid)]
    assert getattr(w, "raters_window", None) is None and st.controller.audit is not None
    assert w.state.project.audit.pauses(aid) == []
    _audit_action(w, "Raters…").trigger()
    assert len(w.state.project.audit.pauses(aid)) == 1
    assert w.raters_window.isVisible()
    w.raters_window.close()


def test_the_monitor_reads_the_labels_again_when_it_comes_back_after_a_change(open_window: Any, qtbot: Any,
                                                                             tmp_path: Path) -> None:
    folder = make_rated(tmp_path / "rated")
    w = open_window(folder)
    _audit_action(w, "Raters…").trigger()
    win = w.raters_window
    panel = win.panel
    row = {panel.cell(panel.raters, i, "rater"): i for i in range(panel.raters.rowCount())}["ann"]
    assert panel.cell(panel.raters, row, "items") == "24"
    w.state.project.labels.add("metalogic.pair", "pair", "p99|run|0", "ann", "ALIGNED")
    w.state.data_changed.emit()
    assert win.stale and panel.cell(panel.raters, row, "items") == "24"  # not on every change
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=3000)
    win.activateWindow()
    qtbot.waitUntil(lambda: panel.cell(panel.raters, row, "items") == "25", timeout=5000)
    assert not win.stale
    win.close()
