"""The ProtoBias tab: the metric table, the triplet view and the rating mode as three pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from .metric_table import MetricTablePage
from .rating import RatingPage
from .triplets import TripletPage

if TYPE_CHECKING:
    from ui.main_window import MainWindow


class ProtoBiasPage(QWidget):
    def __init__(self, session: Any, window: MainWindow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("protobiasPage")
        self.session = session
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("protobiasTabs")
        self.metrics = MetricTablePage(session, self)
        self.triplets = TripletPage(session, getattr(window, "images", None), self)
        self.rating = RatingPage(session, window, self)
        self.tabs.addTab(self.metrics, "Metrics")
        self.tabs.addTab(self.triplets, "Triplets")
        self.tabs.addTab(self.rating, "Rate (blind)")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.tabs)
        self.metrics.show_triplets.connect(self.open_triplets)
        self.rating.labels_written.connect(self.metrics.mark_stale)

    def open_triplets(self, metric: str, domain: str, outcome: str) -> None:
        """The metric table's cell click: the triplet view filtered to that metric and domain."""
        self.triplets.apply_filter(metric=metric, domain=domain, outcome=outcome)
        self.tabs.setCurrentWidget(self.triplets)

    def show_page(self, name: str) -> None:
        self.tabs.setCurrentWidget({"metrics": self.metrics, "triplets": self.triplets, "rating": self.rating}[name])
