"""The rater monitor panel: per label task, the agreement among all its raters (Krippendorff's α,
Fleiss' κ, Gwet's AC1 / AC2 with their intervals over the prompts) and one row per rater (items,
median seconds per item, the speeder mark, agreement with peers, the automatic judge and gold,
drift, qualification) — the figures of `main.py raters` (`workstation.commands.raters`)."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from workstation.commands.raters import (
    RATER_COLUMNS,
    agreement_rows,
    monitor_tasks,
    overlap_text,
    rater_rows,
    task_monitor,
)
from workstation.types import WorkstationError

from .tables import number_item

SPEEDER_COLOR = QColor("#b3261e")


class RaterMonitorPanel(QWidget):
    """A task chooser, the task's summary line, its agreement table and its rater table."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("raterMonitor")
        self.project: Any = None
        self.n_boot: int | None = None  # the command's default
        self.monitor: Any = None  # the shown task's `TaskMonitor`
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("Label task:"))
        self.task_combo = QComboBox(self)
        self.task_combo.setObjectName("raterTask")
        self.task_combo.currentIndexChanged.connect(lambda _i: self.refresh())
        top.addWidget(self.task_combo, 1)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        top.addWidget(self.refresh_button)
        lay.addLayout(top)
        self.summary = QLabel("")
        self.summary.setObjectName("raterSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.summary)
        lay.addWidget(QLabel("<b>Agreement among the raters</b> (95 % intervals over the prompts)"))
        self.agreement = QTableWidget(0, 4, self)
        self.agreement.setObjectName("raterAgreement")
        self.agreement.setHorizontalHeaderLabels(["Statistic", "Value [95 %]", "Ratings", "Units"])
        self._table_setup(self.agreement)
        self.agreement.horizontalHeader().setStretchLastSection(False)
        lay.addWidget(self.agreement, 0)
        lay.addWidget(QLabel("<b>Raters</b>"))
        self.raters = QTableWidget(0, len(RATER_COLUMNS), self)
        self.raters.setObjectName("raterTable")
        self.raters.setHorizontalHeaderLabels([h for _k, h in RATER_COLUMNS])
        self._table_setup(self.raters)
        lay.addWidget(self.raters, 3)
        self.note = QLabel("")
        self.note.setObjectName("raterNote")
        self.note.setWordWrap(True)
        lay.addWidget(self.note)

    @staticmethod
    def _table_setup(t: QTableWidget) -> None:
        t.verticalHeader().hide()
        t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        t.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        t.horizontalHeader().setStretchLastSection(True)

    def set_project(self, project: Any) -> None:
        self.project = project
        current = self.task_combo.currentData()
        self.task_combo.blockSignals(True)
        self.task_combo.clear()
        tasks = monitor_tasks(project) if project is not None else []
        for t in tasks:
            self.task_combo.addItem(t, t)
        i = self.task_combo.findData(current)
        self.task_combo.setCurrentIndex(i if i >= 0 else 0)
        self.task_combo.blockSignals(False)
        self.refresh()

    def select_task(self, task: str) -> None:
        i = self.task_combo.findData(task)
        if i >= 0:
            self.task_combo.setCurrentIndex(i)

    def refresh(self) -> None:
        task = self.task_combo.currentData()
        self.monitor = None
        self.agreement.setRowCount(0)
        self.raters.setRowCount(0)
        if self.project is None:
            self.summary.setText("No project open.")
            return
        if task is None:
            self.summary.setText("No labels in this project yet: the monitor needs a label task with labels.")
            self.note.setText("")
            return
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            tm = task_monitor(self.project, str(task), n_boot=self.n_boot)
        except WorkstationError as e:
            self.summary.setText(f"{task}: {e}")
            return
        finally:
            QApplication.restoreOverrideCursor()
        self.monitor = tm
        mon = tm.monitor
        self.summary.setText(f"<b>{task}</b>: {len(mon.rows)} rater{'s' if len(mon.rows) != 1 else ''}, "
                             f"{mon.items} items, {mon.rated_twice} rated by two or more ({overlap_text(tm)}).<br>"
                             f"{html.escape(tm.line[:1].upper() + tm.line[1:])}.<br>"
                             f"{html.escape(tm.where[:1].upper() + tm.where[1:])}.")
        agree = agreement_rows(tm)
        self.agreement.setRowCount(len(agree))
        for i, r in enumerate(agree):
            for j, key in enumerate(("statistic", "value", "n", "units")):
                self.agreement.setItem(i, j, number_item(r[key], align_right=j > 0))
        self._fit_height(self.agreement)
        rows = rater_rows(tm)
        self.raters.setRowCount(len(rows))
        for i, r in enumerate(rows):
            for j, (key, _h) in enumerate(RATER_COLUMNS):
                it = number_item(r[key], align_right=key not in ("rater", "speed", "qualification", "drift"))
                if r["speed"] and key in ("rater", "speed"):
                    it.setForeground(SPEEDER_COLOR)
                if key == "qualification" and r[key].startswith("left out"):
                    it.setForeground(SPEEDER_COLOR)
                self.raters.setItem(i, j, it)
        notes = [f"Speeder: at least 5 timed gaps and a median below {mon.speeder_fraction:.2f} of the other "
                 f"raters' median seconds per item (a pause over {mon.session_gap:g} s ends a session). Drift: "
                 "agreement with peers on the first third of a rater's labels → on the last third."]
        if tm.protocol.gold is None:
            notes.append("Gold and qualification: not recorded by this workstation (—).")
        self.note.setText(" ".join(notes))

    @staticmethod
    def _fit_height(t: QTableWidget) -> None:
        """The table as high as its rows (the agreement's few statistics leave no empty band)."""
        t.resizeRowsToContents()
        h = t.horizontalHeader().height() + sum(t.rowHeight(i) for i in range(t.rowCount())) + 2 * t.frameWidth()
        t.setFixedHeight(max(h, t.horizontalHeader().height() + 2 * t.frameWidth() + 8))

    def cell(self, table: QTableWidget, row: int, heading: str) -> str:
        """The text under ``heading`` in ``row`` of one of the panel's tables."""
        for j in range(table.columnCount()):
            h = table.horizontalHeaderItem(j)
            if h is not None and h.text() == heading:
                it = table.item(row, j)
                return it.text() if it is not None else ""
        raise KeyError(heading)
