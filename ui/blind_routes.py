"""Routes out of a blind audit: every view that would show an item unblinded asks here first.

While a blind audit is open on a method's judging controller, a route to a view that shows what
the audit hides (spatial's Browse activation — double-click, Enter, "Review these ▶" —, a Grid
double-click, a search, another audit set that is not blind, ...) calls `leave_blind`:

* the item it would show is in the audit's queue: the queue goes to it, and the audit's blind
  view shows it (nothing is left);
* otherwise it asks "Pause the blind audit to show this?" (`ui.widgets.audit_pause.ask`): Stay in
  audit shows nothing; Pause records the pause (`project.audit.pause`) and runs the route. While
  the pause lasts, every item the controller shows is recorded as seen unblinded by the
  annotator (`PauseTracker`); reopening the audit set ends the pause.

The decision what a view may show stays the policy's (`JudgeController.view_visibility`); this
module only keeps the routes to other views behind it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from .widgets import audit_pause

if TYPE_CHECKING:
    from .main_window import MainWindow

log = logging.getLogger(__name__)


def hides(controller: Any) -> bool:
    """The controller's queue is an audit whose views hide something (a blind set, re-checks)."""
    if controller is None or controller.audit is None:
        return False
    vis = controller.view_visibility()
    return not (vis.outcome and vis.human)


class PauseTracker(QObject):
    """One controller's open pause: the items it shows unblinded are recorded as seen unblinded
    until the audit set is opened again (which ends the pause) or the annotator changes."""

    def __init__(self, controller: Any) -> None:
        super().__init__(controller)
        self.c = controller
        self.audit_set_id: int | None = None
        self.annotator = ""
        self.pause_id: int | None = None
        controller.moved.connect(self._moved)
        controller.queue_changed.connect(self._queue_changed)
        state = controller.state
        if getattr(state, "annotator_changed", None) is not None:
            state.annotator_changed.connect(self._stop)
        if getattr(state, "project_changed", None) is not None:
            state.project_changed.connect(self._stop)

    @property
    def paused(self) -> bool:
        return self.pause_id is not None

    def start(self, audit_set_id: int, annotator: str, reason: str, target_ids: Sequence[str]) -> int:
        p = self.c.state.project
        self.pause_id = int(p.audit.pause(audit_set_id, annotator, reason, list(target_ids)))
        self.audit_set_id, self.annotator = int(audit_set_id), annotator
        return self.pause_id

    def _moved(self, index: int) -> None:
        if self.pause_id is None or index < 0 or hides(self.c):
            return
        p = self.c.state.project
        if p is None or p.read_only or (self.c.state.annotator or "") != self.annotator:
            return
        try:
            p.audit.mark_unblinded(self.pause_id, [self.c.core.target_id(index)])
        except Exception:
            log.exception("recording an item seen unblinded during a pause")

    def _queue_changed(self) -> None:
        a = self.c.audit
        if a is None:
            return
        resume_pause(self.c.state.project, self.c, a.audit_set_id)  # also a pause from before a restart
        if a.audit_set_id == self.audit_set_id:
            self._stop()

    def _stop(self, *_: Any) -> None:
        self.pause_id = None
        self.audit_set_id = None


def tracker(controller: Any) -> PauseTracker:
    """The controller's pause tracker (made on first use)."""
    t = getattr(controller, "_pause_tracker", None)
    if t is None:
        t = controller._pause_tracker = PauseTracker(controller)
    return t


def resume_pause(project: Any, controller: Any, audit_set_id: int) -> None:
    """An audit set was opened: a pause of it by this annotator ends (also after a restart)."""
    if project is None or project.read_only or project.con is None:
        return
    annotator = controller.state.annotator or ""
    if project.audit.open_pause(audit_set_id, annotator) is not None:
        project.audit.end_pause(audit_set_id, annotator)


def leave_blind(window: MainWindow, controller: Any, what: str, targets: Sequence[int], go: Callable[[], Any],
                stay_on: Callable[[int], Any] | None = None) -> bool:
    """A route would show `targets` (indices of the controller's targets; the first is the one it
    opens) outside the audit's blind view by calling `go`. Returns True when `go` ran.

    No audit hides anything: `go` runs. The first target is in the audit's queue: the queue goes
    to it and `stay_on(index)` shows the judging page (the route stays inside the audit). Else the
    auditor is asked to pause; a pause is recorded before `go` runs. Without `stay_on` the route
    has no blind view to stay in (another audit set): it asks."""
    c = controller
    if not hides(c):
        go()
        return True
    a = c.audit
    first = int(targets[0]) if len(targets) else -1
    queued = stay_on is not None and first >= 0 and bool((c.queue_indices == first).any())
    if queued and stay_on is not None:
        c.go_target(first)
        if stay_on is not None:
            stay_on(first)
        _say(window, f"{what}: the item is in audit set #{a.audit_set_id}; shown in the audit's blind view")
        return False
    p = c.state.project
    if p is None or p.read_only:
        _say(window, f"{what}: not during a blind audit (this project is open read-only: a pause cannot be recorded)")
        return False
    who = c.state.annotator or ""
    if not audit_pause.ask(window, what, a.audit_set_id, who):
        _say(window, f"stayed in audit set #{a.audit_set_id}")
        return False
    ids = [c.core.target_id(int(i)) for i in targets[:1] if int(i) >= 0]
    tracker(c).start(a.audit_set_id, who, what, ids)
    go()
    _say(window, f"audit set #{a.audit_set_id} paused (recorded); reopen it from Audit → Open audit set")
    return True


def pause_on_leave(window: MainWindow, controller: Any) -> None:
    """Audit → Leave audit set while the annotator's pass of a blind audit is not finished: what
    is shown next shows what the audit hides, so the leave is recorded as a pause (the auditor
    asked for it; reopening the set ends it)."""
    c = controller
    if not hides(c):
        return
    done, total = c.progress()
    p = c.state.project
    if done >= total or p is None or p.read_only:
        return
    tracker(c).start(c.audit.audit_set_id, c.state.annotator or "", "Audit → Leave audit set", [])


def _say(window: MainWindow, text: str) -> None:
    sb = getattr(window, "statusBar", None)
    if sb is not None:
        sb().showMessage(text, 8000)
