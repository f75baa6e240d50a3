"""The label log: every human judgement of every method, one append-only table.

An event is (task, target kind, target id, annotator, value, rating, notes, time, audit set,
source). ``task`` names a `LabelScheme` ("spatial.verdict", "metalogic.pair",
"protobias.fidelity", "dyeval.image"); the target is a sample, a pair, a triplet, an image or a
test-tree node. The latest event per (task, target, annotator) counts; an event with no value
and no notes takes an earlier value back (undo). An event is committed before `add`
returns, so an acknowledged label survives a killed process.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..evaluation.base import TARGET_KINDS
from .base import ProjectError, Repo, _arrow, _now

#: target kinds whose ids are sample ids (checked against the samples table)
SAMPLE_TARGETS = ("sample", "image")
MAX_NOTES = 20_000  # characters
_EVENT_COLS = ("event_id", "task", "target_kind", "target_id", "annotator", "value", "rating", "notes",
               "created_at", "audit_set_id", "source")


@dataclass
class LabelEvent:
    event_id: int
    task: str
    target_kind: str
    target_id: str
    annotator: str
    value: str | None
    rating: int | None
    notes: str | None
    created_at: datetime
    audit_set_id: int | None
    source: str | None


def _check_text(what: str, v: Any, limit: int = 500) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ProjectError(f"{what} must be a non-empty text, got {v!r}")
    if len(v) > limit or any(c in v for c in "\x00\n\r"):
        raise ProjectError(f"{what} {v[:40]!r}… holds a line break or NUL, or is longer than {limit} characters")
    return v.strip()


class LabelsRepo(Repo):
    """The append-only label log (see the module docstring).

    The events of single targets that `events` / `events_of` read are kept until the
    next write to the log through this object (`add`, `add_bulk`, an
    insert into the table, a rolled-back transaction) or its close: the pair viewer asks for the
    same samples' events several times a step, and for the next samples' ahead of the step."""

    #: targets whose events are kept between writes (all are forgotten when more are read)
    EVENTS_KEPT = 4096
    #: targets read per query by `events_of`
    _EVENTS_PER_QUERY = 256
    #: (task, target id) → its events, since the last write (None: nothing kept)
    _events_kept: dict[tuple[str, str], list[LabelEvent]] | None = None

    def add(self, task: str, target_kind: str, target_id: str, annotator: str, value: str | None, *,
            rating: int | None = None, notes: str | None = None, audit_set_id: int | None = None,
            source: str = "ui", created_at: datetime | None = None) -> int:
        """Append one event; it is committed (durable) when this returns. Returns its id."""
        self._check_writable()
        task = _check_text("a label task", task, 100)
        if target_kind not in TARGET_KINDS:
            raise ProjectError(f"unknown label target {target_kind!r}; expected one of {', '.join(TARGET_KINDS)}")
        target_id = _check_text("a label target id", target_id)
        annotator = _check_text("an annotator name", annotator, 200)
        if rating is not None and not (1 <= int(rating) <= 4):
            raise ProjectError(f"rating must be 1-4, got {rating}")
        if notes is not None and len(notes) > MAX_NOTES:
            raise ProjectError(f"notes are longer than {MAX_NOTES} characters")
        with self._lock:
            if target_kind in SAMPLE_TARGETS and not self.con.execute(
                    "SELECT 1 FROM samples WHERE sample_id=?", [target_id]).fetchone():
                raise ProjectError(f"unknown sample {target_id!r}")
            self._project._written_back("label_events")
            row = self.con.execute(
                "INSERT INTO label_events (task, target_kind, target_id, annotator, value, rating, notes, created_at, "
                "audit_set_id, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
                [task, target_kind, target_id, annotator, value, rating, notes, created_at or _now(), audit_set_id,
                 source]).fetchone()
            assert row is not None
            return int(row[0])

    def add_bulk(self, task: str, target_kind: str, rows: Mapping[str, Sequence[Any]],
                 source: str = "import") -> int:
        """Append many events of one task in one transaction. ``rows``: columns target_id, annotator,
        value, and optionally rating, notes, created_at, audit_set_id and source (per row; else
        ``source``). Unknown sample targets are an error."""
        self._check_writable()
        n = len(rows["target_id"])
        if n == 0:
            return 0
        if target_kind not in TARGET_KINDS:
            raise ProjectError(f"unknown label target {target_kind!r}; expected one of {', '.join(TARGET_KINDS)}")
        cols = {
            "task": np.array([task] * n, dtype=object),
            "target_kind": np.array([target_kind] * n, dtype=object),
            "target_id": np.array(rows["target_id"], dtype=object),
            "annotator": np.array(rows["annotator"], dtype=object),
            "value": np.array(rows["value"], dtype=object),
            "rating": np.array([None if r is None or (isinstance(r, float) and math.isnan(r)) else int(r)
                                for r in rows.get("rating", [None] * n)], dtype=object),
            "notes": np.array(rows.get("notes", [None] * n), dtype=object),
            "created_at": np.array(rows.get("created_at", [_now()] * n), dtype=object),
            "audit_set_id": np.array(rows.get("audit_set_id", [None] * n), dtype=object),
            "source": np.array(rows.get("source", [source] * n), dtype=object),
        }
        with self.transaction():  # the insert below forgets the kept events (`_written_back`)
            if target_kind in SAMPLE_TARGETS:
                self.con.register("_lab", _arrow({"target_id": cols["target_id"]}))
                try:
                    bad = self.con.execute(
                        "SELECT l.target_id FROM _lab l LEFT JOIN samples s ON s.sample_id = l.target_id "
                        "WHERE s.sample_id IS NULL LIMIT 1").fetchone()
                finally:
                    self.con.unregister("_lab")
                if bad:
                    raise ProjectError(f"label for unknown sample {bad[0]!r}")
            self._insert("label_events", cols)
        return n

    def events(self, *, task: str | None = None, target_id: str | None = None) -> list[LabelEvent]:
        """Events in the order they were written (of one task / one target when given)."""
        if task is not None and target_id is not None:
            return self.events_of(task, [target_id])[str(target_id)]
        conds, params = [], []
        if task is not None:
            conds.append("task = ?")
            params.append(task)
        if target_id is not None:
            conds.append("target_id = ?")
            params.append(target_id)
        q = (f"SELECT {', '.join(_EVENT_COLS)} FROM label_events "
             + ("WHERE " + " AND ".join(conds) + " " if conds else "") + "ORDER BY event_id")
        return [LabelEvent(*r) for r in self.con.execute(q, params).fetchall()]

    def events_of(self, task: str, target_ids: Sequence[str]) -> dict[str, list[LabelEvent]]:
        """The events of each of ``target_ids`` (of one task, in the order they were written): those
        read since the last write are kept (see the class docstring), the others read together."""
        ids = list(dict.fromkeys(str(t) for t in target_ids))
        with self._lock:
            if self._events_kept is None:
                self._events_kept = {}
            kept = self._events_kept
            missing = [t for t in ids if (task, t) not in kept]
            if missing and len(kept) + len(missing) > self.EVENTS_KEPT:
                kept.clear()
            for i in range(0, len(missing), self._EVENTS_PER_QUERY):
                part = missing[i:i + self._EVENTS_PER_QUERY]
                got: dict[str, list[LabelEvent]] = {t: [] for t in part}
                q = (f"SELECT {', '.join(_EVENT_COLS)} FROM label_events WHERE task = ? AND target_id IN "
                     f"({', '.join('?' * len(part))}) ORDER BY event_id")
                for r in self.con.execute(q, [task, *part]).fetchall():
                    got[r[3]].append(LabelEvent(*r))
                for t, events in got.items():
                    kept[(task, t)] = events
            # copies: a caller may change its lists and events without changing what is kept
            return {t: [dataclasses.replace(e) for e in kept[(task, t)]] for t in ids}

    def forget_events(self) -> None:
        """Drop the kept events of targets (the log was written, or may have been)."""
        self._events_kept = None

    def _written_back(self, table: str | None = None) -> None:
        if table in (None, "label_events"):
            self.forget_events()
        super()._written_back(table)

    def latest(self, task: str, annotator: str | None = None) -> list[LabelEvent]:
        """The latest event per (target, annotator) of a task, in event order."""
        q = (f"SELECT {', '.join(_EVENT_COLS)} FROM ("
             " SELECT *, row_number() OVER (PARTITION BY target_id, annotator ORDER BY event_id DESC) rn "
             " FROM label_events WHERE task = ?" + (" AND annotator = ?" if annotator else "") + ") WHERE rn = 1 "
             "ORDER BY event_id")
        params: list[Any] = [task] + ([annotator] if annotator else [])
        return [LabelEvent(*r) for r in self.con.execute(q, params).fetchall()]

    def pass_values(self, task: str, annotator: str, audit_set_id: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per target the annotator labelled in a pass (`workstation.evaluation.judging`): its id,
        whether it is the re-check pass, and whether the pass's label carries a value. Outside an
        audit set (``audit_set_id`` None) every first-pass event counts; in one, only its events,
        a compensating ``undo-restore`` event reading as no value."""
        from ..evaluation.judging import RECHECK, RESTORE

        restore = "TRUE" if audit_set_id is not None else "FALSE"
        q = ("SELECT target_id, coalesce(source, '') = ? AS rc, "
             f"arg_max_null(CASE WHEN {restore} AND source = ? THEN NULL ELSE value END, event_id) IS NOT NULL "
             "FROM label_events WHERE task = ? AND annotator = ?"
             + (" AND audit_set_id = ?" if audit_set_id is not None else "") + " GROUP BY ALL")
        params: list[Any] = [RECHECK, RESTORE, task, annotator] + ([audit_set_id] if audit_set_id is not None else [])
        t = self.con.execute(q, params).fetchall()
        if not t:
            return np.zeros(0, dtype=object), np.zeros(0, bool), np.zeros(0, bool)
        ids, rc, has = zip(*t)
        return np.array(ids, dtype=object), np.array(rc, bool), np.array(has, bool)

    def pass_latest(self, task: str, audit_set_id: int | None = None) -> list[tuple[str, str, bool, str | None]]:
        """(target, annotator, re-check pass, value) of every annotator's latest label per pass
        of a task (in one audit set when given; ``undo-restore`` events read as no value)."""
        from ..evaluation.judging import RECHECK, RESTORE

        where = " AND audit_set_id = ?" if audit_set_id is not None else ""
        return [(str(t), str(a), bool(rc), v) for t, a, rc, v in self.con.execute(
            "SELECT target_id, annotator, coalesce(source, '') = ? AS rc, "
            "arg_max_null(CASE WHEN source = ? THEN NULL ELSE value END, event_id) "
            f"FROM label_events WHERE task = ?{where} GROUP BY ALL",
            [RECHECK, RESTORE, task] + ([audit_set_id] if audit_set_id is not None else [])).fetchall()]

    def standing(self, task: str | None = None, annotator: str | None = None) -> list[LabelEvent]:
        """The labels that stand: the latest event per (task, target, annotator) when it carries a
        value (an undone label, its latest event without a value, does not stand), in event order;
        of one task and / or one annotator when given."""
        conds, params = ["1 = 1"], []
        if task is not None:
            conds.append("task = ?")
            params.append(task)
        if annotator:
            conds.append("annotator = ?")
            params.append(annotator)
        q = (f"SELECT {', '.join(_EVENT_COLS)} FROM ("
             " SELECT *, row_number() OVER (PARTITION BY task, target_id, annotator ORDER BY event_id DESC) rn "
             f" FROM label_events WHERE {' AND '.join(conds)}) WHERE rn = 1 AND value IS NOT NULL ORDER BY event_id")
        return [LabelEvent(*r) for r in self.con.execute(q, params).fetchall()]

    def table(self, task: str) -> dict[str, np.ndarray]:
        """Every event of a task as numpy columns (for vectorised agreement and metrics)."""
        t = self.con.execute(f"SELECT {', '.join(_EVENT_COLS)} FROM label_events WHERE task = ? ORDER BY event_id",
                             [task]).to_arrow_table()
        return {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}

    def annotators(self, task: str | None = None) -> list[str]:
        q = "SELECT DISTINCT annotator FROM label_events" + (" WHERE task = ?" if task else "") + " ORDER BY annotator"
        return [r[0] for r in self.con.execute(q, [task] if task else []).fetchall()]

    def tasks(self) -> dict[str, int]:
        """Number of events per task."""
        return {t: int(n) for t, n in self.con.execute(
            "SELECT task, count(*) FROM label_events GROUP BY task ORDER BY task").fetchall()}
