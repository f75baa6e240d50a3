"""`evaluate`: run the checker over every sample and store the verdict set.

    python main.py evaluate --project DIR [--config CHECKER.yaml]

Also holds the small helpers the spatial commands share (reading the active verdict set,
printing the main metrics).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..command_base import add_project_arg, open_project
from ..types import WorkstationError
from ..methods.spatial.store import SpatialStore

if TYPE_CHECKING:  # pragma: no cover
    from ..methods.spatial.config import CheckerConfig
    from ..dataset import Dataset
    from ..methods.spatial.sbuc_export import StoredVerdicts
    from ..store import Project


# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------


def load_samples(project: "Project") -> "Dataset":  # the spatial commands' samples
    """The samples of the spatial method's prompts, with their detections."""
    ds = project.samples.load_dataset(method="spatial")
    if ds.n == 0:
        raise WorkstationError(f"the project {project.folder} has no samples of spatial prompts; import a run first")
    return ds


def prepare_next_open(project: "Project") -> bool:
    """After a command changed the project's samples or detections: read them once as the
    window's open does, so that the detection cache (see `store.detection_cache`) holds the
    spatial samples' detections and the checker's preparation of them, and the window's next
    open of the project maps both instead of scanning the database and preparing again (≈3 s of
    a 1M-sample open on a 2-core machine). Only where the cache would be used (from
    `WORKSTATION_DETECTION_CACHE_MIN` detections; not when it is off). Says what it did; a
    failure (an unwritable or full cache folder) or an interruption (Ctrl+C) costs only that
    next open its speed and is reported as a note, never raised. Whether both are kept."""
    import logging
    import time

    from ..methods.spatial import prepared_cache
    from ..methods.spatial.checker import prepare
    from ..store import detection_cache

    least = detection_cache.min_detections()
    if least is None:
        return False
    n_det = int((project.con.execute("SELECT count(*) FROM detections").fetchone() or (0,))[0])
    if n_det == 0 or n_det < least:
        return False
    t0 = time.perf_counter()
    why = "the cache folder could not be written"
    try:
        ds = project.samples.load_dataset(method="spatial")  # the window's selection: its cache entry
        if ds.n == 0 or not len(ds.detections):
            return False
        n, at = ds.n, prepare(ds).kept_at  # no place when the detections are not an entry's
        del ds
        prepared_cache.wait_for_writes()
        kept = at is not None and prepared_cache.is_kept(at)
    except KeyboardInterrupt:  # the command's own work is done: only this extra step stops
        kept, why = False, "interrupted"
    except Exception as e:  # noqa: BLE001 - the command's own work is done and stays
        logging.getLogger(__name__).debug("preparing the next open failed", exc_info=True)
        kept, why = False, str(e) or type(e).__name__
    if not kept:
        print(f"note: the detection cache was not prepared for the workstation's next open of "
              f"{project.folder} ({why} — see {detection_cache.cache_root()}); that open reads the "
              f"database instead", file=sys.stderr)
        return False
    print(f"detection cache ready for the workstation's next open: {n:,} samples, {n_det:,} detections "
          f"({time.perf_counter() - t0:.1f} s)")
    return True


def active_verdicts(project: "Project", ds: "Dataset") -> tuple[int, "CheckerConfig", "StoredVerdicts"]:
    """(config id, config, verdict set) of the active checker config for the samples of `ds`."""
    from ..methods.spatial.sbuc_export import stored_verdicts

    cid = SpatialStore(project).active_config_id()
    if cid is None:
        raise WorkstationError("the project has no verdict set yet; run `evaluate` first")
    cfg = SpatialStore(project).get_config(cid)
    return cid, cfg, stored_verdicts(project, ds, cid)


def config_hash(project: "Project", config_id: int) -> str:
    row = project.con.execute("SELECT content_hash FROM evaluations WHERE eval_id=?", [config_id]).fetchone()
    return str(row[0]) if row else ""


def fmt(x: Any, digits: int = 4) -> str:
    if isinstance(x, float):
        return "n/a" if math.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def print_main_results(ds: "Dataset", v: Any, out: Any = None) -> None:
    """One line per run with the main metrics (4 decimals) and the abstention reasons."""
    from ..methods.spatial.report import summary_lines

    for line in summary_lines(ds, v):
        print(line, file=out or sys.stdout)


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------


def register(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate", help="evaluate every method with data in the project and store the result sets",
        description="Evaluate the project with each method that has data in it (or the --method ones) "
                    "under its active config (or --config), store the config as a version with its "
                    "result set, make it active, and print the main metrics. The spatial method's "
                    "--config is our flat YAML/JSON or a SpatialBench-UC checker_config.yaml.")
    add_project_arg(p)
    p.add_argument("--method", action="append", metavar="NAME",
                   help="evaluate only this method (repeatable; default: every method with data)")
    p.add_argument("--config", type=Path, metavar="CONFIG.yaml",
                   help="the method's config file (one method; default: its active config, or the defaults); "
                        "without --method it is a spatial checker config")
    p.add_argument("--note", default="", help="a note stored with the config version")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
