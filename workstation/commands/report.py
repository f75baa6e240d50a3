"""`report`: write the report bundle (CSV tables, plots, index.html) of the active verdict set.

    python main.py report --project DIR --out OUT_DIR [--overwrite]

Tables follow SpatialBench-UC's published report (rates with 4 decimals); with human labels in
the project the audit confusion and the risk–coverage table are added.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .evaluate import active_verdicts, add_project_arg, config_hash, load_samples, print_main_results, reading_project


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report", help="write CSV tables, plots and index.html for the active verdict set",
        description="Write the report bundle of the active verdict set into OUT_DIR: tables/*.csv "
                    "(SpatialBench-UC layout, 4 decimals), data/*.csv (full precision), assets/*.png, "
                    "report_meta.json and index.html.")
    add_project_arg(p)
    p.add_argument("--out", required=True, type=Path, metavar="OUT_DIR", help="report folder")
    p.add_argument("--overwrite", action="store_true", help="replace an existing report folder")
    p.add_argument("--annotator", metavar="NAME", help="use only this annotator's labels for the audit tables")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..metrics import summarize
    from ..reports import write_report

    with reading_project(args.project) as project:
        ds = load_samples(project)
        cid, cfg, v = active_verdicts(project, ds)
        human = project.human_verdicts(ds, args.annotator)
        labels = human if (human >= 0).any() else None
        provenance = {
            "project": str(Path(args.project).resolve()),
            "config_version": cid,
            "config_name": cfg.name,
            "runs": [{k: r[k] for k in ("run_id", "method", "model", "params", "source", "samples")}
                     for r in project.runs()],
            "labels": {"audited_samples": int((human >= 0).sum()), "annotators": project.annotators(),
                       "annotator_filter": args.annotator},
        }
        chash = config_hash(project, cid)
    summary = summarize(ds, v)
    try:
        written = write_report(args.out, ds, v, cfg, chash, provenance, summary=summary, labels=labels,
                               overwrite=args.overwrite)
    except OSError as e:  # the report is built in a temporary folder beside OUT_DIR, removed on failure
        from ..util.output import OutputError, describe_os_error

        raise OutputError(f"cannot write the report {args.out}: {describe_os_error(e)}; nothing was written") from None
    print(f"report of checker config v{cid} ({ds.n} samples) written to {args.out} "
          f"({len(written)} files; open {written.get('index', Path(args.out) / 'index.html')})")
    print_main_results(ds, v)
    return 0
