"""The metric table page: failure rate and margins per metric × domain with their intervals, the
humans beside, a bar chart (pyqtgraph) of the failure rates; a click on a cell shows those
triplets in the triplet view (`show_triplets(metric, domain, outcome)`)."""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui.widgets.forms import push_button, wrapped_label
from ui.widgets.kept_selection import KeptSelection
from ui.widgets.label_selection import LabelsLine
from ui.widgets.layout import row, splitter
from workstation.evaluation.intervals import SMALL_N
from workstation.evaluation.selection import LabelSelection
from workstation.methods.protobias.data import ProtoBiasData, SelectedRatings, default_for, selected_ratings
from workstation.methods.protobias.labels import FIDELITY_SCHEME
from workstation.methods.protobias.tables import RESCALING_RULE, audit_tables, published_rate

COLUMNS = (("metric", "metric"), ("domain", "domain"), ("n", "n"), ("failure_rate", "failure rate [95% CI]"),
           ("sc", "SC"), ("pa", "PA"), ("delta", "Δ"), ("correct_margin", "correct margin"),
           ("incorrect_margin", "incorrect margin"), ("agreement", "agrees with humans"))
#: which triplets a click on a column shows
OUTCOME_OF_COLUMN = {"failure_rate": "failed", "incorrect_margin": "failed", "correct_margin": "correct"}
DOMAINS = ("animals", "objects", "demography", "all")
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#555555")
FAIL_TINT = "#D55E00"


def _num(v: Any, digits: int = 3) -> str:
    return "–" if not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _ci(r: dict[str, Any], k: str) -> str:
    v = r.get(k)
    if not isinstance(v, float) or math.isnan(v):
        return "–"
    lo, hi = r.get(f"{k}_lo"), r.get(f"{k}_hi")
    n = r.get("n")
    small = f" (n {n}: fewer than {SMALL_N})" if isinstance(n, int) and 0 < n < SMALL_N else ""
    if isinstance(lo, float) and not math.isnan(lo):
        return f"{v:.3f} [{lo:.2f}, {hi:.2f}]" + small
    return f"{v:.3f}" + small


def _kappa(r: dict[str, Any], k: str) -> str:
    """κ with its interval, "undefined" when there is none to compute."""
    v = r.get(k)
    if not isinstance(v, float) or math.isnan(v):
        return "undefined"
    lo, hi = r.get(f"{k}_lo"), r.get(f"{k}_hi")
    if isinstance(lo, float) and isinstance(hi, float) and not (math.isnan(lo) or math.isnan(hi)):
        return f"{v:.2f} [{lo:.2f}, {hi:.2f}]"
    return f"{v:.2f}"


def published_line() -> str:
    from workstation.methods.protobias.published import PUBLISHED_FAILURE_RATES

    parts = [f"{m} {'>' if rel == '>' else ''}{rate:.1%}" for m, _s, rate, rel in PUBLISHED_FAILURE_RATES]
    return ("Published failure rates (seed Fig. 2, all domains): " + ", ".join(parts)
            + ". CLIPScore, PickScore and VQA-style scores scored here are marked ◆ on the chart.")


class FailureChart(pg.PlotWidget):
    """Failure rate per domain (x) and metric (bars), bootstrap intervals, published rates (◆)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        item = self.getPlotItem()
        item.setTitle("<span style='color:#222;font-size:10pt'>failure rate: M(T, I_adv) ≥ M(T, I_corr)</span>")
        for side in ("bottom", "left"):
            ax = item.getAxis(side)
            ax.setPen(pg.mkPen("#444"))
            ax.setTextPen(pg.mkPen("#222"))
        item.getAxis("left").setLabel("failure rate", color="#222")
        item.showGrid(y=True, alpha=0.15)
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setMouseEnabled(x=False, y=False)
        self.legend = item.addLegend(offset=(-6, 6), labelTextColor="#222", brush=pg.mkBrush(255, 255, 255, 220),
                                     pen=pg.mkPen("#bbb"))
        self.bars: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # metric -> (x, heights), for tests

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        item = self.getPlotItem()
        item.clear()
        self.legend.clear()
        self.bars = {}
        metrics = list(dict.fromkeys(str(r["metric"]) for r in rows))
        present = {str(r["domain"]) for r in rows if r.get("n")}
        domains = [d for d in DOMAINS if d in present]
        by = {(str(r["metric"]), str(r["domain"])): r for r in rows}
        width = 0.8 / max(1, len(metrics))
        x0 = np.arange(len(domains), dtype=np.float64)
        for j, m in enumerate(metrics):
            col = PALETTE[j % len(PALETTE)]
            x = x0 - 0.4 + width * (j + 0.5)
            h = np.array([float(by.get((m, d), {}).get("failure_rate", math.nan)) for d in domains])
            lo = np.array([float(by.get((m, d), {}).get("failure_rate_lo", math.nan)) for d in domains])
            hi = np.array([float(by.get((m, d), {}).get("failure_rate_hi", math.nan)) for d in domains])
            ok = np.isfinite(h)
            bg = pg.BarGraphItem(x=x[ok], height=h[ok], width=width * 0.9, brush=pg.mkBrush(col), pen=pg.mkPen(None))
            item.addItem(bg)
            self.legend.addItem(bg, m)
            self.bars[m] = (x[ok], h[ok])
            e = ok & np.isfinite(lo) & np.isfinite(hi)
            if e.any():
                item.addItem(pg.ErrorBarItem(x=x[e], y=h[e], top=hi[e] - h[e], bottom=h[e] - lo[e], beam=width * 0.3,
                                             pen=pg.mkPen("#222", width=1)))
            pub = published_rate(m)
            if pub is not None and "all" in domains:
                k = domains.index("all")
                sp = pg.ScatterPlotItem([x[k]], [pub[0]], symbol="d", size=10, brush=pg.mkBrush("#111"), pen=None)
                item.addItem(sp)
                self.legend.addItem(sp, f"published {m.partition('@')[0]} {'>' if pub[1] == '>' else ''}{pub[0]:.0%}")
        half = pg.InfiniteLine(pos=0.5, angle=0, pen=pg.mkPen("#999", style=Qt.PenStyle.DotLine))
        item.addItem(half)
        item.getAxis("bottom").setTicks([[(float(i), d) for i, d in enumerate(domains)]])
        item.setYRange(0.0, 1.0, padding=0.02)
        item.setXRange(-0.6, max(0.6, len(domains) - 0.4), padding=0)


def _compute(generation: int, data: Any, results: Any, labels: SelectedRatings
             ) -> tuple[int, dict[str, list[dict[str, Any]]]]:
    return generation, audit_tables(data, results, labels)


class MetricTablePage(QWidget):
    """The tables (bootstrap intervals over every metric × domain, × knob, humans, κ) are computed
    on a worker thread (`superqt.create_worker`) so that a large project never freezes the window;
    ``ready`` is True and ``tables_ready`` is emitted when the shown tables are the session's. The
    human tables use the ratings of the task's label selection: the line above them says which,
    its Labels… button chooses them (kept with the project); the agreement between annotators
    says its own labels (the selection's annotators, audit sets and re-checks, no consensus)."""

    show_triplets = Signal(str, str, str)  # metric, domain ("all" = every domain), outcome
    tables_ready = Signal()

    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setObjectName("protobiasMetrics")
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.rows: list[dict[str, Any]] = []
        self.stale = False
        self.ready = False
        self._generation = 0
        self._worker: Any = None
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.rule = wrapped_label(RESCALING_RULE + " Click a cell to see those triplets.", "dim")
        self.refresh_button = push_button("Reload scores and ratings", lambda: self.session.reload(),
                                          "Read the project's scores and every annotator's ratings again")
        self.save_button = push_button("Store as evaluation version", self._apply,
                                       "Store this audit's per-triplet results as a numbered evaluation version")
        head = row(self.summary, self.refresh_button, self.save_button, stretch=(1,))

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("pbMetricTable")
        self.table.setHorizontalHeaderLabels([h for _k, h in COLUMNS])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.cellClicked.connect(self._clicked)

        self.humans = QTableWidget(0, 6)
        self.humans.setObjectName("pbHumanTable")
        self.humans.setHorizontalHeaderLabels(["humans", "n", "SC", "PA", "Δ", "prefer I_corr / tie / I_adv"])
        self.humans.verticalHeader().setVisible(False)
        self.humans.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.humans.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.humans.horizontalHeader().setStretchLastSection(True)
        self.kappa = QLabel("")
        self.kappa.setWordWrap(True)
        self.kappa.setObjectName("pbKappa")
        self.labels = KeptSelection(FIDELITY_SCHEME.task, lambda: self.session.project,
                                    lambda text: self.session.app.message.emit(text),
                                    default=lambda: default_for(self.session.config))
        self._selected: SelectedRatings | None = None
        self.labels_line = LabelsLine(lambda: self.selected().resolved, lambda: self.session.project,
                                      FIDELITY_SCHEME.task, self.set_label_selection, lambda: self.labels.selection)
        self.published = QLabel(published_line())
        self.published.setWordWrap(True)
        self.published.setObjectName("dim")
        self.chart = FailureChart()
        self.chart.setMinimumHeight(240)

        bottom = QWidget()
        bl = QHBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        # the labels line, the humans, the agreement and the published rates: a column that scrolls on a
        # small screen rather than lay its parts over one another
        column = QWidget()
        hum = QVBoxLayout(column)
        hum.setContentsMargins(0, 0, 0, 0)
        hum.addWidget(self.labels_line)
        hum.addWidget(self.humans)
        hum.addWidget(self.kappa)
        hum.addWidget(self.published)
        hum.addStretch(1)
        self.human_column = QScrollArea()
        self.human_column.setObjectName("pbHumanColumn")
        self.human_column.setWidgetResizable(True)
        self.human_column.setFrameShape(QFrame.Shape.NoFrame)
        self.human_column.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.human_column.setWidget(column)
        bl.addWidget(self.human_column, 2)
        bl.addWidget(self.chart, 3)
        split = splitter(Qt.Orientation.Vertical, self.table, bottom, stretch=(3, 2))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.addLayout(head)
        lay.addWidget(self.rule)
        lay.addWidget(split, 1)
        session.results_changed.connect(self.refresh)
        session.data_changed.connect(self.labels.forget)  # another project (or the same, read again)
        self.refresh()

    # ---- which labels count ----------------------------------------------------------------------
    def selected(self) -> SelectedRatings:
        """The ratings of the label selection over the session's triplets (`data.selected_ratings`)."""
        if self._selected is None:
            d = self.session.data
            self._selected = selected_ratings(d if d is not None else ProtoBiasData.empty(), self.labels.selection)
        return self._selected

    def set_label_selection(self, selection: LabelSelection) -> None:
        """Use (and keep with the project) another label selection: the tables are computed again."""
        self.labels.set(selection)
        self.refresh()

    def _apply(self) -> None:
        try:
            eid = self.session.apply("from the ProtoBias metric table")
        except Exception as e:  # noqa: BLE001 - said in the status line
            self.session.app.message.emit(f"not stored: {e}")
            return
        self.summary.setText(self.summary.text() + f"  ·  stored as v{eid}")

    def showEvent(self, e: Any) -> None:
        super().showEvent(e)
        if self.stale:
            self.session.reload()

    def mark_stale(self) -> None:
        """New ratings were written: read them again when the page is next shown."""
        self.stale = True
        if self.isVisible():
            self.session.reload()

    def refresh(self) -> None:
        """Recompute the tables of the session's current data and results (on a worker thread)."""
        from superqt.utils import create_worker

        self.stale = False
        self.ready = False
        self._generation += 1
        self._selected = None
        self.labels_line.refresh()
        s = self.session
        if s.data is None or s.results is None:
            self._adopt({}, self._generation)
            return
        self.summary.setText("computing the tables and their bootstrap intervals…")
        worker = create_worker(_compute, self._generation, s.data, s.results, self.selected(), _start_thread=False)
        # bound methods of this widget: the connections go with it if the page is closed first
        worker.returned.connect(self._returned)
        worker.errored.connect(self._failed)
        self._worker = worker
        worker.start()

    def _returned(self, result: tuple[int, dict[str, list[dict[str, Any]]]]) -> None:
        self._adopt(result[1], result[0])

    def _failed(self, error: BaseException) -> None:
        self.summary.setText(f"the tables could not be computed: {error}")
        self.ready = True
        self.tables_ready.emit()

    def _adopt(self, tables: dict[str, list[dict[str, Any]]], generation: int) -> None:
        if generation != self._generation:
            return  # a newer refresh is under way
        s = self.session
        if not tables:
            self.tables, self.rows = {}, []
            self.summary.setText(s.error or "No ProtoBias triplets in this project.")
        else:
            self.tables = tables
            self.rows = list(self.tables["failure_by_domain"])
            sm = self.tables["summary"][0]
            ids = ", ".join(html.escape(m["metric"]) + (f" ({html.escape(m['model'])})" if m["model"] else "")
                            for m in self.tables["metrics"]) or "none yet — run a score job"
            self.summary.setText(f"<b>{sm['triplets']}</b> triplets ({sm['incomplete_triplets']} incomplete) · "
                                 f"<b>{sm['metrics']}</b> metric(s): {ids} · <b>{sm['rated_images']}</b> images "
                                 f"rated by {sm['annotators']} annotator(s)")
        self._fill_table()
        self._fill_humans()
        self.chart.set_rows(self.rows)
        self.ready = True
        self.tables_ready.emit()

    def _fill_table(self) -> None:
        agree = {(r["metric"], r["domain"]): r for r in self.tables.get("human_agreement", [])}
        t = self.table
        t.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            a = agree.get((r["metric"], r["domain"]), {})
            vals = {"metric": r["metric"], "domain": r["domain"], "n": f"{r['n']}" + (
                        f" (+{r['n_missing']} unscored)" if r.get("n_missing") else ""),
                    "failure_rate": _ci(r, "failure_rate"), "sc": _num(r["sc"]), "pa": _num(r["pa"]),
                    "delta": _num(r["delta"]), "correct_margin": _ci(r, "correct_margin"),
                    "incorrect_margin": _ci(r, "incorrect_margin"),
                    "agreement": (_ci(a, "agreement") + ("" if a["n"] < SMALL_N else f" (n={a['n']})")
                                  if a.get("n") else "–")}
            for c, (k, _h) in enumerate(COLUMNS):
                it = QTableWidgetItem(vals[k])
                it.setData(Qt.ItemDataRole.UserRole,
                           (r["metric"], r["domain"], OUTCOME_OF_COLUMN.get(k, "all")))
                if k in ("n", "failure_rate", "sc", "pa", "delta", "correct_margin", "incorrect_margin", "agreement"):
                    it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if k == "failure_rate" and isinstance(r["failure_rate"], float) and r["failure_rate"] >= 0.5:
                    it.setForeground(QBrush(QColor(FAIL_TINT)))
                if r["domain"] == "all":
                    f = it.font()
                    f.setBold(True)
                    it.setFont(f)
                it.setToolTip("click: show these triplets" + (
                    " (the failures)" if OUTCOME_OF_COLUMN.get(k) == "failed" else
                    " (ranked correctly)" if OUTCOME_OF_COLUMN.get(k) == "correct" else ""))
                t.setItem(i, c, it)

    def _fill_humans(self) -> None:
        rows = self.tables.get("human", [])
        self.humans.setRowCount(len(rows))
        for i, r in enumerate(rows):
            vals = [r["domain"], str(r["n"]), _ci(r, "sc"), _ci(r, "pa"), _ci(r, "delta"),
                    f"{r['n_prefer_corr']} / {r['n_tie']} / {r['n_prefer_adv']}"]
            for c, v in enumerate(vals):
                self.humans.setItem(i, c, QTableWidgetItem(v))
        h = self.humans.horizontalHeader().height() + sum(self.humans.rowHeight(i) for i in range(len(rows)))
        # room for the horizontal scroll bar a narrow pane shows, so that no row hides under it
        bar = self.humans.horizontalScrollBar().sizeHint().height()
        self.humans.setFixedHeight(h + bar + 2 * self.humans.frameWidth() + 2)
        ks = self.tables.get("annotator_kappa", [])
        sm = (self.tables.get("summary") or [{}])[0]
        which = f"<i>{html.escape(str(sm['agreement_labels']))}</i><br>" if sm.get("agreement_labels") else ""
        if ks:
            self.kappa.setText(which + "Annotator agreement (quadratic weighted κ on the 1–4 scale, 95 % interval): "
                               + "; ".join(
                f"{html.escape(k['annotator_a'])} × {html.escape(k['annotator_b'])}: κ_w {_kappa(k, 'kappa_w')} "
                f"(κ {_kappa(k, 'kappa')}, {k['n']} images"
                + (f" — <b>{html.escape(k['note'])}</b>" if k.get("note") else "") + ")" for k in ks)
                + " — published: 0.60–0.84.")
        else:
            self.kappa.setText(which + "Annotator agreement: needs two annotators who rated the same images.")

    def _clicked(self, row: int, col: int) -> None:
        it = self.table.item(row, col)
        if it is None:
            return
        metric, domain, outcome = it.data(Qt.ItemDataRole.UserRole)
        self.show_triplets.emit(str(metric), str(domain), str(outcome))
