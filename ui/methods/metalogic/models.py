"""Qt models of the MetaLogic page: the law × dimension heatmap and the pair list.

Both read the live session (`ui.session.MethodSession`: its `MetaLogicData` and `PairResults`)
and hold numpy columns, so filtering and sorting 100,000 pairs is a handful of array
operations. In blind mode neither shows anything computed: the heatmap shows how many pairs
each cell holds, the list has no outcome, kind, detail or confidence column and cannot be
filtered or sorted by them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from workstation.evaluation.intervals import SMALL_N
from workstation.methods.metalogic.laws import DIMENSION_TITLES, DIMENSIONS, LAWS, MODIFIERS
from workstation.methods.metalogic.metrics import PUBLISHED, heatmap
from workstation.methods.metalogic.results import KINDS, MISALIGNED, REASONS, UNDECIDABLE, VERDICTS

Index = QModelIndex | QPersistentModelIndex
_INK = QColor("#151515")
_EMPTY = QColor("#d9dbe0")
_NEUTRAL = QColor("#c9d3e3")


def _pct(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{100 * x:.0f}%"


def rate_colour(rate: float) -> QColor:
    """White → red with the misalignment rate (0 → 1); grey when nothing was decided."""
    if math.isnan(rate):
        return _EMPTY
    r = min(max(float(rate), 0.0), 1.0)
    return QColor(int(255 - 35 * r), int(245 - 190 * r), int(240 - 190 * r))


class HeatmapModel(QAbstractTableModel):
    """Rows: the five laws; columns: the dimensions the data has. Cell (law, dimension)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.dims: list[str] = []
        self.hm: dict[str, Any] | None = None
        self.counts = np.zeros((len(LAWS), 0), np.int64)
        self.blind = False

    def set_results(self, results: Any, run: str | None, blind: bool) -> None:
        self.beginResetModel()
        self.blind = blind
        if results is None or len(results) == 0:
            self.dims, self.hm, self.counts = [], None, np.zeros((len(LAWS), 0), np.int64)
        else:
            sel = np.ones(len(results), bool) if run is None else (np.asarray(results.run).astype(str) == run)
            dcode = np.asarray(results.dimension, np.int64)[sel]
            present = np.flatnonzero(np.bincount(dcode, minlength=len(DIMENSIONS)))
            self.dims = [DIMENSIONS[int(d)] for d in present]
            self.hm = heatmap(results, run=run, dimensions=self.dims)
            law = np.asarray(results.law, np.int64)[sel]
            col = np.full(len(DIMENSIONS), -1, np.int64)
            col[present] = np.arange(len(present))
            dim = col[dcode]
            self.counts = np.zeros((len(LAWS), len(self.dims)), np.int64)
            np.add.at(self.counts, (law, dim), 1)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(LAWS)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.dims)

    def cell(self, row: int, col: int) -> tuple[str, str]:
        return LAWS[row], self.dims[col]

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole and role != Qt.ItemDataRole.ToolTipRole:
            return None
        if orientation == Qt.Orientation.Vertical:
            law = LAWS[section]
            pub = PUBLISHED["law"].get(law)
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"{law}: published misalignment rate {_pct(pub)}" if pub is not None else law
            return law if self.blind or pub is None else f"{law}\n({_pct(pub)})"  # narrow: two lines
        if section >= len(self.dims):
            return None
        d = self.dims[section]
        pub = PUBLISHED["dimension"].get(d)
        title = DIMENSION_TITLES.get(d, d)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{title}: published misalignment rate {_pct(pub)}" if pub is not None else title
        return title if self.blind or pub is None else f"{title}\n({_pct(pub)})"

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.hm is None:
            return None
        r, c = index.row(), index.column()
        n = int(self.counts[r, c])
        if self.blind:
            if role == Qt.ItemDataRole.DisplayRole:
                return f"{n} pairs" if n else "–"
            if role == Qt.ItemDataRole.BackgroundRole:
                return QBrush(_NEUTRAL if n else _EMPTY)
            if role == Qt.ItemDataRole.ForegroundRole:
                return QBrush(_INK)
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"{LAWS[r]} × {DIMENSION_TITLES[self.dims[c]]}: {n} pairs (click to list them)"
            if role == Qt.ItemDataRole.TextAlignmentRole:
                return int(Qt.AlignmentFlag.AlignCenter)
            return None
        hm = self.hm
        rate, pairs = float(hm["paper_rate"][r, c]), int(hm["pairs"][r, c])
        if math.isnan(rate) and pairs:  # results without the paper's decisions: the rate over decided pairs
            rate = float(hm["decided_rate"][r, c])
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{_pct(rate)} · {pairs}" if pairs else "–"
        if role == Qt.ItemDataRole.BackgroundRole:
            return QBrush(rate_colour(rate))
        if role == Qt.ItemDataRole.ForegroundRole:
            return QBrush(QColor("white") if not math.isnan(rate) and rate > 0.65 else _INK)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            und, dec = int(hm["undecidable"][r, c]), int(hm["decided"][r, c])
            small = f" — fewer than {SMALL_N} pairs" if pairs < SMALL_N else ""
            txt = (f"{LAWS[r]} × {DIMENSION_TITLES[self.dims[c]]}: misalignment rate by the paper's rule (every pair "
                   f"decided) {int(hm['paper_misaligned'][r, c])} of {pairs} pairs, {_pct(float(hm['paper_rate'][r, c]))}"
                   f" (95% interval {_pct(float(hm['paper_lo'][r, c]))}–{_pct(float(hm['paper_hi'][r, c]))}){small}\n"
                   f"abstention-aware: {int(hm['misaligned'][r, c])} of {dec} decided pairs misaligned "
                   f"({_pct(float(hm['decided_rate'][r, c]))}, 95% interval {_pct(float(hm['decided_lo'][r, c]))}–"
                   f"{_pct(float(hm['decided_hi'][r, c]))}); {und} UNDECIDABLE")
            return txt + "\nclick to list these pairs"
        return None


class HeatmapDelegate(QStyledItemDelegate):
    """Cells keep their rate colour when selected; the selected cell gets a frame instead."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        opt = QStyleOptionViewItem(option)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        opt.state &= ~QStyle.StateFlag.State_Selected
        opt.state &= ~QStyle.StateFlag.State_HasFocus
        super().paint(painter, opt, index)
        if selected:
            painter.save()
            pen = QPen(QColor("#1e88e5"))
            pen.setWidth(4)
            painter.setPen(pen)
            painter.drawRect(opt.rect.adjusted(2, 2, -2, -2))
            painter.restore()


def entity_names(entity: np.ndarray) -> np.ndarray:
    """Each pair's entity names joined with " · " (object array), vectorised over the slots."""
    e = entity.astype(str).astype(object)
    out = e[:, 0].copy()
    for k in range(1, e.shape[1]):
        col = e[:, k]
        out = np.where(col != "", out + " · " + col, out)
    return out


def short_pair_names(ids: np.ndarray) -> np.ndarray:
    """What the list shows of each image pair id ``"<suite pair>|<run>|<seed>"``: the suite pair
    without the dotted prefix every pair shares (run and seed have columns of their own)."""
    group = [str(x).split("|", 1)[0] for x in ids.tolist()]
    if len(set(group)) < 2:
        return np.array(group, dtype=object)
    lo, hi = min(group), max(group)  # their common prefix is every id's
    k = 0
    while k < min(len(lo), len(hi)) and lo[k] == hi[k]:
        k += 1
    k = lo.rfind(".", 0, k) + 1
    return np.array([g[k:] for g in group], dtype=object)


# ---- the pair list -----------------------------------------------------------------------------------
#: (key, header, computed: hidden in blind mode)
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("pair", "pair (entities)", False), ("run", "run", False), ("seed", "seed", False), ("law", "law", False),
    ("modifier", "modifier", False), ("dimension", "dimension", False), ("outcome", "outcome", True),
    ("kind", "kind / reason", True), ("detail", "detail", True), ("conf", "conf", True), ("human", "you", False),
)
_OUTCOME_COLOUR = {0: QColor("#2e9d48"), 1: QColor("#d0453a"), 2: QColor("#8d8d8d")}


class PairListModel(QAbstractTableModel):
    """The image pairs that pass the filters, in the chosen order (``rows``: data rows)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.data_: Any = None
        self.results: Any = None
        self.human = np.zeros(0, np.int8)
        self.blind = False
        self.rows = np.zeros(0, np.int64)
        self.filters: dict[str, Any] = {}
        self.sort_key: tuple[str, bool] = ("", False)
        self._cols: dict[str, np.ndarray] = {}

    # ---- columns -----------------------------------------------------------------------------------
    @property
    def columns(self) -> list[tuple[str, str, bool]]:
        return [c for c in COLUMNS if not (self.blind and c[2])]

    def column_of(self, key: str) -> int:
        return [c[0] for c in self.columns].index(key)

    def set_session(self, data: Any, results: Any, human: np.ndarray, blind: bool) -> None:
        """New data / results / human labels / blind mode: rebuild the columns, keep the filters."""
        self.beginResetModel()
        same_data = data is not None and data is self.data_ and "pair" in self._cols
        self.data_, self.results, self.blind = data, results, blind
        n = len(data) if data is not None else 0
        self.human = np.asarray(human, np.int8) if len(human) == n else np.full(n, -1, np.int8)
        c: dict[str, np.ndarray] = {}
        if n and same_data:  # the data's own columns stay (a slider move changes only the outcome)
            c = {k: self._cols[k] for k in ("pair", "short", "run", "seed", "law", "modifier", "dimension")}
        elif n:
            p = data.pairs
            c["pair"] = data.pair_id.astype(object)
            c["short"] = entity_names(p.entity) if p.entity.ndim == 2 and p.entity.shape[1] \
                else short_pair_names(data.pair_id)
            c["run"] = p.run.astype(object)
            c["seed"] = p.seed
            c["law"] = np.asarray(p.law, np.int64)
            c["modifier"] = np.asarray(p.modifier, np.int64)
            c["dimension"] = np.asarray(p.dimension, np.int64)
        if n:
            if results is not None and len(results) == n:
                v = np.asarray(results.verdict, np.int64)
                c["outcome"] = v
                # kind of a misalignment, reason of an abstention: one code space (kinds 1-3, reasons 4-6)
                c["kind"] = np.where(v == MISALIGNED, np.asarray(results.kind, np.int64),
                                     np.where(v == UNDECIDABLE, len(KINDS) - 1 + np.asarray(results.reason, np.int64), 0))
                c["conf"] = np.asarray(results.conf, np.float64)
                c["detail"] = c["kind"]  # sorted as the kind
            c["human"] = self.human.astype(np.int64)
        self._cols = c
        self._apply(reset=False)
        self.endResetModel()

    @staticmethod
    def kind_name(code: int) -> str:
        if code <= 0:
            return ""
        if code < len(KINDS):
            return KINDS[code]
        return REASONS[code - len(KINDS) + 1]

    # ---- filtering and sorting -------------------------------------------------------------------------
    def set_filters(self, **filters: Any) -> None:
        """``law`` / ``modifier`` / ``dimension`` / ``outcome`` / ``kind`` (names) / ``run`` /
        ``human`` ("unlabelled" or a value) / ``text`` (in the pair id); None or "" = any."""
        self.filters = {k: v for k, v in filters.items() if v not in (None, "")}
        self.beginResetModel()
        self._apply(reset=False)
        self.endResetModel()

    def mask(self) -> np.ndarray:
        c = self._cols
        n = len(c.get("pair", ()))
        m = np.ones(n, bool)
        f = self.filters
        if not n:
            return m
        if "law" in f:
            m &= c["law"] == LAWS.index(f["law"])
        if "modifier" in f:
            m &= c["modifier"] == MODIFIERS.index(f["modifier"])
        if "dimension" in f:
            m &= c["dimension"] == DIMENSIONS.index(f["dimension"])
        if "run" in f:
            m &= c["run"].astype(str) == str(f["run"])
        if "human" in f:
            m &= c["human"] == (-1 if f["human"] == "unlabelled" else VERDICTS.index(f["human"]))
        if not self.blind and "outcome" in c:
            if "outcome" in f:
                m &= c["outcome"] == VERDICTS.index(f["outcome"])
            if "kind" in f:
                names = [self.kind_name(k) for k in range(len(KINDS) + len(REASONS) - 1)]
                m &= c["kind"] == names.index(f["kind"])
        if "text" in f:
            needle = str(f["text"]).lower()
            m &= np.char.find(np.char.lower(c["pair"].astype(str)), needle) >= 0
        return m

    def _apply(self, reset: bool = True) -> None:
        rows = np.flatnonzero(self.mask())
        key, desc = self.sort_key
        col = self._cols.get(key)
        if col is not None and not (self.blind and key in ("outcome", "kind", "detail", "conf")) and len(rows):
            vals = col[rows]
            o = np.argsort(vals.astype(str) if vals.dtype == object else vals, kind="stable")
            rows = rows[o[::-1]] if desc else rows[o]
        self.rows = rows

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        cols = self.columns
        if column >= len(cols):
            return
        self.layoutAboutToBeChanged.emit()
        # column -1: the data order (the sort indicator cleared)
        self.sort_key = (cols[column][0], order == Qt.SortOrder.DescendingOrder) if column >= 0 else ("", False)
        self._apply()
        self.layoutChanged.emit()

    # ---- Qt ---------------------------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            cols = self.columns
            return cols[section][1] if 0 <= section < len(cols) else None
        return None

    def data_row(self, view_row: int) -> int:
        return int(self.rows[view_row])

    def view_row(self, data_row: int) -> int:
        hit = np.flatnonzero(self.rows == data_row)
        return int(hit[0]) if len(hit) else -1

    def pair_ids(self) -> list[str]:
        return [str(x) for x in self._cols["pair"][self.rows]] if len(self.rows) else []

    def text(self, data_row: int, key: str) -> str:
        c = self._cols
        if key == "pair":
            return str(c["short"][data_row])
        if key == "run":
            return str(c["run"][data_row])
        if key == "seed":
            return str(int(c["seed"][data_row]))
        if key == "law":
            return LAWS[int(c["law"][data_row])]
        if key == "modifier":
            return MODIFIERS[int(c["modifier"][data_row])]
        if key == "dimension":
            return DIMENSION_TITLES[DIMENSIONS[int(c["dimension"][data_row])]]
        if key == "human":
            h = int(c["human"][data_row])
            return VERDICTS[h] if h >= 0 else ""
        if self.blind or "outcome" not in c:
            return ""
        if key == "outcome":
            return VERDICTS[int(c["outcome"][data_row])]
        if key == "kind":
            return self.kind_name(int(c["kind"][data_row]))
        if key == "conf":
            return f"{float(c['conf'][data_row]):.2f}"
        if key == "detail":
            return str(self.results.detail_text(data_row))
        return ""

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        key = self.columns[index.column()][0]
        r = int(self.rows[index.row()])
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(r, key)
        if role == Qt.ItemDataRole.ForegroundRole and key == "outcome" and not self.blind and "outcome" in self._cols:
            return QBrush(_OUTCOME_COLOUR[int(self._cols["outcome"][r])])
        if role == Qt.ItemDataRole.ToolTipRole and key == "pair":
            return str(self._cols["pair"][r])
        if role == Qt.ItemDataRole.ToolTipRole and key == "detail":
            return self.text(r, key)
        return None
