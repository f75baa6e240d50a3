"""`labels import` / `labels export`: human labels in and out of a project.

    python main.py labels import FILE --project DIR [--annotator NAME]
    python main.py labels export --project DIR --out FILE [--task TASK|METHOD|all] [--annotator NAME]
                                 [--all-events] [--overwrite]
    python main.py labels select --project DIR [--task TASK] [--annotators A,B] [--sets N,M] [--no-free]
                                 [--first-passes] [--rule RULE] [--json FILE [--overwrite]]
    python main.py labels unblind FILE --project DIR --out FILE [--overwrite]

Import reads the label log's layout (what export writes for any task: `.jsonl`, or `.csv` with a
`task` and a `target_id` column) for every method's tasks, and a method's own layouts through its
``read_label_file`` hook (the spatial method's: SpatialBench-UC's `labels_filled.json` /
`labels_filled.csv` and our own CSV / Parquet, `workstation.methods.spatial.labels_io`); the
whole file is validated first, then appended as label events in one transaction (nothing is
written when any row is bad).

Export writes the labels that stand — the latest label per (task, target, annotator), an undone
label left out — or, with --all-events, the full event log (undo events included). ``--task``
names a method's task (``spatial.verdict``, ``metalogic.pair``, ``protobias.fidelity``,
``dyeval.image``), a method (``metalogic``) or ``all``. A method's own layouts are written by its
``write_label_file`` hook (``--format`` names one of its ``label_file_formats``): the spatial
task's (.csv with our columns or SpatialBench-UC's, .json, .parquet; `labels import` reads them back);
every other choice, and any .jsonl file, is the label log's layout (`workstation.io.label_log`:
task, target kind and id, annotator, value, rating, notes, time, source, audit set) in CSV or
JSONL. An existing FILE is replaced only with --overwrite (never a link, the project's database
or a file inside the project but in its exports/ or reports/ folder).

Unblind maps back a ProtoBias label file the window wrote during a blind audit, whose targets
are neutral ids (``<item id>#A`` / ``#B``: the triplet and the side the image was shown on, so the
file does not tell which image is the prototype), to the project's sample ids (``…:corr`` /
``…:adv``), through the ``unblind_label_file`` hook of the method whose blind exports name neutral
ids; every row must name a neutral id of the project's triplets.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_output_arg, add_project_arg, open_project, reading_project
from .tasks import label_tasks, resolve_tasks  # noqa: F401 - other commands import them from here too


def register(sub: Any) -> None:
    p = sub.add_parser(
        "labels", help="import or export human labels",
        description="Import or export human labels: every method's in the label log's layout (CSV or "
                    "JSONL), the spatial method's also as SpatialBench-UC labels_filled.json / .csv, or our "
                    "CSV / Parquet with an annotator column.")
    lsub = p.add_subparsers(dest="labels_command", metavar="ACTION", required=True)

    pi = add_command(lsub, "import", "append the labels of a file to the project", run_import)
    pi.add_argument("file", type=Path, metavar="FILE", help="label file (.jsonl or .csv in the label log's layout; "
                    "spatial: .json, .csv or .parquet)")
    add_project_arg(pi)
    pi.add_argument("--annotator", metavar="NAME",
                    help="annotator of rows that name none (default: 'imported')")

    pe = add_command(lsub, "export", "write the project's labels to a file", run_export)
    add_project_arg(pe)
    add_output_arg(pe, "--out", "FILE", "output file (.csv or .jsonl; spatial labels also .json or .parquet)",
                   what="label file", required=True)
    pe.add_argument("--task", default="spatial.verdict", metavar="TASK",
                    help="a task (spatial.verdict, metalogic.pair, protobias.fidelity, dyeval.image), a method "
                         "(spatial, metalogic, protobias, dyeval) or all (default: spatial.verdict)")
    pe.add_argument("--annotator", metavar="NAME", help="only this annotator's labels")
    pe.add_argument("--format", choices=("auto", *label_file_formats()), default="auto",
                    help="spatial file layout (default: by extension; sbuc = SpatialBench-UC's columns only)")
    pe.add_argument("--all-events", action="store_true",
                    help="the full event log (every label event, undo events included), not the labels that stand")

    ps = add_command(lsub, "select", "show or set which labels count for a task's figures", run_select)
    add_project_arg(ps)
    ps.add_argument("--task", default="spatial.verdict", metavar="TASK",
                    help="a task, a method (its tasks) or all (default: spatial.verdict)")
    who = ps.add_mutually_exclusive_group()
    who.add_argument("--annotators", metavar="A,B", help="only these annotators' labels")
    who.add_argument("--all-annotators", action="store_true", help="every annotator's labels")
    where = ps.add_mutually_exclusive_group()
    where.add_argument("--sets", metavar="N,M", help="only labels given in these audit sets (a plan's set too)")
    where.add_argument("--all-sets", action="store_true", help="labels of every audit set")
    free = ps.add_mutually_exclusive_group()
    free.add_argument("--free", dest="free", action="store_true", default=None,
                      help="labels given outside any audit set count")
    free.add_argument("--no-free", dest="free", action="store_false", help="they do not")
    rc = ps.add_mutually_exclusive_group()
    rc.add_argument("--rechecks", dest="rechecks", action="store_true", default=None,
                    help="the blind consistency re-checks count (a later label of the same target)")
    rc.add_argument("--first-passes", dest="rechecks", action="store_false", help="first passes only")
    ps.add_argument("--rule", metavar="RULE",
                    help="consensus: latest, majority (ties disputed), unanimous, mean (ratings), adjudicated "
                         "(the adjudicator's label, else majority) or annotator:NAME")
    add_output_arg(ps, "--json", "FILE", "also write the selection and what it gives as JSON", what="selection file")

    pu = add_command(lsub, "unblind", "map a blind ProtoBias export's neutral image ids back to sample ids",
                     run_unblind)
    pu.add_argument("file", type=Path, metavar="FILE", help="label file written during a blind audit (.csv)")
    add_project_arg(pu)
    add_output_arg(pu, "--out", "FILE", "output file (.csv) with the project's sample ids", what="label file",
                   required=True)


def _names(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _sets(text: str | None) -> tuple[int, ...] | None:
    from ..types import WorkstationError

    if text is None:
        return None
    out = []
    for x in (t.strip().lstrip("#") for t in text.split(",")):
        if not x:
            continue
        if not x.isdigit():
            raise WorkstationError(f"--sets takes audit set numbers separated by commas, got {x[:20]!r}")
        out.append(int(x))
    return tuple(out)


def run_select(args: argparse.Namespace) -> int:
    """Show, or set, which labels count for a task's figures: whose labels (--annotators
    a1,a2 or --all-annotators), from which audit sets or plans (--sets 3,5 or --all-sets; --free /
    --no-free for labels given outside any audit set), first passes only or with the re-checks
    (--first-passes / --rechecks), and the consensus rule that makes one label of several (--rule
    latest, majority, unanimous, mean, adjudicated or annotator:NAME). With no change it shows the selection kept
    with the project and what it gives; --json FILE writes that as JSON."""
    from ..evaluation.selection import load_selection, resolve_project, save_selection, set_names
    from ..util.jsonsafe import dumps
    from ..util.output import write_output_text

    tasks = resolve_tasks(args.task)
    changes: dict[str, Any] = {}
    if args.all_annotators:
        changes["annotators"] = None
    elif args.annotators is not None:
        changes["annotators"] = _names(args.annotators)
    if args.all_sets:
        changes["sets"] = None
    elif args.sets is not None:
        changes["sets"] = _sets(args.sets)
    if args.free is not None:
        changes["free"] = args.free
    if args.rechecks is not None:
        changes["rechecks"] = args.rechecks
    if args.rule is not None:
        changes["rule"] = args.rule
    opener = open_project if changes else None
    out: list[dict[str, Any]] = []
    if opener is not None:
        with opener(args.project) as project:
            for t in tasks:
                sel = load_selection(project, t).replace(**changes)
                save_selection(project, t, sel)
                res = resolve_project(project, t, sel)
                out.append({"task": t, **res.provenance(), "line": res.describe(set_names(project, t))})
    else:
        with reading_project(args.project) as project:
            for t in tasks:
                res = resolve_project(project, t)
                out.append({"task": t, **res.provenance(), "line": res.describe(set_names(project, t))})
    for o in out:
        print(f"{o['task']}: {o['line']}" + ("" if o["design"] in ("uniform", "stratified", "plan") else
                                               f" (draw: {o['design']}: no sampling guarantee holds)"))
    if args.json is not None:
        write_output_text(args.json, dumps(out if len(out) > 1 else out[0], indent=1) + "\n", "selection file",
                          overwrite=args.overwrite)
    return 0


def run_unblind(args: argparse.Namespace) -> int:
    """Map the neutral image ids of a ProtoBias label file written during a blind audit
    (<item id>#A / #B) back to the project's sample ids, and write the file with them to --out
    (the same columns, CSV). The whole file is checked first: a row whose target is not a
    neutral id of the project's triplets is refused with its line, and nothing is written."""
    import csv

    from ..util.csvsafe import escape_row
    from ..util.output import output_file

    unblind = _method_unblind()
    with reading_project(args.project) as project:
        header, rows = unblind(project, args.file)  # the whole file is checked here
    with output_file(args.out, "label file", overwrite=args.overwrite, projects=[args.project]) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            for r in rows:
                w.writerow(escape_row(r))
    print(f"wrote {len(rows)} label(s) of {args.file} with the project's sample ids to {args.out}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Validate a label file completely, then append its labels as label events in one transaction.
    Formats: the label log's (what `labels export` writes for any task: .jsonl, or .csv with the
    columns task, target_kind, target_id, annotator, value, rating, notes, created_at), for every
    method's tasks; and each method's own: SpatialBench-UC labels_filled.json (a JSON list of
    {sample_id, human_verdict, notes, timestamp}) or labels_filled.csv (the same four columns), or
    our CSV / Parquet (sample_id, annotator, verdict, rating, notes, created_at). Rows without a
    verdict are skipped."""
    from ..io.label_log import is_label_log

    if is_label_log(args.file):
        return _import_label_log(args)
    add = _method_import(args.file)(args.file, args.annotator)  # the whole file is checked here
    with open_project(args.project) as project:
        print(add(project))
    return 0


def _method_import(path: Path) -> Any:
    """The ``read_label_file`` hook of the method whose own layouts a label file is in (the one
    registered method with the hook; more than one is ambiguous)."""
    from ..methods import get_method, method_names
    from ..types import InputError

    hooks = [(m, getattr(get_method(m), "read_label_file", None)) for m in method_names()]
    hooks = [(m, h) for m, h in hooks if callable(h)]
    if len(hooks) != 1:
        raise InputError(Path(path), "not the label log's layout (.jsonl, or .csv with task and target_id "
                                     f"columns), and {len(hooks)} methods read label files of their own")
    return hooks[0][1]


def _method_unblind() -> Any:
    """The ``unblind_label_file`` hook of the method whose blind exports name neutral ids (the one
    registered method with the hook)."""
    from ..methods import get_method, method_names
    from ..types import WorkstationError

    hooks = [h for m in method_names() if callable(h := getattr(get_method(m), "unblind_label_file", None))]
    if len(hooks) != 1:
        raise WorkstationError(f"{len(hooks)} methods map blind label files back to sample ids: "
                               "cannot choose")
    return hooks[0]


def label_file_formats() -> tuple[str, ...]:
    """The layouts `labels export --format` may name: every method's ``label_file_formats``."""
    from ..methods import get_method, method_names

    return tuple(dict.fromkeys(f for m in method_names()
                               for f in getattr(get_method(m), "label_file_formats", ())))


def _method_export(tasks: list[str]) -> tuple[str, Any] | None:
    """The method whose labels ``tasks`` are, and its ``write_label_file`` hook, when it writes them
    in layouts of its own; else None (the label log's layout)."""
    from ..methods import get_method, method_names

    for m in method_names():
        method = get_method(m)
        own = [s.task for s in getattr(method, "label_schemes", ())]
        hook = getattr(get_method(m), "write_label_file", None)
        if own and tasks == own and callable(hook):
            return m, hook
    return None


def _check_targets(project: Any, path: Path, schemes: dict[str, Any], by_task: dict[str, Any]) -> None:
    """Every label of a sample (or an image: a sample too) is of a sample the project holds."""
    from ..store.labels import SAMPLE_TARGETS
    from ..types import InputError
    from ..util.textio import quote

    known: set[str] | None = None
    for task, rows in by_task.items():
        if schemes[task].target not in SAMPLE_TARGETS:
            continue
        if known is None:
            known = {r[0] for r in project.con.execute("SELECT sample_id FROM samples").fetchall()}
        for target, line in zip(rows["target_id"], rows["line"]):
            if target not in known:
                raise InputError(Path(path), f"label for unknown sample {quote(target, 60)}", line)


def _import_label_log(args: argparse.Namespace) -> int:
    from ..io.label_log import read_label_log
    from ..methods import get_method, method_names

    schemes = {s.task: s for m in method_names() for s in getattr(get_method(m), "label_schemes", ())}
    by_task = read_label_log(args.file, schemes, args.annotator)  # the whole file is checked here
    with open_project(args.project) as project:
        _check_targets(project, args.file, schemes, by_task)
        with project.transaction():
            n = {t: project.labels.add_bulk(t, schemes[t].target, rows, source=f"import:{Path(args.file).name}")
                 for t, rows in by_task.items()}
    by = Counter(a for rows in by_task.values() for a in rows["annotator"])
    who = ", ".join(f"{a} {c}" for a, c in sorted(by.items())) or "none"
    tasks = ", ".join(f"{c} {t}" for t, c in n.items()) or "none"
    print(f"imported {sum(n.values())} label(s) from {args.file} (label log: {tasks}; annotators: {who})")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Write the labels that stand — the latest label per (task, target, annotator); an undone label is
    left out — or the full event log with --all-events, to FILE. --task picks the judgements:
    spatial.verdict (default), metalogic.pair, protobias.fidelity, dyeval.image, a method name, or all.
    Spatial labels: .json (SpatialBench-UC list plus annotator and rating), .csv (our columns;
    SpatialBench-UC's four with --format sbuc), .parquet or .jsonl. Any other task, or all: the label
    log's columns (task, target_kind, target_id, annotator, value, rating, notes, created_at, source,
    audit_set_id) as .csv or .jsonl."""
    from ..io.label_log import write_label_log
    from ..methods import get_method, method_names
    from ..types import InputError

    tasks = resolve_tasks(args.task)
    own = _method_export(tasks)
    log_layout = own is None or Path(args.out).suffix.lower() == ".jsonl"
    if log_layout and args.format != "auto":
        of = next((m for m in method_names()
                   if args.format in getattr(get_method(m), "label_file_formats", ())), "a method's")
        raise InputError(Path(args.out), f"--format {args.format} is a layout of {of} labels; the label log "
                                         "is written as .csv or .jsonl")
    with reading_project(args.project) as project:
        if log_layout:
            if args.all_events:
                events = [e for t in tasks for e in project.labels.events(task=t)
                          if not args.annotator or e.annotator == args.annotator]
                events.sort(key=lambda e: e.event_id)
            else:
                events = [e for t in tasks for e in project.labels.standing(t, args.annotator)]
                events.sort(key=lambda e: e.event_id)
            n = write_label_log(args.out, events, event_log=args.all_events, overwrite=args.overwrite,
                                projects=[args.project])
        else:
            assert own is not None
            n = own[1](project, args.out, layout=args.format, all_events=args.all_events,
                       annotator=args.annotator, overwrite=args.overwrite, projects=[args.project])
        others = {t: c for t, c in project.labels.tasks().items() if t not in tasks}
    what = "label events" if args.all_events else "labels (the latest standing one per target and annotator)"
    print(f"wrote {n} {what} of {', '.join(tasks)} to {args.out}")
    if others:
        print("note: the project also holds " + ", ".join(f"{c} {t}" for t, c in others.items())
              + " label event(s); --task all writes every method's")
    return 0
