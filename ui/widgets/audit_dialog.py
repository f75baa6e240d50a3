"""New audit set, for any method: name, size, seed, strata, confidence bins, blind, re-checks,
raters (k per item on a share of the items) and gold items.

The dialog edits the parameters of `workstation.evaluation.audit_sets.draw_audit_set` over the
method's `AuditPopulation` (the same draw as `python main.py audit draw`) and previews how the
sample spreads over the strata and the raters; "Create and start" stores the set, and the window
makes it the method's judging queue (of an overlap set: the current annotator's part of it).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.audit_sets import AuditPopulation, draw_audit_set, stratified_indices, strata_counts
from workstation.evaluation.base import LabelScheme
from workstation.types import WorkstationError

from .forms import double_spin_box, error_label, ok_cancel, spin_box, wrapped_label


class AuditSetDialog(QDialog):
    def __init__(self, project: Any, scheme: LabelScheme, pop: AuditPopulation, params: dict[str, Any] | None = None,
                 title: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project, self.scheme, self.pop, self.params = project, scheme, pop, params or {}
        self.setWindowTitle(f"New audit set — {title}" if title else "New audit set")
        self.setObjectName("auditSetDialog")
        self.audit_set_id: int | None = None
        lay = QVBoxLayout(self)
        form = QFormLayout()
        n_sets = len(project.audit.sets()) if project is not None else 0
        self.name = QLineEdit(f"audit-{n_sets + 1}")
        self.name.setObjectName("auditName")
        form.addRow("Name", self.name)
        # shadows QWidget.size(): the name callers and tests reach the size box by
        self.size: QSpinBox = spin_box(  # type: ignore[assignment]
            1, max(1, len(pop)), min(200, max(1, len(pop))), name="auditSize")
        form.addRow(pop.noun.capitalize(), self.size)
        self.seed = spin_box(0, 2_000_000_000, name="auditSeed")
        form.addRow("Seed", self.seed)
        strata_row = QHBoxLayout()
        self.strata: dict[str, QCheckBox] = {}
        for key in pop.strata:
            cb = QCheckBox(pop.titles.get(key, key))
            cb.setObjectName(f"stratum_{key}")
            cb.setChecked(key in pop.default_strata)
            cb.toggled.connect(self._preview)
            self.strata[key] = cb
            strata_row.addWidget(cb)
        if pop.strata:
            form.addRow("Strata", strata_row)
        self.bins = spin_box(1, 20, 5 if pop.conf is not None else 1, name="auditBins")
        self.bins.setEnabled(pop.conf is not None)
        form.addRow("Confidence bins", self.bins)
        self.blind = QCheckBox("hide the automated outcome and every other label while labelling")
        self.blind.setObjectName("auditBlind")
        self.blind.setChecked(True)
        form.addRow("Blind", self.blind)
        self.recheck = double_spin_box(0.0, 0.5, 0.1, step=0.05, name="auditRecheck",
                                       tip="this fraction of the items comes back later in the queue, blind, "
                                       "to measure self-agreement")
        form.addRow("Re-check fraction", self.recheck)
        self.raters = QLineEdit("")
        self.raters.setObjectName("auditRaters")
        self.raters.setPlaceholderText("names, comma-separated (none: anyone labels every item)")
        form.addRow("Raters", self.raters)
        self.k = spin_box(1, 20, 1, name="auditK")
        self.k.setToolTip("independent raters per item; each rater's queue is blind to the others' labels")
        form.addRow("Raters per item (k)", self.k)
        self.share = double_spin_box(0.05, 1.0, 1.0, step=0.05, name="auditShare",
                                     tip="share of the items that get k raters; the others get one")
        form.addRow("Overlap share", self.share)
        self.gold_rate = double_spin_box(0.0, 0.5, 0.0, step=0.05, name="auditGoldRate",
                                         tip="about this share of the first-pass items are gold items (with a "
                                         "known answer), seeded into a blind set and given to every rater")
        form.addRow("Gold rate", self.gold_rate)
        self.exclude = QCheckBox(f"leave out {pop.noun} that already have a label")
        self.exclude.setObjectName("auditExclude")
        self.exclude.setEnabled(pop.labelled is not None)
        form.addRow("", self.exclude)
        lay.addLayout(form)
        self.preview = wrapped_label(name="auditPreview")
        lay.addWidget(self.preview)
        self.error = error_label("auditError", wrap=True)
        lay.addWidget(self.error)
        lay.addWidget(ok_cancel(self, "Create and start", "auditCreate", self._create))
        for w in (self.size, self.seed, self.bins, self.recheck, self.k, self.share, self.gold_rate):
            w.valueChanged.connect(self._preview)
        self.exclude.toggled.connect(self._preview)
        self.blind.toggled.connect(self._preview)
        self.raters.textChanged.connect(self._preview)
        self._preview()
        self.resize(620, 500)

    def rater_names(self) -> list[str]:
        return [r.strip() for r in self.raters.text().split(",") if r.strip()]

    def _raters_text(self, n: int) -> str:
        """What the raters and gold fields ask for, in the preview's words."""
        names = self.rater_names()
        self.k.setEnabled(bool(names))
        self.share.setEnabled(bool(names) and self.k.value() > 1)
        self.gold_rate.setEnabled(self.blind.isChecked())
        out = ""
        if names:
            k = self.k.value()
            if k > len(names):
                return f" k = {k} raters per item: name at least {k} raters."
            n_over = int(round(self.share.value() * n)) if k > 1 else 0
            per = (n_over * k + (n - n_over)) / len(names)
            out = (f" Raters {', '.join(names)}: {k} per item on {n_over} of the {n} items"
                   if k > 1 else f" Raters {', '.join(names)}: one per item") + f", about {per:.0f} items each."
        if self.gold_rate.value() > 0 and self.blind.isChecked():
            from workstation.evaluation.raters import gold_answers

            g = len(gold_answers(self.project, self.scheme.task)) if self.project is not None else 0
            out += (f" Gold items: about {self.gold_rate.value():.0%} of the first passes, from the task's {g} "
                    "gold answers." if g else " No gold answers in this task yet: no gold item can be seeded.")
        return out

    def chosen_strata(self) -> tuple[str, ...]:
        return tuple(k for k, cb in self.strata.items() if cb.isChecked())

    def _preview(self, *_: Any) -> None:
        pop = self.pop
        if not len(pop):
            self.preview.setText(f"no {pop.noun} to audit")
            return
        try:
            codes, _names = pop.codes(self.chosen_strata())
            exclude = pop.labelled if self.exclude.isChecked() else None
            picked = stratified_indices(codes, self.size.value(), self.seed.value(), conf=pop.conf,
                                        conf_bins=self.bins.value(), exclude=exclude)
            table = strata_counts(pop, self.chosen_strata(), picked)
        except WorkstationError as e:
            self.preview.setText(str(e))
            return
        used = sum(1 for r in table if r["sampled"])
        n_re = int(round(self.recheck.value() * len(picked)))
        bins = f", spread over {self.bins.value()} confidence bins" if pop.conf is not None else ""
        self.preview.setText(f"{len(picked)} of {len(pop)} {pop.noun} from {used} of {len(table)} strata{bins}; "
                             f"{n_re} re-checks come back later in the queue." + self._raters_text(len(picked)))

    def _create(self) -> None:
        try:
            self.audit_set_id = draw_audit_set(
                self.project, self.scheme, self.pop, name=self.name.text().strip() or "audit",
                size=self.size.value(), seed=self.seed.value(), strata=self.chosen_strata(),
                conf_bins=self.bins.value(), blind=self.blind.isChecked(), recheck_fraction=self.recheck.value(),
                exclude_labelled=self.exclude.isChecked(), params=self.params, raters=self.rater_names(),
                k=self.k.value() if self.rater_names() else 1, overlap_share=self.share.value(),
                gold_rate=self.gold_rate.value() if self.blind.isChecked() else 0.0)
        except WorkstationError as e:
            self.error.setText(str(e))
            return
        self.accept()
