"""The calibration panel: checker parameters on sliders, live metrics, risk–coverage with a
draggable τ, the confusion matrix at τ, a grid search, and Apply (a new config version).

Data flow: slider → `AppState.set_config(config.replace(...))` (the state re-evaluates every
verdict and emits `verdicts_changed`) → this panel asks the core (`metrics.summarize`,
`calibration.risk_coverage`, `calibration.apply_tau`, `audit.confusion`) and shows the answers.
While a slider handle or the τ line is dragged, evaluation is throttled to one every
`THROTTLE_MS`, with a final one on release, so dragging stays smooth on large projects. When a
live update takes longer than `LIVE_BUDGET_MS` on the window's thread (a busy machine, a very
large project), the rest of the drag is evaluated off it (`SpatialSession.preview_config`: the
handle keeps moving, at most one evaluation runs, the values passed meanwhile are skipped but the
latest), the status bar says `COARSE_NOTE` for as long as the drag lasts, and the release (of the
handle, or of a key held down on a slider) evaluates the value let go exactly, shows it and clears
the note. A drag whose updates
keep within the budget is evaluated value by value on the window's thread, and nothing is said.

τ is the audit's operating point: the stored verdicts are the checker's without it; at τ a
PASS / FAIL with confidence below τ counts as UNDECIDABLE. The Live-verdicts table shows every
number both ways ("live" and "at τ"), and the confusion matrix, risk–coverage and the readout
are at τ. The 95 % intervals of the live numbers, of the operating point and the risk band come
from the core (`metrics.headline`, `calibration.operating_point`, `calibration.risk_band`: the
same functions, resamples and seed as the report) once the sliders have rested for
`INTERVAL_MS`; until then the values show with "…" below them.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.intervals import Estimate
from workstation.methods.spatial.audit import confusion
from workstation.methods.spatial.calibration import (
    Weights,
    apply_tau,
    objective,
    operating_point,
    risk_band,
    risk_coverage,
)
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.data import primary_score_floor

from ....widgets.tables import display_only, number_item, set_cell
from .confusion_view import ConfusionView
from .deltas import DELTA_ROWS, METRIC_ROWS, DeltaTable, Summary, at_tau_values, estimate_text, summarize_verdicts
from .grid_dialog import GridSearchDialog
from .guarantee_box import GuaranteeBox
from .plots import (
    BLUE,
    GREEN,
    ORANGE,
    PURPLE,
    TAU_GRID,
    VERMILION,
    EmptyState,
    RiskCoveragePlot,
    TauPlot,
    coverage_curve,
)
from .sliders import PARAMS, ParamSliders
from workstation.methods.spatial.store import SpatialStore

log = logging.getLogger(__name__)

THROTTLE_MS = 40
INTERVAL_MS = 150
# a live update (the checker and every view) that holds the window's thread longer than this:
# the rest of the drag is evaluated off it
LIVE_BUDGET_MS = 100
# the status bar while a drag's live figures are coarser (said again every NOTE_REPEAT_S while the
# drag lasts: the window shows a line for a few seconds)
COARSE_NOTE = "Live figures coarser while dragging (the machine is busy) — exact on release"
NOTE_REPEAT_S = 3.0
APPLY_TIP = "save these parameters as a new checker-config version with its verdicts"

NO_PROJECT = "Open a project to calibrate the checker."
NO_SAMPLES = "This project has no samples yet: import a run or generate images first."
NO_LABELS = ("Label an audit set to see risk–coverage.\n\n"
             "The risk–coverage curve, the confusion matrix and the grid search compare the checker "
             "with human labels; none exist in this project yet.")


_HELPER: ThreadPoolExecutor | None = None
_INTERVALS: ThreadPoolExecutor | None = None


def _helper() -> ThreadPoolExecutor:
    """One thread for work that overlaps the GUI thread's on a slider move (the coverage
    curves): a move waits for it, so nothing slow ever queues on it."""
    global _HELPER
    if _HELPER is None:
        _HELPER = ThreadPoolExecutor(1, thread_name_prefix="calibration")
    return _HELPER


def _intervals_helper() -> ThreadPoolExecutor:
    """One thread for the live numbers' bootstrap intervals (seconds on a large project), which
    nothing on the window's thread waits for: a move during one goes on at once."""
    global _INTERVALS
    if _INTERVALS is None:
        _INTERVALS = ThreadPoolExecutor(1, thread_name_prefix="calibration-intervals")
    return _INTERVALS


def _set(t: QTableWidget, r: int, c: int, text: str, color: QColor | None = None) -> None:
    """Show `text` in a cell, reusing its item, in `color` when given."""
    it = set_cell(t, r, c, text)
    if color is not None:
        it.setForeground(QBrush(color))


def _table(rows: int, cols: int, headers: list[str], name: str, lines: int = 1) -> QTableWidget:
    t = QTableWidget(rows, cols)
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(headers)
    display_only(t)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    # one line of text a row: the height ResizeToContents gives such a row, measured once and
    # fixed (that mode measures the whole row again on every cell's change, and 35 cells change
    # on a slider step)
    vh = t.verticalHeader()
    vh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    t.setRowCount(rows + 1)
    t.setVerticalHeaderItem(rows, QTableWidgetItem("Wg_|"))
    t.setItem(rows, 0, number_item("\n".join(["0.0000"] + ["[0.000, 0.000]"] * (lines - 1))))
    t.resizeRowsToContents()
    height = max(22, t.rowHeight(rows))
    t.setRowCount(rows)
    vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    vh.setDefaultSectionSize(height)
    for r in range(rows):
        t.setRowHeight(r, height)
    return t


def _fit_height(t: QTableWidget) -> None:
    """Every row in view, no scroller of its own (the column scrolls): the header's height is its
    size hint, since a table not yet shown has laid out no header."""
    rows = sum(t.rowHeight(r) for r in range(t.rowCount()))
    header = max(t.horizontalHeader().height(), t.horizontalHeader().sizeHint().height())
    h = header + rows + 2 * t.frameWidth() + 2
    t.setFixedHeight(h)


def _fmt(x: float, kind: str = "f") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    if kind == "d":
        return str(int(x))
    if kind == "%":
        return f"{100.0 * x:.1f}%"
    return f"{x:.4f}"


class CalibrationPanel(QWidget):
    def __init__(self, state: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("calibration_panel")
        self.state = state
        self.session_start_id: int | None = None  # config version the session started from
        self._summaries: dict[Any, Summary] = {}  # stored version id → summary (cleared on reload)
        self._live: Summary | None = None
        self._curve_key: Any = None  # config minus τ of the drawn curves
        self._audit_rc = None  # RiskCoverage on the audited samples (dense τ grid)
        self._pending = False
        self._coarse = False  # this drag's live updates are evaluated off the window's thread
        self._noted_at = 0.0  # when the status bar was last told COARSE_NOTE
        self._grid_dialog: GridSearchDialog | None = None
        self.evaluations = 0  # how many times this panel asked the state to re-evaluate
        self.point: dict[str, float] | None = None  # the operating point at the current τ
        self._baseline_seen: Any = None
        self._stored_hash: dict[int, str] = {}  # config version → content hash
        self._live_hash: tuple[CheckerConfig, str] | None = None

        self._throttle = QTimer(self)
        self._throttle.setSingleShot(True)
        self._throttle.setInterval(THROTTLE_MS)
        self._throttle.timeout.connect(self._on_throttle)
        # intervals once the sliders rest (the bootstrap is not redone on every step of a drag)
        self._interval_timer = QTimer(self)
        self._interval_timer.setSingleShot(True)
        self._interval_timer.setInterval(INTERVAL_MS)
        self._interval_timer.timeout.connect(self._start_intervals)
        self._interval_poll = QTimer(self)  # looks for the helper thread's answer
        self._interval_poll.setInterval(30)
        self._interval_poll.timeout.connect(self._poll_intervals)
        self._hl_future: Any = None  # the helper thread's future of the headline
        self._pending_key: Any = None
        self.headline: Any = None  # metrics.Headline of the shown verdicts and τ (None while pending)
        self._headline_key: Any = None
        self.op_estimates: dict[str, Estimate] | None = None  # the operating point with its intervals
        self.band: tuple[np.ndarray, np.ndarray] | None = None  # the risk band over TAU_GRID

        self._build()

        state.project_changed.connect(self._on_project)
        state.dataset_changed.connect(self._on_dataset)
        state.config_changed.connect(self._on_config)
        state.verdicts_changed.connect(self._on_verdicts)
        state.labels_changed.connect(self._on_labels)
        self._on_project()

    # =========================================================================================
    # layout
    # =========================================================================================
    def _build(self) -> None:
        # ---- left column: parameters, metrics, deltas
        params_box = QGroupBox("Checker parameters")
        pl = QVBoxLayout(params_box)
        self.sliders = ParamSliders(PARAMS)
        pl.addWidget(self.sliders)
        btns = QHBoxLayout()
        self.reset_button = QPushButton("Reset")
        self.reset_button.setObjectName("calib_reset")
        self.reset_button.setToolTip("back to the stored active version")
        self.grid_button = QPushButton("Grid search…")
        self.grid_button.setObjectName("calib_grid")
        btns.addWidget(self.reset_button)
        btns.addWidget(self.grid_button)
        btns.addStretch(1)
        pl.addLayout(btns)
        apply_row = QHBoxLayout()
        self.note_edit = QLineEdit()
        self.note_edit.setObjectName("calib_note")
        self.note_edit.setPlaceholderText("note for the new version (optional)")
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("calib_apply")
        self.apply_button.setToolTip(APPLY_TIP)
        apply_row.addWidget(self.note_edit, 1)
        apply_row.addWidget(self.apply_button)
        pl.addLayout(apply_row)
        self.version_label = QLabel()
        self.version_label.setObjectName("calib_version")
        self.version_label.setWordWrap(True)
        pl.addWidget(self.version_label)

        metrics_box = QGroupBox("Live verdicts")
        ml = QVBoxLayout(metrics_box)
        self.metrics_table = _table(len(METRIC_ROWS), 4, ["live", "at τ", "active", "Δ"], "calib_metrics", lines=2)
        self.metrics_table.setVerticalHeaderLabels([r.label for r in METRIC_ROWS])
        hh = self.metrics_table.horizontalHeader()
        for c, width in ((2, 58), (3, 62)):  # the stored version and Δ: one short number each
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.Fixed)
            hh.resizeSection(c, width)
        self.metrics_table.setToolTip(
            "live: the checker's verdicts under the sliders (the verdicts Apply stores). at τ: the same with every "
            "PASS / FAIL below confidence τ counted as UNDECIDABLE — the audit's operating point. Below each "
            "rate its 95 % interval (resampling prompts; prompt-level rates: Wilson over prompts). "
            "active / Δ: the stored active version, and live − active.")
        _fit_height(self.metrics_table)
        ml.addWidget(self.metrics_table)
        self.metrics_note = QLabel("")
        self.metrics_note.setObjectName("calib_metrics_note")
        self.metrics_note.setWordWrap(True)
        self.metrics_note.setProperty("dim", True)
        ml.addWidget(self.metrics_note)
        self.abstention_table = _table(0, 2, ["samples", "% of all"], "calib_abstention")
        ml.addWidget(QLabel("Abstention by reason (live)"))
        ml.addWidget(self.abstention_table)

        delta_box = QGroupBox("Calibrated − uncalibrated")
        dl = QVBoxLayout(delta_box)
        before_row = QHBoxLayout()
        before_row.addWidget(QLabel("before:"))
        self.before_combo = QComboBox()
        self.before_combo.setObjectName("calib_before")
        self.before_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.before_combo.setMinimumContentsLength(16)
        before_row.addWidget(self.before_combo, 1)
        dl.addLayout(before_row)
        self.delta_table = DeltaTable()
        _fit_height(self.delta_table)
        dl.addWidget(self.delta_table)

        # J's choice beside the one whose risk is guaranteed (Learn then Test), over the same grid
        self.guarantee_box = GuaranteeBox(
            self.state, grids=lambda: self._grid_dialog.grids() if self._grid_dialog is not None else None,
            weights=self.weights)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(4, 4, 4, 4)
        ll.addWidget(params_box)
        ll.addWidget(metrics_box)
        ll.addWidget(delta_box)
        ll.addWidget(self.guarantee_box)
        ll.addStretch(1)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setMinimumWidth(540)
        left_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        # ---- right column: audit plots (or an empty state), coverage plot
        self.readout = QLabel()
        self.readout.setObjectName("calib_readout")
        self.readout.setTextFormat(Qt.TextFormat.RichText)
        self.readout.setWordWrap(True)
        self.readout.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.tau_plot = TauPlot("Audited samples over τ", "rate")
        self.tau_plot.add_curve("risk", "risk", VERMILION)
        self.tau_plot.add_curve("coverage", "coverage", BLUE)
        self.tau_plot.add_curve("fpr", "FPR_PASS", PURPLE, dash=True)
        self.rc_plot = RiskCoveragePlot()
        self.confusion_view = ConfusionView()
        conf_box = QWidget()
        cl = QVBoxLayout(conf_box)
        cl.setContentsMargins(0, 0, 0, 0)
        self.confusion_title = QLabel()
        cl.addWidget(self.confusion_title)
        cl.addWidget(self.confusion_view, 1)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.rc_plot)
        bottom.addWidget(conf_box)
        bottom.setSizes([1, 1])
        audit = QWidget()
        al = QVBoxLayout(audit)
        al.setContentsMargins(0, 0, 0, 0)
        al.addWidget(self.readout)
        audit_split = QSplitter(Qt.Orientation.Vertical)
        audit_split.addWidget(self.tau_plot)
        audit_split.addWidget(bottom)
        audit_split.setSizes([400, 300])
        al.addWidget(audit_split, 1)
        self.audit_area = EmptyState(audit)

        self.cov_plot = TauPlot("All samples: coverage and PASS | decided over τ", "rate")
        self.cov_plot.add_curve("coverage", "coverage", BLUE)
        self.cov_plot.add_curve("pass_cond", "PASS | decided", GREEN)
        self.cov_plot.add_curve("pass_rate", "pass rate", ORANGE, dash=True)
        self.cov_plot.setXLink(self.tau_plot)

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.audit_area)
        right.addWidget(self.cov_plot)
        right.setSizes([640, 260])

        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(left_scroll)
        main.addWidget(right)
        main.setStretchFactor(0, 0)
        main.setStretchFactor(1, 1)
        main.setSizes([580, 900])
        self.body = EmptyState(main)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.body)

        # ---- wiring
        self.sliders.moved.connect(lambda _n, _v: self._request(final=False))
        self.sliders.committed.connect(lambda _n, _v: self._request(final=True))
        for plot in (self.tau_plot, self.cov_plot):
            plot.tau_dragged.connect(self._on_tau_dragged)
            plot.tau_finished.connect(self._on_tau_finished)
        self.reset_button.clicked.connect(self.reset)
        self.grid_button.clicked.connect(self.open_grid_search)
        self.apply_button.clicked.connect(self.apply)
        self.note_edit.returnPressed.connect(self.apply)
        self.before_combo.currentIndexChanged.connect(lambda _i: self._refresh_deltas())
        self.guarantee_box.chosen.connect(self.load_params)

    # =========================================================================================
    # live evaluation (throttled while dragging)
    # =========================================================================================
    def slider_config(self) -> CheckerConfig:
        return self.state.config.replace(**self.sliders.values())

    def _request(self, final: bool) -> None:
        """The sliders moved: evaluate now, or (while dragging) at most every THROTTLE_MS."""
        if self.state.dataset is None:
            return
        self._pending = True
        self._sync_tau_lines(self.sliders["tau"].value())
        if final:
            self._throttle.stop()
            self._flush(final=True)
        elif not self._throttle.isActive():
            self._flush()  # leading edge: the first motion answers at once
            self._throttle.start()

    def _on_throttle(self) -> None:
        if self._pending:
            self._flush()
            self._throttle.start()

    def _flush(self, final: bool = False) -> None:
        """Evaluate the sliders' config: on the window's thread, or, for a live update of a drag
        whose updates are too slow there, off it (`_coarse`)."""
        self._pending = False
        cfg = self.slider_config()
        st = self.state
        if final:  # the value let go: exact, now
            coarse, self._coarse = self._coarse, False
            if cfg != st.config or st.previewing:
                self.evaluations += 1
                st.set_config(cfg)
            if coarse:
                st.message.emit("")  # the exact figures are shown: the note goes
            return
        if cfg == st.config and not st.previewing:
            return
        self.evaluations += 1
        if self._coarse:
            st.preview_config(cfg)
            return
        t0 = time.perf_counter()
        st.set_config(cfg)
        took = (time.perf_counter() - t0) * 1000
        if took > LIVE_BUDGET_MS:
            log.info("a live update took %.0f ms: the rest of the drag is evaluated off the window's thread", took)
            self._coarse = True
            self._say_coarse()

    def _say_coarse(self) -> None:
        self._noted_at = time.monotonic()
        self.state.message.emit(COARSE_NOTE)

    @property
    def coarse(self) -> bool:
        """The drag under way shows coarser live figures (`COARSE_NOTE`)."""
        return self._coarse

    def _on_tau_dragged(self, tau: float) -> None:
        self.sliders["tau"].set_value(round(tau, 4))
        self._request(final=False)

    def _on_tau_finished(self, tau: float) -> None:
        self.sliders["tau"].set_value(round(tau, 4))
        self._request(final=True)

    def _sync_tau_lines(self, tau: float) -> None:
        self.tau_plot.set_tau(tau)
        self.cov_plot.set_tau(tau)

    # =========================================================================================
    # state events
    # =========================================================================================
    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if getattr(self, "_stale", False):
            self._on_verdicts()

    def _on_project(self) -> None:
        st = self.state
        self._stored_hash.clear()
        self.session_start_id = st.config_id if st.project is not None else None
        self._summaries.clear()
        self._on_dataset()

    def _on_dataset(self) -> None:
        st = self.state
        self._summaries.clear()
        self._curve_key = None
        if st.project is None or st.dataset is None or st.dataset.n == 0:
            # the closed (or emptied) project's summaries go with it
            self._live = None
            self._baseline_seen = None
            self._audit_rc = None
            self.point = None
        if st.project is None:
            self.body.show_message(NO_PROJECT)
            self._close_grid_dialog()
            return
        if st.dataset is None or st.dataset.n == 0:
            self.body.show_message(NO_SAMPLES)
            return
        self.body.show_content()
        self._show_score_floor()
        self._fill_before_combo()
        self._on_config()
        self._on_verdicts()

    def _show_score_floor(self) -> None:
        """Mark on the t_det slider the lowest primary detection score the data recorded: an
        imported run recorded from 0.5 up makes any t_det below 0.5 change nothing."""
        floor = primary_score_floor(self.state.dataset)
        self.sliders["t_det"].set_floor(
            floor, f"Detections were recorded from score {floor:.2f} up (the lowest primary detection "
                   "score in the data)" if floor is not None else "")

    def _on_config(self) -> None:
        st = self.state
        if st.project is None:
            return
        vals = {s.name: float(getattr(st.config, s.name)) for s in PARAMS}
        # keep the handle the user is dragging where it is
        if not self.sliders.any_dragging():
            self.sliders.set_values(vals)
            self._sync_tau_lines(float(st.config.tau))
        if self._baseline_key() != self._baseline_seen and self._live is not None:
            self._baseline_seen = self._baseline_key()  # a version was applied elsewhere
            self._fill_before_combo()
            self._refresh_metrics()
            self._refresh_deltas()
        self._update_version_label()

    def _on_labels(self, _sid: str = "") -> None:
        if self.state.dataset is not None and self.state.dataset.n:
            self._curve_key = None
            self._refresh_audit()

    def _on_verdicts(self) -> None:
        st = self.state
        if st.project is None or st.dataset is None or st.dataset.n == 0 or st.verdicts is None:
            return
        if self._coarse and time.monotonic() - self._noted_at > NOTE_REPEAT_S:
            self._say_coarse()  # a long drag: the note stays up until the release
        if not self.isVisible():  # another tab is shown: catch up when this one is
            self._stale = True
            return
        self._stale = False
        key = st.config.replace(tau=0.0, name="", extra=())
        curves_stale = key != self._curve_key
        if curves_stale:
            # the coverage curves (two sorts, numpy without the GIL) on a helper thread while
            # this one summarises the verdicts and fills the tables
            curves = _helper().submit(coverage_curve, st.verdicts.verdict, st.verdicts.conf, TAU_GRID)
            try:
                self._live = summarize_verdicts(st.dataset, st.verdicts)
                self._refresh_metrics()
            finally:
                cov, pc = curves.result()
            self._show_coverage(cov, pc)
        else:  # τ moved: the same verdicts, other numbers at τ
            self._refresh_metrics()
        self._refresh_audit(curves=curves_stale)
        self._curve_key = key
        self._refresh_deltas()
        self._update_version_label()

    # =========================================================================================
    # views
    # =========================================================================================
    def _baseline_key(self) -> Any:
        """What identifies the applied verdicts (the same set whole or kept as AppliedVerdicts)."""
        st = self.state
        return None if st.baseline is None else (st.config_id, st.baseline.config, id(st.dataset))

    def _active_summary(self) -> Summary | None:
        st = self.state
        if st.baseline is None:
            return None
        key = ("active", st.config_id)
        s = self._summaries.get(key)
        if s is None or s.source is not st.baseline:
            s = summarize_verdicts(st.dataset, st.baseline)
            self._summaries[key] = s
        return s

    def _refresh_metrics(self) -> None:
        live = self._live
        if live is None:
            return
        act = self._active_summary()
        self._baseline_seen = self._baseline_key()
        cid = self.state.config_id
        tau = float(self.state.config.tau)
        heads = ["live", f"at τ = {tau:.2f}", f"v{cid}" if cid is not None else "defaults", "Δ"]
        shown_heads = [self.metrics_table.horizontalHeaderItem(c) for c in range(4)]
        if [h.text() if h is not None else "" for h in shown_heads] != heads:
            self.metrics_table.setHorizontalHeaderLabels(heads)
        hl = self.headline if self._headline_key == self._interval_key() else None
        v = self.state.verdicts
        quick = at_tau_values(v.verdict, v.conf, tau) if v is not None else {}
        for r, row in enumerate(METRIC_ROWS):
            lv = live.get(row.key)
            av = act.get(row.key) if act is not None else float("nan")
            if hl is not None:
                _set(self.metrics_table, r, 0, estimate_text(hl.plain[row.key], row.kind))
                _set(self.metrics_table, r, 1, estimate_text(hl.at_tau[row.key], row.kind))
            else:  # the intervals follow once the sliders rest
                pending = "" if row.kind == "d" else "\n…"
                _set(self.metrics_table, r, 0, _fmt(lv, row.kind) + pending)
                qv = quick.get(row.key)
                _set(self.metrics_table, r, 1, (_fmt(qv, row.kind) + pending) if qv is not None else "…")
            _set(self.metrics_table, r, 2, _fmt(av, row.kind))
            d = lv - av if act is not None else float("nan")
            _set(self.metrics_table, r, 3, _delta_text(d, row.kind))
        self._interval_timer.start()
        self.metrics_note.setText(
            f"τ = {tau:.2f} is the audit's operating point: at τ, a PASS / FAIL below that confidence counts as "
            "UNDECIDABLE (the confusion matrix and risk–coverage are at τ too). The stored verdicts are the live "
            "ones, without τ. 95 % intervals under each rate (prompts resampled); * fewer than 10 samples or "
            "prompts behind it.")
        reasons = live.abstention
        t = self.abstention_table
        names = [r for r, _c, _p in reasons]
        heads = (t.verticalHeaderItem(i) for i in range(t.rowCount()))
        shown = [h.text() if h is not None else "" for h in heads]
        if shown != names:
            t.setRowCount(len(reasons))
            t.setVerticalHeaderLabels(names)
            _fit_height(t)
        for i, (_r, count, pct) in enumerate(reasons):
            _set(t, i, 0, str(count))
            _set(t, i, 1, f"{100.0 * pct:.1f}%")

    def _interval_key(self) -> Any:
        st = self.state
        return (id(st.verdicts), float(st.config.tau), id(st.dataset), int(len(self.audited_rows()))
                if st.human is not None else 0)

    def intervals_ready(self) -> bool:
        """The Live-verdicts table shows the intervals of the verdicts and τ now shown."""
        return self.headline is not None and self._headline_key == self._interval_key()

    def flush_intervals(self) -> None:
        """Compute the intervals of the live numbers, the operating point and the risk band now
        and show them (a test's shortcut; the panel itself starts them `INTERVAL_MS` after the
        sliders rest, the headline on its helper thread: `_start_intervals`)."""
        from workstation.methods.spatial.metrics import headline

        self._interval_timer.stop()
        self._interval_poll.stop()
        st = self.state
        if st.dataset is None or st.dataset.n == 0 or st.verdicts is None:
            return
        key = self._interval_key()
        if key != self._headline_key:
            self._adopt_headline(key, headline(st.dataset, st.verdicts, tau=float(st.config.tau)))
        self._audit_intervals()

    def _start_intervals(self) -> None:
        """The sliders rested: the headline's bootstrap on the helper thread (2,000 resamples over
        thousands of prompts take a moment), the audit's (hundreds of samples) here."""
        from workstation.methods.spatial.metrics import headline

        st = self.state
        if st.dataset is None or st.dataset.n == 0 or st.verdicts is None:
            return
        key = self._interval_key()
        if key != self._headline_key and key != self._pending_key:
            if self._hl_future is not None:
                self._hl_future.cancel()  # not started yet: only the latest verdicts' are worth computing
            self._pending_key = key
            self._hl_future = _intervals_helper().submit(headline, st.dataset, st.verdicts, tau=float(st.config.tau))
            self._interval_poll.start()
        self._audit_intervals()

    def _poll_intervals(self) -> None:
        f = self._hl_future
        if f is None or not f.done():
            return
        self._interval_poll.stop()
        key, self._hl_future, self._pending_key = self._pending_key, None, None
        try:
            hl = f.result()
        except Exception:  # noqa: BLE001 - the values stay without their intervals; said in the log
            log.exception("the intervals of the live verdicts could not be computed")
            return
        if key == self._interval_key():  # still the verdicts and τ shown
            self._adopt_headline(key, hl)

    def _adopt_headline(self, key: Any, hl: Any) -> None:
        self.headline = hl
        self._headline_key = key
        self._refresh_metrics()
        self._interval_timer.stop()

    def _audit_intervals(self) -> None:
        st = self.state
        rows = self.audited_rows()
        if len(rows) and self._audit_rc is not None and st.verdicts is not None:
            v = st.verdicts
            verdict, conf, human = v.verdict[rows], v.conf[rows], st.human[rows]
            prompts = np.asarray(st.dataset.samples.prompt_id, dtype=object)[rows]
            self.op_estimates = operating_point(verdict, conf, human, prompts, float(st.config.tau))
            if self.band is None:
                self.band = risk_band(verdict, conf, human, prompts, self._audit_rc.tau)
                self.rc_plot.set_band(self._audit_rc.coverage, self.band[0], self.band[1])
            self._show_readout()

    def _show_coverage(self, cov: np.ndarray, pc: np.ndarray) -> None:
        self.cov_plot.set_curve("coverage", TAU_GRID, cov)
        self.cov_plot.set_curve("pass_cond", TAU_GRID, pc)
        self.cov_plot.set_curve("pass_rate", TAU_GRID, np.nan_to_num(pc) * cov)

    def audited_rows(self) -> np.ndarray:
        h = self.state.human
        return np.flatnonzero((h >= 0) & (h <= 2))

    def _refresh_audit(self, curves: bool = True) -> None:
        st = self.state
        rows = self.audited_rows()
        if st.verdicts is None or len(rows) == 0:
            self.audit_area.show_message(NO_LABELS)
            self.grid_button.setToolTip("label an audit set first: the grid search needs human labels")
            return
        self.grid_button.setToolTip("search margin, t_det and τ for the lowest objective J")
        self.audit_area.show_content()
        v = st.verdicts
        verdict, conf, human = v.verdict[rows], v.conf[rows], st.human[rows]
        if curves or self._audit_rc is None:
            rc = risk_coverage(verdict, conf, human, taus=TAU_GRID)
            self._audit_rc = rc
            self.band = None  # recomputed once the sliders rest
            self.rc_plot.set_band(None, None, None)
            self.tau_plot.set_curve("risk", rc.tau, rc.risk)
            self.tau_plot.set_curve("coverage", rc.tau, rc.coverage)
            self.tau_plot.set_curve("fpr", rc.tau, rc.fpr_pass)
            self.rc_plot.set_curve(rc.coverage, rc.risk)
        tau = float(st.config.tau)
        pt = risk_coverage(verdict, conf, human, taus=[tau])
        self.point = {
            "tau": tau, "fpr_pass": float(pt.fpr_pass[0]), "risk": float(pt.risk[0]),
            "coverage": float(pt.coverage[0]), "n_audited": int(pt.n_audited),
            "n_covered": int(pt.n_covered[0]), "n_evaluated": int(pt.n_evaluated[0]),
            "n_pass_covered": int(pt.n_pass_covered[0]),
            "j": float(objective(pt.fpr_pass, pt.risk, pt.coverage, self.weights())[0]),
        }
        self.op_estimates = None  # its intervals follow once the sliders rest
        self.rc_plot.set_point(self.point["coverage"], self.point["risk"], tau)
        self._show_readout()
        self._interval_timer.start()
        m = confusion(apply_tau(verdict, conf, tau), human)
        self.confusion_view.set_matrix(m)
        self.confusion_title.setText(f"Checker at τ = {tau:.2f} vs human ({int(m.sum())} audited)")

    def _show_readout(self) -> None:
        p = self.point
        if p is None:
            return
        op = self.op_estimates if self.op_estimates is not None and \
            abs(self.op_estimates["coverage"].value - p["coverage"]) < 1e-12 else None

        def rate(key: str, n_key: str) -> str:
            v = p[key]
            if v != v:
                return f"<b>—</b> (undefined: n {p[n_key]})"
            text = f"<b>{v:.3f}</b>"
            if op is not None and op[key].has_interval:
                e = op[key]
                text += f" [{e.lo:.3f}, {e.hi:.3f}]" + (f" (n {e.n}: {e.small_note()})" if e.small_note() else "")
            return text

        cov = rate("coverage", "n_audited")
        self.readout.setText(
            f"<b>τ = {p['tau']:.3f}</b> (operating point) &nbsp;·&nbsp; FPR_PASS {rate('fpr_pass', 'n_pass_covered')}"
            f" &nbsp;·&nbsp; risk {rate('risk', 'n_evaluated')} &nbsp;·&nbsp; coverage {cov} "
            f"({p['n_covered']}/{p['n_audited']}) &nbsp;·&nbsp; J <b>{p['j']:.3f}</b>"
            f"<span style='color:#666'> &nbsp; over {p['n_audited']} audited samples"
            + ("; 95 % intervals resampling prompts" if op is not None else "") + "</span>")

    def weights(self) -> Weights:
        if self._grid_dialog is not None:
            try:
                return self._grid_dialog.weights()
            except Exception:  # noqa: BLE001 - an invalid weight falls back to the defaults
                pass
        return Weights()

    # ---- before / after ------------------------------------------------------------------------
    def _fill_before_combo(self) -> None:
        st = self.state
        combo = self.before_combo
        keep = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        start = self.session_start_id
        start_name = f"v{start}" if start is not None else "defaults"
        combo.addItem(f"session start ({start_name})", ("start", start))
        parent = None
        versions = SpatialStore(st.project).configs() if st.project is not None else []
        for c in versions:
            if c["config_id"] == st.config_id:
                parent = c["parent_id"]
        if parent is not None:
            combo.addItem(f"previous version (v{parent})", ("version", parent))
        for c in versions:
            note = f" — {c['note']}" if c["note"] else ""
            combo.addItem(f"v{c['config_id']}{note}", ("version", c["config_id"]))
        idx = combo.findData(keep) if keep is not None else 0
        combo.setCurrentIndex(max(0, idx))
        combo.blockSignals(False)

    def _version_summary(self, cid: int | None) -> Summary:
        st = self.state
        key = ("version", cid)
        s = self._summaries.get(key)
        if s is None:
            from workstation.methods.spatial.checker import evaluate

            cfg = SpatialStore(st.project).get_config(cid) if cid is not None else CheckerConfig()
            s = summarize_verdicts(st.dataset, evaluate(st.dataset, cfg))
            self._summaries[key] = s
        return s

    def before_id(self) -> int | None:
        data = self.before_combo.currentData()
        return None if data is None else data[1]

    def _refresh_deltas(self) -> None:
        st = self.state
        if st.dataset is None or st.dataset.n == 0 or self._live is None:
            return
        bid = self.before_id()
        before = self._version_summary(bid)
        applied = self._is_applied()
        # on two lines: the left column is narrow and a cut "1 (applie" reads badly
        after_name = f"v{st.config_id}\n(applied)" if applied else "live"
        before_name = f"v{bid}" if bid is not None else "defaults"
        self.delta_table.set_summaries(before_name, before, after_name, self._live)
        _fit_height(self.delta_table)  # a header on two lines is taller: every row stays in view

    def _is_applied(self) -> bool:
        """The live parameters are those of the stored active version."""
        st = self.state
        if st.config_id is None or st.project is None:
            return False
        h = self._stored_hash.get(st.config_id)
        if h is None:
            try:
                h = SpatialStore(st.project).get_config(st.config_id).content_hash()
            except Exception:  # noqa: BLE001 - a version that cannot be read is not applied
                return False
            self._stored_hash[st.config_id] = h
        if self._live_hash is None or self._live_hash[0] is not st.config:
            self._live_hash = (st.config, st.config.content_hash())
        return h == self._live_hash[1]

    def _update_version_label(self) -> None:
        st = self.state
        if st.project is None:
            return
        applied = self._is_applied()
        cid = st.config_id
        if cid is None:
            txt = "No stored checker config: defaults are live. Apply saves them as v1."
        elif applied:
            txt = f"Live parameters are the stored active version v{cid} ({st.config.content_hash()})."
        else:
            txt = f"<b>Not applied:</b> live parameters differ from the active version v{cid}."
            if getattr(st, "draft_restored", False):
                txt += " (kept from the last session; kept again if you quit without applying)"
            else:
                txt += " Quitting keeps them as a draft for next time."
        self.version_label.setText(txt)
        ro = bool(getattr(st.project, "read_only", False))
        self.apply_button.setEnabled(not applied and not ro)
        self.apply_button.setToolTip("the project is open read-only" if ro else
                                     APPLY_TIP)

    # =========================================================================================
    # actions
    # =========================================================================================
    def reset(self) -> None:
        st = self.state
        if st.project is None:
            return
        _cid, cfg = SpatialStore(st.project).active_config()
        self.sliders.set_values({s.name: float(getattr(cfg, s.name)) for s in PARAMS})
        st.set_config(cfg)

    def load_params(self, params: dict[str, float]) -> None:
        """Put parameters (e.g. a grid-search row) into the sliders and evaluate them."""
        self.sliders.set_values(params)
        self._sync_tau_lines(self.sliders["tau"].value())
        self._throttle.stop()
        cfg = self.state.config.replace(**{k: float(v) for k, v in params.items()})
        self.evaluations += 1
        self.state.set_config(cfg)

    def apply(self) -> int | None:
        st = self.state
        if st.project is None or st.dataset is None or not self.apply_button.isEnabled():
            return None
        self._throttle.stop()
        self._flush(final=True)
        note = self.note_edit.text().strip() or "calibration panel"
        cid = st.apply_config(note)
        self.note_edit.clear()
        self._fill_before_combo()
        self._update_version_label()
        self._refresh_metrics()
        self._refresh_deltas()
        return cid

    def open_grid_search(self) -> GridSearchDialog | None:
        if self.state.project is None:
            return None
        if self._grid_dialog is None:
            dlg = GridSearchDialog(self.state, self)
            dlg.chosen.connect(self.load_params)
            for sp in dlg.weight_spins.values():
                sp.valueChanged.connect(lambda _v: self._refresh_audit(curves=False))
            self._grid_dialog = dlg
        self._grid_dialog.show()
        self._grid_dialog.raise_()
        return self._grid_dialog

    @property
    def grid_dialog(self) -> GridSearchDialog | None:
        return self._grid_dialog

    def _close_grid_dialog(self) -> None:
        if self._grid_dialog is not None:
            self._grid_dialog.cancel()
            self._grid_dialog.close()


def _delta_text(d: float, kind: str) -> str:
    if d is None or not np.isfinite(d):
        return "—"
    if kind == "d":
        return f"{int(d):+d}"
    return f"{d:+.4f}"


__all__ = ["CalibrationPanel", "DELTA_ROWS", "METRIC_ROWS"]
