"""ProtoBias views: one "ProtoBias" tab with three pages over one live `MethodSession`.

* **Metrics** (`metric_table.MetricTablePage`) — failure rate and margins per metric × domain with
  intervals, the humans beside, κ between annotators, a bar chart; a click on a cell opens those
  triplets in
* **Triplets** (`triplets.TripletPage`) — the list (sort / filter by metric, domain, knob, outcome,
  margin) and the selected triplet: T above I_corr and I_adv, the knob and the extra element, each
  metric's two scores as bars with the failure marked;
* **Rate (blind)** (`rating.RatingPage`) — 1-4 semantic-fidelity ratings of every image, blind to
  the metrics and to which image is the prototype.
"""

from __future__ import annotations

from typing import Any

TITLE = "ProtoBias"


class ProtoBiasViews:
    """The registry's object; each window keeps its own page (``window.protobias_page``)."""

    method = "protobias"
    title = TITLE

    def install(self, window: Any) -> None:
        from ui.session import MethodSession
        from workstation.methods import get_method

        from .page import ProtoBiasPage

        session = MethodSession(get_method(self.method), window.state, window)
        window.protobias_page = ProtoBiasPage(session, window)
        window.add_panel(self.title, window.protobias_page, "tab")

    def on_project(self, window: Any) -> None:
        page = getattr(window, "protobias_page", None)
        if page is not None:
            page.session.reload()


VIEWS = ProtoBiasViews()
