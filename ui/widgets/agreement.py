"""Agreement between annotators on one label task: κ and percent agreement per pair of
annotators over the labels of the task's label selection (its annotators, audit sets and
re-checks, said in one line), and a button that queues the targets whose labels differ
(adjudication)."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.audit_sets import task_agreement
from workstation.evaluation.base import LabelScheme

from .tables import number_item


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x * 100:.1f}%" if pct else f"{x:.3f}"


class AgreementDialog(QDialog):
    """κ and percent agreement per pair of annotators; a button queues the disagreements."""

    adjudicate = Signal(list)  # target ids to adjudicate

    def __init__(self, project: Any, scheme: LabelScheme, noun: str = "item", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project, self.scheme, self.noun = project, scheme, noun
        self.setWindowTitle(f"Agreement between annotators — {scheme.title or scheme.task}")
        self.setObjectName("agreementDialog")
        lay = QVBoxLayout(self)
        self.summary = QLabel("")
        self.summary.setObjectName("agreementSummary")
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        kappa = "weighted κ" if scheme.ordinal else "Cohen's κ"
        self.table = QTableWidget(0, 5, self)
        self.table.setObjectName("agreementTable")
        self.table.setHorizontalHeaderLabels(["Annotator", "Annotator", "Both labelled", "Agreement", kappa])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        lay.addWidget(self.table, 1)
        self.queue_button = QPushButton("Review disagreements ▶")
        self.queue_button.setObjectName("adjudicateButton")
        self.queue_button.clicked.connect(self._adjudicate)
        lay.addWidget(self.queue_button)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
        self.disagreements: list[str] = []
        self.refresh()
        self.resize(640, 320)

    def refresh(self) -> None:
        from workstation.evaluation.selection import agreement_labels_project, set_names
        from workstation.types import WorkstationError

        labels, line = None, ""
        if self.project is not None:
            try:
                labels = agreement_labels_project(self.project, self.scheme.task)
                line = labels.describe(set_names(self.project, self.scheme.task))
            except WorkstationError as e:  # a kept selection that cannot be read: every label, said so
                from workstation.evaluation.selection import LabelSelection, agreement_labels

                labels = agreement_labels(self.project.labels.table(self.scheme.task), LabelSelection())
                line = f"{e} — every label counts"
        self.labels_text = line
        rows, self.disagreements = task_agreement(self.project, self.scheme, labels)
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            vals = [r["annotator_a"], r["annotator_b"], str(r["n"]), _fmt(r["percent_agreement"], True),
                    _fmt(r["kappa"]) + ("" if r["n"] >= 10 else f" (n={r['n']})")]
            for j, text in enumerate(vals):
                self.table.setItem(i, j, number_item(text, align_right=j >= 2))
        names = self.project.labels.annotators(self.scheme.task) if self.project is not None else []
        if len(names) < 2:
            self.summary.setText(f"{len(names)} annotator(s) labelled this task: agreement needs two. "
                                 "Import another annotator's labels, or label under another name (Audit → Annotator…).")
        else:
            from workstation.evaluation.audit_sets import flag_text, flagged_labels

            flag = flag_text(flagged_labels(self.project, self.scheme.task))
            self.summary.setText(f"{len(names)} annotators: {', '.join(names)}. "
                                 f"{len(self.disagreements)} {self.noun}(s) have disagreeing labels."
                                 + (f" {flag[0].upper()}{flag[1:]}." if flag else "")
                                 + (f"\n{line} (the method's label selection: its annotators, audit sets "
                                    "and re-checks; no consensus rule)" if line else ""))
        self.queue_button.setEnabled(bool(self.disagreements))
        self.queue_button.setText(f"Adjudicate {len(self.disagreements)} disagreement(s) ▶")

    def _adjudicate(self) -> None:
        self.adjudicate.emit(list(self.disagreements))
        self.accept()
