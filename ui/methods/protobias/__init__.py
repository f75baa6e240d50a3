"""ProtoBias views: one "ProtoBias" tab with three pages over one live `MethodSession`.

* **Metrics** (`metric_table.MetricTablePage`) — failure rate and margins per metric × domain with
  intervals, the humans beside, κ between annotators, a bar chart; a click on a cell opens those
  triplets in
* **Triplets** (`triplets.TripletPage`) — the list (sort / filter by metric, domain, knob, outcome,
  margin) and the selected triplet: T above I_corr and I_adv, the knob and the extra element, each
  metric's two scores as bars with the failure marked;
* **Rate (blind)** (`rating.RatingPage`) — 1-4 semantic-fidelity ratings of every image, blind to
  the metrics and to which image is the prototype. It is the judging page: audit sets of the
  ratings open there, and while a blind one is open the other two pages are closed (they show
  the metrics' preferences and the other annotators' ratings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...method_views import ViewsBase, close_while_blind

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from ui.main_window import MainWindow
    from ui.widgets.judge import JudgeBar, JudgeController
    from workstation.evaluation.audit_sets import AuditPopulation

    from .page import ProtoBiasPage

    class Window(MainWindow):
        """The window with what these views' `install` adds to it."""

        protobias_page: ProtoBiasPage


TITLE = "ProtoBias"


class ProtoBiasViews(ViewsBase["Window"]):
    method = "protobias"
    title = TITLE
    tab_keys = ("Ctrl+6",)
    noun = "image"

    def install(self, window: Window) -> None:
        from .page import ProtoBiasPage

        window.protobias_page = ProtoBiasPage(self.new_session(window), window)
        window.add_panel(self.title, window.protobias_page, "tab")
        self.controller(window).policy_changed.connect(lambda: self._policy(window))

    def _policy(self, window: Window) -> None:
        page = window.protobias_page
        c = page.rating.controller
        vis = c.view_visibility()
        closed = c.audit is not None and not (vis.outcome and vis.human)
        for w in (page.metrics, page.triplets):
            close_while_blind(page.tabs, w, closed, "it shows the metrics and other ratings")

    def on_project(self, window: Window) -> None:
        page = getattr(window, "protobias_page", None)
        if page is not None:
            page.session.reload()

    def controller(self, window: Window) -> JudgeController:
        return window.protobias_page.rating.controller

    def judging_page(self, window: Window) -> QWidget:
        return window.protobias_page.rating

    def bar(self, window: Window) -> JudgeBar:
        return window.protobias_page.rating.bar

    def focus_target(self, window: Window) -> QWidget | None:
        return window.protobias_page.tabs.currentWidget()

    def leave_audit(self, window: Window) -> None:
        c = self.controller(window)
        c.leave_audit()
        c.go(c.core.first_undone())

    def outcome_texts(self, window: Window, index: int) -> list[str]:
        """The metrics' preference and the image's role (which one is the prototype)."""
        page = window.protobias_page
        r = page.session.results
        sid = self.controller(window).core.target_id(index)
        i, _k, _side = page.rating.where.get(sid, (-1, 0, ""))
        if i < 0:
            return []
        out = ["I_corr", "I_adv", "prototyp"]
        if r is not None:
            out += [str(m) for m in r.metrics] + [f"{float(r.score_corr[i, j]):.3f}" for j in range(len(r.metrics))]
        return out

    def audit_population(self, window: Window) -> AuditPopulation | None:
        from workstation.evaluation.audit_sets import AuditPopulation

        page = window.protobias_page
        d = page.session.data
        c = page.rating.controller
        if d is None or not len(d) or not c.core.n_targets:
            return None
        ids = c.core.ids
        where = page.rating.where
        rows = np.array([where[str(t)][0] for t in ids.tolist()], np.int64)
        domain = np.asarray(d.domain).astype(str)[rows]
        names = sorted(set(domain.tolist()))
        code = np.array([names.index(x) for x in domain.tolist()], np.int64)
        labelled = np.zeros(len(ids), bool)
        for e in page.session.project.labels.latest(c.scheme.task):
            i = c.index_of(str(e.target_id))
            if i >= 0 and e.value is not None:
                labelled[i] = True
        return AuditPopulation(ids=ids, strata={"domain": (code, names)}, default_strata=("domain",),
                               labelled=labelled, noun="images", titles={"domain": "domain"})


VIEWS = ProtoBiasViews()
