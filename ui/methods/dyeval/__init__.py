"""DyEval's views: one tab with the test tree, the node pages and the next step (`page.py`)."""

from __future__ import annotations

from typing import Any


class DyEvalViews:
    method = "dyeval"
    title = "DyEval"

    def install(self, window: Any) -> None:
        from .page import DyEvalPage

        page = DyEvalPage(window)
        window.add_panel(self.title, page, "tab")
        if "Jobs" not in getattr(window, "panels", {}) and hasattr(window, "install_extra_panels"):
            window.install_extra_panels()  # generation runs as jobs: the panel shows them
        page.attach_jobs(getattr(window, "panels", {}).get("Jobs"))

    def page(self, window: Any) -> Any:
        return getattr(window, "panels", {}).get(self.title)

    def on_project(self, window: Any) -> None:
        page = self.page(window)
        if page is not None:
            page.attach_jobs(window.panels.get("Jobs"))
            page.reload()


VIEWS = DyEvalViews()
