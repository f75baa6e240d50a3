"""The "Instructions" box beside a judging page: the label task's instructions and worked
examples as kept with the project (`workstation.evaluation.protocol`; `main.py protocol`), shown
on demand (the toggle in the judgement bar) and edited there ("Edit…")."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.protocol import ProtocolText, load_protocol, read_examples, save_protocol
from workstation.types import WorkstationError


class InstructionsDialog(QDialog):
    """Edit a task's instructions and its examples (one a line)."""

    def __init__(self, task: str, text: ProtocolText, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("instructionsDialog")
        self.setWindowTitle(f"Instructions — {task}")
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("Instructions (what the raters are asked, how to decide, when to answer "
                             "“unable to answer”):"))
        self.instructions = QPlainTextEdit(text.instructions)
        self.instructions.setObjectName("instructionsText")
        lay.addWidget(self.instructions, 2)
        lay.addWidget(QLabel("Worked examples (one a line):"))
        self.examples = QPlainTextEdit("\n".join(text.examples))
        self.examples.setObjectName("instructionsExamples")
        lay.addWidget(self.examples, 1)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
        self.resize(640, 480)

    def text(self) -> ProtocolText:
        return ProtocolText(self.instructions.toPlainText().strip(), read_examples(self.examples.toPlainText()))


class InstructionsBox(QFrame):
    """The task's instructions and examples under the judgement bar's toggle (hidden until asked)."""

    def __init__(self, controller: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.c = controller
        self.task = controller.scheme.task
        self.setObjectName("instructionsBox")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.toggle = QToolButton()
        self.toggle.setObjectName("instructionsToggle")
        self.toggle.setText("Instructions")
        self.toggle.setCheckable(True)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.toggle.setToolTip("Show the task's instructions and worked examples")
        self.toggle.toggled.connect(self._toggled)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 4)
        self.body = QLabel("")
        self.body.setObjectName("instructionsBody")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.body, 1)
        self.edit_button = QPushButton("Edit…")
        self.edit_button.setObjectName("instructionsEdit")
        self.edit_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.edit_button.clicked.connect(self.edit)
        lay.addWidget(self.edit_button, 0, Qt.AlignmentFlag.AlignTop)
        self.setVisible(False)
        state = controller.state
        if getattr(state, "project_changed", None) is not None:
            state.project_changed.connect(self._project_changed)  # a bound slot: gone with the box

    def _project_changed(self, *_: object) -> None:
        self.refresh()

    @property
    def project(self) -> Any:
        return getattr(self.c.state, "project", None)

    def _toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        if on:
            self.refresh()
        self.setVisible(on)

    def protocol(self) -> ProtocolText:
        try:
            return load_protocol(self.project, self.task)
        except WorkstationError:
            return ProtocolText()

    def refresh(self) -> None:
        p = self.project
        text = self.protocol()
        self.edit_button.setEnabled(p is not None and not getattr(p, "read_only", True))
        if text.empty:
            self.body.setText("<i>No instructions are kept for this task yet.</i> Edit… writes them (and "
                              "<code>main.py protocol --task " + html.escape(self.task) + " --instructions FILE</code>).")
            return
        parts = [html.escape(text.instructions).replace("\n", "<br>")]
        if text.examples:
            parts.append("<br><b>Examples</b><ul style='margin:0'>"
                         + "".join(f"<li>{html.escape(x)}</li>" for x in text.examples) + "</ul>")
        self.body.setText("".join(parts))

    def edit(self) -> None:
        p = self.project
        if p is None:
            return
        dlg = InstructionsDialog(self.task, self.protocol(), self)
        if dlg.exec() != QDialog.DialogCode.Accepted:
            return
        try:
            save_protocol(p, self.task, dlg.text())
        except WorkstationError as e:
            QMessageBox.warning(self, "Instructions", str(e))
            return
        self.refresh()
