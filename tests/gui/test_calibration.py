"""Calibration panel, end to end on the published SpatialBench-UC run (800 samples) with
200 seeded human labels: sliders re-evaluate the checker live, the τ line and slider stay
bound, the confusion matrix follows τ, Apply stores a version with its verdicts and the
calibrated − uncalibrated table shows the right numbers, and the empty states say why."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from workstation.methods.spatial.audit import confusion
from workstation.methods.spatial.calibration import apply_tau, risk_coverage
from workstation.methods.spatial.checker import evaluate

from tests.gui.conftest import add_label, build_labelled_project
from workstation.methods.spatial.store import SpatialStore

pytestmark = pytest.mark.gui




# ---- fixtures ------------------------------------------------------------------------------------
@pytest.fixture
def state(labelled_state):
    return labelled_state


@pytest.fixture
def panel(qtbot, state):
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    w = CalibrationPanel(state)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitExposed(w)
    return w


# ---- helpers: read what the user sees --------------------------------------------------------------
def shown_counts(panel) -> tuple[int, int, int]:
    t = panel.live_box.metrics_table
    labels = [t.verticalHeaderItem(r).text() for r in range(t.rowCount())]
    return tuple(int(t.item(labels.index(v), 0).text()) for v in ("PASS", "FAIL", "UNDECIDABLE"))


def delta_cells(panel, label: str) -> tuple[str, str, str]:
    t = panel.deltas_box.delta_table
    r = [t.verticalHeaderItem(i).text() for i in range(t.rowCount())].index(label)
    return tuple(t.item(r, c).text() for c in range(3))


def drag_line(qtbot, plot, x_from: float, x_to: float, steps: int = 8) -> None:
    """Press on the τ line at x_from (view coordinates), move in steps, release at x_to."""
    vb = plot.getPlotItem().vb
    view = plot.viewport()

    def to_widget(x: float) -> QPointF:
        scene = vb.mapViewToScene(QPointF(x, 0.5))
        return QPointF(plot.mapFromScene(scene))

    def send(kind, pos: QPointF, button, buttons) -> None:
        gpos = QPointF(view.mapToGlobal(pos.toPoint()))
        ev = QMouseEvent(kind, pos, gpos, button, buttons, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(view, ev)

    left = Qt.MouseButton.LeftButton
    send(QEvent.Type.MouseMove, to_widget(x_from), Qt.MouseButton.NoButton, Qt.MouseButton.NoButton)
    send(QEvent.Type.MouseButtonPress, to_widget(x_from), left, left)
    for i in range(1, steps + 1):
        x = x_from + (x_to - x_from) * i / steps
        send(QEvent.Type.MouseMove, to_widget(x), Qt.MouseButton.NoButton, left)
        qtbot.wait(5)
    send(QEvent.Type.MouseButtonRelease, to_widget(x_to), left, Qt.MouseButton.NoButton)


# ---- tests ---------------------------------------------------------------------------------------
def test_margin_slider_keys_change_counts_to_checker(qtbot, panel, state):
    ds, cfg0 = state.dataset, state.config
    assert shown_counts(panel) == evaluate(ds, cfg0).counts()
    slider = panel.params_box.sliders["margin"].slider
    slider.setFocus()
    qtbot.keyClick(slider, Qt.Key.Key_PageDown)  # one page = 5 steps of 0.005
    qtbot.keyClick(slider, Qt.Key.Key_PageDown)
    qtbot.keyClick(slider, Qt.Key.Key_Left)
    expected_margin = round(cfg0.margin - 0.055, 6)
    assert state.config.margin == pytest.approx(expected_margin)
    assert panel.params_box.sliders["margin"].spin.value() == pytest.approx(expected_margin)
    want = evaluate(ds, cfg0.replace(margin=expected_margin)).counts()
    assert want != evaluate(ds, cfg0).counts()  # the move changes verdicts
    assert shown_counts(panel) == want
    # the version label warns that the live parameters are not stored
    assert "Not applied" in panel.params_box.version_label.text()
    assert panel.params_box.apply_button.isEnabled()


def test_typing_into_spin_box_evaluates(qtbot, panel, state):
    spin = panel.params_box.sliders["margin"].spin
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, "0.03")
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    assert state.config.margin == pytest.approx(0.03)
    assert panel.params_box.sliders["margin"].slider.value() == 6  # 0.03 / 0.005
    assert shown_counts(panel) == evaluate(state.dataset, state.config).counts()
    # other sliders through typed entry too: ambiguity delta changes the 'ambiguous' abstentions
    spin = panel.params_box.sliders["ambiguity_delta"].spin
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, "0.3")
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    v = evaluate(state.dataset, state.config.replace(ambiguity_delta=0.3))
    assert state.config.ambiguity_delta == pytest.approx(0.3)
    assert shown_counts(panel) == v.counts()
    t = panel.live_box.abstention_table
    reasons = [t.verticalHeaderItem(r).text() for r in range(t.rowCount())]
    assert int(t.item(reasons.index("ambiguous"), 0).text()) == int(np.count_nonzero(v.reason == 2))


def test_dragging_slider_evaluates_and_settles_on_release(qtbot, panel, state):
    s = panel.params_box.sliders["margin"]
    slider = s.slider
    handle = slider.style().subControlRect(
        slider.style().ComplexControl.CC_Slider, _slider_option(slider),
        slider.style().SubControl.SC_SliderHandle, slider).center()
    qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=handle)
    assert slider.isSliderDown()
    n0 = panel.evaluations
    for dx in range(4, 60, 4):
        ev = QMouseEvent(QEvent.Type.MouseMove, QPointF(handle + QPoint(dx, 0)),
                         QPointF(slider.mapToGlobal(handle + QPoint(dx, 0))), Qt.MouseButton.NoButton,
                         Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(slider, ev)
    assert panel.evaluations > n0  # verdicts follow the handle while it moves
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle + QPoint(56, 0))
    assert not slider.isSliderDown()
    final = s.value()
    assert final > 0.1
    assert state.config.margin == pytest.approx(final)  # the release evaluates the last value
    assert shown_counts(panel) == evaluate(state.dataset, state.config).counts()


def _drag_margin(qtbot, panel, steps: range, wait_ms: int = 0, pressed_at: QPoint | None = None):
    """Press the margin slider's handle and move it right step by step (or, given `pressed_at`,
    go on with a drag pressed there); returns the slider and where the handle was pressed
    (released by the caller)."""
    slider = panel.params_box.sliders["margin"].slider
    handle = pressed_at if pressed_at is not None else slider.style().subControlRect(
        slider.style().ComplexControl.CC_Slider, _slider_option(slider),
        slider.style().SubControl.SC_SliderHandle, slider).center()
    if pressed_at is None:
        qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=handle)
    for dx in steps:
        ev = QMouseEvent(QEvent.Type.MouseMove, QPointF(handle + QPoint(dx, 0)),
                         QPointF(slider.mapToGlobal(handle + QPoint(dx, 0))), Qt.MouseButton.NoButton,
                         Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(slider, ev)
        if wait_ms:
            qtbot.wait(wait_ms)
    return slider, handle


def test_a_drag_too_slow_for_the_window_goes_on_off_its_thread_says_so_and_is_exact_on_release(
        qtbot, panel, state, monkeypatch):
    """On a busy machine a live update can hold the window longer than its budget: the rest of
    the drag is evaluated on another thread (the window stays free, the verdicts follow), the
    status bar says so, and letting go evaluates the released value on the window's thread."""
    import threading

    import workstation.methods.spatial.checker as checker
    from ui.methods.spatial.calibration import panel as panel_mod

    threads: list[str] = []
    real = checker.evaluate

    def evaluate(ds, cfg):
        threads.append(threading.current_thread().name)
        return real(ds, cfg)

    monkeypatch.setattr(checker, "evaluate", evaluate)
    said: list[str] = []
    state.message.connect(said.append)
    monkeypatch.setattr(panel_mod, "LIVE_BUDGET_MS", -1.0)  # every update over budget: a loaded machine
    slider, handle = _drag_margin(qtbot, panel, range(4, 60, 4), wait_ms=60)
    assert threads[0] == "MainThread"  # the drag's first update, measured on the window's thread
    assert said and said[0] == panel_mod.COARSE_NOTE
    qtbot.waitUntil(lambda: not state.previewing, timeout=10000)
    assert "checker-preview" in threads[1:] and "MainThread" not in threads[1:]
    # caught up with the handle
    assert state.config.margin == pytest.approx(panel.params_box.sliders["margin"].value())
    assert shown_counts(panel) == real(state.dataset, state.config).counts()
    threads.clear()
    _drag_margin(qtbot, panel, range(64, 80, 4))  # released while previews are still wanted
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle + QPoint(76, 0))
    final = panel.params_box.sliders["margin"].value()
    assert state.config.margin == pytest.approx(final) and not state.previewing
    assert said[-1] == ""  # the note cleared: the figures shown are exact
    qtbot.wait(300)  # a preview that was under way brings nothing once the value is let go
    assert state.config.margin == pytest.approx(final)
    assert shown_counts(panel) == real(state.dataset, state.config).counts()


def test_a_handle_let_go_where_the_evaluation_under_way_stands_is_not_evaluated_again(
        qtbot, panel, state, monkeypatch):
    """A coarse drag stops, and the handle is let go while the thread still evaluates the value
    it stopped at: the release shows that evaluation's verdicts (exact: the same value) instead of
    waiting for it and then evaluating the same value again on the window's thread."""
    import threading
    import time

    import workstation.methods.spatial.checker as checker
    from ui.methods.spatial.calibration import panel as panel_mod

    real = checker.evaluate
    calls: list[tuple[str, float]] = []
    release_now = threading.Event()

    def slow(ds, cfg):
        calls.append((threading.current_thread().name, cfg.margin))
        if threading.current_thread().name == "checker-preview":
            release_now.set()
            time.sleep(1.0)
        return real(ds, cfg)

    monkeypatch.setattr(checker, "evaluate", slow)
    monkeypatch.setattr(panel_mod, "LIVE_BUDGET_MS", -1.0)  # every update over budget: a loaded machine
    slider, handle = _drag_margin(qtbot, panel, range(4, 40, 4), wait_ms=0)
    qtbot.waitUntil(lambda: not state.previewing, timeout=10000)
    stop = handle + QPoint(48, 0)
    release_now.clear()
    _drag_margin(qtbot, panel, range(48, 49), pressed_at=handle)  # one more move: its value's preview
    stopped_at = panel.params_box.sliders["margin"].value()
    qtbot.waitUntil(release_now.is_set, timeout=5000)  # that value is under way on the preview thread
    n_before = len(calls)
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=stop)
    assert panel.params_box.sliders["margin"].value() == pytest.approx(stopped_at)
    assert state.config.margin == pytest.approx(stopped_at) and not state.previewing
    assert calls[n_before:] == []  # the value let go was not evaluated a second time
    assert calls[n_before - 1] == ("checker-preview", pytest.approx(stopped_at))
    assert shown_counts(panel) == real(state.dataset, state.config).counts()
    assert np.array_equal(state.verdicts.verdict, real(state.dataset, state.config).verdict)


def test_a_drag_within_the_budget_stays_on_the_windows_thread(qtbot, panel, state, monkeypatch):
    import threading

    import workstation.methods.spatial.checker as checker

    threads: list[str] = []
    real = checker.evaluate
    monkeypatch.setattr(checker, "evaluate",
                        lambda ds, cfg: threads.append(threading.current_thread().name) or real(ds, cfg))
    from ui.methods.spatial.calibration import panel as panel_mod

    monkeypatch.setattr(panel_mod, "LIVE_BUDGET_MS", 60_000.0)  # whatever else runs on the machine
    said: list[str] = []
    state.message.connect(said.append)
    slider, handle = _drag_margin(qtbot, panel, range(4, 60, 4), wait_ms=60)
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle + QPoint(56, 0))
    assert len(threads) > 2 and set(threads) == {"MainThread"} and said == []


def _calibration_window(open_window, tmp_path, sbuc_parsed):
    """The main window on the labelled fixture project, its Calibration tab shown."""
    build_labelled_project(tmp_path / "drag_proj", sbuc_parsed).close()
    w = open_window(tmp_path / "drag_proj")
    w.show_tab("Calibration")
    return w, w.calibration, w.spatial


def _slow_checker(monkeypatch):
    """The checker made slower than the window's live budget (a loaded machine); returns the
    margins it is asked for, in order."""
    import time

    import workstation.methods.spatial.checker as checker
    from ui.methods.spatial.calibration.panel import LIVE_BUDGET_MS

    real = checker.evaluate
    evaluated: list[float] = []

    def slow(ds, cfg):
        evaluated.append(cfg.margin)
        time.sleep(1.5 * LIVE_BUDGET_MS / 1000)
        return real(ds, cfg)

    monkeypatch.setattr(checker, "evaluate", slow)
    return evaluated


def test_on_a_loaded_machine_a_drag_shows_coarser_figures_says_so_and_the_release_is_exact(
        qtbot, open_window, tmp_path, sbuc_parsed, monkeypatch):
    """Each evaluation slower than the window's budget (a loaded machine): while the handle is
    dragged, not every value it passes is evaluated (one at a time, the latest next), the status
    bar says the live figures are coarser for as long as the drag lasts, and letting go shows the
    figures of the value let go — those of the plain per-sample checker at that value — and
    clears the line."""
    from ui.methods.spatial.calibration import panel as panel_mod
    from ui.methods.spatial.calibration.panel import COARSE_NOTE
    from workstation.methods.spatial.checker.reference import evaluate_reference

    w, panel, state = _calibration_window(open_window, tmp_path, sbuc_parsed)
    evaluated = _slow_checker(monkeypatch)
    passed: list[float] = []
    panel.params_box.sliders["margin"].moved.connect(passed.append)
    shown: list[str] = []
    w.statusBar().messageChanged.connect(shown.append)
    slider, handle = _drag_margin(qtbot, panel, range(3, 90, 3), wait_ms=15)
    assert w.statusBar().currentMessage() == COARSE_NOTE  # said while the handle is still held
    qtbot.wait(400)
    assert w.statusBar().currentMessage() == COARSE_NOTE
    # a long drag outlasts the status bar's few seconds: the next live figures say it again
    w.statusBar().clearMessage()
    monkeypatch.setattr(panel_mod, "NOTE_REPEAT_S", 0.0)
    _drag_margin(qtbot, panel, range(90, 100, 3), wait_ms=15, pressed_at=handle)
    qtbot.waitUntil(lambda: w.statusBar().currentMessage() == COARSE_NOTE, timeout=5000)
    assert len(passed) >= 20 and len(evaluated) <= len(passed) // 2  # coalesced: most values skipped
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle + QPoint(99, 0))
    final = panel.params_box.sliders["margin"].value()
    assert final == pytest.approx(passed[-1])
    assert state.config.margin == pytest.approx(final) and not state.previewing
    direct = evaluate_reference(state.dataset, state.config)
    assert np.array_equal(state.verdicts.verdict, direct.verdict)
    assert shown_counts(panel) == direct.counts()
    assert w.statusBar().currentMessage() == ""  # the exact figures shown: the line is gone
    qtbot.wait(500)  # nothing a skipped value brings changes them afterwards
    assert state.config.margin == pytest.approx(final) and shown_counts(panel) == direct.counts()
    assert COARSE_NOTE in shown and w.statusBar().currentMessage() == ""


def test_a_drag_within_the_budget_evaluates_every_value_and_says_nothing(
        qtbot, open_window, tmp_path, sbuc_parsed, monkeypatch):
    """On a machine that keeps up, the values the handle passes are evaluated on the window's
    thread as it passes them (at the throttle's pace) and the status bar says nothing about
    coarser figures."""
    import threading

    import workstation.methods.spatial.checker as checker
    from ui.methods.spatial.calibration import panel as panel_mod

    w, panel, state = _calibration_window(open_window, tmp_path, sbuc_parsed)
    # the 800-sample project evaluates in milliseconds; the budget is widened so that other work
    # on the test machine cannot make one update look slow
    monkeypatch.setattr(panel_mod, "LIVE_BUDGET_MS", 2000.0)
    real = checker.evaluate
    evaluated: list[float] = []
    threads: list[str] = []

    def counted(ds, cfg):
        evaluated.append(cfg.margin)
        threads.append(threading.current_thread().name)
        return real(ds, cfg)

    monkeypatch.setattr(checker, "evaluate", counted)
    passed: list[float] = []
    panel.params_box.sliders["margin"].moved.connect(passed.append)
    shown: list[str] = []
    w.statusBar().messageChanged.connect(shown.append)
    slider, handle = _drag_margin(qtbot, panel, range(4, 60, 4), wait_ms=60)
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle + QPoint(56, 0))
    assert len(passed) >= 10 and len(evaluated) >= len(passed) // 2 and set(threads) == {"MainThread"}
    assert evaluated[-1] == pytest.approx(passed[-1])
    assert not panel.coarse and panel_mod.COARSE_NOTE not in shown
    assert state.config.margin == pytest.approx(passed[-1])


def test_the_window_hands_freed_memory_back_once_a_drag_has_rested(qtbot, panel, state, monkeypatch):
    """Each move's temporaries are freed; the heap is trimmed once per drag, when it rests (a
    trim between moves would make the next move fault its pages in again)."""
    import linecache

    import ui.idle_trim

    trims = []
    monkeypatch.setattr(ui.idle_trim, "release_freed_memory", lambda: trims.append(len(linecache.cache)))
    qtbot.wait(ui.idle_trim.IDLE_MS + 200)  # what the open scheduled
    trims.clear()
    linecache.getline(ui.idle_trim.__file__, 1)  # a source line cached (as Qt's binding does)
    slider = panel.params_box.sliders["margin"].slider
    slider.setFocus()
    n0, m0 = panel.evaluations, state.config.margin
    for _ in range(8):
        qtbot.keyClick(slider, Qt.Key.Key_Right)  # each step evaluated, as a drag's moves are
    assert panel.evaluations >= n0 + 8 and state.config.margin == pytest.approx(m0 + 0.04)
    assert trims == []  # not between the moves
    qtbot.waitUntil(lambda: len(trims) == 1, timeout=3000)
    assert trims == [0]  # Python's cache of source lines emptied first
    qtbot.wait(ui.idle_trim.IDLE_MS + 200)
    assert len(trims) == 1  # once for the whole drag


def _slider_option(slider):
    from PySide6.QtWidgets import QStyleOptionSlider

    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    return opt


def _audited(state):
    rows = np.flatnonzero(state.human >= 0)
    v = state.verdicts
    return v.verdict[rows], v.conf[rows], state.human[rows]


def test_tau_slider_moves_line_and_confusion(qtbot, panel, state):
    slider = panel.params_box.sliders["tau"].slider
    slider.setFocus()
    for _ in range(14):  # 14 pages of 0.05
        qtbot.keyClick(slider, Qt.Key.Key_PageUp)
    assert state.config.tau == pytest.approx(0.7)
    assert panel.plots.tau_plot.line.value() == pytest.approx(0.7)
    assert panel.plots.cov_plot.line.value() == pytest.approx(0.7)
    verdict, conf, human = _audited(state)
    want = confusion(apply_tau(verdict, conf, 0.7), human)
    np.testing.assert_array_equal(panel.plots.confusion_view.matrix, want)
    pt = risk_coverage(verdict, conf, human, taus=[0.7])
    assert "τ = 0.700" in panel.plots.readout.text()
    assert f"coverage <b>{pt.coverage[0]:.3f}</b>" in panel.plots.readout.text()
    assert f"FPR_PASS <b>{pt.fpr_pass[0]:.3f}</b>" in panel.plots.readout.text()


def test_dragging_tau_line_moves_slider(qtbot, panel, state):
    assert panel.plots.audit_area.message is None  # labels exist: the plots are shown
    panel.params_box.sliders["tau"].spin.setValue(0.3)
    assert panel.plots.tau_plot.line.value() == pytest.approx(0.3)
    drag_line(qtbot, panel.plots.tau_plot, 0.3, 0.8)
    tau = panel.plots.tau_plot.line.value()
    assert tau == pytest.approx(0.8, abs=0.02)
    assert panel.params_box.sliders["tau"].value() == pytest.approx(tau, abs=1e-4)
    assert panel.params_box.sliders["tau"].spin.value() == pytest.approx(tau, abs=1e-3)
    assert state.config.tau == pytest.approx(tau, abs=1e-4)
    assert panel.plots.cov_plot.line.value() == pytest.approx(tau, abs=1e-4)
    verdict, conf, human = _audited(state)
    np.testing.assert_array_equal(panel.plots.confusion_view.matrix,
                                  confusion(apply_tau(verdict, conf, state.config.tau), human))
    # and the other way: the line on the all-samples plot drives the same slider
    drag_line(qtbot, panel.plots.cov_plot, tau, 0.45)
    tau_line = panel.plots.cov_plot.line.value()
    assert panel.params_box.sliders["tau"].value() == pytest.approx(tau_line, abs=1e-4)
    assert panel.plots.tau_plot.line.value() == pytest.approx(panel.plots.cov_plot.line.value(), abs=1e-4)
    assert state.config.tau == pytest.approx(0.45, abs=0.02)


def test_every_slider_spans_the_range_the_checker_config_accepts(panel):
    from workstation.methods.spatial.config import PARAMETER_RANGES

    for name, s in panel.params_box.sliders.sliders.items():
        lo, hi = PARAMETER_RANGES[name]
        assert (s.spin.minimum(), s.spin.maximum()) == (lo, hi), name
        s.set_value(hi)  # the top of the range is shown as the top, not clamped below it
        assert s.spin.value() == pytest.approx(hi) and s.slider.value() == s.slider.maximum(), name


def test_a_stored_margin_the_old_sliders_could_not_show_survives_a_tau_drag(qtbot, panel, state):
    """A stored margin of 0.7 (and ambiguity δ of 0.7) is shown as it is, and a drag of τ leaves
    them as they are: the next evaluation uses 0.7, not what a slider could show."""
    stored = state.config.replace(margin=0.7, ambiguity_delta=0.7)
    state.set_config(stored)
    sliders = panel.params_box.sliders
    drag_line(qtbot, panel.plots.tau_plot, float(state.config.tau), 0.6)
    tau = float(state.config.tau)
    assert tau == pytest.approx(0.6, abs=0.02)
    assert state.config.margin == 0.7 and state.config.ambiguity_delta == 0.7
    assert sliders["margin"].spin.value() == pytest.approx(0.7)
    assert sliders["ambiguity_delta"].spin.value() == pytest.approx(0.7)
    assert shown_counts(panel) == evaluate(state.dataset, stored.replace(tau=tau)).counts()
    # a step of the τ slider's own keys, too
    sliders["tau"].slider.setFocus()
    qtbot.keyClick(sliders["tau"].slider, Qt.Key.Key_PageUp)
    assert state.config.tau == pytest.approx(tau + 0.05, abs=0.011)
    assert state.config.margin == 0.7 and state.config.ambiguity_delta == 0.7
    # and a value between two of the margin slider's steps is kept as stored
    state.set_config(state.config.replace(margin=0.1234))
    qtbot.keyClick(sliders["tau"].slider, Qt.Key.Key_PageDown)
    assert state.config.margin == 0.1234


def test_apply_stores_version_and_shows_deltas(qtbot, panel, state):
    from workstation.methods.spatial import metrics

    project = state.project
    v1 = state.config_id
    before_cfg = state.config
    spin = panel.params_box.sliders["margin"].spin
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, "0.05")
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    panel.params_box.sliders["tau"].spin.setValue(0.5)
    panel.params_box.note_edit.setFocus()
    qtbot.keyClicks(panel.params_box.note_edit, "calibrated on 200 labels")
    qtbot.mouseClick(panel.params_box.apply_button, Qt.MouseButton.LeftButton)

    versions = SpatialStore(project).configs()
    assert len(versions) == 2
    new = versions[-1]
    assert new["config_id"] == state.config_id != v1
    assert new["note"] == "calibrated on 200 labels"
    assert new["parent_id"] == v1
    stored_cfg = SpatialStore(project).get_config(new["config_id"])
    assert stored_cfg.margin == pytest.approx(0.05) and stored_cfg.tau == pytest.approx(0.5)
    assert SpatialStore(project).active_config_id() == new["config_id"]
    # the verdict set is stored, and it is the checker's for those parameters
    after_v = evaluate(state.dataset, stored_cfg)
    table = SpatialStore(project).load_verdict_table(new["config_id"])
    assert new["verdicts"] == state.dataset.n
    np.testing.assert_array_equal(table["verdict"], after_v.verdict)
    np.testing.assert_allclose(table["conf"], after_v.conf)
    assert not panel.params_box.apply_button.isEnabled()

    # calibrated − uncalibrated, against the version the session started from
    before_v = evaluate(state.dataset, before_cfg)
    b = metrics.main_results(state.dataset, before_v)[0]
    a = metrics.main_results(state.dataset, after_v)[0]
    hdr = [panel.deltas_box.delta_table.horizontalHeaderItem(c).text() for c in range(3)]
    assert hdr[0] == f"v{v1}" and hdr[1] == f"v{new['config_id']}\n(applied)"
    for label, key in (("pass rate", "pass_rate"), ("coverage", "coverage"),
                       ("PASS | decided", "pass_rate_cond"), ("prompt pass (best-of-K)", "prompt_pass_rate"),
                       ("mean conf", "mean_conf")):
        cells = delta_cells(panel, label)
        assert cells[0] == f"{b[key]:.4f}", label
        assert cells[1] == f"{a[key]:.4f}", label
        assert cells[2] == f"{a[key] - b[key]:+.4f}", label
    assert a["pass_rate"] != b["pass_rate"]  # the numbers really moved

    # a reopened session reads the new active version
    from ui.methods.spatial.session import SpatialSession

    st2 = SpatialSession()
    folder = project.folder
    state.close_project()
    st2.open_project(folder)
    assert st2.config_id == new["config_id"] and st2.config.margin == pytest.approx(0.05)
    st2.close_project()


def test_empty_states(qtbot, tmp_path, sbuc_parsed):
    from ui.methods.spatial.calibration.panel import CalibrationPanel
    from ui.methods.spatial.session import SpatialSession

    st = SpatialSession()
    w = CalibrationPanel(st)
    qtbot.addWidget(w)
    w.show()
    assert "Open a project" in (w.body.message or "")
    st.set_project(build_labelled_project(tmp_path / "p", sbuc_parsed, n_labels=0))
    assert w.body.message is None
    msg = w.plots.audit_area.message or ""
    assert "label an audit set to see risk–coverage" in msg.lower()
    assert not w.plots.audit_area.content.isVisible()
    # the live metrics still work without labels
    assert shown_counts(w) == st.verdicts.counts()
    # one label is enough to bring the curve back
    st.set_annotator("bob")
    add_label(st, 0, "PASS")
    assert w.plots.audit_area.message is None
    assert w.plots.confusion_view.matrix.sum() == 1
    st.close_project()
    st.project_changed.emit()
    assert "Open a project" in (w.body.message or "")


def test_t_det_slider_shows_the_recorded_score_floor(qtbot, panel, state):
    """A run recorded from score s up: t_det below s changes nothing, and the
    slider says so."""
    d = state.dataset.detections
    prim = np.asarray(d.score)[(np.asarray(d.source) == 0) & (np.asarray(d.variant) == 0)]
    floor = float(prim.min())
    assert floor > 0.05  # the fixture run recorded detections from a floor up
    s = panel.params_box.sliders["t_det"]
    assert s.floor_label.isVisible()
    assert s.floor_label.text() == f"recorded ≥ {floor:.2f}: below it t_det changes nothing"
    # under the slider: the panel's column does not widen (nothing cut on the right)
    assert s.floor_label.geometry().top() >= s.slider.geometry().bottom()
    assert s.width() <= s.parentWidget().width()
    assert f"Detections were recorded from score {floor:.2f} up" in s.slider.toolTip()
    assert f"a t_det below {floor:.2f} changes nothing" in s.spin.toolTip()
    # and it is true: t_det 0 and t_det just under the floor give the same verdicts
    from workstation.methods.spatial.checker import evaluate

    lo = evaluate(state.dataset, state.config.replace(t_det=0.0))
    hi = evaluate(state.dataset, state.config.replace(t_det=floor - 0.01))
    assert np.array_equal(lo.verdict, hi.verdict)


def test_slider_without_a_floor_shows_none(qtbot):
    from ui.methods.spatial.calibration.sliders import PARAM_BY_NAME, ParamSlider

    s = ParamSlider(PARAM_BY_NAME["t_det"])
    qtbot.addWidget(s)
    s.show()
    s.set_floor(0.5, "Detections were recorded from score 0.50 up")
    assert s.floor_label.isVisible() and s.floor_label.text().startswith("recorded ≥ 0.50")
    s.set_floor(0.0)
    assert not s.floor_label.isVisible() and "recorded" not in s.slider.toolTip()


def test_a_hidden_panel_catches_up_when_it_is_shown(qtbot, panel, state):
    """While another tab is shown the panel skips its summaries on every move (they cost tens of
    milliseconds at 1M samples) and shows the live verdicts' counts as soon as it is shown."""
    ds, cfg0 = state.dataset, state.config
    before = shown_counts(panel)
    panel.hide()
    moved = cfg0.replace(margin=round(cfg0.margin + 0.1, 6))
    want = evaluate(ds, moved).counts()
    assert want != before
    state.set_config(moved)
    assert shown_counts(panel) == before  # not refreshed while hidden
    panel.show()
    qtbot.waitExposed(panel)
    assert shown_counts(panel) == want


def test_the_panels_summary_counts_every_runs_abstentions():
    from tests.core.test_metrics import PROMPTS, TOTALS_ROWS, build
    from ui.methods.spatial.calibration.deltas import summarize_verdicts
    from workstation.methods.spatial.metrics import abstention

    ds, v = build(TOTALS_ROWS, PROMPTS)
    s = summarize_verdicts(ds, v)
    per_reason: dict[str, int] = {}
    for r in abstention(ds, v):
        per_reason[r["reason"]] = per_reason.get(r["reason"], 0) + int(r["count"])
    assert [(r, c) for r, c, _ in s.abstention] == list(per_reason.items())
    assert dict((r, c) for r, c, _ in s.abstention)["unstable"] == 1
    assert s.values["prompts"] == 4 and s.values["prompt_pass_rate"] == 0.5


def test_the_coverage_curve_counts_every_confidence_at_every_grid_value_exactly():
    """The curve over the uniform τ grid bins the confidences instead of sorting them; its counts
    equal plain comparisons with every grid value, also for confidences on, just beside and
    between grid values, at 0, -0.0 and 1, outside [0, 1], NaN, and for undecided samples."""
    from ui.methods.spatial.calibration.plots import TAU_GRID, coverage_curve
    from workstation.methods.spatial.types import FAIL, PASS, UNDECIDABLE

    rng = np.random.default_rng(7)
    on_grid = TAU_GRID[rng.integers(0, len(TAU_GRID), 3000)]
    conf = np.concatenate([
        on_grid, np.nextafter(on_grid, 2.0), np.nextafter(on_grid, -1.0), rng.random(70_000) ** 3,
        [0.0, -0.0, 1.0, np.nextafter(1.0, 2.0), 1.5, -0.25, np.inf, -np.inf] * 20, [np.nan] * 200])
    verdict = rng.choice(np.array([PASS, FAIL, UNDECIDABLE], np.int8), len(conf))
    cov, pc = coverage_curve(verdict, conf, TAU_GRID)
    decided = ((verdict == PASS) | (verdict == FAIL)) & ~np.isnan(conf)
    k = np.array([np.count_nonzero(decided & (conf >= t)) for t in TAU_GRID])
    kp = np.array([np.count_nonzero(decided & (verdict == PASS) & (conf >= t)) for t in TAU_GRID])
    assert np.array_equal(cov, k / len(conf))
    assert np.array_equal(pc, np.where(k > 0, kp / np.maximum(k, 1), np.nan), equal_nan=True)
    assert k[0] > k[500] > k[-1] > 0  # the data reach every part of the grid
    # any other grid is counted over the sorted confidences: the same numbers
    taus = np.array([0.0, 0.1, 0.25, 0.5, 0.999, 1.0])
    cov2, pc2 = coverage_curve(verdict, conf, taus)
    assert np.array_equal(cov2, cov[[0, 100, 250, 500, 999, 1000]])
    assert np.array_equal(pc2, pc[[0, 100, 250, 500, 999, 1000]], equal_nan=True)


def test_a_move_shows_the_new_verdicts_coverage_curves_and_abstentions(qtbot, panel, state):
    """After a slider move the coverage plot holds the curves of the new verdicts (computed on
    a helper thread) and the abstention table every reason's count among the UNDECIDABLE."""
    from ui.methods.spatial.calibration.plots import TAU_GRID, coverage_curve
    from workstation.methods.spatial.types import REASONS, UNDECIDABLE

    for margin in (0.02, 0.09):
        state.set_config(state.config.replace(margin=margin, t_det=0.35))
        v = state.verdicts
        assert v.config.margin == margin
        cov, pc = coverage_curve(v.verdict, v.conf, TAU_GRID)
        for key, want in (("coverage", cov), ("pass_cond", pc), ("pass_rate", np.nan_to_num(pc) * cov)):
            x, y = panel.plots.cov_plot.curves[key].getData()  # undefined points are gaps (NaN), not dropped
            assert np.array_equal(x, TAU_GRID) and np.array_equal(y, want, equal_nan=True)
        t = panel.live_box.abstention_table
        shown = {t.verticalHeaderItem(r).text(): int(t.item(r, 0).text()) for r in range(t.rowCount())}
        und = v.reason[v.verdict == UNDECIDABLE]
        assert shown == {REASONS[c]: int(np.count_nonzero(und == c)) for c in range(1, len(REASONS))}
        assert sum(shown.values()) == int(np.count_nonzero(v.verdict == UNDECIDABLE))


def test_a_move_goes_on_while_the_intervals_of_the_verdicts_before_it_are_still_computed(
        qtbot, panel, state, monkeypatch):
    """The sliders rested and the intervals' bootstrap started (seconds on a large project); the
    next moves show their verdicts and coverage curves at once, without waiting for that bootstrap,
    and of the intervals asked for meanwhile only the latest verdicts' are computed."""
    import threading

    from ui.methods.spatial.calibration.plots import TAU_GRID, coverage_curve
    from workstation.methods.spatial import metrics

    real = metrics.headline
    started, release = threading.Event(), threading.Event()
    computed_for = []

    def slow_headline(ds, v, **kw):
        computed_for.append(v.config.margin)
        if len(computed_for) == 1:  # the first bootstrap holds its thread until released
            started.set()
            release.wait(10.0)
        return real(ds, v, **kw)

    monkeypatch.setattr(metrics, "headline", slow_headline)
    try:
        state.set_config(state.config.replace(margin=0.03))
        panel._start_intervals()  # what the interval timer does once the sliders rest
        assert started.wait(5.0)
        state.set_config(state.config.replace(margin=0.05))
        panel._start_intervals()  # queued behind the running one
        state.set_config(state.config.replace(margin=0.08))
        moved_while_busy = not release.is_set() and not panel.live_box.future.done()
        v = state.verdicts
        assert v.config.margin == 0.08 and moved_while_busy
        cov, pc = coverage_curve(v.verdict, v.conf, TAU_GRID)
        x, y = panel.plots.cov_plot.curves["coverage"].getData()
        assert np.array_equal(y, cov, equal_nan=True)
        panel._start_intervals()  # the sliders rest again: the latest verdicts' intervals replace 0.05's
    finally:
        release.set()
    qtbot.waitUntil(panel.intervals_ready, timeout=10000)
    assert computed_for == [0.03, 0.08] and panel.live_box.headline is not None


# ---- τ as the operating point, undefined rates, intervals ------------------------------------------
def metric_cell(panel, label: str, col: int) -> str:
    t = panel.live_box.metrics_table
    r = [t.verticalHeaderItem(i).text() for i in range(t.rowCount())].index(label)
    return t.item(r, col).text()


def test_dragging_tau_moves_the_live_verdicts_at_tau_beside_the_values_without_it(qtbot, panel, state):
    v = state.verdicts
    live_pass = int(np.count_nonzero(v.verdict == 0))
    decided = (v.verdict == 0) | (v.verdict == 1)
    drag_line(qtbot, panel.plots.tau_plot, float(state.config.tau), 0.54)
    tau = float(state.config.tau)
    assert tau == pytest.approx(0.54, abs=0.02)
    high = v.conf >= tau
    want_pass = int(np.count_nonzero((v.verdict == 0) & high))
    assert want_pass < live_pass  # τ really takes some PASS away
    assert metric_cell(panel, "PASS", 0) == str(live_pass)  # the verdicts without τ are unchanged
    assert metric_cell(panel, "PASS", 1) == str(want_pass)  # ... and beside them, at τ
    assert metric_cell(panel, "coverage", 1).split("\n")[0] == f"{np.count_nonzero(decided & high) / len(v.verdict):.4f}"
    assert metric_cell(panel, "coverage", 0).split("\n")[0] == f"{np.count_nonzero(decided) / len(v.verdict):.4f}"
    assert panel.live_box.metrics_table.horizontalHeaderItem(1).text() == f"at τ = {tau:.2f}"
    assert "operating point" in panel.live_box.metrics_note.text()
    assert "operating point" in panel.params_box.sliders["tau"].note_label.text()
    # once the sliders rest, every rate carries its interval; the prompt-level ones follow τ too
    assert metric_cell(panel, "pass rate", 1).endswith("\n…")  # pending while the sliders move
    qtbot.waitUntil(panel.intervals_ready, timeout=5000)
    hl = panel.live_box.headline
    assert hl.tau == pytest.approx(tau)
    pp = hl.at_tau["prompt_pass_rate"]
    assert metric_cell(panel, "prompt pass (best-of-K)", 1) == f"{pp.value:.4f}\n[{pp.lo:.3f}, {pp.hi:.3f}]"
    assert hl.at_tau["prompt_pass_rate"].value < hl.plain["prompt_pass_rate"].value
    drag_line(qtbot, panel.plots.tau_plot, tau, 0.0)
    assert metric_cell(panel, "PASS", 1) == str(live_pass)


def test_an_undefined_risk_is_a_gap_and_says_so_not_a_spike_to_one(qtbot, tmp_path, sbuc_parsed):
    """Thresholds where the covered samples have no human PASS/FAIL label: the curve breaks,
    the readout says "undefined" with n, the report's table says nan and its plot leaves it out."""
    from ui.methods.spatial.calibration.panel import CalibrationPanel
    from ui.methods.spatial.session import SpatialSession
    from workstation.methods.spatial.calibration import risk_coverage
    from workstation.methods.spatial.types import VERDICTS

    st = SpatialSession()
    p = build_labelled_project(tmp_path / "proj", sbuc_parsed, n_labels=0)
    ds, v = sbuc_parsed.dataset, None
    st.set_project(p)
    try:
        v = st.verdicts
        decided = np.flatnonzero((v.verdict == 0) | (v.verdict == 1))
        top = decided[np.argsort(-v.conf[decided])]
        # the 6 most confident decided samples are human UNDECIDABLE; 60 others labelled as the checker says
        rows = np.r_[top[:6], top[40:100]]
        human = ["UNDECIDABLE"] * 6 + [VERDICTS[int(x)] for x in v.verdict[top[40:100]]]
        SpatialStore(p).add_labels_bulk({"sample_id": ds.samples.sample_id[rows].tolist(),
                                         "annotator": ["alice"] * len(rows), "verdict": human})
        st.reload_labels()
        w = CalibrationPanel(st)
        qtbot.addWidget(w)
        w.resize(1400, 900)
        w.show()
        qtbot.waitExposed(w)
        qtbot.waitUntil(lambda: w.plots.audit_area.message is None, timeout=5000)
        x, y = w.plots.rc_plot.curve.getData()
        verdict, conf, hum = v.verdict[rows], v.conf[rows], st.human[rows]
        rc = risk_coverage(verdict, conf, hum, taus=np.linspace(0, 1, 1001))
        undefined = (rc.n_covered > 0) & (rc.n_evaluated == 0)
        assert undefined.any()
        assert np.isnan(y).sum() == int(undefined.sum()) and not (y[np.isfinite(y)] > 0.5).any()
        # at a τ in the undefined range the readout says so
        t_und = float(rc.tau[np.flatnonzero(undefined)[0]])
        w.params_box.sliders["tau"].spin.setValue(round(t_und + 0.0005, 3))
        assert "risk <b>—</b> (undefined: n 0)" in w.plots.readout.text()
    finally:
        st.close_project()


def test_the_window_and_the_report_show_the_same_numbers_for_the_same_state(qtbot, panel, state, tmp_path):
    import csv

    from workstation.methods.spatial.report import write_report

    panel.params_box.sliders["tau"].spin.setValue(0.5)
    panel.flush_intervals()
    assert panel.live_box.headline is not None
    assert panel.plots.op_estimates is not None and panel.plots.band is not None
    paths = write_report(tmp_path / "rep", state.dataset, state.verdicts, state.config, "live", {},
                         labels=state.human)
    with open(paths["headline_full"], encoding="utf-8") as fh:
        rows = {r["statistic"]: r for r in csv.DictReader(fh)}
    from workstation.methods.spatial.metrics import HEADLINE_ROWS

    for key, label, kind in HEADLINE_ROWS:
        for col, suffix in ((0, ""), (1, "_at_tau")):
            shown = metric_cell(panel, label, col)
            r = rows[key]
            if kind == "d":
                assert shown == r[f"value{suffix}"], (key, suffix)
                continue
            value, lo, hi = (float(r[f"{k}{suffix}"]) for k in ("value", "lo", "hi"))
            assert shown.split("\n")[0] == f"{value:.4f}", (key, suffix)
            assert shown.split("\n")[1].rstrip("*") == f"[{lo:.3f}, {hi:.3f}]", (key, suffix)
    # the operating point: the readout's risk and coverage intervals are the report's
    with open(paths["operating_point_full"], encoding="utf-8") as fh:
        op = {r["statistic"]: r for r in csv.DictReader(fh)}
    text = panel.plots.readout.text()
    for key, name in (("risk", "risk"), ("coverage", "coverage"), ("fpr_pass", "FPR_PASS")):
        value, lo, hi = (float(op[key][k]) for k in ("value", "lo", "hi"))
        assert f"{name} <b>{value:.3f}</b> [{lo:.3f}, {hi:.3f}]" in text, key
    # and the risk band the report tabulates over the τ sweep is the one the window draws at the same τ
    from workstation.methods.spatial.calibration import risk_band

    rows_a = panel.audited_rows()
    v = state.verdicts
    prompts = np.asarray(state.dataset.samples.prompt_id, dtype=object)[rows_a]
    lo, hi = risk_band(v.verdict[rows_a], v.conf[rows_a], state.human[rows_a], prompts, panel.plots.rc.tau)
    band = panel.plots.band
    assert np.array_equal(lo, band[0], equal_nan=True) and np.array_equal(hi, band[1], equal_nan=True)
    assert panel.plots.rc_plot.band_shown


def test_a_key_held_on_a_slider_steps_coarsely_on_a_loaded_machine_and_is_exact_when_let_go(
        qtbot, open_window, tmp_path, sbuc_parsed, monkeypatch):
    """A key held on a slider repeats its step. When each evaluation is slower than the window's
    budget, the repeated steps are live figures as a drag's are: most are skipped, the status bar
    says the figures are coarser, and letting the key go shows the exact figures of the value
    reached and clears the line."""
    from PySide6.QtGui import QKeyEvent

    from ui.methods.spatial.calibration.panel import COARSE_NOTE
    from workstation.methods.spatial.checker.reference import evaluate_reference

    w, panel, state = _calibration_window(open_window, tmp_path, sbuc_parsed)
    evaluated = _slow_checker(monkeypatch)
    margin = panel.params_box.sliders["margin"]
    margin.slider.setFocus()
    m0, step = margin.value(), margin.spec.step

    def key(kind, repeated: bool) -> None:
        QApplication.sendEvent(margin.slider, QKeyEvent(kind, Qt.Key.Key_Right, Qt.KeyboardModifier.NoModifier,
                                                        "", repeated))

    key(QEvent.Type.KeyPress, False)  # one step: its exact figures at once
    assert state.config.margin == pytest.approx(m0 + step) and not state.previewing
    evaluated.clear()
    for _ in range(24):  # the key held down: its step repeated
        key(QEvent.Type.KeyPress, True)
        qtbot.wait(15)
    assert w.statusBar().currentMessage() == COARSE_NOTE
    assert len(evaluated) <= 12  # most repeated steps skipped
    key(QEvent.Type.KeyRelease, False)
    assert margin.value() == pytest.approx(m0 + 25 * step)
    assert state.config.margin == pytest.approx(m0 + 25 * step) and not state.previewing
    direct = evaluate_reference(state.dataset, state.config)
    assert np.array_equal(state.verdicts.verdict, direct.verdict)
    assert shown_counts(panel) == direct.counts()
    assert w.statusBar().currentMessage() == ""
