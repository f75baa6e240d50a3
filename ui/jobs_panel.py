"""The job panel: queued / running / finished jobs with progress, Cancel, Resume, log, New job….

A thin view over ``workstation.jobs``: the panel owns a ``JobQueue`` for the open project and
drives it from a timer on the GUI thread. The work itself runs in worker processes, so a crash
in a model library ends a job, never the window; each tick reads the worker's progress file,
ingests the finished chunks into the project (small transactions) and, at most every couple of
seconds and when a job ends, reloads the application state so the other views see the new
samples. Failures show in a banner above the table, in the job's row and in the status bar.

    panel = JobsPanel(state)
    window.add_panel("Jobs", panel, "bottom")
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workstation.jobs import CANCELLED, DONE, FAILED, PROCEDURAL, QUEUED, SCENE, Progress
from workstation.commands.pipeline import (
    PipelineRequest,
    check_pipeline_request,
    create_pipeline,
    default_perturbations,
)
from workstation.jobs.progress import LIVE_STATES, format_seconds
from workstation.jobs.queue import JobQueue
from workstation.jobs.runner import JobRun, live_status, tail
from workstation.commands.jobs import describe_job
from workstation.jobs.spec import JobPaths
from workstation.types import WorkstationError

from .state import AppState
from .widgets.forms import browse_row, double_spin_box, push_button, spin_box, wrapped_label
from .widgets.layout import splitter

if TYPE_CHECKING:
    from .main_window import MainWindow

log = logging.getLogger(__name__)

COLUMNS = ("Job", "What", "State", "Progress", "Speed", "ETA", "Message")
COL_JOB, COL_WHAT, COL_STATE, COL_PROGRESS, COL_SPEED, COL_ETA, COL_MESSAGE = range(len(COLUMNS))


class JobsPanel(QWidget):
    """Job list with live progress bars, Cancel / Resume, the selected job's log and New job…."""

    job_finished = Signal(str, str, str)  # job_id, final state, message
    job_started = Signal(str)

    def __init__(self, state: AppState, parent: QWidget | None = None, *, poll_ms: int = 250,
                 reload_interval: float = 2.0, env: dict[str, str] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("jobsPanel")
        self.state = state
        self.env = env
        self.reload_interval = reload_interval
        self.queue: JobQueue | None = None
        self._rows: dict[str, int] = {}
        # the order the rows are shown in, kept while jobs run (a row never moves under the
        # pointer: a click selects the job it was aimed at); new jobs join at the end
        self._order: dict[str, int] = {}
        self._live: dict[str, Progress] = {}  # latest progress per job seen since the panel started
        self._dirty = False
        self._last_reload = 0.0
        self._log_job = ""

        self.new_button = push_button("New job…", self.new_job_dialog,
                                      "Generate images for a suite, detect objects and evaluate them")
        self.resume_button = push_button("Resume", self.resume_selected,
                                         "Run the selected job again; items already done are skipped")
        self.cancel_button = push_button("Cancel", self.cancel_selected,
                                         "Stop the selected job after its current batch (finished items are kept)")
        self.refresh_button = push_button("Refresh", self.refresh)
        bar = QHBoxLayout()
        for b in (self.new_button, self.resume_button, self.cancel_button, self.refresh_button):
            bar.addWidget(b)
        bar.addStretch(1)

        self.banner = wrapped_label(name="jobsBanner", selectable=True)
        self.banner.setStyleSheet("QLabel#jobsBanner { background: #5c1f1f; color: #ffe9e9; padding: 6px; "
                                  "border-radius: 3px; }")
        self.banner.hide()

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(COL_WHAT, QHeaderView.ResizeMode.Stretch)
        hh.setSectionResizeMode(COL_MESSAGE, QHeaderView.ResizeMode.Stretch)
        for c in (COL_JOB, COL_STATE, COL_SPEED, COL_ETA):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setColumnWidth(COL_PROGRESS, 160)

        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setObjectName("jobLog")
        self.log_view.setPlaceholderText("the selected job's log")
        self.log_view.setMaximumBlockCount(2000)

        # at least four jobs in view, header included, however small the dock is made
        rows = self.table.verticalHeader().defaultSectionSize()
        self.table.setMinimumHeight(self.table.horizontalHeader().sizeHint().height() + 4 * rows + 4)
        split = splitter(Qt.Orientation.Vertical, self.table, self.log_view, stretch=(3, 1))

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(bar)
        lay.addWidget(self.banner)
        lay.addWidget(split, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(poll_ms)
        self.timer.timeout.connect(self.tick)

        self.table.itemSelectionChanged.connect(self._selection_changed)
        state.project_changed.connect(self._project_changed)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._project_changed()

    # ---- project ---------------------------------------------------------------------------------
    def _project_changed(self) -> None:
        if self.queue is not None:
            self.queue.cancel_all()  # workers stop after their batch; resume ingests what they left
        self.queue = None
        self._live.clear()
        self._order.clear()
        self.banner.hide()
        p = self.state.project
        if p is not None and not p.read_only:
            self.queue = JobQueue(p, env=self.env)
            self.queue.on_finished = self._finished
            self.queue.on_skipped = self._skipped
        self.new_button.setEnabled(self.queue is not None)
        self.refresh()

    def shutdown(self) -> None:
        """Ask running jobs to stop (the window is closing); they can be resumed later."""
        self.timer.stop()
        if self.queue is not None:
            self.queue.cancel_all()
            for _ in range(3):  # let the cancel reach the queue bookkeeping
                self.queue.step()
            self.queue = None  # the project belongs to the application state

    # ---- jobs --------------------------------------------------------------------------------------
    def submit(self, job_ids: list[str], chain: bool = False) -> None:
        """Queue stored jobs (new ones, or ones to resume) and start watching. With `chain`, each
        job runs only when the ones before it succeeded (a failed step stops the rest)."""
        if self.queue is None:
            raise WorkstationError("open a project for writing to run jobs")
        for i, j in enumerate(job_ids):
            self.queue.submit(j, after=job_ids[:i] if chain else ())
        self.banner.hide()
        self.refresh()
        if job_ids:  # the job just queued is the one in view
            self.select_job(job_ids[-1])
        if not self.timer.isActive():
            self.timer.start()
        self.tick()

    def run_request(self, req: PipelineRequest) -> list[str]:
        """Create the jobs of a request and queue them; returns their ids."""
        if self.queue is None:
            raise WorkstationError("open a project for writing to run jobs")
        specs = create_pipeline(self.queue.project, req)
        ids = [s.job_id for s in specs]
        self.submit(ids, chain=True)
        return ids

    def cancel_job(self, job_id: str) -> None:
        if self.queue is not None:
            self.queue.cancel(job_id)
            self.state.message.emit(f"cancelling {job_id} after its current batch…")
        self.refresh()

    def resume_job(self, job_id: str) -> None:
        self.submit([job_id])

    def selected_job_id(self) -> str:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return ""
        item = self.table.item(rows[0].row(), COL_JOB)
        return item.text() if item is not None else ""

    def select_job(self, job_id: str) -> None:
        row = self._rows.get(job_id)
        if row is not None:
            self.table.selectRow(row)
            item = self.table.item(row, COL_JOB)
            if item is not None:
                self.table.scrollToItem(item)

    def cancel_selected(self) -> None:
        j = self.selected_job_id()
        if j:
            self.cancel_job(j)

    def resume_selected(self) -> None:
        j = self.selected_job_id()
        if j:
            try:
                self.resume_job(j)
            except WorkstationError as e:
                self.show_error(str(e))

    def progress_of(self, job_id: str) -> Progress | None:
        """The latest progress seen for a job (None if it has not run since the panel started)."""
        return self._live.get(job_id)

    def is_busy(self) -> bool:
        return self.queue is not None and not self.queue.idle

    # ---- the timer -----------------------------------------------------------------------------------
    def tick(self) -> None:
        q = self.queue
        if q is None:
            self.timer.stop()
            return
        try:
            run = q.step()
        except Exception as e:  # noqa: BLE001 - whatever goes wrong with a job, the window stays
            log.exception("job queue step failed")
            self.show_error(str(e))
            run = None
        if run is not None:
            if run.job_id not in self._live:
                self.job_started.emit(run.job_id)
            self._live[run.job_id] = run.progress
            if run.last_ingest.chunks:
                self._dirty = True
            if run.job_id not in self._rows:
                self.refresh()
            self._show_progress(run.job_id, run.progress, run.status, run.message)
            if run.job_id == self._log_job:
                self._show_log(run.job_id)
        now = time.monotonic()
        if self._dirty and now - self._last_reload >= self.reload_interval:
            self._reload_state()
        if q.idle:
            self.timer.stop()
            if self._dirty:
                self._reload_state()

    def _finished(self, run: JobRun) -> None:
        self._live[run.job_id] = run.progress
        if run.last_ingest.chunks or run.ingested.chunks or run.spec.kind == "evaluate":
            self._dirty = True
        if self._dirty:
            self._reload_state()
        self.refresh()
        msg = run.message or run.status
        if run.status == FAILED:
            self.show_error(f"Job {run.job_id} failed: {msg}")
        first = msg.splitlines()[0] if msg else run.status
        self.state.message.emit(f"{run.job_id}: {first}")
        self.job_finished.emit(run.job_id, run.status, msg)

    def _skipped(self, job_id: str, failed: str) -> None:
        """A job of a chain was not run because `failed` did not succeed: the banner keeps
        naming the first failure, and says what did not run."""
        self.refresh()
        text = self.banner.text()
        if self.banner.isVisible() and failed in text:
            head, sep, rest = text.partition("\nNot run: ")
            self.show_error(f"{head}\nNot run: {rest + ', ' if sep else ''}{job_id}")
        self.state.message.emit(f"{job_id}: not run ({failed} did not succeed)")

    def _reload_state(self) -> None:
        self._dirty = False
        self._last_reload = time.monotonic()
        if self.state.project is None:
            return
        try:
            self.state.reload()
        except Exception as e:  # noqa: BLE001 - a view problem must not stop the jobs
            log.exception("reloading after ingesting job results failed")
            self.state.message.emit(f"could not refresh the views: {e}")

    def show_error(self, text: str) -> None:
        self.banner.setText(text)
        self.banner.setToolTip(text)
        self.banner.show()

    # ---- table ---------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Rebuild the list from the project's job history (live progress overlaid)."""
        p = self.state.project
        jobs = p.jobs.all() if p is not None else []
        for j in jobs:
            self._order.setdefault(j["job_id"], len(self._order))
        jobs.sort(key=lambda j: self._order[j["job_id"]])
        selected = self.selected_job_id()
        self.table.setRowCount(0)
        self._rows.clear()
        for j in jobs:
            row = self.table.rowCount()
            self.table.insertRow(row)
            self._rows[j["job_id"]] = row
            what = describe_job(p.folder, j) or j["kind"]  # type: ignore[union-attr]
            self.table.setItem(row, COL_JOB, QTableWidgetItem(j["job_id"]))
            self.table.setItem(row, COL_WHAT, QTableWidgetItem(what))
            for c in (COL_STATE, COL_SPEED, COL_ETA, COL_MESSAGE):
                self.table.setItem(row, c, QTableWidgetItem(""))
            bar = QProgressBar()
            bar.setTextVisible(True)
            self.table.setCellWidget(row, COL_PROGRESS, bar)
            status = self._status_of(j)
            live = self._live.get(j["job_id"])
            if live is not None and status in LIVE_STATES:
                self._show_progress(j["job_id"], live, status, j.get("message") or "")
            else:
                prog = Progress(done=int(j["done"] or 0), total=int(j["total"] or 0), state=status,
                                message=j.get("message") or "")
                self._show_progress(j["job_id"], prog, status, j.get("message") or "")
        if selected:
            self.select_job(selected)
        self._update_buttons()

    def _status_of(self, j: dict[str, Any]) -> str:
        q = self.queue
        if q is not None:
            if q.current is not None and q.current.job_id == j["job_id"]:
                return q.current.status
            if j["job_id"] in q.pending:
                return QUEUED
        assert self.state.project is not None
        return live_status(self.state.project.folder, j)

    def _show_progress(self, job_id: str, p: Progress, status: str, message: str) -> None:
        row = self._rows.get(job_id)
        if row is None:
            return
        bar = self.table.cellWidget(row, COL_PROGRESS)
        if isinstance(bar, QProgressBar):
            if p.total:
                bar.setRange(0, p.total)
                bar.setValue(min(p.done, p.total))
                bar.setFormat(f"{p.done}/{p.total} (%p%)")
            elif status in LIVE_STATES:
                bar.setRange(0, 0)  # busy: loading a model
            else:
                bar.setRange(0, 1)
                bar.setValue(1 if status == DONE else 0)
                bar.setFormat("%p%")
        live = status in LIVE_STATES

        def cell(col: int) -> QTableWidgetItem:
            it = self.table.item(row, col)
            assert it is not None  # a row's cells are made with the row
            return it

        cell(COL_STATE).setText(status)
        cell(COL_SPEED).setText(f"{p.rate:.2f}/s" if live and p.rate > 0 else "")
        cell(COL_ETA).setText(format_seconds(p.eta) if live and p.total and p.done < p.total else "")
        text = message if status in (FAILED, CANCELLED, DONE) and message else (p.message or message)
        item = cell(COL_MESSAGE)
        item.setText(text.splitlines()[0] if text else "")
        item.setToolTip(text)
        if status == FAILED:
            item.setForeground(Qt.GlobalColor.red)
        self._update_buttons()

    def _update_buttons(self) -> None:
        j = self.selected_job_id()
        # a row's cells are made with the row
        status = (self.table.item(self._rows[j], COL_STATE).text()  # type: ignore[union-attr]
                  if j in self._rows else "")
        writable = self.queue is not None
        self.cancel_button.setEnabled(writable and status in (*LIVE_STATES, QUEUED))
        # a finished job has nothing left to resume; a failed, cancelled or interrupted one has
        self.resume_button.setEnabled(writable and bool(j) and status not in (*LIVE_STATES, QUEUED, DONE))

    def _selection_changed(self) -> None:
        self._update_buttons()
        j = self.selected_job_id()
        self._log_job = j
        self._show_log(j)

    def _show_log(self, job_id: str) -> None:
        if not job_id or self.state.project is None:
            self.log_view.setPlainText("")
            return
        paths = JobPaths(self.state.project.folder, job_id)
        text = tail(paths.log, 400)
        if text != self.log_view.toPlainText():
            self.log_view.setPlainText(text)
            sb = self.log_view.verticalScrollBar()
            sb.setValue(sb.maximum())

    # ---- New job… ----------------------------------------------------------------------------------
    def new_job_dialog(self) -> None:
        if self.queue is None:
            self.show_error("Open a project for writing to run jobs.")
            return
        dlg = NewJobDialog(self)
        if dlg.exec() != QDialog.DialogCode.Accepted:
            return
        try:
            ids = self.run_request(dlg.request())
        except WorkstationError as e:
            self.show_error(str(e))
            return
        self.state.message.emit(f"queued {len(ids)} job(s): {', '.join(ids)}")


TEST_ONLY_BACKENDS = frozenset({"fake"})  # registered for the tests; not offered in the window


def scheduler_choices() -> list[tuple[str, str]]:
    """(name, label) of every sampler the diffusers backend knows, from its static table (diffusers
    is not imported); the first entry, "", leaves the choice to the backend."""
    from workstation.generation.schedulers import DEFAULT_SCHEDULER, SCHEDULERS

    return [("", f"backend default ({SCHEDULERS[DEFAULT_SCHEDULER][2]})")] + [
        (name, label) for name, (_cls, _cfg, label) in SCHEDULERS.items()]


class NewJobDialog(QDialog):
    """Pick a suite, a generator (procedural or a model folder), detectors, and run. The last
    values are remembered (`ui.project_dialogs.settings()`, group ``new_job``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New job")
        self.setObjectName("newJobDialog")
        from workstation.jobs.backends import detector_names, generator_names

        # suite
        self.suite_kind = QComboBox()
        self.suite_kind.addItems(["Built-in spatial suite", "Prompt file (.jsonl / .csv)"])
        self.pairs = spin_box(1, 435, 4, tip="object pairs; each gives four prompts (two counterfactual twins)")
        self.suite_file = QLineEdit()
        self.suite_file.setPlaceholderText("prompts.jsonl")
        file_row = browse_row(self.suite_file, self._browse_suite)
        self.seeds = spin_box(1, 1000, 2)
        suite_box = QGroupBox("Prompts")
        sf = QFormLayout(suite_box)
        sf.addRow("Suite", self.suite_kind)
        sf.addRow("Object pairs", self.pairs)
        sf.addRow("Prompt file", file_row)
        sf.addRow("Seeds per prompt", self.seeds)

        # generator
        self.generator = QComboBox()
        names = [PROCEDURAL] + [n for n in generator_names() if n != PROCEDURAL and n not in TEST_ONLY_BACKENDS]
        self.generator.addItems(names)
        self.model = QLineEdit()
        self.model.setPlaceholderText("model folder (diffusers save_pretrained) or cached HF id")
        self.model.setMinimumWidth(260)
        model_row = browse_row(self.model, self._browse_model)
        # shadows QWidget.size()
        self.size: QSpinBox = spin_box(64, 2048, 256, step=64)  # type: ignore[assignment]
        self.steps = spin_box(1, 500, 30)
        self.guidance = double_spin_box(0.0, 30.0, 7.5)
        self.scheduler = QComboBox()
        self.scheduler.setObjectName("newJobScheduler")
        for name, label in scheduler_choices():
            self.scheduler.addItem(f"{label}  ({name})" if name else label, name)
        self.scheduler.setToolTip("the diffusers sampler; 'default' keeps the pipeline's own")
        self.batch = spin_box(1, 256, 4)
        self.run_id = QLineEdit()
        self.run_id.setPlaceholderText("automatic")
        gen_box = QGroupBox("Generator")
        gf = QFormLayout(gen_box)
        gf.addRow("Generator", self.generator)
        gf.addRow("Model", model_row)
        gf.addRow("Image size", self.size)
        gf.addRow("Steps", self.steps)
        gf.addRow("Guidance", self.guidance)
        gf.addRow("Scheduler", self.scheduler)
        gf.addRow("Batch size", self.batch)
        gf.addRow("Run id", self.run_id)

        # detectors
        dets = [n for n in detector_names() if n not in TEST_ONLY_BACKENDS]
        self.detector = QComboBox()
        self.detector.addItem("(no detection)")
        self.detector.addItems(dets)
        if SCENE in dets:
            self.detector.setCurrentText(SCENE)
        self.detector_model = QLineEdit()
        self.detector_model.setPlaceholderText("detector model file or folder (if it needs one)")
        self.secondary = QListWidget()
        for n in dets:
            it = QListWidgetItem(n)
            it.setFlags(it.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            it.setCheckState(Qt.CheckState.Unchecked)
            self.secondary.addItem(it)
        self.secondary.setMaximumHeight(90)
        self.perturb = QCheckBox("Perturbed variants for the stability term")
        self.perturb.setChecked(True)
        self.evaluate = QCheckBox("Evaluate with the checker afterwards")
        self.evaluate.setChecked(True)
        det_box = QGroupBox("Detection")
        df = QFormLayout(det_box)
        df.addRow("Primary", self.detector)
        df.addRow("Model", self.detector_model)
        df.addRow("Secondary", self.secondary)
        df.addRow(self.perturb)
        df.addRow(self.evaluate)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.error = QLabel()
        self.error.setStyleSheet("color: #d9534f;")
        self.error.setWordWrap(True)

        lay = QVBoxLayout(self)
        row = QHBoxLayout()
        left = QVBoxLayout()
        left.addWidget(suite_box)
        left.addWidget(det_box)
        row.addLayout(left)
        row.addWidget(gen_box)
        lay.addLayout(row)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)

        self.suite_kind.currentIndexChanged.connect(self._update)
        self.generator.currentIndexChanged.connect(self._update)
        self._restore()
        self._update()

    # ---- remembered values -------------------------------------------------------------------------
    def _fields(self) -> dict[str, Any]:
        return {"suite_kind": self.suite_kind, "pairs": self.pairs, "suite_file": self.suite_file,
                "seeds": self.seeds, "generator": self.generator, "model": self.model, "size": self.size,
                "steps": self.steps, "guidance": self.guidance, "scheduler": self.scheduler, "batch": self.batch,
                "detector": self.detector, "detector_model": self.detector_model, "perturb": self.perturb,
                "evaluate": self.evaluate}

    def _restore(self) -> None:
        from .project_dialogs import settings

        st = settings()
        st.beginGroup("new_job")
        try:
            for key, w in self._fields().items():
                v = st.value(key)
                if v is None:
                    continue
                try:
                    if isinstance(w, QComboBox):
                        i = w.findData(str(v)) if w is self.scheduler else w.findText(str(v))
                        if i >= 0:
                            w.setCurrentIndex(i)
                    elif isinstance(w, QLineEdit):
                        w.setText(str(v))
                    elif isinstance(w, QCheckBox):
                        w.setChecked(str(v).lower() in ("true", "1"))
                    elif isinstance(w, QDoubleSpinBox):
                        w.setValue(float(v))
                    elif isinstance(w, QSpinBox):
                        w.setValue(int(v))
                except (TypeError, ValueError):
                    continue  # a value from an older version: keep the default
            secondary = st.value("secondary")
            chosen = set(secondary if isinstance(secondary, list) else [secondary] if secondary else [])
            for i in range(self.secondary.count()):
                it = self.secondary.item(i)
                it.setCheckState(Qt.CheckState.Checked if it.text() in chosen else Qt.CheckState.Unchecked)
        finally:
            st.endGroup()

    def remember(self) -> None:
        from .project_dialogs import settings

        st = settings()
        st.beginGroup("new_job")
        for key, w in self._fields().items():
            if isinstance(w, QComboBox):
                st.setValue(key, w.currentData() if w is self.scheduler else w.currentText())
            elif isinstance(w, QLineEdit):
                st.setValue(key, w.text())
            elif isinstance(w, QCheckBox):
                st.setValue(key, w.isChecked())
            else:
                st.setValue(key, w.value())
        st.setValue("secondary", [self.secondary.item(i).text() for i in range(self.secondary.count())
                                  if self.secondary.item(i).checkState() == Qt.CheckState.Checked])
        st.endGroup()
        st.sync()

    def _update(self) -> None:
        builtin = self.suite_kind.currentIndex() == 0
        self.pairs.setEnabled(builtin)
        self.suite_file.setEnabled(not builtin)
        procedural = self.generator.currentText() == PROCEDURAL
        for w in (self.model, self.steps, self.guidance, self.scheduler):
            w.setEnabled(not procedural)
        if not procedural and self.size.value() == 256:
            self.size.setValue(512)

    def _browse_suite(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Prompt file", "", "Prompt files (*.jsonl *.csv)")
        if path:
            self.suite_file.setText(path)

    def _browse_model(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Model folder")
        if path:
            self.model.setText(path)

    def request(self) -> PipelineRequest:
        gen = self.generator.currentText()
        procedural = gen == PROCEDURAL
        params: dict[str, Any] = {"width": self.size.value(), "height": self.size.value()}
        if not procedural:
            params["steps"] = self.steps.value()
            params["guidance"] = self.guidance.value()
            if self.scheduler.currentData():
                params["scheduler"] = str(self.scheduler.currentData())
        det = self.detector.currentText() if self.detector.currentIndex() > 0 else None
        secondary: list[tuple[str, str | None]] = [
            (self.secondary.item(i).text(), None) for i in range(self.secondary.count())
            if self.secondary.item(i).checkState() == Qt.CheckState.Checked
            and self.secondary.item(i).text() != det]
        return PipelineRequest(
            suite="builtin" if self.suite_kind.currentIndex() == 0 else self.suite_file.text().strip(),
            pairs=self.pairs.value(), seeds=self.seeds.value(), generator=gen,
            model=None if procedural else (self.model.text().strip() or None), params=params,
            batch_size=self.batch.value(), run_id=self.run_id.text().strip() or None, detector=det,
            detector_model=self.detector_model.text().strip() or None, secondary=secondary,
            perturbations=default_perturbations() if self.perturb.isChecked() else [],
            evaluate=self.evaluate.isChecked() and det is not None)

    def accept(self) -> None:
        req = self.request()
        if req.suite != "builtin" and not Path(req.suite).is_file():
            self.error.setText(f"Prompt file not found: {req.suite or '(none given)'}")
            return
        if req.generator != PROCEDURAL and not req.model:
            self.error.setText("Choose a model folder for this generator.")
            return
        try:  # every path and option, before any job is stored or started
            check_pipeline_request(req)
        except WorkstationError as e:
            self.error.setText(str(e))
            return
        self.remember()
        super().accept()


JobPanel = JobsPanel  # the name the main window's docstring uses


def install(window: MainWindow, area: str = "bottom") -> JobsPanel:
    """Add a job panel to a main window that has ``state`` and ``add_panel(name, widget, area)``."""
    panel = JobsPanel(window.state)
    dock = window.add_panel("Jobs", panel, area)
    if area in ("top", "bottom") and hasattr(window, "resizeDocks"):
        # room for several jobs and a few lines of the selected one's log
        window.resizeDocks([cast(QDockWidget, dock)], [max(260, panel.minimumSizeHint().height())],
                           Qt.Orientation.Vertical)
    return panel
