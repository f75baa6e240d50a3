"""What the spatial method's commands share: the samples of its prompts, the active verdict set,
the main metrics printed per run."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ....types import WorkstationError
from ..store import SpatialStore

if TYPE_CHECKING:  # pragma: no cover
    from ....dataset import Dataset
    from ....store import Project
    from ..config import CheckerConfig
    from ..sbuc_export import StoredVerdicts


def load_samples(project: "Project") -> "Dataset":  # the spatial commands' samples
    """The samples of the spatial method's prompts, with their detections."""
    from ..store import load_dataset

    ds = load_dataset(project)
    if ds.n == 0:
        raise WorkstationError(f"the project {project.folder} has no samples of spatial prompts; import a run first")
    return ds


def active_verdicts(project: "Project", ds: "Dataset") -> tuple[int, "CheckerConfig", "StoredVerdicts"]:
    """(config id, config, verdict set) of the active checker config for the samples of `ds`."""
    from ..sbuc_export import stored_verdicts

    cid = SpatialStore(project).active_config_id()
    if cid is None:
        raise WorkstationError("the project has no verdict set yet; run `evaluate` first")
    cfg = SpatialStore(project).get_config(cid)
    return cid, cfg, stored_verdicts(project, ds, cid)


def print_main_results(ds: "Dataset", v: Any, out: Any = None) -> None:
    """One line per run with the main metrics (4 decimals) and the abstention reasons."""
    from ..report import summary_lines

    for line in summary_lines(ds, v):
        print(line, file=out or sys.stdout)
