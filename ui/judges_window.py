"""Audit → Judges…: every automatic judge of a method's items side by side, in a window of its own
beside the main window, bound to the open project (docs/judges.md).

Per method (the combo): the judges with how many items each judged and decided, then the
agreement table — every two judges that give outcomes, and each against the humans: over the
items both judged, the share both decided (coverage), the accuracy over the items both decided
and Cohen's κ, each with its 95 % interval resampling the prompts. The humans are the method's
kept label selection, shown and chosen on the labels line above the tables.

Nothing is computed when the window opens on the GUI thread: the judges run on a worker thread
(`superqt.create_worker`), one judge after the other with a progress line, and Cancel stops
them at the next judge. The rows are those the `judges` command and the report give
(`workstation.evaluation.judges.judge_rows` / `agreement_rows`), so the numbers are the same.
"""

from __future__ import annotations

from collections.abc import Generator
from functools import partial
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.judges import HUMAN, interval_text
from workstation.types import WorkstationError

from .panel_window import show_in_front
from .widgets.forms import combo_row, push_button, wrapped_label
from .widgets.label_selection import LabelsLine
from .reading_copy import reading_copy
from .widgets.tables import display_only, number_item

JUDGE_HEADERS = ["judge", "what it is", "version", "judged", "decided"]
AGREEMENT_HEADERS = ["judge A", "judge B", "both judged", "both decided", "coverage [95 %]",
                     "accuracy [95 %]", "κ [95 %]"]


def judge_cells(row: dict[str, Any]) -> list[str]:
    n = int(row["items"])
    return [str(row["judge"]), str(row["title"]), str(row["version"] or "—"),
            f"{row['covered']} of {n}", f"{row['decided']} of {n}"]


def agreement_cells(row: dict[str, Any]) -> list[str]:
    return [str(row["judge_a"]), str(row["judge_b"]), str(row["both_judged"]), str(row["both_decided"]),
            interval_text(row, "coverage"), interval_text(row, "accuracy"), interval_text(row, "kappa")]


def compute_tables(project: Any, method: str, n_boot: int | None = None) -> Generator[Any, None, dict[str, Any]]:
    """The worker: yields (done, total, what) before each step, returns the method's tables as
    `workstation.commands.judges.tables` gives them ({"judges": …, "judge_agreement": …})."""
    mine = reading_copy(project)
    try:
        return (yield from _compute(mine, method, n_boot))
    finally:
        mine.con.raw.close()


def _compute(project: Any, method: str, n_boot: int | None) -> Generator[Any, None, dict[str, Any]]:
    from workstation.evaluation.intervals import N_BOOT
    from workstation.evaluation.judges import JudgeRun, agreement_rows, judge_rows
    from workstation.methods import method_judges

    spec = method_judges(project, method)
    if spec is None:
        return {"judges": [], "judge_agreement": []}
    total = len(spec.judges) + 3
    yield 0, total, "reading the items"
    run = JudgeRun(project, spec)
    _ = run.targets
    for i, j in enumerate(spec.judges):
        yield i + 1, total, f"judge {j.name}"
        run.output(j.name)
    yield len(spec.judges) + 1, total, "the humans' labels"
    rows = judge_rows(run)
    yield len(spec.judges) + 2, total, "the agreement table (the prompts resampled)"
    agreement = agreement_rows(run, n_boot=N_BOOT if n_boot is None else n_boot)
    return {"judges": rows, "judge_agreement": agreement}


def _table(headers: list[str], name: str, stretch: int) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(headers)
    display_only(t)
    t.setSelectionMode(QTableWidget.SelectionMode.ContiguousSelection)  # the figures can be copied
    hh = t.horizontalHeader()
    hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    hh.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    t.verticalHeader().setVisible(False)
    return t


def _fill(t: QTableWidget, rows: list[list[str]], left: int) -> None:
    t.setRowCount(len(rows))
    for r, cells in enumerate(rows):
        for c, text in enumerate(cells):
            t.setItem(r, c, number_item(text, align_right=c >= left))


class JudgesWindow(QDialog):
    """The judges of each method and their agreement; one per main window."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window_ = window
        self.setObjectName("judgesWindow")
        self.setWindowTitle("Judges")
        self.setWindowFlag(Qt.WindowType.WindowMaximizeButtonHint, True)
        self.worker: Any = None
        self.tables: dict[str, Any] | None = None  # the shown method's rows, once computed
        self._generation = 0
        self._cancelled = False
        self._spec: Any = None

        row, self.method_combo = combo_row("Method:", self._method_chosen, name="judges_method")
        self.compute_button = push_button("Compute again", self.compute, name="judges_compute",
                                          tip="compute the judges and their agreement again")
        self.cancel_button = push_button("Cancel", self.cancel, name="judges_cancel",
                                         tip="stop at the next judge")
        self.cancel_button.setEnabled(False)
        row.addWidget(self.compute_button)
        row.addWidget(self.cancel_button)

        self.labels_line = LabelsLine(self._resolved, lambda: self.window_.state.project, "",
                                      self._apply_selection, self._current_selection)
        progress_row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setObjectName("judges_progress")
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)  # shown while the judges are computed
        self.status = QLabel("")
        self.status.setObjectName("judges_status")
        progress_row.addWidget(self.progress)
        progress_row.addWidget(self.status, 1)

        self.judges_table = _table(JUDGE_HEADERS, "judges_table", 1)
        self.agreement_table = _table(AGREEMENT_HEADERS, "judge_agreement_table", 1)
        note = wrapped_label(
            "Coverage: the share of the items both judged that both decided (neither abstained). Accuracy and "
            "Cohen's κ: over the items both decided. Each with its 95 % interval resampling the prompts with "
            "all their seeds. An item a judge did not judge is counted as not judged, never guessed. The "
            "humans are the labels chosen on the line above.", name="dim")

        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)
        lay.addLayout(row)
        lay.addWidget(self.labels_line)
        lay.addLayout(progress_row)
        lay.addWidget(QLabel("Judges"))
        lay.addWidget(self.judges_table, 2)
        agree_row = QHBoxLayout()
        agree_row.addWidget(QLabel("Agreement"))
        agree_row.addStretch(1)
        self.review_button = push_button("Review where they disagree ▶", self.review_disagreements,
                                         name="judges_review",
                                         tip="the items the two judges of the chosen row decide differently, "
                                             "as the review queue")
        self.review_button.setEnabled(False)
        agree_row.addWidget(self.review_button)
        lay.addLayout(agree_row)
        lay.addWidget(self.agreement_table, 3)
        self.agreement_table.itemSelectionChanged.connect(self._row_chosen)
        self.agreement_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        lay.addWidget(note)
        self.resize(1100, 640)
        window.state.project_changed.connect(self.follow_project)
        self.follow_project()

    # ---- the review queue over two judges' disagreements ---------------------------------------
    def chosen_pair(self) -> tuple[str, str] | None:
        """The two judges of the agreement row chosen (None: none, or a row against the humans)."""
        t = self.agreement_table
        rows = {ix.row() for ix in t.selectedIndexes()}
        if self.tables is None or not rows:
            return None
        at = rows.pop() if len(rows) == 1 else t.currentRow() if t.currentRow() in rows else -1
        if not 0 <= at < len(self.tables["judge_agreement"]):
            return None  # several rows chosen, none of them the current one
        r = self.tables["judge_agreement"][at]
        if r is None or HUMAN in (r["judge_a"], r["judge_b"]) or not r["both_decided"]:
            return None
        return str(r["judge_a"]), str(r["judge_b"])

    def _views(self) -> Any:
        return self.window_.method_views.get(self.method or "")

    def _row_chosen(self) -> None:
        pair = self.chosen_pair()
        views = self._views()
        from .method_views import ViewsBase

        has_queue = views is not None and type(views).review_disagreements is not ViewsBase.review_disagreements
        self.review_button.setEnabled(pair is not None and has_queue)
        self.review_button.setToolTip(
            "the items the two judges of the chosen row decide differently, as the review queue" if has_queue
            else f"the {self.method} views have no review queue over two judges' disagreements")

    def review_disagreements(self) -> bool:
        """The items the chosen row's two judges decide differently, as the method's review queue."""
        pair = self.chosen_pair()
        views = self._views()
        if pair is None or views is None:
            return False
        if not views.review_disagreements(self.window_, *pair):
            self.status.setText(f"the {self.method} views have no review queue over two judges' disagreements")
            return False
        self.window_.raise_()
        self.window_.activateWindow()
        return True

    # ---- the project and the method ------------------------------------------------------------
    def follow_project(self) -> None:
        """Fill the combo with the methods that have judges in the open project; compute the
        shown one's (on the worker)."""
        from workstation.methods import METHODS, get_method

        from .methods import view_names

        p = self.window_.state.project
        keep = self.method_combo.currentData()
        self.method_combo.blockSignals(True)
        self.method_combo.clear()
        if p is not None:
            for name in view_names():
                if name not in METHODS:
                    continue
                m = get_method(name)
                if getattr(m, "judges", None) is None:
                    continue
                try:
                    if not m.has_data(p):
                        continue
                except WorkstationError:
                    continue
                self.method_combo.addItem(name, name)
        i = self.method_combo.findData(keep)
        self.method_combo.setCurrentIndex(i if i >= 0 else 0 if self.method_combo.count() else -1)
        self.method_combo.blockSignals(False)
        self._method_chosen()

    @property
    def method(self) -> str | None:
        d = self.method_combo.currentData()
        return str(d) if d is not None else None

    def set_method(self, name: str | None) -> None:
        i = self.method_combo.findData(name)
        if i >= 0 and i != self.method_combo.currentIndex():
            self.method_combo.setCurrentIndex(i)

    def _method_chosen(self) -> None:
        from workstation.methods import method_judges

        self._spec = None
        p = self.window_.state.project
        if p is not None and self.method is not None:
            try:
                self._spec = method_judges(p, self.method)
            except WorkstationError as e:
                self.status.setText(f"the judges cannot be listed: {e}")
        self.labels_line.task = self._spec.task if self._spec is not None else ""
        self.labels_line.setVisible(self._spec is not None and self._spec.human is not None)
        self.labels_line.refresh()
        if self.isVisible():
            self.compute()
        else:
            self.tables = None  # computed when the window is shown (`open_judges`)

    # ---- the labels line ------------------------------------------------------------------------
    def _resolved(self) -> Any:
        from workstation.evaluation.selection import resolve_project

        p = self.window_.state.project
        if self._spec is None:
            raise WorkstationError("no method with judges")
        return resolve_project(p, self._spec.task)

    def _current_selection(self) -> Any:
        from workstation.evaluation.selection import default_selection, load_selection

        task = self._spec.task if self._spec is not None else ""
        try:
            return load_selection(self.window_.state.project, task)
        except WorkstationError:
            return default_selection(task)

    def _apply_selection(self, selection: Any) -> None:
        """Keep the selection with the project (the method's figures read the same one) and
        compute the table against the humans again."""
        from workstation.evaluation.selection import save_selection

        p = self.window_.state.project
        if p is None or self._spec is None:
            return
        for views in self.window_.method_views.values():  # a session that keeps the selection it read
            session = getattr(views.controller(self.window_), "parent", lambda: None)()
            setter = getattr(session, "set_label_selection", None)
            if setter is not None and getattr(views, "method", None) == self.method:
                setter(selection)
                break
        else:
            if not p.read_only:
                save_selection(p, self._spec.task, selection)
        self.compute()

    # ---- computing ------------------------------------------------------------------------------
    def compute(self) -> None:
        """Compute the shown method's tables on the worker (a running one is dropped)."""
        from superqt.utils import create_worker

        self.cancel()
        self._generation += 1
        self.tables = None
        _fill(self.judges_table, [], 3)
        _fill(self.agreement_table, [], 2)
        self._row_chosen()
        p = self.window_.state.project
        if p is None or self.method is None:
            self.status.setText("no project open" if p is None else "no method of this project has judges")
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
            return
        self._cancelled = False
        gen = self._generation
        self.status.setText("computing the judges…")
        self.progress.setRange(0, 0)
        self.progress.setVisible(True)
        w = create_worker(compute_tables, p, self.method, _start_thread=False, _ignore_errors=True)
        w.yielded.connect(partial(self._on_progress, gen))
        w.returned.connect(partial(self._on_result, gen))
        w.errored.connect(partial(self._on_error, gen))
        w.finished.connect(partial(self._on_finished, gen, w))
        self.worker = w
        self.compute_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        w.start()

    def cancel(self) -> None:
        if self.worker is not None:
            self._cancelled = True
            self.worker.quit()
            self.worker = None
            self._generation += 1
            self.cancel_button.setEnabled(False)
            self.compute_button.setEnabled(True)
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
            self.progress.setVisible(False)
            self.status.setText("cancelled: Compute again to compute the judges")

    def is_running(self) -> bool:
        return self.worker is not None

    def _on_progress(self, gen: int, value: Any) -> None:
        if gen != self._generation:
            return
        done, total, what = value
        self.progress.setRange(0, int(total))
        self.progress.setValue(int(done))
        self.status.setText(f"computing {done + 1} of {total}: {what}…")

    def _on_result(self, gen: int, result: Any) -> None:
        if gen != self._generation:
            return
        self.tables = result
        _fill(self.judges_table, [judge_cells(r) for r in result["judges"]], 3)
        _fill(self.agreement_table, [agreement_cells(r) for r in result["judge_agreement"]], 2)
        self._row_chosen()
        n = result["judges"][0]["items"] if result["judges"] else 0
        judges = [r for r in result["judges"] if r["judge"] != HUMAN]
        humans = " and the humans" if len(judges) < len(result["judges"]) else ""
        self.status.setText(f"{self.method}: {len(judges)} judge{'s' * (len(judges) != 1)}{humans} over {n} items; "
                            f"{len(result['judge_agreement'])} pairs compared")
        self.progress.setVisible(False)

    def _on_error(self, gen: int, e: Any) -> None:
        if gen == self._generation:
            self.progress.setVisible(False)
            self.status.setText(f"the judges could not be compared: {e}")

    def _on_finished(self, gen: int, worker: Any) -> None:
        if worker is self.worker:
            self.worker = None
        if gen == self._generation:
            self.cancel_button.setEnabled(False)
            self.compute_button.setEnabled(True)
            if self.tables is None and not self.status.text().startswith("the judges could not"):
                self.progress.setRange(0, 1)
                self.progress.setValue(0)

    def closeEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        self.cancel()
        super().closeEvent(event)


def open_judges(window: Any) -> QWidget:
    """Show the window's Judges window (made on first use), on the method of the tab shown."""
    w = getattr(window, "judges_window", None)
    if w is None:
        w = window.judges_window = JudgesWindow(window)
    views = window.current_views()
    w.set_method(getattr(views, "method", None) if views is not None else None)
    if w.tables is None and not w.is_running():
        w.compute()
    return show_in_front(w)
