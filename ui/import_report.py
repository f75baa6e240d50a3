"""File → Import a SpatialBench-UC run… and File → Write report…: the command line's two long
doors, from the window, with progress and Cancel (`ui.command_run`).

Importing into the open project closes it in the window while the run is imported (one process
writes a project at a time) and opens it again after, success or not; with no project open the
run becomes a new project, which opens. The report is written into the project's ``exports``
folder by default and opened in the system's browser. Neither is offered while a blind audit is
open: a report shows every verdict and label.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QLineEdit,
    QMessageBox,
    QVBoxLayout,
)

from . import project_dialogs
from .command_run import CommandRun, error_line
from .widgets.forms import browse_row, error_label, ok_cancel, wrapped_label

if TYPE_CHECKING:
    from .main_window import MainWindow


def _tell_end(window: MainWindow, run: CommandRun, ok: bool, output: str, done: str, cancelled: str,
              failed_title: str) -> None:
    """How a command run ended, in the status bar, or in a message box with its error line."""
    if ok:
        window.statusBar().showMessage(done, 10000)
    elif run.cancelled:
        window.statusBar().showMessage(cancelled, 10000)
    else:
        QMessageBox.critical(window, failed_title, error_line(output))


def _blind_now(window: MainWindow, what: str) -> bool:
    for views in window.method_views.values():
        c = views.controller(window)
        if c is not None and c.audit is not None and c.audit.blind:
            QMessageBox.information(window, what, f"{what} shows every verdict and label: not during a blind "
                                    "audit. Leave the audit first (Audit → Leave audit set).")
            return True
    return False


class ImportRunDialog(QDialog):
    """The run folder, its prompt suite, the run's name, and where it goes."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setWindowTitle("Import a SpatialBench-UC run")
        self.setObjectName("importRunDialog")
        p = window.state.project
        self._open = str(p.folder) if p is not None and not p.read_only else ""  # the project open here
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.run_dir = QLineEdit()
        self.run_dir.setObjectName("importRunDir")
        self.run_dir.setPlaceholderText("the run folder (holds manifest.jsonl and eval/)")
        form.addRow("Run folder", browse_row(self.run_dir, self._pick_run))
        self.prompts = QLineEdit()
        self.prompts.setObjectName("importPrompts")
        self.prompts.setPlaceholderText("the prompt suite (.jsonl)")
        form.addRow("Prompt suite", browse_row(self.prompts, self._pick_prompts))
        self.run_id = QLineEdit()
        self.run_id.setObjectName("importRunId")
        self.run_id.setPlaceholderText("the manifest's run id")
        form.addRow("Run id (optional)", self.run_id)
        # the open project by default; another folder makes (or adds to) the project there
        self.project = QLineEdit(self._open)
        self.project.setObjectName("importProject")
        self.project.setPlaceholderText("a folder for the new project")
        form.addRow("Project folder", browse_row(self.project, self._pick_project))
        lay.addLayout(form)
        self.where = wrapped_label("", "dim")
        self.where.setObjectName("importWhere")
        lay.addWidget(self.where)
        self.project.textChanged.connect(self._say_where)
        self._say_where()
        lay.addWidget(ok_cancel(self, "Import", "importStart", self._accept))
        self.error = error_label()
        lay.addWidget(self.error)
        self.resize(640, 240)

    @property
    def into_open(self) -> bool:
        """Whether the run goes into the project open in the window (which closes meanwhile)."""
        text = self.project.text().strip()
        return bool(self._open and text) and Path(text).resolve() == Path(self._open).resolve()

    def _say_where(self) -> None:
        text = self.project.text().strip()
        if self.into_open:
            self.where.setText("Into the project open here: it closes in the window while the run is imported, "
                               "and opens again after.")
        elif text and project_dialogs.is_project(Path(text)):
            self.where.setText(f"Into the project in {text}, which opens when the run is imported.")
        else:
            self.where.setText("The run becomes a new project in this folder, which opens when it is imported.")

    def _pick_run(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "The run folder", self.run_dir.text() or str(Path.home()))
        if d:
            self.run_dir.setText(d)
            guess = Path(d).parent / "prompts.jsonl"
            if not self.prompts.text() and guess.is_file():
                self.prompts.setText(str(guess))

    def _pick_prompts(self) -> None:
        f, _ = QFileDialog.getOpenFileName(self, "The prompt suite", self.prompts.text() or self.run_dir.text(),
                                           "Prompt suites (*.jsonl)")
        if f:
            self.prompts.setText(f)

    def _pick_project(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Where the new project goes", str(Path.home()))
        if d:
            self.project.setText(str(Path(d) / "project") if any(Path(d).iterdir()) else d)

    def _accept(self) -> None:
        if not Path(self.run_dir.text()).is_dir():
            self.error.setText("choose the run folder")
        elif not Path(self.prompts.text()).is_file():
            self.error.setText("choose the prompt suite file")
        elif not self.project.text().strip():
            self.error.setText("choose a folder for the new project")
        else:
            self.accept()

    def command(self) -> list[str]:
        args = ["import-sbuc", self.run_dir.text(), "--prompts", self.prompts.text(), "--project", self.project.text()]
        return args + (["--run-id", self.run_id.text().strip()] if self.run_id.text().strip() else [])


def import_run(window: MainWindow, dialog: ImportRunDialog | None = None) -> CommandRun | None:
    """File → Import a SpatialBench-UC run…: ask, then import with progress; the project opens after."""
    dlg = dialog or ImportRunDialog(window)
    if dialog is None and not dlg.exec():
        return None
    folder = Path(dlg.project.text())
    if dlg.into_open:
        window.close_project()  # one writer: the command imports while the window holds nothing
    run = CommandRun(window, "Import a SpatialBench-UC run", dlg.command(),
                     f"Importing {Path(dlg.run_dir.text()).name} into {folder.name}…")

    def done(ok: bool, output: str) -> None:
        if folder.is_dir() and project_dialogs.is_project(folder):
            window.open_project(folder)
        _tell_end(window, run, ok, output, output.splitlines()[-1] if output else "imported",
                  "import cancelled: nothing was imported", "The run was not imported")

    run.finished.connect(done)
    run.start()
    return run


class ReportDialog(QDialog):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setWindowTitle("Write report")
        self.setObjectName("reportDialog")
        p = window.state.project
        lay = QVBoxLayout(self)
        form = QFormLayout()
        default = project_dialogs.exports_folder(p) / time.strftime("report-%Y%m%d-%H%M%S")
        self.out = QLineEdit(str(default))
        self.out.setObjectName("reportOut")
        form.addRow("Report folder", browse_row(self.out, self._pick))
        lay.addLayout(form)
        self.open_after = QCheckBox("open it in the browser when it is written")
        self.open_after.setChecked(True)
        lay.addWidget(self.open_after)
        self.evaluate = QCheckBox("evaluate first (store every method's results under its current configuration)")
        self.evaluate.setObjectName("reportEvaluate")
        self.evaluate.setChecked(True)
        lay.addWidget(self.evaluate)
        lay.addWidget(wrapped_label("Every method with data in the project gets its section (tables, plots, "
                                    "provenance).", "dim"))
        lay.addWidget(ok_cancel(self, "Write", "reportStart", self.accept))
        self.resize(640, 160)

    def _pick(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Where the report goes", str(Path(self.out.text()).parent))
        if d:
            self.out.setText(str(Path(d) / Path(self.out.text()).name))


def close_for_commands(window: MainWindow) -> Callable[[], bool]:
    """Close the window's project so that a command may write it; returns what opens it again.
    The calibration draft kept at the close is the window's own: it comes back without being
    called one left by an earlier run of the window."""
    assert window.state.project is not None  # commands run on the open project
    folder = window.state.project.folder
    s = getattr(window, "spatial", None)
    if s is not None:
        s.reopening = str(folder)
    window.close_project()
    return lambda: bool(window.open_project(folder))


def write_report(window: MainWindow, dialog: ReportDialog | None = None) -> CommandRun | None:
    """File → Write report…: the report bundle of the open project, with progress, then opened."""
    p = window.state.project
    if p is None:
        window.statusBar().showMessage("open a project first", 6000)
        return None
    if _blind_now(window, "The report"):
        return None
    window._leave_all()  # notes typed and not saved yet belong in the report
    dlg = dialog or ReportDialog(window)
    if dialog is None and not dlg.exec():
        return None
    out = Path(dlg.out.text())
    folder = p.folder
    steps = [["report", "--project", str(folder), "--out", str(out)]]
    if out.is_dir() and any(out.iterdir()):  # the command replaces only a report it wrote, and only when told
        if QMessageBox.question(window, "Write report", f"{out} already exists. Replace it? (Only a report "
                                "folder this program wrote is replaced.)") != QMessageBox.StandardButton.Yes:
            return None
        steps[0].append("--overwrite")
    reopen = dlg.evaluate.isChecked()
    if reopen:  # the report reads the stored result sets: store what the window shows first
        steps.insert(0, ["evaluate", "--project", str(folder)])
        reopen_project = close_for_commands(window)  # one writer: evaluate writes while the window holds nothing
    run = CommandRun(window, "Write report", steps, f"Writing the report of {folder.name}…")

    def done(ok: bool, output: str) -> None:
        if reopen:
            reopen_project()
        index = out / "index.html"
        ok = ok and index.is_file()
        _tell_end(window, run, ok, output, f"report written to {out}", "report cancelled: nothing was written",
                  "The report was not written")
        if ok and dlg.open_after.isChecked():
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(index)))

    run.finished.connect(done)
    run.start()
    return run
