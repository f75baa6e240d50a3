"""The auditor's place in a project, kept when it closes and restored when it opens again.

Per project (a setting in the project itself, so it travels with the folder and never mixes
projects): the tab shown, the window's layout (docks and geometry), and for each method's
judging queue: the audit set it was (by id) or the target ids of a chosen queue, and per
annotator the position in it and the target under review (`places`): whoever opens the project
comes back to their own place, an annotator with none to their first unlabelled item. A
read-only project keeps nothing; anything that no longer fits (a removed sample, a deleted audit
set) is skipped. The undo history is not kept: it starts empty at every open.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray

from workstation.util.jsonsafe import dumps

if TYPE_CHECKING:
    from .main_window import MainWindow
    from .method_views import MethodViews
    from .widgets.judge import JudgeController

log = logging.getLogger(__name__)

PLACE_KEY = "ui.place"
MAX_QUEUE = 50_000  # a chosen queue longer than this is not kept (its current target is)


def _b64(data: QByteArray) -> str:
    return base64.b64encode(bytes(data.data())).decode("ascii")


MAX_PLACES = 200  # annotators whose places on one queue are kept


def _queue_place(c: JudgeController) -> dict[str, Any]:
    core = c.core
    out: dict[str, Any] = {"audit_set_id": c.audit.audit_set_id if c.audit is not None else None,
                           "pos": int(core.pos), "current": c.current or "", "queue": [], "recheck": []}
    if c.audit is None and not core.plain and 0 < len(core.queue) <= MAX_QUEUE:
        out["queue"] = [core.target_id(i) for i in core.queue.tolist()]
        out["recheck"] = [bool(x) for x in core.recheck.tolist()]
    places = sorted(core.places().items())[:MAX_PLACES]
    out["places"] = {who: {"pos": int(pos), "current": core.target_id(cur) if cur >= 0 else "", "on_queue": bool(on)}
                     for who, (pos, cur, on) in places}
    return out


def _places_of(c: JudgeController, q: dict[str, Any]) -> dict[str, tuple[int, int, bool]] | None:
    """The kept places of a queue by annotator (None: a place kept before there were places)."""
    raw = q.get("places")
    if not isinstance(raw, dict):
        return None
    out: dict[str, tuple[int, int, bool]] = {}
    for who, pl in list(raw.items())[:MAX_PLACES]:
        if isinstance(who, str) and isinstance(pl, dict):
            try:
                pos = int(pl.get("pos", -1))
            except (TypeError, ValueError):
                continue
            out[who] = (pos, c.index_of(str(pl.get("current") or "")), bool(pl.get("on_queue", True)))
    return out


def _go_to_place(c: JudgeController, place: tuple[int, int, bool] | None, n: int) -> None:
    """The annotator's own place on the queue just set (``n`` long), else their first unlabelled."""
    core = c.core
    if place is None:
        start = core.first_undone()
        if start:
            c.go(start)
        return
    pos, cur, on = place
    if on and 0 <= pos < n and int(core.queue[pos]) == cur:
        c.go(pos)
    elif cur >= 0:
        c.go_target(cur)


def save_place(window: MainWindow) -> None:
    """Store where the auditor is in the open project (called as the project closes)."""
    p = window.state.project
    if p is None or p.read_only:
        return
    try:
        place: dict[str, Any] = {
            "tab": window.tabs.tabText(window.tabs.currentIndex()),
            "window_state": _b64(window.saveState()),
            "geometry": _b64(window.saveGeometry()),
            "queues": {},
        }
        for name, views in window.method_views.items():
            c = views.controller(window)
            if c is not None and c.core.n_targets:
                place["queues"][name] = _queue_place(c)
        p.set_setting(PLACE_KEY, dumps(place))
    except Exception:  # noqa: BLE001 - closing must not fail
        log.exception("keeping the auditor's place")


def _restore_queue(window: MainWindow, views: MethodViews[Any], q: dict[str, Any]) -> None:
    c = views.controller(window)
    if c is None or not c.core.n_targets:
        return
    p = window.state.project
    places = _places_of(c, q)
    who = window.state.annotator or ""
    pos = int(q.get("pos") or 0)
    mine = places.get(who) if places is not None else (pos, c.index_of(str(q.get("current") or "")), True)
    aid = q.get("audit_set_id")
    assert p is not None  # a place is restored into an open project
    if aid is not None and any(a["audit_set_id"] == aid and a["task"] == c.scheme.task for a in p.audit.sets()):
        n = c.open_audit(int(aid))  # at the annotator's first unlabelled item
        if mine is not None:
            _go_to_place(c, mine, n)
        c.core.keep_places(places or {})
        return
    ids = [str(t) for t in q.get("queue") or []]
    if ids:
        keep = [k for k, t in enumerate(ids) if c.index_of(t) >= 0]
        if keep:
            rc = q.get("recheck") or []
            c.set_queue([ids[k] for k in keep], recheck=[bool(rc[k]) if k < len(rc) else False for k in keep])
            _go_to_place(c, mine, len(keep))
            c.core.keep_places(places or {})
            return
    if mine is None:
        _go_to_place(c, None, len(c.core.queue))
    elif mine[1] >= 0:
        c.go_target(mine[1])
    c.core.keep_places(places or {})


def restore_place(window: MainWindow) -> bool:
    """Go back to where the auditor was in this project; False when nothing was kept."""
    p = window.state.project
    if p is None:
        return False
    raw = p.get_setting(PLACE_KEY, "") or ""
    if not raw:
        return False
    try:
        place = json.loads(raw)
    except ValueError:
        log.warning("the stored place in the project is unreadable; ignored")
        return False
    try:
        if place.get("geometry"):
            window.restoreGeometry(QByteArray(base64.b64decode(place["geometry"])))
        if place.get("window_state"):
            state = QByteArray(base64.b64decode(place["window_state"]))
            window.kept_layout = state  # docks installed later (the jobs panel) take it too
            window.restoreState(state)
    except (ValueError, TypeError):
        log.warning("the stored window layout is unreadable; ignored")
    for name, q in (place.get("queues") or {}).items():
        views = window.method_views.get(name)
        if views is not None and isinstance(q, dict):
            try:
                _restore_queue(window, views, q)
            except Exception:  # noqa: BLE001 - a place that no longer fits is skipped
                log.exception("restoring the %s queue", name)
    tab = place.get("tab") or ""
    for i in range(window.tabs.count()):
        if window.tabs.tabText(i) == tab:
            window.show_page(window.tabs.widget(i))  # type: ignore[arg-type]  # i < count()
            break
    return True
