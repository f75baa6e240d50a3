"""The test tree as a tree: topic, APR, #Bugs, state and what is next, coloured by pass rate.

Under each node: its failure locations (each with its split steps nested as they were made,
PASS / FAIL coloured, triggers marked) and its open proposals. Selecting an item emits
`selected(kind, id)`: ("node", node id), ("location", location id), ("step", "L1/s3"),
("proposal", proposal id).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeWidget, QTreeWidgetItem

from .style import STATE_SHORT, STATE_WORDS, TRIGGER_COLOR, apr_color, fmt_rate, verdict_color

COLUMNS = ("Topic", "APR", "#Bugs", "State", "Images")
KIND, IDENT = Qt.ItemDataRole.UserRole, Qt.ItemDataRole.UserRole + 1


class TreeView(QTreeWidget):
    selected = Signal(str, str)  # kind, id

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setObjectName("dyevalTree")
        self.setColumnCount(len(COLUMNS))
        self.setHeaderLabels(list(COLUMNS))
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setAlternatingRowColors(True)
        self.setUniformRowHeights(True)
        h = self.header()
        h.setStretchLastSection(False)
        h.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        # each fixed column as wide as its header or its widest usual value, in the font shown
        fm, hfm = self.fontMetrics(), h.fontMetrics()
        for i, sample in ((1, "0.00"), (2, "000"), (3, "your decision"), (4, "000/000 ⚠00")):
            h.setSectionResizeMode(i, QHeaderView.ResizeMode.Fixed)
            self.setColumnWidth(i, max(fm.horizontalAdvance(sample), hfm.horizontalAdvance(COLUMNS[i])) + 18)
        self.setIndentation(14)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.items: dict[tuple[str, str], QTreeWidgetItem] = {}
        self.currentItemChanged.connect(self._current)
        self._filling = False

    def _current(self, item: QTreeWidgetItem | None, _prev: Any = None) -> None:
        if item is not None and not self._filling:
            self.selected.emit(str(item.data(0, KIND)), str(item.data(0, IDENT)))

    def select(self, kind: str, ident: str) -> None:
        item = self.items.get((kind, ident))
        if item is not None and item is not self.currentItem():
            self.setCurrentItem(item)

    def current_key(self) -> tuple[str, str] | None:
        item = self.currentItem()
        return None if item is None else (str(item.data(0, KIND)), str(item.data(0, IDENT)))

    def fill(self, tree: Any, next_by_node: dict[str, str] | None = None) -> None:
        """Rebuild from ``tree`` keeping the selection and what was expanded."""
        keep = self.current_key()
        collapsed = {k for k, it in self.items.items() if not it.isExpanded() and it.childCount()}
        self._filling = True
        self.clear()
        self.items = {}
        if tree is None:
            self._filling = False
            return
        nxt = next_by_node or {}

        def add_node(nid: str, parent: QTreeWidgetItem | None) -> None:
            n = tree.nodes[nid]
            s = tree.node_summary(nid)
            st = tree.node_state(nid)
            judged = sum(1 for p in n.prompt_ids for i in tree.prompts[p].image_ids if tree.images[i].label is not None)
            total = sum(len(tree.prompts[p].image_ids) for p in n.prompt_ids)
            # annotators who disagree on an image under the label selection: it counts for no one
            disputed = sum(1 for p in n.prompt_ids for i in tree.prompts[p].image_ids if tree.images[i].disputed)
            it = QTreeWidgetItem([n.topic, fmt_rate(s.apr), str(s.bugs), STATE_SHORT.get(st, st),
                                  (f"{judged}/{total}" + (f" ⚠{disputed}" if disputed else ""))
                                  if total else ""])
            if disputed:
                it.setToolTip(4, f"{disputed} image{'s' if disputed != 1 else ''} disputed: the annotators "
                                 "disagree under the label selection, so no label counts")
            it.setData(0, KIND, "node")
            it.setData(0, IDENT, nid)
            it.setToolTip(0, f"{n.topic}\n{nid} · depth {n.depth}" + (f" · {n.perspective}" if n.perspective else "")
                          + (f"\nnext: {nxt[nid]}" if nid in nxt else ""))
            it.setBackground(1, QBrush(apr_color(s.apr, 200)))
            it.setForeground(1, QBrush(QColor("#101010")))
            it.setTextAlignment(1, Qt.AlignmentFlag.AlignCenter)
            it.setTextAlignment(2, Qt.AlignmentFlag.AlignCenter)
            if s.bugs:
                f = it.font(2)
                f.setBold(True)
                it.setFont(2, f)
            it.setToolTip(3, STATE_WORDS.get(st, st) + (f"\nnext: {nxt[nid]}" if nid in nxt else ""))
            self._attach(it, parent)
            self.items[("node", nid)] = it
            for lid in n.location_ids:
                add_location(lid, it)
            for pid in n.proposal_ids:
                p = tree.proposals[pid]
                if p.state == "proposed":
                    pi = QTreeWidgetItem([f"proposed: {p.text}", "", "", "your decision", ""])
                    pi.setToolTip(0, f"proposed child topic: {p.text}\naccept or reject it on the node's Proposals tab")
                    pi.setData(0, KIND, "proposal")
                    pi.setData(0, IDENT, pid)
                    f = pi.font(0)
                    f.setItalic(True)
                    pi.setFont(0, f)
                    pi.setForeground(0, QBrush(QColor("#8a93a3")))
                    it.addChild(pi)
                    self.items[("proposal", pid)] = pi
            for c in n.child_ids:
                add_node(c, it)

        def add_location(lid: str, parent: QTreeWidgetItem) -> None:
            loc = tree.locations[lid]
            m = loc.machine
            state = "done" if m.done else f"{len(m.pending())} step(s) waiting"
            li = QTreeWidgetItem([f"{lid} location: {tree.prompts[loc.prompt_id].text}", "", "",
                                  state, f"{len(m.rendered_steps())} tests"])
            li.setToolTip(0, f"failure location {lid} of “{tree.prompts[loc.prompt_id].text}”: {state}")
            li.setData(0, KIND, "location")
            li.setData(0, IDENT, lid)
            li.setForeground(0, QBrush(QColor(TRIGGER_COLOR)))
            parent.addChild(li)
            self.items[("location", lid)] = li
            trig_steps = {t.step for t in m.triggers}
            by_parent: dict[int | None, list[Any]] = {}
            for st in m.steps[1:]:
                by_parent.setdefault(st.parent, []).append(st)

            def add_steps(pid: int, under: QTreeWidgetItem) -> None:
                for st in by_parent.get(pid, []):
                    owner = loc.owner(st.step_id)
                    same = f" (= step {st.reused_from})" if st.reused_from is not None else ""
                    si = QTreeWidgetItem([f"s{st.step_id}: {st.text}{same}", "", "",
                                          st.verdict or "waiting", ""])
                    si.setToolTip(0, f"step {st.step_id} ({st.level}): {st.text}{same} — {st.verdict or 'waiting'}")
                    si.setData(0, KIND, "step")
                    si.setData(0, IDENT, owner)
                    si.setForeground(3, QBrush(verdict_color(st.verdict)))
                    if st.step_id in trig_steps:
                        si.setBackground(0, QBrush(QColor(255, 140, 26, 70)))
                        si.setToolTip(0, "failure trigger: " + "; ".join(t.text for t in m.triggers
                                                                         if t.step == st.step_id))
                    under.addChild(si)
                    self.items[("step", owner)] = si
                    add_steps(st.step_id, si)

            add_steps(0, li)
            for t in m.triggers:
                ti = QTreeWidgetItem([f"trigger: {t.text}", "", "", t.kind, ""])
                ti.setData(0, KIND, "location")
                ti.setData(0, IDENT, lid)
                f = QFont(ti.font(0))
                f.setBold(True)
                ti.setFont(0, f)
                ti.setForeground(0, QBrush(QColor(TRIGGER_COLOR)))
                li.addChild(ti)

        for nid in tree.bfs_order():
            if tree.nodes[nid].parent_id is None:
                add_node(nid, None)
        self.expandAll()
        for k in collapsed:
            if k in self.items:
                self.items[k].setExpanded(False)
        # the selection comes back silently: the page shows it after a refill
        if keep is not None and keep in self.items:
            self.setCurrentItem(self.items[keep])
        elif self.items:
            self.setCurrentItem(next(iter(self.items.values())))
        self._filling = False

    def _attach(self, it: QTreeWidgetItem, parent: QTreeWidgetItem | None) -> None:
        if parent is None:
            self.addTopLevelItem(it)
        else:
            parent.addChild(it)
