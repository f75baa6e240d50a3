"""Which labels count, in the window: a one-line `LabelsLine` beside the figures that
use human labels, and the `LabelSelectionDialog` it opens to choose them — whose labels, from
which audit sets or plans (or free labelling), first passes only or with the re-checks, and the
consensus rule (`workstation.evaluation.selection`). One selection per method's task, kept with
the project by the method's session; the line says what it gives ("labels: audit set #3, a1
and a2, majority — 118 items") and whether the labels are one recorded random draw."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QComboBox, QDialog, QGroupBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from workstation.evaluation.selection import RULES, LabelSelection, set_names
from workstation.types import WorkstationError

from .forms import check_box, error_label, ok_cancel, push_button, wrapped_label

_RULE_TITLES = {"latest": "latest label wins (any annotator)", "majority": "majority (a tie is disputed)",
                "unanimous": "unanimous only (any disagreement is disputed)", "mean": "mean rating (ordinal)",
                "adjudicated": "adjudicated (the adjudicator's label, else the majority)"}


def draw_note(resolved: Any) -> str:
    """What the labels' draw allows: a design-weighted guarantee, or none."""
    if resolved is None or not len(resolved):
        return ""
    if resolved.known_draw:
        return f"draw: {resolved.design}, weighted by 1/π where a guarantee needs it"
    return {"free": "free labelling: no random draw, no sampling guarantee",
            "mixed": "several draws pooled: no sampling guarantee"}.get(
        resolved.design, "draw not recorded: no sampling guarantee")


class LabelsLine(QWidget):
    """"labels: …" and a Labels… button that opens the dialog (`choose`)."""

    def __init__(self, resolved: Callable[[], Any], project: Callable[[], Any], task: str,
                 apply: Callable[[LabelSelection], None], current: Callable[[], LabelSelection],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("labels_line")
        self._resolved, self._project, self.task, self._apply, self._current = resolved, project, task, apply, current
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        self.text = wrapped_label("", name="labels_line_text", selectable=True)
        self.button = push_button("Labels…", self.choose, tip="choose which labels these figures use",
                                  name="labels_line_button")
        lay.addWidget(self.text, 1)
        lay.addWidget(self.button)
        self.refresh()

    def refresh(self) -> None:
        p = self._project()
        if p is None:
            self.text.setText("labels: no project open")
            self.button.setEnabled(False)
            return
        self.button.setEnabled(True)
        try:
            res = self._resolved()
        except WorkstationError as e:
            self.text.setText(f"labels: {e}")
            return
        note = draw_note(res)
        self.text.setText(res.describe(set_names(p, self.task)) + (f"  ·  {note}" if note else ""))

    def line(self) -> str:
        return self.text.text()

    def choose(self) -> None:
        p = self._project()
        if p is None:
            return
        dlg = LabelSelectionDialog(p, self.task, self._current(), self)
        accepted = dlg.exec() == QDialog.DialogCode.Accepted
        chosen = dlg.result_selection
        dlg.deleteLater()  # a later Labels… opens a dialog of its own, not beside this one
        if accepted and chosen is not None:
            self._apply(chosen)
            self.refresh()


class LabelSelectionDialog(QDialog):
    """Choose a task's label selection."""

    def __init__(self, project: Any, task: str, current: LabelSelection, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Which labels count")
        self.setObjectName("label_selection_dialog")
        self.result_selection: LabelSelection | None = None
        lay = QVBoxLayout(self)
        lay.addWidget(wrapped_label("The figures of this tab use the labels chosen here; the report records the "
                                    "same choice.", name="dim"))
        # whose
        who = QGroupBox("Annotators")
        wl = QVBoxLayout(who)
        self.every_annotator = check_box("every annotator", self._sync, name="every_annotator",
                                         checked=current.annotators is None)
        wl.addWidget(self.every_annotator)
        self.annotator_boxes: dict[str, Any] = {}
        for a in project.labels.annotators(task):
            b = check_box(a, name=f"annotator_{a}",
                          checked=current.annotators is None or a in (current.annotators or ()))
            self.annotator_boxes[a] = b
            wl.addWidget(b)
        lay.addWidget(who)
        # where from
        where = QGroupBox("Audit sets and plans")
        sl = QVBoxLayout(where)
        self.every_set = check_box("every audit set", self._sync, name="every_set", checked=current.sets is None)
        sl.addWidget(self.every_set)
        self.set_boxes: dict[int, Any] = {}
        for s in project.audit.sets(task):
            aid = int(s["audit_set_id"])
            kind = "plan" if "plan" in (s.get("params") or {}) else s.get("design") or "unknown"
            b = check_box(f"#{aid} {s.get('name') or ''} — {kind}, {s['size']} items", name=f"set_{aid}",
                          checked=current.sets is None or aid in (current.sets or ()))
            self.set_boxes[aid] = b
            sl.addWidget(b)
        self.free = check_box("free labelling (labels given outside any audit set)", name="free_labelling",
                              checked=current.free)
        sl.addWidget(self.free)
        self.rechecks = check_box("count the blind re-checks (a later label of the same item)", name="rechecks",
                                  checked=current.rechecks)
        sl.addWidget(self.rechecks)
        lay.addWidget(where)
        # the rule
        row = QHBoxLayout()
        row.addWidget(QLabel("Several labels of one item:"))
        self.rule = QComboBox()
        self.rule.setObjectName("rule")
        for r in RULES:
            self.rule.addItem(_RULE_TITLES[r], r)
        for a in project.labels.annotators(task):
            self.rule.addItem(f"{a}'s label only", f"annotator:{a}")
        i = self.rule.findData(current.rule)
        self.rule.setCurrentIndex(max(i, 0))
        row.addWidget(self.rule, 1)
        lay.addLayout(row)
        self.error = error_label("label_selection_error", wrap=True)
        lay.addWidget(self.error)
        lay.addWidget(ok_cancel(self, "Use these labels", "label_selection_ok", self._accept))
        self._sync()

    def _sync(self, *_a: Any) -> None:
        for b in self.annotator_boxes.values():
            b.setEnabled(not self.every_annotator.isChecked())
        for b in self.set_boxes.values():
            b.setEnabled(not self.every_set.isChecked())

    def selection(self) -> LabelSelection:
        ann = None if self.every_annotator.isChecked() else tuple(
            a for a, b in self.annotator_boxes.items() if b.isChecked())
        sets = None if self.every_set.isChecked() else tuple(i for i, b in self.set_boxes.items() if b.isChecked())
        if ann == ():
            raise WorkstationError("choose at least one annotator, or every annotator")
        return LabelSelection(ann, sets, self.free.isChecked(), self.rechecks.isChecked(),
                              str(self.rule.currentData()))

    def _accept(self) -> None:
        try:
            self.result_selection = self.selection()
        except WorkstationError as e:
            self.error.setText(str(e))
            return
        self.accept()
