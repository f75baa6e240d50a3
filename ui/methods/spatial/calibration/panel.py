"""The calibration panel: checker parameters on sliders, live metrics, risk–coverage with a
draggable τ, the confusion matrix at τ, a grid search, and Apply (a new config version). It
composes its parts (`params_box.ParamsBox`, `live_verdicts.LiveVerdictsBox`,
`deltas.DeltasBox`, `guarantee_box.GuaranteeBox`, `audit_view.AuditPlots`), follows the state
for them, and turns the sliders' moves into evaluations.

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
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget
from superqt.utils import qthrottled

from workstation.methods.spatial.calibration import Weights
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.data import primary_score_floor

from ....widgets.layout import column, splitter
from .audit_view import AuditPlots
from .deltas import DELTA_ROWS, METRIC_ROWS, DeltasBox, Summary, summarize_verdicts
from .grid_dialog import GridSearchDialog
from .guarantee_box import GuaranteeBox
from .live_verdicts import LiveVerdictsBox
from .params_box import ParamsBox
from .plots import TAU_GRID, EmptyState, coverage_curve
from .sliders import PARAMS
from workstation.methods.spatial.store import TASK, SpatialStore

from ....widgets.label_selection import LabelsLine

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

NO_PROJECT = "Open a project to calibrate the checker."
NO_SAMPLES = "This project has no samples yet: import a run or generate images first."


_HELPER: ThreadPoolExecutor | None = None


def _helper() -> ThreadPoolExecutor:
    """One thread for work that overlaps the GUI thread's on a slider move (the coverage
    curves): a move waits for it, so nothing slow ever queues on it."""
    global _HELPER
    if _HELPER is None:
        _HELPER = ThreadPoolExecutor(1, thread_name_prefix="calibration")
    return _HELPER


class CalibrationPanel(QWidget):
    def __init__(self, state: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("calibration_panel")
        self.state = state
        self._active: dict[Any, Summary] = {}  # the active version's summary (cleared on reload)
        self._live: Summary | None = None
        self._curve_key: Any = None  # config minus τ of the drawn curves
        self._coarse = False  # this drag's live updates are evaluated off the window's thread
        self._noted_at = 0.0  # when the status bar was last told COARSE_NOTE
        self._grid_dialog: GridSearchDialog | None = None
        self.evaluations = 0  # how many times this panel asked the state to re-evaluate
        self._baseline_seen: Any = None

        # a drag's live evaluation: at once, then at most one every THROTTLE_MS (of the latest value)
        self._live_update = qthrottled(self._flush, timeout=THROTTLE_MS, leading=True, parent=self)
        # intervals once the sliders rest (the bootstrap is not redone on every step of a drag)
        self._interval_timer = QTimer(self)
        self._interval_timer.setSingleShot(True)
        self._interval_timer.setInterval(INTERVAL_MS)
        self._interval_timer.timeout.connect(self._start_intervals)

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
        # ---- left column: parameters, metrics, deltas, the guaranteed choice
        self.params_box = ParamsBox(self.state, reset=self.reset, grid_search=self.open_grid_search, apply=self.apply)
        self.live_box = LiveVerdictsBox(self.state, self._interval_key)
        self.deltas_box = DeltasBox(self.state, self._refresh_deltas)
        # J's choice beside the one whose risk is guaranteed (Learn then Test), over the same grid
        self.guarantee_box = GuaranteeBox(
            self.state, grids=lambda: self._grid_dialog.grids() if self._grid_dialog is not None else None,
            weights=self.weights)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(column(self.params_box, self.live_box, self.deltas_box, self.guarantee_box,
                                     margin=4))
        left_scroll.setMinimumWidth(540)
        left_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        # ---- right column: audit plots (or an empty state), coverage plot
        self.plots = AuditPlots(self.state, self.weights)

        split = splitter(Qt.Orientation.Horizontal, left_scroll, self.plots, stretch=(0, 1), sizes=(580, 900))
        # which labels every figure of the tab uses: one line above them, one place to choose
        st = self.state
        self.labels_line = LabelsLine(lambda: st.selected.resolved, lambda: st.project, TASK,
                                      st.set_label_selection, lambda: st.label_selection)
        main = QWidget()
        box = QVBoxLayout(main)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self.labels_line)
        box.addWidget(split, 1)
        self.body = EmptyState(main)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.body)

        # ---- wiring
        self.params_box.sliders.moved.connect(lambda _n, _v: self._request(final=False))
        self.params_box.sliders.committed.connect(lambda _n, _v: self._request(final=True))
        for plot in (self.plots.tau_plot, self.plots.cov_plot):
            plot.tau_dragged.connect(self._on_tau_dragged)
            plot.tau_finished.connect(self._on_tau_finished)
        self.guarantee_box.chosen.connect(self.load_params)
        self.live_box.headline_ready.connect(self._adopt_headline)

    # =========================================================================================
    # live evaluation (throttled while dragging)
    # =========================================================================================
    def slider_config(self) -> CheckerConfig:
        return self.state.config.replace(**self.params_box.sliders.values())

    def _request(self, final: bool) -> None:
        """The sliders moved: evaluate now, or (while dragging) at most every THROTTLE_MS."""
        if self.state.dataset is None:
            return
        self.plots.set_tau(self.params_box.sliders["tau"].value())
        if final:
            self._stop_live()
            self._flush(final=True)
        else:
            self._live_update()  # the first motion answers at once, the rest at most every THROTTLE_MS

    def _stop_live(self) -> None:
        """No live evaluation is left to come (and the next motion answers at once)."""
        self._live_update.cancel()
        self._live_update.flush(restart_timer=False)

    def _flush(self, final: bool = False) -> None:
        """Evaluate the sliders' config: on the window's thread, or, for a live update of a drag
        whose updates are too slow there, off it (`_coarse`)."""
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
        self.params_box.sliders["tau"].set_value(round(tau, 4))
        self._request(final=False)

    def _on_tau_finished(self, tau: float) -> None:
        self.params_box.sliders["tau"].set_value(round(tau, 4))
        self._request(final=True)

    # =========================================================================================
    # state events
    # =========================================================================================
    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if getattr(self, "_stale", False):
            self._on_verdicts()

    def _on_project(self) -> None:
        st = self.state
        self.params_box.forget_versions()
        self.deltas_box.start_id = st.config_id if st.project is not None else None
        self.labels_line.refresh()
        self._on_dataset()

    def _on_dataset(self) -> None:
        st = self.state
        self._active.clear()
        self.deltas_box.forget()
        self._curve_key = None
        if st.project is None or st.dataset is None or st.dataset.n == 0:
            # the closed (or emptied) project's summaries go with it
            self._live = None
            self._baseline_seen = None
            self.plots.forget()
        if st.project is None:
            self.body.show_message(NO_PROJECT)
            self._close_grid_dialog()
            return
        if st.dataset is None or st.dataset.n == 0:
            self.body.show_message(NO_SAMPLES)
            return
        self.body.show_content()
        self._show_score_floor()
        self.deltas_box.fill_versions()
        self._on_config()
        self._on_verdicts()

    def _show_score_floor(self) -> None:
        """Mark on the t_det slider the lowest primary detection score the data recorded: an
        imported run recorded from 0.5 up makes any t_det below 0.5 change nothing."""
        floor = primary_score_floor(self.state.dataset)
        self.params_box.sliders["t_det"].set_floor(
            floor, f"Detections were recorded from score {floor:.2f} up (the lowest primary detection "
                   "score in the data)" if floor is not None else "")

    def _on_config(self) -> None:
        st = self.state
        if st.project is None:
            return
        vals = {s.name: float(getattr(st.config, s.name)) for s in PARAMS}
        # keep the handle the user is dragging where it is
        if not self.params_box.sliders.any_dragging():
            self.params_box.sliders.set_values(vals)
            self.plots.set_tau(float(st.config.tau))
        if self._baseline_key() != self._baseline_seen and self._live is not None:
            self._baseline_seen = self._baseline_key()  # a version was applied elsewhere
            self.deltas_box.fill_versions()
            self._refresh_metrics()
            self._refresh_deltas()
        self.params_box.show_version()

    def _on_labels(self, _sid: str = "") -> None:
        self.labels_line.refresh()
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
            self.plots.show_coverage(cov, pc)
        else:  # τ moved: the same verdicts, other numbers at τ
            self._refresh_metrics()
        self._refresh_audit(curves=curves_stale)
        self._curve_key = key
        self._refresh_deltas()
        self.params_box.show_version()

    # =========================================================================================
    # the parts' figures
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
        s = self._active.get(key)
        if s is None or s.source is not st.baseline:
            s = summarize_verdicts(st.dataset, st.baseline)
            self._active[key] = s
        return s

    def _refresh_metrics(self) -> None:
        if self._live is None:
            return
        act = self._active_summary()
        self._baseline_seen = self._baseline_key()
        self.live_box.show_summaries(self._live, act)
        self._interval_timer.start()

    def _interval_key(self) -> Any:
        st = self.state
        return (id(st.verdicts), float(st.config.tau), id(st.dataset), int(len(self.audited_rows()))
                if st.calib_human is not None else 0)

    def intervals_ready(self) -> bool:
        """The Live-verdicts table shows the intervals of the verdicts and τ now shown."""
        return self.live_box.intervals_ready()

    def _has_verdicts(self) -> bool:
        st = self.state
        return not (st.dataset is None or st.dataset.n == 0 or st.verdicts is None)

    def flush_intervals(self) -> None:
        """Compute the intervals of the live numbers, the operating point and the risk band now
        and show them (a test's shortcut; the panel itself starts them `INTERVAL_MS` after the
        sliders rest, the headline on its helper thread: `_start_intervals`)."""
        self._interval_timer.stop()
        if self._has_verdicts():
            self.live_box.flush_intervals()
            self.plots.show_intervals()

    def _start_intervals(self) -> None:
        """The sliders rested: the headline's bootstrap on the helper thread (2,000 resamples over
        thousands of prompts take a moment), the audit's (hundreds of samples) here."""
        if self._has_verdicts():
            self.live_box.start_intervals()
            self.plots.show_intervals()

    def _adopt_headline(self) -> None:
        self._refresh_metrics()
        self._interval_timer.stop()

    def audited_rows(self) -> np.ndarray:
        return self.plots.audited_rows()

    def _refresh_audit(self, curves: bool = True) -> None:
        rows = self.audited_rows()
        labelled = self.state.verdicts is not None and len(rows) > 0
        self.params_box.grid_button.setToolTip(
            "search margin, t_det and τ for the lowest objective J" if labelled else
            "label an audit set first: the grid search needs human labels")
        self.plots.show_audit(rows, curves)
        if labelled:  # the operating point's intervals follow once the sliders rest
            self._interval_timer.start()

    def weights(self) -> Weights:
        if self._grid_dialog is not None:
            try:
                return self._grid_dialog.weights()
            except Exception:  # noqa: BLE001 - an invalid weight falls back to the defaults
                pass
        return Weights()

    def before_id(self) -> int | None:
        return self.deltas_box.before_id()

    def _refresh_deltas(self) -> None:
        st = self.state
        if st.dataset is None or st.dataset.n == 0 or self._live is None:
            return
        self.deltas_box.show_deltas(self._live, self.params_box.is_applied())

    # =========================================================================================
    # actions
    # =========================================================================================
    def reset(self) -> None:
        st = self.state
        if st.project is None:
            return
        _cid, cfg = SpatialStore(st.project).active_config()
        self.params_box.sliders.set_values({s.name: float(getattr(cfg, s.name)) for s in PARAMS})
        st.set_config(cfg)

    def load_params(self, params: dict[str, float]) -> None:
        """Put parameters (e.g. a grid-search row) into the sliders and evaluate them."""
        self.params_box.sliders.set_values(params)
        self.plots.set_tau(self.params_box.sliders["tau"].value())
        self._stop_live()
        cfg = self.state.config.replace(**{k: float(v) for k, v in params.items()})
        self.evaluations += 1
        self.state.set_config(cfg)

    def apply(self) -> int | None:
        st = self.state
        if st.project is None or st.dataset is None or not self.params_box.apply_button.isEnabled():
            return None
        self._stop_live()
        self._flush(final=True)
        note = self.params_box.note_edit.text().strip() or "calibration panel"
        cid = st.apply_config(note)
        self.params_box.note_edit.clear()
        self.deltas_box.fill_versions()
        self.params_box.show_version()
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


__all__ = ["CalibrationPanel", "DELTA_ROWS", "METRIC_ROWS"]
