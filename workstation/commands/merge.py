"""`merge`: join shard projects (or shard job folders) into one project.

    python main.py merge --project DIR SHARD_PROJECT_DIR [SHARD_PROJECT_DIR|JOB_DIR ...]

Runs, prompts, samples with their images and ground truth, detections and job history are
copied in, one transaction per source. A sample id present twice with the same content is
skipped; with different content it is an error and that source is not merged.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("merge", help="merge shard projects or job folders into one project",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--project", required=True, type=Path, metavar="DIR",
                   help="target project folder (created if it does not exist)")
    p.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="shard project folders or job folders")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..jobs.merge import merge_into
    from ..store import Project

    project = Project.create(args.project, exist_ok=True)
    try:
        report = merge_into(project, args.sources,
                            on_source=lambda k, n, s: print(f"[{k + 1}/{n}] merging {s}"))
    finally:
        project.close()
    print(report.summary())
    return 0
