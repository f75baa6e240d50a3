"""One MetaLogic image pair: prompt A above image A, prompt B above image B (linked zoom), the
pair's entities boxed in both, and the computed outcome with the misaligned entity marked.

Marks (not in blind mode): the misaligned entity's boxes are drawn in the warning colour in
both images — for an omission in the image that has it, and the image without it gets a dashed
warning box where the other image has it and names it in its caption ("missing here: dog"); for a duplication every counted box of it; for a positional
misalignment the two entities' selected boxes. An UNDECIDABLE pair's doubtful entity is drawn
dashed in the doubt colour. In blind mode the same detections are drawn in their entity colours
only, and nothing computed is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ui.widgets.image_pane import Box, ImagePane
from workstation.methods.metalogic.results import (
    DUPLICATION,
    MISALIGNED,
    OMISSION,
    POSITIONAL,
    UNDECIDABLE,
    VERDICTS,
)

WARNING = "#ff6d00"
DOUBT = "#ffd54f"
PALETTE = ("#4fc3f7", "#81c784", "#ce93d8", "#90a4ae", "#f48fb1", "#a1887f", "#80cbc4", "#e6ee9c")
_VERDICT_STYLE = {0: "#2e9d48", 1: "#d0453a", 2: "#8d8d8d"}


class DetectionIndex:
    """Detection rows of each image (2 · pair + side) of a `PairData`, found by binary search."""

    def __init__(self, pairs: Any) -> None:
        img = np.asarray(pairs.det_image, np.int64)
        self.order = np.argsort(img, kind="stable")
        self.starts = np.searchsorted(img[self.order], np.arange(2 * pairs.n_pairs + 1))

    def rows(self, image: int) -> np.ndarray:
        return self.order[self.starts[image]:self.starts[image + 1]]


class PairView(QWidget):
    def __init__(self, cache: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("metalogicPairView")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.header = QLabel("")
        self.header.setObjectName("metalogicPairHeader")
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.outcome = QLabel("")
        self.outcome.setObjectName("metalogicOutcome")
        self.outcome.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.header, 1)
        top.addWidget(self.outcome, 2)
        lay.addLayout(top)
        panes = QHBoxLayout()
        self.pane_a = ImagePane(cache, self)
        self.pane_b = ImagePane(cache, self)
        self.pane_a.setObjectName("metalogicPaneA")
        self.pane_b.setObjectName("metalogicPaneB")
        self.pane_a.link(self.pane_b)
        panes.addWidget(self.pane_a, 1)
        panes.addWidget(self.pane_b, 1)
        lay.addLayout(panes, 1)
        self.index: DetectionIndex | None = None
        self._data: Any = None
        self.row = -1
        self.marked: dict[int, set[int]] = {0: set(), 1: set()}  # detection rows drawn as warnings
        self.missing: dict[int, list[str]] = {0: [], 1: []}

    def set_data(self, data: Any) -> None:
        self._data = data
        self.index = DetectionIndex(data.pairs) if data is not None and len(data) else None
        self.clear()

    def unshown(self) -> str:
        """What of the pair shown is missing ("" when both images show; each pane says why)."""
        if self.row < 0:
            return "no pair shown"
        gone = [side for side, pane in (("A", self.pane_a), ("B", self.pane_b)) if pane.error]
        return "" if not gone else f"no image {gone[0]}" if len(gone) == 1 else "no images A and B"

    def clear(self) -> None:
        self.row = -1
        self.header.setText("no pair selected")
        self.outcome.setText("")
        self.pane_a.show_image(None, (), "")
        self.pane_b.show_image(None, (), "")

    # ---- what to mark ---------------------------------------------------------------------------
    def _marks(self, i: int, results: Any, cfg: Any) -> tuple[dict[int, set[int]], dict[int, set[int]],
                                                               dict[int, list[str]], dict[int, str]]:
        """(warning rows per side, doubt rows per side, missing names per side, caption notes per side)."""
        warn: dict[int, set[int]] = {0: set(), 1: set()}
        doubt: dict[int, set[int]] = {0: set(), 1: set()}
        missing: dict[int, list[str]] = {0: [], 1: []}
        notes: dict[int, str] = {0: "", 1: ""}
        if results is None:
            return warn, doubt, missing, notes
        p = self._data.pairs
        v, k = int(results.verdict[i]), int(results.kind[i])
        s1, s2 = int(results.slot[i]), int(results.slot2[i])
        ents = [str(p.entity[i, s]) for s in (s1, s2) if s >= 0]

        def counted(side: int, name: str) -> set[int]:
            assert self.index is not None
            rows = self.index.rows(2 * i + side)
            lab = np.array([str(x).lower() for x in p.det_label[rows]], dtype=object)
            area = (p.det_x2[rows] - p.det_x1[rows]) * (p.det_y2[rows] - p.det_y1[rows])
            frac = area / (p.width[i, side] * p.height[i, side])
            ok = (lab == name) & (p.det_score[rows] >= cfg.score_threshold) & (frac >= cfg.min_area_fraction)
            return {int(r) for r in rows[ok]}

        sel = results.sel_row  # (2, E, P)
        if v == MISALIGNED and k in (OMISSION, DUPLICATION):
            name = ents[0]
            for side in (0, 1):
                rows = counted(side, name)
                warn[side] |= rows
                n = int(results.count[side, s1, i])
                if k == OMISSION and n == 0:
                    missing[side].append(name)
                elif k == DUPLICATION:
                    notes[side] = f"{name} × {n} here"
        elif v == MISALIGNED and k == POSITIONAL:
            for side in (0, 1):
                for s in (s1, s2):
                    r = int(sel[side, s, i])
                    if r >= 0:
                        warn[side].add(r)
                notes[side] = "order of " + " / ".join(ents) + " differs"
        elif v == UNDECIDABLE:
            for side in (0, 1):
                for name in ents:
                    det_rows = self.index.rows(2 * i + side) if self.index is not None else np.zeros(0, np.int64)
                    doubt[side] |= {int(r) for r in det_rows if str(p.det_label[r]).lower() == name}
        return warn, doubt, missing, notes

    # ---- drawing -------------------------------------------------------------------------------------
    def show_pair(self, i: int, results: Any, cfg: Any, folder: Path | None, blind: bool) -> None:
        data = self._data
        if data is None or not 0 <= i < len(data) or self.index is None:
            self.clear()
            return
        self.row = i
        p = data.pairs
        ents = [str(e) for e in p.entity[i] if e]
        colour = {e: PALETTE[k % len(PALETTE)] for k, e in enumerate(ents)}
        warn, doubt, missing, notes = (self._marks(i, results, cfg) if not blind else
                                       ({0: set(), 1: set()}, {0: set(), 1: set()}, {0: [], 1: []}, {0: "", 1: ""}))
        self.marked, self.missing = warn, missing
        two_lines = any(missing[s] or notes[s] for s in (0, 1))
        floor = cfg.score_threshold - cfg.near_band
        for side, pane, text, path, sample in ((0, self.pane_a, data.text_a[i], data.image_a[i], data.sample_a[i]),
                                               (1, self.pane_b, data.text_b[i], data.image_b[i], data.sample_b[i])):
            boxes = []
            for r in self.index.rows(2 * i + side).tolist():
                lab = str(p.det_label[r]).lower()
                sc = float(p.det_score[r])
                if lab not in colour or (sc < floor and r not in warn[side] and r not in doubt[side]):
                    continue
                box = (float(p.det_x1[r]), float(p.det_y1[r]), float(p.det_x2[r]), float(p.det_y2[r]))
                if r in warn[side]:
                    boxes.append(Box(*box, label=f"⚠ {lab} {sc:.2f}", color=WARNING, width=4.0))
                elif r in doubt[side]:
                    boxes.append(Box(*box, label=f"? {lab} {sc:.2f}", color=DOUBT, dashed=True, width=3.0))
                elif blind:  # the detector's scores are the automated outcome's inputs: not shown
                    boxes.append(Box(*box, label=lab, color=colour[lab]))
                else:
                    boxes.append(Box(*box, label=f"{lab} {sc:.2f}", color=colour[lab], dashed=sc < cfg.score_threshold))
            cap = f"<b>{'AB'[side]}</b> · {_esc(str(text))}"
            extra = []
            if missing[side]:
                extra.append(f"<span style='color:{WARNING}'><b>missing here: {_esc(', '.join(missing[side]))}</b></span>")
            if notes[side]:
                extra.append(f"<span style='color:{WARNING}'>{_esc(notes[side])}</span>")
            if extra:
                cap += "<br>" + " · ".join(extra)
            elif two_lines:
                cap += "<br>&nbsp;"  # the other caption has two lines: the images stay level
            # where the other image shows the entity this one lacks: a dashed mark (the same place)
            other = 1 - side
            for name in missing[side]:
                sx = float(p.width[i, side]) / max(float(p.width[i, other]), 1.0)
                sy = float(p.height[i, side]) / max(float(p.height[i, other]), 1.0)
                for r in sorted(warn[other]):
                    if str(p.det_label[r]).lower() == name:
                        boxes.append(Box(float(p.det_x1[r]) * sx, float(p.det_y1[r]) * sy, float(p.det_x2[r]) * sx,
                                         float(p.det_y2[r]) * sy, label=f"no {name}",
                                         color=WARNING, dashed=True, width=3.0))
            full = (folder / str(path)) if folder is not None and path else None
            pane.show_image(full, boxes, cap, size=(float(p.width[i, side]), float(p.height[i, side])))
            pane.setToolTip(f"sample {sample}")
        self.header.setText(f"<b>{_esc(str(data.group[i]))}</b> · run {_esc(str(p.run[i]))} · seed {int(p.seed[i])}")
        if blind or results is None:
            self.outcome.setText("<i>blind: the computed outcome is hidden</i>" if blind else "")
        else:
            v = int(results.verdict[i])
            detail = results.detail_text(i)
            conf = f" · confidence {float(results.conf[i]):.2f}" if v != UNDECIDABLE else ""
            self.outcome.setText(f"<span style='color:{_VERDICT_STYLE[v]}'><b>{VERDICTS[v]}</b></span>"
                                 + (f" — {_esc(detail)}" if detail else "") + conf)


def _esc(s: str) -> str:
    import html

    return html.escape(s)
