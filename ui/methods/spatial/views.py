"""The spatial method's views, registered like every other method's: Browse (the sample table
and thumbnails), Review (the pair viewer over the shared judgement bar) and Calibration (live
sliders, risk–coverage plots, grid search, created the first time its tab is shown so that the
plotting library does not slow the start), with their actions and menu entries.

Labelling is the shared `JudgeController` of the spatial session (P / F / U, notes, undo / redo,
audit sets, re-checks); what any of these views shows of the checker and of the labels is that
controller's policy.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ... import theme
from ...shortcuts import make_action
from ...widgets.judge import JudgeBar, install_shortcuts
from ...method_views import ViewsBase

if TYPE_CHECKING:
    from collections.abc import Callable

    from ui.main_window import MainWindow
    from ui.widgets.judge import JudgeController
    from workstation.evaluation.audit_sets import AuditPopulation

    from .browse import SampleBrowser
    from .calibration.panel import CalibrationPanel
    from .check import BackgroundCheck
    from .pair_viewer import PairViewer
    from .session import SpatialSession

    class Window(MainWindow):
        """The window with what these views' `install` adds to it."""

        spatial: SpatialSession
        spatial_check: BackgroundCheck
        browser: SampleBrowser
        viewer: PairViewer
        labeling: JudgeBar
        review: ReviewPage
        calibration: CalibrationPanel | CalibrationPlaceholder | None
        _calibration_tab: QWidget

log = logging.getLogger(__name__)

PREFETCH_AHEAD = 4
BROWSE, REVIEW, CALIBRATION = "Browse", "Review", "Calibration"


class ReviewPage(QWidget):
    """The pair viewer above the judgement bar; reads ahead of the queue as the auditor moves."""

    def __init__(self, session: Any, viewer: Any, bar: JudgeBar, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewPage")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(viewer, 1)
        lay.addWidget(bar)
        self.session = session
        self.viewer = viewer
        self.bar = bar
        self.panel = bar  # the judgement bar under the viewer
        self.setFocusProxy(viewer.left.view)  # the keys go to the image (zoom, pan) and the shortcuts
        session.current_changed.connect(self._read_ahead)
        viewer.refreshed.connect(self._gate)

    def _gate(self) -> None:
        """The sample's image not found (or unreadable): the canvas says so, and only an explicit
        U (UNDECIDABLE) is recorded — P and F say why they record nothing."""
        shown = self.session.current < 0 or self.viewer.left_row < 0 or self.viewer.left.view.image_ok
        self.bar.set_unshown("" if shown else "no image", (self.session.controller.scheme.abstain,))

    def _read_ahead(self, row: int) -> None:
        c = self.session.controller
        q = c.queue_indices
        if c.on_queue() and len(q):
            ahead = q[c.pos + 1: c.pos + 1 + PREFETCH_AHEAD].tolist()
        elif self.session.dataset is not None and row >= 0:
            ahead = list(range(row + 1, min(row + 1 + PREFETCH_AHEAD, self.session.dataset.n)))
        else:
            ahead = []
        self.viewer.prefetch_rows(ahead)


class CalibrationPlaceholder(QWidget):
    """Shown in the Calibration tab when its panel cannot start."""

    def __init__(self, reason: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lab = QLabel("Calibration panel\n\n" + reason)
        lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lab.setObjectName("dim")
        lay.addWidget(lab)


class SpatialViews(ViewsBase["Window"]):
    method = "spatial"
    title = BROWSE
    tab_keys = ("Ctrl+1", "Ctrl+2", "Ctrl+3")
    noun = "sample"
    eager = True  # built with the window: a project opened in the background fills Browse as it loads

    def expect(self, window: Window, loaded: Any) -> None:
        """The project about to open was read off the GUI thread: the session takes its spatial part."""
        part = loaded.parts.get(self.method)
        if part is not None:
            window.spatial.expect(loaded.project, part)

    def before_adopt(self, window: Window, loaded: Any, folder: Any) -> None:
        """A project read off the GUI thread is about to be taken: where its samples came without
        verdicts, the checker starts on them now (`check.BackgroundCheck`), beside the adoption."""
        part = loaded.parts.get(self.method)
        if part is None or not part.checking:
            return
        check = getattr(window, "spatial_check", None)
        if check is None:
            from .check import BackgroundCheck

            check = window.spatial_check = BackgroundCheck(window)
        check.start(part.dataset, part.config, folder)

    def checking(self, window: Window) -> bool:
        """Whether the checker still evaluates the samples of the project just opened (the
        window's `verdicts_checked` says when it ends)."""
        s = getattr(window, "spatial", None)
        return bool(s is not None and s.checking)

    def n_loaded(self, window: Window) -> int:
        """How many samples the views hold."""
        ds = getattr(getattr(window, "spatial", None), "dataset", None)
        return int(ds.n) if ds is not None else 0

    def install(self, window: Window) -> None:
        from .browse import SampleBrowser
        from .pair_viewer import PairViewer
        from .session import SpatialSession

        s = SpatialSession(window.state, ask_annotator=window.ask_annotator, parent=window)
        window.spatial = s
        window.browser = SampleBrowser(s, window.thumbs, window)
        window.viewer = PairViewer(s, window.images, window.thumbs, window)
        colors = {v: theme.VERDICT_COLORS[k] for k, v in enumerate(s.controller.scheme.values)}
        bar = JudgeBar(s.controller, window, colors=colors, exporter=lambda path, overwrite: self.export_labels(window, path, overwrite),
                       export_filter="CSV (*.csv);;SpatialBench-UC JSON (*.json);;Parquet (*.parquet)",
                       noun="sample")
        bar.focus_target = window.viewer.left.view
        window.labeling = bar
        window.review = ReviewPage(s, window.viewer, bar, window)
        window.calibration = None
        window._calibration_tab = QWidget()
        window._calibration_tab.setObjectName("calibrationTab")
        window._calibration_tab.setLayout(QVBoxLayout())
        window._calibration_tab.layout().setContentsMargins(0, 0, 0, 0)  # type: ignore[union-attr]  # just set
        window.add_panel(BROWSE, window.browser, "tab")
        window.add_panel(REVIEW, window.review, "tab")
        window.add_panel(CALIBRATION, window._calibration_tab, "tab")
        install_shortcuts(window.review, s.controller, bar, extra=[("T", lambda: self.swap_twin(window),
                                                                  "Review the counterfactual twin instead")])
        window.browser.open_requested.connect(lambda row: self.review_from_browse(window, row))
        s.controller.finished_queue.connect(lambda: self._queue_finished(window))
        s.verdicts_changed.connect(window._update_status)  # the status bar's verdict counts
        self._actions(window)

    # ---- pages ------------------------------------------------------------------------------------
    def pages(self, window: Window) -> list[QWidget]:
        return [window.browser, window.review, window._calibration_tab]

    def controller(self, window: Window) -> JudgeController:
        return window.spatial.controller

    def judging_page(self, window: Window) -> QWidget:
        return window.review

    def bar(self, window: Window) -> JudgeBar:
        return window.labeling

    def status_counts(self, window: Window) -> str:
        """The live verdict counts for the status bar (nothing while the policy hides them)."""
        from .pair_viewer import verdict_counts_text

        s = window.spatial
        return verdict_counts_text(s.verdicts) if s.view_visibility().outcome else ""

    def focus_target(self, window: Window) -> QWidget:
        return window.viewer.left.view

    def has_data(self, window: Window) -> bool:
        s = getattr(window, "spatial", None)
        if s is not None and s.dataset is not None and s.dataset.n:
            return True
        p = window.state.project
        return bool(p is not None and "spatial" in p.samples.prompt_methods())

    def calibration_panel(self, window: Window) -> QWidget:
        """The calibration panel (created on first use; a placeholder when it cannot start)."""
        if window.calibration is None:
            try:
                from .calibration.panel import CalibrationPanel

                window.calibration = CalibrationPanel(window.spatial)
            except Exception as e:
                log.exception("calibration panel failed to start")
                window.calibration = CalibrationPlaceholder(f"The calibration panel failed to start:\n{e}")
            window.calibration.setObjectName("calibrationPanel")
            # the tab's layout is set at install
            window._calibration_tab.layout().addWidget(window.calibration)  # type: ignore[union-attr]
        return window.calibration

    def tab_shown(self, window: Window, page: QWidget) -> None:
        """A tab of this method was shown: Calibration builds its panel; Review's actions work."""
        on_review = page is window.review
        for a in self.review_actions:
            a.setEnabled(on_review)
        for a in self.page_actions:
            a.setEnabled(page in self.pages(window))
        if page is window._calibration_tab:
            self.calibration_panel(window)
        if on_review:
            window.viewer.left.view.setFocus()

    def allowed(self, window: Window, page: QWidget) -> bool:
        """Calibration shows the checker against everyone's labels: not while a blind audit runs."""
        if page is window._calibration_tab:
            vis = window.spatial.view_visibility()
            return vis.outcome and vis.human
        return True

    # ---- actions ----------------------------------------------------------------------------------
    def _actions(self, window: Window) -> None:
        v = window.viewer
        a: dict[str, QAction] = {}
        for layer in ("others", "secondary", "perturbed", "geometry", "labels"):
            a["layer_" + layer] = make_action(window, "layer_" + layer, lambda _=False, n=layer: v.toggle_layer(n),
                                              method="spatial")
        a["thicker"] = make_action(window, "thicker", lambda: v.set_line_width(v.line_width + 1), method="spatial")
        a["thinner"] = make_action(window, "thinner", lambda: v.set_line_width(v.line_width - 1), method="spatial")
        a["fit"] = make_action(window, "fit", v.fit, method="spatial")
        a["zoom_in"] = make_action(window, "zoom_in", lambda: v.zoom(1.25), method="spatial")
        a["zoom_out"] = make_action(window, "zoom_out", lambda: v.zoom(0.8), method="spatial")
        self.review_actions = list(a.values())
        a["goto"] = make_action(window, "goto", lambda: self.goto_dialog(window), method="spatial")
        a["find"] = make_action(window, "find", lambda: self.focus_search(window), method="spatial")
        self.page_actions = [a["goto"], a["find"]]  # on the spatial tabs only
        window.actions_by_id.update(a)
        vm = window.view_menu
        for k in ("layer_others", "layer_secondary", "layer_perturbed", "layer_geometry", "layer_labels",
                  "thicker", "thinner", "fit", "zoom_in", "zoom_out"):
            vm.insertAction(window.view_menu_anchor, a[k])
        vm.insertSeparator(window.view_menu_anchor)
        for act in self.review_actions:
            act.setEnabled(False)

    def focus_search(self, window: Window) -> None:
        window.show_page(window.browser)
        window.browser.filters.text.setFocus()
        window.browser.filters.text.selectAll()

    def swap_twin(self, window: Window) -> None:
        if window.viewer.right_row >= 0:
            window.spatial.set_current(window.viewer.right_row)

    def goto_dialog(self, window: Window) -> None:
        from .goto import GotoDialog

        s = window.spatial
        if s.dataset is None:
            return
        dlg = GotoDialog(s.dataset.samples.sample_id.tolist(), window)
        if dlg.exec() and dlg.value():
            if self.goto_sample(window, dlg.value()):
                window.show_page(window.review)

    def goto_sample(self, window: Window, sample_id: str) -> bool:
        """Jump to a sample id (or the only one starting with it); its queue position if queued."""
        s = window.spatial
        if s.dataset is None:
            return False
        sample_id = sample_id.strip()
        idx = s.dataset.sample_index()
        row = idx.get(sample_id, -1)
        if row < 0:
            matches = [i for sid, i in idx.items() if sid.startswith(sample_id)] if sample_id else []
            if len(matches) != 1:
                s.message.emit(f"no sample {sample_id!r}" if not matches else
                               f"{len(matches)} samples start with {sample_id!r}; type more of the id")
                return False
            row = matches[0]
        s.set_current(row)
        return True

    def review_disagreements(self, window: Window, judge_a: str, judge_b: str) -> bool:
        """Browse filtered to the samples judges ``judge_a`` and ``judge_b`` both decided and decide
        differently, and those samples the review queue (shown in Review). While Browse's judges
        are still being computed, Browse shows the filter (its count line says they are computed)
        and the review starts once they are in."""
        from ...blind_routes import leave_blind

        judges = window.browser.model.judges

        def review() -> None:
            rows = window.browser.model.all_rows()
            if len(rows):
                self._review_rows(window, int(rows[0]))
            else:
                window.show_page(window.browser)
                window.state.message.emit(f"no sample where {judge_a} and {judge_b} both decided and differ")

        def when_in() -> None:
            if judges.pending:
                return
            judges.changed.disconnect(when_in)
            if window.browser.filters.spec().judges_disagree == [judge_a, judge_b]:  # not changed since
                review()

        def go() -> None:
            window.browser.filters.pick_judges(judge_a, judge_b)
            if judges.pending:
                window.show_page(window.browser)
                judges.changed.connect(when_in)
            else:
                review()

        leave_blind(window, window.spatial.controller, "Judges: review where two judges disagree", [], go)
        return True

    def review_from_browse(self, window: Window, row: int) -> None:
        """Make the filtered samples the queue, starting at `row`, and show the pair viewer.
        During a blind audit (`ui.blind_routes`): a sample of the audit's queue is shown there,
        blind; any other asks to pause the audit first."""
        from ...blind_routes import leave_blind

        leave_blind(window, window.spatial.controller, "Browse: review the filtered samples", [row],
                    lambda: self._review_rows(window, row), stay_on=lambda _i: window.show_page(window.review))

    def _review_rows(self, window: Window, row: int) -> None:
        s = window.spatial
        c = s.controller
        rows = window.browser.model.all_rows()
        arr = np.asarray(rows.rows, np.int64)
        hits = np.flatnonzero(arr == row)
        c.set_queue(arr, start=int(hits[0]) if len(hits) else 0)
        if not len(hits):
            s.set_current(row)
        window.show_page(window.review)

    def _queue_finished(self, window: Window) -> None:
        from workstation.evaluation.audit_sets import self_agreement_report

        s = window.spatial
        done, total = s.controller.progress()
        msg = f"End of the queue: {done} of {total} labelled."
        aid = s.audit_set_id
        if aid is not None:
            msg += "  Self-agreement: " + self_agreement_report(s.project, s.controller.scheme, aid,
                                                                self.agreement_unit(window)).text()
        window.statusBar().showMessage(msg, 15000)

    # ---- audit sets and labels ----------------------------------------------------------------------
    def agreement_unit(self, window: Window) -> Callable[[str], Any] | None:
        ds = window.spatial.dataset
        if ds is None or not ds.n:
            return None
        prompt_of = dict(zip(np.asarray(ds.samples.sample_id).tolist(), np.asarray(ds.samples.prompt_id).tolist()))
        return lambda sample_id: prompt_of.get(sample_id, sample_id)

    def audit_population(self, window: Window) -> AuditPopulation | None:
        from workstation.evaluation.audit_sets import AuditPopulation
        from workstation.methods.spatial.audit import STRATA_KEYS, stratum_codes
        from workstation.types import WorkstationError

        s = window.spatial
        ds, v = s.dataset, s.verdicts
        if ds is None or ds.n == 0:
            raise WorkstationError("this project has no spatial samples to audit")
        if v is None:
            raise WorkstationError("the checker is still evaluating this project's samples: draw the audit set "
                                   "when the status bar says they are checked")
        strata = {}
        for key in STRATA_KEYS:
            codes, names = stratum_codes(ds, v, (key,))
            strata[key] = (codes, [n[0] for n in names])
        return AuditPopulation(ids=ds.samples.sample_id, strata=strata, default_strata=("run", "relation", "verdict"),
                               conf=np.asarray(v.conf), labelled=s.human >= 0, noun="samples",
                               titles={"run": "method (run)", "relation": "relation", "verdict": "checker verdict",
                                       "reason": "reason"})

    def outcome_texts(self, window: Window, index: int) -> list[str]:
        from workstation.methods.spatial.types import REASONS, VERDICTS

        v = window.spatial.verdicts
        if v is None or index < 0:
            return []
        out = [VERDICTS[int(v.verdict[index])], f"{float(v.conf[index]):.3f}"]
        reason = REASONS[int(v.reason[index])]
        return out + ([reason] if reason else [])

    def audit_params(self, window: Window) -> dict[str, Any]:
        s = window.spatial
        return {"config_version": s.config_id, "config_hash": s.config.content_hash()}

    def export_labels(self, window: Window, path: str, overwrite: bool = False) -> int:
        """Write the labels the policy lets an export hold (CSV, SpatialBench-UC JSON or Parquet),
        through the output policy (an existing file replaced only with ``overwrite``)."""
        from workstation.methods.spatial.labels_io import write_labels
        from workstation.methods.spatial.store import SpatialStore

        from ...project_dialogs import SAVE_DIALOG_HINT, output_projects

        rows = [SpatialStore._row(e) for e in window.spatial.controller.export_rows() if e.value is not None]
        return write_labels(path, rows, overwrite=overwrite, projects=output_projects(window),
                            overwrite_hint=SAVE_DIALOG_HINT)

    #: the File → Import labels… dialog's filter: the layouts `import_labels` reads
    label_file_filter = "Label files (*.json *.csv *.parquet)"

    def import_labels(self, window: Window, path: str) -> str:
        from .annotators import import_label_file

        _n, msg = import_label_file(window.spatial, path)
        return msg


VIEWS = SpatialViews()

