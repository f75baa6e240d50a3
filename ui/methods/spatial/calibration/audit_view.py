"""The Calibration tab's plots: the checker against the human labels of the audited samples
(risk, coverage and FPR_PASS over τ, risk–coverage with its 95 % band, the confusion matrix at τ,
and a readout of the operating point) above all samples' coverage and PASS | decided over τ.

Everything at τ (the audit's operating point): a PASS / FAIL with confidence below τ counts as
UNDECIDABLE. The curves over the τ grid are redrawn when the verdicts change; a move of τ alone
moves the point, the matrix and the readout. The operating point's intervals and the risk band
(`calibration.operating_point`, `calibration.risk_band`: the report's functions, resamples and
seed) follow when the panel says the sliders rest (`show_intervals`).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from workstation.evaluation.intervals import Estimate
from workstation.methods.spatial.audit import confusion
from workstation.methods.spatial.calibration import (
    RiskCoverage,
    Weights,
    apply_tau,
    objective,
    operating_point,
    risk_band,
    risk_coverage,
)

from ....widgets.layout import splitter
from .confusion_view import ConfusionView
from .plots import BLUE, GREEN, ORANGE, PURPLE, TAU_GRID, VERMILION, EmptyState, RiskCoveragePlot, TauPlot

NO_LABELS = ("Label an audit set to see risk–coverage.\n\n"
             "The risk–coverage curve, the confusion matrix and the grid search compare the checker "
             "with human labels; none exist in this project yet.")


def audited_rows(human: np.ndarray) -> np.ndarray:
    """The rows with a human verdict (PASS, FAIL or UNDECIDABLE)."""
    return np.flatnonzero((human >= 0) & (human <= 2))


class AuditPlots(QSplitter):
    """The right column of the tab. `weights()` gives the objective J's weights of the readout."""

    def __init__(self, state: Any, weights: Callable[[], Weights]) -> None:
        super().__init__(Qt.Orientation.Vertical)
        self.state = state
        self._weights = weights
        self.point: dict[str, float] | None = None  # the operating point at the current τ
        self.rc: RiskCoverage | None = None  # risk–coverage of the audited samples (dense τ grid)
        self.op_estimates: dict[str, Estimate] | None = None  # the operating point with its intervals
        self.band: tuple[np.ndarray, np.ndarray] | None = None  # the risk band over TAU_GRID
        self.draw_note = ""  # what the operating point's figures rest on (the labels' draw)

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
        # first sizes of a few hundred pixels each: from (1, 1) the splitter gave the confusion
        # matrix, wider than half at its minimum, all the room and the plot ~100 px
        bottom = splitter(Qt.Orientation.Horizontal, self.rc_plot, conf_box, stretch=(1, 1), sizes=(500, 500))
        audit = QWidget()
        al = QVBoxLayout(audit)
        al.setContentsMargins(0, 0, 0, 0)
        al.addWidget(self.readout)
        al.addWidget(splitter(Qt.Orientation.Vertical, self.tau_plot, bottom, sizes=(400, 300)), 1)
        self.audit_area = EmptyState(audit)

        self.cov_plot = TauPlot("All samples: coverage and PASS | decided over τ", "rate")
        self.cov_plot.add_curve("coverage", "coverage", BLUE)
        self.cov_plot.add_curve("pass_cond", "PASS | decided", GREEN)
        self.cov_plot.add_curve("pass_rate", "pass rate", ORANGE, dash=True)
        self.cov_plot.setXLink(self.tau_plot)

        self.addWidget(self.audit_area)
        self.addWidget(self.cov_plot)
        self.setSizes([640, 260])

    def forget(self) -> None:
        """The project closed or has no samples: nothing of its audit stays."""
        self.rc = None
        self.point = None

    def set_tau(self, tau: float) -> None:
        self.tau_plot.set_tau(tau)
        self.cov_plot.set_tau(tau)

    def show_coverage(self, cov: np.ndarray, pc: np.ndarray) -> None:
        """All samples' coverage and PASS | decided over TAU_GRID."""
        self.cov_plot.set_curve("coverage", TAU_GRID, cov)
        self.cov_plot.set_curve("pass_cond", TAU_GRID, pc)
        self.cov_plot.set_curve("pass_rate", TAU_GRID, np.nan_to_num(pc) * cov)

    def audited_rows(self) -> np.ndarray:
        return audited_rows(self.state.calib_human)

    def show_audit(self, rows: np.ndarray, curves: bool = True) -> None:
        """The audited `rows` against their human labels; `curves`: the verdicts changed (not
        only τ), so the curves over τ are drawn again."""
        st = self.state
        if st.verdicts is None or len(rows) == 0:
            self.audit_area.show_message(NO_LABELS)
            return
        self.audit_area.show_content()
        v = st.verdicts
        verdict, conf, human = v.verdict[rows], v.conf[rows], st.calib_human[rows]
        if curves or self.rc is None:
            rc = risk_coverage(verdict, conf, human, taus=TAU_GRID)
            self.rc = rc
            self.band = None  # recomputed once the sliders rest
            self.rc_plot.set_band(None, None, None)
            self.tau_plot.set_curve("risk", rc.tau, rc.risk)
            self.tau_plot.set_curve("coverage", rc.tau, rc.coverage)
            self.tau_plot.set_curve("fpr", rc.tau, rc.fpr_pass)
            self.rc_plot.set_curve(rc.coverage, rc.risk)
        tau = float(st.config.tau)
        pt = risk_coverage(verdict, conf, human, taus=[tau])
        w, note = self.draw_basis(rows)
        self.point = {
            "tau": tau, "fpr_pass": float(pt.fpr_pass[0]), "risk": float(pt.risk[0]),
            "coverage": float(pt.coverage[0]), "n_audited": int(pt.n_audited),
            "n_covered": int(pt.n_covered[0]), "n_evaluated": int(pt.n_evaluated[0]),
            "n_pass_covered": int(pt.n_pass_covered[0]),
        }
        if w is not None:  # the draw's estimates (the report's function, without its resamples)
            est = operating_point(verdict, conf, human, None, tau, weights=w, n_boot=0)
            self.point.update({k: float(est[k].value) for k in ("fpr_pass", "risk", "coverage")})
        self.point["j"] = float(objective(np.array([self.point["fpr_pass"]]), np.array([self.point["risk"]]),
                                          np.array([self.point["coverage"]]), self._weights())[0])
        self.draw_note = note
        self.op_estimates = None  # its intervals follow once the sliders rest
        self.rc_plot.set_point(self.point["coverage"], self.point["risk"], tau)
        self._show_readout()
        m = confusion(apply_tau(verdict, conf, tau), human)
        self.confusion_view.set_matrix(m)
        self.confusion_title.setText(f"Checker at τ = {tau:.2f} vs human ({int(m.sum())} audited)")

    def show_intervals(self) -> None:
        """The operating point's intervals and (once per set of curves) the risk band."""
        st = self.state
        rows = self.audited_rows()
        if len(rows) and self.rc is not None and st.verdicts is not None:
            v = st.verdicts
            verdict, conf, human = v.verdict[rows], v.conf[rows], st.calib_human[rows]
            prompts = np.asarray(st.dataset.samples.prompt_id, dtype=object)[rows]
            self.op_estimates = operating_point(verdict, conf, human, prompts, float(st.config.tau),
                                                weights=self.draw_basis(rows)[0])
            if self.band is None:
                self.band = risk_band(verdict, conf, human, prompts, self.rc.tau)
                self.rc_plot.set_band(self.rc.coverage, self.band[0], self.band[1])
            self._show_readout()

    def draw_basis(self, rows: np.ndarray) -> tuple[np.ndarray | None, str]:
        """The operating point's weights over the audited ``rows`` (None: the plain counts) and
        the line that says what its figures rest on (`SelectedHuman.draw_basis`, as the report)."""
        st = self.state
        sel = getattr(st, "selected", None)
        if sel is None or st.dataset is None:
            return None, ""
        w, note = sel.draw_basis(st.dataset.n)
        if w is not None and len(w) != len(rows):
            return None, note
        return w, note

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
            + ("; 95 % intervals resampling prompts" if op is not None else "") + "</span>"
            + (f"<br><span style='color:{'#666' if self.point_weighted else '#a15c00'}'>{html.escape(self.draw_note, quote=False)}"
               "</span>" if self.draw_note else ""))

    @property
    def point_weighted(self) -> bool:
        return bool(self.draw_note) and not self.draw_note.startswith("these figures assume")
