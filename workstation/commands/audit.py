"""`audit`: several raters on one protocol — overlap sets, gold items, qualification, adjudication.

    python main.py audit draw --project DIR --method M --size N --seed S --raters a,b,c [--k 3]
                              [--share 1] [--gold-rate 0.1] [--recheck 0.1] [--name NAME] [--not-blind]
                              [--set KEY=VALUE]
    python main.py audit progress --project DIR --set N
    python main.py audit gold import FILE --project DIR
    python main.py audit gold show --project DIR [--task T]
    python main.py audit qualification --project DIR [--min-accuracy 0.9 --min-items 20 [--strict] | --off]
    python main.py audit adjudicators --project DIR [--set a,b]
    python main.py audit adjudicate --project DIR --task T --list [--all] [--json FILE]
    python main.py audit adjudicate --project DIR --task T --item ID --value V --note TEXT --as NAME

`draw` stores an audit set of a method's targets (its audit table's, stratified by the automated
outcome and spread over confidence bins) for named raters: ``--k`` raters per item on ``--share``
of the items (one on the others), each rater's queue holding only their items; ``--gold-rate``
seeds that share of gold items (answers imported with `audit gold import`), given to every rater
and indistinguishable in the queue. `progress` says, per rater, how many of their items they
labelled. A gold file is CSV with the columns target, task, answer (and optionally note).

`qualification` shows each rater's gold accuracy (with its 95 % Wilson interval) and sets the
project's rule: the labels of raters who do not meet it are kept but left out of every estimate.
`adjudicators` marks who may adjudicate. `adjudicate --list` lists the items whose raters
disagree (or disagree with gold) with the raters' labels and no names; with ``--item`` an
adjudicator records the final label with a note (the consensus rule ``adjudicated`` counts it).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_output_arg, add_project_arg, open_project, parse_options, reading_project
from ..types import WorkstationError


def register(sub: Any) -> None:
    p = add_command(sub, "audit", "several raters: overlap sets, gold items, qualification, adjudication",
                    doc=__doc__)
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION", required=True)

    d = add_command(asub, "draw", "store an audit set of a method's targets for named raters", run_draw)
    add_project_arg(d)
    d.add_argument("--method", required=True, metavar="M", help="the method whose targets are audited")
    d.add_argument("--size", required=True, type=int, metavar="N", help="number of drawn targets")
    d.add_argument("--seed", required=True, type=int, metavar="S", help="random seed (same seed, same set)")
    d.add_argument("--raters", metavar="A,B,C", help="the raters (none: anyone labels every item)")
    d.add_argument("--k", type=int, default=1, metavar="K", help="raters per item on the overlap share (default 1)")
    d.add_argument("--share", type=float, default=1.0, metavar="F",
                   help="share of the items that get k raters; the others get one (default 1)")
    d.add_argument("--gold-rate", type=float, default=0.0, metavar="F",
                   help="share of the set's first-pass items that are seeded gold items (default 0)")
    d.add_argument("--recheck", type=float, default=0.1, metavar="F", help="share re-checked (default 0.1)")
    d.add_argument("--name", help="audit set name (default: raters-<size>-seed<seed>)")
    d.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the method's audit table (e.g. DyEval's threshold=0.3, tree_id=ID)")
    d.add_argument("--not-blind", action="store_true", help="the raters see the automated outcome")

    pr = add_command(asub, "progress", "per rater of an audit set: items labelled of those assigned", run_progress)
    add_project_arg(pr)
    pr.add_argument("--set", required=True, type=int, metavar="N", help="the audit set")

    g = add_command(asub, "gold", "gold answers: import a gold file, show them")
    gsub = g.add_subparsers(dest="gold_command", metavar="ACTION", required=True)
    gi = add_command(gsub, "import", "keep the answers of a gold file (target, task, answer[, note])", run_gold_import)
    gi.add_argument("file", type=Path, metavar="FILE", help="gold file (.csv)")
    add_project_arg(gi)
    gs = add_command(gsub, "show", "how many gold answers each task has, and each rater's gold accuracy",
                     run_gold_show)
    add_project_arg(gs)
    gs.add_argument("--task", default="all", metavar="TASK", help="a task, a method or all (default: all)")

    q = add_command(asub, "qualification", "show each rater's gold accuracy; set the project's rule",
                    run_qualification)
    add_project_arg(q)
    q.add_argument("--task", default="all", metavar="TASK", help="a task, a method or all (default: all)")
    q.add_argument("--min-accuracy", type=float, metavar="F", help="share of gold items right (e.g. 0.9)")
    q.add_argument("--min-items", type=int, metavar="N", help="gold items a rater must have labelled (e.g. 20)")
    q.add_argument("--strict", action="store_true", help="raters never given a gold item are left out too")
    q.add_argument("--off", action="store_true", help="drop the rule: every rater's labels count")

    a = add_command(asub, "adjudicators", "show or set who may adjudicate", run_adjudicators)
    add_project_arg(a)
    a.add_argument("--set", dest="names", metavar="A,B", help="the adjudicators (an empty text: none)")

    j = add_command(asub, "adjudicate", "list the items to adjudicate, or record a final label", run_adjudicate)
    add_project_arg(j)
    j.add_argument("--task", required=True, metavar="TASK", help="the label task")
    j.add_argument("--list", action="store_true", help="list the items open for adjudication")
    j.add_argument("--all", action="store_true", help="with --list: the adjudicated items too")
    add_output_arg(j, "--json", "FILE", "with --list: also write the list as JSON", what="adjudication list")
    j.add_argument("--item", metavar="ID", help="the target to adjudicate")
    j.add_argument("--value", metavar="V", help="its final label (--clear: take the adjudication back)")
    j.add_argument("--clear", action="store_true", help="take the item's adjudication back")
    j.add_argument("--note", metavar="TEXT", help="why this label (required)")
    j.add_argument("--as", dest="annotator", metavar="NAME", help="the adjudicator recording it")


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


def _schemes() -> dict[str, Any]:
    from ..methods import get_method, method_names

    return {s.task: s for m in method_names() for s in getattr(get_method(m), "label_schemes", ())}


def _tasks(choice: str) -> list[str]:
    from .labels import resolve_tasks

    return resolve_tasks(choice)


# ---- draw ------------------------------------------------------------------------------------

def population_of(project: Any, method: str, options: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """The label scheme and `AuditPopulation` of a method's audit table: its label targets, the
    automated outcome as the stratum, the confidence for the bins."""
    import numpy as np

    from ..evaluation.audit_sets import AuditPopulation
    from ..methods import METHODS
    from ..methods.audit_sources import source_of
    import importlib

    src = source_of(method)
    if src is None:
        raise WorkstationError(f"unknown method {method!r} or one without audit targets "
                               f"(choose from {', '.join(METHODS.names())})")
    import inspect

    make = importlib.import_module(src.module).audit_table
    known = [n for n, a in inspect.signature(make).parameters.items() if a.kind is inspect.Parameter.KEYWORD_ONLY]
    bad = sorted(set(options or {}) - set(known))
    if bad:
        raise WorkstationError(f"--set {bad[0]!r}: {method}'s audit table takes {', '.join(known) or 'no option'}")
    table = make(project, **(options or {}))
    scheme = _schemes()[table.task]
    targets = table.targets.tolist() if table.targets is not None else [(t,) for t in table.item_id.tolist()]
    ids: list[str] = []
    outcome: list[int] = []
    conf: list[float] = []
    seen: set[str] = set()
    for i, ts in enumerate(targets):
        for t in ts:
            if str(t) not in seen:
                seen.add(str(t))
                ids.append(str(t))
                outcome.append(int(table.outcome[i]))
                conf.append(float(table.confidence[i]))
    uniq = sorted(set(outcome))
    remap = np.asarray([uniq.index(c) for c in outcome], np.int64) if outcome else np.zeros(0, np.int64)
    names = [str(u) for u in uniq]
    pop = AuditPopulation(np.asarray(ids, dtype=object), strata={"outcome": (remap, names)},
                          default_strata=("outcome",), conf=np.asarray(conf, np.float64), noun=table.item_title + "s")
    return scheme, pop


def run_draw(args: argparse.Namespace) -> int:
    """Draw and store an audit set of a method's targets for named raters (see `audit --help`)."""
    from ..evaluation.audit_sets import draw_audit_set

    if args.size <= 0:
        raise WorkstationError(f"--size must be a positive number, got {args.size}")
    raters = _names(args.raters)
    if args.k != 1 and not raters:
        raise WorkstationError("--k needs --raters")
    with open_project(args.project) as project:
        scheme, pop = population_of(project, args.method, parse_options(args.set))
        name = args.name or f"raters-{args.size}-seed{args.seed}"
        aid = draw_audit_set(project, scheme, pop, name=name, size=args.size, seed=args.seed,
                             blind=not args.not_blind, recheck_fraction=args.recheck, raters=raters, k=args.k,
                             overlap_share=args.share, gold_rate=args.gold_rate)
        s = next(x for x in project.audit.sets() if x["audit_set_id"] == aid)
        gold = int(s["params"].get("gold_items", 0))
        print(f"stored audit set #{aid} '{name}' of {scheme.task}: {s['size']} queue items"
              + (f" ({gold} of them gold)" if gold else "")
              + (f"; raters {', '.join(raters)}, k = {args.k} on {args.share:g} of the items" if raters else ""))
        if args.gold_rate and not gold:
            print("note: the draw took every target with a gold answer: no gold item was seeded")
        _print_progress(project, aid)
    return 0


def _print_progress(project: Any, aid: int) -> None:
    from ..evaluation.raters import rater_progress

    for r in rater_progress(project, aid):
        print(f"  {r['rater']}: {r['labelled']} / {r['assigned']} labelled "
              f"({r['first_labelled']} / {r['first_assigned']} first passes)")


def run_progress(args: argparse.Namespace) -> int:
    """Per rater of an audit set: the queue items labelled of those assigned to them."""
    from ..evaluation.audit_sets import audit_info

    with reading_project(args.project) as project:
        info = audit_info(project, args.set)
        if not info.overlap:
            print(f"audit set #{args.set} names no raters: anyone labels every item")
            return 0
        print(f"audit set #{args.set} '{info.name}':")
        _print_progress(project, args.set)
    return 0


# ---- gold ------------------------------------------------------------------------------------

def run_gold_import(args: argparse.Namespace) -> int:
    """Keep the gold answers of a file (CSV: target, task, answer[, note]) with the project."""
    from ..evaluation.raters import import_gold_file

    with open_project(args.project) as project:
        n = import_gold_file(project, args.file, _schemes())
    print(f"imported {sum(n.values())} gold answer(s) from {args.file}: "
          + ", ".join(f"{c} {t}" for t, c in sorted(n.items())))
    return 0


def _accuracy_lines(project: Any, task: str) -> list[str]:
    from ..evaluation.raters import gold_accuracy, load_qualification, unqualified

    rule = load_qualification(project)
    out_of = unqualified(project, task, project.labels.annotators(task))
    lines = []
    for r, a in gold_accuracy(project, task).items():
        why = out_of.get(r)
        lines.append(f"  {r}: {a.text()}" + (f" — left out: {why}" if why else (" — qualified" if rule else "")))
    for r, why in out_of.items():
        if not any(line.startswith(f"  {r}:") for line in lines):
            lines.append(f"  {r}: left out: {why}")
    return lines


def run_gold_show(args: argparse.Namespace) -> int:
    """How many gold answers each task has, and each rater's accuracy on the gold items seeded."""
    from ..evaluation.raters import gold_answers

    with reading_project(args.project) as project:
        for t in _tasks(args.task):
            n = len(gold_answers(project, t))
            print(f"{t}: {n} gold answer(s)")
            for line in _accuracy_lines(project, t):
                print(line)
    return 0


def run_qualification(args: argparse.Namespace) -> int:
    """Show each rater's gold accuracy (95 % Wilson interval) and who the project's
    qualification rule leaves out; --min-accuracy / --min-items [--strict] set the rule, --off
    drops it. The labels of raters left out are kept, and count again when they qualify."""
    from ..evaluation.raters import Qualification, load_qualification, save_qualification

    change = args.off or args.min_accuracy is not None or args.min_items is not None or args.strict
    if args.off and (args.min_accuracy is not None or args.min_items is not None or args.strict):
        raise WorkstationError("--off drops the rule: give it alone")
    opener = open_project if change else reading_project
    with opener(args.project) as project:
        if change:
            if args.off:
                save_qualification(project, None)
            else:
                old = load_qualification(project) or Qualification()
                acc = args.min_accuracy if args.min_accuracy is not None else old.min_accuracy
                if acc > 1.0 and acc <= 100.0:
                    raise WorkstationError(f"--min-accuracy is a share in [0, 1] (0.9 for 90 %), got {acc:g}")
                save_qualification(project, Qualification(acc, args.min_items if args.min_items is not None
                                                          else old.min_items, bool(args.strict)))
        rule = load_qualification(project)
        print(f"qualification: {rule.text() if rule else 'none (every rater counts)'}")
        for t in _tasks(args.task):
            lines = _accuracy_lines(project, t)
            if lines:
                print(f"{t}:")
                for line in lines:
                    print(line)
    return 0


# ---- adjudication ----------------------------------------------------------------------------

def run_adjudicators(args: argparse.Namespace) -> int:
    """Show, or set (--set a,b), the annotators who may adjudicate."""
    from ..evaluation.raters import adjudicators, set_adjudicators

    opener = open_project if args.names is not None else reading_project
    with opener(args.project) as project:
        if args.names is not None:
            set_adjudicators(project, _names(args.names))
        print(f"adjudicators: {', '.join(adjudicators(project)) or 'none'}")
    return 0


def run_adjudicate(args: argparse.Namespace) -> int:
    """List the items of a task open for adjudication (--list: the raters' labels without their
    names, why, the gold answer where there is one), or record an adjudicator's final label of one
    (--item ID --value V --note TEXT --as NAME; --clear takes it back)."""
    from ..evaluation.raters import adjudication_queue, record_adjudication
    from ..util.jsonsafe import dumps
    from ..util.output import write_output_text

    schemes = _schemes()
    if args.task not in schemes:
        raise WorkstationError(f"unknown label task {args.task!r}; choose from {', '.join(schemes)}")
    if args.list == (args.item is not None):
        raise WorkstationError("give --list, or --item with --value (or --clear), --note and --as")
    if args.list:
        with reading_project(args.project) as project:
            items = adjudication_queue(project, args.task, include_done=args.all)
        for it in items:
            counts = ", ".join(f"{v} ×{c}" for v, c in sorted(it.as_dict()["counts"].items()))
            extra = (f"; gold {it.gold}" if it.gold is not None else "") + \
                (f"; adjudicated {it.final} ({it.note})" if it.final is not None else "")
            print(f"{it.target_id}: {counts} — {it.reason}{extra}")
        print(f"{len(items)} item(s) {'in' if args.all else 'open for'} adjudication of {args.task}")
        if args.json is not None:
            write_output_text(args.json, dumps([it.as_dict() for it in items], indent=1) + "\n",
                              "adjudication list", overwrite=args.overwrite, projects=[args.project])
        return 0
    if args.json is not None:
        raise WorkstationError("--json goes with --list")
    if args.clear == (args.value is not None):
        raise WorkstationError("give --value V (the final label) or --clear")
    if not args.annotator:
        raise WorkstationError("--as NAME: the adjudicator recording the label")
    with open_project(args.project) as project:
        open_ids = {it.target_id for it in adjudication_queue(project, args.task, include_done=True)}
        if args.item not in open_ids:
            raise WorkstationError(f"{args.item!r} is not an item of {args.task} to adjudicate "
                                   "(its raters agree, or nobody labelled it; see --list)")
        record_adjudication(project, schemes[args.task], args.item, None if args.clear else args.value, args.note,
                            args.annotator)
    print(f"{args.item}: " + ("adjudication taken back" if args.clear else
                              f"adjudicated {schemes[args.task].validate(args.value)} by {args.annotator}"))
    return 0
