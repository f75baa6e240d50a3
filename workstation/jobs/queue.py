"""A queue of jobs run one after another, driven by ``step()`` (a GUI timer or a CLI loop).

The queue owns at most one ``JobRun`` at a time; when it ends, the next queued job starts.
Every job's state is mirrored in the project's jobs table, so the history outlives the queue.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..types import WorkstationError
from .progress import CANCELLED, QUEUED, Progress
from .runner import JobRun
from .spec import JobPaths, append_log, load_spec

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project


class JobQueue:
    """Jobs waiting to run, and the one running."""

    def __init__(self, project: "Project", *, grace: float = 10.0, env: dict[str, str] | None = None) -> None:
        self.project = project
        self.grace = grace
        self.env = env
        self.pending: list[str] = []
        self.current: JobRun | None = None
        self.finished: list[JobRun] = []  # launches that ended, oldest first
        self.on_finished: Callable[[JobRun], None] | None = None

    @property
    def idle(self) -> bool:
        return self.current is None and not self.pending

    def submit(self, job_id: str) -> None:
        """Queue a stored job (a new one, or one to resume)."""
        paths = JobPaths(self.project.folder, job_id)
        spec = load_spec(paths)
        if job_id in self.pending or (self.current is not None and self.current.job_id == job_id):
            raise WorkstationError(f"job {job_id} is already queued or running")
        self.pending.append(job_id)
        if not self.project.read_only:
            self.project.record_job(job_id, spec.kind, spec.to_dict(), status=QUEUED, message="queued")

    def cancel(self, job_id: str) -> None:
        """Cancel a queued job, or ask the running one to stop after its current batch."""
        if self.current is not None and self.current.job_id == job_id:
            self.current.cancel()
            return
        if job_id in self.pending:
            self.pending.remove(job_id)
            spec = load_spec(JobPaths(self.project.folder, job_id))
            append_log(JobPaths(self.project.folder, job_id), "removed from the queue")
            self.project.record_job(job_id, spec.kind, spec.to_dict(), status=CANCELLED, message="cancelled before it started")

    def cancel_all(self) -> None:
        for j in list(self.pending):
            self.cancel(j)
        if self.current is not None:
            self.current.cancel()

    def step(self) -> JobRun | None:
        """Advance: poll the running job (ingesting its results), start the next one. Returns the
        job that is running after this step (or the one that just ended, on the step it ends)."""
        run = self.current
        if run is not None:
            run.step()
            if run.finished:
                self.current = None
                self.finished.append(run)
                if self.on_finished is not None:
                    self.on_finished(run)
                return run
            return run
        if self.pending:
            job_id = self.pending.pop(0)
            run = JobRun(self.project, job_id, grace=self.grace, env=self.env)
            self.current = run
            run.start()
            return run
        return None

    def run_all(self, on_progress: Callable[[JobRun, Progress], None] | None = None, poll: float = 0.2) -> list[JobRun]:
        """Run every queued job to its end (blocking)."""
        start = len(self.finished)
        while not self.idle:
            run = self.step()
            if run is not None and on_progress is not None:
                on_progress(run, run.progress)
            if self.current is not None and not self.current.finished:
                time.sleep(poll)
        return self.finished[start:]
