"""Audit sets (labelling queues of one label task, with blind consistency re-checks), the pauses
of blind audits, and saved Browse filters.

A **pause** is recorded when an annotator, during a blind audit, chose to be shown something the
audit hides (an item opened outside the audit's blind view): the audit set, the annotator, when
it started and ended, why (the route that asked), and every item shown to that annotator
unblinded while it lasted (`mark_unblinded`). Those items' labels in the set are flagged "seen
unblinded" in the audit's figures and the report (`seen_unblinded`)."""

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
                   draw: Mapping[str, Sequence[Any]] | None = None, gold: Sequence[str] = (),
                   assignment: Mapping[str, Sequence[str]] | None = None) -> int:
        """Store an audit set of a label task: `target_ids` in queue order; `rechecks` =
        (position, target_id) inserted as blind consistency re-checks. ``design`` names the draw
        (`DESIGNS`), ``population`` the number of targets it was drawn from, and ``draw`` (columns
        ``inclusion``, ``stratum``, ``stratum_size``, one entry per target id) each target's
        inclusion probability, stratum and stratum size (`workstation.evaluation.draws`). ``gold``:
        the target ids that are seeded gold items (not drawn: no draw provenance); ``assignment``:
        target id → the raters it is assigned to (None: anyone may label every item)."""
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
            if gold:
                golden = {str(g) for g in gold}
                cols["is_gold"] = np.array([s in golden for s, _ in items], dtype=bool)
                for c in ("inclusion", "stratum", "stratum_size", "unit_id"):
                    if c in cols:
                        cols[c] = np.array([None if s in golden else v for (s, _), v in zip(items, cols[c])],
                                           dtype=object)
            self._insert("audit_items", cols)
            if assignment:
                pairs = [(str(t), str(a)) for t, raters in assignment.items() for a in raters]
                self._insert("audit_assignments", {
                    "audit_set_id": np.full(len(pairs), aid, np.int32),
                    "target_id": np.array([t for t, _ in pairs], dtype=object),
                    "annotator": np.array([a for _, a in pairs], dtype=object)})
        return aid

    def assignments(self, audit_set_id: int) -> dict[str, tuple[str, ...]]:
        """rater → the target ids of the set assigned to them (empty: the set is anyone's)."""
        out: dict[str, list[str]] = {}
        for a, t in self.con.execute("SELECT annotator, target_id FROM audit_assignments WHERE audit_set_id = ? "
                                     "ORDER BY annotator, target_id", [int(audit_set_id)]).fetchall():
            out.setdefault(str(a), []).append(str(t))
        return {a: tuple(ts) for a, ts in out.items()}

    def gold_items(self, audit_set_id: int | None = None) -> set[tuple[int, str]]:
        """(audit set, target id) of the seeded gold items (of one set when given)."""
        q = "SELECT DISTINCT audit_set_id, target_id FROM audit_items WHERE is_gold"
        rows = self.con.execute(q + (" AND audit_set_id = ?" if audit_set_id is not None else ""),
                                [int(audit_set_id)] if audit_set_id is not None else []).fetchall()
        return {(int(a), str(t)) for a, t in rows}

    # ---- gold answers ---------------------------------------------------------------------------------
    def add_gold(self, task: str, rows: Sequence[tuple[str, str, str | None]], source: str) -> int:
        """Keep the known answers (target id, value, note) of a task's targets; a later answer of a
        target replaces an earlier one (all are kept). Returns how many were written."""
        self._check_writable()
        if not rows:
            return 0
        now = _now()
        with self.transaction():
            self._insert("gold_answers", {
                "task": np.array([task] * len(rows), dtype=object),
                "target_id": np.array([str(r[0]) for r in rows], dtype=object),
                "value": np.array([str(r[1]) for r in rows], dtype=object),
                "source": np.array([source] * len(rows), dtype=object),
                "note": np.array([r[2] for r in rows], dtype=object),
                "created_at": np.array([now] * len(rows), dtype=object)})
        return len(rows)

    def gold(self, task: str) -> dict[str, tuple[str, str | None]]:
        """target id → (value, source) of the task's imported gold answers (the latest of each)."""
        rows = self.con.execute("SELECT target_id, value, source FROM gold_answers WHERE task = ? "
                                "ORDER BY created_at, rowid", [task]).fetchall()
        return {str(t): (str(v), None if s is None else str(s)) for t, v, s in rows}

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

    # ---- pauses of blind audits ---------------------------------------------------------------------
    def pause(self, audit_set_id: int, annotator: str, reason: str, target_ids: Sequence[str] = ()) -> int:
        """Record a pause of a blind audit by `annotator` (`reason`: what was asked to be shown)
        and the items it shows unblinded; returns the pause's id. An open pause of the same set
        and annotator is taken up again instead of a second one opened."""
        self._check_writable()
        with self.transaction():
            open_ = self.open_pause(audit_set_id, annotator)
            if open_ is not None:
                pid = open_
            else:
                row = self.con.execute("SELECT coalesce(max(pause_id), 0) + 1 FROM audit_pauses").fetchone()
                assert row is not None
                pid = int(row[0])
                self.con.execute("INSERT INTO audit_pauses (pause_id, audit_set_id, annotator, started_at, ended_at, "
                                 "reason) VALUES (?, ?, ?, ?, NULL, ?)", [pid, audit_set_id, annotator, _now(), reason])
            self._mark(pid, audit_set_id, annotator, target_ids)
        return pid

    def open_pause(self, audit_set_id: int, annotator: str) -> int | None:
        """The pause of this set by this annotator that has not ended (None: none)."""
        row = self.con.execute("SELECT max(pause_id) FROM audit_pauses WHERE audit_set_id = ? AND annotator = ? "
                               "AND ended_at IS NULL", [audit_set_id, annotator]).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    def mark_unblinded(self, pause_id: int, target_ids: Sequence[str]) -> int:
        """Record items shown unblinded during pause `pause_id`; returns how many were new to it."""
        self._check_writable()
        row = self.con.execute("SELECT audit_set_id, annotator FROM audit_pauses WHERE pause_id = ?",
                               [pause_id]).fetchone()
        if row is None:
            raise KeyError(f"no pause #{pause_id}")
        with self.transaction():
            return self._mark(pause_id, int(row[0]), str(row[1]), target_ids)

    def _mark(self, pause_id: int, audit_set_id: int, annotator: str, target_ids: Sequence[str]) -> int:
        have = {r[0] for r in self.con.execute("SELECT target_id FROM audit_unblinded WHERE pause_id = ?",
                                               [pause_id]).fetchall()}
        new = [str(t) for t in dict.fromkeys(str(t) for t in target_ids) if t not in have]
        now = _now()
        for t in new:
            self.con.execute("INSERT INTO audit_unblinded VALUES (?, ?, ?, ?, ?)",
                             [pause_id, audit_set_id, annotator, t, now])
        return len(new)

    def end_pause(self, audit_set_id: int, annotator: str) -> int | None:
        """End the open pause of this set by this annotator (the audit resumed); its id or None."""
        self._check_writable()
        pid = self.open_pause(audit_set_id, annotator)
        if pid is not None:
            with self.transaction():
                self.con.execute("UPDATE audit_pauses SET ended_at = ? WHERE pause_id = ?", [_now(), pid])
        return pid

    def pauses(self, audit_set_id: int | None = None) -> list[dict[str, Any]]:
        """Every recorded pause (of one set), oldest first, with the items it showed unblinded."""
        rows = self.con.execute(
            "SELECT pause_id, audit_set_id, annotator, started_at, ended_at, reason FROM audit_pauses "
            + ("WHERE audit_set_id = ? " if audit_set_id is not None else "") + "ORDER BY pause_id",
            [audit_set_id] if audit_set_id is not None else []).fetchall()
        seen: dict[int, list[str]] = {}
        for pid, t in self.con.execute("SELECT pause_id, target_id FROM audit_unblinded ORDER BY seen_at, target_id"
                                       ).fetchall():
            seen.setdefault(int(pid), []).append(str(t))
        return [{"pause_id": int(r[0]), "audit_set_id": int(r[1]), "annotator": r[2], "started_at": r[3],
                 "ended_at": r[4], "reason": r[5] or "", "unblinded": seen.get(int(r[0]), [])} for r in rows]

    def seen_unblinded(self, audit_set_id: int, annotator: str | None = None) -> set[tuple[str, str]]:
        """(annotator, target id) of every item of the set shown unblinded to its annotator during
        a pause of the audit."""
        rows = self.con.execute(
            "SELECT DISTINCT annotator, target_id FROM audit_unblinded WHERE audit_set_id = ?"
            + (" AND annotator = ?" if annotator is not None else ""),
            [audit_set_id] + ([annotator] if annotator is not None else [])).fetchall()
        return {(str(a), str(t)) for a, t in rows}

    # ---- saved filters --------------------------------------------------------------------------------
    def save_filter(self, name: str, spec: dict[str, Any]) -> None:
        self._check_writable()
        with self._lock:
            self.con.execute("INSERT OR REPLACE INTO saved_filters VALUES (?, ?)", [name, json.dumps(spec)])

    def saved_filters(self) -> dict[str, dict[str, Any]]:
        return {n: json.loads(s) for n, s in self.con.execute(
            "SELECT name, spec FROM saved_filters ORDER BY name").fetchall()}
