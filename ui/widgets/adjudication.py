"""Audit → Adjudicate…: the items open for adjudication, and the adjudicator's final label.

Per label task, the items whose raters' standing labels differ, or differ from the gold answer
(`workstation.evaluation.raters.adjudication_queue`): each with the raters' labels without their
names (how many gave each value), why it is open, and the gold answer where there is one. The
item chosen is shown by the method's own judging page (its controller goes to it); the final
label is recorded here — the method's keys or its buttons, always with a note — through
`record_adjudication`, and the list moves on to the next item. While this window drives a
judging page, that page records nothing itself (its keys would add the adjudicator's label as a
rater's), and it hides the annotators' names (`set_page_blind`); both are given back when the
window closes, or when the page gets another queue (a blind audit opened then closes the window).
Only an adjudicator of the project gets this window (`ui.menus.open_adjudication`).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from workstation.types import WorkstationError
from workstation.evaluation.raters import AdjudicationItem, adjudication_queue, record_adjudication

COLUMNS = ("item", "raters' labels", "why", "gold")


def counts_text(labels: tuple[str, ...]) -> str:
    """The raters' labels as how many gave each value ("FAIL ×2 · PASS ×1"), no names."""
    return " · ".join(f"{v} ×{n}" for v, n in sorted(Counter(labels).items(), key=lambda x: (-x[1], x[0])))


class AdjudicationWindow(QWidget):
    """One per main window (`open_adjudication_window`)."""

    def __init__(self, window: Any, tasks: list[tuple[str, Any, Any]],
                 hides: Callable[[Any], bool] = lambda _c: False) -> None:
        """``tasks``: (task, scheme, views) of the label tasks the window can adjudicate;
        ``hides(controller)``: its queue is an audit that hides something (`ui.blind_routes.hides`)."""
        super().__init__(window, Qt.WindowType.Window)
        self.hides = hides
        self.setObjectName("adjudicationWindow")
        self.window_ = window
        self.tasks = tasks
        self.items: list[AdjudicationItem] = []
        self._driven: tuple[Any, bool] | None = None  # (controller, its page-blind before)
        self._driving = False  # this window is changing the page's policy (not a new queue)
        for c in {id(v.controller(window)): v.controller(window) for _t, _s, v in tasks}.values():
            if c is not None:
                c.queue_changed.connect(self._queue_changed)
        self.resize(960, 520)
        lay = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(QLabel("Task:"))
        self.task_box = QComboBox()
        self.task_box.setObjectName("adjudicationTask")
        for task, _s, _v in tasks:
            self.task_box.addItem(task)
        top.addWidget(self.task_box)
        self.count = QLabel("")
        self.count.setObjectName("adjudicationCount")
        top.addWidget(self.count, 1)
        lay.addLayout(top)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("adjudicationTable")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        h = self.table.horizontalHeader()
        h.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        h.setMinimumSectionSize(48)
        for k in range(1, len(COLUMNS)):
            h.setSectionResizeMode(k, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setWordWrap(False)
        lay.addWidget(self.table, 1)
        self.shown = QLabel("")
        self.shown.setObjectName("adjudicationShown")
        self.shown.setWordWrap(True)
        self.shown.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.shown)
        self.note = QLineEdit()
        self.note.setObjectName("adjudicationNote")
        self.note.setPlaceholderText("note (required): why this is the final label")
        lay.addWidget(self.note)
        self.buttons_row = QHBoxLayout()
        lay.addLayout(self.buttons_row)
        self.status = QLabel("")
        self.status.setObjectName("adjudicationStatus")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.value_buttons: list[QPushButton] = []
        self._shortcuts: list[QShortcut] = []
        self.task_box.currentIndexChanged.connect(self._task_changed)
        self.table.itemSelectionChanged.connect(self._row_changed)
        self._task_changed()

    # ---- the task and its queue -----------------------------------------------------------------
    @property
    def scheme(self) -> Any:
        return self.tasks[self.task_box.currentIndex()][1]

    @property
    def views(self) -> Any:
        return self.tasks[self.task_box.currentIndex()][2]

    def controller(self) -> Any:
        return self.views.controller(self.window_)

    def _task_changed(self, *_: Any) -> None:
        for b in self.value_buttons:
            self.buttons_row.removeWidget(b)
            b.hide()  # gone at once: deleteLater waits for the event loop
            b.deleteLater()
        for s in self._shortcuts:
            s.setEnabled(False)
            s.deleteLater()
        self.value_buttons, self._shortcuts = [], []
        s = self.scheme
        for value, key in zip(s.values, s.keys):
            b = QPushButton(f"{value}  [{key}]")
            b.setObjectName(f"adjudicate_{value}")
            b.clicked.connect(lambda _=False, v=value: self.record(v))
            self.buttons_row.addWidget(b)
            self.value_buttons.append(b)
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)  # typed into the note box, a letter is text
            sc.activated.connect(lambda v=value: self.record(v))
            self._shortcuts.append(sc)
        self.refresh()

    def refresh(self, keep_row: int = 0) -> None:
        """Read the task's queue again; select the row ``keep_row`` (the next one after a record)."""
        p = self.window_.state.project
        self.items = adjudication_queue(p, self.scheme.task) if p is not None else []
        c = self.controller()
        describe = getattr(c, "describe", None)
        self.table.blockSignals(True)
        self.table.setRowCount(len(self.items))
        for r, it in enumerate(self.items):
            index = c.index_of(it.target_id) if c is not None else -1
            name = describe(index) if callable(describe) and index >= 0 else it.target_id
            cells = (name, counts_text(it.labels), it.reason, it.gold or "")
            for k, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                cell.setToolTip(it.target_id if k == 0 else text)
                self.table.setItem(r, k, cell)
        self.table.blockSignals(False)
        n = len(self.items)
        self.count.setText(f"{n} item{'s' if n != 1 else ''} open for adjudication"
                           if n else "nothing open for adjudication in this task")
        for b in self.value_buttons:
            b.setEnabled(bool(n))
        if n:
            self.table.selectRow(min(max(keep_row, 0), n - 1))
            self._row_changed()
        else:
            self.shown.setText("")

    def current_item(self) -> AdjudicationItem | None:
        rows = self.table.selectionModel().selectedRows()
        r = rows[0].row() if rows else -1
        return self.items[r] if 0 <= r < len(self.items) else None

    # ---- showing the item on the method's page -----------------------------------------------
    def _drive(self, c: Any) -> None:
        """The judging page shows what this window chooses: it records nothing itself and hides
        the annotators' names while it does."""
        if self._driven is not None and self._driven[0] is not c:
            self._release()
        if self._driven is None:
            self._driven = (c, bool(c.core.page_blind))
            c.refuse_writes = "adjudicating: the final label is recorded in the Adjudication window"
            self._set_page_blind(c, True)

    def _release(self) -> None:
        if self._driven is None:
            return
        c, blind = self._driven
        self._driven = None
        c.refuse_writes = ""
        self._set_page_blind(c, blind)

    def _set_page_blind(self, c: Any, blind: bool) -> None:
        """The page's blindness set by this window (the queue change it signals is its own)."""
        self._driving = True
        try:
            c.set_page_blind(blind)
        finally:
            self._driving = False

    def _queue_changed(self) -> None:
        """Another queue on a page (an audit set opened, left, another rater's part): the page
        is the auditor's again; a blind audit closes this window (it shows what the audit hides)."""
        if self._driving:
            return
        self._release()
        if any(self.hides(v.controller(self.window_)) for _t, _s, v in self.tasks):
            self.close()

    def _row_changed(self) -> None:
        it = self.current_item()
        c = self.controller()
        if it is None or c is None:
            return
        index = c.index_of(it.target_id)
        if index < 0:
            self.shown.setText(f"<i>{html.escape(it.target_id)}</i> is not among this page's items")
            return
        self._drive(c)
        c.go_target(index)
        self.views.show_judging(self.window_)
        gold = f" · gold: <b>{html.escape(it.gold)}</b>" if it.gold else ""
        self.shown.setText(f"Shown on the judging page: <b>{html.escape(c.describe(index))}</b> · "
                           f"raters: {html.escape(counts_text(it.labels))} · {html.escape(it.reason)}{gold}")

    # ---- recording ---------------------------------------------------------------------------------
    def record(self, value: str) -> bool:
        """The adjudicator's final label of the item selected, with the note typed."""
        it = self.current_item()
        st = self.window_.state
        if it is None or st.project is None:
            return False
        note = self.note.text().strip()
        if not note:
            self.status.setText("a note is needed: why this is the final label")
            self.note.setFocus()
            return False
        row = self.table.currentRow()
        try:
            record_adjudication(st.project, self.scheme, it.target_id, value, note, st.annotator or "")
        except WorkstationError as e:
            self.status.setText(str(e))
            return False
        self.status.setText(f"final label {value} recorded for {it.target_id}")
        self.note.clear()
        c = self.controller()
        if c is not None:
            index = c.index_of(it.target_id)
            c.reload()
            if index >= 0:
                c.written.emit(index)  # the method's figures read the labels again
            c.changed.emit()
        self.refresh(keep_row=row)
        self.table.setFocus()
        return True

    def closeEvent(self, e: Any) -> None:  # noqa: N802 - Qt's name
        self._release()
        super().closeEvent(e)
