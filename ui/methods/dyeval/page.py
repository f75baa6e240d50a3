"""The DyEval tab: the tree on the left, the selected node on the right, and what to do next.

Across the top: the tree chooser, New tree…, Export JSON…, the generator used for images, and
"Run automatic steps" (every step the language model takes by itself: write, locate, reflect,
propose). Under it, the **next-step bar** says in one line what the selected node (or else the
tree) waits for, and its button does it — write prompts, confirm them, generate images (jobs on
the Jobs panel), judge (P / F on the Images tab), locate failures, reflect, propose topics,
decide on proposals. The node's page has four tabs: Images (prompts × images, keys P / F,
pre-marks), Failure location (the split diagram), Proposals (accept / edit / reorder / reject)
and Scene graph (correct a prompt's graph before it is split).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ui.widgets.forms import wrapped_label
from ui.widgets.label_selection import LabelsLine
from workstation.methods.dyeval.store import TASK

from .graph_editor import GraphEditor
from .images import NodeImages
from .location import LocationPanel
from .proposals import ProposalsPanel
from .session import DyEvalSession
from .style import STATE_WORDS, apr_color, fmt_rate_ci
from .tree_view import TreeView

if TYPE_CHECKING:
    from ui.main_window import MainWindow

TAB_IMAGES, TAB_LOCATION, TAB_PROPOSALS, TAB_GRAPH = range(4)
BUTTON_TEXT = {"write": "Write prompts", "confirm": "Confirm prompts → generate", "generate": "Generate images",
               "judge": "Judge the images (P / F)", "locate": "Locate failures", "reflect": "Reflect",
               "propose": "Propose child topics", "decide": "Decide on proposals"}


class DyEvalPage(QWidget):
    def __init__(self, window: MainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dyevalPage")
        self.window: MainWindow = window  # type: ignore[assignment]  # shadows QWidget.window()
        self.session = DyEvalSession(window.state, self)
        self.node_id = ""
        self._next: Any = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        # --- top bar
        top = QHBoxLayout()
        top.addWidget(QLabel("Tree:"))
        self.tree_combo = QComboBox()
        self.tree_combo.setMinimumWidth(240)
        self.tree_combo.activated.connect(lambda _i: self.session.open_tree(str(self.tree_combo.currentData())))
        top.addWidget(self.tree_combo)
        self.new_button = QPushButton("New tree…")
        self.new_button.clicked.connect(self.new_tree)
        self.export_button = QPushButton("Export JSON…")
        self.export_button.clicked.connect(lambda: self.export())
        self.auto_button = QPushButton("Run automatic steps")
        self.auto_button.setToolTip("Everything the writer does by itself: write prompts, locate failures, reflect, "
                                    "propose topics (never confirms, judges or accepts for you)")
        self.auto_button.clicked.connect(lambda: self.session.run_automatic(("write", "locate", "reflect", "propose")))
        top.addWidget(self.new_button)
        top.addWidget(self.export_button)
        top.addWidget(self.auto_button)
        top.addWidget(QLabel("Images:"))
        self.gen_combo = QComboBox()
        self.gen_combo.addItem("procedural (no weights)", "")
        self.gen_combo.addItem("diffusers model folder…", "choose")
        self.gen_combo.activated.connect(self._generator_chosen)
        top.addWidget(self.gen_combo)
        top.addStretch(1)
        self.summary = QLabel("")
        self.summary.setObjectName("dyevalSummary")
        # the tree's figures wrap on a line of their own: beside the controls they widened the page
        self.summary.setWordWrap(True)
        lay.addLayout(top)
        lay.addWidget(self.summary)
        # which judgements the tree's figures count (the report records the same choice)
        self.labels_line = LabelsLine(self.session.resolved_labels, lambda: self.session.project, TASK,
                                      self.session.set_label_selection, lambda: self.session.label_selection)
        lay.addWidget(self.labels_line)
        # --- next-step bar
        self.next_frame = QFrame()
        self.next_frame.setObjectName("dyevalNext")
        self.next_frame.setStyleSheet("#dyevalNext{border:1px solid #3d6fb6;border-radius:4px;"
                                      "background:rgba(61,111,182,40)}")
        nl = QHBoxLayout(self.next_frame)
        nl.setContentsMargins(8, 4, 8, 4)
        tag = QLabel("<b>NEXT</b>")
        nl.addWidget(tag)
        self.next_label = wrapped_label(name="dyevalNextText")
        nl.addWidget(self.next_label, 1)
        self.next_button = QPushButton("")
        self.next_button.setObjectName("dyevalNextButton")
        self.next_button.setDefault(True)
        self.next_button.clicked.connect(self.do_next)
        nl.addWidget(self.next_button)
        lay.addWidget(self.next_frame)
        # --- body: placeholder or tree + node
        self.stack = QStackedWidget()
        self.placeholder = QWidget()
        pl = QVBoxLayout(self.placeholder)
        self.placeholder_text = QLabel("")
        self.placeholder_text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder_text.setWordWrap(True)
        pl.addStretch(1)
        pl.addWidget(self.placeholder_text)
        b = QPushButton("New tree…")
        b.clicked.connect(self.new_tree)
        pl.addWidget(b, 0, Qt.AlignmentFlag.AlignHCenter)
        pl.addStretch(2)
        self.stack.addWidget(self.placeholder)
        body = QSplitter(Qt.Orientation.Horizontal)
        self.tree_view = TreeView()
        self.tree_view.selected.connect(self.select)
        body.addWidget(self.tree_view)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        self.node_title = wrapped_label(name="dyevalNodeTitle")
        head.addWidget(self.node_title, 1)
        self.close_button = QPushButton("Close node")
        self.close_button.setToolTip("Stop testing this node: it is done (its figures stay)")
        self.close_button.clicked.connect(lambda: self.session.do("close node",
                                                                  lambda: self.session.runner.close_node(self.node_id)))
        head.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        rl.addLayout(head)
        self.reflection = QLabel("")
        self.reflection.setWordWrap(True)
        self.reflection.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reflection.setStyleSheet("QLabel{border-left:3px solid #8a93a3;padding-left:6px}")
        rl.addWidget(self.reflection)
        self.tabs = QTabWidget()
        self.images = NodeImages(window, self.session)
        self.location = LocationPanel(self.session)
        self.proposals = ProposalsPanel(self.session)
        self.graph = GraphEditor(self.session)
        self.tabs.addTab(self.images, "Images")
        self.tabs.addTab(self.location, "Failure location")
        self.tabs.addTab(self.proposals, "Proposals")
        self.tabs.addTab(self.graph, "Scene graph")
        rl.addWidget(self.tabs, 1)
        body.addWidget(right)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 5)
        body.setSizes([520, 1080])
        self.stack.addWidget(body)
        lay.addWidget(self.stack, 1)
        self.location.judge_step.connect(self._judge_step)
        self.session.changed.connect(self.refresh)
        self.session.trees_changed.connect(self._fill_trees)
        self.session.jobs_changed.connect(self._update_next)

    # --- jobs panel ----------------------------------------------------------------------------------------
    def attach_jobs(self, panel: Any) -> None:
        if panel is None or self.session.jobs_panel is panel:
            return
        self.session.jobs_panel = panel
        panel.job_finished.connect(self.session.on_job_finished)

    # --- refreshing -------------------------------------------------------------------------------------
    def reload(self) -> None:
        self.session.reload()

    def _fill_trees(self) -> None:
        self.tree_combo.clear()
        from workstation.methods.dyeval.store import TreeStore

        p = self.session.project
        summaries = TreeStore(p).summaries() if p is not None else []
        for s in summaries:
            roots = "; ".join(s["roots"]) or "(no topics)"
            self.tree_combo.addItem(f"{s['tree_id']}: {roots}", s["tree_id"])
        if self.session.runner is not None:
            self.tree_combo.setCurrentIndex(max(0, self.tree_combo.findData(self.session.runner.tree_id)))

    def refresh(self) -> None:
        tree = self.session.tree
        w = self.session.writable
        for b in (self.new_button,):
            b.setEnabled(w)
        self.export_button.setEnabled(tree is not None)
        self.auto_button.setEnabled(tree is not None and w)
        self.labels_line.refresh()
        self.labels_line.setVisible(self.session.project is not None)
        if tree is None:
            self.stack.setCurrentIndex(0)
            p = self.session.project
            self.placeholder_text.setText(
                ("<b>DyEval</b> could not open the trees: " + self.session.error) if self.session.error else
                "<h3>No DyEval test tree yet</h3>Make one from a root topic (or the paper's four perspectives): "
                "the workstation writes prompts, generates their images, and you judge each image PASS / FAIL. "
                "Topics that pass grow child topics; prompts that fail are split until the element that fails "
                "is found." if p is not None else "Open a project (File → Open) to test a model with DyEval.")
            self.summary.setText("")
            self.next_frame.hide()
            self.tree_view.fill(None)
            return
        self.stack.setCurrentIndex(1)
        nexts = self.session.runner.next_actions()
        by_node: dict[str, str] = {}
        for a in nexts:
            by_node.setdefault(a.node_id, a.text)
        self.tree_view.fill(tree, by_node)
        s = tree.tree_summary()
        judged = sum(1 for i in tree.images.values() if i.label is not None)
        self.summary.setText(f"<b>{tree.tree_id}</b>: {len(tree.nodes)} nodes · {judged}/{len(tree.images)} images "
                             f"judged · APR {fmt_rate_ci(s)} · AFR {fmt_rate_ci(s, 'afr')} (95 % intervals) · "
                             f"#Bugs {s.bugs}")
        key = self.tree_view.current_key()
        if key is not None:
            self._show(*key, refresh=True)
        self._update_next()

    def select(self, kind: str, ident: str) -> None:
        self._show(kind, ident, refresh=False)

    def _show(self, kind: str, ident: str, *, refresh: bool) -> None:
        tree = self.session.tree
        if tree is None:
            return
        node, lid, step, pid = "", "", "", ""
        if kind == "node":
            node = ident
        elif kind == "location" and ident in tree.locations:
            lid, node = ident, tree.locations[ident].node_id
        elif kind == "step":
            lid = ident.partition("/s")[0]
            step, node = ident, tree.locations[lid].node_id if lid in tree.locations else ""
        elif kind == "proposal" and ident in tree.proposals:
            pid, node = ident, tree.proposals[ident].node_id
        if node not in tree.nodes:
            return
        new_node = node != self.node_id
        self.node_id = node
        self._header(tree, node)
        self.images.show_node(node, focus=step if not refresh and step else "")
        self.location.show_node(node, lid, step)
        self.proposals.show_node(node, pid)
        self.graph.show_node(node)
        if not refresh:
            if kind in ("location", "step"):
                self.tabs.setCurrentIndex(TAB_LOCATION)
            elif kind == "proposal":
                self.tabs.setCurrentIndex(TAB_PROPOSALS)
            elif new_node:
                acts = [a for a in self.session.runner.next_actions() if a.node_id == node]
                kinds = {a.kind for a in acts}
                self.tabs.setCurrentIndex(TAB_PROPOSALS if "decide" in kinds and "judge" not in kinds
                                          else TAB_LOCATION if tree.nodes[node].location_ids and "judge" not in kinds
                                          and not acts else TAB_IMAGES)
        self._update_next()

    def _header(self, tree: Any, node: str) -> None:
        n = tree.nodes[node]
        s = tree.node_summary(node)
        st = tree.node_state(node)
        c = apr_color(s.apr).name()
        path = []
        x = n
        while x.parent_id is not None:
            x = tree.nodes[x.parent_id]
            path.append(x.topic)
        crumbs = " › ".join(reversed(path))
        self.node_title.setText(
            (f"<span style='color:#8a93a3'>{crumbs} ›</span> " if crumbs else "")
            + f"<span style='font-size:14pt'><b>{n.topic}</b></span>  "
            f"<span style='background:{c};color:#111;padding:0 6px'>&nbsp;APR {fmt_rate_ci(s)}&nbsp;</span>  "
            f"AFR {fmt_rate_ci(s, 'afr')} · #Bugs <b>{s.bugs}</b> · {s.tests} judged image(s) of {len(n.prompt_ids)} "
            f"prompt(s) · depth {n.depth}/{tree.config.d_max} · <i>{STATE_WORDS.get(st, st)}</i>")
        trig = [t for lid in n.location_ids for t in tree.locations[lid].machine.triggers]
        parts = []
        if trig:
            parts.append("<b>Failure triggers:</b> " + "; ".join(f"“{t.text}”" for t in trig))
        if n.reflection is not None:
            parts.append("<b>Reflection</b> (" + n.reflection.provenance.source + "):<br>"
                         + n.reflection.text.replace("\n", "<br>"))
        self.reflection.setText("<br>".join(parts))
        self.reflection.setVisible(bool(parts))
        self.close_button.setEnabled(self.session.writable and st != "done")

    # --- the next step ------------------------------------------------------------------------------------
    def _update_next(self) -> None:
        r = self.session.runner
        if r is None:
            self.next_frame.hide()
            return
        self.next_frame.show()
        if self.session.live_jobs:
            self._next = None
            self.next_label.setText(f"Generating images: {len(self.session.live_jobs)} job(s) in the Jobs panel. "
                                    "The tree takes them in when they finish.")
            self.next_button.setText("Show the Jobs panel")
            self.next_button.setEnabled(True)
            return
        acts = r.next_actions()
        mine = [a for a in acts if a.node_id == self.node_id]
        a = (mine or acts or [None])[0]
        self._next = a
        if a is None:
            self.next_label.setText("Nothing left to do in this tree: every node is done. Accept more topics, add a "
                                    "root topic, or make a new tree.")
            self.next_button.setText("New tree…")
            self.next_button.setEnabled(self.session.writable)
            return
        where = "" if a.node_id == self.node_id else f" (node “{r.tree.nodes[a.node_id].topic}”)"
        who = {"engine": "the writer does this", "jobs": "a job does this", "judge": "you judge",
               "auditor": "your decision"}.get(a.by, a.by)
        more = f" — and {len(acts) - 1} more step(s) in the tree" if len(acts) > 1 else ""
        self.next_label.setText(f"{a.text[:1].upper() + a.text[1:]}{where} <span style='color:#8a93a3'>· {who}"
                                f"{more}</span>")
        self.next_button.setText(BUTTON_TEXT.get(a.kind, a.kind))
        self.next_button.setEnabled(self.session.writable or a.kind in ("judge", "decide"))

    def do_next(self) -> None:
        a = self._next
        s = self.session
        if s.live_jobs:
            dock = getattr(self.window, "docks", {}).get("Jobs")
            if dock is not None:
                dock.show()
                dock.raise_()
            return
        if a is None:
            self.new_tree()
            return
        if a.node_id != self.node_id:
            self.tree_view.select("node", a.node_id)
        n = a.node_id
        if a.kind == "write":
            s.write_prompts(n)
        elif a.kind == "confirm":
            s.do("confirm prompts", lambda: s.runner.confirm_prompts(n))
            if s.tree is not None and s.tree.generation_requests():
                s.generate()
        elif a.kind == "generate":
            s.generate()
            dock = getattr(self.window, "docks", {}).get("Jobs")
            if dock is not None:
                dock.show()
        elif a.kind == "judge":
            self.tabs.setCurrentIndex(TAB_IMAGES)
            self.images.show_node(n)
            self.images.go_first_waiting()  # the images that wait, not the first one
            self.images.setFocus()
        elif a.kind == "locate":
            s.start_locations(n)
            self.tabs.setCurrentIndex(TAB_LOCATION)
        elif a.kind == "reflect":
            s.reflect(n)
        elif a.kind == "propose":
            s.propose(n)
            self.tabs.setCurrentIndex(TAB_PROPOSALS)
        elif a.kind == "decide":
            self.tabs.setCurrentIndex(TAB_PROPOSALS)

    def _judge_step(self, owner: str) -> None:
        self.tabs.setCurrentIndex(TAB_IMAGES)
        self.images.show_node(self.node_id, focus=owner)
        self.images.setFocus()

    # --- dialogs -----------------------------------------------------------------------------------------
    def new_tree(self) -> None:
        from .dialogs import NewTreeDialog

        d = NewTreeDialog(self)
        if d.exec() != NewTreeDialog.DialogCode.Accepted:
            return
        v = d.values()
        self.session.new_tree(v["config"], tree_id=v["tree_id"], topics=v["topics"], perspectives=v["perspectives"])

    def export(self, path: str | None = None) -> str:
        from workstation.methods.dyeval.export import export_dict
        from workstation.util import dumps
        from workstation.util.output import OutputError, write_output_text

        from ui.project_dialogs import SAVE_DIALOG_HINT, output_projects

        tree = self.session.tree
        if tree is None:
            return ""
        asked = not path  # the save dialog asks before it lets an existing file be replaced
        if not path:
            from ui.project_dialogs import exports_folder

            start = exports_folder(self.session.project) / f"dyeval_{tree.tree_id}.json"
            path, _ = QFileDialog.getSaveFileName(self, "Export the tree", str(start), "JSON (*.json)")
        if not path:
            return ""
        d = export_dict(tree)
        d["project_folder"] = str(Path(self.session.project.folder).resolve())
        try:
            write_output_text(path, dumps(d, indent=1), "tree export", overwrite=asked,
                              projects=output_projects(self.session.project), overwrite_hint=SAVE_DIALOG_HINT)
        except OutputError as e:
            self.session.message(str(e))
            return ""
        self.session.message(f"exported tree {tree.tree_id} to {path}")
        return str(path)

    def _generator_chosen(self, i: int) -> None:
        if self.gen_combo.itemData(i) == "choose":
            d = QFileDialog.getExistingDirectory(self, "A local diffusers model folder")
            if not d:
                self.gen_combo.setCurrentIndex(0)
                return
            self.session.generator, self.session.model = "diffusers", d
            self.gen_combo.setItemText(1, f"diffusers: {Path(d).name}")
        else:
            self.session.generator, self.session.model = None, None
