"""Audit → Audit plans…: the audit-plan panel (`ui.widgets.audit_plan`) in a window of its own
beside the main window, bound to the open project.

"Label next" draws the plan's next targets (stored in the plan's audit set before they are shown)
and opens that audit set on the judging page of the plan's method, at its first unlabelled item;
the panel reads the labels again whenever it is brought back to the front, when the project's
data change, and after each label is committed on a judging page, so the estimate follows the
labels as they come in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QWidget

from .panel_window import PanelWindow, show_in_front
from .widgets.audit_plan import AuditPlanPanel

if TYPE_CHECKING:
    from .main_window import MainWindow


class AuditPlansWindow(PanelWindow):
    """The panel in a non-modal window; one per main window. `open_audit_set(window, audit_set_id)`
    opens an audit set on its method's judging page and returns its number of items."""

    def __init__(self, window: MainWindow, open_audit_set: Callable[[Any, int], int]) -> None:
        super().__init__(window, AuditPlanPanel, name="auditPlansWindow", title="Audit plans", size=(1180, 820))
        self.open_audit_set = open_audit_set
        self.panel.targets_ready.connect(self._label_next)
        window.state.project_changed.connect(self.follow_project)
        window.state.data_changed.connect(self._refresh_if_shown)
        self.follow_project()

    def follow_project(self) -> None:
        self.panel.set_project(self.window_.state.project)
        self._watch_controllers()

    def _watch_controllers(self) -> None:
        """Refresh after every label committed on any method's judging page."""
        self.watch_commits(lambda *_: self._refresh_if_shown())

    def _refresh_if_shown(self) -> None:
        if self.isVisible() and self.panel.plan is not None:
            self.panel.refresh()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            self._refresh_if_shown()
        super().changeEvent(event)

    def _label_next(self, targets: list[Any]) -> None:
        plan = self.panel.plan
        if plan is None or plan.audit_set_id is None:
            return
        if not targets:
            self.window_.statusBar().showMessage("the plan has nothing more to draw", 6000)
            return
        n = self.open_audit_set(self.window_, int(plan.audit_set_id))
        self._watch_controllers()
        if n:
            self.window_.statusBar().showMessage(
                f"audit plan #{plan.plan_id}: {len(targets)} drawn; audit set #{plan.audit_set_id} has {n} items", 8000)
        self.window_.raise_()
        self.window_.activateWindow()


def open_audit_plans(window: MainWindow, open_audit_set: Callable[[Any, int], int]) -> QWidget:
    """Show the window's audit-plans window (made on first use; see `AuditPlansWindow`)."""
    w = getattr(window, "audit_plans_window", None)
    if w is None:
        w = window.audit_plans_window = AuditPlansWindow(window, open_audit_set)
    else:
        w.follow_project()
    # the goal form starts on the method of the tab it was opened from
    views = window.current_views()
    combo = w.panel.method_combo
    i = combo.findData(getattr(views, "method", None)) if views is not None else -1
    if i >= 0:
        combo.setCurrentIndex(i)
    return show_in_front(w)
