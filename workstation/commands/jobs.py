"""`jobs`: the project's job history; resume, cancel, or run a worker.

    python main.py jobs list   --project DIR
    python main.py jobs show   --project DIR JOB_ID        (spec, state and the end of its log)
    python main.py jobs resume --project DIR [JOB_ID ...]  (default: every unfinished job, in order)
    python main.py jobs cancel --project DIR JOB_ID        (from another terminal: stop after the batch)
    python main.py jobs worker JOB_DIR                     (internal: the worker process itself)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from ..command_base import add_command, add_project_arg

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = add_command(sub, "jobs", "list, show, resume or cancel jobs", run, doc=__doc__)
    js = p.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)
    for name, help_ in (("list", "the project's jobs"), ("show", "one job's spec, state and log"),
                        ("resume", "run unfinished jobs again (finished items are skipped)"),
                        ("cancel", "ask a running job to stop after its current batch")):
        q = js.add_parser(name, help=help_)
        add_project_arg(q)
        if name in ("show", "cancel"):
            q.add_argument("job_id", type=_job_id)
        elif name == "resume":
            q.add_argument("job_id", nargs="*", type=_job_id)
        if name == "show":
            q.add_argument("--lines", type=int, default=20, help="log lines to show")
    w = js.add_parser("worker", help="(internal) run the worker process of one job folder")
    w.add_argument("job_dir")


def _job_id(text: str) -> str:
    """A job id from the command line: one that can name a folder jobs/<job_id>/ of the project."""
    from ..util.ids import check_job_id

    try:
        return check_job_id(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def describe_job(project_folder: Path, row: dict[str, Any]) -> str:
    """One line on what a job row does, from its folder's spec or else its stored spec; a row
    from elsewhere (a merged shard) whose spec is broken is described as such, never an error."""
    from ..jobs.spec import JobPaths, JobSpec, load_spec

    try:
        return load_spec(JobPaths(project_folder, row.get("job_id"))).describe()  # type: ignore[arg-type]
    except WorkstationError:
        pass
    try:
        return JobSpec.from_dict(row.get("spec")).describe() if row.get("spec") else ""
    except WorkstationError as e:
        return f"(unreadable spec: {' '.join(str(e).split())[:80]})"


def run(args: argparse.Namespace) -> int:
    cmd = args.jobs_command
    if cmd == "worker":
        from .. import methods  # noqa: F401  (the demo's generator draws each method's rows with its renderer)
        from ..jobs.worker import run_worker

        return run_worker(args.job_dir)
    if cmd == "cancel":
        return _cancel(args.project, args.job_id)
    if cmd == "resume":
        return _resume(args.project, args.job_id)
    from ..command_base import reading_project

    with reading_project(args.project) as project:
        if cmd == "list":
            return _list(project)
        return _show(project, args.job_id, args.lines)


def _list(project: "Project") -> int:
    from ..jobs.runner import live_status

    jobs = project.jobs.all()
    if not jobs:
        print("no jobs in this project")
        return 0
    print(f"{'job':46} {'kind':9} {'state':12} {'done':>11}  what")
    for j in jobs:
        what = describe_job(project.folder, j)
        done = f"{j['done'] or 0}/{j['total'] or 0}"
        jid = str(j["job_id"])
        print(f"{jid if jid.isprintable() else ascii(jid):46} {str(j['kind'] or ''):9} "
              f"{live_status(project.folder, j):12} {done:>11}  {what}")
    return 0


def _show(project: "Project", job_id: str, lines: int) -> int:
    from ..jobs.progress import format_progress, read_progress
    from ..jobs.runner import live_status, tail
    from ..jobs.spec import JobPaths, load_spec

    paths = JobPaths(project.folder, job_id)
    spec = load_spec(paths)
    row = next((j for j in project.jobs.all() if j["job_id"] == job_id), None)
    print(f"job       {job_id}")
    print(f"what      {spec.describe()}")
    if row is not None:
        print(f"state     {live_status(project.folder, row)}  ({row['done'] or 0}/{row['total'] or 0})")
        if row["message"]:
            print(f"message   {row['message']}")
    p = read_progress(paths.progress)
    if p is not None:
        print(f"progress  {format_progress(p)}")
    print(f"folder    {paths.dir}")
    print("spec      " + json.dumps(spec.to_dict(), sort_keys=True, default=str))
    log = tail(paths.log, lines)
    if log:
        print("log:\n" + log)
    return 0


def _resume(folder: Path, job_ids: list[str]) -> int:
    from ..jobs.progress import DONE
    from ..jobs.runner import live_status
    from ..command_base import open_project
    from ..methods import after_samples_changed
    from .generate import exit_code, watch

    project = open_project(folder)
    try:
        from ..util.ids import check_job_id

        jobs = {j["job_id"]: j for j in project.jobs.all()}
        if not job_ids:
            bad = []
            for jid in list(jobs):
                try:
                    check_job_id(jid)
                except ValueError:
                    bad.append(jobs.pop(jid))
            if bad:
                print(f"note: {len(bad)} job row(s) with an id that names no job folder are left alone "
                      f"(e.g. {ascii(str(bad[0]['job_id']))[:60]})", file=sys.stderr)
            job_ids = [jid for jid, j in jobs.items() if live_status(project.folder, j) != DONE]
            if not job_ids:
                print("every job of the project is done")
                return 0
        for jid in job_ids:
            if jid not in jobs:
                raise WorkstationError(f"no job {jid!r} in {folder}; see `jobs list`")
        code = 0
        for jid in job_ids:
            unit = "img" if jobs[jid]["kind"] == "generate" else "sample"
            code = exit_code(watch(project, jid, unit=unit))
            if code == 130:
                break
        if code == 0 and any(_changes_detections(jobs[jid]) for jid in job_ids):
            after_samples_changed(project)
        return code
    finally:
        project.close()


def _changes_detections(job: dict[str, Any]) -> bool:
    """Whether a job writes the project's detections where the window opens them (a detect job
    of the whole project; a shard's project is merged, not opened)."""
    from ..jobs.shards import Shard

    spec = job.get("spec")
    return job.get("kind") == "detect" and isinstance(spec, dict) and Shard.parse(spec.get("shard")).whole


def _cancel(folder: Path, job_id: str) -> int:
    from ..jobs.runner import request_cancel

    if request_cancel(folder, job_id):
        print(f"asked job {job_id} to stop after its current batch")
        return 0
    # no worker: a queued or stale job is marked cancelled if the project can be opened
    from ..store import Project, ProjectLocked

    try:
        project = Project.open(folder)
    except ProjectLocked:
        print(f"job {job_id} has no running worker; the project is open elsewhere", file=sys.stderr)
        return 1
    try:
        from ..jobs.spec import JobPaths, load_spec

        spec = load_spec(JobPaths(project.folder, job_id))
        project.jobs.record(job_id, spec.kind, spec.to_dict(), status="cancelled", message="cancelled (not running)")
    finally:
        project.close()
    print(f"job {job_id} was not running; marked cancelled (resume it to finish)")
    return 0
