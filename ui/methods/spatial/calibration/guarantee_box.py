"""The calibration panel's "Guaranteed choice" box: J's choice and Learn then Test's side by side.

Over the same grid (the grid dialog's, or the paper's) and the same audited samples, the box
shows the configuration minimising the objective J and the one whose risk is at most α with
probability at least 1 − δ (`workstation.methods.spatial.guarantee`), or says that none
qualifies and about how many more labels would let one. Either can be loaded into the sliders.
The search runs on a worker thread (one checker evaluation per non-τ combination over all
samples); the box only parses its inputs and shows the answer.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import GeneratorWorker, create_worker

from ui.widgets.forms import double_spin_box
from ui.widgets.tables import number_item
from workstation.methods.spatial.calibration import PAPER_GRID, Weights
from workstation.methods.spatial.guarantee import GuaranteeComparison, iter_compare

ROWS: tuple[tuple[str, str], ...] = (
    ("margin", "margin"), ("t_det", "t_det"), ("tau", "τ"), ("audited_risk", "audited risk"),
    ("n", "n covered, decided"), ("coverage_all", "coverage, all"),
    ("coverage", "coverage, audited"), ("fpr_pass", "FPR_PASS"), ("j", "J"), ("p_value", "p-value"),
)
#: what J is, in the words of the grid search's objective
J_TEXT = ("J = w_fpr·FPR_PASS + w_risk·risk + w_cov·(1 − coverage), the grid search's objective "
          "(its weights): lower is better; J's choice is the configuration with the lowest J")
P_TEXT = ("p-value of the test that the configuration's risk exceeds α (the null hypothesis "
          "risk > α): below δ, Learn then Test may certify risk ≤ α")
TIPS = {"j": J_TEXT, "p_value": P_TEXT}


def _fmt(key: str, row: dict[str, Any] | None) -> str:
    if row is None or key not in row:
        return "—"
    v = row[key]
    if key == "n":
        return f"{int(v)}, {int(row['k'])} wrong"
    if key in ("margin", "t_det", "tau"):
        return f"{float(v):g}"
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    if key in ("audited_risk", "coverage_all", "coverage", "fpr_pass"):
        return f"{100 * float(v):.1f} %"
    if key == "p_value":
        return f"{float(v):.3g}"
    return f"{float(v):.4f}"


class GuaranteeBox(QGroupBox):
    """See the module docstring. ``chosen(dict)`` carries a choice's parameters for the sliders."""

    chosen = Signal(dict)
    finished = Signal(object)  # GuaranteeComparison, or None when it failed / was cancelled

    def __init__(self, state: Any, grids: Any = None, weights: Any = None, parent: QWidget | None = None) -> None:
        super().__init__("Guaranteed choice (Learn then Test) beside J's", parent)
        self.setObjectName("calib_guarantee")
        self.state = state
        self._grids = grids  # () -> dict of grids, or None for the paper's grid
        self._weights = weights  # () -> Weights
        self.worker: GeneratorWorker | None = None
        self.result: GuaranteeComparison | None = None
        lay = QVBoxLayout(self)
        row = QHBoxLayout()
        self.alpha_spin = double_spin_box(
            0.001, 0.5, 0.10, decimals=3, step=0.01, name="guarantee_alpha",
            tip="the largest risk (share of covered, human-decided samples the checker gets wrong) the "
            "configuration may have")
        self.delta_spin = double_spin_box(0.001, 0.5, 0.10, decimals=3, step=0.01, name="guarantee_delta",
                                          tip="the chance the guarantee may fail (1 − δ is its confidence)")
        self.method_combo = QComboBox()
        self.method_combo.setObjectName("guarantee_method")
        self.method_combo.addItem("fixed sequence", "fixed_sequence")
        self.method_combo.addItem("Bonferroni", "bonferroni")
        self.run_button = QPushButton("Compare")
        self.run_button.setObjectName("guarantee_run")
        row.addWidget(QLabel("risk ≤ α"))
        row.addWidget(self.alpha_spin)
        row.addWidget(QLabel("with prob. ≥ 1 − δ, δ"))
        row.addWidget(self.delta_spin)
        row.addStretch(1)
        lay.addLayout(row)
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("testing"))
        row2.addWidget(self.method_combo)
        row2.addStretch(1)
        row2.addWidget(self.run_button)
        lay.addLayout(row2)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m checker evaluations")
        lay.addWidget(self.progress)
        self.table = QTableWidget(len(ROWS), 2)
        self.table.setObjectName("guarantee_table")
        self.table.setHorizontalHeaderLabels(["J's choice\nlowest J", "guaranteed\nrisk ≤ α at 1 − δ"])
        self.table.setVerticalHeaderLabels([t for _k, t in ROWS])
        for r, (key, _t) in enumerate(ROWS):
            if key in TIPS:
                self.table.verticalHeaderItem(r).setToolTip(TIPS[key])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setWordWrap(True)
        rows_h = len(ROWS) * (self.table.fontMetrics().height() + 10)
        self.table.setMinimumHeight(rows_h + 4 * self.table.fontMetrics().height() + 24)
        lay.addWidget(self.table)
        self.message = QLabel("Compare J's choice with the configuration whose risk is guaranteed.")
        self.message.setObjectName("guarantee_message")
        self.message.setWordWrap(True)
        lay.addWidget(self.message)
        self.j_note = QLabel(J_TEXT + ".")
        self.j_note.setObjectName("dim")
        self.j_note.setWordWrap(True)
        lay.addWidget(self.j_note)
        brow = QHBoxLayout()
        self.load_j = QPushButton("Load J's choice")
        self.load_j.setObjectName("guarantee_load_j")
        self.load_g = QPushButton("Load guaranteed")
        self.load_g.setObjectName("guarantee_load_g")
        for b in (self.load_j, self.load_g):
            b.setEnabled(False)
            brow.addWidget(b)
        brow.addStretch(1)
        lay.addLayout(brow)
        self.run_button.clicked.connect(self.run)
        self.load_j.clicked.connect(lambda: self._load(False))
        self.load_g.clicked.connect(lambda: self._load(True))

    # ---- running --------------------------------------------------------------------------------
    def grids(self) -> dict[str, Any]:
        g = self._grids() if callable(self._grids) else None
        return dict(g) if g else dict(PAPER_GRID)

    def weights(self) -> Weights:
        w = self._weights() if callable(self._weights) else None
        return w if isinstance(w, Weights) else Weights()

    def run(self) -> None:
        st = self.state
        if st.dataset is None or st.dataset.n == 0:
            self.message.setText("open a project with samples first")
            return
        if not (st.calib_human >= 0).any():
            self.message.setText("a guaranteed choice needs human labels: label an audit set first")
            return
        try:
            grids = self.grids()
        except Exception as e:  # noqa: BLE001 - the grid dialog's parse error, shown as it is
            self.message.setText(str(e))
            return
        self.result = None
        self.run_button.setEnabled(False)
        self.message.setText("comparing…")
        sel = st.selected
        w = create_worker(iter_compare, st.dataset, st.config, sel.codes.copy(), grids,
                          alpha=self.alpha_spin.value(), delta=self.delta_spin.value(),
                          method=str(self.method_combo.currentData()), weights=self.weights(),
                          inclusion=sel.inclusion.copy(), drawn_share=sel.drawn_share(st.dataset.n),
                          caveat=None if sel.resolved.known_draw else _caveat(sel.resolved.design),
                          _start_thread=False, _ignore_errors=True)
        w.yielded.connect(self._on_progress)
        w.returned.connect(self._on_result)
        w.errored.connect(lambda e: self.message.setText(str(e)))
        # superqt types finished as SigInst[None]
        w.finished.connect(self._on_finished)  # type: ignore[arg-type]
        self.worker = w
        w.start()

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.quit()

    def _on_progress(self, value: object) -> None:
        done, total = cast("tuple[int, int]", value)
        self.progress.setRange(0, max(1, int(total)))
        self.progress.setValue(int(done))

    def _on_finished(self) -> None:
        self.worker = None
        self.run_button.setEnabled(True)
        self.finished.emit(self.result)

    def _on_result(self, result: object) -> None:
        assert isinstance(result, GuaranteeComparison)
        self.show_result(result)

    # ---- showing -----------------------------------------------------------------------------------
    def show_result(self, c: GuaranteeComparison) -> None:
        self.result = c
        j, g = c.j_choice, c.guaranteed
        for r, (key, _t) in enumerate(ROWS):
            for col, row in ((0, j), (1, g)):
                self.table.setItem(r, col, number_item(_fmt(key, row)))
        head = f"guaranteed\nrisk ≤ {c.ltt.alpha:g} at {100 * (1 - c.ltt.delta):g} %"
        self.table.setHorizontalHeaderLabels(["J's choice\nlowest J", head])
        same = g is not None and c.ltt.chosen == c.j_index
        j_ok = bool(j.get("qualifies"))
        extra = (" J's choice is also the guaranteed one." if same else
                 " J's choice qualifies too." if j_ok else
                 f" J's choice is not certified at α = {c.ltt.alpha:g}.")
        if c.caveat:
            tail = f" Over {c.n_audited} audited samples."
        elif c.weighted:
            tail = (f" Over {c.n_audited} audited samples of one recorded audit draw, each weighted by 1/π, "
                    "its inclusion probability.")
        else:
            tail = (f" Over {c.n_audited} audited samples; the guarantee assumes they are a uniform random draw "
                    "of the run's images.")
        self.message.setText(f"{c.message()}.{extra}{tail}")
        self.load_j.setEnabled(True)
        self.load_g.setEnabled(g is not None)

    def _load(self, guaranteed: bool) -> None:
        c = self.result
        if c is None:
            return
        row = c.guaranteed if guaranteed else c.j_choice
        if row is None:
            return
        self.chosen.emit({p: float(row[p]) for p in c.params})


def _caveat(design: str) -> str:
    """Why labels of this draw carry no guarantee (the box says it under the result)."""
    return {"free": "they were given in free labelling, not drawn at random",
            "mixed": "they pool several draws (or free labelling), whose probabilities do not combine",
            }.get(design, "their audit draw is not recorded (an audit set of an earlier version)")
