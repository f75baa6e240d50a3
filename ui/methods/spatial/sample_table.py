"""The sample table: a paged query behind a QAbstractTableModel, and its filter bar.

Rows are never all turned into Qt items: the model asks the core's `SampleQuery`
(`workstation.methods.spatial.browse`) for a page when the view scrolls near the end
(`canFetchMore` / `fetchMore`), so 100,000 samples cost one count and one page. What the table
may show and select by — the checker's outcome, the annotators' labels — is the session's
policy (`SpatialSession.view_visibility`): during a blind audit those columns, their filters
and their sorts are gone, and the filter in force is `FilterSpec.allowed` of the one edited.

After the fixed columns comes one column per judge of the samples (`browse_judges`: computed once
per loaded dataset, off the GUI thread, when the window is idle): its outcome and score, read
from the judge's arrays by the row's dataset row. They are automatic outcomes, so the policy that
hides the checker hides them too — during a blind audit the model has no judge column at all.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced

from workstation.methods.spatial import browse as query_module
from workstation.methods.spatial.browse import (  # noqa: F401 - the table's names for them
    CHECKER_COLUMNS,
    COLUMNS,
    HUMAN_COLUMNS,
    LIVE_JUDGE,
    LIVE_JUDGE_SHORT,
    R_AGREE,
    R_CONF,
    R_HUMAN,
    R_LABELS,
    R_NOTES,
    R_PATH,
    R_REASON,
    R_RUN,
    R_REL,
    R_ROW,
    R_SEED,
    R_SID,
    R_TEXT,
    R_VERDICT,
    FilterSpec,
    RowOrder,
    SampleQuery,
    sample_columns,
)
from workstation.methods.spatial.types import REASONS, RELATIONS, VERDICTS

from ... import theme
from ...widgets.forms import check_box, push_button
from .browse_judges import BrowseJudges
from .session import RowQueue, SpatialSession

ROW_ROLE = int(Qt.ItemDataRole.UserRole) + 1  # dataset row (int)
VERDICT_ROLE = int(Qt.ItemDataRole.UserRole) + 2  # checker verdict code (int, -1 none or hidden)
PATH_ROLE = int(Qt.ItemDataRole.UserRole) + 3  # image path relative to the project
HUMAN_ROLE = int(Qt.ItemDataRole.UserRole) + 4  # human verdict code (int, -1 none or hidden)
SEED_ROLE = int(Qt.ItemDataRole.UserRole) + 5
RELATION_ROLE = int(Qt.ItemDataRole.UserRole) + 6
_DISPLAY, _FOREGROUND, _FONT, _ALIGN, _TOOLTIP = (
    int(Qt.ItemDataRole.DisplayRole), int(Qt.ItemDataRole.ForegroundRole), int(Qt.ItemDataRole.FontRole),
    int(Qt.ItemDataRole.TextAlignmentRole), int(Qt.ItemDataRole.ToolTipRole))
SORTABLE = query_module.SORTABLE


def hidden_columns(outcome: bool, human: bool) -> set[int]:
    """The table's columns a policy hides."""
    return ({*([] if outcome else CHECKER_COLUMNS), *([] if human else HUMAN_COLUMNS)})


class SampleTableModel(QAbstractTableModel):
    """Samples matching a FilterSpec, sorted, fetched a page at a time (from `SampleQuery`)."""

    refreshed = Signal()  # after a filter / sort / verdict refresh (the count is new)

    PAGE = 256
    KEEP_LOADED_MAX = 4096  # on a verdict refresh, reload at most this many rows in place

    def __init__(self, state: SpatialSession, parent: Any = None) -> None:
        super().__init__(parent)
        self.state = state
        self.q = SampleQuery(state)
        self.edited = FilterSpec()  # the filter as the filter bar has it (the policy may narrow it)
        self.sort_order = Qt.SortOrder.AscendingOrder
        self.rows: list[tuple[Any, ...]] = []
        self._disp: dict[int, tuple[str, ...]] = {}
        self._brushes: dict[int, QBrush] = {}
        self._bold = QFont()
        self._bold.setBold(True)
        self.total = 0
        self.all_count = 0
        self.last_query_ms = 0.0
        self._vis = state.view_visibility()
        self.judges = BrowseJudges(state, self)
        self.judges.changed.connect(self._on_judges)
        state.project_changed.connect(self._on_dataset)
        state.dataset_changed.connect(self._on_dataset)
        state.verdicts_changed.connect(self.refresh_live)
        state.labels_changed.connect(self._on_labels)
        state.policy_changed.connect(self._on_policy)
        self._on_dataset()

    # ---- the query's state ---------------------------------------------------------------------
    @property
    def spec(self) -> FilterSpec:
        return self.q.spec

    @spec.setter
    def spec(self, spec: FilterSpec) -> None:
        self.edited = spec
        self.q.set_filter(spec.allowed(self._vis.outcome, self._vis.human))

    @property
    def sort_column(self) -> int:
        return self.q.sort_column

    @sort_column.setter
    def sort_column(self, column: int) -> None:
        self.q.set_sort(column, self.sort_order == Qt.SortOrder.DescendingOrder)

    @property
    def labels_version(self) -> int:
        return self.q.labels_version

    def _numpy_order(self) -> RowOrder | None:
        self.q.descending = self.sort_order == Qt.SortOrder.DescendingOrder
        return self.q.numpy_order()

    def _on_dataset(self) -> None:
        ds = self.state.dataset
        if ds is not None and self.state.project is not None and ds is self.q.bound_dataset and self.q.registered:
            return  # the same dataset (several signals announce one load)
        if ds is None or ds is not self.q.bound_dataset:
            # another project: its own filter and sort (the bar resets its fields too)
            self.q.set_sort(-1, False)
            self.sort_order = Qt.SortOrder.AscendingOrder
            self.edited = FilterSpec()
        self._policy_to_query()
        self.reload()

    def hidden(self) -> set[int]:
        """Columns the session's policy hides now."""
        return hidden_columns(self._vis.outcome, self._vis.human)

    # ---- the judges' columns -------------------------------------------------------------------
    def judge_list(self) -> tuple[Any, ...]:
        """The judge columns shown after COLUMNS (none where the policy hides outcomes)."""
        return self.q.judges if self._vis.outcome else ()

    def _on_judges(self) -> None:
        """The judges' columns came in (or went, or started computing): the table has them from
        now on. A new dataset is `_on_dataset`'s to load."""
        st = self.state
        if st.dataset is None or st.dataset is not self.q.bound_dataset or not self.q.registered:
            return
        if self.q.judges_of(st.dataset) is self.q.live_key[2]:
            self.refreshed.emit()  # the same columns (the count line says what is being computed)
            return
        self.reload()

    def _policy_to_query(self) -> None:
        self._vis = self.state.view_visibility()
        self.q.set_filter(self.edited.allowed(self._vis.outcome, self._vis.human))
        if self.q.sort_column in self.hidden() or (not self._vis.outcome and self.q.sort_column >= len(COLUMNS)):
            self.q.set_sort(-1, False)

    def _on_policy(self) -> None:
        """A new queue (an audit set, or back to browsing): the policy decides again what the
        table shows, filters and sorts by."""
        before = (self._vis, self.q.spec.to_dict(), self.q.sort_column)
        self._policy_to_query()
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, self.columnCount() - 1)
        if (self._vis, self.q.spec.to_dict(), self.q.sort_column) != before:
            self.reload()

    def _query(self, limit: int, offset: int) -> list[tuple[Any, ...]]:
        self.q.descending = self.sort_order == Qt.SortOrder.DescendingOrder
        return self.q.page(limit, offset)

    def all_rows(self) -> RowQueue:
        """Dataset rows of every sample matching the filter, in table order (the review queue)."""
        self.q.descending = self.sort_order == Qt.SortOrder.DescendingOrder
        return RowQueue(self.q.all_rows())

    def reload(self) -> None:
        """Run the query again from the first page (filter or sort changed)."""
        t0 = time.perf_counter()
        self.beginResetModel()
        self.rows = []
        self._disp = {}
        self.total = 0
        self.q.reset_order()  # the filter or the sort changed
        self.q.descending = self.sort_order == Qt.SortOrder.DescendingOrder
        if self.state.dataset is None or self.state.dataset is not self.q.bound_dataset:
            self.q.forget()
        if self.q.register():
            self.total = self.q.count()
            assert self.state.dataset is not None  # bound above
            self.all_count = self.state.dataset.n
            self.rows = self._query(self.PAGE, 0)
        else:
            self.all_count = 0
        self.endResetModel()
        self.last_query_ms = (time.perf_counter() - t0) * 1000
        self.refreshed.emit()

    def refresh_live(self) -> None:
        """Verdicts or labels changed: same filter, new values; loaded rows are reloaded in place."""
        st = self.state
        q = self.q
        if not q.registered or st.dataset is None or st.dataset is not q.bound_dataset:
            self.reload()
            return
        if st.verdicts is q.live_key[0] and q.labels_version == q.live_key[1]:
            return
        t0 = time.perf_counter()
        if q.labels_version == q.live_key[1] and not self.verdict_dependent() and st.verdicts is not None:
            # only verdict values changed and neither the filter nor the sort looks at them: the
            # rows and their order stay; the live table is re-registered (for the next pages) and
            # the loaded rows take the new values from the arrays, without a query
            q.register()
            self._patch_loaded_rows()
            self.last_query_ms = (time.perf_counter() - t0) * 1000
            self.refreshed.emit()
            return
        q.register()
        total = q.count()
        n = len(self.rows)
        if total == self.total and n <= self.KEEP_LOADED_MAX:
            rows = self._query(max(n, 1), 0) if n else []
            if len(rows) == n:
                self.rows = rows
                self._disp = {}
                if n:
                    self.dataChanged.emit(self.index(0, 0), self.index(n - 1, len(COLUMNS) - 1))
                self.last_query_ms = (time.perf_counter() - t0) * 1000
                self.refreshed.emit()
                return
        keep = min(max(n, self.PAGE), self.KEEP_LOADED_MAX)
        self.beginResetModel()
        self.total = total
        self.rows = self._query(keep, 0)
        self._disp = {}
        self.endResetModel()
        self.last_query_ms = (time.perf_counter() - t0) * 1000
        self.refreshed.emit()

    def verdict_dependent(self) -> bool:
        """Whether the filter or the sort depends on the checker's verdicts."""
        f = self.q.spec
        return bool(f.verdicts or f.reasons or f.conf_min > 0.0 or f.conf_max < 1.0 or f.checker_vs_human
                    or LIVE_JUDGE in f.judges_disagree or self.q.sort_column in (5, 6, 7, 9))

    def _patch_loaded_rows(self) -> None:
        n = len(self.rows)
        if n == 0:
            return
        v = self.state.verdicts
        idx = np.fromiter((r[R_ROW] for r in self.rows), np.int64, n)
        verdict = v.verdict[idx].tolist()
        reason = v.reason[idx].tolist()
        conf = v.conf[idx].tolist()
        out = []
        for r, vd, rs, cf in zip(self.rows, verdict, reason, conf):
            h = r[R_HUMAN]
            agree = r[R_AGREE] if r[R_AGREE] == "annotators differ" else (
                "" if h < 0 else "agrees" if h == vd else "differs")
            out.append((*r[:R_VERDICT], vd, rs, cf, *r[R_CONF + 1:R_AGREE], agree, *r[R_AGREE + 1:]))
        self.rows = out
        self._disp = {}
        self.dataChanged.emit(self.index(0, 5), self.index(n - 1, len(COLUMNS) - 1))

    def _on_labels(self, sid: str) -> None:
        # a label changes the human columns (and possibly which rows a label filter keeps)
        self.q.labels_changed()
        self.refresh_live()

    def set_filter(self, spec: FilterSpec) -> None:
        self.spec = spec
        self.reload()

    # ---- Qt model API --------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS) + len(self.judge_list())

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:  # noqa: N802
        return not parent.isValid() and len(self.rows) < self.total

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:  # noqa: N802
        if parent.isValid() or not self.q.registered:
            return
        n = len(self.rows)
        more = self._query(self.PAGE, n)
        if not more:
            self.total = n
            return
        self.beginInsertRows(QModelIndex(), n, n + len(more) - 1)
        self.rows.extend(more)
        self.endInsertRows()

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and section >= len(COLUMNS):
            judges = self.judge_list()
            k = section - len(COLUMNS)
            if k >= len(judges):
                return None
            if role == Qt.ItemDataRole.DisplayRole:
                return judges[k].short
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"judge {judges[k].name}: {judges[k].title} — its outcome and score (docs/judges.md)"
            return None
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return {"Checker": "the checker's verdict under the live config",
                    "Conf": "the checker's confidence", "Human": "latest label of each annotator",
                    "Agreement": "checker vs human label; 'annotators differ' when labels disagree"}.get(
                        COLUMNS[section])
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if column in self.hidden() or column >= self.columnCount():  # a blind audit's table is not
            column = -1  # ordered by what it hides
        self.sort_order = order
        self.q.set_sort(column, order == Qt.SortOrder.DescendingOrder)
        self.reload()

    def row_tuple(self, i: int) -> tuple[Any, ...]:
        return self.rows[i]

    def dataset_row(self, i: int) -> int:
        return int(self.rows[i][R_ROW])

    def find_dataset_row(self, row: int) -> int:
        for i, r in enumerate(self.rows):
            if r[R_ROW] == row:
                return i
        return -1

    _HANDLED = frozenset({_DISPLAY, _FOREGROUND, _FONT, _ALIGN, _TOOLTIP, ROW_ROLE, VERDICT_ROLE, HUMAN_ROLE,
                          PATH_ROLE, SEED_ROLE, RELATION_ROLE})
    _RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def _display(self, i: int) -> tuple[str, ...]:
        """The eleven display strings of loaded row i (computed once per fetched row)."""
        d = self._disp.get(i)
        if d is None:
            r = self.rows[i]
            v, rs, cf = r[R_VERDICT], r[R_REASON], r[R_CONF]
            d = (r[R_SID], r[R_RUN], r[R_TEXT], r[R_REL], str(r[R_SEED]),
                 VERDICTS[v] if v is not None and v >= 0 else ("checking…" if self.state.checking else "—"),
                 REASONS[rs] if rs else "",
                 f"{cf:.3f}" if cf is not None and math.isfinite(cf) else "—",
                 r[R_LABELS] or "", r[R_AGREE], " ".join((r[R_NOTES] or "").split()))
            self._disp[i] = d
        return d

    def _brush(self, code: int) -> QBrush:
        b = self._brushes.get(code)
        if b is None:
            b = self._brushes[code] = QBrush(theme.verdict_color(code))
        return b

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = _DISPLAY) -> Any:
        # called for every visible cell and role on each repaint: plain int comparisons only
        if role not in self._HANDLED:
            return None
        i = index.row()
        rows = self.rows
        if i < 0 or i >= len(rows):
            return None
        c = index.column()
        vis = self._vis
        outcome, human = vis.outcome, vis.human
        if c >= len(COLUMNS):
            return self._judge_data(rows[i], c - len(COLUMNS), role) if outcome else None
        if role == _DISPLAY:
            if (not outcome and c in CHECKER_COLUMNS) or (not human and c in HUMAN_COLUMNS):
                return "·"
            d = self._disp.get(i)
            return (d if d is not None else self._display(i))[c]
        r = rows[i]
        if role == _FOREGROUND:
            if c == 5:
                v = r[R_VERDICT]
                return self._brush(v) if outcome and v is not None and v >= 0 else None
            if c == 8:
                return self._brush(r[R_HUMAN]) if human and r[R_HUMAN] >= 0 else None
            if c == 9 and outcome and human and r[R_AGREE] in ("differs", "annotators differ"):
                return self._brush(1)
            return None
        if role == _FONT:
            return self._bold if c == 5 or c == 8 else None
        if role == _ALIGN:
            return self._RIGHT if c == 4 or c == 7 else None
        if role == ROW_ROLE:
            return int(r[R_ROW])
        if role == VERDICT_ROLE:
            return -1 if not outcome or r[R_VERDICT] is None else int(r[R_VERDICT])
        if role == HUMAN_ROLE:
            return int(r[R_HUMAN]) if human else -1
        if role == PATH_ROLE:
            return r[R_PATH] or ""
        if role == SEED_ROLE:
            return int(r[R_SEED])
        if role == RELATION_ROLE:
            return r[R_REL]
        if role == _TOOLTIP:
            if c == 2:
                return r[R_TEXT]
            if c == 8 and r[R_LABELS] and human:
                return "latest label of each annotator: " + r[R_LABELS]
            if c == 10 and r[R_NOTES] and human:
                return "each annotator's latest note:\n" + r[R_NOTES].replace("; ", "\n")
            if c == 6 and outcome and self.state.verdicts is not None:
                return self.state.verdicts.reason_text(int(r[R_ROW])) or "decided"
        return None


    def _judge_data(self, r: tuple[Any, ...], k: int, role: int) -> Any:
        judges = self.q.judges
        if k >= len(judges):
            return None
        j = judges[k]
        row = int(r[R_ROW])
        code = int(j.code[row])
        score = float(j.score[row])
        if role == _DISPLAY:
            if code < 0:
                return f"— {score:.2f}" if math.isfinite(score) else "—"
            return f"{VERDICTS[code]} {score:.2f}" if math.isfinite(score) else VERDICTS[code]
        if role == _FOREGROUND:
            return self._brush(code) if code >= 0 else None
        if role == _TOOLTIP:
            what = VERDICTS[code] if code >= 0 else "not judged"
            return f"{j.title}: {what}" + (f", score {score:.3f}" if math.isfinite(score) else "")
        if role == ROW_ROLE:
            return row
        return None


# ---------------------------------------------------------------------------------------------
# Filter bar
# ---------------------------------------------------------------------------------------------

def _combo(items: list[tuple[str, Any]], name: str) -> QComboBox:
    c = QComboBox()
    c.setObjectName(name)
    for text, data in items:
        c.addItem(text, data)
    return c


class FilterBar(QWidget):
    """Edits a FilterSpec; emits `changed` (the free text is debounced)."""

    changed = Signal()
    ANY_JUDGES = "judges: any"
    JUDGES_TIP = "only the samples where two judges both decided and differ (docs/judges.md)"

    def __init__(self, state: SpatialSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._loading = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 0)
        lay.setSpacing(4)
        r1 = QHBoxLayout()
        r1.setSpacing(8)
        self.text = QLineEdit()
        self.text.setObjectName("filterText")
        self.text.setPlaceholderText("search prompts or sample ids (Ctrl+F)")
        self.text.setClearButtonEnabled(True)
        self.text.setMinimumWidth(200)
        r1.addWidget(self.text, 2)
        self.run = _combo([("all runs", None)], "filterRun")
        r1.addWidget(self.run)
        self.relation = _combo([("all relations", None)] + [(r, r) for r in RELATIONS], "filterRelation")
        r1.addWidget(self.relation)
        self.verdict = _combo([("any verdict", None)] + [(v, v) for v in VERDICTS], "filterVerdict")
        r1.addWidget(self.verdict)
        self.reason = _combo([("any reason", None), ("decided", "decided")] + [(r, r) for r in REASONS if r],
                             "filterReason")
        r1.addWidget(self.reason)
        self.labelled = _combo([("labelled or not", "all"), ("labelled", "labelled"),
                                ("unlabelled", "unlabelled")], "filterLabelled")
        r1.addWidget(self.labelled)
        # two judges both decided and differing: the pairs of the judges Browse has computed
        self.judges = _combo([(self.ANY_JUDGES, "")], "filterJudges")
        self.judges.setMinimumContentsLength(9)
        self.judges.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.judges.setToolTip(self.JUDGES_TIP)
        r1.addWidget(self.judges, 1)  # wider where the window allows: "checker (live) ≠ GenEval" whole
        self._pair_kept = ""  # the pair chosen before a blind audit, shown again after it
        lay.addLayout(r1)
        r2 = QHBoxLayout()
        r2.setSpacing(8)
        self.differs = check_box("checker ≠ human", self._emit, name="filterDiffers")
        r2.addWidget(self.differs)
        self.disagree = check_box("annotators disagree", self._emit, name="filterDisagree")
        r2.addWidget(self.disagree)
        r2.addSpacing(12)
        r2.addWidget(QLabel("confidence from"))
        self.conf_min = QDoubleSpinBox()
        self.conf_min.setObjectName("filterConfMin")
        self.conf_max = QDoubleSpinBox()
        self.conf_max.setObjectName("filterConfMax")
        for sb, v in ((self.conf_min, 0.0), (self.conf_max, 1.0)):
            sb.setRange(0.0, 1.0)
            sb.setDecimals(2)
            sb.setSingleStep(0.05)
            sb.setValue(v)
            sb.setKeyboardTracking(False)
        r2.addWidget(self.conf_min)
        r2.addWidget(QLabel("to"))
        r2.addWidget(self.conf_max)
        r2.addStretch(1)
        r2.addSpacing(12)
        self.saved = _combo([("saved filters…", None)], "savedFilters")
        self.saved.setMinimumWidth(150)
        r2.addWidget(self.saved)
        self.save_button = push_button("Save filter…", self._ask_save, name="saveFilter")
        r2.addWidget(self.save_button)
        self.reset_button = push_button("Reset", lambda: self.set_spec(FilterSpec()), name="resetFilter")
        r2.addWidget(self.reset_button)
        lay.addLayout(r2)

        # the free text and the confidence range: one `changed` 200 ms after the last edit
        self._debounce = qdebounced(self._emit, timeout=200, timer_type=Qt.TimerType.CoarseTimer, parent=self)
        self.text.textChanged.connect(lambda _t: self._debounce())
        self.text.returnPressed.connect(self._emit_now)
        for c in (self.run, self.relation, self.verdict, self.reason, self.labelled):
            c.currentIndexChanged.connect(self._emit)
        self.judges.currentIndexChanged.connect(self._judges_picked)
        self.conf_min.valueChanged.connect(lambda _v: self._debounce())
        self.conf_max.valueChanged.connect(lambda _v: self._debounce())
        self.saved.activated.connect(self._apply_saved)
        state.project_changed.connect(self._new_project)
        state.dataset_changed.connect(self.reload_choices)
        state.policy_changed.connect(self.apply_policy)
        # what each filter selects by: the policy disables those on what it hides
        w: QWidget
        for w in (self.verdict, self.reason, self.conf_min, self.conf_max, self.judges):
            w.setProperty("reveals", "outcome")
        for w in (self.labelled, self.disagree):
            w.setProperty("reveals", "human")
        self.differs.setProperty("reveals", "outcome human")
        self.reload_choices()
        self.apply_policy()

    def _new_project(self) -> None:
        """Another project: its own choices, and a filter that starts empty."""
        self._loading = True
        try:
            self._set_fields(FilterSpec())
        finally:
            self._loading = False
        self.reload_choices()
        self.apply_policy()

    def apply_policy(self) -> None:
        """Filters on what the session's policy hides are disabled (and select nothing)."""
        vis = self.state.view_visibility()
        allowed = {"outcome": vis.outcome, "human": vis.human}
        for w in (self.verdict, self.reason, self.conf_min, self.conf_max, self.labelled, self.disagree,
                  self.differs, self.judges):
            ok = all(allowed[k] for k in str(w.property("reveals")).split())
            w.setEnabled(ok)
            w.setToolTip((self.JUDGES_TIP if w is self.judges else "") if ok
                         else "not during a blind audit: it would show what the audit hides")
        # the pair of judges chosen stays out of sight during the audit (and comes back after it)
        back = False
        self._loading = True
        try:
            if not vis.outcome and self.judges.currentIndex() > 0:
                self._pair_kept = self.judges.currentData() or ""
                self.judges.setCurrentIndex(0)
            elif vis.outcome and self._pair_kept:
                self._show_pair(self._pair_kept)
                self._pair_kept = ""
                back = True
        finally:
            self._loading = False
        if back:  # the table filters by it again (an edit during the audit did not keep it)
            self.changed.emit()

    def _emit(self, *_: Any) -> None:
        if not self._loading:
            self.changed.emit()

    def _judges_picked(self, *_: Any) -> None:
        if not self._loading:
            self.changed.emit()

    def _find_pair(self, pair: str) -> int:
        """The combo's entry of a pair of judges, in either order (0: none asked, -1: not offered)."""
        if not pair:
            return 0
        a, _, b = pair.partition("\t")
        at = self.judges.findData(pair)
        return at if at >= 0 else self.judges.findData(f"{b}\t{a}")

    def _show_pair(self, pair: str) -> None:
        """Show ``pair`` ("a\tb"; "" for none) in the combo; a pair it does not offer (not computed
        yet, or not in this project) is added by name, so the filter says what it selects."""
        at = self._find_pair(pair)
        if at < 0:
            a, b = pair.split("\t", 1)
            self.judges.addItem(f"{a} ≠ {b}", pair)
            at = self.judges.count() - 1
        self.judges.setCurrentIndex(at)

    def set_judges(self, judges: list[Any]) -> None:
        """The pairs the filter "judges disagree" offers: the live checker and each computed judge
        against every other (``judges``: the judge columns, in column order). A pair asked for
        before the judges were in is picked once it is offered."""
        names = [(LIVE_JUDGE, LIVE_JUDGE_SHORT)] + [(j.name, j.short) for j in judges]
        want = self.judges.currentData() or ""
        self._loading = True
        try:
            self.judges.clear()
            self.judges.addItem(self.ANY_JUDGES, "")
            if len(names) > 1:
                for i in range(len(names)):
                    for k in range(i + 1, len(names)):
                        self.judges.addItem(f"{names[i][1]} ≠ {names[k][1]}", f"{names[i][0]}\t{names[k][0]}")
            self._show_pair(want)
        finally:
            self._loading = False

    def pick_judges(self, a: str, b: str) -> None:
        """Filter to the samples where judges ``a`` and ``b`` disagree (the review queue over their
        disagreements)."""
        spec = self.spec()
        spec.judges_disagree = [a, b]
        self.set_spec(spec)

    def _emit_now(self) -> None:
        self._debounce.cancel()
        self._emit()

    def reload_choices(self) -> None:
        self._loading = True
        try:
            cur = self.run.currentData()
            self.run.clear()
            self.run.addItem("all runs", None)
            p = self.state.project
            if p is not None:
                for r in p.samples.run_ids():
                    self.run.addItem(r, r)
            i = self.run.findData(cur)
            self.run.setCurrentIndex(max(i, 0))
            self.saved.clear()
            self.saved.addItem("saved filters…", None)
            if p is not None:
                for name in p.audit.saved_filters():
                    self.saved.addItem(name, name)
            self.save_button.setEnabled(p is not None and not p.read_only)
        finally:
            self._loading = False

    def spec(self) -> FilterSpec:
        lo, hi = self.conf_min.value(), self.conf_max.value()
        return FilterSpec(
            runs=[self.run.currentData()] if self.run.currentData() else [],
            relations=[self.relation.currentData()] if self.relation.currentData() else [],
            verdicts=[self.verdict.currentData()] if self.verdict.currentData() else [],
            reasons=[self.reason.currentData()] if self.reason.currentData() else [],
            conf_min=round(float(lo), 4), conf_max=round(float(hi), 4),
            labelled=self.labelled.currentData() or "all",
            checker_vs_human=self.differs.isChecked(), annotators_disagree=self.disagree.isChecked(),
            text=self.text.text().strip(),
            judges_disagree=[x for x in (self.judges.currentData() or "").split("\t") if x])

    def set_spec(self, spec: FilterSpec) -> None:
        self._loading = True
        try:
            self._set_fields(spec)
        finally:
            self._loading = False
        self._debounce.cancel()
        self.changed.emit()

    def _set_fields(self, spec: FilterSpec) -> None:
        def pick(combo: QComboBox, values: list[str]) -> None:
            i = combo.findData(values[0]) if values else 0
            combo.setCurrentIndex(max(i, 0))

        pick(self.run, spec.runs)
        pick(self.relation, spec.relations)
        pick(self.verdict, spec.verdicts)
        pick(self.reason, spec.reasons)
        self.labelled.setCurrentIndex(max(self.labelled.findData(spec.labelled), 0))
        self.differs.setChecked(spec.checker_vs_human)
        self.disagree.setChecked(spec.annotators_disagree)
        pair = "\t".join(spec.judges_disagree[:2]) if len(spec.judges_disagree) >= 2 else ""
        if pair and not self.state.view_visibility().outcome:
            self._pair_kept, pair = pair, ""  # a saved filter applied during a blind audit: after it
        self._show_pair(pair)
        self.conf_min.setValue(spec.conf_min)
        self.conf_max.setValue(spec.conf_max)
        self.text.setText(spec.text)

    def _apply_saved(self, i: int) -> None:
        name = self.saved.itemData(i)
        p = self.state.project
        if not name or p is None:
            return
        spec = p.audit.saved_filters().get(name)
        if spec is not None:
            self.set_spec(FilterSpec.from_dict(spec))
            self.state.message.emit(f"filter {name!r} applied")

    def _ask_save(self) -> None:
        name, ok = QInputDialog.getText(self, "Save filter", "Name of this filter:")
        if ok and name.strip():
            self.save_as(name.strip())

    def save_as(self, name: str) -> None:
        p = self.state.project
        if p is None or p.read_only:
            return
        p.audit.save_filter(name, self.spec().to_dict())
        self.reload_choices()
        self.saved.setCurrentIndex(max(self.saved.findData(name), 0))
        self.state.message.emit(f"filter {name!r} saved")


# ---------------------------------------------------------------------------------------------
# Browse page: filter bar + table / thumbnail grid
# ---------------------------------------------------------------------------------------------
