"""The sample table: a paged DuckDB query behind a QAbstractTableModel, and its filter bar.

Rows are never all turned into Qt items: the model runs `SELECT … LIMIT page OFFSET n` when
the view scrolls near the end (`canFetchMore` / `fetchMore`), so 100,000 samples cost one
count and one page. The live checker verdicts (recomputed as the calibration sliders move)
live in numpy arrays in `AppState`; they reach SQL as an Arrow table registered on the
project's connection (`_ui_live`), re-registered when verdicts or labels change, at the
first query after the change (a slider step whose rows are patched from the arrays, or that
lands while another tab is shown, queries nothing, so it registers nothing). Its
sample columns (id, run, prompt text, relation, seed, image path) are built once per loaded
dataset and reused, so a re-registration only wraps the new verdict arrays (no copy).
Human labels come from `label_events`: the latest event per sample and annotator, aggregated
once per label change into `_ui_labels` (row, labels, number of distinct verdicts).

`FilterSpec` is what the filter bar edits and what `project.save_filter` stores.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workstation.methods.spatial.types import REASONS, RELATIONS, VERDICTS

from ... import theme
from ...state import AppState, RowQueue
from workstation.methods.spatial.data import spatial_columns
from workstation.util.grouping import factorize
from workstation.methods.spatial.store import LABELS_RELATION

from .table_order import SORTABLE, LiveColumns, RowOrder, dynamic_mask, ordered_rows, row_tuples

ROW_ROLE = int(Qt.UserRole) + 1  # dataset row (int)
VERDICT_ROLE = int(Qt.UserRole) + 2  # checker verdict code (int, -1 none)
PATH_ROLE = int(Qt.UserRole) + 3  # image path relative to the project
HUMAN_ROLE = int(Qt.UserRole) + 4  # human verdict code (int, -1 none)
SEED_ROLE = int(Qt.UserRole) + 5
RELATION_ROLE = int(Qt.UserRole) + 6
_DISPLAY, _FOREGROUND, _FONT, _ALIGN, _TOOLTIP = (int(Qt.DisplayRole), int(Qt.ForegroundRole), int(Qt.FontRole),
                                                  int(Qt.TextAlignmentRole), int(Qt.ToolTipRole))

LIVE_TABLE = "_ui_live"
LABELS_TABLE = "_ui_labels"

COLUMNS: tuple[str, ...] = ("Sample", "Run", "Prompt", "Relation", "Seed", "Checker", "Reason", "Conf",
                            "Human", "Agreement", "Notes")
CHECKER_COLUMNS = (5, 6, 7, 9)  # the checker's outcome: hidden in blind mode
BLIND_COLUMNS = (*CHECKER_COLUMNS, 8, 10)  # and every annotator's labels and notes (a blind pass is one's own)

_AGREE = ("CASE WHEN coalesce(l.nv, 0) > 1 THEN 'annotators differ' WHEN v.human < 0 THEN '' "
          "WHEN v.human = v.verdict THEN 'agrees' ELSE 'differs' END")
SORT_EXPR = ("v.sample_id", "v.run_id", "v.text", "v.relation", "v.seed", "v.verdict", "v.reason", "v.conf",
             "v.human", _AGREE, "l.notes")

_SELECT = ("v.row, v.sample_id, v.run_id, v.text, v.relation, v.seed, v.verdict, v.reason, v.conf, l.labels, "
           f"v.human, {_AGREE} AS agreement, v.image_path, l.notes")
# tuple positions in a fetched row
R_ROW, R_SID, R_RUN, R_TEXT, R_REL, R_SEED, R_VERDICT, R_REASON, R_CONF, R_LABELS, R_HUMAN, R_AGREE, R_PATH, \
    R_NOTES = range(14)

_FROM = f"FROM {LIVE_TABLE} v LEFT JOIN {LABELS_TABLE} l USING (row) "

# latest event per (sample, annotator): each annotator's verdict, and each annotator's note
LABELS_SQL = (
    "WITH ev AS (SELECT sample_id, annotator, verdict, notes, row_number() OVER "
    "(PARTITION BY sample_id, annotator ORDER BY event_id DESC) AS rn FROM " + LABELS_RELATION + ") "
    "SELECT sample_id, string_agg(annotator || ': ' || verdict, ', ' ORDER BY annotator) "
    "FILTER (WHERE verdict IS NOT NULL) AS labels, "
    "count(DISTINCT verdict) AS nv, "
    "string_agg(annotator || ': ' || trim(notes), '; ' ORDER BY annotator) "
    "FILTER (WHERE trim(coalesce(notes, '')) <> '') AS notes "
    "FROM ev WHERE rn = 1 AND (verdict IS NOT NULL OR trim(coalesce(notes, '')) <> '') GROUP BY sample_id")


def sample_columns(ds: Any) -> dict[str, Any]:
    """The dataset's per-sample columns as Arrow arrays (built once per dataset, cached)."""
    cached = ds.cache.get("ui_arrow_samples")
    if cached is not None:
        return cached
    import pyarrow as pa

    s = ds.samples

    def coded(codes: np.ndarray, names: Any) -> Any:
        """A dictionary-encoded column (DuckDB reads it as text): 4 bytes per sample."""
        return pa.DictionaryArray.from_arrays(pa.array(np.asarray(codes, np.int32)), pa.array(names, pa.string()))

    # each sample's prompt text (its prompt id where the prompt is not loaded): codes into the
    # prompts' texts, so 1M samples of 250k prompts hold each text once
    prow = ds.prompt_rows()
    if len(ds.prompts) and len(prow) and bool((prow >= 0).all()):
        text = coded(prow, np.asarray(ds.prompts.text, dtype=object))
    elif len(ds.prompts):
        text = pa.array(np.where(prow >= 0, ds.prompts.text[np.maximum(prow, 0)], s.prompt_id), pa.string())
    else:
        text = pa.array(np.asarray(s.prompt_id, dtype=object), pa.string())
    run_codes, run_names = factorize(s.run_id, sort=False)
    rel = np.asarray(spatial_columns(ds).relation, np.int64)

    def strings(name: str) -> Any:
        """A text column: the loader's Arrow form where it kept one, else converted."""
        kept = ds.kept_arrow(name)
        return kept if kept is not None else pa.array(np.asarray(getattr(s, name), dtype=object), pa.string())

    cols = {
        "row": pa.array(np.arange(ds.n, dtype=np.int64)),
        "sample_id": strings("sample_id"),
        "run_id": coded(run_codes, run_names),
        "text": text,
        "relation": (coded(rel, list(RELATIONS)) if not len(rel) or int(rel.min()) >= 0
                     else pa.array(np.array(RELATIONS + ("",), dtype=object)[rel], pa.string())),
        "seed": pa.array(np.asarray(s.seed, np.int64)),
        "image_path": strings("image_path"),
    }
    ds.cache["ui_arrow_samples"] = cols
    return cols


def like_literal(text: str) -> str:
    """`text` for a LIKE pattern with ESCAPE '\\': its \\, % and _ match themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass
class FilterSpec:
    """What the filter bar selects; stored as JSON by `Project.save_filter`."""

    runs: list[str] = field(default_factory=list)  # empty = all
    relations: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)  # PASS / FAIL / UNDECIDABLE
    reasons: list[str] = field(default_factory=list)  # REASONS names; "decided" for PASS/FAIL
    conf_min: float = 0.0
    conf_max: float = 1.0
    labelled: str = "all"  # "all" | "labelled" | "unlabelled"
    checker_vs_human: bool = False  # only samples where the checker and the human differ
    annotators_disagree: bool = False
    text: str = ""  # free text on the prompt (or sample id)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "FilterSpec":
        known = set(FilterSpec.__dataclass_fields__)
        return FilterSpec(**{k: v for k, v in d.items() if k in known})

    def where(self) -> tuple[str, list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        if self.runs:
            parts.append("v.run_id IN (SELECT unnest(?))")
            params.append(list(self.runs))
        if self.relations:
            parts.append("v.relation IN (SELECT unnest(?))")
            params.append(list(self.relations))
        if self.verdicts:
            parts.append("v.verdict IN (SELECT unnest(?))")
            params.append([VERDICTS.index(x) for x in self.verdicts])
        if self.reasons:
            parts.append("v.reason IN (SELECT unnest(?))")
            params.append([0 if r == "decided" else REASONS.index(r) for r in self.reasons])
        if self.conf_min > 0.0:
            parts.append("v.conf >= ?")
            params.append(float(self.conf_min))
        if self.conf_max < 1.0:
            parts.append("v.conf <= ?")
            params.append(float(self.conf_max))
        if self.labelled == "labelled":
            parts.append("v.human >= 0")
        elif self.labelled == "unlabelled":
            parts.append("v.human < 0")
        if self.checker_vs_human:
            parts.append("v.human >= 0 AND v.human <> v.verdict")
        if self.annotators_disagree:
            parts.append("coalesce(l.nv, 0) > 1")
        if self.text.strip():
            # the text is matched literally: \, % and _ are escaped, and the ESCAPE clause says how
            parts.append("(v.text ILIKE ? ESCAPE '\\' OR v.sample_id ILIKE ? ESCAPE '\\')")
            pat = "%" + like_literal(self.text.strip()) + "%"
            params += [pat, pat]
        return (("WHERE " + " AND ".join(parts) + " ") if parts else ""), params


class SampleTableModel(QAbstractTableModel):
    """Samples matching a FilterSpec, sorted, fetched a page at a time."""

    refreshed = Signal()  # after a filter / sort / verdict refresh (the count is new)

    PAGE = 256
    KEEP_LOADED_MAX = 4096  # on a verdict refresh, reload at most this many rows in place

    def __init__(self, state: AppState, parent: Any = None) -> None:
        super().__init__(parent)
        self.state = state
        self.spec = FilterSpec()
        self.sort_column = -1
        self.sort_order = Qt.AscendingOrder
        self.rows: list[tuple[Any, ...]] = []
        self._disp: dict[int, tuple[str, ...]] = {}
        self._brushes: dict[int, QBrush] = {}
        self._bold = QFont()
        self._bold.setBold(True)
        self.total = 0
        self.all_count = 0
        self.last_query_ms = 0.0
        self.labels_version = 0
        self._forget_data()
        state.project_changed.connect(self._on_dataset)
        state.dataset_changed.connect(self._on_dataset)
        state.verdicts_changed.connect(self.refresh_live)
        state.labels_changed.connect(self._on_labels)
        state.queue_changed.connect(self._on_blind)
        self._on_dataset()

    # ---- registered tables ---------------------------------------------------------------------
    def _forget_data(self) -> None:
        """No registered tables, and nothing of a closed project kept (its columns are the
        size of its samples)."""
        self._registered = False
        self._pending: dict[str, Any] | None = None  # live columns not registered yet (see _sql)
        self._ds: Any = None  # the dataset the registered tables describe
        self._live_key: tuple[Any, int] = (None, -1)  # (verdicts, labels version) registered
        # the filter and sort in numpy (table_order), for every sort but the text columns
        self._live_cols: LiveColumns | None = None
        self._label_text: dict[int, str] = {}
        self._note_text: dict[int, str] = {}
        self._nv = np.zeros(0, np.int32)
        self._np_order: RowOrder | None = None
        self._static: tuple[Any, np.ndarray | None] = (None, None)

    def _on_dataset(self) -> None:
        ds = self.state.dataset
        if ds is not None and self.state.project is not None and ds is self._ds and self._registered:
            return  # the same dataset (several signals announce one load)
        self.reload()

    def _register_labels(self) -> None:
        import pyarrow as pa

        st = self.state
        rows, labels, nv, notes = [], [], [], []
        found = st.project.con.execute(LABELS_SQL).fetchall()
        idx = st.dataset.sample_index() if found else {}
        for sid, text, k, note in found:
            r = idx.get(sid)
            if r is not None:
                rows.append(r)
                labels.append(text)
                nv.append(int(k))
                notes.append(note)
        st.project.con.register(LABELS_TABLE, pa.table({
            "row": pa.array(rows, pa.int64()), "labels": pa.array(labels, pa.string()),
            "nv": pa.array(nv, pa.int32()), "notes": pa.array(notes, pa.string())}))
        self._label_text = dict(zip(rows, labels))
        self._note_text = dict(zip(rows, notes))
        self._nv = np.zeros(st.dataset.n, np.int32)
        if rows:
            self._nv[np.asarray(rows, np.int64)] = np.asarray(nv, np.int32)

    def _register(self) -> bool:
        """(Re-)register the live table (and the labels when they changed); False without data."""
        st = self.state
        if st.project is None or st.dataset is None or st.dataset.n == 0:
            self._forget_data()
            return False
        import pyarrow as pa

        ds = st.dataset
        n = ds.n
        new_ds = ds is not self._ds or not self._registered
        key = (st.verdicts, self.labels_version)
        if not new_ds and key[0] is self._live_key[0] and key[1] == self._live_key[1]:
            return True
        if new_ds:
            self._static = (None, None)
        if new_ds or key[1] != self._live_key[1]:
            self._register_labels()
        v = st.verdicts
        if v is not None and len(v.verdict) == n:
            verdict = np.asarray(v.verdict, np.int8)
            reason = np.asarray(v.reason, np.int8)
            conf = np.asarray(v.conf, np.float64)
        else:
            verdict = np.full(n, -1, np.int8)
            reason = np.zeros(n, np.int8)
            conf = np.full(n, np.nan)
        human = np.asarray(st.human if len(st.human) == n else np.full(n, -1), np.int8).copy()
        cols = dict(sample_columns(ds))
        cols.update(verdict=pa.array(verdict), reason=pa.array(reason), conf=pa.array(conf),
                    human=pa.array(human))
        self._live_cols = LiveColumns(relation=spatial_columns(ds).relation, seed=ds.samples.seed, verdict=verdict,
                                      reason=reason, conf=conf, human=human, nv=self._nv)
        self._np_order = None
        self._pending = cols  # registered by _sql() when a query needs it
        self._registered = True
        self._ds = ds
        self._live_key = key
        return True

    # ---- queries -------------------------------------------------------------------------------
    def _sql(self, sql: str, params: list[Any] | None = None) -> Any:
        """Run `sql` on the project's connection with the live table registered as it stands."""
        con = self.state.project.con
        if self._pending is not None:
            import pyarrow as pa

            con.register(LIVE_TABLE, pa.table(self._pending))
            self._pending = None
        return con.execute(sql, params or [])

    def _order(self) -> str:
        if self.sort_column < 0:
            return "ORDER BY v.row"
        d = "DESC" if self.sort_order == Qt.DescendingOrder else "ASC"
        return f"ORDER BY {SORT_EXPR[self.sort_column]} {d} NULLS LAST, v.row"

    def _numpy_order(self) -> RowOrder | None:
        """The matching rows in table order, by numpy (None where the sort is by a text column)."""
        if self.sort_column not in SORTABLE or self._live_cols is None or not self._registered:
            return None
        if self._np_order is None:
            self._np_order = ordered_rows(dynamic_mask(self.spec, self._live_cols, self._static_mask()),
                                          self._live_cols, self.sort_column,
                                          self.sort_order == Qt.DescendingOrder)
        return self._np_order

    def _static_mask(self) -> np.ndarray | None:
        """Rows passing the conditions the checker cannot change (runs, relations, text), by SQL
        once per dataset and filter; None when the filter has none."""
        f = self.spec
        key = (id(self._ds), tuple(f.runs), tuple(f.relations), f.text.strip())
        if not (f.runs or f.relations or f.text.strip()):
            return None
        if self._static[0] != key:
            where, params = FilterSpec(runs=list(f.runs), relations=list(f.relations), text=f.text).where()
            rows = self._sql(f"SELECT v.row {_FROM}{where}", params).fetchall()
            mask = np.zeros(self.state.dataset.n, bool)
            if rows:
                mask[np.fromiter((r[0] for r in rows), np.int64, len(rows))] = True
            self._static = (key, mask)
        return self._static[1]

    def _query(self, limit: int, offset: int) -> list[tuple[Any, ...]]:
        order = self._numpy_order()
        if order is not None:
            cols = sample_columns(self.state.dataset)
            return row_tuples(order.page(offset, limit), self.state.dataset, cols["text"], cols["relation"],
                              self._live_cols, self._label_text, self._note_text)
        where, params = self.spec.where()
        sql = f"SELECT {_SELECT} {_FROM}{where}{self._order()} LIMIT {int(limit)} OFFSET {int(offset)}"
        return self._sql(sql, params).fetchall()

    def _count(self) -> int:
        order = self._numpy_order()
        if order is not None:
            return len(order)
        where, params = self.spec.where()
        return int(self._sql(f"SELECT count(*) {_FROM}{where}", params).fetchone()[0])

    def all_rows(self) -> RowQueue:
        """Dataset rows of every sample matching the filter, in table order (the review queue)."""
        if not self._registered:
            return RowQueue()
        order = self._numpy_order()
        if order is not None:
            return RowQueue(order.all())
        where, params = self.spec.where()
        sql = f"SELECT v.row {_FROM}{where}{self._order()}"
        table = self._sql(sql, params).to_arrow_table()
        return RowQueue(table.column(0).to_numpy() if table.num_rows else np.zeros(0, np.int64))

    def reload(self) -> None:
        """Run the query again from the first page (filter or sort changed)."""
        t0 = time.perf_counter()
        self.beginResetModel()
        self.rows = []
        self._disp = {}
        self.total = 0
        self._np_order = None  # the filter or the sort changed
        if self.state.dataset is None or self.state.dataset is not self._ds:
            self._registered = False
        if self._register():
            self.total = self._count()
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
        if not self._registered or st.dataset is None or st.dataset is not self._ds:
            self.reload()
            return
        if st.verdicts is self._live_key[0] and self.labels_version == self._live_key[1]:
            return
        t0 = time.perf_counter()
        if self.labels_version == self._live_key[1] and not self.verdict_dependent() and st.verdicts is not None:
            # only verdict values changed and neither the filter nor the sort looks at them: the
            # rows and their order stay; the live table is re-registered (for the next pages) and
            # the loaded rows take the new values from the arrays, without a query
            self._register()
            self._patch_loaded_rows()
            self.last_query_ms = (time.perf_counter() - t0) * 1000
            self.refreshed.emit()
            return
        self._register()
        total = self._count()
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
        f = self.spec
        return bool(f.verdicts or f.reasons or f.conf_min > 0.0 or f.conf_max < 1.0 or f.checker_vs_human
                    or self.sort_column in (5, 6, 7, 9))

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
        self.labels_version += 1
        self.refresh_live()

    def _on_blind(self) -> None:
        self.headerDataChanged.emit(Qt.Horizontal, 0, len(COLUMNS) - 1)

    def set_filter(self, spec: FilterSpec) -> None:
        self.spec = spec
        self.reload()

    # ---- Qt model API --------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:  # noqa: N802
        return not parent.isValid() and len(self.rows) < self.total

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:  # noqa: N802
        if parent.isValid() or not self._registered:
            return
        n = len(self.rows)
        more = self._query(self.PAGE, n)
        if not more:
            self.total = n
            return
        self.beginInsertRows(QModelIndex(), n, n + len(more) - 1)
        self.rows.extend(more)
        self.endInsertRows()

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Horizontal and role == Qt.ToolTipRole:
            return {"Checker": "the checker's verdict under the live config",
                    "Conf": "the checker's confidence", "Human": "latest label of each annotator",
                    "Agreement": "checker vs human label; 'annotators differ' when labels disagree"}.get(
                        COLUMNS[section])
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        self.sort_column = column
        self.sort_order = order
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
    _RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)

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
        blind = self.state.blind
        if role == _DISPLAY:
            if blind and c in BLIND_COLUMNS:
                return "·"
            d = self._disp.get(i)
            return (d if d is not None else self._display(i))[c]
        r = rows[i]
        if role == _FOREGROUND:
            if c == 5:
                v = r[R_VERDICT]
                return self._brush(v) if not blind and v is not None and v >= 0 else None
            if c == 8:
                return self._brush(r[R_HUMAN]) if not blind and r[R_HUMAN] >= 0 else None
            if c == 9 and not blind and r[R_AGREE] in ("differs", "annotators differ"):
                return self._brush(1)
            return None
        if role == _FONT:
            return self._bold if c == 5 or c == 8 else None
        if role == _ALIGN:
            return self._RIGHT if c == 4 or c == 7 else None
        if role == ROW_ROLE:
            return int(r[R_ROW])
        if role == VERDICT_ROLE:
            return -1 if blind or r[R_VERDICT] is None else int(r[R_VERDICT])
        if role == HUMAN_ROLE:
            return int(r[R_HUMAN])
        if role == PATH_ROLE:
            return r[R_PATH] or ""
        if role == SEED_ROLE:
            return int(r[R_SEED])
        if role == RELATION_ROLE:
            return r[R_REL]
        if role == _TOOLTIP:
            if c == 2:
                return r[R_TEXT]
            if c == 8 and r[R_LABELS] and not blind:
                return "latest label of each annotator: " + r[R_LABELS]
            if c == 10 and r[R_NOTES] and not blind:
                return "each annotator's latest note:\n" + r[R_NOTES].replace("; ", "\n")
            if c == 6 and not blind and self.state.verdicts is not None:
                return self.state.verdicts.reason_text(int(r[R_ROW])) or "decided"
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

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
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
        self.text.setMinimumWidth(240)
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
        lay.addLayout(r1)
        r2 = QHBoxLayout()
        r2.setSpacing(8)
        self.differs = QCheckBox("checker ≠ human")
        self.differs.setObjectName("filterDiffers")
        r2.addWidget(self.differs)
        self.disagree = QCheckBox("annotators disagree")
        self.disagree.setObjectName("filterDisagree")
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
        self.save_button = QPushButton("Save filter…")
        self.save_button.setObjectName("saveFilter")
        r2.addWidget(self.save_button)
        self.reset_button = QPushButton("Reset")
        self.reset_button.setObjectName("resetFilter")
        r2.addWidget(self.reset_button)
        lay.addLayout(r2)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(200)
        self._debounce.timeout.connect(self._emit)
        self.text.textChanged.connect(lambda _t: self._debounce.start())
        self.text.returnPressed.connect(self._emit_now)
        for c in (self.run, self.relation, self.verdict, self.reason, self.labelled):
            c.currentIndexChanged.connect(self._emit)
        self.differs.toggled.connect(self._emit)
        self.disagree.toggled.connect(self._emit)
        self.conf_min.valueChanged.connect(lambda _v: self._debounce.start())
        self.conf_max.valueChanged.connect(lambda _v: self._debounce.start())
        self.saved.activated.connect(self._apply_saved)
        self.save_button.clicked.connect(self._ask_save)
        self.reset_button.clicked.connect(lambda: self.set_spec(FilterSpec()))
        state.project_changed.connect(self.reload_choices)
        state.dataset_changed.connect(self.reload_choices)
        self.reload_choices()

    def _emit(self, *_: Any) -> None:
        if not self._loading:
            self.changed.emit()

    def _emit_now(self) -> None:
        self._debounce.stop()
        self._emit()

    def reload_choices(self) -> None:
        self._loading = True
        try:
            cur = self.run.currentData()
            self.run.clear()
            self.run.addItem("all runs", None)
            p = self.state.project
            if p is not None:
                for r in p.run_ids():
                    self.run.addItem(r, r)
            i = self.run.findData(cur)
            self.run.setCurrentIndex(max(i, 0))
            self.saved.clear()
            self.saved.addItem("saved filters…", None)
            if p is not None:
                for name in p.saved_filters():
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
            text=self.text.text().strip())

    def set_spec(self, spec: FilterSpec) -> None:
        self._loading = True
        try:
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
            self.conf_min.setValue(spec.conf_min)
            self.conf_max.setValue(spec.conf_max)
            self.text.setText(spec.text)
        finally:
            self._loading = False
        self._debounce.stop()
        self.changed.emit()

    def _apply_saved(self, i: int) -> None:
        name = self.saved.itemData(i)
        p = self.state.project
        if not name or p is None:
            return
        spec = p.saved_filters().get(name)
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
        p.save_filter(name, self.spec().to_dict())
        self.reload_choices()
        self.saved.setCurrentIndex(max(self.saved.findData(name), 0))
        self.state.message.emit(f"filter {name!r} saved")


# ---------------------------------------------------------------------------------------------
# Browse page: filter bar + table / thumbnail grid
# ---------------------------------------------------------------------------------------------
