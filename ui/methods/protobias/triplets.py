"""The triplet view: a filterable, sortable list of triplets, and the selected one in detail —
T above I_corr and I_adv side by side (linked zoom), the knob and the extra element named, each
metric's two scores as bars with the failure marked.

Blind (the checkbox): the two images are shown as "Image A" / "Image B" in the seeded order of
the rating mode, and the knob, the extra element, the roles and the metrics are hidden.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QScrollArea,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ui.widgets.image_pane import ImagePane
from ui.widgets.forms import wrapped_label
from ui.widgets.layout import FlowLayout, splitter
from workstation.methods.protobias.labels import blind_sides

from .bars import BarRow, ScoreBars
from .triplet_model import ALL, COLUMNS, OUTCOMES, TripletFilter, TripletTableModel

BLIND_SEED = 0
BLIND_HIDDEN = ("knob", "M(corr)", "M(adv)", "margin", "outcome")


def knob_sentence(d: Any, i: int) -> str:
    """"knob count: T says 2, the prototypical image's prompt 3 · extra element: rock"."""
    knob = str(d.knob[i])
    parts = [f"knob <b>{knob}</b>"]
    kv, ka = html.escape(str(d.knob_value[i])), html.escape(str(d.knob_value_adv[i]))
    if kv:
        parts[0] += f": T says <b>{kv}</b>" + (f", I_adv's prompt <b>{ka}</b>" if ka else "")
    if str(d.extra_element[i]):
        parts.append(f"extra element: <b>{html.escape(str(d.extra_element[i]))}</b>")
    parts.append(f"domain {d.domain[i]}")
    parts.append(f"run {d.run_id[i]}" + (f", seed {int(d.seed[i])}" if int(d.seed[i]) else ""))
    return " · ".join(parts)


class TripletPage(QWidget):
    current_changed = Signal(int)  # data row shown in the detail (-1: none)

    def __init__(self, session: Any, images: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setObjectName("protobiasTriplets")
        self.model = TripletTableModel(self)
        self.current = -1
        self._syncing = False

        # filter bar
        self.metric: QComboBox = QComboBox()  # type: ignore[assignment]  # shadows QPaintDevice.metric()
        self.metric.setObjectName("pbMetric")
        self.metric.setMinimumContentsLength(18)
        self.domain = QComboBox()
        self.knob = QComboBox()
        self.outcome = QComboBox()
        for o in OUTCOMES:
            self.outcome.addItem(o, o)
        self.margin_min = QDoubleSpinBox()
        self.margin_max = QDoubleSpinBox()
        for sb, v in ((self.margin_min, -1.0), (self.margin_max, 1.0)):
            sb.setRange(-1.0, 1.0)
            sb.setSingleStep(0.05)
            sb.setDecimals(2)
            sb.setValue(v)
            sb.setToolTip("rescaled margin M(corr) − M(adv) of the selected metric (> 0: ranks I_corr higher)")
        self.search = QLineEdit()
        self.search.setPlaceholderText("search T or id")
        self.count = QLabel("")
        self.count.setObjectName("dim")
        bar = FlowLayout(spacing=6)  # the filters wrap onto more lines in a narrow pane
        self.metric_widgets: list[QWidget] = []  # hidden when blind
        for label, w in (("metric", self.metric), ("domain", self.domain), ("knob", self.knob),
                         ("outcome", self.outcome), ("margin ≥", self.margin_min), ("≤", self.margin_max)):
            lab = QLabel(label)
            lab.setObjectName("dim")
            pair = QWidget()
            pl = QHBoxLayout(pair)
            pl.setContentsMargins(0, 0, 0, 0)
            pl.addWidget(lab)
            pl.addWidget(w)
            bar.addWidget(pair)
            if w is not self.domain:
                self.metric_widgets += [pair, lab, w]
        bar2 = QHBoxLayout()
        bar2.addWidget(self.search, 1)
        bar2.addWidget(self.count)

        self.table = QTableView()
        self.table.setObjectName("pbTripletTable")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(True)
        # project order until a click
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.model.sort_column = -1
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        hh = self.table.horizontalHeader()
        hh.setStretchLastSection(False)
        for c, width in enumerate((120, 90, 80, 90, 260, 66, 66, 62, 80)):
            self.table.setColumnWidth(c, width)
        # T takes the room left
        hh.setSectionResizeMode(COLUMNS.index("text T"), QHeaderView.ResizeMode.Stretch)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(4, 4, 4, 4)
        ll.addLayout(bar)
        ll.addLayout(bar2)
        ll.addWidget(self.table, 1)

        # detail
        self.text = wrapped_label(name="pbText", selectable=True)
        f = self.text.font()
        f.setPointSizeF(f.pointSizeF() * 1.3)
        self.text.setFont(f)
        self.meta = wrapped_label(name="pbMeta")
        self.prompts = wrapped_label(name="dim", selectable=True)
        self.blind = QCheckBox("blind (hide roles, knob, metrics)")
        self.blind.setObjectName("pbBlind")
        self.left_pane = ImagePane(images)
        self.right_pane = ImagePane(images)
        self.left_pane.link(self.right_pane)
        panes = QHBoxLayout()
        panes.addWidget(self.left_pane, 1)
        panes.addWidget(self.right_pane, 1)
        self.bars = ScoreBars()
        self.bars_scroll = QScrollArea()
        self.bars_scroll.setWidgetResizable(True)
        self.bars_scroll.setWidget(self.bars)
        self.bars_scroll.setMaximumHeight(230)
        self.bars_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        top = QHBoxLayout()
        top.addWidget(self.text, 1)
        top.addWidget(self.blind, 0, Qt.AlignmentFlag.AlignTop)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(4, 4, 4, 4)
        rl.addLayout(top)
        rl.addWidget(self.meta)
        rl.addWidget(self.prompts)
        rl.addLayout(panes, 1)
        rl.addWidget(self.bars_scroll)

        split = splitter(Qt.Orientation.Horizontal, left, right, stretch=(4, 5))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)

        for w in (self.metric, self.domain, self.knob, self.outcome):
            w.currentIndexChanged.connect(self._filter_changed)
        for sb in (self.margin_min, self.margin_max):
            sb.valueChanged.connect(self._filter_changed)
        self.search.textChanged.connect(self._filter_changed)
        self.blind.toggled.connect(self._blind_changed)
        self.model.filtered.connect(lambda n, total: self.count.setText(f"{n} of {total} triplets"))
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._row_selected(cur.row()))
        self.model.modelReset.connect(self._after_reset)
        session.results_changed.connect(self.refresh)
        self.refresh()

    # ---- data ---------------------------------------------------------------------------------
    def refresh(self) -> None:
        s = self.session
        d, r = s.data, s.results
        self._syncing = True
        try:
            keep_metric = self.metric.currentData() or ""
            self.metric.clear()
            for m in (r.metrics if r is not None else ()):
                self.metric.addItem(m, m)
            if keep_metric and self.metric.findData(keep_metric) >= 0:
                self.metric.setCurrentIndex(self.metric.findData(keep_metric))
            for combo, values, what in ((self.domain, () if d is None else d.domain, "all domains"),
                                        (self.knob, () if d is None else d.knob, "all knobs")):
                keep = combo.currentData() or ""
                combo.clear()
                combo.addItem(what, ALL)
                for v in sorted({str(x) for x in values}):
                    combo.addItem(v, v)
                if keep and combo.findData(keep) >= 0:
                    combo.setCurrentIndex(combo.findData(keep))
        finally:
            self._syncing = False
        self.model.set_data(d, r)
        self._filter_changed()

    def current_filter(self) -> TripletFilter:
        return TripletFilter(metric=self.metric.currentData() or "", domain=self.domain.currentData() or "",
                             knob=self.knob.currentData() or "", outcome=self.outcome.currentData() or "all",
                             margin_min=self.margin_min.value(), margin_max=self.margin_max.value(),
                             text=self.search.text().strip())

    def _filter_changed(self, *_: Any) -> None:
        if self._syncing:
            return
        self.model.set_filter(self.current_filter())

    def apply_filter(self, metric: str = "", domain: str = "", knob: str = "", outcome: str = "all") -> None:
        """Show these triplets (the metric table's cell click); "all" / "" lift a part of the filter."""
        self._syncing = True
        try:
            for combo, v in ((self.metric, metric), (self.domain, "" if domain == "all" else domain),
                             (self.knob, "" if knob == "all" else knob), (self.outcome, outcome or "all")):
                i = combo.findData(v)
                if i >= 0:
                    combo.setCurrentIndex(i)
            self.margin_min.setValue(-1.0)
            self.margin_max.setValue(1.0)
            self.search.clear()
        finally:
            self._syncing = False
        self._filter_changed()

    def _after_reset(self) -> None:
        if not len(self.model.rows):
            self.show_row(-1)
            return
        v = self.model.view_row_of(self.current) if self.current >= 0 else -1
        self.table.selectRow(max(v, 0))
        if v < 0:
            self._row_selected(0)
        else:
            self.show_row(self.current)

    def _blind_changed(self, on: bool) -> None:
        """Blind: the list keeps the triplet, run, domain and T; knob, scores and outcome go."""
        for c, name in enumerate(COLUMNS):
            if name in BLIND_HIDDEN:
                self.table.setColumnHidden(c, on)
        for w in self.metric_widgets:
            w.setVisible(not on)
        if on:
            self.apply_filter(metric=self.metric.currentData() or "", domain=self.domain.currentData() or "")
        self.show_row(self.current)

    def _row_selected(self, view_row: int) -> None:
        self.show_row(self.model.data_row(view_row))

    # ---- detail -------------------------------------------------------------------------------
    def bar_rows(self, i: int) -> list[BarRow]:
        r = self.session.results
        if r is None or i < 0:
            return []
        return [BarRow(m, float(r.sc[i, j]), float(r.pa[i, j]), float(r.score_corr[i, j]), float(r.score_adv[i, j]),
                       bool(r.failed[i, j]), bool(r.tie[i, j]), bool(r.valid[i, j])) for j, m in enumerate(r.metrics)]

    def show_row(self, i: int) -> None:
        d = self.session.data
        self.current = i
        if d is None or i < 0 or i >= len(d):
            self.text.setText("no triplet" if d is None or not len(d) else "no triplet matches the filter")
            self.meta.setText("")
            self.prompts.setText("")
            self.left_pane.show_image(None, caption="")
            self.right_pane.show_image(None, caption="")
            self.bars.set_rows([])
            self.current_changed.emit(-1)
            return
        self.text.setText(f"T: {html.escape(str(d.text[i]))}")
        blind = self.blind.isChecked()
        if blind:
            sides = blind_sides(str(d.item_id[i]), BLIND_SEED)
            self.meta.setText("blind: the roles, the knob and the metrics are hidden")
            self.prompts.setText("")
            for pane, role, name in ((self.left_pane, sides[0], "Image A"), (self.right_pane, sides[1], "Image B")):
                pane.show_image(d.image_path(i, role), caption=name)
            self.bars.set_rows([])
            self.bars_scroll.setVisible(False)
        else:
            self.meta.setText(knob_sentence(d, i))
            pc, pa = html.escape(str(d.prompt_corr[i])), html.escape(str(d.prompt_adv[i]))
            self.prompts.setText(f"generated from — I_corr: “{pc}” · I_adv: “{pa}”")
            self.left_pane.show_image(d.image_path(i, "corr"), caption="<b>I_corr</b> · correct, non-prototypical")
            self.right_pane.show_image(d.image_path(i, "adv"), caption="<b>I_adv</b> · prototypical, knob violated")
            self.bars.set_rows(self.bar_rows(i))
            self.bars_scroll.setVisible(True)
            self.bars_scroll.setMinimumHeight(min(self.bars.sizeHint().height() + 4, 230))
        self.current_changed.emit(i)

    def shown_rows(self) -> np.ndarray:
        return self.model.rows.copy()
