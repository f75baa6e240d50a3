"""`report`: write the report bundle of the project: a section per method (tables, plots, its own
index.html) under one index with the provenance of every number. Each method's section also has
its judges and their agreement table (the `judges` command's numbers).

    python main.py report --project DIR --out OUT_DIR [--method NAME ...] [--overwrite]

The spatial section's tables follow SpatialBench-UC's published report (rates with 4 decimals);
with human labels in the project the audit confusion and the risk–coverage table are added. A
project with audit plans gets an "Audit plans" section: each plan's estimates with their
intervals, the estimator, what it assumes and the labels it used. A project whose blind audits
were paused gets a "Blind audits" section: each pause and the items it showed unblinded, whose
labels are flagged. A project with labels gets a "Raters" section: per label task its protocol
card (instructions and examples, the scale, raters, qualification, gold, overlap, agreement,
adjudication, the consensus rule), the agreement among its raters and the rater monitor's table,
the figures of `raters`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_output_arg, add_project_arg, reading_project


def register(sub: Any) -> None:
    p = add_command(sub, "report", "write the report bundle (a section per method: CSV tables, plots, index.html)",
                    run)
    add_project_arg(p)
    from ..evaluation.bundle import REPORT_MARKER

    add_output_arg(p, "--out", "OUT_DIR", "report folder (outside the project, or inside its exports/ or reports/)",
                   what="report folder", folder=True, required=True, marker=REPORT_MARKER,
                   overwrite_help=f"replace an existing report folder (only one this program wrote: it holds the "
                                  f"file {REPORT_MARKER})")
    p.add_argument("--method", action="append", metavar="NAME",
                   help="report only this method (repeatable; default: every method with data)")
    p.add_argument("--annotator", metavar="NAME",
                   help="count only this annotator's labels in the figures that rest on human labels (over each "
                        "task's kept label selection: the rule annotator:NAME; the agreement tables between "
                        "annotators keep the selection's annotators; docs/labels.md)")


def add_judges(project: Any, sections: list[Any], folder: Path) -> None:
    """Each method section gets its judges' tables (`judges` and `judge_agreement`, the numbers the
    `judges` command prints) as CSV beside its own tables and as HTML in its part of the index."""
    import html

    from ..evaluation.judges import JudgeRun, report_html, report_tables
    from ..types import WorkstationError
    from ..methods import method_judges
    from ..util.csvsafe import write_dict_rows

    for s in sections:
        spec = method_judges(project, s.method)
        if spec is None or not spec.judges:
            continue
        try:
            tables = report_tables(JudgeRun(project, spec))
        except WorkstationError as e:  # a judge that cannot be read is named; the rest of the report stands
            s.html += f"\n<h3>Judges</h3><p class='src'>The judges could not be compared: {html.escape(str(e))}</p>"
            continue
        out = folder / s.method / "tables"
        out.mkdir(parents=True, exist_ok=True)
        for stem, rows in tables.items():
            if rows:
                write_dict_rows(out / f"{stem}.csv", rows)
            s.tables[stem] = rows
        s.html += "\n" + report_html(tables, item=spec.item, cluster=spec.cluster)


def run(args: argparse.Namespace) -> int:
    """Write the report bundle of the project into OUT_DIR: OUT_DIR/index.html with a section per method
    that has data in the project (or the --method ones), each method's files under OUT_DIR/<method>/
    (tables/*.csv with 4 decimals, data/*.csv at full precision, assets/*.png, report_meta.json,
    index.html)."""
    from ..evaluation.bundle import check_report_target, write_bundle
    from ..methods import methods_with_data

    check_report_target(Path(args.out), args.overwrite, [args.project])  # before the project is opened
    with reading_project(args.project) as project:
        methods = methods_with_data(project, args.method)
        provenance = {"project": str(Path(args.project).resolve()), "methods": ", ".join(m.name for m in methods),
                      "runs": ", ".join(project.samples.run_ids())}

        def build(folder: Path) -> list[Any]:
            from ..evaluation.audit_sets import blind_audits_section
            from ..methods.audit_sources import report_section
            from .tasks import label_tasks
            from .raters import monitor_tasks
            from .raters import report_section as rater_section

            names = {m.name for m in methods}

            sections = [m.report_section(project, folder / m.name, annotator=args.annotator) for m in methods]
            add_judges(project, sections, folder)
            plans = report_section(project, folder / "audit_plans", [m.name for m in methods])
            blind = blind_audits_section(project, folder / "blind_audits")
            raters = rater_section(project, folder / "raters",
                                   [t for t in monitor_tasks(project) if label_tasks()[t] in names])
            return sections + [s for s in (plans, blind, raters) if s is not None]

        try:
            sections = write_bundle(args.out, build, provenance=provenance, overwrite=args.overwrite,
                                    protect=[project.folder])
        except OSError as e:  # the bundle is built in a temporary folder beside OUT_DIR, removed on failure
            from ..util.output import OutputError, describe_os_error

            raise OutputError(f"cannot write the report {args.out}: {describe_os_error(e)}; "
                              "nothing was written") from None
    print(f"report of {', '.join(s.title for s in sections)} written to {args.out} "
          f"(open {Path(args.out) / 'index.html'})")
    for s in sections:
        for line in s.meta.get("summary_lines", []):
            print(line)
    return 0
