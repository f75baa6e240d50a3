"""A project over a DuckDB cursor of its own, for a worker thread that reads while the GUI thread
keeps using the project's connection (one DuckDB connection refuses a second caller while it is
busy)."""

from __future__ import annotations

from typing import Any


def reading_copy(project: Any) -> Any:
    """The project over a connection of its own (a cursor of the same database), read only; the
    caller closes it (``copy.con.raw.close()``)."""
    cur = project.con.raw.cursor()
    return type(project)(project.folder, cur, True, getattr(project, "_snapshot_dir", None))
