"""The project store: one folder with a DuckDB file and the project's images.

`Project` is a facade over small repositories, one module each: `samples` (runs, prompts,
samples, detections, loading a `Dataset`), `labels` (the append-only label log of every method),
`evaluations` (versions of every method's config), `audit` (audit sets, saved filters), `plans`
(audit plans: goal, design, frozen items, draws),
`scores` (metric scores per sample and text) and `jobs`; `base` holds the connection, locking, transactions and settings, and `schema` the
kernel's migrations and the per-method migration chains. The store knows no method: a method
keeps its own tables (``<method>_*``) through `Project.ensure_schema`.
"""

from __future__ import annotations

import time
from pathlib import Path

from .audit import AuditRepo
from .base import DB_NAME, ProjectError, ProjectLocked, ProjectReadOnly, release_freed_memory, safe_relpath
from .samples import MAX_PROVENANCE_BYTES
from .evaluations import EvaluationsRepo
from .jobs import JobsRepo
from .labels import LabelEvent, LabelsRepo
from .plans import PlansRepo
from .samples import SamplesRepo
from .scores import ScoresRepo
from .schema import SCHEMA_VERSION

__all__ = ["DB_NAME", "SCHEMA_VERSION", "LabelEvent", "Project", "ProjectError", "ProjectLocked", "ProjectReadOnly", "MAX_PROVENANCE_BYTES",
           "release_freed_memory", "safe_relpath", "wait_for_unlock"]


class Project(SamplesRepo, LabelsRepo, EvaluationsRepo, AuditRepo, PlansRepo, JobsRepo, ScoresRepo):
    """An open project. Use `Project.create`, `Project.open` or `Project.open_snapshot`."""


def wait_for_unlock(folder: str | Path, timeout: float = 10.0) -> Project:
    """Open a project for writing, retrying while another process releases it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return Project.open(folder)
        except ProjectLocked:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
