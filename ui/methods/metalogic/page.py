"""The MetaLogic page: the law × dimension heatmap, the pair list, the selected image pair and the
human judgements, over one live `MethodSession`.

* **Sliders** — the comparison's abstention thresholds (the detection threshold, the band around it
  where an entity is *near threshold*, the score gap under which the top detections are
  *ambiguous*, the centroid margin on the axis): a move re-evaluates every pair (debounced, on a
  worker thread) and the heatmap, the list and the pair follow.
  "Store as version" keeps the live parameters as an evaluation version.
* **Heatmap** — misalignment rate (and decided pairs) per law × dimension; a click lists exactly
  the pairs of that cell.
* **Pair list / pair view** — prompt A above image A, prompt B above image B (linked zoom), the
  detections boxed and the misaligned entity marked on both.
* **Judgements** — keys A / M / U write one ``metalogic.pair`` label event for the shown pair
  (`ui.widgets.judge`), notes, undo / redo, ← / →; the list is the queue.
* **Human judgements and agreement** — the pair outcomes of the task's label selection (the line
  above them and its Labels… button choose which labels count and how several annotators'
  judgements of one pair become one; kept with the project), the human misalignment rate, and
  the computed outcome against them: raw agreement, Cohen's κ and the confusion counts
  (`metrics.human_rates`, `metrics.agreement`; the report's "human" and "agreement" tables).
  The annotator's own progress stands above them.
* **Blind** — hides everything computed (outcomes, kinds, rates, marks, agreement).

A slider move re-evaluates on a worker thread (`superqt.create_worker`: the comparison is pure
numpy over the loaded arrays) and the session adopts the result (`MethodSession.adopt`); the
newest move wins. Loading reads the project on the GUI thread (its DuckDB connection is not
shared with worker threads).
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSlider,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced

from ui.widgets.forms import check_box, push_button, wrapped_label
from ui.widgets.judge import JudgeBar, JudgeController, install_shortcuts
from ui.widgets.kept_selection import KeptSelection
from ui.widgets.label_selection import LabelsLine
from ui.widgets.layout import FlowLayout, row, splitter
from workstation.evaluation.selection import LabelSelection, no_events, resolve
from workstation.methods.metalogic.laws import DIMENSION_TITLES
from workstation.methods.metalogic.metrics import agreement, human_rates
from workstation.methods.metalogic.results import LABEL_SCHEME, REASONS, UNDECIDABLE, VERDICTS
from workstation.methods.metalogic.store import SelectedPairs, human_selected

from .models import HeatmapDelegate, HeatmapModel, PairListModel
from .pair_view import PairView

#: (config field, title, maximum, tooltip) — sliders in hundredths from 0 to the maximum
SLIDERS: tuple[tuple[str, str, float, str], ...] = (
    ("score_threshold", "detection threshold", 0.95,
     "a detection counts when its score is at least this"),
    ("near_band", "near threshold ±", 0.30,
     "UNDECIDABLE (near_threshold) when an entity's detection lies within this band around the threshold"),
    ("ambiguity_delta", "ambiguous top Δ", 0.30,
     "UNDECIDABLE (ambiguous) when the two top detections of an entity are closer than this in score"),
    ("axis_margin", "axis margin", 0.30,
     ("UNDECIDABLE (near_boundary) when the two entities' centroids are at most this far apart on the axis "
      "(fraction of the image side)")),
)

if TYPE_CHECKING:
    from ui.main_window import MainWindow
DEBOUNCE_MS = 120
HEAT_HINT = ("Misalignment rate by the paper's rule (every pair decided) · pairs per law × dimension (published "
             "rates in the headers; the abstention-aware rate and the intervals in each cell's tooltip). "
             "Click a cell to list its pairs.")
HEAT_HINT_BLIND = "Image pairs per law × dimension. Click a cell to list its pairs."
#: list column widths (pixels; pair and detail share the rest)
WIDTHS = {"run": 120, "seed": 44, "law": 96, "modifier": 76, "dimension": 104, "outcome": 104, "kind": 104,
          "conf": 46, "human": 104}


def _pct_ci(row: dict[str, Any], key: str) -> str:
    """"61.0% [55.1, 66.6]" from a rate row; "–" when undefined."""
    hi: Any  # a float where lo is one
    v, lo, hi = row.get(key), row.get(f"{key}_lo"), row.get(f"{key}_hi")
    if not isinstance(v, float) or math.isnan(v):
        return "–"
    bounds = f" [{100 * lo:.1f}, {100 * hi:.1f}]" if isinstance(lo, float) and not math.isnan(lo) else ""
    return f"{100 * v:.1f}%{bounds}"


def _evaluate(generation: int, method: Any, data: Any, cfg: Any) -> tuple[int, Any, Any, Any]:
    """Every pair under ``cfg`` (on a worker thread: pure numpy over the loaded arrays)."""
    return generation, data, cfg, method.evaluate(data, cfg)


class ParamSlider(QWidget):
    """A title, a slider in hundredths and the value."""

    moved = Signal()

    def __init__(self, key: str, title: str, top: float, tip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.title = QLabel(title)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName(f"ml_{key}")
        self.slider.setRange(0, round(top * 100))
        self.slider.setMinimumWidth(120)
        self.value = QLabel("")
        self.value.setMinimumWidth(34)
        for w in (self, self.slider, self.title):
            w.setToolTip(tip)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.title)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.value)
        self.slider.valueChanged.connect(self._changed)

    def _changed(self, v: int) -> None:
        self.value.setText(f"{v / 100:.2f}")
        self.moved.emit()

    def get(self) -> float:
        return self.slider.value() / 100

    def set_quiet(self, x: float) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(round(float(x) * 100))
        self.slider.blockSignals(False)
        self.value.setText(f"{self.get():.2f}")


class MetaLogicPage(QWidget):
    def __init__(self, session: Any, window: MainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("metalogicPage")
        self.session = session
        self.window_ = window
        self.human = np.zeros(0, np.int8)
        self.cell: tuple[str, str] | None = None
        self._syncing = False
        self._rows: dict[str, int] = {}  # pair id -> data row
        self._runs: list[str] = []
        self._queue_rows = np.zeros(0, np.int64)  # the list rows the judging queue was made of
        self._queue_data: Any = None
        self._eval_generation = 0
        self._worker: Any = None
        self.evaluating = False

        # ---- top: summary, blind, store ---------------------------------------------------------------
        self.summary = wrapped_label(name="metalogicSummary")
        self.blind_box = check_box("blind (hide computed outcomes)", self.set_blind, name="metalogicBlind")
        self.store_button = push_button("Store as version", self._store,
                                        "Store the live parameters and their outcomes as an evaluation version")
        head = row(self.summary, self.blind_box, self.store_button, stretch=(1,))

        self.sliders: dict[str, ParamSlider] = {}
        grid = FlowLayout(spacing=18)  # the sliders wrap onto a second line on a small screen
        for key, title, top, tip in SLIDERS:
            s = ParamSlider(key, title, top, tip, self)
            s.moved.connect(self._slider_moved)
            self.sliders[key] = s
            grid.addWidget(s)
        self._debounce = qdebounced(self.apply_sliders, timeout=DEBOUNCE_MS, timer_type=Qt.TimerType.CoarseTimer,
                                    parent=self)

        # ---- left: heatmap and agreement ---------------------------------------------------------
        self.heat = HeatmapModel(self)
        self.heat_view = QTableView()
        self.heat_view.setObjectName("metalogicHeatmap")
        self.heat_view.setModel(self.heat)
        self.heat_view.setItemDelegate(HeatmapDelegate(self.heat_view))
        self.heat_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.heat_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.heat_view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.heat_view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.heat_view.setMinimumSize(240, 220)  # the heatmap never collapses (a small screen)
        self.heat_view.clicked.connect(self._cell_clicked)
        self.heat.modelReset.connect(self._fit_heatmap)
        self.heat.headerDataChanged.connect(self._fit_heatmap)
        self.heat_hint = heat_hint = QLabel(HEAT_HINT)
        heat_hint.setObjectName("dim")
        heat_hint.setWordWrap(True)
        self.progress = wrapped_label(name="metalogicProgress")
        self.progress.setTextFormat(Qt.TextFormat.RichText)
        # which labels the human figures use: one line above them, one place to choose
        self.labels = KeptSelection(LABEL_SCHEME.task, lambda: self.session.project, self._message)
        self._selected: SelectedPairs | None = None
        self.labels_line = LabelsLine(lambda: self.selected_pairs().resolved, lambda: self.session.project,
                                      LABEL_SCHEME.task, self.set_label_selection, lambda: self.labels.selection)
        self.agreement = wrapped_label(name="metalogicAgreement")
        self.agreement.setTextFormat(Qt.TextFormat.RichText)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.heat_view, 3)
        ll.addWidget(heat_hint)
        ll.addWidget(self.progress)
        ll.addWidget(self.labels_line)
        ll.addWidget(self.agreement)
        ll.addStretch(1)

        # ---- right: list, pair, judge bar ---------------------------------------------------------
        self.model = PairListModel(self)
        self.list = QTableView()
        self.list.setObjectName("metalogicPairList")
        self.list.setModel(self.model)
        self.list.setSortingEnabled(True)
        self.list.horizontalHeader().setSortIndicatorClearable(True)
        self.list.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # data order until a header is clicked
        self.list.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.verticalHeader().setVisible(False)
        self.list.verticalHeader().setDefaultSectionSize(22)
        self.list.horizontalHeader().setStretchLastSection(False)
        self.list.selectionModel().currentRowChanged.connect(self._row_selected)
        self.filter_label = QLabel("all pairs")
        self.filter_label.setObjectName("metalogicFilter")
        self.all_button = QPushButton("Show all pairs")
        self.all_button.clicked.connect(self.show_all)
        frow = QHBoxLayout()
        frow.addWidget(self.filter_label, 1)
        frow.addWidget(self.all_button)
        top_right = QWidget()
        tl = QVBoxLayout(top_right)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(frow)
        tl.addWidget(self.list, 1)

        self.pair = PairView(getattr(window, "images", None), self)
        self.controller = JudgeController(LABEL_SCHEME, window.state,
                                          ask_annotator=getattr(window, "ask_annotator", None), parent=self)
        self.bar = JudgeBar(self.controller, self)
        self.shortcuts = install_shortcuts(self, self.controller, self.bar)
        bottom_right = QWidget()
        bl = QVBoxLayout(bottom_right)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.pair, 1)
        bl.addWidget(self.bar)
        right = splitter(Qt.Orientation.Vertical, top_right, bottom_right, stretch=(1, 3), sizes=(220, 600))
        split = splitter(Qt.Orientation.Horizontal, left, right, stretch=(2, 5), sizes=(430, 1000))
        content = QWidget()
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addLayout(grid)
        cl.addWidget(split, 1)
        # a project without MetaLogic image pairs: one sentence instead of empty views and a judge bar
        self.empty = wrapped_label(name="metalogicEmpty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body = QStackedWidget()
        self.body.addWidget(content)
        self.body.addWidget(self.empty)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.addLayout(head)
        lay.addWidget(self.body, 1)

        self.controller.describe = self.describe_pair  # status messages in the auditor's words
        self.controller.moved.connect(self._moved)
        self.controller.committed.connect(lambda *_: self.refresh_human())
        self.controller.changed.connect(self._after_change)
        self.controller.policy_changed.connect(self._policy_changed)
        self.controller.queue_changed.connect(self._queue_changed)
        session.app.annotator_changed.connect(self.refresh_human)
        self.model.modelReset.connect(self._list_reset)
        self.model.layoutChanged.connect(self._list_reset)
        session.data_changed.connect(self._data_changed)
        session.results_changed.connect(self._results_changed)
        session.config_changed.connect(self._sync_sliders)
        self._data_changed()
        self._sync_sliders()

    # ---- loading ------------------------------------------------------------------------------------
    def load(self) -> None:
        """Read the project's pairs and active version into the session (on the GUI thread: the
        project's DuckDB connection is not shared with worker threads)."""
        self.session.reload()

    # ---- sliders -----------------------------------------------------------------------------------
    def _sync_sliders(self) -> None:
        cfg = self.session.config
        for key, s in self.sliders.items():
            s.set_quiet(getattr(cfg, key))

    def _slider_moved(self) -> None:
        self._debounce()

    def apply_sliders(self) -> None:
        """Re-evaluate under the sliders' values (now; the sliders call it debounced)."""
        self._debounce.cancel()
        s = self.session
        changes = {k: sl.get() for k, sl in self.sliders.items()}
        try:
            cfg = s.config.replace(**changes)
            cfg.validate()
        except ValueError as e:
            self._message(f"not applied: {e}")
            return
        if s.data is None or (s.results is not None and cfg.content_hash() == s.config.content_hash()):
            self._eval_generation += 1  # back where the session is: a pending evaluation is stale
            self.evaluating = False
            s.set_config(cfg)
            return
        from superqt.utils import create_worker

        self._eval_generation += 1
        self.evaluating = True
        worker = create_worker(_evaluate, self._eval_generation, s.method, s.data, cfg, _start_thread=False)
        worker.returned.connect(self._evaluated)  # bound method: delivered on the GUI thread
        worker.errored.connect(self._evaluation_failed)
        self._worker = worker
        worker.start()

    def _evaluated(self, r: tuple[int, Any, Any, Any]) -> None:
        generation, data, cfg, results = r
        if generation != self._eval_generation or data is not self.session.data:
            return  # a newer move, or the data were reloaded meanwhile
        self.evaluating = False
        self.session.adopt(cfg, results)

    def _evaluation_failed(self, e: BaseException) -> None:
        self.evaluating = False
        self._message(f"the pairs could not be re-evaluated: {e}")

    def _store(self) -> None:
        try:
            eid = self.session.apply("from the MetaLogic page")
        except Exception as e:  # noqa: BLE001 - said in the status line
            self._message(f"not stored: {e}")

            return
        self._message(f"stored the MetaLogic parameters as v{eid}")

    def _message(self, text: str) -> None:
        msg = getattr(self.session.app, "message", None)
        if msg is not None:
            msg.emit(text)

    # ---- session -> views --------------------------------------------------------------------------
    def _data_changed(self) -> None:
        d = self.session.data
        self.labels.forget()  # the project's kept selection (another project, or none)
        self._selected = None
        self._rows = d.row_of() if d is not None else {}
        # every pair is a target of the task; the list's rows are queued in its order
        self.controller.set_targets(np.asarray(d.pair_id, dtype=object) if d is not None else [],
                                    index=d.row_of if d is not None else None)
        self._queue_rows, self._queue_data = np.zeros(0, np.int64), None
        self._runs = np.unique(np.asarray(d.pairs.run).astype(str)).tolist() if d is not None and len(d) else []
        self.pair.set_data(d)
        self.cell = None
        self.model.filters = {}
        self._results_changed()

    def _results_changed(self) -> None:
        s = self.session
        self.human = self._read_human()
        self.heat.set_results(s.results, None, self.blind)
        self.model.set_session(s.data, s.results, self.human, self.blind)
        self._update_summary()
        self._update_agreement()
        self._show_current()

    def _fit_heatmap(self, *_: Any) -> None:
        """The heatmap is wide enough for its headers, each line whole (a small screen's narrow
        pane would cut "position-less" to "sition-l")."""
        v, m = self.heat_view, self.heat
        fm = v.horizontalHeader().fontMetrics()

        def widest(orientation: Qt.Orientation, section: int) -> int:
            text = str(m.headerData(section, orientation) or "")
            return max((fm.horizontalAdvance(line) for line in text.split("\n")), default=0) + 16

        # the columns stretch alike: each as wide as the widest
        cols = m.columnCount() * max((widest(Qt.Orientation.Horizontal, c) for c in range(m.columnCount())), default=0)
        rows = max((widest(Qt.Orientation.Vertical, r) for r in range(m.rowCount())), default=0)
        v.setMinimumWidth(max(240, cols + rows + 2 * v.frameWidth() + 2))

    def _read_human(self) -> np.ndarray:
        """This annotator's latest judgement of each pair (VERDICTS code, -1 none)."""
        d = self.session.data
        n = len(d) if d is not None else 0
        out = np.full(n, -1, np.int8)
        p, who = self.session.project, self.session.app.annotator
        if not n or p is None or not who:
            return out
        row = self._rows
        for e in p.labels.latest(LABEL_SCHEME.task, who):
            i = row.get(str(e.target_id))
            if i is not None:
                out[i] = VERDICTS.index(e.value) if e.value in VERDICTS else -1
        return out

    # ---- which labels count ----------------------------------------------------------------------
    def selected_pairs(self) -> SelectedPairs:
        """The human pair outcomes of the label selection (`store.human_selected`), read when first
        asked for after a label was written or another selection chosen."""
        if self._selected is None:
            d, p = self.session.data, self.session.project
            if d is None or p is None:
                n = len(d) if d is not None else 0
                return SelectedPairs(np.full(n, -1, np.int8), np.zeros(n, bool),
                                     resolve(no_events(), self.labels.selection))
            self._selected = human_selected(p, d, self.labels.selection)
        return self._selected

    def set_label_selection(self, selection: LabelSelection) -> None:
        """Use (and keep with the project) another label selection: the human figures follow."""
        self.labels.set(selection)
        self._selected = None
        self.labels_line.refresh()
        self._update_agreement()

    def refresh_human(self) -> None:
        """A label was written (or undone): the "you" column, the human figures and the agreement
        follow."""
        self._selected = None
        self.human = self._read_human()
        m = self.model
        if len(m.human) == len(self.human):
            m.human = self.human
            m._cols["human"] = self.human.astype(np.int64)
            if m.rowCount():
                c = m.column_of("human")
                m.dataChanged.emit(m.index(0, c), m.index(m.rowCount() - 1, c))
        self._update_agreement()

    def _after_change(self) -> None:
        # undo / redo change the current target's label without a commit signal
        if len(self.human) and self.controller.current is not None:
            i = self._row_of_target(self.controller.current)
            v = self.controller.current_state[0]
            code = VERDICTS.index(v) if v in VERDICTS else -1
            if i >= 0 and int(self.human[i]) != code:
                self.refresh_human()

    def describe_pair(self, i: int) -> str:
        """An image pair as the auditor knows it: its two prompts and its seed."""
        d = self.session.data
        if d is None or not 0 <= i < len(d):
            return "this pair"
        return f"“{d.text_a[i]}” / “{d.text_b[i]}” (seed {int(d.pairs.seed[i])})"

    def _row_of_target(self, target: str) -> int:
        return self._rows.get(target, -1)

    def _update_summary(self) -> None:
        s = self.session
        d, r = s.data, s.results
        if d is None or r is None or len(d) == 0:
            prompts = int(getattr(d, "n_prompts", 0) or 0) if d is not None else 0
            why = (html.escape(s.error) if s.error else
                   f"This project holds {prompts} MetaLogic prompts but no image pairs yet: generate images for "
                   "them (Jobs → New job, or <code>generate --method metalogic</code>), detect, and evaluate."
                   if prompts else
                   "This project holds no MetaLogic pairs. Add a suite (<code>suite --method metalogic --project "
                   "DIR</code>), generate and detect its images, and evaluate; or open the MetaLogic demo "
                   "(<code>demo --method metalogic</code>).")
            self.summary.setText("")
            self.empty.setText(why)
            self.body.setCurrentIndex(1)
            self.store_button.setEnabled(False)
            self.blind_box.setEnabled(False)
            return
        self.body.setCurrentIndex(0)
        self.store_button.setEnabled(True)
        self.blind_box.setEnabled(True)
        n = len(d)
        runs = self._runs
        ver = f"v{s.eval_id}" if s.eval_id is not None else "not stored"
        dirty = " (live parameters changed)" if s.dirty else ""
        text = f"<b>{n}</b> image pairs · run {html.escape(', '.join(runs))} · config {ver}{dirty}"
        if self.blind:
            text += " · <i>blind: computed outcomes hidden</i>"
        else:
            a, m, u = r.counts()
            why_n = np.bincount(np.asarray(r.reason, np.int64)[np.asarray(r.verdict) == UNDECIDABLE],
                              minlength=len(REASONS))
            reasons = ", ".join(f"{REASONS[k]} {int(why_n[k])}" for k in range(1, len(REASONS)) if why_n[k])
            text += (f" · <span style='color:#2e9d48'><b>{a}</b> ALIGNED</span> · "
                     f"<span style='color:#d0453a'><b>{m}</b> MISALIGNED</span> · "
                     f"<b>{u}</b> UNDECIDABLE" + (f" ({reasons})" if reasons else ""))
            text += "<br>" + self.rate_line()
        self.summary.setText(text)

    def rate_line(self) -> str:
        """The headline per run: the paper's misalignment rate (every pair decided, over all pairs)
        and beside it the abstention-aware rate over the decided pairs with its coverage, each with
        its 95 % interval (`metrics.rate_rows`, as the report's "overall" table)."""
        from workstation.methods.metalogic.metrics import rate_rows

        r = self.session.results
        parts = []
        for row in rate_rows(r):
            run = f"{html.escape(row['run'])}: " if len(self._runs) > 1 else ""
            note = f" <i>({html.escape(row['note'])})</i>" if row["note"] else ""
            parts.append(f"{run}misalignment rate (the paper's rule, every pair decided) "
                         f"<b>{_pct_ci(row, 'paper_rate')}</b> over {row['pairs']} pairs · abstention-aware "
                         f"{_pct_ci(row, 'decided_rate')} over {row['decided']} decided, coverage "
                         f"{_pct_ci(row, 'coverage')}{note}")
        return "<br>".join(parts)

    def agreement_stats(self) -> dict[str, Any] | None:
        """The computed outcome against the label selection's pair outcomes (the report's
        "agreement" table and line)."""
        r = self.session.results
        sel = self.selected_pairs()
        if r is None or len(sel.codes) != len(r):
            return None
        return agreement(np.asarray(r.verdict, np.int64), sel.codes.astype(np.int64), r.unit)

    def human_stats(self) -> dict[str, Any] | None:
        """The label selection's pair outcomes and the human misalignment rate (the report's
        "human" table)."""
        r = self.session.results
        sel = self.selected_pairs()
        if r is None or len(sel.codes) != len(r):
            return None
        return human_rates(sel.codes, sel.disputed, r.unit)

    def _update_agreement(self) -> None:
        who = self.session.app.annotator
        labelled = int((self.human >= 0).sum()) if len(self.human) else 0
        r = self.session.results
        if r is None or len(self.human) != len(r):
            self.progress.setText("")
            self.agreement.setText("")
            self.labels_line.setVisible(False)
            return
        head = f"<b>Your judgements</b> ({html.escape(who) if who else 'no annotator yet'}): {labelled} of " \
               f"{len(self.human)} pairs"
        if labelled:
            hc = np.bincount(self.human[self.human >= 0].astype(np.int64), minlength=3)
            head += " — " + ", ".join(f"{VERDICTS[k].lower()} {int(hc[k])}" for k in range(3))
        self.progress.setText(head)
        self.labels_line.setVisible(not self.blind)
        if self.blind:  # other annotators' judgements and the computed outcome stay hidden
            self.agreement.setText("<i>blind: the human figures and their agreement with the computed outcome "
                                   "are hidden</i>")
            return
        self.labels_line.refresh()
        hs, st = self.human_stats(), self.agreement_stats()
        if hs is None or st is None:
            self.agreement.setText("")
            return
        disputed = (f", <b>{hs['disputed']}</b> disputed (counted in no rate)" if hs["disputed"] else "")
        human = (f"<b>Human judgements</b> (the labels above): {hs['judged']} pairs — aligned {hs['aligned']}, "
                 f"misaligned {hs['misaligned']}, undecidable {hs['undecidable']}{disputed}")
        if hs["aligned"] + hs["misaligned"]:
            human += f" · human misalignment rate <b>{_pct_ci(hs, 'misaligned_rate')}</b>"
        if not st["n"]:
            self.agreement.setText(human + "<br>Agreement with the computed outcome: no pair judged under these "
                                   "labels yet (A aligned · M misaligned · U undecidable).")
            return
        k = st["kappa"]
        kap = "undefined" if math.isnan(k) else f"{k:.2f}"
        conf = st["confusion"]
        rows = "".join(
            f"<tr><td>computed {VERDICTS[c]}</td>" + "".join(f"<td align='right'>{int(conf[c, h])}</td>"
                                                              for h in range(3)) + "</tr>"
            for c in range(3))
        table = ("<table cellspacing='0' cellpadding='3'><tr><td></td><td>human A</td><td>human M</td>"
                 f"<td>human U</td></tr>{rows}</table>")
        self.agreement.setText(human + f"<br>Agreement with the computed outcome: <b>{100 * st['agreement']:.0f}%</b>"
                               f" raw, Cohen's κ <b>{kap}</b> over {st['n']} pairs" + table)

    # ---- blind ---------------------------------------------------------------------------------------
    @property
    def blind(self) -> bool:
        """Computed outcomes hidden: the page's blind switch, or a blind audit of this task
        (the controller's policy decides)."""
        return not self.controller.view_visibility().outcome

    def set_blind(self, on: bool) -> None:
        """The page's own blind switch (outside audit sets)."""
        on = bool(on)
        if self.blind_box.isChecked() != on:
            self.blind_box.setChecked(on)  # comes back here
            return
        self.controller.set_page_blind(on)

    def _queue_changed(self) -> None:
        """A new queue: the blind switch is the page's own outside audit sets, the audit set's in one."""
        audit = self.controller.audit
        self.blind_box.blockSignals(True)
        self.blind_box.setChecked(self.blind)
        self.blind_box.blockSignals(False)
        self.blind_box.setEnabled(audit is None)
        self.blind_box.setToolTip("" if audit is None else "set by the audit set that is open")

    def _policy_changed(self) -> None:
        """A new policy (an audit set, the blind switch): what the page shows follows it."""
        on = self.blind
        self._queue_changed()
        for sl in self.sliders.values():
            sl.setEnabled(not on)
        self.heat_hint.setText(HEAT_HINT_BLIND if on else HEAT_HINT)
        if on:
            self.model.filters = {k: v for k, v in self.model.filters.items() if k not in ("outcome", "kind")}
        self._results_changed()

    # ---- heatmap -> list ---------------------------------------------------------------------------
    def _cell_clicked(self, index: QModelIndex) -> None:
        if not index.isValid() or not self.heat.dims:
            return
        law, dim = self.heat.cell(index.row(), index.column())
        self.show_cell(law, dim)

    def show_cell(self, law: str, dimension: str) -> None:
        """List exactly the pairs of one heatmap cell (and make them the judging queue)."""
        self.cell = (law, dimension)
        self.model.set_filters(law=law, dimension=dimension)

    def show_all(self) -> None:
        self.cell = None
        self.model.set_filters()

    def _size_columns(self) -> None:
        h = self.list.horizontalHeader()
        d = self.session.data
        one_run = d is None or len(self._runs) <= 1
        for c, (key, _title, _computed) in enumerate(self.model.columns):
            self.list.setColumnHidden(c, key == "run" and one_run)  # the summary names the one run
            if key in ("pair", "detail"):
                h.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch)
            else:
                h.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
                h.resizeSection(c, WIDTHS.get(key, 90))

    def _list_reset(self) -> None:
        """The list's rows changed (filter, sort, results): they become the queue."""
        m = self.model
        self._size_columns()
        n = m.rowCount()
        if self.cell is not None:
            law, dim = self.cell
            self.filter_label.setText(f"<b>{n}</b> pairs of <b>{html.escape(law)} × "
                                      f"{html.escape(DIMENSION_TITLES.get(dim, dim))}</b>")
        else:
            self.filter_label.setText(f"all <b>{n}</b> pairs")
        self.all_button.setEnabled(self.cell is not None)
        c = self.controller
        same = (len(m.rows) == len(self._queue_rows) and np.array_equal(m.rows, self._queue_rows)
                and self._queue_data is self.session.data)
        if c.audit is not None or same:  # an audit set keeps its queue; the same pairs keep theirs
            c.reload()
            self._select_current()
            self._show_current()
            return
        self._queue_rows, self._queue_data = m.rows.copy(), self.session.data
        cur = c.current_index
        hits: np.ndarray | list[int] = np.flatnonzero(m.rows == cur) if cur >= 0 else []
        c.set_queue(np.asarray(m.rows, np.int64), start=int(hits[0]) if len(hits) else 0)

    # ---- selection ---------------------------------------------------------------------------------
    def _row_selected(self, cur: QModelIndex, _prev: QModelIndex) -> None:
        if self._syncing or not cur.isValid():
            return
        c = self.controller
        if c.audit is not None:  # the list is not the queue: the pair, at its place in the audit if queued
            c.go_target(int(self.model.rows[cur.row()]))
        else:
            c.go(cur.row())

    def _select_row(self, pos: int) -> None:
        if pos < 0 or pos >= self.model.rowCount():
            return
        self._syncing = True
        try:
            idx = self.model.index(pos, 0)
            self.list.selectionModel().setCurrentIndex(
                idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
            self.list.scrollTo(idx)
        finally:
            self._syncing = False

    def _select_current(self) -> None:
        """Select the list row of the pair under review."""
        cur = self.controller.current_index
        hits: np.ndarray | list[int] = (np.flatnonzero(self.model.rows == cur)
                                        if cur >= 0 and len(self.model.rows) else [])
        if len(hits):
            self._select_row(int(hits[0]))

    def _moved(self, _index: int) -> None:
        self._select_current()
        self._show_current()

    def current_row(self) -> int:
        """Data row of the pair shown (-1 none): the controller's target index."""
        return self.controller.current_index

    def _show_current(self) -> None:
        s = self.session
        i = self.current_row()
        if s.data is None or i < 0:
            self.pair.clear()
            self.bar.set_unshown("")
            return
        folder = getattr(s.project, "folder", None) if s.project is not None else None
        self.pair.show_pair(i, s.results, s.config, folder, self.blind)
        # an image not found: only an explicit U is recorded (the pane says what is missing)
        gone = self.pair.unshown()
        self.bar.set_unshown(gone, (LABEL_SCHEME.abstain,) if gone else ())

