"""Headline numbers of one verdict set, and the calibrated − uncalibrated table (the paper's
Table 9: before, after and the difference for pass rate, coverage, PASS | decided, prompt pass
rate best-of-K and mean confidence) in its box, with the choice of what "before" is: the version
the session started from, the active version's parent, or any stored version.

The numbers come from `workstation.methods.spatial.metrics` (image metrics over all samples; prompt-level
best-of-K / all-of-K summed over runs; abstention counts by reason). With one run they are that
run's `main_results` / `prompt_metrics` row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QComboBox, QGroupBox, QHeaderView, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from workstation.dataset import Dataset
from workstation.evaluation.intervals import Estimate
from workstation.methods.spatial import metrics
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.store import SpatialStore
from workstation.methods.spatial.types import FAIL, PASS, REASONS, UNDECIDABLE
from workstation.util.refs import weak

from ....widgets.forms import combo_row
from ....widgets.tables import display_only, fit_height, set_cell


@dataclass(frozen=True)
class MetricRow:
    key: str
    label: str
    kind: str = "f"  # "f" rate/number (4 decimals), "d" count


# Rows of the live metrics table (verdict counts first: what a slider visibly changes).
METRIC_ROWS: tuple[MetricRow, ...] = (
    MetricRow("pass_count", "PASS", "d"),
    MetricRow("fail_count", "FAIL", "d"),
    MetricRow("undecidable_count", "UNDECIDABLE", "d"),
    MetricRow("pass_rate", "pass rate"),
    MetricRow("coverage", "coverage"),
    MetricRow("pass_rate_cond", "PASS | decided"),
    MetricRow("prompt_pass_rate", "prompt pass (best-of-K)"),
    MetricRow("all_of_k_pass_rate", "prompt pass (all-of-K)"),
    MetricRow("mean_conf", "mean conf"),
)

# Rows of the calibrated − uncalibrated table (Table 9).
DELTA_ROWS: tuple[MetricRow, ...] = (
    MetricRow("pass_rate", "pass rate"),
    MetricRow("coverage", "coverage"),
    MetricRow("pass_rate_cond", "PASS | decided"),
    MetricRow("prompt_pass_rate", "prompt pass (best-of-K)"),
    MetricRow("mean_conf", "mean conf"),
)


def at_tau_values(verdict: np.ndarray, conf: np.ndarray, tau: float) -> dict[str, float]:
    """The per-image numbers at the operating point τ (a PASS / FAIL below τ counts as
    UNDECIDABLE), cheap enough for every step of a drag; `metrics.headline` gives the same values
    with their intervals (and the prompt-level ones) once the sliders rest."""
    v = np.asarray(verdict)
    c = np.asarray(conf, np.float64)
    n = len(v)
    high = c >= tau
    p = int(np.count_nonzero((v == PASS) & high))
    f = int(np.count_nonzero((v == FAIL) & high))
    nan = float("nan")
    return {"pass_count": p, "fail_count": f, "undecidable_count": n - p - f,
            "pass_rate": p / n if n else nan, "coverage": (p + f) / n if n else nan,
            "pass_rate_cond": p / (p + f) if p + f else nan}


def estimate_text(e: Estimate, kind: str) -> str:
    """A cell of the Live-verdicts table: a count as a whole number; a rate with 4 decimals and its
    95 % interval on the line below ("*" after it: fewer than 10 samples or prompts behind it);
    "—" with n when undefined."""
    if kind == "d":
        return str(int(e.value))
    if not e.defined:
        return f"—\nn {e.n}"
    second = f"[{e.lo:.3f}, {e.hi:.3f}]" if e.has_interval else ""
    return f"{e.value:.4f}\n{second}{'*' if e.small else ''}"


@dataclass
class Summary:
    values: dict[str, float]
    abstention: list[tuple[str, int, float]]  # (reason, count, fraction of all samples)
    # a weak reference to the VerdictArrays summarised: a summary kept by a table never keeps a
    # closed project's verdicts alive
    source_ref: Callable[[], Any] = field(default=lambda: None, repr=False, compare=False)

    @property
    def source(self) -> Any:
        """The verdicts summarised while somebody else keeps them, else None."""
        return self.source_ref()

    def get(self, key: str) -> float:
        return float(self.values.get(key, float("nan")))


def summarize_verdicts(ds: Dataset, v: Any, k: int | None = None) -> Summary:
    """Headline numbers over all samples of `ds` (all runs together)."""
    im = metrics.image_metrics(v.verdict, v.conf)
    # the prompt totals and the (verdict, reason) counts, updated from the last call's by the
    # samples whose verdict or reason changed
    prompts, best, allk, pairs = metrics.verdict_totals(ds, v, k)
    nan = float("nan")
    vals = dict(im)
    vals["prompts"] = prompts
    vals["prompt_pass_rate"] = best / prompts if prompts else nan
    vals["all_of_k_pass_rate"] = allk / prompts if prompts else nan
    # every abstention reason over all runs (metrics.abstention's counts, summed over runs):
    # the UNDECIDABLE row of the pair counts
    per_reason = pairs[UNDECIDABLE]
    n = max(ds.n, 1)
    ab = [(REASONS[c], int(per_reason[c]), int(per_reason[c]) / n) for c in range(1, len(REASONS))] \
        if ds.n else []
    return Summary(vals, ab, source_ref=weak(v))


_UP = QColor("#2e9e57")
_DOWN = QColor("#d9443a")


class DeltaTable(QTableWidget):
    """Rows DELTA_ROWS; columns before, after, Δ (after − before)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(len(DELTA_ROWS), 3, parent)
        self.setObjectName("calib_deltas")
        self.setVerticalHeaderLabels([r.label for r in DELTA_ROWS])
        self.setHorizontalHeaderLabels(["before", "after", "Δ"])
        self.setToolTip("Δ = after − before")
        display_only(self)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setDefaultSectionSize(22)
        self.before: Summary | None = None
        self.after: Summary | None = None

    def set_summaries(self, before_name: str, before: Summary, after_name: str, after: Summary) -> None:
        self.before, self.after = before, after
        self.setHorizontalHeaderLabels([before_name, after_name, "Δ"])
        for r, row in enumerate(DELTA_ROWS):
            b, a = before.get(row.key), after.get(row.key)
            d = a - b
            for c, x in enumerate((b, a)):
                self._set(r, c, f"{x:.4f}" if np.isfinite(x) else "—")
            plain = self.palette().color(QPalette.ColorRole.Text)
            colour = (_UP if d > 0 else _DOWN) if np.isfinite(d) and abs(d) >= 5e-5 else plain
            self._set(r, 2, f"{d:+.4f}" if np.isfinite(d) else "—", colour)

    def _set(self, r: int, c: int, text: str, color: QColor | None = None) -> QTableWidgetItem:
        return set_cell(self, r, c, text, color)

    def delta(self, key: str) -> float:
        assert self.before is not None and self.after is not None
        return self.after.get(key) - self.before.get(key)


class DeltasBox(QGroupBox):
    """"Calibrated − uncalibrated": the live verdicts (or the applied version's) against the
    version chosen as "before", whose verdicts are evaluated once and kept until the data
    changes. `start_id`: the version the session started from."""

    def __init__(self, state: Any, refresh: Callable[[], object]) -> None:
        super().__init__("Calibrated − uncalibrated")
        self.state = state
        self.start_id: int | None = None
        self._summaries: dict[int | None, Summary] = {}  # stored version id → summary
        dl = QVBoxLayout(self)
        before_row, self.before_combo = combo_row("before:", refresh, name="calib_before")
        self.before_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.before_combo.setMinimumContentsLength(16)
        dl.addLayout(before_row)
        self.delta_table = DeltaTable()
        fit_height(self.delta_table)
        dl.addWidget(self.delta_table)

    def forget(self) -> None:
        """The data changed: every version's verdicts are evaluated again when asked."""
        self._summaries.clear()

    def fill_versions(self) -> None:
        """The choices of "before", keeping the one chosen when it is still there."""
        st = self.state
        combo = self.before_combo
        keep = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        start_name = f"v{self.start_id}" if self.start_id is not None else "defaults"
        combo.addItem(f"session start ({start_name})", ("start", self.start_id))
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

    def before_id(self) -> int | None:
        data = self.before_combo.currentData()
        return None if data is None else data[1]

    def _version_summary(self, cid: int | None) -> Summary:
        s = self._summaries.get(cid)
        if s is None:
            from workstation.methods.spatial.checker import evaluate

            st = self.state
            cfg = SpatialStore(st.project).get_config(cid) if cid is not None else CheckerConfig()
            s = summarize_verdicts(st.dataset, evaluate(st.dataset, cfg))
            self._summaries[cid] = s
        return s

    def show_deltas(self, live: Summary, applied: bool) -> None:
        """"before" against `live`, named as the applied version when it is."""
        bid = self.before_id()
        before = self._version_summary(bid)
        # on two lines: the left column is narrow and a cut "1 (applie" reads badly
        after_name = f"v{self.state.config_id}\n(applied)" if applied else "live"
        before_name = f"v{bid}" if bid is not None else "defaults"
        self.delta_table.set_summaries(before_name, before, after_name, live)
        fit_height(self.delta_table)  # a header on two lines is taller: every row stays in view
