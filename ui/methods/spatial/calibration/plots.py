"""Plots of the calibration panel (pyqtgraph), each a thin view over arrays the core computed.

- `TauPlot`: curves over the confidence threshold τ (x in [0, 1]) with a draggable vertical
  τ line. `tau_dragged(float)` is emitted live while the line moves (sigDragged),
  `tau_finished(float)` when it is let go (sigPositionChangeFinished); `set_tau(v)` moves the
  line without emitting either.
- `RiskCoveragePlot`: risk against coverage, one point per τ, with the current operating point.
- `EmptyState`: a stacked widget that shows a sentence instead of empty axes.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QGraphicsItem, QLabel, QStackedWidget, QWidget

from workstation.methods.spatial.types import FAIL, PASS

# Colour-blind-safe palette (Okabe–Ito)
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
VERMILION = "#D55E00"
PURPLE = "#CC79A7"
GREY = "#555555"
TAU_LINE = "#222222"

# τ values at which the curves are drawn (dense enough to show the steps of the sweep)
TAU_GRID = np.linspace(0.0, 1.0, 1001)


def _style(plot: pg.PlotWidget, x: str, y: str, title: str) -> None:
    plot.setBackground("w")
    item = plot.getPlotItem()
    item.setTitle(f"<span style='color:#222;font-size:10pt'>{title}</span>")
    for side, text in (("bottom", x), ("left", y)):
        ax = item.getAxis(side)
        ax.setPen(pg.mkPen("#444"))
        ax.setTextPen(pg.mkPen("#222"))
        ax.setLabel(text, color="#222")
        ax.enableAutoSIPrefix(False)
        # axes also draw the grid across the plot, so every curve update repaints them:
        # keep their (text-heavy) drawing in a pixmap that is redrawn only when they change
        ax.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    item.showGrid(x=True, y=True, alpha=0.15)
    item.setMenuEnabled(False)
    item.hideButtons()


def coverage_curve(verdict: np.ndarray, conf: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Over all samples: coverage(τ) = decided with conf ≥ τ / N, PASS|decided(τ) = PASS / decided
    among those (NaN where nothing is decided)."""
    v = np.asarray(verdict)
    c = np.asarray(conf, np.float64)
    taus = np.asarray(taus, np.float64)
    n = len(v)
    k, kp = (_binned_counts if _uniform_unit_grid(taus) else _sorted_counts)(v, c, taus)
    cov = k / n if n else np.zeros(len(taus))
    with np.errstate(invalid="ignore", divide="ignore"):
        pc = np.where(k > 0, kp / np.maximum(k, 1), np.nan)
    return np.asarray(cov, np.float64), pc


def _sorted_counts(v: np.ndarray, c: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(decided, PASS) counts with conf ≥ τ at each τ of any grid, over the sorted confidences."""
    decided = ((v == PASS) | (v == FAIL)) & ~np.isnan(c)
    cd = np.sort(c[decided])
    cp = np.sort(c[decided & (v == PASS)])
    return len(cd) - np.searchsorted(cd, taus, side="left"), len(cp) - np.searchsorted(cp, taus, side="left")


def _uniform_unit_grid(taus: np.ndarray) -> bool:
    """Whether ``taus`` is ``np.linspace(0, 1, m)`` bit for bit (m >= 2)."""
    return len(taus) >= 2 and bool(np.array_equal(taus, np.linspace(0.0, 1.0, len(taus))))


_BIN_CHUNK = 1 << 16  # samples per step: the temporaries stay in the core's cache


def _binned_counts(v: np.ndarray, c: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(decided, PASS) counts with conf ≥ τ at each τ of the uniform grid ``taus`` without
    sorting: each decided sample's bin, the number of grid values ≤ its conf, is
    floor(conf·(m−1)) + 1 where conf·(m−1) lies at least 1e-6 inside a grid interval (the
    products and the grid are exact to ~1e-13 there), and the grid's own binary search
    elsewhere (on or next to a grid value, outside [0, 1], NaN). One histogram in two blocks
    (all decided, PASS) and a cumulative sum from the top give the counts: the same integers as
    counting over the sorted confidences."""
    m = len(taus)
    scale = float(m - 1)
    block = np.int32(m + 1)  # bins 0..m of the decided; the PASS block follows
    skip = 2 * (m + 1)  # samples that are not decided
    hist = np.zeros(skip + 1, np.int64)
    with np.errstate(invalid="ignore"):
        for lo in range(0, len(v), _BIN_CHUNK):
            cc, vv = c[lo:lo + _BIN_CHUNK], v[lo:lo + _BIN_CHUNK]
            x = cc * scale
            g = x.astype(np.int32)  # garbage for NaN / out of range: those take the exact path
            x -= g
            inside = (x >= 1e-6) & (x <= 1.0 - 1e-6) & (g >= 0) & (g < m - 1)
            passed = vv == PASS
            decided = passed | (vv == FAIL)
            g += 1
            g += passed.view(np.int8) * block
            code = np.where(decided, g, skip)
            exact = np.flatnonzero(decided & ~inside)
            if len(exact):
                ce = cc[exact]
                code[exact] = np.where(np.isnan(ce), skip,
                                       np.searchsorted(taus, ce, side="right") + passed[exact] * block)
            hist += np.bincount(code, minlength=skip + 1)
    hp = hist[m + 1:skip]
    ha = hist[:m + 1] + hp
    # conf >= taus[j] <=> more than j grid values are <= conf: the bins above j
    k = np.cumsum(ha[::-1])[::-1][1:]
    kp = np.cumsum(hp[::-1])[::-1][1:]
    return k, kp


class TauPlot(pg.PlotWidget):
    tau_dragged = Signal(float)
    tau_finished = Signal(float)

    def __init__(self, title: str, ylabel: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self, "τ (confidence threshold)", ylabel, title)
        item = self.getPlotItem()
        item.setXRange(0.0, 1.0, padding=0.02)
        item.setYRange(0.0, 1.0, padding=0.04)
        item.setLimits(xMin=-0.05, xMax=1.05, yMin=-0.1, yMax=1.6)
        self.legend = item.addLegend(offset=(-8, 4), labelTextColor="#222", pen=pg.mkPen("#bbb"),
                                     brush=pg.mkBrush(255, 255, 255, 220), colCount=3)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.line = pg.InfiniteLine(
            pos=0.0, angle=90, movable=True, bounds=(0.0, 1.0),
            pen=pg.mkPen(TAU_LINE, width=2, style=Qt.PenStyle.DashLine),
            hoverPen=pg.mkPen(VERMILION, width=3),
            label="τ={value:.2f}",
            labelOpts={"position": 0.93, "color": "#222", "fill": (255, 255, 255, 200), "movable": False},
        )
        self.line.setZValue(20)
        self.line.setToolTip("drag to change τ")
        item.addItem(self.line)
        self.line.sigDragged.connect(lambda ln: self.tau_dragged.emit(float(ln.value())))
        self.line.sigPositionChangeFinished.connect(lambda ln: self.tau_finished.emit(float(ln.value())))

    def add_curve(self, key: str, name: str, color: str, width: float = 2.0, dash: bool = False) -> None:
        pen = pg.mkPen(color, width=width, style=Qt.PenStyle.DashLine if dash else Qt.PenStyle.SolidLine)
        self.curves[key] = self.getPlotItem().plot([], [], pen=pen, name=name)

    def set_curve(self, key: str, x: np.ndarray, y: np.ndarray) -> None:
        """Draw a curve; where y is undefined (NaN) the curve has a gap."""
        self.curves[key].setData(np.asarray(x, np.float64), np.asarray(y, np.float64), connect="finite")

    def set_tau(self, tau: float) -> None:
        if abs(self.line.value() - tau) > 1e-12:
            self.line.setValue(float(tau))

    def tau(self) -> float:
        return float(self.line.value())


class RiskCoveragePlot(pg.PlotWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self, "coverage", "risk", "Risk–coverage (audited samples)")
        item = self.getPlotItem()
        item.setXRange(0.0, 1.0, padding=0.02)
        item.setYRange(0.0, 0.5, padding=0.04)
        item.setMouseEnabled(x=False, y=False)
        self.curve = item.plot([], [], pen=pg.mkPen(BLUE, width=2))
        # the pointwise 95 % band of the risk (resampling prompts), under the curve
        self.band_lo = pg.PlotDataItem([], [], pen=pg.mkPen(BLUE, width=1, style=Qt.PenStyle.DotLine))
        self.band_hi = pg.PlotDataItem([], [], pen=pg.mkPen(BLUE, width=1, style=Qt.PenStyle.DotLine))
        self.band = pg.FillBetweenItem(self.band_lo, self.band_hi, brush=pg.mkBrush(0, 114, 178, 50))
        for it in (self.band, self.band_lo, self.band_hi):
            it.setZValue(-5)
            item.addItem(it)
        self.band_shown = False
        self.point = pg.ScatterPlotItem(size=11, brush=pg.mkBrush(VERMILION), pen=pg.mkPen("#222", width=1))
        self.point.setZValue(10)
        item.addItem(self.point)
        self.text = pg.TextItem("", color="#222", anchor=(0, 1), fill=pg.mkBrush(255, 255, 255, 200))
        self.text.setZValue(11)
        item.addItem(self.text)

    def set_curve(self, coverage: np.ndarray, risk: np.ndarray) -> None:
        """Risk over coverage; an undefined risk (covered samples, none with a human PASS/FAIL
        label) is a gap in the curve, as the report's table shows it "—"."""
        order = np.argsort(coverage, kind="stable")
        r = np.asarray(risk, np.float64)[order]
        self.curve.setData(np.asarray(coverage, np.float64)[order], r, connect="finite")
        top = float(np.nanmax(r)) if np.isfinite(r).any() else 0.5
        self.getPlotItem().setYRange(0.0, max(0.1, min(1.0, top * 1.1)), padding=0.04)

    def set_band(self, coverage: np.ndarray | None, lo: np.ndarray | None, hi: np.ndarray | None) -> None:
        """The pointwise 95 % band of the risk at each point of the curve (None: none shown)."""
        if coverage is None or lo is None or hi is None:
            self.band_lo.setData([], [])
            self.band_hi.setData([], [])
            self.band_shown = False
            return
        order = np.argsort(coverage, kind="stable")
        c = np.asarray(coverage, np.float64)[order]
        lo_, hi_ = np.asarray(lo, np.float64)[order], np.asarray(hi, np.float64)[order]
        ok = np.isfinite(lo_) & np.isfinite(hi_)
        self.band_lo.setData(c[ok], lo_[ok])
        self.band_hi.setData(c[ok], hi_[ok])
        self.band_shown = bool(ok.any())
        if ok.any():
            top = float(np.max(hi_[ok]))
            self.getPlotItem().setYRange(0.0, max(0.1, min(1.0, top * 1.1)), padding=0.04)

    def set_point(self, coverage: float, risk: float, tau: float) -> None:
        if risk != risk:  # undefined at τ: no point on the curve
            self.point.setData([], [])
            self.text.setText(f"τ={tau:.2f}: risk undefined")
            self.text.setPos(coverage + 0.01, 0.0)
            return
        self.point.setData([coverage], [risk])
        self.text.setText(f"τ={tau:.2f}")
        self.text.setPos(coverage + 0.01, risk)


class EmptyState(QStackedWidget):
    """Page 0: the content; page 1: a centred sentence (`show_message`)."""

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.content = content
        self.label = QLabel()
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setWordWrap(True)
        f = QFont(self.label.font())
        f.setPointSizeF(f.pointSizeF() * 1.15)
        self.label.setFont(f)
        pal = self.label.palette()
        pal.setColor(self.label.foregroundRole(), QColor("#666"))
        self.label.setPalette(pal)
        self.addWidget(content)
        self.addWidget(self.label)

    def show_message(self, text: str) -> None:
        self.label.setText(text)
        self.setCurrentIndex(1)

    def show_content(self) -> None:
        self.setCurrentIndex(0)

    @property
    def message(self) -> str | None:
        return self.label.text() if self.currentIndex() == 1 else None
