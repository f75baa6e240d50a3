"""The "Instructions" box of the judgement bar: the task's instructions and examples as the
`protocol` command keeps them, shown on demand, edited in the window, and no label key lost to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from ui.state import AppState
from ui.widgets import instructions as instructions_mod
from ui.widgets.judge import JudgeBar, JudgeController, install_shortcuts
from workstation.cli import main
from workstation.evaluation.protocol import ProtocolText, load_protocol
from .test_judge import SCHEME, page  # noqa: F401 - the fixture is used by name

pytestmark = pytest.mark.gui


def test_the_box_shows_the_kept_instructions_and_edits_them(qtbot: Any, page: Any, monkeypatch: Any) -> None:
    from workstation.evaluation import protocol

    w, c, bar, st = page
    # the test scheme's task is no registered method's: its text is kept through the store directly
    protocol.save_protocol(st.project, SCHEME.task, ProtocolText(
        "Look at both images; answer ALIGNED when the content is the same.", ("a cat and a cat on a sofa: ALIGNED",)))
    box = bar.instructions
    assert not box.isVisible() and box.toggle.isVisible()
    box.toggle.click()
    assert box.isVisible()
    assert "answer ALIGNED when the content is the same" in box.body.text()
    assert "a cat and a cat on a sofa: ALIGNED" in box.body.text()
    # the keys still label with the box open
    w.setFocus()
    qtbot.keyClick(w, Qt.Key_A)
    assert [e.value for e in st.project.labels.events(task=SCHEME.task)] == ["ALIGNED"]

    def fake_exec(dlg: Any) -> int:
        dlg.instructions.setPlainText("Answer UNDECIDABLE when an image is missing.")
        dlg.examples.setPlainText("one\n\n two ")
        return int(instructions_mod.QDialog.DialogCode.Accepted.value)

    monkeypatch.setattr(instructions_mod.InstructionsDialog, "exec", fake_exec)
    box.edit_button.click()
    assert load_protocol(st.project, SCHEME.task) == ProtocolText("Answer UNDECIDABLE when an image is missing.",
                                                                 ("one", "two"))
    assert "Answer UNDECIDABLE" in box.body.text() and "<li>two</li>" in box.body.text()
    box.toggle.click()
    assert not box.isVisible()


def test_the_command_and_the_box_read_the_same_text(qtbot: Any, png_project: Path, tmp_path: Path) -> None:
    from workstation.evaluation.base import LabelScheme

    instr = tmp_path / "i.txt"
    instr.write_text("Does the image show the relation?\n", encoding="utf-8")
    assert main(["protocol", "--project", str(png_project), "--task", "spatial.verdict", "--instructions",
                 str(instr)]) == 0
    st = AppState()
    st.open_project(png_project)
    scheme = LabelScheme(task="spatial.verdict", target="sample", values=("PASS", "FAIL"), keys=("P", "F"))
    c = JudgeController(scheme, st)
    w = QWidget()
    bar = JudgeBar(c, w)
    qtbot.addWidget(w)
    w.show()
    bar.instructions.toggle.click()
    assert "Does the image show the relation?" in bar.instructions.body.text()
