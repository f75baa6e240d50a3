"""Labelled parameter sliders with typed entry, for the checker parameters being calibrated.

A `ParamSlider` is a name, a horizontal slider in fixed steps over the range the checker config
declares for its parameter (`config.PARAMETER_RANGES`: one place says what a parameter may be),
and a spin box for typing an exact value. Its signals separate live motion from a settled value, like
pyqtgraph's sigDragged / sigPositionChangeFinished:

- `moved(float)`     the value changed while the handle is being dragged (many per second);
- `committed(float)` the value settled: handle released, a key pressed on the slider (a key held
                     down steps as a drag moves, `moved`, and commits when it is let go), a value
                     typed (Enter / focus out) or stepped in the spin box.

`set_value(v)` updates both parts quietly (no signal); it is what a view bound to the slider
(the τ line on the plot, a grid-search row) calls. The value given is kept as it is: one the
slider cannot show exactly (between two of its steps, beyond its range) is shown as near as it
can be, and `value()` still gives it back unchanged until the slider itself is moved — so a drag
of another slider never rewrites it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from workstation.methods.spatial.config import PARAMETER_RANGES


@dataclass(frozen=True)
class ParamSpec:
    name: str  # CheckerConfig field; its range is the config's (`PARAMETER_RANGES`)
    label: str
    step: float
    decimals: int
    tip: str = ""
    note: str = ""  # a line under the slider, always shown
    page: int = 5  # steps of one Page Up / Page Down

    @property
    def lo(self) -> float:
        return PARAMETER_RANGES[self.name][0]

    @property
    def hi(self) -> float:
        return PARAMETER_RANGES[self.name][1]


# The parameters the calibration panel edits, in display order.
PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("margin", "margin m", 0.005, 3,
              "|d| ≤ m → UNDECIDABLE (near_boundary); PASS needs d beyond ±m"),
    ParamSpec("t_det", "t_det", 0.01, 2,
              "detection score cut-off (effective: max(t_det, detector threshold))"),
    ParamSpec("tau", "τ (tau)", 0.01, 2,
              "the audit's operating point: a PASS/FAIL with conf < τ counts as UNDECIDABLE in the 'at τ' "
              "column, the confusion matrix and risk–coverage; the stored verdicts are without τ",
              note="operating point: 'at τ', confusion, risk–coverage"),
    ParamSpec("ambiguity_delta", "ambiguity δ", 0.01, 2,
              "top-1 − top-2 score gap below δ → UNDECIDABLE (ambiguous)", page=2),
    ParamSpec("max_overlap_iou", "max overlap IoU", 0.01, 2,
              "left/right: IoU(A, B) above this → UNDECIDABLE (high_overlap)"),
)
PARAM_BY_NAME: dict[str, ParamSpec] = {p.name: p for p in PARAMS}


class ParamSlider(QWidget):
    moved = Signal(float)
    committed = Signal(float)

    def __init__(self, spec: ParamSpec, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self._n = int(round((spec.hi - spec.lo) / spec.step))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName(f"slider_{spec.name}")
        self.slider.setRange(0, self._n)
        self.slider.setSingleStep(1)
        self.slider.setPageStep(spec.page)
        self.slider.setMinimumWidth(140)
        self.spin = QDoubleSpinBox()
        self.spin.setObjectName(f"spin_{spec.name}")
        self.spin.setDecimals(max(spec.decimals, 3))
        self.spin.setRange(spec.lo, spec.hi)
        self.spin.setSingleStep(spec.step)
        self.spin.setKeyboardTracking(False)  # typed digits commit on Enter / focus out
        self.spin.setCorrectionMode(QAbstractSpinBox.CorrectionMode.CorrectToNearestValue)
        self.spin.setMinimumWidth(80)
        self.spin.setAccelerated(True)
        self.setToolTip(spec.tip)
        self._value = spec.lo
        self._quiet = False
        self._held = False  # a key held down on the slider: its repeated steps are live motion

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        lay = QHBoxLayout()
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.spin)
        outer.addLayout(lay)
        # under the slider (never wider than it): where the data starts, when that matters
        self.floor_label = QLabel("")
        self.floor_label.setObjectName(f"floor_{spec.name}")
        self.floor_label.setProperty("dim", True)
        self.floor_label.setVisible(False)
        self.floor = float("nan")
        outer.addWidget(self.floor_label)
        if spec.note:
            self.note_label = QLabel(spec.note)
            self.note_label.setObjectName(f"note_{spec.name}")
            self.note_label.setProperty("dim", True)
            self.note_label.setToolTip(spec.tip)
            outer.addWidget(self.note_label)

        self.slider.installEventFilter(self)
        self.slider.valueChanged.connect(self._on_slider)
        self.slider.sliderReleased.connect(self._on_released)
        self.spin.valueChanged.connect(self._on_spin)

    # ---- value ------------------------------------------------------------------------------
    def value(self) -> float:
        return self._value

    def set_value(self, v: float) -> None:
        """Hold `v` and show it (as near as the slider can) without emitting anything; `value()`
        gives `v` back unchanged until this slider is moved."""
        self._value = round(float(v), 10)
        shown = min(max(self._value, self.spec.lo), self.spec.hi)
        self._quiet = True
        try:
            self.slider.setValue(self._to_pos(shown))
            self.spin.setValue(shown)
        finally:
            self._quiet = False

    def set_floor(self, floor: float | None, what: str = "") -> None:
        """Mark the value below which moving the slider changes nothing (None: no floor), e.g.
        the lowest detection score a run recorded; `what` says what the floor is."""
        if floor is None or not math.isfinite(floor) or floor <= self.spec.lo + self.spec.step / 2:
            self.floor = float("nan")
            self.floor_label.setVisible(False)
            self.floor_label.setText("")
            w: QWidget
            for w in (self, self.slider, self.spin):
                w.setToolTip(self.spec.tip)
            return
        self.floor = float(floor)
        f = f"{floor:.{self.spec.decimals}f}"
        self.floor_label.setText(f"recorded ≥ {f}: below it t_det changes nothing" if self.spec.name == "t_det"
                                 else f"recorded ≥ {f}")
        self.floor_label.setVisible(True)
        tip = (f"{self.spec.tip}\n{what or f'The data starts at {f}'}: "
               f"a {self.spec.label} below {f} changes nothing.")
        for w in (self, self.slider, self.spin, self.floor_label):
            w.setToolTip(tip)

    def is_dragging(self) -> bool:
        """The handle is held, by the mouse or by a key held down."""
        return self.slider.isSliderDown() or self._held

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """A key held down on the slider repeats its step: the repeated steps are `moved`, and
        letting the key go (or the focus) commits the value reached."""
        if obj is not self.slider:
            return False
        kind = event.type()
        if isinstance(event, QKeyEvent) and kind == QEvent.Type.KeyPress:
            self._held = event.isAutoRepeat()
        elif self._held and (kind == QEvent.Type.FocusOut or isinstance(event, QKeyEvent)
                             and kind == QEvent.Type.KeyRelease and not event.isAutoRepeat()):
            self._held = False
            self.committed.emit(self._value)
        return False

    def _to_pos(self, v: float) -> int:
        return int(round((v - self.spec.lo) / self.spec.step))

    def _from_pos(self, pos: int) -> float:
        v = self.spec.lo + pos * self.spec.step
        return round(v, max(self.spec.decimals, 3) + 2)

    # ---- slots ------------------------------------------------------------------------------
    def _on_slider(self, pos: int) -> None:
        if self._quiet:
            return
        v = self._from_pos(pos)
        if math.isclose(v, self._value, abs_tol=1e-12):
            return
        self._value = v
        self._quiet = True
        try:
            self.spin.setValue(v)
        finally:
            self._quiet = False
        if self.is_dragging():
            self.moved.emit(v)
        else:  # a key step, the wheel, a click on the groove
            self.committed.emit(v)

    def _on_released(self) -> None:
        self.committed.emit(self._value)

    def _on_spin(self, v: float) -> None:
        if self._quiet:
            return
        v = round(float(v), 10)
        if math.isclose(v, self._value, abs_tol=1e-12):
            return
        self._value = v
        self._quiet = True
        try:
            self.slider.setValue(self._to_pos(v))
        finally:
            self._quiet = False
        self.committed.emit(v)


class ParamSliders(QWidget):
    """A grid of `ParamSlider`s, one per parameter of `PARAMS`.

    `moved(name, value)` / `committed(name, value)` relay the sliders' signals.
    """

    moved = Signal(str, float)
    committed = Signal(str, float)

    def __init__(self, specs: tuple[ParamSpec, ...] = PARAMS, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sliders: dict[str, ParamSlider] = {}
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        for row, spec in enumerate(specs):
            lab = QLabel(spec.label)
            lab.setToolTip(spec.tip)
            s = ParamSlider(spec)
            lab.setBuddy(s.spin)
            self.sliders[spec.name] = s
            s.moved.connect(lambda v, n=spec.name: self.moved.emit(n, v))
            s.committed.connect(lambda v, n=spec.name: self.committed.emit(n, v))
            grid.addWidget(lab, row, 0)
            grid.addWidget(s, row, 1)
        grid.setColumnStretch(1, 1)

    def __getitem__(self, name: str) -> ParamSlider:
        return self.sliders[name]

    def values(self) -> dict[str, float]:
        return {n: s.value() for n, s in self.sliders.items()}

    def set_values(self, values: dict[str, float]) -> None:
        for n, v in values.items():
            if n in self.sliders:
                self.sliders[n].set_value(v)

    def any_dragging(self) -> bool:
        return any(s.is_dragging() for s in self.sliders.values())
