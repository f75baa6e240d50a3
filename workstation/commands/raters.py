"""`raters`: who labelled a task, how fast, and how well the raters agree.

    python main.py raters --project DIR [--task TASK|METHOD|all] [--session-gap SECONDS]
                          [--boot N] [--json FILE [--overwrite]]

Per label task (every task with labels by default): the agreement among all its raters —
Krippendorff's α, Fleiss' κ and Gwet's AC1 (ratings also ordinal and interval α and AC2) with
their 95 % intervals over the prompts (docs/statistics.md) — and one row per rater: items
labelled, median seconds per item within a session (a pause longer than --session-gap, default
600 s, ends a session), a speeder flag (a median below a third of the other raters'), agreement
with the other raters (percent and κ over every pair of an item both labelled; the group's α
without them), agreement with the method's automatic judge where its audit table gives an
outcome in the task's values, and drift (agreement with the others in the first third of the
rater's labels against the last third). The labels are those of the task's label selection
(`labels select`: whose, which audit sets, re-checks); the prompt of a target and the judge's
outcome come from the method's audit table (without one each target is its own unit). --json
FILE writes every figure with its interval.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..command_base import add_command, add_output_arg, add_project_arg, reading_project

TITLES = {"alpha_nominal": "Krippendorff's α (nominal)", "alpha_ordinal": "Krippendorff's α (ordinal)",
          "alpha_interval": "Krippendorff's α (interval)", "fleiss_kappa": "Fleiss' κ", "ac1": "Gwet's AC1",
          "ac2_quadratic": "Gwet's AC2 (quadratic weights)", "ac2_linear": "Gwet's AC2 (linear weights)",
          "ac2_ordinal": "Gwet's AC2 (ordinal weights)"}


def register(sub: Any) -> None:
    p = add_command(sub, "raters", "the rater monitor: speed, agreement with peers and the judge, drift",
                    run, doc=__doc__)
    add_project_arg(p)
    p.add_argument("--task", default="all", metavar="TASK",
                   help="a label task, a method (its tasks) or all (default: every task with labels)")
    p.add_argument("--session-gap", type=float, default=None, metavar="SECONDS",
                   help="a pause longer than this ends a labelling session (default 600)")
    p.add_argument("--boot", type=int, default=None, metavar="N",
                   help="bootstrap resamples of every interval (default 2000; 0: no intervals)")
    add_output_arg(p, "--json", "FILE", "also write every figure as JSON", what="rater monitor file")


def task_inputs(project: Any, task: str) -> tuple[dict[str, str], dict[str, str | None] | None, str]:
    """(target → its prompt, target → the automatic judge's outcome or None, where they come from)
    from the method's audit table; empty and None where the method has none for the task or the
    table cannot be made (the reason is the third part)."""
    from ..methods.audit_sources import audit_table, source_of
    from ..types import WorkstationError
    from .labels import label_tasks

    method = label_tasks().get(task)
    if method is None or source_of(method) is None:
        return {}, None, "no audit table: each target is its own unit"
    try:
        table = audit_table(project, method)
    except WorkstationError as e:
        return {}, None, f"no audit table ({str(e)[:120]}): each target is its own unit"
    if table.task != task:
        return {}, None, "the method's audit table is of another task: each target is its own unit"
    from ..methods import get_method

    scheme = next(s for s in get_method(method).label_schemes if s.task == task)
    judged = table.positive in scheme.values and table.negative in scheme.values
    unit: dict[str, str] = {}
    judge: dict[str, str | None] = {}
    targets = table.targets if table.targets is not None else [(t,) for t in table.item_id.tolist()]
    for item, cluster, outcome, tgts in zip(table.item_id.tolist(), table.cluster.tolist(), table.outcome.tolist(),
                                            targets):
        for t in (tgts if isinstance(tgts, (tuple, list)) else (tgts,)) or (item,):
            unit[str(t)] = str(cluster)
            if judged:
                judge[str(t)] = table.positive if outcome == 1 else table.negative if outcome == 0 else \
                    (scheme.abstain or None)
    where = f"units: {table.cluster_title}s of the audit table"
    if judged:
        where += f"; judge: {table.outcome_title}"
    return unit, (judge if judged else None), where


def _est(e: Any, kind: str = "f", digits: int = 3) -> str:
    if not e.defined:
        return "—"
    return e.text(kind, digits)


def _pct(e: Any) -> str:
    return "—" if not e.defined else f"{100 * e.value:.1f}%"


def lines_of(task: str, mon: Any, where: str, line: str) -> list[str]:
    """The lines `raters` prints for one task."""
    out = [f"{task}: {len(mon.rows)} rater{'s' if len(mon.rows) != 1 else ''}, {mon.items} items, "
           f"{mon.rated_twice} rated by two or more ({line})", f"  {where}"]
    for name, e in mon.agreement.items():
        unit = f", {e.units} units" if e.defined else ""
        out.append(f"  {TITLES.get(name, name):<32} {_est(e)}" + (f"  (n {e.n}{unit})" if e.defined else ""))
    head = (f"  {'rater':<16} {'items':>6} {'s/item':>7} {'speed':<7} {'peers':>7} {'peers κ':<24} "
            f"{'α without':>9} {'judge':>7} {'gold':>7} {'drift':>14}")
    out.append(head)
    for r in mon.rows:
        med = "—" if not math.isfinite(r.median_seconds) else f"{r.median_seconds:.1f}"
        drift = "—" if not (r.drift_peer_first.defined and r.drift_peer_last.defined) else \
            f"{100 * r.drift_peer_first.value:.0f}→{100 * r.drift_peer_last.value:.0f}%"
        alpha = "—" if not math.isfinite(r.alpha_without) else f"{r.alpha_without:.3f}"
        out.append(f"  {r.annotator[:16]:<16} {r.items:>6} {med:>7} {'SPEEDER' if r.speeder else '':<7} "
                   f"{_pct(r.peer_percent):>7} {_est(r.peer_kappa):<24} {alpha:>9} {_pct(r.judge_percent):>7} "
                   f"{_pct(r.gold):>7} {drift:>14}")
    if math.isfinite(mon.alpha_all):
        out.append(f"  α of every rater: {mon.alpha_all:.3f}; speeder: median seconds per item below "
                   f"{mon.speeder_fraction:.2f} of the other raters' median (sessions end after "
                   f"{mon.session_gap:g} s)")
    return out


def run(args: argparse.Namespace) -> int:
    """Print the rater monitor of the project's label tasks (module docstring)."""
    from ..evaluation.intervals import N_BOOT
    from ..evaluation.rater_monitor import SESSION_GAP_S, rater_monitor
    from ..evaluation.rater_agreement import provenance
    from ..evaluation.selection import load_selection, set_names
    from ..methods import get_method
    from ..types import WorkstationError
    from ..util.jsonsafe import dumps
    from ..util.output import write_output_text
    from .labels import label_tasks, resolve_tasks

    gap = SESSION_GAP_S if args.session_gap is None else float(args.session_gap)
    if not (math.isfinite(gap) and gap > 0):
        raise WorkstationError(f"--session-gap must be a positive number of seconds, got {args.session_gap}")
    boot = N_BOOT if args.boot is None else int(args.boot)
    if boot < 0:
        raise WorkstationError(f"--boot must be 0 or more, got {boot}")
    tasks = resolve_tasks(args.task)
    out: list[dict[str, Any]] = []
    with reading_project(args.project) as project:
        have = project.labels.tasks()
        if args.task == "all":
            tasks = [t for t in tasks if have.get(t)]
        if not tasks:
            print("no labels in this project yet")
        by_task = label_tasks()
        for i, task in enumerate(tasks):
            scheme = next(s for s in get_method(by_task[task]).label_schemes if s.task == task)
            sel = load_selection(project, task)
            unit, judge, where = task_inputs(project, task)
            mon = rater_monitor(project.labels.table(task), scheme.values, task=task, ordinal=scheme.ordinal,
                                selection=sel, unit_of=unit or None, judge=judge, session_gap=gap, n_boot=boot)
            line = sel.describe(sets=set_names(project, task))
            if i:
                print()
            print("\n".join(lines_of(task, mon, where, line)))
            out.append({**mon.to_dict(), "selection": sel.to_dict(), "inputs": where,
                        "intervals": provenance("prompt" if unit else "target", n_boot=boot)})
    if args.json is not None:
        write_output_text(args.json, dumps(out, indent=1) + "\n", "rater monitor file", overwrite=args.overwrite)
    return 0
