"""The Scene graph tab: read and correct a prompt's scene graph before its failure location.

Failure location splits the graph, so a wrong parse means wrong sub-prompts. The editor lists the
graph's objects (name, attributes, article), relations (subject, predicate, object, attributes)
and context phrases in editable tables; the rendered text and the number of elements follow
every edit; Save records the corrected graph as the auditor's (one event). A prompt whose
location has started keeps its graph (the steps were cut from it).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui.widgets.forms import combo_row

from .node_panel import NodePanel
from .style import FAIL_COLOR, PENDING_COLOR


def _split(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))


class GraphEditor(NodePanel):
    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        # the three tables scroll together in a window too low for them (a small screen)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        self.column.addWidget(scroll)
        top, self.prompt = combo_row("Prompt:", self.load, min_width=380)
        lay.addLayout(top)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        lay.addWidget(self.info)
        self.objects = self._table(("id", "name", "article", "attributes (comma-separated)"), stretch=3)
        self.relations = self._table(("id", "subject id", "predicate", "object id", "attributes"), stretch=4)
        self.context = self._table(("context phrase",), stretch=0)
        self.context.setMaximumHeight(110)
        for title, table, add in (("Objects", self.objects, self.add_object),
                                  ("Relations", self.relations, self.add_relation),
                                  ("Context", self.context, self.add_context)):
            box = QGroupBox(title)
            bl = QVBoxLayout(box)
            bl.addWidget(table)
            row = QHBoxLayout()
            b = QPushButton(f"Add {title.lower()[:-1] if title != 'Context' else 'phrase'}")
            b.clicked.connect(add)
            r = QPushButton("Remove selected")
            r.clicked.connect(lambda _=False, t=table: self._remove(t))
            row.addWidget(b)
            row.addWidget(r)
            row.addStretch(1)
            bl.addLayout(row)
            lay.addWidget(box, 1 if table is not self.context else 0)
        self.preview = QLabel("")
        self.preview.setWordWrap(True)
        lay.addWidget(self.preview)
        row = QHBoxLayout()
        self.reparse_button = QPushButton("Parse the text again")
        self.reparse_button.clicked.connect(self.reparse)
        self.save_button = QPushButton("Save graph")
        self.save_button.setToolTip("Record this graph as the prompt's (your correction)")
        self.save_button.clicked.connect(self.save)
        row.addWidget(self.reparse_button)
        row.addStretch(1)
        row.addWidget(self.save_button)
        lay.addLayout(row)
        self._loading = False

    def _table(self, headers: tuple[str, ...], stretch: int) -> QTableWidget:
        from PySide6.QtWidgets import QHeaderView

        t = QTableWidget(0, len(headers))
        t.setHorizontalHeaderLabels(list(headers))
        h = t.horizontalHeader()
        for i in range(len(headers)):
            h.setSectionResizeMode(i, QHeaderView.ResizeMode.Stretch if i == stretch
                                   else QHeaderView.ResizeMode.Interactive)
            if i != stretch:
                t.setColumnWidth(i, 60 if i == 0 else 140)
        t.verticalHeader().setVisible(False)
        t.itemChanged.connect(lambda _it: self._changed())
        return t

    # --- loading ---------------------------------------------------------------------------------------
    def show_node(self, node_id: str, prompt_id: str = "") -> None:
        tree = self.session.tree
        self.node_id = node_id
        keep = prompt_id or str(self.prompt.currentData() or "")
        self.prompt.blockSignals(True)
        self.prompt.clear()
        if tree is not None and node_id in tree.nodes:
            bugs = set(tree.bugs(node_id))
            located = {loc.prompt_id for loc in tree.locations.values()}
            for pid in tree.nodes[node_id].prompt_ids:
                tag = " — being located" if pid in located else " — BUG" if pid in bugs else ""
                self.prompt.addItem(f"{pid}: {tree.prompts[pid].text}{tag}", pid)
        i = self.prompt.findData(keep)
        self.prompt.setCurrentIndex(i if i >= 0 else 0)
        self.prompt.blockSignals(False)
        self.load()

    def prompt_id(self) -> str:
        return str(self.prompt.currentData() or "")

    def load(self, graph: Any = None) -> None:
        tree = self.session.tree
        pid = self.prompt_id()
        self._loading = True
        for t in (self.objects, self.relations, self.context):
            t.setRowCount(0)
        if tree is None or pid not in tree.prompts:
            self.info.setText("This node has no prompts yet.")
            self._loading = False
            self._changed()
            return
        p = tree.prompts[pid]
        g = graph if graph is not None else p.graph
        fixed = any(loc.prompt_id == pid for loc in tree.locations.values())
        src = p.graph_provenance.source
        self.info.setText(f"“{p.text}” — graph by <b>{src}</b>"
                          + (f" ({p.graph_provenance.model})" if p.graph_provenance.model else "")
                          + (". <b>Its failure location has started: the graph is fixed.</b>" if fixed else
                             ". Correct it before locating its failures: each half of a split is drawn from it."))
        if g is not None:
            for o in g.objects:
                self._row(self.objects, [o.id, o.name, o.article, ", ".join(o.attributes)], ro=(0,))
            for r in g.relations:
                self._row(self.relations, [r.id, r.subject, r.predicate, r.object, ", ".join(r.attributes)], ro=(0,))
            for c in g.context:
                self._row(self.context, [c])
        editable = self.session.writable and not fixed
        for t in (self.objects, self.relations, self.context):
            t.setEnabled(editable)
        self.save_button.setEnabled(editable)
        self.reparse_button.setEnabled(editable)
        self._loading = False
        self._changed()

    def _row(self, table: QTableWidget, values: list[str], ro: tuple[int, ...] = ()) -> None:
        r = table.rowCount()
        table.insertRow(r)
        for c, v in enumerate(values):
            it = QTableWidgetItem(v)
            if c in ro:
                it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
            table.setItem(r, c, it)

    # --- editing ---------------------------------------------------------------------------------------
    def _cell(self, t: QTableWidget, r: int, c: int) -> str:
        it = t.item(r, c)
        return "" if it is None else it.text().strip()

    def graph(self) -> Any:
        """The graph in the tables (a WorkstationError says what is wrong)."""
        from workstation.methods.dyeval.scene_graph import Relation, SceneGraph, SceneObject

        objs = tuple(SceneObject(self._cell(self.objects, r, 0), self._cell(self.objects, r, 1),
                                 _split(self._cell(self.objects, r, 3)), self._cell(self.objects, r, 2))
                     for r in range(self.objects.rowCount()))
        rels = tuple(Relation(self._cell(self.relations, r, 0), self._cell(self.relations, r, 2),
                              self._cell(self.relations, r, 1), self._cell(self.relations, r, 3),
                              _split(self._cell(self.relations, r, 4)))
                     for r in range(self.relations.rowCount()))
        ctx = tuple(self._cell(self.context, r, 0) for r in range(self.context.rowCount())
                    if self._cell(self.context, r, 0))
        return SceneGraph(objs, rels, ctx)

    def _changed(self) -> None:
        if self._loading:
            return
        from workstation.methods.dyeval.locate import location_bound
        from workstation.types import WorkstationError

        if self.objects.rowCount() + self.context.rowCount() == 0 and not self.prompt_id():
            self.preview.setText("")
            return
        try:
            g = self.graph()
        except WorkstationError as e:
            self.preview.setText(f"<span style='color:{FAIL_COLOR}'>{e}</span>")
            self.save_button.setEnabled(False)
            return
        self.preview.setText(f"Renders as: <b>“{g.render()}”</b> <span style='color:{PENDING_COLOR}'>— {g.size} "
                             f"element(s); its failure location takes at most {location_bound(g)} tests</span>")
        tree = self.session.tree
        fixed = tree is not None and any(loc.prompt_id == self.prompt_id() for loc in tree.locations.values())
        self.save_button.setEnabled(self.session.writable and not fixed and g.size > 0)

    def _next_id(self, prefix: str) -> str:
        used = {self._cell(self.objects, r, 0) for r in range(self.objects.rowCount())}
        used |= {self._cell(self.relations, r, 0) for r in range(self.relations.rowCount())}
        k = 1
        while f"{prefix}{k}" in used:
            k += 1
        return f"{prefix}{k}"

    def add_object(self) -> None:
        self._row(self.objects, [self._next_id("o"), "object", "a", ""], ro=(0,))
        # the row just added has its items
        self.objects.editItem(self.objects.item(self.objects.rowCount() - 1, 1))  # type: ignore[arg-type]

    def add_relation(self) -> None:
        ids = [self._cell(self.objects, r, 0) for r in range(self.objects.rowCount())]
        a, b = (ids + ["", ""])[:2]
        self._row(self.relations, [self._next_id("r"), a, "next to", b, ""], ro=(0,))

    def add_context(self) -> None:
        self._row(self.context, ["in the park"])
        # the row just added has its items
        self.context.editItem(self.context.item(self.context.rowCount() - 1, 0))  # type: ignore[arg-type]

    def _remove(self, t: QTableWidget) -> None:
        rows = sorted({i.row() for i in t.selectedIndexes()}, reverse=True)
        for r in rows:
            t.removeRow(r)
        self._changed()

    def reparse(self) -> None:
        tree = self.session.tree
        pid = self.prompt_id()
        if tree is None or pid not in tree.prompts or self.session.runner is None:
            return
        g = self.session.runner.lm.parse_scene_graph(tree.prompts[pid].text).value
        self.load(g)

    def save(self) -> None:
        from workstation.types import WorkstationError

        pid = self.prompt_id()
        try:
            g = self.graph()
        except WorkstationError as e:
            self.session.message(f"scene graph: {e}")
            return
        self.session.do("save scene graph", lambda: self.session.runner.set_graph(pid, g))
        self.session.message(f"saved the scene graph of {pid}: “{g.render()}”")
