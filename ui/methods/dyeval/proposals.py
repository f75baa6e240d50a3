"""The Proposals tab: a node's proposed child topics to accept, edit, reorder or reject.

Open proposals are editable in place (double-click or F2): accepting an edited text records the
proposal as "edited" with both texts. Drag to reorder, or Move up / down; the order is the
order the children are tested (breadth-first). Decided proposals stay listed, greyed, with what
became of them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QWidget,
)

from ui.widgets.forms import push_button

from .node_panel import NodePanel

PID = Qt.ItemDataRole.UserRole


class ProposalsPanel(NodePanel):
    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        lay = self.column
        self.hint = QLabel("")
        self.hint.setWordWrap(True)
        lay.addWidget(self.hint)
        self.list = QListWidget()
        self.list.setObjectName("proposalList")
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.model().rowsMoved.connect(lambda *_: self._reordered())
        self.list.currentItemChanged.connect(lambda *_: self._buttons())
        lay.addWidget(self.list, 1)
        row = QHBoxLayout()
        self.accept_button = push_button("Accept", self.accept_selected,
                                         "Accept the selected topic (with your edits, if you edited its text)")
        self.accept_all_button = push_button("Accept all", self.accept_all)
        self.edit_button = push_button("Edit text", self.edit_selected)
        self.reject_button = push_button("Reject", self.reject_selected)
        self.up_button = push_button("Move up", lambda: self.move(-1))
        self.down_button = push_button("Move down", lambda: self.move(1))
        self.propose_button = push_button("Propose child topics", lambda: self.session.propose(self.node_id))
        for b in (self.accept_button, self.accept_all_button, self.edit_button, self.reject_button, self.up_button,
                  self.down_button, self.propose_button):
            row.addWidget(b)
        row.addStretch(1)
        lay.addLayout(row)
        self._filling = False

    def show_node(self, node_id: str, select: str = "") -> None:
        tree = self.session.tree
        self.node_id = node_id
        self._filling = True
        self.list.clear()
        if tree is not None and node_id in tree.nodes:
            n = tree.nodes[node_id]
            for pid in sorted(n.proposal_ids, key=lambda x: tree.proposals[x].order):
                p = tree.proposals[pid]
                if p.state == "proposed":
                    it = QListWidgetItem(p.text)
                    it.setFlags(it.flags() | Qt.ItemFlag.ItemIsEditable | Qt.ItemFlag.ItemIsDragEnabled)
                    it.setToolTip(f"{pid} · written by {p.provenance.source}"
                                  + (f" ({p.provenance.model})" if p.provenance.model else ""))
                else:
                    child = f" → node {p.child_id}" if p.child_id else ""
                    was = f" (was “{p.original_text}”)" if p.original_text else ""
                    it = QListWidgetItem(f"{p.text}   [{p.state}{child}]{was}")
                    it.setFlags((it.flags() | Qt.ItemFlag.ItemIsDragEnabled) & ~Qt.ItemFlag.ItemIsEditable)
                    it.setForeground(QBrush(QColor("#8a93a3")))
                it.setData(PID, pid)
                self.list.addItem(it)
                if pid == select:
                    self.list.setCurrentItem(it)
            open_ = [p for p in n.proposal_ids if tree.proposals[p].state == "proposed"]
            can = tree.wants_expansion(node_id) and not n.proposal_ids
            if open_:
                self.hint.setText(f"<b>{len(open_)} proposed topic(s) wait for you.</b> Accept the ones worth "
                                  "testing (each becomes a child node that gets its own prompts), edit their text "
                                  "first if you like, put them in the order to test them, reject the rest.")
            elif can:
                self.hint.setText("This node passes well: ask for child topics that dig into it (button below).")
            elif n.depth >= tree.config.d_max:
                self.hint.setText(f"This node is at the deepest level (d_max = {tree.config.d_max}): no child topics.")
            else:
                self.hint.setText("No open proposals.")
            self.propose_button.setEnabled(self.session.writable and tree.wants_expansion(node_id)
                                           and n.depth < tree.config.d_max)
        self._filling = False
        if self.list.currentItem() is None:
            for i in range(self.list.count()):
                if self._is_open(self.list.item(i)):
                    self.list.setCurrentRow(i)
                    break
        self._buttons()

    def _is_open(self, it: QListWidgetItem | None) -> bool:
        tree = self.session.tree
        return it is not None and tree is not None and tree.proposals[str(it.data(PID))].state == "proposed"

    def _buttons(self) -> None:
        w = self.session.writable
        cur = self._is_open(self.list.currentItem())
        for b in (self.accept_button, self.edit_button, self.reject_button):
            b.setEnabled(w and cur)
        anyopen = any(self._is_open(self.list.item(i)) for i in range(self.list.count()))
        self.accept_all_button.setEnabled(w and anyopen)
        self.up_button.setEnabled(w and self.list.currentRow() > 0)
        self.down_button.setEnabled(w and 0 <= self.list.currentRow() < self.list.count() - 1)

    def order(self) -> list[str]:
        return [str(self.list.item(i).data(PID)) for i in range(self.list.count())]

    def _reordered(self) -> None:
        if self._filling:
            return
        ids = self.order()
        sel = self.list.currentItem()
        pid = str(sel.data(PID)) if sel is not None else ""
        self.session.do("reorder proposals", lambda: self.session.runner.reorder(self.node_id, ids))
        if pid:
            self.show_node(self.node_id, pid)

    # shadows QWidget.move(QPoint): the name keys call
    def move(self, delta: int) -> None:  # type: ignore[override]
        row = self.list.currentRow()
        new = row + delta
        if row < 0 or not 0 <= new < self.list.count():
            return
        ids = self.order()
        ids.insert(new, ids.pop(row))
        pid = ids[new]
        self.session.do("reorder proposals", lambda: self.session.runner.reorder(self.node_id, ids))
        self.show_node(self.node_id, pid)

    def accept_selected(self) -> None:
        it = self.list.currentItem()
        if not self._is_open(it):
            return
        assert it is not None
        pid = str(it.data(PID))
        text = it.text().strip()
        self.session.do("accept proposal", lambda: self.session.runner.accept(pid, text))

    def accept_all(self) -> None:
        def go() -> None:
            for i in range(self.list.count()):
                it = self.list.item(i)
                if self._is_open(it):
                    self.session.runner.accept(str(it.data(PID)), it.text().strip())

        self.session.do("accept proposals", go)

    def edit_selected(self) -> None:
        it = self.list.currentItem()
        if self._is_open(it):
            self.list.editItem(it)

    def reject_selected(self) -> None:
        it = self.list.currentItem()
        if self._is_open(it):
            assert it is not None
            pid = str(it.data(PID))
            self.session.do("reject proposal", lambda: self.session.runner.reject(pid))
