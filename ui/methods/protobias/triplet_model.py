"""The triplet list: one row per triplet instance, filtered and sorted in numpy.

`TripletFilter` says which rows to show (metric, domain, knob, outcome, margin range);
`TripletTableModel.set_data(data, results)` takes the session's data and results,
`set_filter(f)` and `sort(column, order)` recompute the visible rows (`rows`: indices into the
data) without copying the data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor

ALL = ""
OUTCOMES = ("all", "failed", "correct", "tie", "not scored")
COLUMNS = ("triplet", "run", "domain", "knob", "text T", "M(corr)", "M(adv)", "margin", "outcome")
FAIL_COLOUR = "#D55E00"
OK_COLOUR = "#009E73"


@dataclass(frozen=True)
class TripletFilter:
    metric: str = ALL  # the metric whose scores, margin and outcome are shown ("" = the first)
    domain: str = ALL
    knob: str = ALL
    outcome: str = "all"  # one of OUTCOMES
    margin_min: float = -1.0  # on the rescaled margin M(corr) − M(adv)
    margin_max: float = 1.0
    text: str = ""  # substring of T or of the triplet id (case-insensitive)

    def replace(self, **kw: Any) -> TripletFilter:
        return replace(self, **kw)


def filter_rows(data: Any, results: Any, f: TripletFilter) -> np.ndarray:
    """Indices of the rows ``f`` keeps (in data order)."""
    n = len(data)
    keep = np.ones(n, bool)
    if f.domain:
        keep &= data.domain == f.domain
    if f.knob:
        keep &= data.knob == f.knob
    if f.text:
        q = f.text.lower()
        keep &= np.array([q in str(t).lower() or q in str(i).lower() for t, i in zip(data.text, data.triplet_id)],
                         bool) if n else keep
    if results is not None and results.metrics:
        j = results.metrics.index(f.metric) if f.metric in results.metrics else 0
        valid, failed, tie = results.valid[:, j], results.failed[:, j], results.tie[:, j]
        if f.outcome == "failed":
            keep &= failed
        elif f.outcome == "correct":
            keep &= valid & ~failed
        elif f.outcome == "tie":
            keep &= tie
        elif f.outcome == "not scored":
            keep &= ~valid
        if f.margin_min > -1.0 or f.margin_max < 1.0:
            m = results.margin[:, j]
            keep &= valid & (m >= f.margin_min) & (m <= f.margin_max)
    elif f.outcome not in ("all", "not scored"):
        keep &= False
    return np.flatnonzero(keep)


class TripletTableModel(QAbstractTableModel):
    filtered = Signal(int, int)  # shown, total

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.data_: Any = None
        self.results: Any = None
        self.filter = TripletFilter()
        self.rows = np.zeros(0, np.int64)
        self.sort_column = -1
        self.sort_order = Qt.SortOrder.AscendingOrder

    # ---- data --------------------------------------------------------------------------------
    def set_data(self, data: Any, results: Any) -> None:
        self.data_, self.results = data, results
        self._recompute()

    def set_filter(self, f: TripletFilter) -> None:
        self.filter = f
        self._recompute()

    def metric_index(self) -> int:
        r = self.results
        if r is None or not r.metrics:
            return -1
        return r.metrics.index(self.filter.metric) if self.filter.metric in r.metrics else 0

    def _sort_key(self, col: int, rows: np.ndarray) -> np.ndarray | None:
        d, r, j = self.data_, self.results, self.metric_index()
        name = COLUMNS[col] if 0 <= col < len(COLUMNS) else ""
        if name in ("M(corr)", "M(adv)", "margin", "outcome"):
            if j < 0:
                return None
            if name == "outcome":
                return np.where(r.valid[rows, j], r.failed[rows, j].astype(np.float64) + r.tie[rows, j], -1.0)
            src = {"M(corr)": r.score_corr, "M(adv)": r.score_adv, "margin": r.margin}[name][rows, j]
            return np.where(np.isfinite(src), src, -np.inf)
        col_arr = {"triplet": d.triplet_id, "run": d.run_id, "domain": d.domain, "knob": d.knob,
                   "text T": d.text}.get(name)
        return None if col_arr is None else col_arr[rows].astype(str)

    def _recompute(self) -> None:
        self.beginResetModel()
        if self.data_ is None:
            self.rows = np.zeros(0, np.int64)
        else:
            rows = filter_rows(self.data_, self.results, self.filter)
            key = self._sort_key(self.sort_column, rows) if self.sort_column >= 0 else None
            if key is not None:
                order = np.argsort(key, kind="stable")
                if self.sort_order == Qt.SortOrder.DescendingOrder:
                    order = order[::-1]
                rows = rows[order]
            self.rows = rows
        self.endResetModel()
        self.filtered.emit(len(self.rows), 0 if self.data_ is None else len(self.data_))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self._recompute()

    def data_row(self, view_row: int) -> int:
        return int(self.rows[view_row]) if 0 <= view_row < len(self.rows) else -1

    def view_row_of(self, data_row: int) -> int:
        hits = np.flatnonzero(self.rows == data_row)
        return int(hits[0]) if len(hits) else -1

    # ---- Qt model ------------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def outcome(self, i: int) -> str:
        j = self.metric_index()
        r = self.results
        if j < 0 or not r.valid[i, j]:
            return "not scored"
        if r.tie[i, j]:
            return "FAIL (tie)"
        return "FAIL" if r.failed[i, j] else "ok"

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        i = int(self.rows[index.row()])
        name = COLUMNS[index.column()]
        d, r, j = self.data_, self.results, self.metric_index()
        if role == Qt.ItemDataRole.DisplayRole:
            if name == "triplet":
                return str(d.triplet_id[i])
            if name == "run":
                return str(d.run_id[i]) + (f" #{int(d.seed[i])}" if int(d.seed[i]) else "")
            if name == "domain":
                return str(d.domain[i])
            if name == "knob":
                return str(d.knob[i])
            if name == "text T":
                return str(d.text[i])
            if name == "outcome":
                return self.outcome(i)
            if j < 0:
                return "–"
            v = {"M(corr)": r.score_corr, "M(adv)": r.score_adv, "margin": r.margin}[name][i, j]
            return "–" if not np.isfinite(v) else (f"{v:+.3f}" if name == "margin" else f"{v:.4g}")
        if role == Qt.ItemDataRole.ForegroundRole and name == "outcome":
            o = self.outcome(i)
            return QBrush(QColor(FAIL_COLOUR if o.startswith("FAIL") else OK_COLOUR)) if o != "not scored" else None
        if role == Qt.ItemDataRole.TextAlignmentRole and name in ("M(corr)", "M(adv)", "margin"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and name == "text T":
            return str(d.text[i])
        return None
