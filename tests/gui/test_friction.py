"""The small frictions of a day's audit, each as the user meets it."""

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


@pytest.fixture(scope="module")
def plan_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workstation.methods import get_method

    folder = tmp_path_factory.mktemp("plans") / "p"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        get_method("metalogic").build_demo(p, small=True, workers=0)
    return folder


@pytest.fixture
def plan_projects(tmp_path: Path, plan_template: Path) -> tuple[Path, Path]:
    import shutil

    for name in ("a", "b"):
        shutil.copytree(plan_template, tmp_path / name)
    return tmp_path / "a", tmp_path / "b"


def _plan_with_labels(qtbot: Any, w: Any, panel: Any) -> Any:
    panel.method_combo.setCurrentIndex(panel.method_combo.findData("metalogic"))
    plan = panel.start_plan()
    assert plan is not None
    panel.batch_spin.setValue(3)
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    c = w.method_views["metalogic"].controller(w)
    for _ in range(3):
        c.record("ALIGNED")
    panel.refresh()
    return plan


def test_the_plans_window_shows_nothing_of_the_project_left(qtbot: Any, open_window: Any,
                                                             plan_projects: tuple[Path, Path]) -> None:
    from ui import menus

    a, b = plan_projects
    w = open_window(a)
    menus.open_audit_plans(w)
    panel = w.audit_plans_window.panel
    _plan_with_labels(qtbot, w, panel)
    xs, _ys = panel._curve.getData()
    assert xs is not None and len(xs) > 0 and panel.table.rowCount() > 0
    with qtbot.waitSignal(w.load_finished, timeout=30000) as done:  # File → Open: another project
        w.open_project_in_background(b)
    assert done.args == [True]
    QApplication.processEvents()
    assert panel.project is w.state.project and panel.plan is None
    xs, _ys = panel._curve.getData()
    assert xs is None or len(xs) == 0, "the chart still shows the other project's plan"
    assert panel.table.rowCount() == 0 and panel.plan_combo.count() == 0
    assert "No audit plan yet" in panel.goal_label.text() and panel.estimate_label.text() == ""


def test_the_goal_form_opens_on_the_method_of_the_tab_shown(qtbot: Any, open_window: Any,
                                                             plan_projects: tuple[Path, Path]) -> None:
    from ui import menus

    w = open_window(plan_projects[0])
    qtbot.waitUntil(lambda: "metalogic" in w.method_views, timeout=20000)
    for name in ("metalogic", "spatial", "metalogic"):
        w.show_page(w.method_views[name].pages(w)[0])
        QApplication.processEvents()
        menus.open_audit_plans(w)
        assert w.audit_plans_window.panel.method_combo.currentData() == name


def test_undoing_a_note_says_the_note_was_undone(qtbot: Any, png_project: Path) -> None:
    from PySide6.QtWidgets import QWidget

    from ui.state import AppState
    from ui.widgets.judge import JudgeBar, JudgeController, install_shortcuts
    from workstation.evaluation.base import LabelScheme

    scheme = LabelScheme(task="test.pair", target="pair", values=("PASS", "FAIL"), keys=("P", "F"),
                         titles=("pass", "fail"), title="Right?")
    st = AppState()
    st.open_project(png_project)
    st.set_annotator("ann")
    said: list[str] = []
    st.message.connect(said.append)
    c = JudgeController(scheme, st)
    c.auto_advance = False
    w = QWidget()
    bar = JudgeBar(c, w)
    bar.auto.setChecked(False)
    install_shortcuts(w, c, bar)
    qtbot.addWidget(w)
    w.show()
    c.set_queue(["pair-1", "pair-2"])
    assert c.record("FAIL")
    assert c.save_notes("the dog is cut off")
    assert c.undo()
    assert said[-1].startswith("note undone:") and "is fail" not in said[-1], said[-1]
    assert "its label stays fail" in said[-1]
    assert c.current_state == ("FAIL", None)
    assert c.redo()
    assert said[-1].startswith("note redone:"), said[-1]
    # undoing the label itself still says what the item is now
    assert c.undo() and c.undo()
    assert said[-1].startswith("undone:") and said[-1].endswith("is unlabelled"), said[-1]
    st.close_project()


def test_kappa_over_one_shared_image_is_undefined_whatever_the_two_ratings() -> None:
    """ProtoBias showed "κ_w 0.00 [0.00, 0.00]" for a pair of annotators who rated one image in
    common (and differently) and "undefined" for a pair who rated one alike: both are undefined."""
    import numpy as np

    from ui.methods.protobias.metric_table import _kappa
    from workstation.methods.protobias.metrics import Ratings, annotator_kappa_table

    # a and b share image t1:corr (2 vs 3); c and d share t2:corr (2 vs 2); nobody else overlaps
    r = Ratings(triplet_id=np.array(["t1", "t1", "t2", "t2"], object),
                role=np.array(["corr"] * 4, object),
                annotator=np.array(["a", "b", "c", "d"], object),
                rating=np.array([2.0, 3.0, 2.0, 2.0]))
    rows = {(x["annotator_a"], x["annotator_b"]): x for x in annotator_kappa_table(r, n_boot=200)}
    for pair in (("a", "b"), ("c", "d")):
        assert rows[pair]["n"] == 1
        assert _kappa(rows[pair], "kappa_w") == "undefined", (pair, rows[pair])
        assert _kappa(rows[pair], "kappa") == "undefined", (pair, rows[pair])


def test_after_write_report_the_draft_is_not_from_the_last_session(qtbot: Any, open_window: Any,
                                                                   png_project: Path) -> None:
    """Write report with "evaluate first" closes the project and opens it again: the unapplied
    calibration draft is the session's own, not one "kept from the last session"."""
    from ui import import_report

    w = open_window(png_project)
    w.spatial.set_config(w.spatial.config.replace(margin=0.23))
    reopen = import_report.close_for_commands(w)  # as Write report does around its commands
    assert reopen()
    st = w.spatial
    assert st.config.margin == pytest.approx(0.23) and st.has_unapplied_config()
    assert not st.draft_restored
    assert "restored the unapplied calibration changes" not in w.statusBar().currentMessage()
    text = w.method_views["spatial"].calibration_panel(w).params_box.version_label.text()
    assert "Not applied" in text and "kept from the last session" not in text
    assert "Quitting keeps them as a draft" in text
    # a real next session still says where the draft came from
    w.close()
    w2 = open_window(png_project)
    assert w2.spatial.draft_restored
    assert "kept from the last session" in w2.method_views["spatial"].calibration_panel(w2).params_box.version_label.text()


def test_the_reports_audit_plan_section_links_only_inside_the_report(tmp_path: Path, plan_template: Path) -> None:
    """The report's "Audit plans" section linked to docs/audit-plans.md, which a report's reader
    does not have: every link of the report's index now opens a file of the report folder, and
    the plans' page says how a plan draws and what each estimate assumes."""
    import re
    import shutil

    from workstation.cli import main
    from workstation.evaluation.plan import Goal
    from workstation.methods import audit_sources

    project = tmp_path / "p"
    shutil.copytree(plan_template, project)
    with Project.open(project) as p:
        plan = audit_sources.create_plan(p, "spatial", Goal("rate", 0.1), seed=2, name="mine")
        audit_sources.next_targets(p, plan, 4)
    out = tmp_path / "report"
    assert main(["report", "--project", str(project), "--out", str(out)]) == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "Audit plans" in index and "docs/audit-plans.md" not in index
    links = [h for h in re.findall(r"href='([^']+)'", index) if not h.startswith(("#", "http"))]
    assert "audit_plans/index.html" in links
    for h in links:
        target = (out / h).resolve()
        assert target.is_file() and target.is_relative_to(out.resolve()), h
    page = (out / "audit_plans" / "index.html").read_text(encoding="utf-8")
    assert "Stopping rule" in page and "What each estimate assumes" in page and "Wilson" in page


def test_the_plan_and_calibration_say_which_verdicts_the_plan_uses(qtbot: Any, open_window: Any,
                                                                   plan_projects: tuple[Path, Path]) -> None:
    """Calibration shows an unapplied draft while a plan works on the stored verdicts: both say so."""
    from ui import menus
    from workstation.evaluation.plan import Goal

    w = open_window(plan_projects[0])
    cid = w.spatial.config_id
    assert cid is not None
    w.spatial.set_config(w.spatial.config.replace(margin=0.23))  # a draft, not applied
    panel = w.method_views["spatial"].calibration_panel(w)
    assert "Not applied" in panel.params_box.version_label.text()
    assert f"Audit plans use the stored verdicts of v{cid}, not these" in panel.params_box.version_label.text()
    w.show_page(w.browser)
    menus.open_audit_plans(w)
    plans = w.audit_plans_window.panel
    assert plans.method_combo.currentData() == "spatial"
    assert plans.uses_label.isVisible()
    assert f"stored verdicts of the active checker version v{cid}" in plans.uses_label.text()
    assert "not Calibration's unapplied live parameters" in plans.uses_label.text()
    plans.quantity_combo.setCurrentIndex(plans.quantity_combo.findData(Goal("rate", 0.1).quantity))
    assert plans.start_plan() is not None
    assert f"on the verdicts of checker version v{cid}" in plans.labels_label.text()
    # another method's plan has no checker version to name
    plans.method_combo.setCurrentIndex(plans.method_combo.findData("metalogic"))
    assert not plans.uses_label.isVisible()


def test_file_import_can_go_into_a_new_project_while_one_is_open(qtbot: Any, open_window: Any,
                                                                 png_project: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """File → Import's "Into the project" was read-only: an import into a new project needed
    File → New project first. The folder is editable; another folder imports there and leaves
    the open project alone."""
    from ui import import_report

    started: list[list[list[str]]] = []

    class Run:  # the command is not run: what it would run is recorded
        def __init__(self, _window: Any, _title: str, steps: Any, _text: str) -> None:
            started.append(steps if isinstance(steps[0], list) else [steps])
            self.finished = type("S", (), {"connect": lambda _self, _fn: None})()

        def start(self) -> None:
            pass

    monkeypatch.setattr(import_report, "CommandRun", Run)
    w = open_window(png_project)
    dlg = import_report.ImportRunDialog(w)
    assert not dlg.project.isReadOnly() and dlg.project.text() == str(png_project)
    assert dlg.into_open and "Into the project open here" in dlg.where.text()
    new = tmp_path / "new-project"
    dlg.project.setText(str(new))
    assert not dlg.into_open and "becomes a new project" in dlg.where.text()
    dlg.run_dir.setText(str(tmp_path))
    dlg.prompts.setText(str(tmp_path / "prompts.jsonl"))
    assert import_report.import_run(w, dlg) is not None
    (steps,) = started
    assert steps[0][steps[0].index("--project") + 1] == str(new)
    assert w.state.project is not None and w.state.project.folder == png_project  # left open
