"""Issue 47, part 9: the small frictions of a day's audit, each as the user meets it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workstation.jobs import CANCELLED, DONE, FAILED
from workstation.store import Project

pytestmark = pytest.mark.gui


@pytest.fixture
def jobs_panel(qtbot: Any, tmp_path: Path) -> Any:
    from ui.jobs_panel import JobsPanel
    from ui.state import AppState

    state = AppState()
    state.set_project(Project.create(tmp_path / "project"))
    w = JobsPanel(state, poll_ms=40, reload_interval=0.5)
    qtbot.addWidget(w)
    w.resize(1000, 500)
    w.show()
    yield w
    w.shutdown()
    state.close_project()


def _listed(panel: Any) -> list[str]:
    from ui.jobs_panel import COL_JOB

    return [panel.table.item(r, COL_JOB).text() for r in range(panel.table.rowCount())]


def test_the_jobs_table_keeps_its_rows_in_place_while_jobs_run(qtbot: Any, jobs_panel: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.jobs_panel import COL_JOB

    p = jobs_panel.state.project
    for k, status in enumerate((DONE, FAILED, CANCELLED)):
        p.jobs.record(f"job-{k}", "generate", {}, status=status, done=k, total=4)
    jobs_panel.refresh()
    before = _listed(jobs_panel)
    assert sorted(before) == ["job-0", "job-1", "job-2"]
    jobs_panel.select_job(before[1])
    # the store hands the jobs back in another order (a running job's row was updated)
    real = p.jobs.all
    monkeypatch.setattr(p.jobs, "all", lambda: list(reversed(real())))
    jobs_panel.refresh()
    assert _listed(jobs_panel) == before
    # a click on the second row selects the job that was shown there
    rect = jobs_panel.table.visualItemRect(jobs_panel.table.item(1, COL_JOB))
    qtbot.mouseClick(jobs_panel.table.viewport(), Qt.LeftButton, pos=rect.center())
    assert jobs_panel.selected_job_id() == before[1]
    # a new job joins at the end
    p.jobs.record("job-new", "generate", {}, status=DONE)
    jobs_panel.refresh()
    assert _listed(jobs_panel) == before + ["job-new"]


def test_resume_is_offered_only_for_a_job_with_something_left(qtbot: Any, jobs_panel: Any) -> None:
    p = jobs_panel.state.project
    p.jobs.record("finished", "generate", {}, status=DONE, done=4, total=4)
    p.jobs.record("failed", "generate", {}, status=FAILED, done=1, total=4)
    p.jobs.record("cancelled", "generate", {}, status=CANCELLED, done=2, total=4)
    jobs_panel.refresh()
    for job, resumable in (("finished", False), ("failed", True), ("cancelled", True)):
        jobs_panel.select_job(job)
        QApplication.processEvents()
        assert jobs_panel.resume_button.isEnabled() is resumable, job
