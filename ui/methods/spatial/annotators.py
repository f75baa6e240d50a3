"""Spatial label files in: SpatialBench-UC JSON / CSV and our own CSV / Parquet, through
`workstation.methods.spatial.labels_io` (agreement and adjudication are every method's:
`ui.widgets.agreement`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workstation.methods.spatial.store import SpatialStore
from workstation.types import WorkstationError


def import_label_file(state: Any, path: str | Path, annotator: str | None = None) -> tuple[int, str]:
    """Append the labels of a file (one transaction); (count, a one-line summary)."""
    from workstation.methods.spatial.labels_io import read_labels

    p = state.project
    if p is None or state.dataset is None:
        raise WorkstationError("open a project first")
    if p.read_only:
        raise WorkstationError("this project is open read-only: labels cannot be imported")
    table = read_labels(path, annotator)
    known = set(state.dataset.sample_index())
    if hasattr(table, "check_samples"):
        table.check_samples(known)
    with p.transaction():
        n = SpatialStore(p).add_labels_bulk(table.rows(), source=f"import:{Path(path).name}")
    state.reload_labels()
    who = ", ".join(sorted(set(table.annotator))) or "none"
    skipped = f"; {table.skipped} row(s) without a verdict skipped" if table.skipped else ""
    return n, f"imported {n} label(s) from {Path(path).name} (annotators: {who}){skipped}"
