"""Audit sets: draw a seeded stratified sample, store it, make it the (blind) queue.

`draw_audit_set` (no widgets) draws with `workstation.methods.spatial.audit.stratified_sample`, shuffles the
queue order with the same seed (so the seeds of one prompt do not come in a row), and puts a
chosen fraction of the items back later in the queue as blind consistency re-checks. The
dialog edits its parameters and shows how the sample spreads over the strata.
`self_agreement_report` compares, for the re-checked items, each annotator's first label with
the re-check label (percent agreement and Cohen's κ).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.agreement import cohen_kappa, kappa_bounds, percent_agreement
from workstation.evaluation.intervals import SMALL_N
from workstation.methods.spatial.audit import STRATA_KEYS, strata_table, stratified_sample
from workstation.methods.spatial.types import VERDICT_CODE
from workstation.types import WorkstationError

from ...state import AppState
from workstation.methods.spatial.store import LABELS_RELATION, SpatialStore


def recheck_plan(n: int, fraction: float, seed: int) -> list[tuple[int, int]]:
    """(original position, final position) of the re-checks for a queue of n items.

    round(fraction·n) items are re-checked; each comes back at least max(3, n // 4) items after
    the original (or at the end). Final positions index the queue with the re-checks in it.
    """
    k = int(round(max(0.0, min(fraction, 1.0)) * n))
    if n == 0 or k == 0:
        return []
    rng = np.random.default_rng([seed, 7])
    originals = np.sort(rng.choice(n, size=k, replace=False))
    gap = max(3, n // 4)
    # target slot: "after original item j" for j in [orig + gap, n - 1] (n - 1 = at the end)
    after = [int(rng.integers(min(o + gap, n - 1), n)) for o in originals.tolist()]
    # final positions: items are placed after base item `a`, in order of a (ties by original)
    order = sorted(range(k), key=lambda i: (after[i], originals[i]))
    out = []
    for rank, i in enumerate(order):
        out.append((int(originals[i]), after[i] + 1 + rank))
    return sorted(out, key=lambda t: t[1])


def draw_audit_set(state: AppState, *, name: str, size: int, seed: int,
                   strata: tuple[str, ...] = ("run", "relation", "verdict"), conf_bins: int = 5,
                   blind: bool = True, recheck_fraction: float = 0.1,
                   exclude_labelled: bool = False) -> int:
    """Draw, store and return the id of a new audit set (the caller makes it the queue)."""
    p, ds, v = state.project, state.dataset, state.verdicts
    if p is None or ds is None:
        raise WorkstationError("open a project first")
    if p.read_only:
        raise WorkstationError("this project is open read-only: an audit set cannot be stored")
    if v is None and ds.n:
        raise WorkstationError("the checker is still evaluating this project's samples: draw the audit set "
                               "when the status bar says they are checked")
    exclude = state.human >= 0 if exclude_labelled else None
    rows = stratified_sample(ds, v, size, seed, strata=strata, conf_bins=conf_bins, exclude=exclude)
    if len(rows) == 0:
        raise WorkstationError("no sample is eligible for this audit (all labelled already?)")
    rng = np.random.default_rng(seed)
    rows = rows[rng.permutation(len(rows))]
    ids = ds.samples.sample_id[rows].tolist()
    plan = recheck_plan(len(ids), recheck_fraction, seed)
    rechecks = [(final, ids[orig]) for orig, final in plan]
    params = {"size": int(size), "seed": int(seed), "strata": list(strata), "conf_bins": int(conf_bins),
              "recheck_fraction": float(recheck_fraction), "rechecks": len(rechecks),
              "config_version": state.config_id, "config_hash": state.config.content_hash(),
              "exclude_labelled": bool(exclude_labelled), "blind": bool(blind)}
    return SpatialStore(p).create_audit_set(name, ids, params, blind=blind, rechecks=rechecks)


def self_agreement_report(state: AppState, audit_set_id: int | None = None) -> dict[str, Any]:
    """Per annotator and overall: first label vs re-check label on the re-checked items."""
    p = state.project
    if p is None:
        return {"n_pairs": 0, "percent": float("nan"), "kappa": float("nan"), "by_annotator": {}}
    where = "WHERE audit_set_id = ?" if audit_set_id is not None else ""
    params = [audit_set_id] if audit_set_id is not None else []
    rows = p.con.execute(
        "SELECT sample_id, annotator, coalesce(source, '') = 'recheck' AS rc, "
        f"arg_max_null(verdict, event_id) FROM {LABELS_RELATION} {where} GROUP BY ALL", params).fetchall()
    first: dict[tuple[str, str], str | None] = {}
    again: dict[tuple[str, str], str | None] = {}
    for sid, ann, rc, verdict in rows:
        (again if rc else first)[(sid, ann)] = verdict
    pairs = [(k, first[k], again[k]) for k in again if k in first and first[k] and again[k]]
    out: dict[str, Any] = {"by_annotator": {}}

    ds = state.dataset
    index = ds.sample_index() if ds is not None and ds.n else {}
    prompt_of = np.asarray(ds.samples.prompt_id, dtype=object) if ds is not None and ds.n else None

    def summary(ps: list[Any]) -> dict[str, Any]:
        a = np.array([VERDICT_CODE[x[1]] for x in ps], np.int64)
        b = np.array([VERDICT_CODE[x[2]] for x in ps], np.int64)
        # the bounds resample the samples' prompts (a prompt's seeds are judged alike)
        unit = [prompt_of[index[x[0][0]]] if prompt_of is not None and x[0][0] in index else x[0][0] for x in ps]
        bounds = kappa_bounds(a, b, unit)
        return {"n_pairs": len(ps), "percent": percent_agreement(a, b) if ps else float("nan"),
                "kappa": cohen_kappa(a, b) if ps else float("nan"), "kappa_lo": bounds["kappa_lo"],
                "kappa_hi": bounds["kappa_hi"], "small": bounds["small"]}

    out.update(summary(pairs))
    for ann in sorted({k[1] for k, _, _ in pairs}):
        out["by_annotator"][ann] = summary([x for x in pairs if x[0][1] == ann])
    return out


def format_agreement(r: dict[str, Any]) -> str:
    if not r.get("n_pairs"):
        return "no re-checked item has both labels yet"
    pct = r["percent"]
    k = r["kappa"]
    pct_s = f"{pct * 100:.0f}%" if math.isfinite(pct) else "—"
    k_s = f"{k:.2f}" if math.isfinite(k) else "undefined"
    lo, hi = r.get("kappa_lo", float("nan")), r.get("kappa_hi", float("nan"))
    if math.isfinite(k) and math.isfinite(lo) and math.isfinite(hi):
        k_s += f" [{lo:.2f}, {hi:.2f}]"
    small = f" (fewer than {SMALL_N} re-checks)" if r.get("small") else ""
    return f"{r['n_pairs']} re-checks: {pct_s} the same, κ = {k_s}{small}"


class AuditSetDialog(QDialog):
    """New audit set: name, size, seed, strata, confidence bins, blind, re-check fraction."""

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setWindowTitle("New audit set")
        self.setObjectName("auditSetDialog")
        self.audit_set_id: int | None = None
        lay = QVBoxLayout(self)
        form = QFormLayout()
        n_sets = len(state.project.audit_sets()) if state.project is not None else 0
        self.name = QLineEdit(f"audit-{n_sets + 1}")
        self.name.setObjectName("auditName")
        form.addRow("Name", self.name)
        self.size = QSpinBox()
        self.size.setObjectName("auditSize")
        self.size.setRange(1, max(1, state.dataset.n if state.dataset is not None else 1))
        self.size.setValue(min(200, self.size.maximum()))
        form.addRow("Samples", self.size)
        self.seed = QSpinBox()
        self.seed.setObjectName("auditSeed")
        self.seed.setRange(0, 2_000_000_000)
        self.seed.setValue(0)
        form.addRow("Seed", self.seed)
        strata_row = QHBoxLayout()
        self.strata: dict[str, QCheckBox] = {}
        for key in STRATA_KEYS:
            cb = QCheckBox({"run": "method (run)", "relation": "relation", "verdict": "checker verdict",
                            "reason": "reason"}[key])
            cb.setObjectName(f"stratum_{key}")
            cb.setChecked(key in ("run", "relation", "verdict"))
            cb.toggled.connect(self._preview)
            self.strata[key] = cb
            strata_row.addWidget(cb)
        form.addRow("Strata", strata_row)
        self.bins = QSpinBox()
        self.bins.setObjectName("auditBins")
        self.bins.setRange(1, 20)
        self.bins.setValue(5)
        form.addRow("Confidence bins", self.bins)
        self.blind = QCheckBox("hide the checker's verdict, confidence and colours while labelling")
        self.blind.setObjectName("auditBlind")
        self.blind.setChecked(True)
        form.addRow("Blind", self.blind)
        self.recheck = QDoubleSpinBox()
        self.recheck.setObjectName("auditRecheck")
        self.recheck.setRange(0.0, 0.5)
        self.recheck.setSingleStep(0.05)
        self.recheck.setDecimals(2)
        self.recheck.setValue(0.1)
        self.recheck.setToolTip("this fraction of the items comes back later in the queue, blind, "
                                "to measure self-agreement")
        form.addRow("Re-check fraction", self.recheck)
        self.exclude = QCheckBox("leave out samples that already have a label")
        self.exclude.setObjectName("auditExclude")
        form.addRow("", self.exclude)
        lay.addLayout(form)
        self.preview = QLabel("")
        self.preview.setObjectName("auditPreview")
        self.preview.setWordWrap(True)
        lay.addWidget(self.preview)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #d64541;")
        self.error.setWordWrap(True)
        lay.addWidget(self.error)
        bb = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel, self)
        bb.button(QDialogButtonBox.Ok).setText("Create and start")
        bb.button(QDialogButtonBox.Ok).setObjectName("auditCreate")
        bb.accepted.connect(self._create)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
        for w in (self.size, self.seed, self.bins, self.recheck):
            w.valueChanged.connect(self._preview)
        self.exclude.toggled.connect(self._preview)
        self._preview()
        self.resize(560, 380)

    def chosen_strata(self) -> tuple[str, ...]:
        return tuple(k for k, cb in self.strata.items() if cb.isChecked())

    def _preview(self, *_: Any) -> None:
        st = self.state
        if st.dataset is None or st.dataset.n == 0:
            self.preview.setText("no samples in this project")
            return
        try:
            exclude = st.human >= 0 if self.exclude.isChecked() else None
            rows = stratified_sample(st.dataset, st.verdicts, self.size.value(), self.seed.value(),
                                     strata=self.chosen_strata(), conf_bins=self.bins.value(), exclude=exclude)
            table = strata_table(st.dataset, st.verdicts, rows, self.chosen_strata())
        except WorkstationError as e:
            self.preview.setText(str(e))
            return
        used = sum(1 for r in table if r["sampled"])
        n_re = int(round(self.recheck.value() * len(rows)))
        self.preview.setText(f"{len(rows)} of {st.dataset.n} samples from {used} of {len(table)} strata, "
                             f"spread over {self.bins.value()} confidence bins; {n_re} re-checks "
                             "come back later in the queue.")

    def _create(self) -> None:
        try:
            self.audit_set_id = draw_audit_set(
                self.state, name=self.name.text().strip() or "audit", size=self.size.value(),
                seed=self.seed.value(), strata=self.chosen_strata(), conf_bins=self.bins.value(),
                blind=self.blind.isChecked(), recheck_fraction=self.recheck.value(),
                exclude_labelled=self.exclude.isChecked())
        except WorkstationError as e:
            self.error.setText(str(e))
            return
        self.accept()


class SelfAgreementLabel(QLabel):
    """A one-line self-agreement summary (shown in the audit menu's report and the status bar)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextInteractionFlags(Qt.TextSelectableByMouse)
