"""The shard pipeline on a running Slurm cluster: packaging/slurm/ submitted to a real scheduler.

A one-node cluster (slurmctld, slurmd, slurmdbd with MariaDB for sacct, MUNGE) is brought up in a
temporary folder for the module and torn down after it (``tests/slurm_cluster.py``). Through it,
``submit.sh 4`` runs a procedural generation + detection job as an array of 4 tasks and the merge
step after them; the merged project must equal a one-machine run of the same job. Then the faults
a lab meets: a task that fails (the merge does not run; sacct and a merge started by hand say
why; the task submitted again alone resumes and the merge completes, nothing made twice) and a
task cancelled with ``scancel`` mid-way (it resumes where it stopped).

Skipped, with the reason, where the packages are missing or the test does not run as root.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.slurm_cluster import SlurmCluster, one_machine_run, project_summary, unavailable
from workstation.commands.pipeline import load_suite
from workstation.jobs.chunks import finished_keys
from workstation.jobs.progress import RUNNING, read_progress
from workstation.jobs.spec import GenItem, JobPaths, JobSpec, generation_items

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "packaging" / "slurm"
SHARDS, PAIRS, SEEDS, RUN_ID = 4, 3, 2, "slurm-demo"  # 24 images, about 6 a shard
WAIT = 240.0  # seconds any one wait for the scheduler may take on a loaded 2-core machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    c = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield c.start()
    finally:
        c.stop()


@pytest.fixture(scope="module")
def one_machine(cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = one_machine_run(tmp_path_factory.mktemp("one") / "project", pairs=PAIRS, seeds=SEEDS, run_id=RUN_ID)
    return project_summary(folder)


def settings(folder: Path, **extra: str) -> dict[str, str]:
    """The environment submit.sh passes on to the tasks (sbatch --export=ALL)."""
    return {"WORKSTATION_ROOT": str(ROOT), "PYTHON": sys.executable, "SHARDS": str(SHARDS),
            "SHARDS_DIR": str(folder / "shards"), "PROJECT": str(folder / "merged"), "SUITE": "builtin",
            "PAIRS": str(PAIRS), "SEEDS": str(SEEDS), "RUN_ID": RUN_ID, "MODEL": "procedural", "DETECTOR": "scene",
            "WORKSTATION_JOB_DELAY": "0", **extra}


def submit(cluster: SlurmCluster, folder: Path, env: dict[str, str], *tasks: str) -> tuple[str, str]:
    """``bash packaging/slurm/submit.sh 4 [TASKS]`` from ``folder``: (array job id, merge job id)."""
    r = cluster.run(["bash", str(SLURM / "submit.sh"), str(SHARDS), *tasks], env=env, cwd=folder, timeout=60)
    m = re.search(r"generation array job (\d+), .*; merge job (\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    return m.group(1), m.group(2)


def shard_items(task: int) -> list[GenItem]:
    prompts, _label = load_suite("builtin", PAIRS)
    spec = JobSpec(job_id="g", kind="generate", run_id=RUN_ID, seeds=list(range(SEEDS)), shard=[task + 1, SHARDS])
    return generation_items(spec, prompts)


def busiest_task() -> tuple[int, list[GenItem]]:
    task = max(range(SHARDS), key=lambda k: len(shard_items(k)))
    items = shard_items(task)
    assert len(items) >= 4, "the job is too small to stop a task mid-way"
    return task, items


def generate_job(folder: Path, task: int) -> JobPaths:
    return JobPaths(folder / "shards" / f"task_{task}", f"generate-{RUN_ID}-shard{task + 1}of{SHARDS}")


def image_mtimes(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (folder / "shards").glob("task_*/images/**/*.png")}


def states(recs: dict[str, dict[str, str]]) -> dict[str, str]:
    return {k: v["State"] for k, v in recs.items()}


def worker_launches(job: JobPaths) -> int:
    return job.log.read_text().count("started worker process")


def test_the_array_and_its_merge_make_what_one_machine_makes(cluster: SlurmCluster, one_machine: dict[str, Any],
                                                            tmp_path: Path) -> None:
    started = time.monotonic()
    array, merge = submit(cluster, tmp_path, settings(tmp_path))
    recs = cluster.wait_final([array, merge], WAIT, count=SHARDS + 1)
    assert states(recs) == {**{f"{array}_{k}": "COMPLETED" for k in range(SHARDS)}, merge: "COMPLETED"}
    assert {r["ExitCode"] for r in recs.values()} == {"0:0"}
    print(f"array of {SHARDS} and merge on the cluster: {time.monotonic() - started:.1f} s")
    shard_ids = []
    for k in range(SHARDS):
        log = (tmp_path / f"t2i-generate-{array}_{k}.out").read_text()
        note = f"shard {k + 1}/{SHARDS} from the Slurm job array (SLURM_ARRAY_TASK_ID={k}, WORKSTATION_SHARDS={SHARDS})"
        assert note in log
        ids = set(project_summary(tmp_path / "shards" / f"task_{k}")["images"])
        assert ids == {it.key for it in shard_items(k)}  # its shard, every image detected (below)
        shard_ids.append(ids)
    assert sum(len(s) for s in shard_ids) == len(set().union(*shard_ids)) == PAIRS * 4 * SEEDS
    merged = project_summary(tmp_path / "merged")
    assert merged == one_machine
    assert {d[0] for d in merged["detections"]} == set(merged["samples"])


def test_a_failed_task_stops_the_merge_and_runs_again_alone(cluster: SlurmCluster, one_machine: dict[str, Any],
                                                          tmp_path: Path) -> None:
    task, items = busiest_task()
    env = settings(tmp_path, GEN_ARGS="--batch-size 1")
    # the task's third image cannot be written (a folder stands where it goes): the task fails mid-way
    obstacle = tmp_path / "shards" / f"task_{task}" / items[2].image_path
    obstacle.mkdir(parents=True)
    (obstacle / "in-the-way").write_text("x")
    array, merge = submit(cluster, tmp_path, env)
    recs = cluster.wait_final([array, merge], WAIT, count=SHARDS + 1)
    assert states(recs) == {**{f"{array}_{k}": "COMPLETED" for k in range(SHARDS) if k != task},
                            f"{array}_{task}": "FAILED", merge: "CANCELLED"}
    assert recs[f"{array}_{task}"]["ExitCode"] != "0:0"
    assert recs[merge]["Elapsed"] == "00:00:00"  # the merge never ran: Slurm cancelled it, and says why
    assert "Reason=DependencyNeverSatisfied" in cluster.run(["scontrol", "show", "job", merge]).stdout
    assert not (tmp_path / "merged").exists() and not list(tmp_path.glob("t2i-merge-*.out"))
    task_log = (tmp_path / f"t2i-generate-{array}_{task}.out").read_text()
    assert Path(items[2].image_path).name in task_log
    job = generate_job(tmp_path, task)
    done = finished_keys(job)
    assert done == {items[0].key, items[1].key}

    # a merge started by hand refuses, and its log names the task and how to run it again
    out = cluster.run(["sbatch", "--parsable", str(SLURM / "merge.sbatch")], env=env, cwd=tmp_path).stdout
    by_hand = out.strip().split(";")[0]
    rec = cluster.wait_final([by_hand], WAIT, count=1)
    assert rec[by_hand]["State"] == "FAILED"
    merge_log = (tmp_path / f"t2i-merge-{by_hand}.out").read_text()
    assert f"task_{task} is not finished: job {job.dir.name} is failed" in merge_log
    assert f"packaging/slurm/submit.sh {SHARDS}" in merge_log
    assert not (tmp_path / "merged").exists()

    # the fault cleared, only that task is submitted again, with the merge after it
    shutil.rmtree(obstacle)
    before = image_mtimes(tmp_path)
    array2, merge2 = submit(cluster, tmp_path, env, str(task))
    recs2 = cluster.wait_final([array2, merge2], WAIT, count=2)
    assert states(recs2) == {f"{array2}_{task}": "COMPLETED", merge2: "COMPLETED"}
    # nothing made twice: the images made before keep their files; the task made only the rest
    after = image_mtimes(tmp_path)
    assert {p: after.get(p) for p in before} == before
    log = job.log.read_text()
    assert f"resuming: 2 of {len(items)} item(s) already done" in log
    assert [int(n) for n in re.findall(r"generating (\d+) image", log)] == [len(items), len(items) - 2]
    assert [worker_launches(generate_job(tmp_path, k)) for k in range(SHARDS)] == [
        2 if k == task else 1 for k in range(SHARDS)]
    assert project_summary(tmp_path / "merged") == one_machine


def test_a_task_cancelled_midway_resumes(cluster: SlurmCluster, one_machine: dict[str, Any],
                                         tmp_path: Path) -> None:
    task, items = busiest_task()
    # half a second after each image, so that the task is caught in the middle of its shard
    env = settings(tmp_path, GEN_ARGS="--batch-size 1")
    array, merge = submit(cluster, tmp_path, {**env, "WORKSTATION_JOB_DELAY": "0.5"})
    job = generate_job(tmp_path, task)
    deadline = time.monotonic() + WAIT
    while True:
        p = read_progress(job.progress)
        if p is not None and p.state == RUNNING and p.done >= 2:
            break
        assert time.monotonic() < deadline, f"task {task} did not get under way: {p}"
        time.sleep(0.1)
    cluster.run(["scancel", f"{array}_{task}"])
    recs = cluster.wait_final([array, merge], WAIT, count=SHARDS + 1)
    assert states(recs) == {**{f"{array}_{k}": "COMPLETED" for k in range(SHARDS) if k != task},
                            f"{array}_{task}": "CANCELLED", merge: "CANCELLED"}
    done = finished_keys(job)
    assert 2 <= len(done) < len(items)
    assert "CANCELLED" in (tmp_path / f"t2i-generate-{array}_{task}.out").read_text()

    # the finished images of the cancelled task and every image of the others
    own = tmp_path / "shards" / f"task_{task}"
    finished = {own / it.image_path for it in items if it.key in done}
    before = {p: t for p, t in image_mtimes(tmp_path).items() if p in finished or not p.is_relative_to(own)}
    assert finished <= set(before)
    array2, merge2 = submit(cluster, tmp_path, env, str(task))  # the same settings, at full speed
    recs2 = cluster.wait_final([array2, merge2], WAIT, count=2)
    assert states(recs2) == {f"{array2}_{task}": "COMPLETED", merge2: "COMPLETED"}
    # it went on from where it was stopped: nothing finished was made again
    after = image_mtimes(tmp_path)
    assert {p: after.get(p) for p in before} == before
    log = job.log.read_text()
    assert f"resuming: {len(done)} of {len(items)} item(s) already done" in log
    assert [int(n) for n in re.findall(r"generating (\d+) image", log)] == [len(items), len(items) - len(done)]
    assert project_summary(tmp_path / "merged") == one_machine
