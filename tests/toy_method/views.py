"""The Lamp method's views (a method of the tests): one "Lamp" tab with two pages.

* **Lamps** — the list of lamp prompts with their automated outcome (closed during a blind
  audit: it shows outcomes), beside the judging of the current one;
* **Judge** — one prompt at a time (`ui.widgets.audit_page.AuditPage`), the outcome shown only
  when the controller's policy allows it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtWidgets import QLabel, QListWidget, QTabWidget

from ui.method_views import ViewsBase

from .core import LABEL_SCHEME, NAME, VERDICTS

TITLE = "Lamp"


class _LampTarget:
    """The judging page's view of one lamp prompt."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.widget = QLabel("")
        self.widget.setObjectName("lampTarget")

    def show_target(self, index: int, vis: Any) -> None:
        s = self.session
        if s.data is None or not 0 <= index < len(s.data):
            self.clear()
            return
        text = f"prompt: {s.data.texts[index]}"
        if vis.outcome and s.results is not None:
            text += f"\nautomated: {VERDICTS[int(s.results.verdict[index])]} ({float(s.results.conf[index]):.2f})"
        self.widget.setText(text)

    def clear(self) -> None:
        self.widget.setText("")


class LampViews(ViewsBase):
    method = NAME
    title = TITLE
    noun = "lamp"

    def install(self, window: Any) -> None:
        from ui.session import MethodSession
        from ui.widgets.audit_page import AuditPage
        from ui.widgets.judge import JudgeController
        from workstation.methods import get_method

        session = MethodSession(get_method(NAME), window.state, window)
        controller = JudgeController(LABEL_SCHEME, window.state,
                                     ask_annotator=getattr(window, "ask_annotator", None), parent=window)
        lamps = QListWidget()
        lamps.setObjectName("lampList")
        judge = AuditPage(controller, _LampTarget(session), noun="lamp", plain=True)
        judge.setObjectName("lampJudge")
        tabs = QTabWidget()
        tabs.setObjectName("lampTabs")
        tabs.addTab(lamps, "Lamps")
        tabs.addTab(judge, "Judge")
        window.lamp_parts = {"session": session, "controller": controller, "list": lamps, "judge": judge,
                             "tabs": tabs}
        window.add_panel(self.title, tabs, "tab")
        controller.policy_changed.connect(lambda: self._policy(window))
        controller.moved.connect(lambda _i: judge.refresh())

    def _parts(self, window: Any) -> dict[str, Any]:
        return window.lamp_parts  # type: ignore[no-any-return]

    def _policy(self, window: Any) -> None:
        parts = self._parts(window)
        c = parts["controller"]
        blind = c.audit is not None and not c.view_visibility().outcome
        parts["tabs"].setTabEnabled(0, not blind)
        self._fill(window)

    def _fill(self, window: Any) -> None:
        parts = self._parts(window)
        s, lamps = parts["session"], parts["list"]
        lamps.clear()
        if s.data is None:
            return
        show = parts["controller"].view_visibility().outcome and s.results is not None
        for i, text in enumerate(s.data.texts.tolist()):
            lamps.addItem(f"{text} · {VERDICTS[int(s.results.verdict[i])]}" if show else str(text))

    def on_project(self, window: Any) -> None:
        parts = self._parts(window)
        s, c = parts["session"], parts["controller"]
        s.reload()
        c.set_targets(np.asarray(s.data.ids if s.data is not None else [], dtype=object))
        self._fill(window)

    def pages(self, window: Any) -> list[Any]:
        return [self._parts(window)["tabs"]]

    def controller(self, window: Any) -> Any:
        return self._parts(window)["controller"]

    def judging_page(self, window: Any) -> Any:
        return self._parts(window)["judge"]

    def bar(self, window: Any) -> Any:
        return self._parts(window)["judge"].bar

    def outcome_texts(self, window: Any, index: int) -> list[str]:
        r = self._parts(window)["session"].results
        if r is None or index < 0:
            return []
        return [f"automated: {VERDICTS[int(r.verdict[index])]}"]

    def audit_population(self, window: Any) -> Any:
        from workstation.evaluation.audit_sets import AuditPopulation

        s = self._parts(window)["session"]
        if s.data is None or not len(s.data):
            return None
        conf = np.asarray(s.results.conf, np.float64) if s.results is not None else None
        strata = {}
        if s.results is not None:
            strata["outcome"] = (np.asarray(s.results.verdict, np.int64), [v.lower() for v in VERDICTS])
        return AuditPopulation(ids=np.asarray(s.data.ids, dtype=object), strata=strata,
                               default_strata=tuple(strata), conf=conf, noun="lamps")


VIEWS = LampViews()
