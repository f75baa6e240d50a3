"""Job kinds, registered by name: what a kind plans, runs and ingests.

A kind is an object with

* ``describe(spec)`` — one line for lists;
* ``prepare(project, paths, spec) -> note`` — the plan: before each launch, write what the
  worker needs from the database into the job folder (inputs, skip list);
* ``run(paths, spec, say, delay)`` — the work, in the worker process, as a generator of
  ``Progress`` that writes result chunks and never opens the database;
* ``ingest(project, paths, spec, cols, items, src_root)`` — add one finished chunk to the
  project (in the process that holds it);

or, for a kind that needs the database and is fast (``inline = True``), ``run_inline(project,
spec)``, a generator run by the holder itself. Kinds are imported only when a job of theirs is
created, described or run, so a kind may live in any layer: ``evaluate`` needs the methods and
lives with them. A new kind is one module and one line in `kind_registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from .kind_registry import KINDS

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project
    from .ingest import IngestResult
    from .progress import Progress
    from .spec import JobPaths, JobSpec

LogFn = Callable[[str], None]


class JobKind:
    """Base of every job kind (see the module docstring)."""

    name: str = ""
    inline: bool = False
    unit: str = "item"  # what one item is, for progress lines ("image", "sample", "score")

    def describe(self, spec: "JobSpec") -> str:
        return self.name

    def check(self, spec: "JobSpec") -> None:
        """Refuse a spec that can only fail (unknown backend, missing model folder) before it is stored."""

    def prepare(self, project: "Project", paths: "JobPaths", spec: "JobSpec") -> str:
        return ""

    def run(self, paths: "JobPaths", spec: "JobSpec", say: LogFn, delay: float) -> Iterator["Progress"]:
        raise WorkstationError(f"a {self.name} job runs in the process that holds the project, not in a worker")

    def ingest(self, project: "Project", paths: "JobPaths", spec: "JobSpec", cols: dict[str, list[Any]],
               items: list[str], src_root: Path | None) -> "IngestResult":
        raise WorkstationError(f"a {self.name} job has no chunks to ingest")

    def run_inline(self, project: "Project", spec: "JobSpec") -> Generator["Progress", None, None]:
        raise WorkstationError(f"a {self.name} job runs in a worker process")
        yield  # pragma: no cover


def job_kind(name: str) -> JobKind:
    """The registered kind ``name`` (its module is imported now)."""
    return KINDS.get(name)  # type: ignore[return-value]


def kind_names() -> list[str]:
    return KINDS.names()
