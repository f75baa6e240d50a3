"""Small tables of figures that only show (the Calibration tab's, the grid search's, the audit
plan's): no editing, selection or focus; numbers right-aligned; a cell's item reused when its text
changes (a refresh runs on every slider step); a table as tall as its rows."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


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


def set_cell(t: QTableWidget, r: int, c: int, text: str, color: QColor | None = None) -> QTableWidgetItem:
    """Show `text` in a cell, reusing its item, in `color` when given; returns the item."""
    it = t.item(r, c)
    if it is None:
        it = number_item(text)
        t.setItem(r, c, it)
    elif it.text() != text:
        it.setText(text)
    if color is not None:
        it.setForeground(QBrush(color))
    return it


def figures_table(rows: int, cols: int, headers: list[str], name: str, lines: int = 1) -> QTableWidget:
    """A display-only table of `rows` × `cols` figures under `headers`, its columns sharing the
    width, every row as tall as `lines` lines of figures."""
    t = QTableWidget(rows, cols)
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(headers)
    display_only(t)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    # the height ResizeToContents gives such a row, measured once and fixed (that mode measures
    # the whole row again on every cell's change, and a slider step changes dozens of cells)
    vh = t.verticalHeader()
    vh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    t.setRowCount(rows + 1)
    t.setVerticalHeaderItem(rows, QTableWidgetItem("Wg_|"))
    t.setItem(rows, 0, number_item("\n".join(["0.0000"] + ["[0.000, 0.000]"] * (lines - 1))))
    t.resizeRowsToContents()
    height = max(22, t.rowHeight(rows))
    t.setRowCount(rows)
    vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    vh.setDefaultSectionSize(height)
    for r in range(rows):
        t.setRowHeight(r, height)
    return t


def fit_height(t: QTableWidget) -> None:
    """Every row in view, no scroller of its own (the column around it scrolls): the header's
    height is its size hint, since a table not yet shown has laid out no header."""
    rows = sum(t.rowHeight(r) for r in range(t.rowCount()))
    header = max(t.horizontalHeader().height(), t.horizontalHeader().sizeHint().height())
    t.setFixedHeight(header + rows + 2 * t.frameWidth() + 2)


def widen_to_fit(t: QTableWidget, columns: tuple[int, ...], pad: int = 14) -> None:
    """Widen each of `columns` (fixed-width ones) to its longest line of text, never narrower
    than it is: a count of a million samples is shown whole, and the column does not jitter
    from one slider step to the next."""
    fm = t.fontMetrics()
    hh = t.horizontalHeader()
    for c in columns:
        texts = [it.text() for r in range(t.rowCount()) if (it := t.item(r, c)) is not None]
        need = max((fm.horizontalAdvance(line) for text in texts for line in text.split("\n")), default=0) + pad
        if need > hh.sectionSize(c):
            hh.resizeSection(c, need)
