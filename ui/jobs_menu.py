"""The Jobs menu of the main window, and removing a run.

    Jobs → New job…              (the New job dialog; the panel opens to show the jobs)
    Jobs → Show jobs panel       (Ctrl+J; also in View → Panels)
    Jobs → Cancel selected job / Resume selected job   (as the panel's buttons)
    Jobs → Remove run…           (a run's samples, detections, results and images, after a confirmation)

`install_jobs_menu(window)` adds it once the jobs panel is installed (`MainWindow.install_extra_panels`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QInputDialog, QMenu, QMessageBox

from workstation.types import WorkstationError

if TYPE_CHECKING:
    from .jobs_panel import JobsPanel
    from .main_window import MainWindow


def install_jobs_menu(window: MainWindow) -> QMenu | None:
    """Add the Jobs menu (before Help) to a main window that hosts the jobs panel."""
    panel = cast("JobsPanel | None", window.panels.get("Jobs"))
    dock = window.docks.get("Jobs")
    if panel is None or dock is None or getattr(window, "jobs_menu", None) is not None:
        return getattr(window, "jobs_menu", None)
    mb = window.menuBar()
    menu = QMenu("&Jobs", window)
    menu.setObjectName("jobsMenu")
    help_action = next((a for a in mb.actions() if a.text().replace("&", "") == "Help"), None)
    if help_action is not None:
        mb.insertMenu(help_action, menu)
    else:
        mb.addMenu(menu)

    def show_panel() -> None:
        dock.show()
        dock.raise_()

    new = QAction("New job…", window)
    new.setObjectName("jobsNew")
    new.setToolTip("Generate images for a suite, detect objects and evaluate them")
    # the tuple makes both calls in one lambda
    new.triggered.connect(lambda: (show_panel(), panel.new_job_dialog()))  # type: ignore[func-returns-value]
    toggle = dock.toggleViewAction()
    toggle.setText("Show jobs panel")
    cancel = QAction("Cancel selected job", window)
    cancel.setObjectName("jobsCancel")
    cancel.triggered.connect(panel.cancel_selected)
    resume = QAction("Resume selected job", window)
    resume.setObjectName("jobsResume")
    resume.triggered.connect(panel.resume_selected)
    remove = QAction("Remove run…", window)
    remove.setObjectName("jobsRemoveRun")
    remove.setToolTip("Remove a run with its samples, detections, verdicts and images (labels stay in the log)")
    remove.triggered.connect(lambda: remove_run_dialog(window))
    for a in (new, toggle):
        menu.addAction(a)
    menu.addSeparator()
    menu.addAction(cancel)
    menu.addAction(resume)
    menu.addSeparator()
    menu.addAction(remove)

    def sync() -> None:
        writable = panel.queue is not None
        new.setEnabled(writable)
        cancel.setEnabled(panel.cancel_button.isEnabled())
        resume.setEnabled(panel.resume_button.isEnabled())
        p = window.state.project
        remove.setEnabled(p is not None and not p.read_only and bool(p.samples.run_ids()))

    menu.aboutToShow.connect(sync)
    sync()
    window.jobs_menu = menu
    window.jobs_actions = {"new": new, "panel": toggle, "cancel": cancel, "resume": resume, "remove_run": remove}
    return menu


def remove_run_dialog(window: MainWindow, run_id: str | None = None) -> bool:
    """Ask which run (unless given), show what goes with it, and remove it after a Yes."""
    from workstation.commands.runs import list_runs, plan_run_removal, remove_run

    st = window.state
    p = st.project
    title = "Remove run"
    if p is None or p.read_only:
        QMessageBox.information(window, title, "Open a project for writing first.")
        return False
    panel = cast("JobsPanel | None", window.panels.get("Jobs"))
    if panel is not None and panel.is_busy():
        QMessageBox.information(window, title, "Jobs are running; wait for them to end (or cancel them) first.")
        return False
    if run_id is None:
        runs = list_runs(p)
        if not runs:
            QMessageBox.information(window, title, "This project has no runs.")
            return False
        items = [f"{r['run_id']}  ({r['samples']} samples)" for r in runs]
        choice, ok = QInputDialog.getItem(window, title, "Run to remove:", items, 0, False)
        if not ok:
            return False
        run_id = runs[items.index(choice)]["run_id"]
    try:
        plan = plan_run_removal(p, run_id)
    except WorkstationError as e:
        QMessageBox.critical(window, title, str(e))
        return False
    box = QMessageBox(QMessageBox.Icon.Warning, title,
                      f"Remove {plan.summary()}?\n\nThis cannot be undone. The prompts stay, and so do the "
                      "labels (the label log is append-only).",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, window)
    box.setObjectName("removeRunConfirm")
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    if box.exec() != QMessageBox.StandardButton.Yes:
        return False
    window._leave_all()  # notes typed and not saved yet
    try:
        done = remove_run(p, run_id)
    except (WorkstationError, OSError) as e:
        QMessageBox.critical(window, title, f"The run was not removed: {e}")
        return False
    st.reload()  # every session reads its data again; its queue starts over
    if panel is not None:
        panel.refresh()
    note = f" ({len(done.not_deleted)} file(s) could not be deleted)" if done.not_deleted else ""
    st.message.emit(f"removed {done.summary()}{note}")
    return True
