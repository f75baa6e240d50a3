"""The Browse page: the filter bar over the sample table and the thumbnail grid of the same rows.

It joins `sample_table` (the paged DuckDB-backed model, its table view and filter bar) and
`thumbnails` (a grid view of that model), so neither of those imports the other.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStackedWidget,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .sample_table import COLUMNS, FilterBar, SampleTableModel
from .session import SpatialSession
from .thumbnails import ThumbnailGrid

#: the fixed column the judges' columns are shown after (the checker's confidence)
JUDGES_AFTER = 7


class SampleBrowser(QWidget):
    """Filter bar over a table and a thumbnail grid of the same rows.

    `open_requested(row)` fires on double-click / Enter: the main window then makes the
    filtered rows the review queue and shows the pair viewer.
    """

    open_requested = Signal(int)

    def __init__(self, state: SpatialSession, thumbs: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._sized: set[int] = set()  # judge columns given their first width
        self.model = SampleTableModel(state, self)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.filters = FilterBar(state, self)
        lay.addWidget(self.filters)
        head = QHBoxLayout()
        head.setContentsMargins(6, 0, 6, 0)
        self.count_label = QLabel("")
        self.count_label.setObjectName("countLabel")
        head.addWidget(self.count_label)
        head.addStretch(1)
        self.badge_legend = QLabel("")
        self.badge_legend.setObjectName("badgeLegend")
        self.badge_legend.setVisible(False)
        head.addWidget(self.badge_legend)
        self.review_button = QPushButton("Review these ▶")
        self.review_button.setObjectName("reviewButton")
        self.review_button.setToolTip("Make the filtered samples the review queue (Enter on a row)")
        self.review_button.clicked.connect(self._review_all)
        head.addWidget(self.review_button)
        self.view_buttons = QButtonGroup(self)
        for k, name in enumerate(("Table", "Grid")):
            b = QToolButton()
            b.setText(name)
            b.setObjectName(f"show{name}")
            b.setCheckable(True)
            b.setChecked(k == 0)
            self.view_buttons.addButton(b, k)
            head.addWidget(b)
        lay.addLayout(head)
        self.hint = QLabel("")
        self.hint.setObjectName("browseHint")
        self.hint.setWordWrap(True)
        self.hint.setContentsMargins(6, 0, 6, 2)
        lay.addWidget(self.hint)
        self.stack = QStackedWidget(self)
        self.table = QTableView(self)
        self.table.setObjectName("sampleTable")
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicatorShown(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.verticalHeader().hide()
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # long sample ids keep their seed suffix
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for c, w in enumerate((250, 110, 320, 75, 50, 105, 110, 60, 210, 120, 240)):
            self.table.setColumnWidth(c, w)
        hh.setStretchLastSection(True)
        # a double-click activates the row (as Enter does): one request, for the row still shown
        self.table.activated.connect(self._activated)
        self.table.selectionModel().currentRowChanged.connect(self._row_selected)
        self.stack.addWidget(self.table)
        self.grid = ThumbnailGrid(state, self.model, thumbs, self)
        self.grid.open_requested.connect(self.open_requested)
        self.stack.addWidget(self.grid)
        lay.addWidget(self.stack, 1)
        self.view_buttons.idClicked.connect(self._show_view)
        self.filters.changed.connect(lambda: self.model.set_filter(self.filters.spec()))
        self.model.refreshed.connect(self._update_count)
        self.model.modelReset.connect(self._update_count)
        self.model.modelReset.connect(self._judge_columns)
        self.model.judges.changed.connect(self._judges_offered)
        state.policy_changed.connect(self._apply_policy)
        state.project_changed.connect(self._fit_columns)
        state.project_changed.connect(self._apply_policy)
        self._update_count()

    def _judges_offered(self) -> None:
        """The judges computed: the filter "judges disagree" offers their pairs."""
        self.filters.set_judges(list(self.model.q.judges_of(self.state.dataset) or ()))
        self._update_count()

    def _judge_columns(self) -> None:
        """The judges' columns (after the fixed ones) sized to their outcome and score, and shown
        only where the policy allows (the model has none during a blind audit)."""
        hh = self.table.horizontalHeader()
        for k, c in enumerate(range(len(COLUMNS), self.model.columnCount())):
            self.table.setColumnHidden(c, False)
            if self.table.columnWidth(c) < 40 or c not in self._sized:
                self.table.setColumnWidth(c, 120)
                self._sized.add(c)
            # shown beside the checker's confidence, each judge after the one before
            want = hh.visualIndex(JUDGES_AFTER) + 1 + k
            if hh.visualIndex(c) != want:
                hh.moveSection(hh.visualIndex(c), want)

    def _fit_columns(self) -> None:
        """Size the id and run columns to the project's ids (within limits)."""
        for c, cap in ((0, 380), (1, 200)):
            self.table.resizeColumnToContents(c)
            self.table.setColumnWidth(c, min(max(self.table.columnWidth(c), 90), cap))

    def _activated(self, ix: QModelIndex) -> None:
        if ix.isValid() and 0 <= ix.row() < len(self.model.rows):
            self.open_requested.emit(self.model.dataset_row(ix.row()))

    def _row_selected(self, cur: QModelIndex, _prev: QModelIndex) -> None:
        if cur.isValid():
            self.state.set_current(self.model.dataset_row(cur.row()))

    def _review_all(self) -> None:
        rows = self.model.all_rows()
        if rows:
            cur = self.table.currentIndex()
            self.open_requested.emit(self.model.dataset_row(cur.row()) if cur.isValid() else rows[0])

    def _show_view(self, k: int) -> None:
        self.stack.setCurrentIndex(k)
        self._update_badge_legend()

    def _update_badge_legend(self) -> None:
        """The grid's badges explained: P / F / U, which corner is the checker's, which the human's."""
        grid = self.stack.currentIndex() == 1
        self.badge_legend.setVisible(grid)
        vis = self.state.view_visibility()
        parts = (["top-right badge and frame: checker verdict"] if vis.outcome else []) + \
            (["top-left badge: human label"] if vis.human else [])
        self.badge_legend.setText("P = PASS, F = FAIL, U = UNDECIDABLE — " + " · ".join(parts) if parts
                                  else "no badges during this audit")

    def _apply_policy(self) -> None:
        """Columns the session's policy hides (a blind audit) are hidden, and sorted by nothing."""
        hidden = self.model.hidden()
        for c in range(len(COLUMNS)):
            self.table.setColumnHidden(c, c in hidden)
        self._judge_columns()
        if self.model.sort_column < 0:
            self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self._update_badge_legend()
        self.grid.viewport().update()

    def _update_count(self) -> None:
        m = self.model
        if self.state.project is None:
            self.count_label.setText("no project open")
        else:
            self.count_label.setText(f"{m.total:,} of {m.all_count:,} samples" + self._judges_note())
        self.review_button.setEnabled(m.total > 0)
        self._update_hint()

    def _judges_note(self) -> str:
        """What the count line says of the judges' columns: being computed, or why they are not."""
        j = self.model.judges
        if not self.state.view_visibility().outcome:
            return ""
        if j.error:
            return f" · the judges could not be computed: {j.error}"
        if j.pending and (j.computing or self.model.spec.judges_disagree):
            return " · computing the judges…"
        return ""

    def _update_hint(self) -> None:
        """What to do next, for a first look at this screen."""
        m = self.model
        if self.state.project is None:
            text = ("Start here: open a project (Ctrl+O) or build the demo (python main.py demo). "
                    "F1 lists every shortcut.")
        elif m.all_count == 0:
            text = "This project has no samples of spatial prompts yet: import a run or generate one (Jobs)."
        elif m.total == 0:
            text = "No sample matches the filters: clear some of them above."
        else:
            text = ("Next: double-click a sample (or Enter) to review it beside its counterfactual twin · "
                    "“Review these ▶” reviews all the filtered samples in turn · Ctrl+2 shows Review, "
                    "Ctrl+3 Calibration · F1 lists every shortcut.")
        self.hint.setText(text)
