"""The job panel: run a job and watch it reach 100 %, cancel another, New job…, failures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QProgressBar

from workstation.jobs import CANCELLED, DONE, FAILED
from workstation.commands.pipeline import PipelineRequest
from workstation.store import Project

from .conftest import on_next_modal

pytestmark = pytest.mark.gui

SMALL = {"width": 128, "height": 128}


@pytest.fixture
def panel(qtbot: Any, tmp_path: Path) -> Any:
    from ui.jobs_panel import JobsPanel
    from ui.methods.spatial.session import SpatialSession

    spatial = SpatialSession()  # the spatial views' session: it follows the project's samples
    state = spatial.app
    state.set_project(Project.create(tmp_path / "project"))
    w = JobsPanel(state, poll_ms=40, reload_interval=0.5)
    w.spatial = spatial
    qtbot.addWidget(w)
    w.resize(1000, 500)
    w.show()
    yield w
    w.shutdown()
    state.close_project()


def row_of(panel: Any, job_id: str) -> int:
    from ui.jobs_panel import COL_JOB

    for r in range(panel.table.rowCount()):
        if panel.table.item(r, COL_JOB).text() == job_id:
            return r
    raise AssertionError(f"{job_id} is not listed")


def cell(panel: Any, job_id: str, col: int) -> str:
    return panel.table.item(row_of(panel, job_id), col).text()


def test_a_job_reaches_100_percent_and_another_is_cancelled(qtbot: Any, panel: Any) -> None:
    from ui.jobs_panel import COL_PROGRESS, COL_STATE

    (first,) = panel.run_request(PipelineRequest(pairs=2, seeds=1, params=SMALL, detector=None, evaluate=False))
    assert cell(panel, first, COL_STATE) in ("queued", "starting", "running")
    with qtbot.waitSignal(panel.job_finished, timeout=60000) as done:
        pass
    assert done.args[:2] == [first, DONE]
    bar = panel.table.cellWidget(row_of(panel, first), COL_PROGRESS)
    assert isinstance(bar, QProgressBar)
    assert bar.maximum() == 8 and bar.value() == 8 and "100%" in bar.text()
    assert cell(panel, first, COL_STATE) == DONE
    assert panel.spatial.dataset is not None and panel.spatial.dataset.n == 8  # the other views see the samples

    # a second, slower job: cancel it from the panel while it runs
    panel.queue.env = dict(os.environ, WORKSTATION_JOB_DELAY="0.3")
    (second,) = panel.run_request(PipelineRequest(pairs=2, seeds=2, params=SMALL, batch_size=1, run_id="second",
                                                  detector=None, evaluate=False))
    def started() -> bool:
        p = panel.progress_of(second)
        return p is not None and p.done >= 1

    qtbot.waitUntil(started, timeout=60000)
    panel.select_job(second)
    assert panel.cancel_button.isEnabled() and not panel.resume_button.isEnabled()
    with qtbot.waitSignal(panel.job_finished, timeout=60000) as cancelled:
        qtbot.mouseClick(panel.cancel_button, Qt.LeftButton)
    assert cancelled.args[:2] == [second, CANCELLED]
    assert cell(panel, second, COL_STATE) == CANCELLED
    kept = panel.spatial.dataset.n - 8
    assert 1 <= kept < 16
    assert panel.resume_button.isEnabled()
    assert "cancel" in panel.log_view.toPlainText()

    # Resume finishes it, skipping what is done
    panel.queue.env = None
    with qtbot.waitSignal(panel.job_finished, timeout=60000) as resumed:
        qtbot.mouseClick(panel.resume_button, Qt.LeftButton)
    assert resumed.args[:2] == [second, DONE]
    assert panel.spatial.dataset.n == 8 + 16


def test_new_job_dialog_generates_detects_and_evaluates(qtbot: Any, panel: Any) -> None:
    from ui.jobs_panel import COL_STATE

    def fill(dlg: Any) -> None:
        dlg.pairs.setValue(1)
        dlg.seeds.setValue(1)
        dlg.size.setValue(128)
        dlg.perturb.setChecked(False)
        assert dlg.detector.currentText() == "scene"
        qtbot.mouseClick(dlg.run_button, Qt.LeftButton)

    finished: list[tuple[str, str]] = []
    panel.job_finished.connect(lambda j, s, _m: finished.append((j, s)))
    on_next_modal(qtbot, fill)
    qtbot.mouseClick(panel.new_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: len(finished) == 3, timeout=90000)
    assert [s for _j, s in finished] == [DONE, DONE, DONE]
    assert [j.split("-")[0] for j, _s in finished] == ["generate", "detect", "evaluate"]
    assert all(cell(panel, j, COL_STATE) == DONE for j, _s in finished)
    ds = panel.spatial.dataset
    assert ds is not None and ds.n == 4 and len(ds.detections) > 0
    assert panel.spatial.verdicts is not None


def test_new_job_dialog_refuses_a_missing_prompt_file(qtbot: Any, panel: Any, tmp_path: Path) -> None:
    seen: list[Any] = []

    def fill(dlg: Any) -> None:
        seen.append(dlg)
        dlg.suite_kind.setCurrentIndex(1)
        dlg.suite_file.setText(str(tmp_path / "nope.jsonl"))
        qtbot.mouseClick(dlg.run_button, Qt.LeftButton)
        assert dlg.isVisible() and "not found" in dlg.error.text()
        dlg.buttons.button(QDialogButtonBox.Cancel).click()

    on_next_modal(qtbot, fill)
    qtbot.mouseClick(panel.new_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(seen) and not seen[0].isVisible(), timeout=10000)
    assert panel.table.rowCount() == 0


def test_a_failing_job_shows_its_message_and_the_window_stays(qtbot: Any, panel: Any, tmp_path: Path) -> None:
    from ui.jobs_panel import COL_MESSAGE, COL_STATE
    from workstation.jobs import create_detect_job, create_evaluate_job, create_generate_job
    from workstation.methods.spatial.suite import spatial_suite
    from workstation.types import WorkstationError

    missing = tmp_path / "no_model_here"
    # a request naming a missing model is refused before anything is stored
    with pytest.raises(WorkstationError, match="generator model .diffusers. not found"):
        panel.run_request(PipelineRequest(pairs=1, seeds=1, generator="diffusers", model=str(missing),
                                          params=SMALL))
    assert panel.table.rowCount() == 0
    # a model that disappears after the chain was queued: generation fails, the rest does not run
    p = panel.queue.project
    gen = create_generate_job(p, spatial_suite(1), generator="diffusers", model=str(missing), seeds=[0], params=SMALL)
    det = create_detect_job(p, detector="scene", runs=[gen.run_id], check_runs=False)
    ev = create_evaluate_job(p)
    finished: list[tuple[str, str]] = []
    panel.job_finished.connect(lambda j, s, _m: finished.append((j, s)))
    panel.submit([gen.job_id, det.job_id, ev.job_id], chain=True)
    qtbot.waitUntil(lambda: panel.is_busy() is False and bool(finished), timeout=60000)
    assert finished == [(gen.job_id, FAILED)]  # detection and evaluation never started
    text = panel.banner.text()
    assert panel.banner.isVisible() and text.startswith(f"Job {gen.job_id} failed:") and str(missing) in text
    assert text.endswith(f"Not run: {det.job_id}, {ev.job_id}")
    assert cell(panel, gen.job_id, COL_STATE) == FAILED
    assert "not found" in cell(panel, gen.job_id, COL_MESSAGE)
    assert cell(panel, det.job_id, COL_STATE) == CANCELLED == cell(panel, ev.job_id, COL_STATE)
    assert cell(panel, det.job_id, COL_MESSAGE) == f"not run: {gen.job_id} ended failed"
    assert panel.isVisible()


def test_new_job_dialog_names_a_missing_detector_model_before_anything_runs(qtbot: Any, panel: Any,
                                                                           tmp_path: Path) -> None:
    seen: list[Any] = []
    missing = tmp_path / "detectors" / "owl"

    def fill(dlg: Any) -> None:
        seen.append(dlg)
        dlg.pairs.setValue(1)
        dlg.seeds.setValue(1)
        dlg.detector_model.setText(str(missing))
        qtbot.mouseClick(dlg.run_button, Qt.LeftButton)
        assert dlg.isVisible()
        assert dlg.error.text() == f"detector model (scene) not found: {missing}"
        dlg.buttons.button(QDialogButtonBox.Cancel).click()

    on_next_modal(qtbot, fill)
    qtbot.mouseClick(panel.new_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(seen) and not seen[0].isVisible(), timeout=10000)
    assert panel.table.rowCount() == 0 and panel.queue.project.samples.count() == 0


def test_new_job_dialog_offers_real_backends_and_schedulers_and_remembers_the_last_values(
        qtbot: Any, tmp_path: Path) -> None:
    import sys

    from ui.jobs_panel import NewJobDialog

    had_diffusers = "diffusers" in sys.modules
    dlg = NewJobDialog()
    qtbot.addWidget(dlg)
    gens = [dlg.generator.itemText(i) for i in range(dlg.generator.count())]
    dets = [dlg.detector.itemText(i) for i in range(dlg.detector.count())]
    second = [dlg.secondary.item(i).text() for i in range(dlg.secondary.count())]
    assert "fake" not in gens + dets + second
    assert gens[0] == "procedural" and "diffusers" in gens and "owlv2" in dets and "scene" in second
    names = [dlg.scheduler.itemData(i) for i in range(dlg.scheduler.count())]
    assert names == ["", "dpmpp_2m", "dpmpp_2m_karras", "unipc", "euler", "euler_a", "ddim", "pndm", "default"]
    assert dlg.scheduler.itemText(5) == "Euler a  (euler_a)"
    assert had_diffusers or "diffusers" not in sys.modules  # the list comes without importing diffusers

    model = tmp_path / "sd15"
    model.mkdir()
    dlg.generator.setCurrentText("diffusers")
    dlg.model.setText(str(model))
    dlg.seeds.setValue(3)
    dlg.size.setValue(640)
    dlg.steps.setValue(12)
    dlg.scheduler.setCurrentIndex(names.index("euler_a"))
    dlg.detector.setCurrentText("owlv2")
    dlg.secondary.item(second.index("scene")).setCheckState(Qt.Checked)
    dlg.perturb.setChecked(False)
    req = dlg.request()
    assert req.params["scheduler"] == "euler_a" and req.params["steps"] == 12
    dlg.accept()
    assert dlg.error.text() == "" and not dlg.isVisible()

    again = NewJobDialog()
    qtbot.addWidget(again)
    r2 = again.request()
    assert (r2.generator, r2.model, r2.seeds, r2.detector, r2.secondary, r2.perturbations) == (
        "diffusers", str(model), 3, "owlv2", [("scene", None)], [])
    assert r2.params == {"width": 640, "height": 640, "steps": 12, "guidance": 7.5, "scheduler": "euler_a"}


def test_the_jobs_dock_shows_several_jobs_and_the_one_just_queued(qtbot: Any, open_window: Any,
                                                                  tmp_path: Path) -> None:
    from ui.jobs_panel import COL_JOB
    from workstation.commands.pipeline import create_pipeline

    folder = tmp_path / "jobs"
    with Project.create(folder) as p:
        for k in range(8):  # eight stored jobs from before, none running
            create_pipeline(p, PipelineRequest(pairs=1, seeds=1, params=SMALL, run_id=f"old{k}", detector=None,
                                               evaluate=False))
    w = open_window(folder)
    w.install_extra_panels()
    w.jobs_actions["panel"].trigger()
    panel = w.panels["Jobs"]
    qtbot.waitUntil(lambda: panel.isVisible(), timeout=3000)
    panel.refresh()
    t = panel.table
    assert t.rowCount() == 8
    assert t.viewport().height() >= 4 * t.verticalHeader().defaultSectionSize()  # four jobs in view at least
    (new,) = panel.run_request(PipelineRequest(pairs=1, seeds=1, params=SMALL, run_id="new", detector=None,
                                               evaluate=False))
    assert panel.selected_job_id() == new
    item = t.item(row_of(panel, new), COL_JOB)
    assert t.viewport().rect().intersects(t.visualItemRect(item))  # scrolled into view
    with qtbot.waitSignal(panel.job_finished, timeout=60000):
        pass
