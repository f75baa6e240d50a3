"""Audit sets (labelling queues of one label task, with blind consistency re-checks) and saved
Browse filters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..util.jsonsafe import dumps
from .base import Repo, _now


class AuditRepo(Repo):
    """Audit sets and saved filters."""

    def create_set(self, name: str, task: str, target_ids: Sequence[str], params: dict[str, Any],
                   blind: bool = True, rechecks: Sequence[tuple[int, str]] = ()) -> int:
        """Store an audit set of a label task: `target_ids` in queue order; `rechecks` =
        (position, target_id) inserted as blind consistency re-checks."""
        self._check_writable()
        with self.transaction():
            aid_row = self.con.execute("SELECT coalesce(max(audit_set_id), 0) + 1 FROM audit_sets").fetchone()
            assert aid_row is not None
            aid = int(aid_row[0])
            self.con.execute("INSERT INTO audit_sets (audit_set_id, name, params, blind, created_at, task) "
                             "VALUES (?, ?, ?, ?, ?, ?)", [aid, name, dumps(params), blind, _now(), task])
            items: list[tuple[str, bool]] = [(s, False) for s in target_ids]
            for pos, sid in sorted(rechecks):
                items.insert(min(pos, len(items)), (sid, True))
            self._insert("audit_items", {
                "audit_set_id": np.full(len(items), aid, np.int32),
                "position": np.arange(len(items), dtype=np.int32),
                "target_id": np.array([s for s, _ in items], dtype=object),
                "is_recheck": np.array([r for _, r in items], dtype=bool),
            })
        return aid

    def append_items(self, audit_set_id: int, items: Sequence[tuple[str, bool]]) -> None:
        """Append (target id, is re-check) items at the end of an audit set's queue."""
        self._check_writable()
        if not items:
            return
        with self.transaction():
            row = self.con.execute("SELECT coalesce(max(position), -1) + 1 FROM audit_items WHERE audit_set_id = ?",
                                   [audit_set_id]).fetchone()
            assert row is not None
            start = int(row[0])
            self._insert("audit_items", {
                "audit_set_id": np.full(len(items), audit_set_id, np.int32),
                "position": np.arange(start, start + len(items), dtype=np.int32),
                "target_id": np.array([s for s, _ in items], dtype=object),
                "is_recheck": np.array([r for _, r in items], dtype=bool),
            })

    def sets(self, task: str | None = None) -> list[dict[str, Any]]:
        rows = self.con.execute(
            "SELECT a.audit_set_id, a.name, a.params, a.blind, a.created_at, "
            "(SELECT count(*) FROM audit_items i WHERE i.audit_set_id = a.audit_set_id), a.task "
            "FROM audit_sets a " + ("WHERE a.task = ? " if task else "") + "ORDER BY a.audit_set_id",
            [task] if task else []).fetchall()
        return [{"audit_set_id": r[0], "name": r[1], "params": json.loads(r[2] or "{}"), "blind": r[3],
                 "created_at": r[4], "size": int(r[5]), "task": r[6]} for r in rows]

    def items(self, audit_set_id: int) -> list[tuple[str, bool]]:
        return [(r[0], bool(r[1])) for r in self.con.execute(
            "SELECT target_id, is_recheck FROM audit_items WHERE audit_set_id=? ORDER BY position",
            [audit_set_id]).fetchall()]

    # ---- saved filters --------------------------------------------------------------------------------
    def save_filter(self, name: str, spec: dict[str, Any]) -> None:
        self._check_writable()
        with self._lock:
            self.con.execute("INSERT OR REPLACE INTO saved_filters VALUES (?, ?)", [name, json.dumps(spec)])

    def saved_filters(self) -> dict[str, dict[str, Any]]:
        return {n: json.loads(s) for n, s in self.con.execute(
            "SELECT name, spec FROM saved_filters ORDER BY name").fetchall()}
