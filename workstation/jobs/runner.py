"""Run jobs from the process that holds the project: start a worker process, watch it, ingest.

``JobRun`` is one launch of a stored job. ``start()`` ingests chunks left by an earlier launch,
writes the job's inputs and skip list, and starts the worker process
(the command line's ``jobs worker JOB_DIR``, in its own session so a Ctrl-C in the terminal
reaches only the watcher). ``step()`` never blocks: it reads ``progress.json``, ingests finished
chunks into the project (one transaction each), records the job's state in the project, and
notices the end — including a worker that died without a word (killed, a crash inside a CUDA
library): the job then ends as ``failed`` with the exit signal and the tail of ``worker.out``,
and every finished item stays in the project. ``cancel()`` drops the flag file the worker looks
at between batches; a worker still busy after the grace period (a CUDA call cannot be
interrupted) is terminated, then killed.

``evaluate`` jobs need the database and are fast: they run in this process, inside ``step()``.

``run_job`` is the blocking loop for the command line (with Ctrl-C = cancel).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from .chunks import clean_temporary, finished_keys
from .ingest import IngestResult, ingest_pending
from .kinds import job_kind
from .progress import (
    CANCELLED,
    DONE,
    FAILED,
    FINAL_STATES,
    INTERRUPTED,
    LIVE_STATES,
    QUEUED,
    RUNNING,
    STARTING,
    Progress,
    read_progress,
)
from .spec import JobPaths, JobSpec, append_log, load_spec

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project

ProgressCallback = Callable[[Progress], None]
log = logging.getLogger(__name__)


def worker_command(job_dir: Path) -> list[str]:
    """The command line that runs a job folder's worker: the command line's `jobs worker` (a frozen
    app runs itself), which loads the registered methods before the job runs."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "jobs", "worker", str(job_dir)]
    return [sys.executable, "-m", "workstation.cli", "jobs", "worker", str(job_dir)]


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent.parent)


def pid_alive(pid: int) -> bool:
    if pid <= 0 or os.name == "nt":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        hint = " (out of memory, or killed from outside)" if -rc == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit code {rc}"


class WorkerProcess:
    """The worker process of one job launch."""

    def __init__(self, paths: JobPaths, env: dict[str, str] | None = None) -> None:
        self.paths = paths
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self._cancel_at: float | None = None
        self._terminated_at: float | None = None

    def start(self) -> None:
        self.paths.cancel.unlink(missing_ok=True)
        self.paths.progress.unlink(missing_ok=True)
        env = dict(os.environ if self.env is None else self.env)
        root = _package_root()
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        from ..util.lifeline import PARENT_PID_ENV

        env[PARENT_PID_ENV] = str(os.getpid())  # the worker dies with this process (util.lifeline)
        out = open(self.paths.worker_out, "ab")  # noqa: SIM115 - owned by the child
        try:
            out.write(f"--- worker started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
            out.flush()
            kw: dict[str, Any] = {}
            if os.name == "nt":
                kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
            else:
                kw["start_new_session"] = True
            self.proc = subprocess.Popen(worker_command(self.paths.dir), stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, env=env, cwd=str(self.paths.project), **kw)
        except OSError as e:
            raise WorkstationError(f"cannot start the worker process: {e}") from e
        finally:
            out.close()

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def cancel(self, grace: float) -> None:
        self.paths.cancel.touch()
        if self._cancel_at is None:
            self._cancel_at = time.monotonic() + grace

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_at is not None

    def enforce(self) -> None:
        """Terminate (then kill) a worker that outlived its cancel grace period."""
        if self.proc is None or self.proc.poll() is not None or self._cancel_at is None:
            return
        now = time.monotonic()
        if self._terminated_at is None and now > self._cancel_at:
            self.proc.terminate()
            self._terminated_at = now
        elif self._terminated_at is not None and now > self._terminated_at + 3.0:
            self.proc.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def prepare_inputs(project: "Project", paths: JobPaths, spec: JobSpec) -> str:
    """Write what a launch needs from the database (the kind's plan). Returns a note for the log."""
    return job_kind(spec.kind).prepare(project, paths, spec)


class JobRun:
    """One launch of a stored job, driven by ``step()`` from the process that holds the project."""

    def __init__(self, project: "Project", job_id: str, *, grace: float = 10.0,
                 env: dict[str, str] | None = None) -> None:
        self.project = project
        self.paths = JobPaths(project.folder, job_id)
        self.spec = load_spec(self.paths)
        self.grace = grace
        self.env = env
        self.worker: WorkerProcess | None = None
        self.progress = Progress(state=QUEUED, message="queued")
        self.status = QUEUED
        self.message = ""
        self.ingested = IngestResult()
        self.last_ingest = IngestResult()
        self._recorded_at = 0.0
        self._recorded_state = ""
        self._inline: Generator[Progress, None, None] | None = None
        self._cancelled = False
        self.memory_notes: list[str] = []  # "out of GPU memory at batch size 8 …; going on with 4"

    @property
    def job_id(self) -> str:
        return self.spec.job_id

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATES

    # ---- control ----------------------------------------------------------------------------
    def start(self) -> "JobRun":
        if self.status not in (QUEUED,):
            raise WorkstationError(f"job {self.job_id} was started already")
        self.status = STARTING
        self.progress = Progress(state=STARTING, message="starting")
        try:
            if job_kind(self.spec.kind).inline:
                self._inline = job_kind(self.spec.kind).run_inline(self.project, self.spec)
                self._record(force=True)
                return self
            clean_temporary(self.paths)
            self.last_ingest = ingest_pending(self.project, self.paths, self.spec)
            self.ingested += self.last_ingest
            note = prepare_inputs(self.project, self.paths, self.spec)
            if note:
                append_log(self.paths, note)
                self.message = note
            self.worker = WorkerProcess(self.paths, self.env)
            self.worker.start()
            append_log(self.paths, f"started worker process {self.worker.pid}")
        except WorkstationError as e:
            self._finish(FAILED, str(e))
            return self
        except Exception as e:  # noqa: BLE001 - reported as the job's failure, with the traceback in the log
            log.exception("starting job %s failed", self.job_id)
            self._finish(FAILED, f"cannot start the job: {type(e).__name__}: {e}")
            return self
        self._record(force=True)
        return self

    def cancel(self) -> None:
        """Ask the job to stop after its current batch (terminated after the grace period)."""
        if self.finished:
            return
        self._cancelled = True
        if self.worker is not None:
            self.worker.cancel(self.grace)
            append_log(self.paths, "cancel requested")
        elif self.status == QUEUED or self._inline is not None:
            if self._inline is not None:
                self._inline.close()
            self._finish(CANCELLED, "cancelled")

    def kill(self) -> None:
        """Kill the worker at once (SIGKILL), as a crash would; finished items stay."""
        if self.worker is not None:
            self.worker.kill()

    # ---- watching ---------------------------------------------------------------------------
    def step(self) -> Progress:
        """Poll the worker, ingest finished chunks, record the state; never blocks for long."""
        self.last_ingest = IngestResult()
        if self.finished or self.status == QUEUED:
            return self.progress
        if self._inline is not None:
            return self._step_inline()
        assert self.worker is not None
        self.worker.enforce()
        rc = self.worker.returncode()
        p = read_progress(self.paths.progress)
        if p is not None:
            self.progress = p
            if "out of GPU memory" in p.message and p.message not in self.memory_notes:
                self.memory_notes.append(p.message)
            if p.state in LIVE_STATES:
                self.status = p.state
        try:
            self.last_ingest = ingest_pending(self.project, self.paths, self.spec)
            self.ingested += self.last_ingest
            if rc is not None:  # the worker has ended: everything it finished is on disk
                last = ingest_pending(self.project, self.paths, self.spec)
                self.last_ingest += last
                self.ingested += last
        except Exception as e:  # noqa: BLE001 - a database error (disk full, …) ends the job, not the app
            log.exception("ingesting the results of job %s failed", self.job_id)
            self.worker.cancel(0.0)
            self.worker.enforce()
            self._finish(FAILED, f"cannot add results to the project: {e}; the result files stay in "
                                 f"{self.paths.chunks} and are added when the job is resumed")
            return self.progress
        if rc is None:
            self._record()
            return self.progress
        p = read_progress(self.paths.progress) or self.progress
        self.progress = p
        if p.state == DONE:
            self._finish(DONE, f"done: {p.done}/{p.total} item(s)"
                         + (f" · {self.memory_notes[-1]}" if self.memory_notes else ""))
        elif p.state == FAILED:
            self._finish(FAILED, p.error or p.message or "failed")
        elif p.state == CANCELLED or self._cancelled:
            done = self._count_done()
            self._finish(CANCELLED, f"cancelled at {done}/{p.total}; resume to finish the rest")
        else:
            done = self._count_done()
            out = tail(self.paths.worker_out)
            msg = (f"the worker process stopped unexpectedly ({_exit_text(rc)}) at {done}/{p.total}; "
                   f"the finished items are kept — resume the job to make the rest")
            if out:
                msg += f"\nlast output of the worker:\n{out}"
            self._finish(FAILED, msg)
        return self.progress

    def _step_inline(self) -> Progress:
        assert self._inline is not None
        try:
            p = next(self._inline)
        except StopIteration:
            self._finish(DONE, self.progress.message or "done")
            return self.progress
        except WorkstationError as e:
            self._finish(FAILED, str(e))
            return self.progress
        self.progress = p
        self.status = RUNNING
        if p.state == DONE:
            self._inline = None
            self._finish(DONE, p.message)
        else:
            self._record()
        return self.progress

    def _count_done(self) -> int:
        return len(finished_keys(self.paths)) if not job_kind(self.spec.kind).inline else 0

    def _finish(self, status: str, message: str) -> None:
        self.status = status
        self.message = message
        self.progress.state = status
        self.progress.eta = None
        if status == FAILED:
            self.progress.error = message
        self.progress.message = message.splitlines()[0] if message else status
        append_log(self.paths, message if message.startswith(status) else f"{status}: {message}")
        self._record(force=True)

    def _record(self, force: bool = False) -> None:
        """Mirror the state into the project's jobs table (at most once a second unless it changed)."""
        now = time.monotonic()
        if not force and self.status == self._recorded_state and now - self._recorded_at < 1.0:
            return
        if self.project.read_only:
            return
        try:
            self.project.jobs.record(self.job_id, self.spec.kind, self.spec.to_dict(), status=self.status,
                                     done=int(self.progress.done), total=int(self.progress.total),
                                     message=self.message or self.progress.message)
        except Exception:  # noqa: BLE001 - bookkeeping must not end the job
            return
        self._recorded_at = now
        self._recorded_state = self.status

    def wait(self, on_progress: ProgressCallback | None = None, poll: float = 0.2,
             timeout: float | None = None) -> Progress:
        """Step until the job ends (for scripts and tests)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            p = self.step()
            if on_progress is not None:
                on_progress(p)
            if self.finished:
                return p
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.job_id} did not finish in {timeout} s")
            time.sleep(poll)


def run_job(project: "Project", job_id: str, on_progress: ProgressCallback | None = None, *,
            poll: float = 0.2, grace: float = 10.0, env: dict[str, str] | None = None) -> JobRun:
    """Start a job and watch it to the end. Ctrl-C cancels it (twice: kills the worker)."""
    run = JobRun(project, job_id, grace=grace, env=env).start()
    interrupts = 0
    while not run.finished:
        try:
            p = run.step()
            if on_progress is not None:
                on_progress(p)
            if run.finished:
                break
            time.sleep(poll)
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts == 1:
                print("\ncancelling after the current batch (Ctrl-C again to stop at once)…", file=sys.stderr)
                run.cancel()
            else:
                run.kill()
    if on_progress is not None:
        on_progress(run.progress)
    return run


# ---- listing and cancelling from outside ------------------------------------------------------------
def live_status(project_folder: Path, job: dict[str, Any]) -> str:
    """The job's state as recorded, with a dead 'running' one shown as 'interrupted'."""
    status = str(job.get("status") or "")
    if status in LIVE_STATES:
        try:
            paths = JobPaths(project_folder, job.get("job_id"))  # type: ignore[arg-type]
        except WorkstationError:  # a row whose id names no folder of the project: nothing runs it
            return INTERRUPTED
        p = read_progress(paths.progress)
        if p is None or p.final or not pid_alive(p.pid):
            return INTERRUPTED
    return status


def request_cancel(project_folder: str | Path, job_id: str) -> bool:
    """Ask a running worker (of any process) to stop at its next batch. True if one is running."""
    paths = JobPaths(Path(project_folder), job_id)
    if not paths.spec.is_file():
        raise WorkstationError(f"no job {job_id!r} in {project_folder}")
    p = read_progress(paths.progress)
    running = p is not None and not p.final and pid_alive(p.pid)
    if running:
        paths.cancel.touch()
        append_log(paths, "cancel requested from outside")
    return running
