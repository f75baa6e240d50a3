"""Audit sets (labelling queues of one label task, with blind consistency re-checks) and saved
Browse filters."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..util.jsonsafe import dumps
from .base import Repo, _now


#: how an audit set's targets were drawn ("unknown": a set of an earlier version, or made by hand)
DESIGNS = ("uniform", "stratified", "plan", "unknown")
#: the per-target columns of a draw's provenance
DRAW_COLUMNS = ("inclusion", "stratum", "stratum_size")


def _item_columns(aid: int, start: int, items: Sequence[tuple[str, bool]]) -> dict[str, Any]:
    return {
        "audit_set_id": np.full(len(items), aid, np.int32),
        "position": np.arange(start, start + len(items), dtype=np.int32),
        "target_id": np.array([s for s, _ in items], dtype=object),
        "is_recheck": np.array([r for _, r in items], dtype=bool),
    }


class AuditRepo(Repo):
    """Audit sets and saved filters."""

    def create_set(self, name: str, task: str, target_ids: Sequence[str], params: dict[str, Any],
                   blind: bool = True, rechecks: Sequence[tuple[int, str]] = (), *,
                   design: str = "unknown", population: int | None = None,
                   draw: Mapping[str, Sequence[Any]] | None = None) -> int:
        """Store an audit set of a label task: `target_ids` in queue order; `rechecks` =
        (position, target_id) inserted as blind consistency re-checks. ``design`` names the draw
        (`DESIGNS`), ``population`` the number of targets it was drawn from, and ``draw`` (columns
        ``inclusion``, ``stratum``, ``stratum_size``, one entry per target id) each target's
        inclusion probability, stratum and stratum size (`workstation.evaluation.draws`)."""
        self._check_writable()
        if design not in DESIGNS:
            raise ValueError(f"unknown audit design {design!r}; expected one of {', '.join(DESIGNS)}")
        prov: dict[str, tuple[Any, ...]] = {}
        if draw is not None:
            for col in DRAW_COLUMNS:
                if len(draw[col]) != len(target_ids):
                    raise ValueError(f"audit set {name!r}: {col} has {len(draw[col])} entries for "
                                     f"{len(target_ids)} targets")
            prov = {s: tuple(draw[c][i] for c in DRAW_COLUMNS) for i, s in enumerate(target_ids)}
        with self.transaction():
            aid_row = self.con.execute("SELECT coalesce(max(audit_set_id), 0) + 1 FROM audit_sets").fetchone()
            assert aid_row is not None
            aid = int(aid_row[0])
            self.con.execute("INSERT INTO audit_sets (audit_set_id, name, params, blind, created_at, task, design, "
                             "population) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [aid, name, dumps(params), blind, _now(), task, design,
                              None if population is None else int(population)])
            items: list[tuple[str, bool]] = [(s, False) for s in target_ids]
            for pos, sid in sorted(rechecks):
                items.insert(min(pos, len(items)), (sid, True))
            cols = _item_columns(aid, 0, items)
            if prov:
                none = (None, None, None)
                cols["inclusion"] = np.array([prov.get(s, none)[0] for s, _ in items], dtype=object)
                cols["stratum"] = np.array([prov.get(s, none)[1] for s, _ in items], dtype=object)
                cols["stratum_size"] = np.array([prov.get(s, none)[2] for s, _ in items], dtype=object)
                cols["unit_id"] = np.array([s for s, _ in items], dtype=object)
            self._insert("audit_items", cols)
        return aid

    def set_design(self, audit_set_id: int, design: str, population: int | None) -> None:
        """Record the design of an audit set's draw (a plan's set, when the plan is stored)."""
        self._check_writable()
        if design not in DESIGNS:
            raise ValueError(f"unknown audit design {design!r}; expected one of {', '.join(DESIGNS)}")
        with self._lock:
            self.con.execute("UPDATE audit_sets SET design = ?, population = ? WHERE audit_set_id = ?",
                             [design, None if population is None else int(population), int(audit_set_id)])

    def append_items(self, audit_set_id: int, items: Sequence[tuple[str, bool]],
                     draw: Mapping[str, Sequence[Any]] | None = None) -> None:
        """Append (target id, is re-check) items at the end of an audit set's queue; ``draw``
        (columns ``inclusion``, ``stratum``, ``stratum_size``, ``unit_id``, one entry per item)
        records where each was drawn from (a plan's draws)."""
        self._check_writable()
        if not items:
            return
        with self.transaction():
            row = self.con.execute("SELECT coalesce(max(position), -1) + 1 FROM audit_items WHERE audit_set_id = ?",
                                   [audit_set_id]).fetchone()
            assert row is not None
            start = int(row[0])
            cols = _item_columns(audit_set_id, start, items)
            if draw is not None:
                for col in (*DRAW_COLUMNS, "unit_id"):
                    if len(draw[col]) != len(items):
                        raise ValueError(f"{col} has {len(draw[col])} entries for {len(items)} audit items")
                    cols[col] = np.array(list(draw[col]), dtype=object)
            self._insert("audit_items", cols)

    def sets(self, task: str | None = None) -> list[dict[str, Any]]:
        rows = self.con.execute(
            "SELECT a.audit_set_id, a.name, a.params, a.blind, a.created_at, "
            "(SELECT count(*) FROM audit_items i WHERE i.audit_set_id = a.audit_set_id), a.task, "
            "coalesce(a.design, 'unknown'), a.population "
            "FROM audit_sets a " + ("WHERE a.task = ? " if task else "") + "ORDER BY a.audit_set_id",
            [task] if task else []).fetchall()
        return [{"audit_set_id": r[0], "name": r[1], "params": json.loads(r[2] or "{}"), "blind": r[3],
                 "created_at": r[4], "size": int(r[5]), "task": r[6],
                 "design": r[7] if r[7] in DESIGNS else "unknown",
                 "population": None if r[8] is None else int(r[8])} for r in rows]

    def draw_items(self, task: str) -> list[tuple[int, str, bool, float | None, int | None, int | None, str | None]]:
        """(audit set, target, is re-check, inclusion, stratum, stratum size, unit) of every item of
        the task's audit sets (empty cells: not recorded)."""
        return [(int(r[0]), str(r[1]), bool(r[2]), None if r[3] is None else float(r[3]),
                 None if r[4] is None else int(r[4]), None if r[5] is None else int(r[5]),
                 None if r[6] is None else str(r[6])) for r in self.con.execute(
            "SELECT i.audit_set_id, i.target_id, i.is_recheck, i.inclusion, i.stratum, i.stratum_size, i.unit_id "
            "FROM audit_items i JOIN audit_sets a ON a.audit_set_id = i.audit_set_id WHERE a.task = ? "
            "ORDER BY i.audit_set_id, i.position", [task]).fetchall()]

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
