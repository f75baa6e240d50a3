"""The Failure location tab: a node's locations, the split diagram, and the selected step."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QWidget,
)

from ui.widgets.forms import combo_row

from .node_panel import NodePanel
from .split_diagram import SplitDiagram
from .style import PENDING_COLOR


class LocationPanel(NodePanel):
    judge_step = Signal(str)  # owner "L1/s3": judge its images on the Images tab

    def __init__(self, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        lay = self.column
        top, self.combo = combo_row("Location:", self._draw, min_width=360)
        self.locate_button = QPushButton("Locate failures of the bug prompts")
        self.locate_button.setToolTip("Start Algorithm 1 on every bug prompt of this node not located yet")
        self.locate_button.clicked.connect(lambda: self.session.start_locations(self.node_id))
        top.addWidget(self.locate_button)
        self.fit_button = QPushButton("Fit")
        self.fit_button.clicked.connect(lambda: self.diagram.fit())
        top.addWidget(self.fit_button)
        lay.addLayout(top)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Vertical)
        self.diagram: SplitDiagram = SplitDiagram()
        self.diagram.step_clicked.connect(self._step)
        split.addWidget(self.diagram)
        self.detail = QLabel("Click a box to see its test: the cell being narrowed, the context kept, its images.")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        host = QWidget()
        hl = QHBoxLayout(host)
        hl.setContentsMargins(4, 4, 4, 4)
        hl.addWidget(self.detail, 1)
        self.judge_button = QPushButton("Judge this step's images")
        self.judge_button.setEnabled(False)
        self.judge_button.clicked.connect(lambda: self.judge_step.emit(self._owner))
        hl.addWidget(self.judge_button, 0, Qt.AlignmentFlag.AlignTop)
        split.addWidget(host)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 1)
        lay.addWidget(split, 1)
        self._owner: str = ""

    def current_location(self) -> str:
        return str(self.combo.currentData() or "")

    def show_node(self, node_id: str, location_id: str = "", step_owner: str = "") -> None:
        tree = self.session.tree
        self.node_id = node_id
        self.combo.blockSignals(True)
        keep = location_id or self.current_location()
        self.combo.clear()
        if tree is not None and node_id in tree.nodes:
            for lid in tree.nodes[node_id].location_ids:
                loc = tree.locations[lid]
                self.combo.addItem(f"{lid}: {tree.prompts[loc.prompt_id].text}", lid)
        i = self.combo.findData(keep)
        self.combo.setCurrentIndex(i if i >= 0 else 0)
        self.combo.blockSignals(False)
        ok = tree is not None and node_id in tree.nodes
        located = {tree.locations[x].prompt_id for x in tree.nodes[node_id].location_ids} if ok else set()
        todo = [p for p in tree.bugs(node_id) if p not in located] if ok else []
        self.locate_button.setEnabled(bool(todo) and self.session.writable)
        self.locate_button.setText(f"Locate failures of {len(todo)} bug prompt(s)" if todo
                                   else "Locate failures of the bug prompts")
        self._draw()
        if step_owner and "/s" in step_owner:
            sid = int(step_owner.partition("/s")[2])
            self.diagram.select(sid)
            self._step(sid)

    def _draw(self) -> None:
        tree = self.session.tree
        lid = self.current_location()
        if tree is None or not lid or lid not in tree.locations:
            self.diagram.show_location(None)
            self.status.setText("")
            self.detail.setText("")
            self.judge_button.setEnabled(False)
            return
        loc = tree.locations[lid]
        m = loc.machine
        pend = m.pending()
        if m.done:
            trig = "; ".join(f"<b>{_esc(t.text)}</b>" for t in m.triggers)
            self.status.setText(f"<b>Done</b> after {len(m.rendered_steps())} tests — failure trigger(s): {trig} "
                                "(they go into the node's reflection).")
        else:
            waiting = sum(1 for s in pend if tree._owner_images(loc.owner(s.step_id)))
            self.status.setText(f"<b>{len(pend)} step(s) wait</b> for images and judgements "
                                f"({waiting} have images): generate, then judge them on the Images tab. The next "
                                "split follows from their verdicts.")
        self.diagram.show_location(m, f"Failure location {lid} of “{tree.prompts[loc.prompt_id].text}”")
        self.diagram.fit()
        self.detail.setText("Click a box to see its test: what is being narrowed, what is kept as context, and its "
                            "images. Green passed, red failed, grey waits for judgements; dashed boxes repeat an "
                            "earlier test; orange marks a failure trigger.")
        self.judge_button.setEnabled(False)

    def _step(self, step_id: int) -> None:
        tree = self.session.tree
        lid = self.current_location()
        if tree is None or lid not in tree.locations:
            return
        loc = tree.locations[lid]
        s = loc.machine.step(step_id)
        root = loc.machine.root
        owner = loc.owner(step_id)
        self._owner = owner if s.reused_from is None and step_id > 0 else ""
        cell = "; ".join(root.describe(k) for k in s.cell)
        ctx = "; ".join(root.describe(k) for k in s.context) or "—"
        if step_id == 0:
            imgs = "the prompt's own images (on the Images tab)"
        elif s.reused_from is not None:
            imgs = f"none of its own: the same test as step {s.reused_from}"
        else:
            ids = tree._owner_images(owner) or []
            judged = sum(1 for i in ids if tree.images[i].label is not None)
            o = tree.outcome(owner)
            imgs = f"{len(ids)} image(s), {judged} judged, {o.passes} pass"
        self.detail.setText(f"<b>step {step_id}</b> — “{_esc(s.text)}” — <b>{s.verdict or 'waiting'}</b><br>"
                            f"<span style='color:{PENDING_COLOR}'>narrowing:</span> {_esc(cell)}<br>"
                            f"<span style='color:{PENDING_COLOR}'>kept as context:</span> {_esc(ctx)}<br>"
                            f"<span style='color:{PENDING_COLOR}'>images:</span> {imgs}")
        self.judge_button.setEnabled(bool(self._owner))


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
