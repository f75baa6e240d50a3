"""The auditor's place in a project, kept when it closes and restored when it opens again.

Per project (a setting in the project itself, so it travels with the folder and never mixes
projects): the tab shown, the sample under review, the labelling queue (an audit set by its id,
or the sample ids of a plain queue) and the position in it, and the window's layout (docks and
geometry). A read-only project keeps nothing; anything that no longer fits (a removed sample, a
deleted audit set) is skipped.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from PySide6.QtCore import QByteArray

from workstation.util.jsonsafe import dumps

log = logging.getLogger(__name__)

PLACE_KEY = "ui.place"
MAX_QUEUE = 50_000  # a plain queue longer than this is not kept (its current sample is)


def _b64(data: QByteArray) -> str:
    return base64.b64encode(bytes(data.data())).decode("ascii")


def save_place(window: Any) -> None:
    """Store where the auditor is in the open project (called as the project closes)."""
    st = window.state
    p = st.project
    if p is None or p.read_only or st.dataset is None:
        return
    try:
        ids = st.dataset.samples.sample_id
        place: dict[str, Any] = {
            "tab": window.tabs.tabText(window.tabs.currentIndex()),
            "current": str(ids[st.current]) if 0 <= st.current < st.dataset.n else "",
            "audit_set_id": st.audit_set_id,
            "queue_pos": int(st.queue_pos),
            "queue": [],
            "window_state": _b64(window.saveState()),
            "geometry": _b64(window.saveGeometry()),
        }
        if st.audit_set_id is None and 0 < len(st.queue) <= MAX_QUEUE:
            place["queue"] = [str(ids[r]) for r in st.queue]
        p.set_setting(PLACE_KEY, dumps(place))
    except Exception:  # noqa: BLE001 - closing must not fail
        log.exception("keeping the auditor's place")


def restore_place(window: Any) -> bool:
    """Go back to where the auditor was in this project; False when nothing was kept."""
    st = window.state
    p = st.project
    if p is None or st.dataset is None:
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
    ds = st.dataset
    ctl = window.controller
    pos = int(place.get("queue_pos") or 0)
    aid = place.get("audit_set_id")
    if aid is not None and any(a["audit_set_id"] == aid for a in p.audit_sets()):
        n = ctl.start_audit_set(int(aid))
        if 0 <= pos < n:
            ctl.go(pos)
    elif place.get("queue"):
        idx = ds.sample_index()
        rows = [idx[s] for s in place["queue"] if s in idx]
        if rows:
            ctl.set_plain_queue(rows)
            if 0 <= pos < len(rows):
                ctl.go(pos)
    cur = ds.row_of(str(place.get("current") or "")) if place.get("current") else -1
    if cur >= 0 and not st.queue:
        st.set_current(cur)
    tab = place.get("tab") or ""
    for i in range(window.tabs.count()):
        if window.tabs.tabText(i) == tab:
            if window.tabs.widget(i) is getattr(window, "_calibration_tab", None):
                window.calibration_panel()
            window.tabs.setCurrentIndex(i)
            break
    return True
