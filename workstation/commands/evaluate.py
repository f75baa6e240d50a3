"""`evaluate`: evaluate every method with data in the project and store the result sets.

    python main.py evaluate --project DIR [--method NAME ...] [--config CONFIG.yaml]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_project_arg, open_project
from ..types import WorkstationError


def register(sub: Any) -> None:
    p = add_command(sub, "evaluate", "evaluate every method with data in the project and store the result sets",
                    run)
    add_project_arg(p)
    p.add_argument("--method", action="append", metavar="NAME",
                   help="evaluate only this method (repeatable; default: every method with data)")
    p.add_argument("--config", type=Path, metavar="CONFIG.yaml",
                   help="the method's config file (one method; default: its active config, or the defaults); "
                        "without --method it is a spatial checker config")
    p.add_argument("--note", default="", help="a note stored with the config version")


def run(args: argparse.Namespace) -> int:
    """Evaluate the project with each method that has data in it (or the --method ones) under its
    active config (or --config), store the config as a version with its result set, make it active,
    and print the main metrics. The spatial method's --config is our flat YAML/JSON or a
    SpatialBench-UC checker_config.yaml."""
    from ..evaluation.run import config_of, evaluate_and_store
    from ..methods import METHODS, get_method
    from ..methods import methods_with_data

    wanted = args.method
    if args.config and not wanted:
        wanted = ["spatial"]
    if args.config and len(wanted) != 1:
        raise WorkstationError("--config belongs to one method; give exactly one --method with it")
    for name in wanted or ():
        METHODS.entry(name)
    cfg = get_method(wanted[0]).load_config_file(args.config) if args.config else None  # validated first
    with open_project(args.project) as project:
        methods = methods_with_data(project, wanted)
        for m in methods:
            data = m.load(project)
            if not m.has_data(project):
                raise WorkstationError(f"the project {project.folder} has no {m.name} data to evaluate")
            parent, active = config_of(project, m, None)
            note = args.note or (f"evaluate --config {args.config}" if args.config else "evaluate")
            use = cfg if cfg is not None else active
            eid, results = evaluate_and_store(project, m, parent, cfg=use, note=note, data=data)
            for line in m.summary_lines(data, results, eid, use):
                print(line)
    return 0
