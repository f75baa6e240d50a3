"""The New tree dialog: root topics (or the paper's four perspectives) and the tree's settings."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from ui.widgets.forms import browse_row, double_spin_box, error_label, ok_cancel, spin_box


class NewTreeDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New DyEval test tree")
        self.setObjectName("dyevalNewTree")
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("A tree starts from root topics. Each node gets n_i prompts, n_x images per prompt, "
                             "and your PASS / FAIL on every image.\nHigh-pass nodes get child topics (up to d_max); "
                             "low-pass nodes get their failures located."))
        self.topics = QPlainTextEdit()
        self.topics.setPlaceholderText("one root topic per line, e.g.\nMaterial objects\nAnimals playing in snow")
        self.topics.setFixedHeight(80)
        lay.addWidget(self.topics)
        self.perspectives = QCheckBox("…or start from the paper's four perspectives (Object, Relation, Attribute, "
                                      "Context: nine initial topics)")
        lay.addWidget(self.perspectives)
        form = QFormLayout()
        self.tree_id = QLineEdit()
        self.tree_id.setPlaceholderText("automatic (t1, t2, …)")
        form.addRow("Tree id", self.tree_id)
        self.n_i = spin_box(1, 50, 5)
        self.n_x = spin_box(1, 32, 4)
        self.n_t = spin_box(1, 10, 3)
        self.d_max = spin_box(1, 6, 3)
        form.addRow("Prompts per node (n_i)", self.n_i)
        form.addRow("Images per prompt (n_x)", self.n_x)
        form.addRow("Child topics proposed (n_t)", self.n_t)
        form.addRow("Deepest level (d_max)", self.d_max)
        self.rho = double_spin_box(0.0, 1.0, 0.75, step=0.05)
        form.addRow("Bug when a prompt's pass rate is below ρ", self.rho)
        self.premark = QCheckBox("pre-mark images FAIL when their CLIPScore is below")
        self.threshold = double_spin_box(0.0, 100.0, 22.0)
        row = QHBoxLayout()
        row.addWidget(self.premark)
        row.addWidget(self.threshold)
        form.addRow("CLIPScore", row)
        self.clip = QLineEdit()
        self.clip.setPlaceholderText("local CLIP model folder (for the score job)")
        form.addRow("CLIP folder", browse_row(self.clip, lambda: self._browse(self.clip)))
        self.lm = QLineEdit("templates")
        self.lm.setToolTip("'templates' (built in, always works) or a local instruction-tuned causal LM folder")
        form.addRow("Writer (LM)", browse_row(self.lm, lambda: self._browse(self.lm)))
        lay.addLayout(form)
        self.error = error_label()
        lay.addWidget(self.error)
        lay.addWidget(ok_cancel(self, "Make the tree", "dyevalMakeTree", self._accept))

    def _browse(self, edit: QLineEdit) -> None:
        d = QFileDialog.getExistingDirectory(self, "Model folder")
        if d:
            edit.setText(d)

    def values(self) -> dict[str, Any]:
        """topics, perspectives, tree_id and config (a DyEvalConfig) — a WorkstationError when wrong."""
        from workstation.methods.dyeval.config import DyEvalConfig

        topics = [t.strip() for t in self.topics.toPlainText().splitlines() if t.strip()]
        cfg = DyEvalConfig(n_i=self.n_i.value(), n_x=self.n_x.value(), n_t=self.n_t.value(), d_max=self.d_max.value(),
                           rho=round(self.rho.value(), 4),
                           premark_threshold=self.threshold.value() if self.premark.isChecked() else None,
                           premark_model=self.clip.text().strip(), lm=self.lm.text().strip() or "templates")
        cfg.validate()
        return {"topics": topics, "perspectives": [] if self.perspectives.isChecked() else None,
                "tree_id": self.tree_id.text().strip() or None, "config": cfg}

    def _accept(self) -> None:
        from workstation.types import WorkstationError

        try:
            v = self.values()
        except WorkstationError as e:
            self.error.setText(str(e))
            return
        if not v["topics"] and v["perspectives"] is None:
            self.error.setText("Give at least one root topic, or start from the four perspectives.")
            return
        self.accept()
