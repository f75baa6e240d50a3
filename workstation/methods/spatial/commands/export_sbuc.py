"""`export-sbuc`: write a run's samples in SpatialBench-UC's per_sample.jsonl format.

    python main.py export-sbuc --project DIR --run NAME --out FILE.jsonl [--config-version N] [--overwrite]

Each record carries the verdict, reason and confidence of the active verdict set (or of
--config-version), the selected boxes, the geometry and the cached detections of both
detectors. Importing the file again (with the run's manifest) reproduces the same verdicts. An
existing FILE.jsonl is replaced only with --overwrite (never a link, the project's database or a
file inside the project but in its exports/ or reports/ folder).
"""

from __future__ import annotations

import argparse
from typing import Any

from ....command_base import add_command, add_output_arg, add_project_arg, reading_project
from ..store import SpatialStore


def register(sub: Any) -> None:
    p = add_command(sub, "export-sbuc", "export a run's verdicts and detections as SpatialBench-UC per_sample.jsonl",
                    run)
    add_project_arg(p)
    p.add_argument("--run", required=True, metavar="NAME", help="run id in the project")
    add_output_arg(p, "--out", "FILE.jsonl", "output file", what="export", required=True)
    p.add_argument("--config-version", type=int, metavar="N",
                   help="verdict set of this checker config version (default: the active one)")


def run(args: argparse.Namespace) -> int:
    """Write one SpatialBench-UC per-sample record per sample of a run: verdict, reason, confidence and
    its components from the active verdict set, the selected boxes and geometry, and the cached primary
    / secondary detections."""
    from ..sbuc_export import export_sbuc

    with reading_project(args.project) as project:
        cid = args.config_version if args.config_version is not None else SpatialStore(project).active_config_id()
        n = export_sbuc(project, args.run, args.out, cid, overwrite=args.overwrite)
    print(f"wrote {n} records of run {args.run} (checker config v{cid}) to {args.out}")
    return 0
