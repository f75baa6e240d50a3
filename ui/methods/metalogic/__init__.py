"""MetaLogic views: one "MetaLogic" tab over one live `MethodSession`, with two pages.

* **Pairs** (`page.MetaLogicPage`) — the law × dimension heatmap (a click lists those pairs), the
  pair list, the selected image pair (prompt A above image A, prompt B above image B, the
  misaligned entity marked on both), pair judgements by key (A / M / U), the agreement of the
  computed outcome with the human one, and the comparison's abstention thresholds on sliders;
* **Audit set** — an audit set's pairs one at a time (`ui.widgets.audit_page.AuditPage`), with
  nothing computed shown when it is blind. While a blind audit set is open the Pairs page is
  closed (it shows outcomes and rates).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...method_views import ViewsBase, close_while_blind

if TYPE_CHECKING:
    from PySide6.QtWidgets import QTabWidget, QWidget

    from ui.main_window import MainWindow
    from ui.widgets.audit_page import AuditPage
    from ui.widgets.judge import JudgeBar, JudgeController
    from workstation.evaluation.audit_sets import AuditPopulation

    from .page import MetaLogicPage

    class Window(MainWindow):
        """The window with what these views' `install` adds to it."""

        metalogic_page: MetaLogicPage
        metalogic_tabs: QTabWidget
        metalogic_audit: AuditPage


TITLE = "MetaLogic"


class _PairTarget:
    """The audit page's view of one image pair (its own `PairView`)."""

    def __init__(self, window: Window, page: Any) -> None:
        from .pair_view import PairView

        self.page = page
        self.widget = PairView(getattr(window, "images", None))
        page.session.data_changed.connect(lambda: self.widget.set_data(page.session.data))
        self.widget.set_data(page.session.data)

    def show_target(self, index: int, vis: Any) -> None:
        s = self.page.session
        folder = getattr(s.project, "folder", None) if s.project is not None else None
        self.widget.show_pair(index, s.results, s.config, folder, not vis.outcome)

    def missing(self) -> str:
        return self.widget.unshown()

    def clear(self) -> None:
        self.widget.clear()


class MetaLogicViews(ViewsBase["Window"]):
    method = "metalogic"
    title = TITLE
    tab_keys = ("Ctrl+5",)
    noun = "pair"

    def install(self, window: Window) -> None:
        from .page import MetaLogicPage

        page = MetaLogicPage(self.new_session(window), window)
        window.metalogic_page = page
        window.metalogic_tabs, window.metalogic_audit = self.audit_tabs(
            page, "Pairs", page.controller, _PairTarget(window, page))
        window.add_panel(self.title, window.metalogic_tabs, "tab")
        page.controller.policy_changed.connect(lambda: self._policy(window))

    def _policy(self, window: Window) -> None:
        page = window.metalogic_page
        c = page.controller
        blind = c.audit is not None and not c.view_visibility().outcome
        close_while_blind(window.metalogic_tabs, page, blind, "it shows computed outcomes")

    def on_project(self, window: Window) -> None:
        page = getattr(window, "metalogic_page", None)
        if page is not None:
            page.load()

    def pages(self, window: Window) -> list[QWidget]:
        return [window.metalogic_tabs]

    def controller(self, window: Window) -> JudgeController:
        return window.metalogic_page.controller

    def judging_page(self, window: Window) -> AuditPage | MetaLogicPage:
        return window.metalogic_audit if self.controller(window).audit is not None else window.metalogic_page

    def bar(self, window: Window) -> JudgeBar:
        return self.judging_page(window).bar

    def focus_target(self, window: Window) -> QWidget | None:
        return window.metalogic_tabs.currentWidget()

    def leave_audit(self, window: Window) -> None:
        page = window.metalogic_page
        page.controller.leave_audit()
        page._queue_rows = np.zeros(0, np.int64)
        page._list_reset()
        window.metalogic_tabs.setCurrentWidget(page)

    def outcome_texts(self, window: Window, index: int) -> list[str]:
        from workstation.methods.metalogic.results import VERDICTS

        r = window.metalogic_page.session.results
        if r is None or index < 0:
            return []
        detail = r.detail_text(index)
        return [VERDICTS[int(r.verdict[index])]] + ([detail] if detail else [])

    def audit_population(self, window: Window) -> AuditPopulation | None:
        from workstation.evaluation.audit_sets import AuditPopulation
        from workstation.methods.metalogic.laws import DIMENSION_TITLES, DIMENSIONS, LAWS
        from workstation.methods.metalogic.results import VERDICTS

        page = window.metalogic_page
        s = page.session
        d, r = s.data, s.results
        if d is None or not len(d):
            return None
        strata: dict[str, tuple[np.ndarray, list[str]]] = {
            "law": (np.asarray(d.pairs.law, np.int64), [str(x) for x in LAWS]),
            "dimension": (np.asarray(d.pairs.dimension, np.int64), [DIMENSION_TITLES.get(x, x) for x in DIMENSIONS]),
        }
        conf = None
        if r is not None:
            strata["outcome"] = (np.asarray(r.verdict, np.int64), [v.lower() for v in VERDICTS])
            conf = np.asarray(r.conf, np.float64) if getattr(r, "conf", None) is not None else None
        labelled = np.zeros(len(d), bool)
        for e in s.project.labels.latest(self.controller(window).scheme.task):
            i = page._rows.get(str(e.target_id), -1)
            if i >= 0 and e.value is not None:
                labelled[i] = True
        return AuditPopulation(ids=np.asarray(d.pair_id, dtype=object), strata=strata,
                               default_strata=("law", "outcome") if r is not None else ("law",), conf=conf,
                               labelled=labelled, noun="pairs",
                               titles={"law": "law", "dimension": "dimension", "outcome": "computed outcome"})


VIEWS = MetaLogicViews()
