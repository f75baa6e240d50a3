"""A node's prompts × images grid, judged with the keyboard.

One row per text input of the node — its prompts, then the steps of its failure locations that
need images of their own — with the row's outcome (passes / judged, BUG) and its n_x images as
tiles: green border PASS, red FAIL, grey not judged, a "⚠" corner disputed (the annotators
disagree under the label selection, so no label counts); an amber corner "CLIP 18.4 ⚑" marks an image
the tree's pre-mark scorer (CLIPScore; on the demo "demo-objects") pre-marked FAIL (press F to
confirm it, P to override it; both stay recorded). The
current image is outlined and shown large on the right with its prompt, seed and scores.
Keys: P / F judge (one committed label event of task ``dyeval.image`` each), ← / → move,
Ctrl+Z undo — the shared `JudgeBar` over the tree's label scheme.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QScrollArea,
    QSplitter,
    QWidget,
)

from ui.widgets.forms import push_button
from ui.widgets.image_pane import ImagePane
from ui.widgets.judge import JudgeBar, JudgeController, install_shortcuts

from .node_panel import NodePanel
from .style import DISPUTED_COLOR, FAIL_COLOR, PASS_COLOR, PENDING_COLOR, PREMARK_COLOR, fmt_rate

if TYPE_CHECKING:
    from ui.main_window import MainWindow

TILE = 118
HEAD_WIDTH = 190  # a prompt's label beside its row of images (it wraps)


class ImageTile(QLabel):
    """One image: thumbnail, judgement border, pre-mark corner, current outline."""

    clicked = Signal(str)

    def __init__(self, image_id: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image_id = image_id
        self.setFixedSize(QSize(TILE + 8, TILE + 8))
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.pix: QPixmap | None = None
        self.label_value: str | None = None
        self.premark = ""
        self.current = False
        self.note = ""
        self.disputed = False

    def set_state(self, pix: QPixmap | None, value: str | None, premark: str, note: str,
                  disputed: bool = False) -> None:
        self.pix, self.label_value, self.premark, self.note = pix, value, premark, note
        self.disputed = disputed and not value
        self.setToolTip(note)
        self.update()

    def set_current(self, on: bool) -> None:
        self.current = on
        self.update()

    def mousePressEvent(self, e: Any) -> None:  # noqa: N802
        self.clicked.emit(self.image_id)

    def paintEvent(self, e: Any) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = self.rect().adjusted(4, 4, -4, -4)
        if self.pix is not None:
            p.drawPixmap(r, self.pix)
        else:
            p.fillRect(r, QColor("#2a2f38"))
            p.setPen(QColor("#c0c6d0"))
            p.drawText(r, Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, "no image")
        col = {"PASS": PASS_COLOR, "FAIL": FAIL_COLOR}.get(self.label_value or "", PENDING_COLOR)
        pen = QPen(QColor(col), 4 if self.label_value else 2)
        if not self.label_value:
            pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.drawRect(r)
        if self.label_value:
            p.fillRect(r.left(), r.top(), 20, 18, QColor(col))
            p.setPen(QColor("white"))
            p.drawText(r.left(), r.top(), 20, 18, Qt.AlignmentFlag.AlignCenter, self.label_value[0])
        elif self.disputed:
            p.fillRect(r.left(), r.top(), 20, 18, QColor(DISPUTED_COLOR))
            p.setPen(QColor("#1a1a1a"))
            p.drawText(r.left(), r.top(), 20, 18, Qt.AlignmentFlag.AlignCenter, "⚠")
        if self.premark:
            w = p.fontMetrics().horizontalAdvance(self.premark) + 8
            p.fillRect(r.right() - w, r.bottom() - 17, w + 1, 18, QColor(PREMARK_COLOR))
            p.setPen(QColor("#1a1a1a"))
            p.drawText(r.right() - w, r.bottom() - 17, w, 18, Qt.AlignmentFlag.AlignCenter, self.premark)
        if self.current:
            p.setPen(QPen(QColor("#4fc3f7"), 3))
            p.drawRect(self.rect().adjusted(1, 1, -2, -2))
        p.end()


class NodeImages(NodePanel):
    """The grid of one node, with the preview and the judgement bar (see the module docstring)."""

    open_graph = Signal(str)  # prompt id: correct its scene graph

    def __init__(self, window: MainWindow, session: Any, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        from workstation.methods.dyeval.tree import LABEL_SCHEME

        self.window: MainWindow = window  # type: ignore[assignment]  # shadows QWidget.window()
        self.tiles: dict[str, ImageTile] = {}
        self.row_of: dict[str, str] = {}  # image id → owner
        self.heads: dict[str, QLabel] = {}
        self._shape: tuple[Any, ...] = ()
        self.selected_owner = ""
        lay = self.column
        bar = QHBoxLayout()
        self.add_button = push_button(
            "Add prompt…", self.add_prompt,
            "Type a prompt of your own; its scene graph is parsed, and you can correct it")
        self.remove_button = push_button("Remove selected prompt", self.remove_prompt)
        self.confirm_button = push_button("Confirm prompts → generation", self.confirm_prompts)
        self.premark_button = push_button(
            "Confirm all pre-marks as FAIL", self.confirm_premarks,
            "Every image pre-marked FAIL and not judged yet becomes a human FAIL")
        for b in (self.add_button, self.remove_button, self.confirm_button, self.premark_button):
            bar.addWidget(b)
        bar.addStretch(1)
        self.legend = QLabel(f"<span style='color:{PASS_COLOR}'>■ PASS</span>  "
                             f"<span style='color:{FAIL_COLOR}'>■ FAIL</span>  "
                             f"<span style='color:{PENDING_COLOR}'>▫ not judged</span>  "
                             f"<span style='color:{DISPUTED_COLOR}'>⚠ disputed</span>  "
                             f"<span style='color:{PREMARK_COLOR}'>■ CLIP pre-mark</span>")
        self.legend.setWordWrap(True)
        lay.addLayout(bar)
        lay.addWidget(self.legend)  # a line of its own: the buttons keep the bar's width
        split = QSplitter(Qt.Orientation.Horizontal)
        self.scroll: QScrollArea = QScrollArea()  # type: ignore[assignment]  # shadows QWidget.scroll()
        self.scroll.setWidgetResizable(True)
        self.grid_host = QWidget()
        self.grid = QGridLayout(self.grid_host)
        self.grid.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.grid.setHorizontalSpacing(4)
        self.grid.setVerticalSpacing(6)
        self.scroll.setWidget(self.grid_host)
        split.addWidget(self.scroll)
        self.preview = ImagePane(getattr(window, "images", None))
        self.preview.setMinimumWidth(220)
        split.addWidget(self.preview)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([4 * (TILE + 12) + HEAD_WIDTH + 26, 320])
        lay.addWidget(split, 1)
        ask = getattr(window, "ask_annotator", None)
        self.controller = JudgeController(LABEL_SCHEME, window.state, ask_annotator=ask, parent=self)
        self.judge_bar = JudgeBar(self.controller, self)
        lay.addWidget(self.judge_bar)
        install_shortcuts(self, self.controller, self.judge_bar)
        self.controller.describe = self.describe_image  # status messages in the auditor's words
        self.controller.moved.connect(self._moved)
        # a key, undo or redo commits a label event: the tree takes it in (and the views follow)
        self.controller.committed.connect(lambda _n, target: session.after_label(target))
        self.controller.changed.connect(session.after_label)

    # --- building ---------------------------------------------------------------------------------------
    def _owners(self, tree: Any, node_id: str) -> list[tuple[str, str, str]]:
        """(owner, title, kind) rows: the node's prompts, then its locations' rendered steps."""
        n = tree.nodes[node_id]
        rows = [(pid, tree.prompts[pid].text, "prompt") for pid in n.prompt_ids]
        for lid in n.location_ids:
            loc = tree.locations[lid]
            for s in loc.machine.rendered_steps():
                rows.append((loc.owner(s.step_id), f"{lid} step {s.step_id} ({s.level}): {s.text}", "step"))
        return rows

    def _structure(self, tree: Any, node_id: str) -> tuple[Any, ...]:
        rows = self._owners(tree, node_id)
        return tuple((o, tuple(tree._owner_images(o) or [])) for o, _t, _k in rows)

    def _head_text(self, tree: Any, owner: str, title: str) -> str:
        o = tree.outcome(owner)
        verdict = ("  ·  <b style='color:%s'>BUG</b>" % FAIL_COLOR) if o.is_bug else (
            "  ·  <b style='color:%s'>passes</b>" % PASS_COLOR if o.verdict == "PASS" else "")
        return (f"<b>{owner}</b>  {_esc(title)}<br><span style='color:{PENDING_COLOR}'>{o.passes}/{o.judged} pass · "
                f"rate {fmt_rate(o.pass_rate)} · {o.n_images}/{o.expected} images</span>{verdict}")

    def describe_image(self, index: int) -> str:
        """A test image as the auditor knows it: its prompt and its seed."""
        tree = self.session.tree
        iid = self.controller.core.target_id(index)
        img = tree.images.get(iid) if tree is not None else None
        if img is None:
            return "this image"
        return f"“{tree.step_owner_text(img.owner)}” (seed {img.seed})"

    def sync_targets(self) -> None:
        """Every image of the tree is a target of the judging controller (a node's images are
        its queue; an audit set may hold images of any node)."""
        tree = self.session.tree
        ids = list(tree.images) if tree is not None else []
        c = self.controller
        if ids != c.core.ids.tolist():
            c.set_targets(np.asarray(ids, dtype=object))

    def show_node(self, node_id: str, focus: str = "", refill: bool = False) -> None:
        """Show a node (``focus``: an owner to scroll to and start at); a node whose rows and images
        are unchanged is only repainted (the judging position stays). While an audit set is open
        the node's images are shown but the queue stays the audit's."""
        tree = self.session.tree
        self.sync_targets()
        if tree is None or node_id not in tree.nodes:
            self._clear()
            self.node_id = node_id
            if self.controller.audit is None:
                self.controller.set_queue([])
            self._buttons()
            return
        structure = self._structure(tree, node_id)
        if node_id == self.node_id and structure == self._shape and not focus and not refill:
            for owner, title, _k in self._owners(tree, node_id):
                self.heads[owner].setText(self._head_text(tree, owner, title))
            self.refresh_tiles()
            self._moved(self.controller.pos)
            return
        changed_node = node_id != self.node_id
        self.node_id = node_id
        self._clear()
        self._shape = structure
        n = tree.nodes[node_id]
        queue: list[str] = []
        for row, (owner, title, kind) in enumerate(self._owners(tree, node_id)):
            head = QLabel(self._head_text(tree, owner, title))
            head.setWordWrap(True)
            head.setFixedWidth(HEAD_WIDTH)
            head.setObjectName(f"row_{owner}")
            head.setCursor(Qt.CursorShape.PointingHandCursor)
            head.mousePressEvent = (  # type: ignore[method-assign]
                lambda _e, ow=owner: self._select_owner(ow))  # type: ignore[misc]
            if kind == "step":
                head.setStyleSheet("QLabel{border-left:3px solid #ff8c1a;padding-left:4px}")
            self.heads[owner] = head
            self.grid.addWidget(head, row, 0)
            ids = list(tree._owner_images(owner) or [])
            for col in range(n.n_x):
                if col < len(ids):
                    tile = ImageTile(ids[col])
                    tile.clicked.connect(self._tile_clicked)
                    self.tiles[ids[col]] = tile
                    self.row_of[ids[col]] = owner
                    queue.append(ids[col])
                    self.grid.addWidget(tile, row, col + 1)
                else:
                    ph = QLabel("not generated yet" if kind == "prompt" else "waiting for images")
                    ph.setFixedSize(TILE + 8, TILE + 8)
                    ph.setAlignment(Qt.AlignmentFlag.AlignCenter)
                    ph.setWordWrap(True)
                    ph.setStyleSheet(f"QLabel{{border:2px dashed {PENDING_COLOR};color:{PENDING_COLOR}}}")
                    self.grid.addWidget(ph, row, col + 1)
        self.refresh_tiles()
        c = self.controller
        if c.audit is not None:
            self._moved(c.pos)
        elif changed_node or focus or refill or queue != c.queue:
            cur = c.current
            start = queue.index(cur) if cur in queue and not changed_node and not focus \
                else self._first_unjudged(queue, focus)
            c.set_queue(queue, start=start)
        else:
            self._moved(c.pos)
        self._buttons()

    def _clear(self) -> None:
        while self.grid.count():
            item = self.grid.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None:
                w.hide()
                w.setParent(None)
                w.deleteLater()
        self.tiles, self.row_of, self.heads = {}, {}, {}
        self._shape = ()

    def _first_unjudged(self, queue: list[str], focus: str) -> int:
        tree = self.session.tree
        if focus:
            for i, iid in enumerate(queue):
                if self.row_of.get(iid) == focus:
                    return i
        for i, iid in enumerate(queue):
            if tree.images[iid].label is None:
                return i
        return 0

    def refresh_tiles(self) -> None:
        tree = self.session.tree
        folder = self.session.project.folder if self.session.project is not None else None
        for iid, tile in self.tiles.items():
            img = tree.images[iid]
            pix = self._thumb(folder / img.path) if folder is not None and img.path else None
            pm = ""
            name = score_name(tree)
            if img.clip_score is not None:
                pm = f"{name} {img.clip_score:.1f}" + (" ⚑" if img.premark_fail else "")
            note = (f"{iid}\nseed {img.seed} · " + (f"judged {img.label} by {img.annotator}" if img.label
                                                    else f"disputed ({img.annotator} disagree)" if img.disputed
                                                    else "not judged")
                    + (f"\n{tree.config.premark_scorer} {img.clip_score:.2f}" + (" — pre-marked FAIL" if img.premark_fail
                                                                                 else "")
                       if img.clip_score is not None else ""))
            tile.set_state(pix, img.label, pm if img.premark_fail or img.clip_score is not None else "", note,
                           disputed=bool(img.disputed))
        self._buttons()

    def _thumb(self, path: Any) -> QPixmap | None:
        cache = getattr(self.window, "thumbs", None)
        if cache is None:
            from ui.image_cache import decode

            r = decode(path, TILE)
        else:
            r = cache.get(str(path))
        if r.image is None:
            return None
        return QPixmap.fromImage(r.image).scaled(TILE, TILE, Qt.AspectRatioMode.KeepAspectRatio,
                                                 Qt.TransformationMode.SmoothTransformation)

    # --- moving and selecting ---------------------------------------------------------------------------
    def go_first_waiting(self) -> None:
        """Go to the first image of the node nobody has judged yet (the node's first when all are)."""
        c = self.controller
        if c.audit is not None:
            return
        queue = c.queue
        c.go(self._first_unjudged(queue, ""))

    def _tile_clicked(self, image_id: str) -> None:
        i = self.controller.index_of(image_id)
        if i >= 0:
            self.controller.go_target(i)
        self._select_owner(self.row_of.get(image_id, ""))
        self.setFocus()

    def _select_owner(self, owner: str) -> None:
        self.selected_owner = owner
        for o, lab in self.heads.items():
            if lab is not None:
                base = "border-left:3px solid #ff8c1a;padding-left:4px;" if "/s" in o else ""
                sel = "background:rgba(79,195,247,40);" if o == owner else ""
                lab.setStyleSheet(f"QLabel{{{base}{sel}}}")
        self._buttons()

    def _moved(self, pos: int) -> None:
        cur = self.controller.current
        for iid, t in self.tiles.items():
            t.set_current(iid == cur)
        tree = self.session.tree
        if cur is None or tree is None or cur not in tree.images:
            self.preview.show_image(None, caption="no image selected")
            self.judge_bar.set_unshown("no image selected" if cur is not None else "")
            return
        img = tree.images[cur]
        text = tree.step_owner_text(img.owner)
        pm = ""
        if img.clip_score is not None:
            th = tree.config.premark_threshold
            below = f" &lt; {th:g}" if th is not None else ""
            pm = (f"<br>{tree.config.premark_scorer} {img.clip_score:.2f}"
                  + (f"{below}: <b style='color:{PREMARK_COLOR}'>pre-marked FAIL</b> — F confirms, P overrides"
                     if img.premark_fail else ""))
        judged = (f"<b>{img.label}</b> by {img.annotator}" if img.label else
                  f"<b>disputed</b>: {_esc(img.annotator)} disagree (no label counts)" if img.disputed
                  else "not judged yet — P / F")
        cap = f"<b>{_esc(text)}</b><br>{img.owner} · seed {img.seed} · {judged}{pm}"
        path = self.session.project.folder / img.path if img.path else None
        self.preview.show_image(path, caption=cap)
        self.judge_bar.set_unshown("no image" if self.preview.error else "")  # P / F judge what is seen
        tile = self.tiles.get(cur)
        if tile is not None:
            self.scroll.ensureWidgetVisible(tile, 10, 10)

    # --- the auditor's buttons ----------------------------------------------------------------------------
    def _buttons(self) -> None:
        tree = self.session.tree
        ok = tree is not None and self.node_id in (tree.nodes if tree else {}) and self.session.writable
        n = tree.nodes[self.node_id] if ok else None
        editable = bool(n is not None and not n.prompts_confirmed)
        self.add_button.setEnabled(editable)
        self.remove_button.setEnabled(editable and self.selected_owner in (n.prompt_ids if n else []))
        self.confirm_button.setEnabled(editable and bool(n and n.prompt_ids))
        pending = [i for i in self.tiles if tree.images[i].premark_fail and tree.images[i].label is None] if ok else []
        self.premark_button.setEnabled(bool(pending))
        self.premark_button.setText(f"Confirm {len(pending)} pre-mark(s) as FAIL" if pending
                                    else "Confirm all pre-marks as FAIL")

    def add_prompt(self, text: str | None = None) -> None:
        if text is None:
            text, ok = QInputDialog.getText(self, "Add a prompt", "Prompt (its scene graph is parsed; you can correct it):")
            if not ok:
                return
        if not text or not text.strip():
            return
        pid = self.session.do("add prompt", lambda: self.session.runner.add_prompt(self.node_id, text.strip()))
        if pid:
            self.selected_owner = str(pid)

    def remove_prompt(self) -> None:
        pid = self.selected_owner
        if pid:
            self.session.do("remove prompt", lambda: self.session.runner.remove_prompt(pid))
            self.selected_owner = ""

    def confirm_prompts(self) -> None:
        self.session.do("confirm prompts", lambda: self.session.runner.confirm_prompts(self.node_id))

    def confirm_premarks(self) -> None:
        st = self.window.state
        if not st.annotator:
            ask = getattr(self.window, "ask_annotator", None)
            name = ask() if ask else None
            if not name:
                return
            st.set_annotator(name)
        ids = [i for i in self.tiles]
        self.session.confirm_premarks(ids, st.annotator)
        self.controller.reload()


def score_name(tree: Any) -> str:
    """The pre-mark scorer as a tile badge says it: "CLIP" for CLIPScore, else its name."""
    name = str(tree.config.premark_scorer or "score")
    return "CLIP" if name.startswith("clip") else name


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
