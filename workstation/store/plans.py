"""Audit plans kept in the project: the goal, the design, the frozen table of items the plan was
made on, and the units it drew, in order (`workstation.evaluation.plan` is what uses them).

A plan owns an audit set of its task (blind unless asked otherwise): every unit the plan draws
is appended to the set's items, re-checks marked, so the labelling queue of audit sets serves a
plan's targets as it serves any other audit set's. Draws are written in one transaction with
their audit items; the labels themselves live in the label log, as every label does.

The tables are a component of their own (``audit_plans``, `ProjectBase.ensure_schema`), made the
first time a plan is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..util.jsonsafe import dumps
from .audit import AuditRepo
from .base import ProjectBase, ProjectError, Repo, _now

COMPONENT = "audit_plans"

#: the plans' tables, one list of statements per version
MIGRATIONS: list[list[Any]] = [[
    """CREATE TABLE audit_plans (
        plan_id INTEGER PRIMARY KEY, name VARCHAR, method VARCHAR NOT NULL, task VARCHAR NOT NULL,
        goal VARCHAR NOT NULL, design VARCHAR NOT NULL, meta VARCHAR, audit_set_id INTEGER,
        created_at TIMESTAMP)""",
    """CREATE TABLE audit_plan_items (
        plan_id INTEGER NOT NULL, row_no INTEGER NOT NULL, item_id VARCHAR NOT NULL, cluster VARCHAR,
        outcome TINYINT, confidence DOUBLE, targets VARCHAR[])""",
    """CREATE TABLE audit_plan_draws (
        plan_id INTEGER NOT NULL, seq INTEGER NOT NULL, unit_id VARCHAR NOT NULL, is_recheck BOOLEAN,
        created_at TIMESTAMP)""",
    "CREATE INDEX audit_plan_items_plan ON audit_plan_items(plan_id, row_no)",
]]


class PlansRepo(Repo):
    """Audit plans (see the module docstring); each plan's audit set is kept by ``audit``."""

    def __init__(self, project: ProjectBase, audit: AuditRepo) -> None:
        super().__init__(project)
        self._audit = audit

    def _plans_ready(self) -> bool:
        return self.component_version(COMPONENT) >= 1

    def create(self, name: str, method: str, task: str, goal: Mapping[str, Any],
               design: Mapping[str, Any], meta: Mapping[str, Any], items: Mapping[str, Any], *,
               blind: bool = True, note: str = "") -> tuple[int, int]:
        """Store a plan, its frozen items (columns item_id, cluster, outcome, confidence,
        targets) and its (empty) audit set, in one transaction; returns (plan id, audit set id).
        ``note``: what the set's queue says of itself (what its blindness cannot hide)."""
        self._check_writable()
        self.ensure_schema(COMPONENT, MIGRATIONS)
        n = len(items["item_id"])
        for col in ("cluster", "outcome", "confidence", "targets"):
            if len(items[col]) != n:
                raise ProjectError(f"audit plan {name!r}: {col} has {len(items[col])} entries for {n} items")
        with self.transaction():
            params = {"plan": dict(goal), "design": dict(design)} | ({"note": note} if note else {})
            aid = self._audit.create_set(name, task, [], params, blind=blind)
            row = self.con.execute("SELECT coalesce(max(plan_id), 0) + 1 FROM audit_plans").fetchone()
            assert row is not None
            pid = int(row[0])
            self.con.execute(
                "INSERT INTO audit_plans (plan_id, name, method, task, goal, design, meta, audit_set_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [pid, name, method, task, dumps(dict(goal)), dumps(dict(design)), dumps(dict(meta)), aid, _now()])
            targets = np.empty(n, dtype=object)
            targets[:] = [list(t) for t in items["targets"]]
            self.insert_columns("audit_plan_items", {
                "plan_id": np.full(n, pid, np.int32), "row_no": np.arange(n, dtype=np.int32),
                "item_id": np.asarray(items["item_id"], dtype=object),
                "cluster": np.asarray(items["cluster"], dtype=object),
                "outcome": np.asarray(items["outcome"], np.int8),
                "confidence": np.asarray(items["confidence"], np.float64), "targets": targets,
            })
        return pid, aid

    def all(self, method: str | None = None) -> list[dict[str, Any]]:
        """Every stored plan (of one method when given), oldest first. What the database holds is
        read as from outside: a goal, design or meta that is not a JSON object comes back as None
        with ``problem`` naming it (`workstation.evaluation.plan.load_plan` refuses such a plan),
        never as an exception."""
        if not self._plans_ready():
            return []
        rows = self.con.execute(
            "SELECT p.plan_id, p.name, p.method, p.task, p.goal, p.design, p.meta, p.audit_set_id, p.created_at, "
            "(SELECT count(*) FROM audit_plan_items i WHERE i.plan_id = p.plan_id), "
            "(SELECT count(*) FROM audit_plan_draws d WHERE d.plan_id = p.plan_id AND NOT d.is_recheck) "
            "FROM audit_plans p " + ("WHERE p.method = ? " if method else "") + "ORDER BY p.plan_id",
            [method] if method else []).fetchall()
        out = []
        for r in rows:
            rec: dict[str, Any] = {"plan_id": int(r[0]), "name": r[1], "method": r[2], "task": r[3],
                                   "audit_set_id": r[7], "created_at": r[8], "items": int(r[9]), "draws": int(r[10]),
                                   "problem": None}
            for key, text in (("goal", r[4]), ("design", r[5]), ("meta", r[6])):
                value, problem = _stored_object(text, optional=key == "meta")
                rec[key] = value
                if problem is not None and rec["problem"] is None:
                    rec["problem"] = f"its {key} is {problem}"
            out.append(rec)
        return out

    def get(self, plan_id: int) -> dict[str, Any]:
        for p in self.all():
            if p["plan_id"] == int(plan_id):
                return p
        raise ProjectError(f"no audit plan {plan_id} in the project")

    def items(self, plan_id: int) -> dict[str, Any]:
        """The plan's frozen items as columns, in their order. An empty cell (the database's
        NULL, where only the project writes values) is a `ProjectError` naming the column and
        the item."""
        if not self._plans_ready():
            raise ProjectError(f"no audit plan {plan_id} in the project")
        t = self.con.execute(
            "SELECT item_id, cluster, outcome, confidence, targets FROM audit_plan_items WHERE plan_id = ? "
            "ORDER BY row_no", [int(plan_id)]).to_arrow_table()
        for name in t.column_names:
            col = t.column(name)
            if col.null_count:
                first = next(i for i, v in enumerate(col.is_null().to_pylist()) if v)
                raise ProjectError(f"item {first + 1} of its frozen items has no {name}")
        cols = {k: t.column(k).to_pylist() for k in t.column_names}
        return {"item_id": cols["item_id"], "cluster": cols["cluster"],
                "outcome": np.asarray(cols["outcome"], np.int64), "confidence": np.asarray(cols["confidence"], np.float64),
                "targets": [tuple(x) for x in cols["targets"]]}

    def add_draws(self, plan_id: int, draws: Sequence[tuple[Any, ...]]) -> None:
        """Append drawn units (unit id, is re-check, its label targets, and optionally where it was
        drawn from: a mapping of stratum, stratum_size, inclusion) to the plan and their targets
        to its audit set, in one transaction."""
        self._check_writable()
        plan = self.get(plan_id)
        with self.transaction():
            row = self.con.execute("SELECT coalesce(max(seq), -1) + 1 FROM audit_plan_draws WHERE plan_id = ?",
                                   [int(plan_id)]).fetchone()
            assert row is not None
            start = int(row[0])
            n = len(draws)
            self.insert_columns("audit_plan_draws", {
                "plan_id": np.full(n, int(plan_id), np.int32), "seq": np.arange(start, start + n, dtype=np.int32),
                "unit_id": np.array([str(d[0]) for d in draws], dtype=object),
                "is_recheck": np.array([bool(d[1]) for d in draws], dtype=bool),
                "created_at": np.array([_now()] * n, dtype=object),
            })
            if plan["audit_set_id"] is not None:
                items = [(str(t), bool(d[1])) for d in draws for t in d[2]]
                prov: dict[str, list[Any]] | None = None
                if all(len(d) > 3 and d[3] for d in draws):
                    prov = {"inclusion": [], "stratum": [], "stratum_size": [], "unit_id": []}
                    for d in draws:
                        for _t in d[2]:
                            for k in ("inclusion", "stratum", "stratum_size"):
                                prov[k].append(d[3].get(k))
                            prov["unit_id"].append(str(d[0]))
                self._audit.append_items(int(plan["audit_set_id"]), items, prov)

    def audit_set_task(self, audit_set_id: int) -> str | None:
        """The task of an audit set (a plan's), None when the project holds no such set."""
        row = self.con.execute("SELECT task FROM audit_sets WHERE audit_set_id = ?", [int(audit_set_id)]).fetchone()
        return None if row is None else str(row[0] or "")

    def draws(self, plan_id: int) -> list[tuple[str, bool]]:
        """(unit id, is re-check) of every draw, in order (an empty cell is a `ProjectError`)."""
        if not self._plans_ready():
            return []
        out = []
        for k, (u, r) in enumerate(self.con.execute(
                "SELECT unit_id, is_recheck FROM audit_plan_draws WHERE plan_id = ? ORDER BY seq",
                [int(plan_id)]).fetchall()):
            if u is None or r is None:
                raise ProjectError(f"draw {k + 1} of the plan has no {'unit' if u is None else 're-check flag'}")
            out.append((str(u), bool(r)))
        return out


def _stored_object(text: Any, optional: bool = False) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON object kept in a column, read strictly; (None, what is wrong) otherwise."""
    from ..util.jsonsafe import JSONInputError, loads_strict

    if text is None or text == "":
        return ({}, None) if optional else (None, "missing")
    try:
        value = loads_strict(str(text))
    except JSONInputError as e:
        return None, f"not valid JSON ({e.message})"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    return value, None
