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
from collections import Counter
from dataclasses import dataclass
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
    from .tasks import label_tasks

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


@dataclass(frozen=True)
class TaskMonitor:
    """One task's monitor as the command, the window's rater panel and the report show it."""

    task: str
    scheme: Any  # the task's `LabelScheme`
    monitor: Any  # `workstation.evaluation.rater_monitor.Monitor`
    where: str  # where the units and the judge come from
    line: str  # the label selection's line
    selection: Any  # the kept `LabelSelection`
    protocol: Any  # `workstation.evaluation.protocol.RaterProtocol`
    raters_per_item: dict[int, int]  # k → targets with k raters' standing labels
    n_boot: int

    def to_dict(self) -> dict[str, Any]:
        from ..evaluation.rater_agreement import provenance

        return {**self.monitor.to_dict(), "selection": self.selection.to_dict(), "inputs": self.where,
                "raters_per_item": {str(k): v for k, v in sorted(self.raters_per_item.items())},
                "intervals": provenance("prompt" if "units: " in self.where else "target", n_boot=self.n_boot)}


def task_monitor(project: Any, task: str, *, session_gap: float | None = None, n_boot: int | None = None) -> TaskMonitor:
    """The rater monitor of one label task of an open project: its kept label selection, the
    prompts and the judge from the method's audit table, gold answers from the raters' protocol
    (`workstation.evaluation.protocol.rater_protocol`; the gold items seeded into audit sets where
    the project records them)."""
    from ..evaluation.intervals import N_BOOT
    from ..evaluation.protocol import rater_protocol
    from ..evaluation.rater_monitor import SESSION_GAP_S, rater_monitor, standing_labels
    from ..evaluation.selection import load_selection, set_names
    from ..methods import get_method
    from .tasks import label_tasks

    gap = SESSION_GAP_S if session_gap is None else float(session_gap)
    boot = N_BOOT if n_boot is None else int(n_boot)
    scheme = next(s for s in get_method(label_tasks()[task]).label_schemes if s.task == task)
    sel = load_selection(project, task)
    events = project.labels.table(task)
    unit, judge, where = task_inputs(project, task)
    st = standing_labels(events, scheme.values, sel)
    per_target = Counter(st.target.tolist())
    proto = rater_protocol(project, task, sorted(set(st.annotator.tolist())))
    gold = proto.gold
    if gold is not None and hasattr(project.audit, "gold_items"):
        seeded = {str(t) for _aid, t in project.audit.gold_items()}
        gold = {t: v for t, v in gold.items() if t in seeded}
    mon = rater_monitor(events, scheme.values, task=task, ordinal=scheme.ordinal, selection=sel,
                        unit_of=unit or None, judge=judge, gold=gold, session_gap=gap, n_boot=boot)
    return TaskMonitor(task, scheme, mon, where, sel.describe(sets=set_names(project, task)), sel, proto,
                       dict(Counter(per_target.values())), boot)


def monitor_tasks(project: Any, task: str = "all") -> list[str]:
    """The label tasks ``task`` names (a task, a method or all) that hold labels in the project
    (all of them for a named task)."""
    from .tasks import resolve_tasks

    tasks = resolve_tasks(task)
    if task == "all":
        have = project.labels.tasks()
        tasks = [t for t in tasks if have.get(t)]
    return tasks


def run(args: argparse.Namespace) -> int:
    """Print the rater monitor of the project's label tasks (module docstring)."""
    from ..evaluation.intervals import N_BOOT
    from ..evaluation.rater_monitor import SESSION_GAP_S
    from ..types import WorkstationError
    from ..util.jsonsafe import dumps
    from ..util.output import write_output_text

    gap = SESSION_GAP_S if args.session_gap is None else float(args.session_gap)
    if not (math.isfinite(gap) and gap > 0):
        raise WorkstationError(f"--session-gap must be a positive number of seconds, got {args.session_gap}")
    boot = N_BOOT if args.boot is None else int(args.boot)
    if boot < 0:
        raise WorkstationError(f"--boot must be 0 or more, got {boot}")
    out: list[dict[str, Any]] = []
    with reading_project(args.project) as project:
        tasks = monitor_tasks(project, args.task)
        if not tasks:
            print("no labels in this project yet")
        for i, task in enumerate(tasks):
            tm = task_monitor(project, task, session_gap=gap, n_boot=boot)
            if i:
                print()
            print("\n".join(lines_of(task, tm.monitor, tm.where, tm.line)))
            out.append(tm.to_dict())
    if args.json is not None:
        write_output_text(args.json, dumps(out, indent=1) + "\n", "rater monitor file", overwrite=args.overwrite)
    return 0


# ---------------------------------------------------------------------------------------------
# The monitor's tables, as the window's rater panel and the report show them
# ---------------------------------------------------------------------------------------------

#: the rater table's columns (key, heading)
RATER_COLUMNS = (("rater", "rater"), ("items", "items"), ("seconds", "s/item"), ("speed", "speed"),
                 ("peers", "peers (%)"), ("peers_kappa", "peers κ"), ("alpha_without", "α without"),
                 ("judge", "judge (%)"), ("gold", "gold (%)"), ("drift", "drift (peers)"),
                 ("qualification", "qualification"))


_WORDS = ("rater", "speed", "drift", "qualification")


def _pct_ci(e: Any) -> str:
    if not e.defined:
        return "—"
    ci = f" [{100 * e.lo:.1f}, {100 * e.hi:.1f}]" if e.has_interval else ""
    return f"{100 * e.value:.1f}%{ci}"


def rater_rows(tm: TaskMonitor) -> list[dict[str, str]]:
    """One row of display texts per rater (`RATER_COLUMNS`): the figures `raters --json` writes."""
    out = []
    proto = tm.protocol
    for r in tm.monitor.rows:
        drift = "—" if not (r.drift_peer_first.defined and r.drift_peer_last.defined) else \
            f"{100 * r.drift_peer_first.value:.0f}% → {100 * r.drift_peer_last.value:.0f}%"
        if proto.unqualified is None:
            qual = "—"
        else:
            qual = f"left out: {proto.unqualified[r.annotator]}" if r.annotator in proto.unqualified else \
                ("adjudicator" if r.annotator in (proto.adjudicators or ()) else "qualified")
        out.append({"rater": r.annotator, "items": str(r.items),
                    "seconds": "—" if not math.isfinite(r.median_seconds) else f"{r.median_seconds:.1f}",
                    "speed": "SPEEDER" if r.speeder else "",
                    "peers": _pct_ci(r.peer_percent), "peers_kappa": _est(r.peer_kappa),
                    "alpha_without": "—" if not math.isfinite(r.alpha_without) else f"{r.alpha_without:.3f}",
                    "judge": _pct_ci(r.judge_percent), "gold": _pct_ci(r.gold), "drift": drift,
                    "qualification": qual})
    return out


def agreement_rows(tm: TaskMonitor) -> list[dict[str, str]]:
    """The task's many-rater agreement: statistic, value with its 95 % interval over the units, n."""
    return [{"statistic": TITLES.get(name, name), "value": _est(e), "n": str(e.n) if e.defined else "—",
             "units": str(e.units) if e.defined else "—"} for name, e in tm.monitor.agreement.items()]


def overlap_text(tm: TaskMonitor) -> str:
    """"3 raters on 24 items" (one clause per number of raters per item)."""
    if not tm.raters_per_item:
        return "—"
    return ", ".join(f"{k} rater{'s' if k != 1 else ''} on {n} item{'s' if n != 1 else ''}"
                     for k, n in sorted(tm.raters_per_item.items(), reverse=True))


def scale_text(scheme: Any) -> str:
    """The scale with its keys and its "unable to answer" option."""
    titles = scheme.titles or scheme.values
    parts = [f"{t} ({k})" if t == v else f"{t} = {v} ({k})" for v, t, k in zip(scheme.values, titles, scheme.keys)]
    text = ", ".join(parts) + (" — ordinal" if scheme.ordinal else "")
    return text + (f"; unable to answer: {scheme.abstain}" if scheme.abstain else "; no “unable to answer” option")


def protocol_card(project: Any, tm: TaskMonitor) -> list[tuple[str, str]]:
    """The protocol card of a task (`workstation.evaluation.protocol`): (field, text) rows. Fields
    the raters' protocol records read "—" where the project's workstation records none."""
    from ..evaluation.protocol import load_protocol

    text = load_protocol(project, tm.task)
    proto = tm.protocol
    mon = tm.monitor
    agree = "; ".join(f"{TITLES.get(n, n)} {_est(e)}" for n, e in mon.agreement.items() if e.defined) or "—"
    raters = ", ".join(r.annotator for r in mon.rows) or "—"
    if proto.gold is None:
        qual, gold, adj = "—", "—", "—"
    else:
        qual = f"rule: {proto.qualification}"
        if proto.unqualified:
            qual += "; left out: " + "; ".join(f"{a} ({why})" for a, why in proto.unqualified.items())
        acc = proto.gold_accuracy or {}
        rate = "" if not proto.first_pass_items or proto.gold_seeded is None else \
            f"{proto.gold_seeded} of {proto.first_pass_items} first-pass items gold " \
            f"({100 * proto.gold_seeded / proto.first_pass_items:.1f}%); "
        gold = rate + (f"{len(proto.gold)} gold answers; " if proto.gold else "no gold answers; ") + \
            ("; ".join(f"{a}: {g.text()}" for a, g in acc.items()) or "no rater labelled gold")
        adj = f"{proto.adjudicated} adjudicated, {proto.adjudication_open} open" + \
            (f" (adjudicators: {', '.join(proto.adjudicators)})" if proto.adjudicators else "")
    instructions = text.instructions.strip() or "— (none kept: protocol --instructions FILE)"
    examples = "\n".join(f"• {x}" for x in text.examples) or "—"
    return [("task", f"{tm.task} — {tm.scheme.title or tm.task}"), ("instructions", instructions),
            ("examples", examples), ("scale", scale_text(tm.scheme)), ("raters", f"{len(mon.rows)}: {raters}"),
            ("qualification", qual), ("gold", gold), ("overlap", overlap_text(tm)),
            ("agreement (95 % intervals over the units)", agree), ("adjudication", adj),
            ("labels and consensus rule", tm.line)]


def report_section(project: Any, out_dir: Any, tasks: list[str] | None = None, n_boot: int | None = None) -> Any:
    """The report's "Raters" section: per label task with labels, its protocol card, the
    many-rater agreement and the rater monitor's table (the figures of `raters`); None when the
    project holds no labels."""
    import html
    from pathlib import Path

    from ..evaluation.base import ReportSection
    from ..util.csvsafe import write_dict_rows

    tasks = monitor_tasks(project) if tasks is None else tasks
    if not tasks:
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    e = html.escape
    body: list[str] = ["<p class='text'>Per label task: the protocol card (the fields of Otani et al.'s reporting "
                       "recommendations), the agreement among all raters with 95 % intervals over the prompts, and "
                       "one row per rater (items, median seconds per item, speeders, agreement with peers, the "
                       "automatic judge and gold, drift from the first third of their labels to the last).</p>"]
    tables: dict[str, list[dict[str, Any]]] = {}
    meta: dict[str, Any] = {"tasks": {}}
    for task in tasks:
        tm = task_monitor(project, task, n_boot=n_boot)
        card = protocol_card(project, tm)
        rows = rater_rows(tm)
        agree = agreement_rows(tm)
        stem = task.replace(".", "_")
        tables[f"{stem}_raters"] = [{"task": task, **r} for r in rows]
        tables[f"{stem}_agreement"] = [{"task": task, **r} for r in agree]
        tables[f"{stem}_protocol"] = [{"field": f, "value": v} for f, v in card]
        for name, t in list(tables.items())[-3:]:
            write_dict_rows(out / f"{name}.csv", t)
        meta["tasks"][task] = tm.to_dict()
        body.append(f"<h3>{e(task)}</h3><h4>Protocol card</h4><table class='card'>")
        body += [f"<tr><th>{e(f)}</th><td class='text'>{e(v).replace(chr(10), '<br>')}</td></tr>" for f, v in card]
        body.append("</table><h4>Agreement among the raters</h4><table><tr><th>statistic</th><th>value [95 %]</th>"
                    "<th>n</th><th>units</th></tr>")
        body += [f"<tr><td class='text'>{e(r['statistic'])}</td><td>{e(r['value'])}</td><td>{r['n']}</td>"
                 f"<td>{r['units']}</td></tr>" for r in agree]
        body.append("</table><h4>Rater monitor</h4><table><tr>" + "".join(f"<th>{e(h)}</th>" for _k, h in RATER_COLUMNS)
                    + "</tr>")
        body += ["<tr>" + "".join(f"<td class='word'>{e(r[k])}</td>" if k in _WORDS else f"<td>{e(r[k])}</td>"
                                  for k, _h in RATER_COLUMNS) + "</tr>" for r in rows]
        body.append(f"</table><p class='src'>{e(tm.where)}; {e(tm.line)}. Tables: <code>raters/{stem}_*.csv</code>."
                    "</p>")
    return ReportSection("raters", "Raters", html="".join(body), tables=tables, meta=meta)
