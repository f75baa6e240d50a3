"""Evaluation versions of every method: (method, config, content hash, note, parent).

A method's config is stored once per content hash; each version remembers the version it was
derived from (the calibration panel's Apply, a grid search's best) and a note. The active
version of a method is a setting (``active_eval.<method>``). A method keeps its results for a
version in its own tables, keyed by ``eval_id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..util.jsonsafe import dumps
from .base import ProjectError, Repo, _now

_ACTIVE = "active_eval."


class EvaluationsRepo(Repo):
    """Numbered evaluation versions of every method."""

    def save(self, method: str, config: Mapping[str, Any], content_hash: str, *, name: str = "",
             note: str = "", parent_id: int | None = None, activate: bool = True) -> int:
        """Store a method's config as a new version (or return the id of the identical stored one)."""
        self._check_writable()
        with self.transaction():
            row = self.con.execute(
                "SELECT eval_id FROM evaluations WHERE method=? AND content_hash=? ORDER BY eval_id DESC LIMIT 1",
                [method, content_hash]).fetchone()
            if row:
                eid = int(row[0])
                # the same config applied again: keep the note typed this time too
                note = (note or "").strip()
                if note:
                    old = self.con.execute("SELECT note FROM evaluations WHERE eval_id = ?", [eid]).fetchone()
                    old_note = str(old[0] or "").strip() if old else ""
                    if note not in [x.strip() for x in old_note.split(";")]:
                        self.con.execute("UPDATE evaluations SET note = ? WHERE eval_id = ?",
                                         [f"{old_note}; {note}" if old_note else note, eid])
            else:
                nxt = self.con.execute("SELECT coalesce(max(eval_id), 0) + 1 FROM evaluations").fetchone()
                assert nxt is not None
                eid = int(nxt[0])
                self.con.execute("INSERT INTO evaluations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 [eid, method, name, content_hash, dumps(dict(config), sort_keys=True), note,
                                  parent_id, _now()])
            if activate:
                self.con.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [_ACTIVE + method, str(eid)])
        return eid

    def all(self, method: str | None = None) -> list[dict[str, Any]]:
        rows = self.con.execute(
            "SELECT eval_id, method, name, content_hash, note, parent_id, created_at FROM evaluations "
            + ("WHERE method = ? " if method else "") + "ORDER BY eval_id", [method] if method else []).fetchall()
        return [{"eval_id": r[0], "method": r[1], "name": r[2], "content_hash": r[3], "note": r[4],
                 "parent_id": r[5], "created_at": r[6]} for r in rows]

    def get(self, eval_id: int, method: str | None = None) -> dict[str, Any]:
        """One version: its method, name, hash, note, parent and config (a dict)."""
        row = self.con.execute(
            "SELECT eval_id, method, name, content_hash, config, note, parent_id, created_at FROM evaluations "
            "WHERE eval_id = ?", [int(eval_id)]).fetchone()
        if not row or (method is not None and row[1] != method):
            raise ProjectError(f"no {method + ' ' if method else ''}evaluation version {eval_id} in the project")
        return {"eval_id": row[0], "method": row[1], "name": row[2], "content_hash": row[3],
                "config": json.loads(row[4] or "{}"), "note": row[5], "parent_id": row[6], "created_at": row[7]}

    def active_id(self, method: str) -> int | None:
        v = self.get_setting(_ACTIVE + method)
        return int(v) if v else None

    def set_active(self, method: str, eval_id: int) -> None:
        self.get(eval_id, method)
        self.set_setting(_ACTIVE + method, str(int(eval_id)))
