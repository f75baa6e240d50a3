"""The audit-plan panel: state a goal, see the next items to label, watch the interval narrow,
and read when the goal is reached — for any method with an automated outcome and human labels.

The panel is a view over `workstation.evaluation.plan.AuditPlan` (made, stored and reopened
through `workstation.methods.audit_sources`); it holds no truth of its own. It shows:

* **Goal** — the method, the quantity (the true rate, the automated outcome's precision or its
  agreement with humans), ± half-width, confidence, the sampling unit (single items or whole
  prompts), seed, blind and re-check fraction; "Start plan" stores a new plan with its audit set.
* **Plan** — the stored plans of the project; the goal in words; the estimate with its interval;
  labels used of the items in scope; a bar of the goal's width against the interval's; "Goal
  reached" once the stopping rule says so.
* **Interval as labels came in** — the estimate and its interval after each labelled unit, with
  the goal's width around the last estimate.
* **Estimates** — the plan's design-weighted estimate, the prediction-powered one inside strata
  and the unweighted Wilson reading of the same labels, each with what it assumes.
* **Next to label** — the plan's next targets (a drawn target without a label stays next);
  "Label next" emits `targets_ready` with them for the judging queue.

`refresh()` re-reads the labels (call it when labels change); the panel keeps no label itself.
"""

from __future__ import annotations

import html
import logging
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QProgressBar,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.base import PlanOption
from workstation.evaluation.plan import QUANTITIES, UNITS, AuditPlan, Goal, PlanStatus, PlanTarget
from workstation.types import WorkstationError

from .forms import combo_row, double_spin_box, push_button, spin_box, wrapped_label
from .layout import column, splitter
from .tables import number_item

log = logging.getLogger(__name__)

BLUE = "#0072B2"
GREEN = "#009E73"
GREY = "#777777"
ORANGE = "#E69F00"

QUANTITY_HINTS = {
    "rate": "the true rate: how often the items really are positive, as a human judges them",
    "precision": "the automated outcome's precision: how often its positives are right",
    "agreement": "the automated outcome's agreement with humans where it decides",
}
QUANTITY_NAMES = {
    "rate": "true rate (every item)",
    "precision": "precision of the automated outcome's positives",
    "agreement": "agreement with humans where it decides",
}
def _pct(x: float, digits: int = 1) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{100 * x:.{digits}f} %"


def _plan_title(p: dict[str, Any]) -> str:
    """A stored plan's line in the plan list; a goal the project does not hold as a goal (the
    plan is refused when chosen, with the reason) is not read."""
    g: dict[str, Any] = p["goal"] if isinstance(p.get("goal"), dict) else {}
    hw = g.get("half_width")
    what = (f"{g.get('quantity')} ±{100 * hw:.1f} %" if isinstance(hw, (int, float)) and not isinstance(hw, bool)
            and np.isfinite(hw) and isinstance(g.get("quantity"), str) else "goal unreadable")
    return f"#{p['plan_id']} {str(p.get('name') or '')[:80]}  ({str(p.get('method'))[:40]}, {what[:60]})"


class AuditPlanPanel(QWidget):
    """See the module docstring. ``targets_ready(list[PlanTarget])`` carries the next targets."""

    targets_ready = Signal(list)
    plan_changed = Signal(object)  # the plan now shown (AuditPlan or None)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("audit_plan_panel")
        self.project: Any = None
        self.plan: AuditPlan | None = None
        self.status: PlanStatus | None = None
        self.next_targets: list[PlanTarget] = []
        self._build()
        self._show_nothing("Open a project to plan an audit.")

    # ---- layout ---------------------------------------------------------------------------------
    def _build(self) -> None:
        goal_box = QGroupBox("Goal")
        form = QFormLayout(goal_box)
        self.method_combo = QComboBox()
        self.method_combo.setObjectName("plan_method")
        self.method_combo.currentIndexChanged.connect(self._on_method)
        form.addRow("Method", self.method_combo)
        # the options a method's plan may choose (its audit source's `plan_options`), built for
        # each method when it is first chosen: (option, its label, its combo box or spin box)
        self.option_row = QWidget()
        self._option_layout = QHBoxLayout(self.option_row)
        self._option_layout.setContentsMargins(0, 0, 0, 0)
        self._option_layout.addStretch(1)
        self._option_widgets: dict[str, list[tuple[PlanOption, QLabel, QWidget]]] = {}
        form.addRow("", self.option_row)
        # which automated outcomes a plan is made on, where the window could show others (its
        # audit source's `plan_basis`)
        self.uses_label = QLabel("")
        self.uses_label.setObjectName("plan_uses")
        self.uses_label.setWordWrap(True)
        form.addRow("", self.uses_label)
        self.quantity_combo = QComboBox()
        self.quantity_combo.setObjectName("plan_quantity")
        for key in QUANTITIES:
            self.quantity_combo.addItem(QUANTITY_NAMES.get(key, key), key)
            self.quantity_combo.setItemData(self.quantity_combo.count() - 1, QUANTITY_HINTS[key],
                                            Qt.ItemDataRole.ToolTipRole)
        form.addRow("Quantity", self.quantity_combo)
        row = QHBoxLayout()
        self.width_spin = double_spin_box(0.5, 25.0, 3.0, decimals=1, step=0.5, prefix="± ", suffix=" %",
                                          name="plan_width")
        self.conf_spin = double_spin_box(50.0, 99.9, 95.0, decimals=1, suffix=" %", name="plan_confidence")
        row.addWidget(self.width_spin)
        row.addWidget(QLabel("at"))
        row.addWidget(self.conf_spin)
        row.addStretch(1)
        form.addRow("Half-width", row)
        self.unit_combo = QComboBox()
        self.unit_combo.setObjectName("plan_unit")
        for key, text in UNITS.items():
            self.unit_combo.addItem(text, key)
        form.addRow("Label", self.unit_combo)
        # another automatic judge of the items (the method's judges: docs/judges.md): its score
        # stratifies inside the first judge's outcomes and is the prediction-powered estimate's
        self.judge_combo = QComboBox()
        self.judge_combo.setObjectName("plan_second_judge")
        self.judge_combo.setToolTip("a second automatic judge: its score forms strata inside the automated "
                                    "outcome's groups and serves as the prediction inside each stratum")
        form.addRow("Second judge", self.judge_combo)
        row2 = QHBoxLayout()
        self.seed_spin = spin_box(0, 2_000_000_000, name="plan_seed")
        self.blind_check = QCheckBox("blind")
        self.blind_check.setObjectName("plan_blind")
        self.blind_check.setChecked(True)
        self.blind_check.setToolTip("hide the automated outcome while labelling the plan's targets")
        self.recheck_spin = double_spin_box(0.0, 0.5, 0.1, step=0.05, name="plan_recheck",
                                            tip="this share of the labelled items comes back later, blind, "
                                            "to measure self-agreement")
        row2.addWidget(QLabel("seed"))
        row2.addWidget(self.seed_spin)
        row2.addWidget(self.blind_check)
        row2.addWidget(QLabel("re-checks"))
        row2.addWidget(self.recheck_spin)
        row2.addStretch(1)
        form.addRow("", row2)
        self.start_button = push_button("Start plan", self.start_plan, name="plan_start")
        self.error_label = QLabel()
        self.error_label.setObjectName("plan_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b00020;")
        form.addRow(self.start_button, self.error_label)

        status_box = QGroupBox("Plan")
        sl = QVBoxLayout(status_box)
        prow, self.plan_combo = combo_row("plan", self._on_plan_selected, name="plan_select")
        sl.addLayout(prow)
        self.goal_label = wrapped_label(name="plan_goal")
        sl.addWidget(self.goal_label)
        self.estimate_label = QLabel()
        self.estimate_label.setObjectName("plan_estimate")
        self.estimate_label.setTextFormat(Qt.TextFormat.RichText)
        self.estimate_label.setStyleSheet("font-size: 16pt;")
        sl.addWidget(self.estimate_label)
        self.labels_label = wrapped_label(name="plan_labels")
        sl.addWidget(self.labels_label)
        wrow = QHBoxLayout()
        self.width_bar = QProgressBar()
        self.width_bar.setObjectName("plan_width_bar")
        self.width_bar.setRange(0, 1000)
        self.width_bar.setFormat("")
        self.reached_label = QLabel()
        self.reached_label.setObjectName("plan_reached")
        self.reached_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.reached_label.setMinimumWidth(130)
        wrow.addWidget(self.width_bar, 1)
        wrow.addWidget(self.reached_label)
        sl.addLayout(wrow)
        self.message_label = wrapped_label(name="plan_message")
        sl.addWidget(self.message_label)

        self.plot = pg.PlotWidget()
        self.plot.setObjectName("plan_plot")
        self.plot.setBackground("w")
        item = self.plot.getPlotItem()
        item.setTitle("<span style='color:#222;font-size:10pt'>Estimate and interval as labels came in</span>")
        for side, text in (("bottom", "labels"), ("left", "rate")):
            ax = item.getAxis(side)
            ax.setPen(pg.mkPen("#444"))
            ax.setTextPen(pg.mkPen("#222"))
            ax.setLabel(text, color="#222")
            ax.enableAutoSIPrefix(False)
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setMenuEnabled(False)
        item.hideButtons()
        self.plot.setMinimumHeight(180)
        self._band_lo = self.plot.plot(pen=pg.mkPen(BLUE, width=1))
        self._band_hi = self.plot.plot(pen=pg.mkPen(BLUE, width=1))
        self._fill = pg.FillBetweenItem(self._band_lo, self._band_hi, brush=pg.mkBrush(0, 114, 178, 50))
        self.plot.addItem(self._fill)
        self._curve = self.plot.plot(pen=pg.mkPen(BLUE, width=2))
        self._goal_lo = pg.InfiniteLine(angle=0, pen=pg.mkPen(GREEN, width=1, style=Qt.PenStyle.DashLine))
        self._goal_hi = pg.InfiniteLine(angle=0, pen=pg.mkPen(GREEN, width=1, style=Qt.PenStyle.DashLine))
        self.plot.addItem(self._goal_lo)
        self.plot.addItem(self._goal_hi)

        self.table = QTableWidget(0, 5)
        self.table.setObjectName("plan_estimates")
        self.table.setHorizontalHeaderLabels(["estimate", "value", "interval", "labels", "assumes"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        # the estimate's name wraps in a column of its own width; what it assumes takes the rest
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(0, self.table.fontMetrics().horizontalAdvance("stratified by the automated outcome,") + 12)
        for c in range(1, 4):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.setWordWrap(True)

        next_box = QGroupBox("Next to label")
        nl = QVBoxLayout(next_box)
        self.next_list = QListWidget()
        self.next_list.setObjectName("plan_next")
        self.next_list.setMaximumHeight(120)
        nl.addWidget(self.next_list)
        nrow = QHBoxLayout()
        self.batch_spin = spin_box(1, 200, 10, name="plan_batch")
        self.next_button = push_button("Label next", self.request_targets,
                                       "draw the next targets (stored in the plan's audit set) and queue them",
                                       name="plan_label_next")
        nrow.addWidget(QLabel("batch"))
        nrow.addWidget(self.batch_spin)
        nrow.addStretch(1)
        nrow.addWidget(self.next_button)
        nl.addLayout(nrow)

        left = column(goal_box, status_box, next_box, margin=4)
        right = splitter(Qt.Orientation.Vertical, self.plot, self.table, sizes=(360, 220))
        split = splitter(Qt.Orientation.Horizontal, left, right, sizes=(460, 640))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)

    # ---- project ----------------------------------------------------------------------------------
    def set_project(self, project: Any) -> None:
        """Show the plans of ``project`` (None: nothing)."""
        from workstation.methods import audit_sources

        self.project = project
        self.plan = None
        self.status = None
        self.method_combo.blockSignals(True)
        self.method_combo.clear()
        if project is None:
            self.method_combo.blockSignals(False)
            self._fill_plans()
            self._show_nothing("Open a project to plan an audit.")
            return
        for name in audit_sources.available(project):
            self.method_combo.addItem(audit_sources.title_of(name), name)
        self.method_combo.blockSignals(False)
        self._on_method()
        self.start_button.setEnabled(self.method_combo.count() > 0 and not project.read_only)
        self._fill_plans()
        if self.plan is None and self.plan_combo.count() == 0:  # (a plan refused says why itself)
            self._show_nothing("No audit plan yet: state a goal and start one." if self.method_combo.count()
                               else "This project has no method data to audit yet.")

    def _on_method(self) -> None:
        from workstation.methods import audit_sources

        name = self.method_combo.currentData()
        for widgets in self._option_widgets.values():
            for _o, label, w in widgets:
                label.hide()
                w.hide()
        options: list[PlanOption] = []
        basis = ""
        if name is not None and self.project is not None:
            try:
                options = audit_sources.plan_options(self.project, str(name))
            except WorkstationError as e:
                self.error_label.setText(str(e))
            basis = audit_sources.plan_basis(self.project, str(name))
        for _o, label, w in self._show_options(str(name), options):
            label.show()
            w.show()
        self.option_row.setVisible(bool(options))
        self.judge_combo.clear()
        self.judge_combo.addItem("none", None)
        if name is not None and self.project is not None:
            try:
                for jname, title in audit_sources.judge_choices(self.project, str(name)):
                    self.judge_combo.addItem(title, jname)
                    self.judge_combo.setItemData(self.judge_combo.count() - 1, jname, Qt.ItemDataRole.ToolTipRole)
            except WorkstationError as e:
                self.error_label.setText(str(e))
        self.judge_combo.setEnabled(self.judge_combo.count() > 1)
        self.uses_label.setText(basis)
        self.uses_label.setVisible(bool(basis))

    def _show_options(self, method: str,
                      options: list[PlanOption]) -> list[tuple[PlanOption, QLabel, QWidget]]:
        """The method's option widgets, made the first time, their choices filled now."""
        known = {o.name: (o, label, w) for o, label, w in self._option_widgets.get(method, [])}
        out: list[tuple[PlanOption, QLabel, QWidget]] = []
        for o in options:
            if o.name not in known or (known[o.name][0].choices is None) != (o.choices is None):
                w: QWidget
                if o.choices is not None:
                    w = QComboBox()
                    w.setObjectName(f"plan_{o.name}")
                else:
                    w = double_spin_box(o.minimum, o.maximum, o.default, decimals=o.decimals,
                                        name=f"plan_{o.name}")
                label = QLabel(o.title)
                at = self._option_layout.count() - 1  # before the stretch
                self._option_layout.insertWidget(at, label)
                self._option_layout.insertWidget(at + 1, w)
                known[o.name] = (o, label, w)
            _old, label, w = known[o.name]
            if isinstance(w, QComboBox):
                w.clear()
                for c in o.choices or ():
                    w.addItem(c, c)
            out.append((o, label, w))
        self._option_widgets[method] = list(known.values())
        return out

    def options(self) -> dict[str, Any]:
        """The options the shown method's plan is made with (what its option widgets say)."""
        name = self.method_combo.currentData()
        out: dict[str, Any] = {}
        for o, _label, w in self._option_widgets.get(str(name), []):
            if w.isHidden():
                continue
            if isinstance(w, QComboBox):
                if w.currentData():
                    out[o.name] = w.currentData()
            elif isinstance(w, QDoubleSpinBox):
                out[o.name] = float(w.value())
        return out

    def goal(self) -> Goal:
        return Goal(str(self.quantity_combo.currentData()), self.width_spin.value() / 100.0,
                    self.conf_spin.value() / 100.0, str(self.unit_combo.currentData()))

    def _fill_plans(self, select: int | None = None) -> None:
        self.plan_combo.blockSignals(True)
        self.plan_combo.clear()
        plans = self.project.plans.all() if self.project is not None else []
        for p in plans:
            self.plan_combo.addItem(_plan_title(p), p["plan_id"])
        self.plan_combo.blockSignals(False)
        if plans:
            idx = self.plan_combo.findData(select) if select is not None else self.plan_combo.count() - 1
            self.plan_combo.setCurrentIndex(max(0, idx))
            self._on_plan_selected()

    def _on_plan_selected(self) -> None:
        from workstation.methods import audit_sources

        pid = self.plan_combo.currentData()
        if self.project is None or pid is None:
            return
        try:
            self.plan = audit_sources.open_plan(self.project, int(pid))
        except WorkstationError as e:
            self.plan = None
            self._show_nothing(str(e))
            return
        self.plan_changed.emit(self.plan)
        self._show()

    # ---- actions -------------------------------------------------------------------------------------
    def start_plan(self) -> AuditPlan | None:
        """Store a new plan from the goal form and show it."""
        from workstation.methods import audit_sources

        if self.project is None or self.method_combo.currentData() is None:
            return None
        self.error_label.setText("")
        try:
            goal = self.goal()
            goal.validate()
            method = str(self.method_combo.currentData())
            jname = self.judge_combo.currentData()
            judge = None if jname is None else audit_sources.second_judge_of(self.project, method, str(jname))
            QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)  # a second judge is computed now
            try:
                plan = audit_sources.create_plan(
                    self.project, method, goal, seed=self.seed_spin.value(), blind=self.blind_check.isChecked(),
                    recheck_fraction=self.recheck_spin.value(), second_judge=judge, **self.options())
            finally:
                QApplication.restoreOverrideCursor()
        except WorkstationError as e:
            self.error_label.setText(str(e))
            return None
        self._fill_plans(select=plan.plan_id)
        return self.plan

    def refresh(self) -> None:
        """Re-read the labels of the plan shown (labels were added elsewhere)."""
        from workstation.methods import audit_sources

        if self.project is None or self.plan is None:
            return
        audit_sources.refresh(self.project, self.plan)
        self._show()

    def request_targets(self) -> list[PlanTarget]:
        """Draw (and store) the next batch and emit `targets_ready` with it."""
        from workstation.methods import audit_sources

        if self.project is None or self.plan is None:
            return []
        try:
            targets = audit_sources.next_targets(self.project, self.plan, self.batch_spin.value())
        except WorkstationError as e:
            self.error_label.setText(str(e))
            return []
        self._show()
        self.targets_ready.emit(targets)
        return targets

    # ---- views ------------------------------------------------------------------------------------------
    def _show_nothing(self, text: str) -> None:
        self.goal_label.setText(text)
        self.estimate_label.setText("")
        self.labels_label.setText("")
        self.message_label.setText("")
        self.reached_label.setText("")
        self.reached_label.setStyleSheet("")
        self.width_bar.setValue(0)
        self.table.setRowCount(0)
        self.next_list.clear()
        self.next_button.setEnabled(False)
        self._empty_plot()

    def _empty_plot(self) -> None:
        for c in (self._curve, self._band_lo, self._band_hi):
            c.setData([], [])
        self._goal_lo.hide()
        self._goal_hi.hide()
        self.plot.getPlotItem().setRange(xRange=(0, 10), yRange=(0, 1), padding=0)

    def _show(self) -> None:
        plan = self.plan
        if plan is None:
            return
        st = plan.status()
        self.status = st
        e = st.estimate
        from workstation.evaluation.plan import blindness_note

        note = blindness_note(plan.goal, plan.table)
        self.goal_label.setText(f"<b>Goal:</b> {st.goal_text}<br><span style='color:#555'>{st.meaning}</span>"
                                + (f"<br><b>Not hidden by a blind queue:</b> {html.escape(note)}" if note else ""))
        if e.defined:
            self.estimate_label.setText(f"<b>{_pct(e.value)}</b> <span style='font-size:11pt'>[{_pct(e.low)}, "
                                        f"{_pct(e.high)}] ± {_pct(e.half_width)}</span>")
        else:
            self.estimate_label.setText("<span style='color:#777'>no estimate yet</span>")
        unit = "" if plan.goal.unit == "item" else f" ({st.units_labelled} whole {plan.table.cluster_title}s)"
        from workstation.evaluation.audit_sets import flag_text, flagged_labels
        from workstation.methods import audit_sources

        aid = plan.audit_set_id
        flag = flag_text(flagged_labels(self.project, plan.table.task, int(aid))) if aid is not None else ""
        basis = audit_sources.made_on(plan.table)
        made_on = f" · {basis}" if basis else ""
        worth = (f" (as good as {st.effective_labels:,.0f} of a uniform sample)"
                 if math.isfinite(st.effective_labels) and not st.exhausted else "")
        judge = f" · second judge {st.second_judge}" if st.second_judge else ""
        self.labels_label.setText(
            f"labels used: <b>{st.labels}</b>{unit}{worth} of {st.items} {plan.table.item_title}s in scope · "
            f"{st.strata} strata · drawn {st.units_drawn}{made_on}{judge}" + (f" · <b>{flag}</b>" if flag else ""))
        if e.defined and e.half_width > 0:
            self.width_bar.setValue(int(round(1000 * min(1.0, plan.goal.half_width / e.half_width))))
        else:
            self.width_bar.setValue(1000 if st.reached else 0)
        self.width_bar.setToolTip(f"the goal's half-width over the interval's: "
                                  f"{_pct(plan.goal.half_width)} / {_pct(e.half_width)}")
        if st.reached:
            self.reached_label.setText("Goal reached")
            self.reached_label.setStyleSheet(f"background:{GREEN}; color:white; font-weight:bold; padding:3px;")
        else:
            self.reached_label.setText("labelling…")
            self.reached_label.setStyleSheet(f"background:{ORANGE}; color:black; padding:3px;")
        self.message_label.setText(st.message)
        self._show_estimates(st)
        self._show_history(st)
        self._show_next()

    def _show_estimates(self, st: PlanStatus) -> None:
        rows = (st.estimate,) + st.alternatives
        self.table.setRowCount(len(rows))
        for r, e in enumerate(rows):
            cells = [e.title, _pct(e.value), f"[{_pct(e.low)}, {_pct(e.high)}]" if e.defined else "—",
                     str(e.labels), e.note or e.assumes]
            for c, text in enumerate(cells):
                it = number_item(text, align_right=0 < c < 4)
                it.setToolTip(e.assumes)
                self.table.setItem(r, c, it)
        self.table.resizeRowsToContents()

    def _show_history(self, st: PlanStatus) -> None:
        assert self.plan is not None
        h = self.plan.history()
        if not h:
            self._empty_plot()
            return
        a = np.asarray(h, np.float64)
        self._curve.setData(a[:, 0], a[:, 1])
        self._band_lo.setData(a[:, 0], a[:, 2])
        self._band_hi.setData(a[:, 0], a[:, 3])
        last = a[-1, 1]
        self._goal_lo.setValue(last - self.plan.goal.half_width)
        self._goal_hi.setValue(last + self.plan.goal.half_width)
        self._goal_lo.show()
        self._goal_hi.show()
        # the first labels' intervals are wide: frame the later part and the goal's band
        tail = a[len(a) // 5:]
        lo = min(float(tail[:, 2].min()), last - self.plan.goal.half_width)
        hi = max(float(tail[:, 3].max()), last + self.plan.goal.half_width)
        pad = 0.1 * max(hi - lo, 0.02)
        self.plot.getPlotItem().setRange(xRange=(float(a[0, 0]), float(a[-1, 0])),
                                         yRange=(max(0.0, lo - pad), min(1.0, hi + pad)), padding=0)

    def _show_next(self) -> None:
        assert self.plan is not None
        self.next_list.clear()
        pending = self.plan.pending()
        self.next_targets = pending
        for t in pending[:50]:
            self.next_list.addItem(", ".join(t.targets) + ("  (re-check)" if t.recheck else ""))
        if not pending:
            self.next_list.addItem("nothing left: every item of the plan left the project" if self.plan.stale else
                                   "nothing waiting: “Label next” draws the next targets"
                                   if not self.status or not self.status.reached else
                                   "goal reached: nothing more to label")
        ro = bool(getattr(self.project, "read_only", False))
        self.next_button.setEnabled(not ro and not self.plan.stale
                                    and not (self.status is not None and self.status.exhausted))
