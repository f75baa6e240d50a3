"""`labels import` / `labels export`: human labels in and out of a project.

    python main.py labels import FILE --project DIR [--annotator NAME]
    python main.py labels export --project DIR --out FILE(.csv|.parquet|.json) [--annotator NAME]

Import reads SpatialBench-UC's `labels_filled.json` / `labels_filled.csv` and our own CSV /
Parquet (see `workstation.methods.spatial.labels_io`); the whole file is validated first, then appended as label
events in one transaction (nothing is written when any row is bad). Export writes the latest
label per (sample, annotator), or every event with --all-events.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from .evaluate import add_project_arg, open_project, reading_project
from ..methods.spatial.store import SpatialStore


def register(sub: Any) -> None:
    p = sub.add_parser(
        "labels", help="import or export human labels",
        description="Import or export human labels (SpatialBench-UC labels_filled.json / .csv, or our "
                    "CSV / Parquet with an annotator column).")
    lsub = p.add_subparsers(dest="labels_command", metavar="ACTION", required=True)

    pi = lsub.add_parser(
        "import", help="append the labels of a file to the project",
        description="Validate a label file completely, then append its labels as label events in one "
                    "transaction. Formats: SpatialBench-UC labels_filled.json (a JSON list of "
                    "{sample_id, human_verdict, notes, timestamp}) or labels_filled.csv (the same four "
                    "columns), or our CSV / Parquet (sample_id, annotator, verdict, rating, notes, "
                    "created_at). Rows without a verdict are skipped.")
    pi.add_argument("file", type=Path, metavar="FILE", help="label file (.json, .csv or .parquet)")
    add_project_arg(pi)
    pi.add_argument("--annotator", metavar="NAME",
                    help="annotator of rows that name none (default: 'imported')")
    pi.set_defaults(func=run_import)

    pe = lsub.add_parser(
        "export", help="write the project's labels to a file",
        description="Write the latest label per (sample, annotator) — or every label event with "
                    "--all-events — to FILE: .json (SpatialBench-UC list plus annotator and rating), "
                    ".csv (our columns; SpatialBench-UC's four columns with --format sbuc) or .parquet.")
    add_project_arg(pe)
    pe.add_argument("--out", required=True, type=Path, metavar="FILE", help="output file (.csv, .parquet or .json)")
    pe.add_argument("--annotator", metavar="NAME", help="only this annotator's labels")
    pe.add_argument("--format", choices=("auto", "native", "sbuc"), default="auto",
                    help="file layout (default: by extension; sbuc = SpatialBench-UC's columns only)")
    pe.add_argument("--all-events", action="store_true", help="every label event, not only the latest")
    pe.set_defaults(func=run_export)


def run_import(args: argparse.Namespace) -> int:
    from ..methods.spatial.labels_io import read_labels

    table = read_labels(args.file, args.annotator)  # validates format, verdicts, ratings, timestamps
    with open_project(args.project) as project:
        known = {r[0] for r in project.con.execute("SELECT sample_id FROM samples").fetchall()}
        table.check_samples(known)
        with project.transaction():
            n = SpatialStore(project).add_labels_bulk(table.rows(), source=f"import:{Path(args.file).name}")
    by = Counter(table.annotator)
    who = ", ".join(f"{a} {c}" for a, c in sorted(by.items())) or "none"
    skipped = f"; skipped {table.skipped} row(s) without a verdict" if table.skipped else ""
    print(f"imported {n} label(s) from {args.file} ({table.format}; annotators: {who}){skipped}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from ..methods.spatial.labels_io import write_labels

    with reading_project(args.project) as project:
        if args.all_events:
            rows = SpatialStore(project).label_events()
            if args.annotator:
                rows = [r for r in rows if r.annotator == args.annotator]
        else:
            rows = SpatialStore(project).latest_labels(args.annotator)
    n = write_labels(args.out, rows, args.format)
    what = "label events" if args.all_events else "labels (latest per sample and annotator)"
    print(f"wrote {n} {what} to {args.out}")
    return 0
