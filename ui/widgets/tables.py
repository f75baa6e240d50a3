"""Small tables of figures that only show (the Calibration tab's): no editing, selection or focus;
numbers right-aligned; a cell's item reused when its text changes (a refresh runs on every slider
step)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem


def display_only(t: QTableWidget) -> None:
    """The table shows figures: no editing, no selection, never the keyboard's focus."""
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    t.setFocusPolicy(Qt.FocusPolicy.NoFocus)


def number_item(text: str, align_right: bool = True) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    if align_right:
        it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return it


def set_cell(t: QTableWidget, r: int, c: int, text: str) -> QTableWidgetItem:
    """Show `text` in a cell, reusing its item; returns the item."""
    it = t.item(r, c)
    if it is None:
        it = number_item(text)
        t.setItem(r, c, it)
    elif it.text() != text:
        it.setText(text)
    return it
