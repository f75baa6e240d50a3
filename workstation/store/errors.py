"""The errors of a project's store."""

from __future__ import annotations

from ..types import WorkstationError


class ProjectError(WorkstationError):
    pass


class ProjectLocked(ProjectError):
    """Another process holds the project for writing."""


class ProjectReadOnly(ProjectError):
    """The project's folder or database file cannot be written (a read-only folder or medium)."""
