"""The project store: one folder with a DuckDB file and the project's images.

`Project` holds the connection, locking, transactions and settings (`base`) and one repository
object per part of the project, each in a module of its own: ``project.samples`` (runs,
prompts, samples, detections, loading a `Dataset`), ``project.labels`` (the append-only label
log of every method), ``project.evaluations`` (versions of every method's config),
``project.audit`` (audit sets, saved filters), ``project.plans`` (audit plans: goal, design,
frozen items, draws), ``project.scores`` (metric scores per sample and text) and
``project.jobs``; `schema` holds the kernel's migrations and the per-method migration chains.
The store knows no method: a method keeps its own tables (``<method>_*``) through
`Project.ensure_schema`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from .audit import AuditRepo
from .base import (DB_NAME, ProjectBase, ProjectError, ProjectLocked, ProjectReadOnly, Repo, release_freed_memory,
                   safe_relpath)
from .samples import MAX_PROVENANCE_BYTES
from .evaluations import EvaluationsRepo
from .jobs import JobsRepo
from .labels import LabelEvent, LabelsRepo
from .plans import PlansRepo
from .samples import SamplesRepo
from .scores import ScoresRepo
from .schema import SCHEMA_VERSION

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

__all__ = ["AuditRepo", "DB_NAME", "EvaluationsRepo", "JobsRepo", "LabelsRepo", "PlansRepo", "SCHEMA_VERSION", "SamplesRepo",
           "ScoresRepo", "LabelEvent", "Project", "ProjectError", "ProjectLocked", "ProjectReadOnly", "MAX_PROVENANCE_BYTES",
           "release_freed_memory", "safe_relpath", "wait_for_unlock"]


class Project(ProjectBase):
    """An open project. Use `Project.create`, `Project.open` or `Project.open_snapshot`; its
    repositories are its attributes (``project.labels.add(...)``)."""

    def __init__(self, folder: Path, con: "duckdb.DuckDBPyConnection", read_only: bool,
                 snapshot_dir: Path | None = None) -> None:
        super().__init__(folder, con, read_only, snapshot_dir)
        self.samples = SamplesRepo(self)
        self.labels = LabelsRepo(self)
        self.evaluations = EvaluationsRepo(self)
        self.audit = AuditRepo(self)
        self.plans = PlansRepo(self, self.audit)
        self.scores = ScoresRepo(self)
        self.jobs = JobsRepo(self)

    def _repos(self) -> tuple[Repo, ...]:
        return (self.samples, self.labels, self.evaluations, self.audit, self.plans, self.scores, self.jobs)

    def _after_open_for_writing(self) -> None:
        self.clear_import_leftovers()

    def clear_import_leftovers(self) -> list[str]:
        """Clear what a killed import left under ``images/`` (`workstation.util.staging`): its
        hidden staging folder, or the files of a run folder renamed into place whose run the
        project does not hold. Runs whenever the project is opened for writing (only one process
        can be); returns the entries cleared. A failure here is never the open's error."""
        import logging

        from ..util.staging import clear_stale

        images = self.folder / "images"
        if self.read_only or not images.is_dir() or images.is_symlink():
            return []
        try:
            return clear_stale(images, lambda run_id: run_id in self.samples.run_ids())
        except Exception as e:  # noqa: BLE001 - a leftover stays; the project opens
            logging.getLogger(__name__).warning("could not clear an import's leftovers in %s: %s", images, e)
            return []


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
