"""A queue of jobs run one after another, driven by ``step()`` (a GUI timer or a CLI loop).

The queue owns at most one ``JobRun`` at a time; when it ends, the next queued job starts.
A job may be submitted ``after`` others (a chain: generate → detect → evaluate): when one of
them ends without success, the jobs that depend on it are not run (recorded as cancelled, with
the job that stopped them named). Every job's state is mirrored in the project's jobs table, so
the history outlives the queue.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..types import WorkstationError
from .progress import CANCELLED, DONE, QUEUED, Progress
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
        self.after: dict[str, list[str]] = {}  # job → the jobs it needs to have succeeded
        self.failed: dict[str, str] = {}  # job → its final state, for jobs that ended without success
        self.skipped: dict[str, str] = {}  # job → the failed job that stopped it
        self.on_skipped: Callable[[str, str], None] | None = None  # (skipped job, the job that failed)

    @property
    def idle(self) -> bool:
        return self.current is None and not self.pending

    def submit(self, job_id: str, after: Sequence[str] = ()) -> None:
        """Queue a stored job (a new one, or one to resume); it runs only if every job of `after`
        (queued before it) succeeds."""
        paths = JobPaths(self.project.folder, job_id)
        spec = load_spec(paths)
        if job_id in self.pending or (self.current is not None and self.current.job_id == job_id):
            raise WorkstationError(f"job {job_id} is already queued or running")
        self.pending.append(job_id)
        self.after[job_id] = [str(a) for a in after]
        self.skipped.pop(job_id, None)
        self.failed.pop(job_id, None)
        if not self.project.read_only:
            self.project.jobs.record(job_id, spec.kind, spec.to_dict(), status=QUEUED, message="queued")

    def cancel(self, job_id: str) -> None:
        """Cancel a queued job, or ask the running one to stop after its current batch."""
        if self.current is not None and self.current.job_id == job_id:
            self.current.cancel()
            return
        if job_id in self.pending:
            self.pending.remove(job_id)
            spec = load_spec(JobPaths(self.project.folder, job_id))
            append_log(JobPaths(self.project.folder, job_id), "removed from the queue")
            self.project.jobs.record(job_id, spec.kind, spec.to_dict(), status=CANCELLED, message="cancelled before it started")

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
                if run.status != DONE:
                    self.failed[run.job_id] = run.status
                if self.on_finished is not None:
                    self.on_finished(run)
                if run.status != DONE:
                    self._skip_dependents(run.job_id)
                return run
            return run
        if self.pending:
            job_id = self.pending.pop(0)
            run = JobRun(self.project, job_id, grace=self.grace, env=self.env)
            self.current = run
            run.start()
            return run
        return None

    def _skip_dependents(self, failed: str) -> None:
        """Take every pending job that needs `failed` (directly or through another) off the queue."""
        stopped = {failed}
        changed = True
        while changed:
            changed = False
            for j in list(self.pending):
                if stopped & set(self.after.get(j, ())):
                    self.pending.remove(j)
                    stopped.add(j)
                    changed = True
                    self.skipped[j] = failed
                    paths = JobPaths(self.project.folder, j)
                    spec = load_spec(paths)
                    why = f"not run: {failed} ended {self.failed.get(failed, 'without success')}"
                    append_log(paths, why)
                    if not self.project.read_only:
                        self.project.jobs.record(j, spec.kind, spec.to_dict(), status=CANCELLED, message=why)
                    if self.on_skipped is not None:
                        self.on_skipped(j, failed)

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
