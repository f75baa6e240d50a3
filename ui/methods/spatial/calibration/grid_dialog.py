"""The "Grid search" dialog: edit the grids and the objective weights, run the search on a
worker thread (progress bar, Cancel), read the ranked parameter sets, and load one into the
calibration sliders (click a row; double-click loads it and closes the dialog).

The search itself is `workstation.methods.spatial.calibration.iter_grid_search`; this module only parses what
the user typed and shows the answer.
"""

from __future__ import annotations

import math
import re
from typing import Any, cast

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from workstation.methods.spatial.calibration import PAPER_GRID, GridResult, Weights, iter_grid_search
from workstation.types import WorkstationError

from superqt.utils import GeneratorWorker, create_worker
from ....widgets.tables import number_item
from .sliders import PARAMS

MAX_COMBINATIONS = 200_000
_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class GridSpecError(ValueError):
    pass


def parse_grid(text: str, name: str = "value") -> list[float]:
    """Values of one grid: a comma (or space) separated list whose items are numbers or
    `start:stop:step` ranges (stop included when a step lands on it). Empty → []."""
    out: list[float] = []
    for tok in re.split(r"[,\s;]+", text.strip()):
        if not tok:
            continue
        if ":" in tok:
            parts = tok.split(":")
            if len(parts) != 3 or not all(_NUM.match(p) for p in parts):
                raise GridSpecError(f"{name}: {tok!r} is not start:stop:step (e.g. 0.05:0.15:0.025)")
            a, b, s = (float(p) for p in parts)
            if s <= 0:
                raise GridSpecError(f"{name}: the step of {tok!r} must be > 0")
            if b < a:
                raise GridSpecError(f"{name}: in {tok!r} stop is below start")
            n = int(math.floor((b - a) / s + 1e-9)) + 1
            if n > 10_000:
                raise GridSpecError(f"{name}: {tok!r} has {n} values; use a coarser step")
            dec = max(_decimals(parts[0]), _decimals(parts[2]))
            out.extend(round(a + i * s, dec + 6) for i in range(n))
        else:
            if not _NUM.match(tok):
                raise GridSpecError(f"{name}: {tok!r} is not a number")
            out.append(float(tok))
    for v in out:
        if not math.isfinite(v):
            raise GridSpecError(f"{name}: values must be finite")
    # keep order, drop repeats
    seen: set[float] = set()
    uniq = []
    for v in out:
        if v not in seen:
            seen.add(v)
            uniq.append(v)
    return uniq


def _decimals(s: str) -> int:
    s = s.lower().split("e")[0]
    return len(s.split(".")[1]) if "." in s else 0


def _fmt_values(vals: tuple[float, ...] | list[float]) -> str:
    return ", ".join(f"{v:g}" for v in vals)


class GridSearchDialog(QDialog):
    """Non-modal. `chosen(dict)` carries a ranked row's parameters (τ included when searched)."""

    chosen = Signal(dict)
    finished_search = Signal(object)  # GridResult, or None when cancelled / failed

    COLUMNS_AFTER = ("j", "fpr_pass", "risk", "coverage", "accuracy", "n_covered")
    HEADERS_AFTER = ("J", "FPR_PASS", "risk", "coverage", "accuracy", "covered")

    def __init__(self, state: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Calibration grid search")
        self.setObjectName("grid_search_dialog")
        self.state = state
        self.labels_text = ""  # the labels line of the last search's labels
        self.worker: GeneratorWorker | None = None
        self.result: GridResult | None = None  # type: ignore[assignment]  # shadows QDialog.result()
        self._rows: list[dict[str, Any]] = []
        self._cancelled = False
        self.resize(760, 620)

        # ---- grids
        grids_box = QGroupBox("Grids  (comma list, or start:stop:step; empty = keep the current value)")
        form = QFormLayout(grids_box)
        self.grid_edits: dict[str, QLineEdit] = {}
        for spec in PARAMS:
            e = QLineEdit(_fmt_values(PAPER_GRID.get(spec.name, ())))
            e.setObjectName(f"grid_{spec.name}")
            e.setPlaceholderText(f"current value ({spec.label})")
            e.setToolTip(spec.tip)
            e.textChanged.connect(self._update_count)
            self.grid_edits[spec.name] = e
            form.addRow(spec.label, e)

        # ---- weights
        w_box = QGroupBox("Objective  J = w_fpr·FPR_PASS + w_risk·Risk + w_cov·(1 − Coverage)")
        wl = QHBoxLayout(w_box)
        d = Weights()
        self.weight_spins: dict[str, QDoubleSpinBox] = {}
        for key, label, val in (("fpr_pass", "w_fpr", d.fpr_pass), ("risk", "w_risk", d.risk),
                                ("coverage", "w_cov", d.coverage)):
            sp = QDoubleSpinBox()
            sp.setObjectName(f"weight_{key}")
            sp.setRange(0.0, 1000.0)
            sp.setDecimals(2)
            sp.setSingleStep(0.5)
            sp.setValue(val)
            self.weight_spins[key] = sp
            wl.addWidget(QLabel(label))
            wl.addWidget(sp)
            wl.addSpacing(12)
        wl.addStretch(1)

        # ---- run row
        self.count_label = QLabel()
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #b00020;")
        self.error_label.setWordWrap(True)
        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("grid_run")
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("grid_cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m checker evaluations")
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_button)
        run_row.addWidget(self.cancel_button)
        run_row.addWidget(self.progress, 1)

        # ---- results
        self.table = QTableWidget(0, 0)
        self.table.setObjectName("grid_results")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.cellClicked.connect(lambda r, _c: self._choose(r))
        self.table.cellDoubleClicked.connect(self._choose_and_close)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.status = QLabel("Click a row to load its parameters into the sliders; "
                             "double-click to load and close.")
        self.status.setWordWrap(True)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)

        lay = QVBoxLayout(self)
        lay.addWidget(grids_box)
        lay.addWidget(w_box)
        lay.addWidget(self.count_label)
        lay.addWidget(self.error_label)
        lay.addLayout(run_row)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.status)
        lay.addWidget(buttons)

        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        self._update_count()

    # ---- input ------------------------------------------------------------------------------
    def grids(self) -> dict[str, list[float]]:
        """Parsed grids of the non-empty fields (raises GridSpecError with the parameter named)."""
        out: dict[str, list[float]] = {}
        for name, e in self.grid_edits.items():
            vals = parse_grid(e.text(), name)
            if vals:
                out[name] = vals
        if not out:
            raise GridSpecError("give values for at least one parameter")
        return out

    def weights(self) -> Weights:
        return Weights(**{k: sp.value() for k, sp in self.weight_spins.items()})

    def set_grid(self, name: str, text: str) -> None:
        self.grid_edits[name].setText(text)

    def _update_count(self) -> None:
        try:
            g = self.grids()
        except GridSpecError as e:
            self.count_label.setText("")
            self.error_label.setText(str(e))
            self.run_button.setEnabled(False)
            return
        n_eval = int(np.prod([len(v) for k, v in g.items() if k != "tau"]))  # 1 when only τ is searched
        n_comb = n_eval * len(g.get("tau", [0]))
        self.error_label.setText("" if n_comb <= MAX_COMBINATIONS else
                                 f"{n_comb} combinations is too many (at most {MAX_COMBINATIONS}); "
                                 "use coarser grids")
        self.count_label.setText(
            f"{n_comb} parameter sets · {n_eval} checker evaluations over the audited samples")
        self.run_button.setEnabled(n_comb <= MAX_COMBINATIONS and self.worker is None)

    # ---- run --------------------------------------------------------------------------------
    def run(self) -> None:
        st = self.state
        if st.dataset is None or st.dataset.n == 0:
            self.error_label.setText("open a project with samples first")
            return
        try:
            grids = self.grids()
            weights = self.weights()
        except (GridSpecError, WorkstationError) as e:
            self.error_label.setText(str(e))
            return
        if not (st.calib_human >= 0).any():
            self.error_label.setText("calibration needs human labels: label an audit set first")
            return
        self.error_label.setText("")
        self.labels_text = self._labels_text()
        self.result = None
        self._rows = []
        self._cancelled = False
        self.table.setRowCount(0)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.status.setText("running…")
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        w = create_worker(iter_grid_search, st.dataset, st.config, st.calib_human.copy(), grids, weights,
                          _start_thread=False, _ignore_errors=True)
        w.yielded.connect(self._on_progress)
        w.returned.connect(self._on_result)
        w.errored.connect(self._on_error)
        # superqt types finished as SigInst[None]
        w.finished.connect(self._on_finished)  # type: ignore[arg-type]
        self.worker = w
        w.start()

    def cancel(self) -> None:
        if self.worker is not None:
            self._cancelled = True
            self.worker.quit()
            self.cancel_button.setEnabled(False)
            self.status.setText("cancelling…")

    def is_running(self) -> bool:
        """A search was started and its end has not been handled yet."""
        return self.worker is not None

    def _on_progress(self, value: object) -> None:
        done, total = cast("tuple[int, int]", value)
        self.progress.setRange(0, max(1, int(total)))
        self.progress.setValue(int(done))

    def _on_result(self, result: object) -> None:
        assert isinstance(result, GridResult)
        self.result = result
        self._fill(result)
        best = result.best
        self.status.setText(
            f"{len(result)} parameter sets over {result.n_audited} audited samples"
            + (f" ({self.labels_text})" if self.labels_text else "") + ". Best: "
            + ", ".join(f"{p}={best[p]:g}" for p in result.params)
            + f". It {result.optimised_text()}. Click a row to load it; double-click to load and close.")

    def _labels_text(self) -> str:
        """The labels line of the search's labels (the Calibration tab's selection)."""
        from workstation.evaluation.selection import set_names
        from workstation.methods.spatial.store import TASK

        st = self.state
        p = getattr(st, "project", None)
        sel = getattr(st, "selected", None)
        if p is None or sel is None or sel.resolved is None:
            return ""
        return str(sel.resolved.describe(set_names(p, TASK)))

    def _on_error(self, e: object) -> None:
        self.error_label.setText(str(e))
        self.status.setText("grid search failed")

    def _on_finished(self) -> None:
        self.cancel_button.setEnabled(False)
        self.worker = None
        if self._cancelled and self.result is None and not self.error_label.text():
            # said here, on `finished`, which always comes: a CI run once saw `finished` handled with
            # the worker's `aborted` not (yet) handled; a search whose last step ends as the cancel
            # arrives sends no `aborted` at all
            self.status.setText(f"cancelled after {self.progress.value()} of "
                                f"{self.progress.maximum()} checker evaluations")
        keep = self.error_label.text()  # a failed run's message stays until the input changes
        self._update_count()
        if keep and not self.error_label.text():
            self.error_label.setText(keep)
        # everything above is settled when listeners hear the outcome
        self.finished_search.emit(self.result)

    def _fill(self, result: GridResult) -> None:
        self._rows = result.table(ranked=True)
        params = list(result.params)
        headers = ["rank"] + params + list(self.HEADERS_AFTER)
        keys = ["rank"] + params + list(self.COLUMNS_AFTER)
        self.table.setUpdatesEnabled(False)
        self.table.clear()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        from .guarantee_box import J_TEXT

        j_head = self.table.horizontalHeaderItem(headers.index("J"))
        assert j_head is not None  # set by setHorizontalHeaderLabels
        j_head.setToolTip(J_TEXT)
        self.table.setRowCount(len(self._rows))
        for r, row in enumerate(self._rows):
            for c, k in enumerate(keys):
                v = row[k]
                if k in ("rank", "n_covered"):
                    txt = str(int(v))
                elif k in params:
                    txt = f"{v:g}"
                elif v != v:  # an undefined rate (nothing to count); J counts it as 1
                    txt = "—"
                else:
                    txt = f"{v:.4f}"
                self.table.setItem(r, c, number_item(txt))
        self.table.setUpdatesEnabled(True)

    # ---- choosing a row ---------------------------------------------------------------------
    def row_params(self, r: int) -> dict[str, float]:
        assert self.result is not None
        row = self._rows[r]
        return {p: float(row[p]) for p in self.result.params}

    def _on_selection(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        # keyboard navigation in the table (a mouse click is handled by cellClicked)
        if rows and self.table.hasFocus() and QApplication.mouseButtons() == Qt.MouseButton.NoButton:
            self._choose(rows[0].row())

    def _choose(self, r: int) -> None:
        if self.result is None or not 0 <= r < len(self._rows):
            return
        self.chosen.emit(self.row_params(r))
        self.status.setText(f"loaded rank {self._rows[r]['rank']}: "
                            + ", ".join(f"{k}={v:g}" for k, v in self.row_params(r).items()))

    def _choose_and_close(self, r: int, _c: int = 0) -> None:
        self._choose(r)
        self.accept()

    def closeEvent(self, ev: Any) -> None:  # noqa: N802 (Qt name)
        self.cancel()
        super().closeEvent(ev)

    def reject(self) -> None:
        self.cancel()
        super().reject()
