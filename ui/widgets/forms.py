"""Helpers for the fields, notes and buttons of the window's forms and dialogs."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

ERROR_STYLE = "color: #d64541;"


def spin_box(low: int, high: int, value: int | None = None, *, name: str = "", step: int = 0,
             tip: str = "") -> QSpinBox:
    """A whole-number field from `low` to `high` showing `value` (`low` when None)."""
    box = QSpinBox()
    if name:
        box.setObjectName(name)
    box.setRange(low, high)
    if step:
        box.setSingleStep(step)
    if value is not None:
        box.setValue(value)
    if tip:
        box.setToolTip(tip)
    return box


def double_spin_box(low: float, high: float, value: float, *, decimals: int = 2, step: float = 0.0,
                    prefix: str = "", suffix: str = "", name: str = "", tip: str = "") -> QDoubleSpinBox:
    """A decimal field from `low` to `high` with `decimals` places, showing `value`; the arrows
    move it by `step` (1 when not given)."""
    box = QDoubleSpinBox()
    if name:
        box.setObjectName(name)
    box.setRange(low, high)
    box.setDecimals(decimals)
    if step:
        box.setSingleStep(step)
    box.setValue(value)
    if prefix:
        box.setPrefix(prefix)
    if suffix:
        box.setSuffix(suffix)
    if tip:
        box.setToolTip(tip)
    return box


def browse_row(edit: QLineEdit, pick: Callable[[], object]) -> QWidget:
    """`edit` stretched beside a "Browse…" button that calls `pick` (which fills it in)."""
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(edit, 1)
    lay.addWidget(push_button("Browse…", pick))
    return row


def combo_row(label: str, chosen: Callable[[], object], name: str = "",
              min_width: int = 0) -> tuple[QHBoxLayout, QComboBox]:
    """A row that starts with `label` and a stretching combo box that calls `chosen` when its
    current item changes; the caller adds the rest of the row."""
    row = QHBoxLayout()
    row.addWidget(QLabel(label))
    combo = QComboBox()
    if name:
        combo.setObjectName(name)
    if min_width:
        combo.setMinimumWidth(min_width)
    combo.currentIndexChanged.connect(lambda _i: chosen())
    row.addWidget(combo, 1)
    return row, combo


def wrapped_label(text: str = "", name: str = "", selectable: bool = False) -> QLabel:
    """A label whose text wraps; `selectable`: the mouse can select its text. The name `dim`
    gives the theme's quieter text of explanations."""
    label = QLabel(text)
    if name:
        label.setObjectName(name)
    label.setWordWrap(True)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def push_button(text: str, clicked: Callable[[], object] | None = None, tip: str = "",
                name: str = "") -> QPushButton:
    """A button reading `text` that calls `clicked`, with a tooltip and an object name when given."""
    b = QPushButton(text)
    if name:
        b.setObjectName(name)
    if tip:
        b.setToolTip(tip)
    if clicked is not None:
        b.clicked.connect(clicked)
    return b


def check_box(text: str, toggled: Callable[[bool], object] | None = None, name: str = "",
              checked: bool = False) -> QCheckBox:
    """A check box reading `text`, ticked when `checked`, that calls `toggled` with its state when
    it changes, with an object name when given."""
    box = QCheckBox(text)
    if name:
        box.setObjectName(name)
    box.setChecked(checked)
    if toggled is not None:
        box.toggled.connect(toggled)
    return box


def error_label(name: str = "", wrap: bool = False) -> QLabel:
    """An empty label where a form says what is wrong with its input, in red."""
    label = QLabel("")
    if name:
        label.setObjectName(name)
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(wrap)
    return label


def ok_cancel(dialog: QDialog, ok_text: str, ok_name: str, on_ok: Callable[[], object]) -> QDialogButtonBox:
    """The dialog's OK / Cancel buttons: OK, named `ok_name` and reading `ok_text`, calls `on_ok`;
    Cancel rejects the dialog."""
    bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, dialog)
    ok = bb.button(QDialogButtonBox.StandardButton.Ok)
    ok.setText(ok_text)
    ok.setObjectName(ok_name)
    bb.accepted.connect(on_ok)
    bb.rejected.connect(dialog.reject)
    return bb
