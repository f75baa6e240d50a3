"""The worker process: ``python -m workstation.jobs.worker JOB_DIR``.

It runs ``work.iter_job`` for the job folder, writes each progress report to
``progress.json`` (atomically), appends to ``log.txt``, and stops at the next batch when the
``cancel`` flag file appears. It never opens the project database. Its exit code and final
progress state say how it ended:

====  ==========  ==================================================================
code  state       meaning
====  ==========  ==================================================================
0     done        every item of the job (its shard) is finished
2     failed      an error the user can fix (missing model folder, unknown scheduler,
                  corrupt weights, out of disk …); ``error`` holds the message
3     cancelled   the cancel flag was seen
1     failed      an unexpected error; the traceback is in the log
====  ==========  ==================================================================

A process that dies without a final state (killed, segfault in a CUDA library) is reported by
the watching process (``runner``), which reads the tail of ``worker.out``. The other way round,
a worker started by a watching process ends when that process ends, even when it is killed
(``util.lifeline``: ``PR_SET_PDEATHSIG`` on Linux and a parent-pid watchdog).

Set ``WORKSTATION_JOB_DELAY`` (seconds) to pause after every batch — for demonstrations and
tests that need to watch, cancel or kill a job in the middle.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from ..types import WorkstationError
from .progress import CANCELLED, DONE, FAILED, STARTING, Progress, read_progress, write_progress
from .spec import JobPaths, append_log

EXIT_DONE = 0
EXIT_UNEXPECTED = 1
EXIT_FAILED = 2
EXIT_CANCELLED = 3
DELAY_ENV = "WORKSTATION_JOB_DELAY"


def run_worker(job_dir: str | Path, delay: float | None = None) -> int:
    """Do the job in ``job_dir`` in this process, reporting through its files; returns the exit code."""
    from .work import iter_job

    from ..util.lifeline import die_with_parent

    tied = die_with_parent()  # started by a watching process: end when it ends (killed or not)
    paths = JobPaths.of_dir(job_dir)
    if not paths.spec.is_file():
        print(f"error: {paths.dir} is not a job folder (no spec.json)", file=sys.stderr)
        return EXIT_FAILED
    if delay is None:
        try:
            delay = float(os.environ.get(DELAY_ENV, "0") or 0)
        except ValueError:
            delay = 0.0
    pid = os.getpid()

    def say(msg: str) -> None:
        append_log(paths, msg)

    def report(p: Progress) -> None:
        p.pid = pid
        p.updated = time.time()
        write_progress(paths.progress, p)

    last = Progress(state=STARTING, message="starting")
    report(last)
    say(f"worker {pid} started" + (f" (ends with its parent, process {os.getppid()})" if tied else ""))
    gen = iter_job(paths.dir, log=say, delay=delay)
    try:
        for p in gen:
            last = p
            report(p)
            if paths.cancel.exists():
                gen.close()
                last.state, last.message, last.eta = CANCELLED, f"cancelled at {last.done}/{last.total}", None
                report(last)
                say(f"cancelled at {last.done}/{last.total}; resume to finish the rest")
                return EXIT_CANCELLED
    except WorkstationError as e:
        last.state, last.error, last.message, last.eta = FAILED, str(e), str(e), None
        report(last)
        say(f"failed: {e}")
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - reported to the watcher, traceback in the log
        msg = f"unexpected error in the worker: {type(e).__name__}: {e}"
        last.state, last.error, last.message, last.eta = FAILED, msg, msg, None
        report(last)
        say(msg + "\n" + traceback.format_exc())
        return EXIT_UNEXPECTED
    last.state, last.eta = DONE, 0.0
    last.message = f"done: {last.done}/{last.total}"
    report(last)
    say(f"finished: {last.done}/{last.total} item(s)")
    return EXIT_DONE


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workstation.jobs.worker",
                                 description="Run one job of a project folder (used by the workstation).")
    ap.add_argument("job_dir", help="the job folder: PROJECT/jobs/JOB_ID")
    ap.add_argument("--delay", type=float, default=None, help="seconds to pause after each batch")
    args = ap.parse_args(argv)
    return run_worker(args.job_dir, args.delay)


def last_state(job_dir: str | Path) -> Progress | None:
    return read_progress(JobPaths.of_dir(job_dir).progress)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
