"""Worker processes die with their parent (issue: a killed demo build left its workers alive
for good, re-parented to init and blocked on a pipe).

Each test starts a real parent process, waits until its workers are busy, kills the parent with
SIGKILL (nothing runs in it afterwards: no atexit, no finally) and checks every worker is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import weakref
from pathlib import Path

import pytest

from tests.proc import Lines

from workstation.cli import main

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")


def children_of(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(d.name))
    return out


def alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def start_parent(script: str, tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    f = tmp_path / "parent.py"
    f.write_text(textwrap.dedent(script), encoding="utf-8")
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.Popen([sys.executable, str(f)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=str(tmp_path), env=e)


def wait_for_line(proc: subprocess.Popen[str], prefix: str, timeout: float = 120.0) -> str:
    out = _LINES.get(proc)
    if out is None:
        out = _LINES[proc] = Lines(proc)
    out.extend(timeout)  # each read bounded by the deadline
    try:
        return out.wait_for(lambda line: line.startswith(prefix)) + "\n"
    except AssertionError:
        proc.kill()
        raise


_LINES: "weakref.WeakKeyDictionary[subprocess.Popen[str], Lines]" = weakref.WeakKeyDictionary()


def wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = {p for p in pids if alive(p)}
        if not left:
            return set()
        time.sleep(0.1)
    return {p for p in pids if alive(p)}


def test_demo_build_workers_die_when_the_builder_is_killed(tmp_path: Path) -> None:
    workers: set[int] = set()
    proc = start_parent("""
        import sys
        from workstation.methods.spatial.demo import build_demo_dataset
        from workstation.methods.spatial.suite import spatial_suite

        said = []
        def progress(done, total):
            if done > 0 and not said:
                said.append(1)
                print("BUSY", flush=True)

        if __name__ == "__main__":
            build_demo_dataset("demo", n_seeds=8, prompts=spatial_suite(n_pairs=25), progress=progress,
                               workers=2, chunk_size=4)
            print("FINISHED", flush=True)
    """, tmp_path)
    try:
        wait_for_line(proc, "BUSY")
        workers = children_of(proc.pid)
        assert len(workers) >= 2, f"expected the pool's worker processes, found {workers}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        left = wait_gone(workers)
        assert not left, f"worker process(es) {sorted(left)} outlived the killed builder"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in workers | children_of(proc.pid):
            if alive(p):
                os.kill(p, signal.SIGKILL)


def test_job_worker_dies_when_the_watching_process_is_killed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    assert main(["generate", "--project", str(project), "--suite", "builtin", "--pairs", "2", "--model",
                 "procedural", "--seeds", "3", "--batch-size", "1", "--no-run"]) == 0
    proc = start_parent(f"""
        import time
        from workstation.jobs.runner import JobRun
        from workstation.store import Project

        project = Project.open({str(project)!r})
        job_id = project.jobs.all()[0]["job_id"]
        run = JobRun(project, job_id).start()
        print("WORKER", run.worker.pid, flush=True)
        while True:
            run.step()
            time.sleep(0.2)
    """, tmp_path, env={"WORKSTATION_JOB_DELAY": "30"})
    worker = 0
    try:
        worker = int(wait_for_line(proc, "WORKER").split()[1])
        time.sleep(1.0)  # the worker is up and pausing after its first batch
        assert alive(worker)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        left = wait_gone({worker})
        assert not left, f"the job's worker process {worker} outlived the killed watcher"
    finally:
        if proc.poll() is None:
            proc.kill()
        if worker and alive(worker):
            os.kill(worker, signal.SIGKILL)


def test_a_worker_started_without_a_parent_pid_is_not_tied(monkeypatch: pytest.MonkeyPatch) -> None:
    from workstation.util.lifeline import PARENT_PID_ENV, die_with_parent

    monkeypatch.delenv(PARENT_PID_ENV, raising=False)
    assert die_with_parent() is False  # e.g. `jobs worker` run by hand, or a test calling it in-process
