"""Where audit plans get their tables: one adapter per method, registered by name and imported
only when used. Each fills the generic `workstation.evaluation.plan.AuditTable` — items, the
automated outcome with its confidence, the cluster (prompt) and the human label — from a
project, so one core (`workstation.evaluation.plan`) plans and estimates for every method:

* ``spatial``   — the checker's PASS / FAIL / UNDECIDABLE per image against human P/F/U;
* ``metalogic`` — the comparison's MISALIGNED / ALIGNED / UNDECIDABLE per image pair against the
  human pair judgement;
* ``protobias`` — a metric's preference (I_corr over I_adv) per triplet against the humans'
  ratings (option ``metric``);
* ``dyeval``    — the CLIPScore pre-mark per image of a test tree against human PASS / FAIL
  (options ``tree_id``, ``threshold``).

`create_plan` makes and stores a plan, `open_plan` reads one back with the project's current
labels, `refresh` brings an open plan's labels up to date, `next_targets` draws and stores;
`report_section` is the report's "Audit plans" section.
"""

from __future__ import annotations

import csv
import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..evaluation.base import ReportSection
from ..evaluation.plan import AuditPlan, AuditTable, Goal, PlanTarget, load_plan, save_draws, save_plan
from ..registry import Registry
from ..types import WorkstationError
from ..util.csvsafe import escape_row

#: the methods with an audit source (``workstation.methods.<name>.audit_source``) and what its
#: table sets against the human labels
AUDITED = {"spatial": "the checker's verdicts against human P/F/U",
           "metalogic": "the comparison's outcomes against human pair judgements",
           "protobias": "a metric's preference against the humans' ratings",
           "dyeval": "CLIPScore pre-marks against human PASS / FAIL"}

#: each method's audit table of a project (``audit_table``), and its current human labels of a
#: (frozen) table's items, read from the label log (``human_labels``)
SOURCES: Registry[AuditTable] = Registry("audit source")
HUMANS: Registry[np.ndarray] = Registry("audit labels")
for _name, _what in AUDITED.items():
    SOURCES.register(_name, f"workstation.methods.{_name}.audit_source:audit_table", description=_what)
    HUMANS.register(_name, f"workstation.methods.{_name}.audit_source:human_labels")


def source_names() -> list[str]:
    return SOURCES.names()


def available(project: Any) -> list[str]:
    """The methods with data in this project (their tables may still need an evaluation)."""
    from . import get_method

    out = []
    for name in source_names():
        try:
            if get_method(name).has_data(project):
                out.append(name)
        except WorkstationError:
            continue
    return out


def audit_table(project: Any, method: str, **options: Any) -> AuditTable:
    """The method's audit table of the project now (options: the adapter's, e.g. ``metric``)."""
    return SOURCES.get(method)(project, **options)


def current_human(project: Any, method: str) -> Callable[[AuditTable], np.ndarray]:
    """A function giving the project's current human codes for a (frozen) table's items."""
    def human(frozen: AuditTable) -> np.ndarray:
        return HUMANS.get(method)(project, frozen)
    return human


def create_plan(project: Any, method: str, goal: Goal, *, name: str = "", seed: int = 0, blind: bool = True,
                recheck_fraction: float = 0.1, bins: int | None = None, **options: Any) -> AuditPlan:
    """Make a plan on the method's table now, and store it with its audit set."""
    table = audit_table(project, method, **options)
    table.source = dict(table.source, options={k: v for k, v in options.items()})
    kw: dict[str, Any] = {} if bins is None else {"bins": bins}
    plan = AuditPlan(table, goal, seed=seed, recheck_fraction=recheck_fraction, name=name, **kw)
    save_plan(project, plan, name=name, blind=blind)
    return plan


def open_plan(project: Any, plan_id: int) -> AuditPlan:
    """A stored plan with the project's current labels of its items."""
    rec = project.plans.get(plan_id)
    return load_plan(project, plan_id, current_human(project, rec["method"]))


def refresh(project: Any, plan: AuditPlan) -> None:
    """Bring an open plan's labels up to date with the project's label log."""
    plan.update_labels(current_human(project, plan.table.method)(plan.table))


def next_targets(project: Any, plan: AuditPlan, k: int = 1) -> list[PlanTarget]:
    """The next ``k`` targets to label (pending first); new draws are stored before they are
    returned, so closing the project keeps the queue."""
    now, new = plan.next_targets(k)
    if new:
        if project.read_only:
            raise WorkstationError("this project is open read-only: the plan cannot draw new targets")
        save_draws(project, plan, new)
    return now


def report_section(project: Any, out_dir: Path, methods: Sequence[str] | None = None) -> ReportSection | None:
    """The report's "Audit plans" section: every stored plan (of ``methods`` when given) with
    each of its estimates — value, interval, the estimator, what it assumes, the labels it used —
    as a table (``estimates.csv``) and HTML. None when the project has no plan."""
    plans = [p for p in project.plans.all() if methods is None or p["method"] in methods]
    if not plans:
        return None
    rows: list[dict[str, Any]] = []
    for rec in plans:
        plan = open_plan(project, int(rec["plan_id"]))
        st = plan.status()
        for e in (st.estimate,) + st.alternatives:
            rows.append({
                "plan_id": int(rec["plan_id"]), "plan": str(rec["name"] or ""), "method": rec["method"],
                "goal": st.goal_text, "reached": bool(st.reached), "estimator": e.title,
                "estimate": e.value, "low": e.low, "high": e.high, "half_width": e.half_width,
                "confidence": e.confidence, "labels": e.labels, "units": e.units, "items_in_scope": st.items,
                "strata": st.strata, "assumes": e.assumes, "note": e.note,
                "source": ", ".join(f"{k}={v}" for k, v in plan.table.source.items() if k != "options"),
            })
    out_dir.mkdir(parents=True, exist_ok=True)
    cols = list(rows[0])
    with open(out_dir / "estimates.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow(escape_row([r[c] for c in cols]))

    def pct(x: float) -> str:
        return "—" if not np.isfinite(x) else f"{100 * x:.1f} %"

    body = ["<table><tr><th>plan</th><th>goal</th><th>estimator</th><th>estimate</th><th>interval</th>"
            "<th>labels</th><th>reached</th></tr>"]
    for r in rows:
        body.append(
            f"<tr><td>#{r['plan_id']} {html.escape(r['plan'])}</td><td>{html.escape(r['goal'])}</td>"
            f"<td title='{html.escape(r['assumes'])}'>{html.escape(r['estimator'])}</td><td>{pct(r['estimate'])}</td>"
            f"<td>[{pct(r['low'])}, {pct(r['high'])}] ({100 * r['confidence']:g} %)</td>"
            f"<td>{r['labels']} of {r['items_in_scope']}</td><td>{'yes' if r['reached'] else 'no'}</td></tr>")
    body.append("</table><p class='src'>Each estimate's assumptions are in <code>audit_plans/estimates.csv</code> "
                "(hover an estimator for them); see docs/audit-plans.md.</p>")
    return ReportSection("audit_plans", "Audit plans", html="".join(body), tables={"estimates": rows},
                         meta={"plans": len(plans)})
