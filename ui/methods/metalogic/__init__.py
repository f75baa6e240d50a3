"""MetaLogic views: one "MetaLogic" tab over one live `MethodSession` (`page.MetaLogicPage`).

The law × dimension heatmap (a click lists those pairs), the pair list, the selected image pair
(prompt A above image A, prompt B above image B, the misaligned entity marked on both), pair
judgements by key (A / M / U, blind mode hides the computed outcome), the agreement of the
computed outcome with the human one, and the comparison's abstention thresholds on sliders.
"""

from __future__ import annotations

from typing import Any

TITLE = "MetaLogic"


class MetaLogicViews:
    """The registry's object; each window keeps its own page (``window.metalogic_page``)."""

    method = "metalogic"
    title = TITLE

    def install(self, window: Any) -> None:
        from ui.session import MethodSession
        from workstation.methods import get_method

        from .page import MetaLogicPage

        session = MethodSession(get_method(self.method), window.state, window)
        window.metalogic_page = MetaLogicPage(session, window)
        window.add_panel(self.title, window.metalogic_page, "tab")

    def on_project(self, window: Any) -> None:
        page = getattr(window, "metalogic_page", None)
        if page is not None:
            page.load()


VIEWS = MetaLogicViews()
