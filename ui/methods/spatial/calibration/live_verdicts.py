"""The Calibration tab's "Live verdicts" box: every number of the live verdicts both ways ("live"
and "at τ"), the stored active version's and the difference, with the abstentions by reason.

The 95 % intervals under the live numbers (`metrics.headline`: 2,000 resamples over thousands of
prompts) are computed on a helper thread of their own once the panel says the sliders rest
(`start_intervals`); a move meanwhile goes on at once, and only the latest verdicts' intervals
are worth computing. Until they come the values show with "…" below them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QGroupBox, QHeaderView, QLabel, QVBoxLayout

from ....widgets.forms import wrapped_label
from ....widgets.tables import figures_table, fit_height, set_cell, widen_to_fit
from .deltas import METRIC_ROWS, Summary, at_tau_values, estimate_text

log = logging.getLogger(__name__)

NOTE = ("τ = {tau:.2f} is the audit's operating point: at τ, a PASS / FAIL below that confidence counts as "
        "UNDECIDABLE (the confusion matrix and risk–coverage are at τ too). The stored verdicts are the live "
        "ones, without τ. 95 % intervals under each rate (prompts resampled); * fewer than 10 samples or "
        "prompts behind it.")

_INTERVALS: ThreadPoolExecutor | None = None


def _intervals_helper() -> ThreadPoolExecutor:
    """One thread for the live numbers' bootstrap intervals (seconds on a large project), which
    nothing on the window's thread waits for: a move during one goes on at once."""
    global _INTERVALS
    if _INTERVALS is None:
        _INTERVALS = ThreadPoolExecutor(1, thread_name_prefix="calibration-intervals")
    return _INTERVALS


def _fmt(x: float, kind: str = "f") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    if kind == "d":
        return str(int(x))
    if kind == "%":
        return f"{100.0 * x:.1f}%"
    return f"{x:.4f}"


def _delta_text(d: float, kind: str) -> str:
    if d is None or not np.isfinite(d):
        return "—"
    if kind == "d":
        return f"{int(d):+d}"
    return f"{d:+.4f}"


class LiveVerdictsBox(QGroupBox):
    """`interval_key()` names the verdicts and τ shown (the intervals are of those or of none);
    `headline_ready` says that the intervals of the verdicts shown came."""

    headline_ready = Signal()

    def __init__(self, state: Any, interval_key: Callable[[], Any]) -> None:
        super().__init__("Live verdicts")
        self.state = state
        self._interval_key = interval_key
        self.headline: Any = None  # metrics.Headline of the shown verdicts and τ (None while pending)
        self._headline_key: Any = None
        self.future: Any = None  # the helper thread's future of the headline
        self._pending_key: Any = None
        self._poll = QTimer(self)  # looks for the helper thread's answer
        self._poll.setInterval(30)
        self._poll.timeout.connect(self._poll_intervals)

        ml = QVBoxLayout(self)
        self.metrics_table = figures_table(len(METRIC_ROWS), 4, ["live", "at τ", "active", "Δ"], "calib_metrics",
                                           lines=2)
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
        fit_height(self.metrics_table)
        ml.addWidget(self.metrics_table)
        self.metrics_note = wrapped_label(name="calib_metrics_note")
        self.metrics_note.setProperty("dim", True)
        ml.addWidget(self.metrics_note)
        self.abstention_table = figures_table(0, 2, ["samples", "% of all"], "calib_abstention")
        ml.addWidget(QLabel("Abstention by reason (live)"))
        ml.addWidget(self.abstention_table)

    # ---- the figures -------------------------------------------------------------------------
    def show_summaries(self, live: Summary, active: Summary | None) -> None:
        """The live verdicts' figures (with their intervals when those of the verdicts and τ shown
        have come) beside the active version's."""
        st = self.state
        t = self.metrics_table
        cid = st.config_id
        tau = float(st.config.tau)
        heads = ["live", f"at τ = {tau:.2f}", f"v{cid}" if cid is not None else "defaults", "Δ"]
        shown_heads = [t.horizontalHeaderItem(c) for c in range(4)]
        if [h.text() if h is not None else "" for h in shown_heads] != heads:
            t.setHorizontalHeaderLabels(heads)
        hl = self.headline if self.intervals_ready() else None
        v = st.verdicts
        quick = at_tau_values(v.verdict, v.conf, tau) if v is not None else {}
        for r, row in enumerate(METRIC_ROWS):
            lv = live.get(row.key)
            av = active.get(row.key) if active is not None else float("nan")
            if hl is not None:
                set_cell(t, r, 0, estimate_text(hl.plain[row.key], row.kind))
                set_cell(t, r, 1, estimate_text(hl.at_tau[row.key], row.kind))
            else:  # the intervals follow once the sliders rest
                pending = "" if row.kind == "d" else "\n…"
                set_cell(t, r, 0, _fmt(lv, row.kind) + pending)
                qv = quick.get(row.key)
                set_cell(t, r, 1, (_fmt(qv, row.kind) + pending) if qv is not None else "…")
            set_cell(t, r, 2, _fmt(av, row.kind))
            d = lv - av if active is not None else float("nan")
            set_cell(t, r, 3, _delta_text(d, row.kind))
        widen_to_fit(t, (2, 3))
        self.metrics_note.setText(NOTE.format(tau=tau))
        self._show_abstention(live.abstention)

    def _show_abstention(self, reasons: list[tuple[str, int, float]]) -> None:
        t = self.abstention_table
        names = [r for r, _c, _p in reasons]
        heads = (t.verticalHeaderItem(i) for i in range(t.rowCount()))
        shown = [h.text() if h is not None else "" for h in heads]
        if shown != names:
            t.setRowCount(len(reasons))
            t.setVerticalHeaderLabels(names)
            fit_height(t)
        for i, (_r, count, pct) in enumerate(reasons):
            set_cell(t, i, 0, str(count))
            set_cell(t, i, 1, f"{100.0 * pct:.1f}%")

    # ---- the intervals -----------------------------------------------------------------------
    def intervals_ready(self) -> bool:
        """The table shows the intervals of the verdicts and τ now shown."""
        return self.headline is not None and self._headline_key == self._interval_key()

    def start_intervals(self) -> None:
        """The sliders rested: the headline's bootstrap on the helper thread, unless it is the
        one shown or under way."""
        from workstation.methods.spatial.metrics import headline

        st = self.state
        key = self._interval_key()
        if key != self._headline_key and key != self._pending_key:
            if self.future is not None:
                self.future.cancel()  # not started yet: only the latest verdicts' are worth computing
            self._pending_key = key
            self.future = _intervals_helper().submit(headline, st.dataset, st.verdicts, tau=float(st.config.tau))
            self._poll.start()

    def flush_intervals(self) -> None:
        """The headline of the verdicts and τ shown, computed here and now."""
        from workstation.methods.spatial.metrics import headline

        self._poll.stop()
        st = self.state
        key = self._interval_key()
        if key != self._headline_key:
            self._adopt(key, headline(st.dataset, st.verdicts, tau=float(st.config.tau)))

    def _poll_intervals(self) -> None:
        f = self.future
        if f is None or not f.done():
            return
        self._poll.stop()
        key, self.future, self._pending_key = self._pending_key, None, None
        try:
            hl = f.result()
        except Exception:  # noqa: BLE001 - the values stay without their intervals; said in the log
            log.exception("the intervals of the live verdicts could not be computed")
            return
        if key == self._interval_key():  # still the verdicts and τ shown
            self._adopt(key, hl)

    def _adopt(self, key: Any, hl: Any) -> None:
        self.headline = hl
        self._headline_key = key
        self.headline_ready.emit()
