"""DyEval's views: one tab with two pages.

* **Test tree** (`page.DyEvalPage`) — the test tree, the node pages and the next step;
* **Audit set** — an audit set's test images one at a time (`ui.widgets.audit_page.AuditPage`),
  judged P / F with the prompt and seed; the pre-mark (CLIPScore, or the demo's object finder) is
  the automated outcome and is hidden when the set is blind. While a blind audit set is open the tree page is closed (it
  shows pre-marks, pass rates and every annotator's judgements).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np

from ...method_views import ViewsBase, close_while_blind

if TYPE_CHECKING:
    from PySide6.QtWidgets import QTabWidget, QWidget

    from ui.main_window import MainWindow
    from ui.widgets.audit_page import AuditPage
    from ui.widgets.judge import JudgeBar, JudgeController
    from workstation.evaluation.audit_sets import AuditPopulation

    from .page import DyEvalPage

    class Window(MainWindow):
        """The window with what these views' `install` adds to it."""

        dyeval_page: DyEvalPage
        dyeval_tabs: QTabWidget
        dyeval_audit: AuditPage



def _node_of(tree: Any, owner: str) -> str:
    """The test node whose prompt or failure location generated an image."""
    if owner in tree.prompts:
        return str(tree.prompts[owner].node_id)
    return str(tree.locations[owner.partition("/s")[0]].node_id)


class _ImageTarget:
    """The audit page's view of one test image: the image, its prompt, its seed."""

    def __init__(self, window: Window, page: Any) -> None:
        from ui.widgets.image_pane import ImagePane

        self.page = page
        self.widget = ImagePane(getattr(window, "images", None))

    def show_target(self, index: int, vis: Any) -> None:
        s = self.page.session
        tree = s.tree
        c = self.page.images.controller
        iid = c.core.target_id(index)
        if tree is None or iid not in tree.images:
            self.clear()
            return
        img = tree.images[iid]
        cap = f"<b>{html.escape(tree.step_owner_text(img.owner))}</b><br>seed {img.seed}"
        if vis.outcome and img.clip_score is not None:
            cap += f" · {html.escape(str(tree.config.premark_scorer))} {img.clip_score:.2f}" + (
                " (pre-marked FAIL)" if img.premark_fail else "")
        path = s.project.folder / img.path if s.project is not None and img.path else None
        self.widget.show_image(path, caption=cap)

    def missing(self) -> str:
        return "no image" if self.widget.error else ""

    def clear(self) -> None:
        self.widget.show_image(None, caption="")


class DyEvalViews(ViewsBase["Window"]):
    method = "dyeval"
    title = "DyEval"
    tab_keys = ("Ctrl+4",)
    noun = "image"

    def install(self, window: Window) -> None:
        from .page import DyEvalPage

        page = DyEvalPage(window)
        window.dyeval_page = page
        window.dyeval_tabs, window.dyeval_audit = self.audit_tabs(
            page, "Test tree", page.images.controller, _ImageTarget(window, page))
        window.add_panel(self.title, window.dyeval_tabs, "tab")
        page.images.controller.policy_changed.connect(lambda: self._policy(window))
        if "Jobs" not in getattr(window, "panels", {}) and hasattr(window, "install_extra_panels"):
            window.install_extra_panels()  # generation runs as jobs: the panel shows them
        page.attach_jobs(getattr(window, "panels", {}).get("Jobs"))

    def _policy(self, window: Window) -> None:
        c = window.dyeval_page.images.controller
        vis = c.view_visibility()
        closed = c.audit is not None and not (vis.outcome and vis.human)
        close_while_blind(window.dyeval_tabs, window.dyeval_page, closed, "it shows pre-marks and every judgement")

    def page(self, window: Window) -> DyEvalPage | None:
        return getattr(window, "dyeval_page", None)

    def on_project(self, window: Window) -> None:
        page = self.page(window)
        if page is not None:
            page.attach_jobs(window.panels.get("Jobs"))
            page.reload()

    def pages(self, window: Window) -> list[QWidget]:
        return [window.dyeval_tabs]

    def controller(self, window: Window) -> JudgeController:
        return window.dyeval_page.images.controller

    def judging_page(self, window: Window) -> QWidget:
        return window.dyeval_audit if self.controller(window).audit is not None else window.dyeval_page.images

    def bar(self, window: Window) -> JudgeBar | None:
        page = self.judging_page(window)
        return getattr(page, "bar", None) or getattr(page, "judge_bar", None)

    def focus_target(self, window: Window) -> QWidget | None:
        return window.dyeval_tabs.currentWidget()

    def open_audit(self, window: Window, audit_set_id: int) -> int:
        window.dyeval_page.images.sync_targets()  # every image of the tree, whichever node is shown
        return super().open_audit(window, audit_set_id)

    def leave_audit(self, window: Window) -> None:
        page = window.dyeval_page
        page.images.controller.leave_audit()
        page.images.show_node(page.images.node_id, refill=True)
        window.dyeval_tabs.setCurrentWidget(page)

    def outcome_texts(self, window: Window, index: int) -> list[str]:
        """The pre-mark scorer's score of the image (and the pre-mark itself)."""
        tree = window.dyeval_page.session.tree
        iid = self.controller(window).core.target_id(index)
        img = tree.images.get(iid) if tree is not None else None
        if img is None or img.clip_score is None:
            return []
        return [f"{img.clip_score:.1f}", f"{img.clip_score:.2f}", "pre-marked"]

    def audit_population(self, window: Window) -> AuditPopulation | None:
        from workstation.evaluation.audit_sets import AuditPopulation

        page = window.dyeval_page
        tree = page.session.tree
        c = page.images.controller
        if tree is None:
            return None
        page.images.sync_targets()
        ids = c.core.ids
        if not len(ids):
            return None
        imgs = [tree.images[str(i)] for i in ids.tolist()]
        owner_node = [_node_of(tree, im.owner) for im in imgs]
        nodes = sorted(set(owner_node))
        node = np.array([nodes.index(n) for n in owner_node], np.int64)
        premark = np.array([1 if im.premark_fail else 0 for im in imgs], np.int64)
        labelled = np.array([im.label is not None for im in imgs], bool)
        return AuditPopulation(ids=ids, strata={"node": (node, nodes), "premark": (premark, ["not pre-marked",
                                                                                             "pre-marked FAIL"])},
                               default_strata=("node",), labelled=labelled, noun="images",
                               titles={"node": "test node", "premark": "pre-mark"})


VIEWS = DyEvalViews()
