"""Grid-search dialog: grids typed by the user, a run on a worker thread with progress, Cancel,
the ranked table equal to the core's search, and loading a row into the sliders. Also the
core generators run by superqt's workers (results, errors, abort closes the generator)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workstation.methods.spatial.calibration import PAPER_GRID, Weights, grid_search
from workstation.store import Project
from workstation.methods.spatial.store import SpatialStore
from workstation.methods.spatial.store import add_dataset as add_spatial_dataset

pytestmark = pytest.mark.gui




@pytest.fixture
def state(labelled_state):
    return labelled_state


@pytest.fixture
def panel(qtbot, state):
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    w = CalibrationPanel(state)
    qtbot.addWidget(w)
    w.resize(1300, 850)
    w.show()
    qtbot.waitExposed(w)
    yield w
    dlg = w.grid_dialog
    if dlg is not None and dlg.is_running():
        dlg.cancel()
        qtbot.waitUntil(lambda: not dlg.is_running(), timeout=20000)


def open_dialog(qtbot, panel):
    qtbot.mouseClick(panel.params_box.grid_button, Qt.MouseButton.LeftButton)
    dlg = panel.grid_dialog
    assert dlg is not None and dlg.isVisible()
    qtbot.waitExposed(dlg)
    return dlg


def type_into(qtbot, edit, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Delete)
    if text:
        qtbot.keyClicks(edit, text)


def click_row(qtbot, table, row: int, double: bool = False) -> None:
    table.scrollToItem(table.item(row, 0))
    rect = table.visualItemRect(table.item(row, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    if double:  # a real double click: press, release, then the double-click press
        qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def column(table, name: str) -> list[str]:
    heads = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    c = heads.index(name)
    return [table.item(r, c).text() for r in range(table.rowCount())]


def test_grid_search_ranks_like_the_core_and_loads_rows(qtbot, panel, state):
    dlg = open_dialog(qtbot, panel)
    # the paper's grid is the default
    assert dlg.grids() == {k: list(v) for k, v in PAPER_GRID.items()}
    assert "36 parameter sets" in dlg.count_label.text()
    # the user narrows the margin grid with a range and changes a weight
    type_into(qtbot, dlg.grid_edits["margin"], "0.03:0.1:0.01")
    assert "8 values" not in dlg.error_label.text() and dlg.error_label.text() == ""
    assert "72 parameter sets" in dlg.count_label.text()
    type_into(qtbot, dlg.weight_spins["risk"], "3")
    qtbot.keyClick(dlg.weight_spins["risk"], Qt.Key.Key_Tab)
    with qtbot.waitSignal(dlg.finished_search, timeout=60000) as blocker:
        qtbot.mouseClick(dlg.run_button, Qt.MouseButton.LeftButton)
    result = blocker.args[0]
    assert result is not None
    assert dlg.progress.value() == dlg.progress.maximum() == 8 * 3  # margin × t_det evaluations
    assert dlg.table.rowCount() == 72
    # the figure it optimised, with its interval, and which labels it rests on
    assert f"over {result.n_audited} audited samples (labels: every audit set and free labelling" in dlg.status.text()
    assert f"minimised J = 10·FPR_PASS + 3·risk + 0.5·(1 − coverage): best J {result.best_j.value:.4f} [" \
        in dlg.status.text()

    # the same search through the core
    grids = {"margin": [0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1], "t_det": [0.2, 0.3, 0.4],
             "tau": [0.3, 0.5, 0.7]}
    core = grid_search(state.dataset, state.config, state.human, grids, Weights(10, 3, 0.5))
    want = core.table()
    assert column(dlg.table, "rank") == [str(r["rank"]) for r in want]
    assert column(dlg.table, "J") == [f"{r['j']:.4f}" for r in want]
    assert column(dlg.table, "margin") == [f"{r['margin']:g}" for r in want]
    js = [float(x) for x in column(dlg.table, "J")]
    assert js == sorted(js)

    # clicking a row loads it into the sliders (and the live config)
    click_row(qtbot, dlg.table, 4)
    for p in ("margin", "t_det", "tau"):
        assert panel.params_box.sliders[p].value() == pytest.approx(want[4][p])
        assert getattr(state.config, p) == pytest.approx(want[4][p])
    assert panel.plots.tau_plot.line.value() == pytest.approx(want[4]["tau"])
    assert dlg.isVisible()
    # double-clicking loads and closes
    click_row(qtbot, dlg.table, 0, double=True)
    qtbot.waitUntil(lambda: not dlg.isVisible(), timeout=3000)
    for p in ("margin", "t_det", "tau"):
        assert panel.params_box.sliders[p].value() == pytest.approx(want[0][p])
        assert getattr(state.config, p) == pytest.approx(want[0][p])
    # the panel's readout shows the chosen point's objective with the dialog's weights
    assert f"J <b>{want[0]['j']:.3f}</b>" in panel.plots.readout.text()


def test_grid_search_can_be_cancelled(qtbot, panel, state, monkeypatch):
    import time

    from workstation.methods.spatial import calibration

    real = calibration._default_evaluator

    def slow(sub):  # each evaluation ≥ 20 ms, whatever the machine: the search cannot end first
        ev = real(sub)

        def each(ds, cfg):
            time.sleep(0.02)
            return ev(ds, cfg)
        return each

    monkeypatch.setattr(calibration, "_default_evaluator", slow)
    dlg = open_dialog(qtbot, panel)
    # 501 × 101 checker evaluations of ≥ 20 ms: far longer than the test waits (a search of the
    # checker's own speed once ended in a busy full run before the cancel was handled)
    type_into(qtbot, dlg.grid_edits["margin"], "0:0.5:0.001")
    type_into(qtbot, dlg.grid_edits["t_det"], "0:1:0.01")
    type_into(qtbot, dlg.grid_edits["tau"], "0.5")
    assert dlg.run_button.isEnabled()
    qtbot.mouseClick(dlg.run_button, Qt.MouseButton.LeftButton)
    assert dlg.is_running()
    assert not dlg.run_button.isEnabled() and dlg.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dlg.progress.value() >= 3, timeout=20000)
    with qtbot.waitSignal(dlg.finished_search, timeout=20000) as blocker:
        qtbot.mouseClick(dlg.cancel_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0] is None
    qtbot.waitUntil(lambda: not dlg.is_running(), timeout=5000)
    assert "cancelled" in dlg.status.text()
    assert dlg.progress.value() < dlg.progress.maximum() == 501 * 101
    assert dlg.table.rowCount() == 0 and dlg.result is None
    assert dlg.run_button.isEnabled() and not dlg.cancel_button.isEnabled()
    # a new run after a cancel works
    type_into(qtbot, dlg.grid_edits["margin"], "0.05, 0.1")
    type_into(qtbot, dlg.grid_edits["t_det"], "0.2")
    with qtbot.waitSignal(dlg.finished_search, timeout=60000) as blocker:
        qtbot.mouseClick(dlg.run_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0] is not None and dlg.table.rowCount() == 2


def test_bad_grid_text_is_explained_and_blocks_run(qtbot, panel):
    dlg = open_dialog(qtbot, panel)
    type_into(qtbot, dlg.grid_edits["t_det"], "0.2, abc")
    assert "t_det" in dlg.error_label.text() and "abc" in dlg.error_label.text()
    assert not dlg.run_button.isEnabled()
    type_into(qtbot, dlg.grid_edits["t_det"], "0.5:0.1:0.1")
    assert "stop is below start" in dlg.error_label.text()
    type_into(qtbot, dlg.grid_edits["t_det"], "0.2,0.3")
    assert dlg.error_label.text() == "" and dlg.run_button.isEnabled()
    # a value outside a parameter's valid range is reported by the core when the run starts
    type_into(qtbot, dlg.grid_edits["t_det"], "1.5")
    with qtbot.waitSignal(dlg.finished_search, timeout=20000) as blocker:
        qtbot.mouseClick(dlg.run_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0] is None
    assert "t_det" in dlg.error_label.text()


def test_parse_grid():
    from ui.methods.spatial.calibration.grid_dialog import GridSpecError, parse_grid

    assert parse_grid("0.03, 0.05 0.07;0.1") == [0.03, 0.05, 0.07, 0.1]
    assert parse_grid("0.05:0.15:0.025") == [0.05, 0.075, 0.1, 0.125, 0.15]
    assert parse_grid("0.1:0.3:0.1, 0.2, 0.5") == [0.1, 0.2, 0.3, 0.5]
    assert parse_grid("  ") == []
    for bad in ("x", "0.1:0.2", "0.2:0.1:0.05", "0:1:0", "0:1:-0.1"):
        with pytest.raises(GridSpecError):
            parse_grid(bad, "margin")


def test_no_labels_grid_search_says_why(qtbot, tmp_path, sbuc_parsed):
    from ui.methods.spatial.calibration.panel import CalibrationPanel
    from ui.methods.spatial.session import SpatialSession

    p = Project.create(tmp_path / "nolabels")
    p.samples.add_run(sbuc_parsed.run_id, method="m")
    add_spatial_dataset(p, sbuc_parsed.dataset)
    SpatialStore(p).save_config(sbuc_parsed.config)
    st = SpatialSession()
    st.set_project(p)
    w = CalibrationPanel(st)
    qtbot.addWidget(w)
    w.show()
    dlg = open_dialog(qtbot, w)
    qtbot.mouseClick(dlg.run_button, Qt.MouseButton.LeftButton)
    assert "label" in dlg.error_label.text() and not dlg.is_running()
    st.close_project()


# ---- the worker helper ----------------------------------------------------------------------------
def _count(n: int):
    for i in range(n):
        yield i
    return "done"


def _boom():
    yield 1
    raise ValueError("bad input on line 3")


def test_worker_yields_returns_and_finishes(qtbot):
    from superqt.utils import create_worker

    got: list[object] = []
    w = create_worker(_count, 5, _start_thread=False)
    w.yielded.connect(got.append)
    with qtbot.waitSignal(w.finished, timeout=5000):
        with qtbot.waitSignal(w.returned, timeout=5000) as ret:
            w.start()
    assert ret.args == ["done"]
    qtbot.waitUntil(lambda: len(got) == 5, timeout=2000)
    assert got == [0, 1, 2, 3, 4]


def test_worker_reports_errors(qtbot):
    from superqt.utils import create_worker

    w = create_worker(_boom, _start_thread=False, _ignore_errors=True)
    with qtbot.waitSignal(w.errored, timeout=5000) as err:
        w.start()
    assert isinstance(err.args[0], ValueError) and "line 3" in str(err.args[0])


def test_worker_aborts_at_a_yield(qtbot):
    import threading

    from superqt.utils import create_worker

    gate = threading.Event()
    closed = threading.Event()

    def slow():
        try:
            yield 0
            for i in range(1, 1000):
                gate.wait(5)
                yield i
        finally:
            closed.set()

    w = create_worker(slow, _start_thread=False)
    returned: list[object] = []
    w.returned.connect(returned.append)
    with qtbot.waitSignal(w.yielded, timeout=5000):
        w.start()
    with qtbot.waitSignal(w.aborted, timeout=5000):
        w.quit()
        gate.set()
    qtbot.waitUntil(lambda: not w.is_running, timeout=2000)
    import gc

    w = None  # let go of the worker; superqt lets go of it once its finished signal is delivered

    def collected() -> bool:
        gc.collect()
        return closed.is_set()

    qtbot.waitUntil(collected, timeout=5000)  # the generator was closed (its finally ran)
    assert returned == []
