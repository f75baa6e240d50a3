"""Several annotators: label files in and out, agreement between annotators, adjudication.

Import and export go through `workstation.methods.spatial.labels_io` (SpatialBench-UC JSON / CSV and our own
CSV / Parquet). Agreement is Cohen's κ and percent agreement per pair of annotators over the
samples both labelled (`workstation.methods.spatial.audit.annotator_agreement`, latest label of each).
The disagreement queue holds the samples whose annotators' latest verdicts differ; whoever
adjudicates labels them under their own name.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.agreement import annotator_agreement
from workstation.methods.spatial.types import VERDICT_CODE
from workstation.types import WorkstationError

from ...state import AppState
from workstation.methods.spatial.store import SpatialStore


def import_label_file(state: AppState, path: str | Path, annotator: str | None = None) -> tuple[int, str]:
    """Append the labels of a file (one transaction); (count, a one-line summary)."""
    from workstation.methods.spatial.labels_io import read_labels

    p = state.project
    if p is None or state.dataset is None:
        raise WorkstationError("open a project first")
    if p.read_only:
        raise WorkstationError("this project is open read-only: labels cannot be imported")
    table = read_labels(path, annotator)
    known = set(state.dataset.sample_index())
    if hasattr(table, "check_samples"):
        table.check_samples(known)
    with p.transaction():
        n = SpatialStore(p).add_labels_bulk(table.rows(), source=f"import:{Path(path).name}")
    state.reload_labels()
    who = ", ".join(sorted(set(table.annotator))) or "none"
    skipped = f"; {table.skipped} row(s) without a verdict skipped" if table.skipped else ""
    return n, f"imported {n} label(s) from {Path(path).name} (annotators: {who}){skipped}"


def export_label_file(state: AppState, path: str | Path, annotator: str | None = None,
                      fmt: str = "auto") -> int:
    """Write the latest label per (sample, annotator) that carries a verdict."""
    from workstation.methods.spatial.labels_io import write_labels

    p = state.project
    if p is None:
        raise WorkstationError("open a project first")
    rows = [r for r in SpatialStore(p).latest_labels(annotator) if r.verdict is not None]
    return write_labels(path, rows, fmt=fmt)


def latest_verdict_events(state: AppState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sample_id, annotator, verdict code) of the latest verdict-bearing label per pair."""
    p = state.project
    if p is None:
        e = np.array([], dtype=object)
        return e, e, np.array([], np.int64)
    rows = [r for r in SpatialStore(p).latest_labels() if r.verdict in VERDICT_CODE]
    return (np.array([r.sample_id for r in rows], dtype=object),
            np.array([r.annotator for r in rows], dtype=object),
            np.array([VERDICT_CODE[r.verdict] for r in rows], np.int64))


def agreement_table(state: AppState) -> list[dict[str, Any]]:
    s, a, v = latest_verdict_events(state)
    if len(s) == 0:
        return []
    return annotator_agreement(s, a, v)


def disagreement_rows(state: AppState) -> list[int]:
    """Dataset rows of samples whose annotators' latest verdicts differ (project order)."""
    if state.dataset is None:
        return []
    s, a, v = latest_verdict_events(state)
    seen: dict[str, set[int]] = {}
    for sid, code in zip(s.tolist(), v.tolist()):
        seen.setdefault(sid, set()).add(code)
    idx = state.dataset.sample_index()
    return sorted(idx[sid] for sid, codes in seen.items() if len(codes) > 1 and sid in idx)


def _fmt(x: float, pct: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x * 100:.1f}%" if pct else f"{x:.3f}"


class AgreementDialog(QDialog):
    """κ and percent agreement per pair of annotators; a button queues the disagreements."""

    adjudicate = Signal(list)  # rows to adjudicate

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setWindowTitle("Agreement between annotators")
        self.setObjectName("agreementDialog")
        lay = QVBoxLayout(self)
        self.summary = QLabel("")
        self.summary.setObjectName("agreementSummary")
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        self.table = QTableWidget(0, 5, self)
        self.table.setObjectName("agreementTable")
        self.table.setHorizontalHeaderLabels(["Annotator", "Annotator", "Both labelled",
                                              "Agreement", "Cohen's κ"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        lay.addWidget(self.table, 1)
        self.queue_button = QPushButton("Adjudicate disagreements ▶")
        self.queue_button.setObjectName("adjudicateButton")
        self.queue_button.clicked.connect(self._adjudicate)
        lay.addWidget(self.queue_button)
        bb = QDialogButtonBox(QDialogButtonBox.Close, self)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
        self.refresh()
        self.resize(640, 320)

    def refresh(self) -> None:
        rows = agreement_table(self.state)
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            vals = [r["annotator_a"], r["annotator_b"], str(r["n"]), _fmt(r["percent_agreement"], True),
                    _fmt(r["kappa"])]
            for j, text in enumerate(vals):
                it = QTableWidgetItem(text)
                if j >= 2:
                    it.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(i, j, it)
        self.disagreements = disagreement_rows(self.state)
        names = SpatialStore(self.state.project).annotators() if self.state.project is not None else []
        if len(names) < 2:
            self.summary.setText(f"{len(names)} annotator(s) in this project: agreement needs two. "
                                 "Import another annotator's label file (File → Import labels…).")
        else:
            self.summary.setText(f"{len(names)} annotators: {', '.join(names)}. "
                                 f"{len(self.disagreements)} sample(s) have disagreeing labels.")
        self.queue_button.setEnabled(bool(self.disagreements))
        self.queue_button.setText(f"Adjudicate {len(self.disagreements)} disagreement(s) ▶")

    def _adjudicate(self) -> None:
        self.adjudicate.emit(list(self.disagreements))
        self.accept()
