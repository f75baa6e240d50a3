"""Every keyboard shortcut in one table, and the F1 sheet that lists them.

Views create their QActions from `SHORTCUTS` (`make_action`), so the sheet never drifts from
what the keys really do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True)
class Shortcut:
    id: str
    keys: str  # QKeySequence text; several separated by ";"
    text: str  # menu text
    help: str  # one line for the sheet
    group: str


SHORTCUTS: tuple[Shortcut, ...] = (
    # labelling
    Shortcut("label_pass", "P", "Label PASS", "Record PASS for this sample and go to the next", "Label"),
    Shortcut("label_fail", "F", "Label FAIL", "Record FAIL for this sample and go to the next", "Label"),
    Shortcut("label_undecidable", "U", "Label UNDECIDABLE",
             "Record UNDECIDABLE for this sample and go to the next", "Label"),
    Shortcut("notes", "N", "Edit notes", "Put the cursor in the notes field (Enter saves them)", "Label"),
    Shortcut("undo", "Ctrl+Z", "Undo label", "Undo the last label (a compensating event is recorded)", "Label"),
    Shortcut("redo", "Ctrl+Shift+Z;Ctrl+Y", "Redo label", "Redo the label that was undone", "Label"),
    # navigation
    Shortcut("next", "Right;J", "Next sample", "Next item of the queue (without labelling)", "Navigate"),
    Shortcut("prev", "Left;K", "Previous sample", "Previous item of the queue", "Navigate"),
    Shortcut("next_unlabelled", "Shift+Right", "Next unlabelled",
             "The next item you have not labelled (after the end of the queue: from its start)", "Navigate"),
    Shortcut("twin", "T", "Swap with twin", "Review the counterfactual twin instead", "Navigate"),
    Shortcut("goto", "Ctrl+G", "Go to sample…", "Jump to a sample id", "Navigate"),
    Shortcut("browse", "Ctrl+1", "Browse", "Show the sample table and filters", "Navigate"),
    Shortcut("review", "Ctrl+2", "Review", "Show the pair viewer", "Navigate"),
    Shortcut("calibration", "Ctrl+3", "Calibration", "Show the calibration panel", "Navigate"),
    Shortcut("jobs", "Ctrl+J", "Jobs panel", "Show / hide the jobs panel (generation, detection)", "Navigate"),
    # view
    Shortcut("layer_others", "1", "Other detections", "Show / hide the other primary detections", "View"),
    Shortcut("layer_secondary", "2", "Secondary detector", "Show / hide the secondary detector's boxes",
             "View"),
    Shortcut("layer_perturbed", "3", "Perturbed images' boxes",
             "Show / hide the boxes found on the perturbed images", "View"),
    Shortcut("layer_geometry", "4", "Centres and margin", "Show / hide box centres and the margin band",
             "View"),
    Shortcut("layer_labels", "5", "Box labels", "Show / hide the label and score tags", "View"),
    Shortcut("thicker", "]", "Thicker lines", "Draw boxes with thicker lines", "View"),
    Shortcut("thinner", "[", "Thinner lines", "Draw boxes with thinner lines", "View"),
    Shortcut("fit", "0", "Fit to window", "Fit both images to the window", "View"),
    Shortcut("zoom_in", "Ctrl+=;Ctrl++", "Zoom in", "Zoom in (both images; the wheel does too)", "View"),
    Shortcut("zoom_out", "Ctrl+-", "Zoom out", "Zoom out", "View"),
    Shortcut("theme", "Ctrl+Shift+T", "Dark / light theme", "Switch between the dark and light theme",
             "View"),
    # project
    Shortcut("open", "Ctrl+O", "Open project…", "Open a project folder", "Project"),
    Shortcut("new", "Ctrl+N", "New project…", "Create a project folder", "Project"),
    Shortcut("audit_new", "Ctrl+Shift+A", "New audit set…", "Draw a stratified audit sample", "Project"),
    Shortcut("find", "Ctrl+F", "Find in prompts", "Put the cursor in the prompt search field", "Project"),
    Shortcut("help", "F1", "Keyboard shortcuts", "This sheet", "Help"),
    Shortcut("quit", "Ctrl+Q", "Quit", "Close the workstation", "Project"),
)

BY_ID = {s.id: s for s in SHORTCUTS}


def key_sequences(sid: str) -> list[QKeySequence]:
    return [QKeySequence(k) for k in BY_ID[sid].keys.split(";")]


def make_action(parent: QWidget, sid: str, slot: Callable[..., object] | None = None,
                checkable: bool = False,
                context: Qt.ShortcutContext = Qt.WindowShortcut) -> QAction:
    s = BY_ID[sid]
    a = QAction(s.text, parent)
    a.setObjectName("action_" + sid)
    a.setShortcuts(key_sequences(sid))
    a.setShortcutContext(context)
    a.setToolTip(f"{s.help} ({s.keys.split(';')[0]})")
    a.setCheckable(checkable)
    if slot is not None:
        (a.toggled if checkable else a.triggered).connect(slot)
    parent.addAction(a)
    return a


class ShortcutSheet(QDialog):
    """The F1 sheet: every shortcut, grouped."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("shortcutSheet")
        lay = QVBoxLayout(self)
        t = QTableWidget(len(SHORTCUTS), 3, self)
        t.setHorizontalHeaderLabels(["Group", "Keys", "What it does"])
        t.verticalHeader().hide()
        t.setEditTriggers(QTableWidget.NoEditTriggers)
        t.setSelectionMode(QTableWidget.NoSelection)
        for i, s in enumerate(SHORTCUTS):
            for j, text in enumerate((s.group, " or ".join(s.keys.split(";")), s.help)):
                t.setItem(i, j, QTableWidgetItem(text))
        t.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeToContents)
        t.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        t.horizontalHeader().setSectionResizeMode(2, QHeaderView.Stretch)
        self.table = t
        lay.addWidget(t)
        bb = QDialogButtonBox(QDialogButtonBox.Close, self)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
        self.resize(680, 900)
