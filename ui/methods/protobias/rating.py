"""The rating mode: each image of each triplet rated 1-4 for semantic fidelity to T only.

Blind by construction: the page shows T and the triplet's two images as "Image A" and "Image B"
in the seeded per-triplet order of `workstation.methods.protobias.labels.blind_sides` (so which
one is the prototype is a coin flip the annotator cannot learn), triplets in a seeded shuffled
order, and nothing of any metric, of the knob, of the roles or of the sample ids (the status
messages name "image A of triplet 12", never a sample id). Keys 1-4 rate the highlighted image
(one committed ``protobias.fidelity`` label event per key, durable when the key returns), then
the other image, then the next triplet; notes, undo / redo (Ctrl+Z / Ctrl+Shift+Z), ← / →.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ui.widgets.forms import wrapped_label
from ui.widgets.image_pane import ImagePane
from ui.widgets.judge import JudgeBar, JudgeController, install_shortcuts
from workstation.methods.protobias.labels import FIDELITY_SCHEME, blind_sides

if TYPE_CHECKING:
    from ui.main_window import MainWindow

BLIND_SEED = 0
ACTIVE = "#3d6fb6"
SHORT = {"1": "poor", "2": "one major mistake", "3": "mostly correct", "4": "perfect"}


def rating_queue(data: Any, seed: int = BLIND_SEED) -> tuple[list[str], dict[str, tuple[int, int, str]]]:
    """(targets, where): the sample ids to rate, two per triplet (left image, then right) in a
    seeded shuffled triplet order, and for each sample id (data row, queue triplet number from 1,
    side "A" / "B")."""
    if data is None or not len(data):
        return [], {}
    h = hashlib.sha256(f"protobias-rating-order|{int(seed)}".encode()).digest()
    ids = np.asarray(data.item_id, dtype=str)
    order = np.argsort(ids, kind="stable")  # the same items give the same queue, whatever the load order
    order = order[np.random.default_rng(int.from_bytes(h[:8], "little")).permutation(len(order))]
    targets: list[str] = []
    where: dict[str, tuple[int, int, str]] = {}
    for k, i in enumerate(order.tolist(), start=1):
        left, right = blind_sides(str(data.item_id[i]), seed)
        for side, role in (("A", left), ("B", right)):
            sid = str(data.sample_corr[i] if role == "corr" else data.sample_adv[i])
            targets.append(sid)
            where[sid] = (int(i), k, side)
    return targets, where


class RatingPage(QWidget):
    labels_written = Signal()

    def __init__(self, session: Any, window: MainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setObjectName("protobiasRating")
        self.where: dict[str, tuple[int, int, str]] = {}
        self.n_triplets = 0
        self.controller = JudgeController(FIDELITY_SCHEME, window.state,
                                          ask_annotator=getattr(window, "ask_annotator", None), parent=self)
        self.controller.describe = self._alias  # messages name the side and the triplet, never a sample id

        intro = QLabel("Rate <b>each image</b> 1–4 for <b>semantic fidelity to the text only</b> — does it show what "
                       "the text says (main element, extra element, count, colour, position, size)? Not image quality, "
                       "not style, not how typical it looks. Scores of metrics and which image is which are hidden.")
        intro.setWordWrap(True)
        intro.setObjectName("dim")
        self.position = QLabel("")
        self.position.setObjectName("pbRatingPosition")
        self.text = wrapped_label(name="pbRatingText", selectable=True)
        f = self.text.font()
        f.setPointSizeF(f.pointSizeF() * 1.45)
        f.setBold(True)
        self.text.setFont(f)
        images = getattr(window, "images", None)
        self.panes = {"A": ImagePane(images), "B": ImagePane(images)}
        self.panes["A"].link(self.panes["B"])
        row = QHBoxLayout()
        row.addWidget(self.panes["A"], 1)
        row.addWidget(self.panes["B"], 1)
        guide = QGridLayout()
        guide.setHorizontalSpacing(14)
        for k, (v, title) in enumerate(zip(FIDELITY_SCHEME.values, FIDELITY_SCHEME.titles)):
            key = QLabel(f"<b>{v}</b>")
            desc = QLabel(title.split("–", 1)[-1].strip())
            desc.setObjectName("dim")
            guide.addWidget(key, k // 2, 2 * (k % 2))
            guide.addWidget(desc, k // 2, 2 * (k % 2) + 1)
        guide.setColumnStretch(1, 1)
        guide.setColumnStretch(3, 1)
        self.bar = JudgeBar(self.controller, self, exporter=self.export_labels)
        for v, b in self.bar.buttons.items():  # short buttons; the guide above says what each means
            b.setText(f"{v} · {SHORT[v]}")
            b.setToolTip(FIDELITY_SCHEME.title_of(v))
            b.setMinimumWidth(64)
        self.shortcuts = install_shortcuts(self, self.controller, self.bar)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.addWidget(intro)
        head = QHBoxLayout()
        head.addWidget(self.text, 1)
        head.addWidget(self.position, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(head)
        lay.addLayout(row, 1)
        lay.addLayout(guide)
        lay.addWidget(self.bar)

        self.controller.moved.connect(lambda _pos: self.show_current())
        self.controller.changed.connect(self._update_position)
        self.controller.committed.connect(lambda *_: self.labels_written.emit())
        session.data_changed.connect(self.reload)
        self.reload()

    # Ctrl+Z / Ctrl+Shift+Z: the page's own shortcuts (install_shortcuts); the main window's Edit →
    # Undo is enabled on its Review tab only, so the two never clash.
    # ---- queue ----------------------------------------------------------------------------------
    def reload(self) -> None:
        """Rebuild the queue from the session's data: every image, in the seeded rating order
        (the targets' order, so the plain queue is the rating queue); start at the annotator's
        first unrated image. The same images keep the place and the undo stack."""
        targets, self.where = rating_queue(self.session.data)
        self.n_triplets = len(targets) // 2
        c = self.controller
        if targets and len(targets) == c.core.n_targets and c.core.ids.tolist() == targets:
            c.reload()
            self.show_current()
            return
        c.set_targets(np.asarray(targets, dtype=object))
        start = c.core.first_undone()
        if start:
            c.go(start)
        self.show_current()

    def export_labels(self, path: str, overwrite: bool = False) -> int:
        """The labels the policy lets an export hold; during a blind audit their targets get neutral
        ids (``<item id>#A`` / ``#B``: the triplet and the side shown, never the image's role),
        which `labels unblind` maps back with the project."""
        c = self.controller
        rename: Callable[[str], str] | None = None
        if not c.view_visibility().outcome:
            from workstation.methods.protobias.labels import neutral_ids

            d = self.session.data
            ids = neutral_ids(d.item_id, d.sample_corr, d.sample_adv, BLIND_SEED) if d is not None else {}
            def rename(t: str) -> str:  # an image no triplet holds any more: a neutral id still
                return ids.get(t) or "image#" + hashlib.sha256(t.encode()).hexdigest()[:12]
        return int(c.export_csv(path, overwrite, rename=rename))

    def _alias(self, index: int) -> str:
        sid = self.controller.core.target_id(index)
        if sid not in self.where:
            return "this image"
        _i, k, side = self.where[sid]
        return f"image {side} of triplet {k}"

    def show_current(self) -> None:
        sid = self.controller.current
        data = self.session.data
        if sid is None or data is None or sid not in self.where:
            self.text.setText("No triplets to rate: import, generate or build the demo first."
                              if not self.where else "")
            for pane in self.panes.values():
                pane.show_image(None, caption="")
            self.bar.set_unshown("no image shown" if sid is not None else "")
            self._update_position()
            return
        i, _k, side = self.where[sid]
        left, right = blind_sides(str(data.item_id[i]), BLIND_SEED)
        self.text.setText(html.escape(str(data.text[i])))
        for s, role in (("A", left), ("B", right)):
            active = s == side
            caption = (f"<b>▶ Image {s}</b> — rate this one" if active else f"Image {s}")
            pane = self.panes[s]
            pane.show_image(data.image_path(i, role), caption=caption)
            pane.view.setStyleSheet(f"QGraphicsView {{ border: 3px solid {ACTIVE}; }}" if active
                                    else "QGraphicsView { border: 1px solid palette(mid); }")
        # the image to rate not found: no rating is recorded (the pane says what is missing)
        self.bar.set_unshown(f"no image {side}" if self.panes[side].error else "")
        self._update_position()

    def _update_position(self) -> None:
        sid = self.controller.current
        if sid is None or sid not in self.where:
            self.position.setText("")
            return
        _i, k, side = self.where[sid]
        c = self.controller
        done, total = c.progress()
        who = c.state.annotator
        where = (f"item {c.pos + 1} of {total} in audit set #{c.audit.audit_set_id}" if c.audit is not None and c.on_queue()
                 else f"triplet {k} of {self.n_triplets} · image {side}")
        self.position.setText(f"{where}\n{done} of {total} images rated" + (f" by {who}" if who else ""))

    def current_side(self) -> str:
        sid = self.controller.current
        return self.where[sid][2] if sid in self.where else ""
