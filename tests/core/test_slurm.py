"""Sharding from Slurm job arrays, and the example sbatch scripts in packaging/slurm/.

The scripts are run with bash exactly as Slurm would run them (the #SBATCH lines are comments),
each array task with the variables Slurm sets for it; then the merge step joins the shards.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workstation.cli import main
from workstation.jobs.shards import Shard, resolve_shard, shard_from_slurm
from workstation.store import Project
from workstation.types import WorkstationError
from workstation.methods.spatial.store import SpatialStore

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "packaging" / "slurm"


def array_env(task: int, lo: int, hi: int, step: int = 1) -> dict[str, str]:
    """The variables Slurm sets in a task of `--array=lo-hi:step`."""
    count = (hi - lo) // step + 1
    return {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": str(lo), "SLURM_ARRAY_TASK_MAX": str(hi),
            "SLURM_ARRAY_TASK_COUNT": str(count), "SLURM_ARRAY_TASK_STEP": str(step), "SLURM_ARRAY_JOB_ID": "4242"}


@pytest.mark.parametrize(("task", "lo", "hi", "step", "want"), [
    (0, 0, 3, 1, Shard(1, 4)), (3, 0, 3, 1, Shard(4, 4)),   # --array=0-3
    (1, 1, 16, 1, Shard(1, 16)), (16, 1, 16, 1, Shard(16, 16)),  # --array=1-16
    (10, 0, 30, 2, Shard(6, 16)),  # --array=0-30:2 (tasks 0, 2, …, 30)
    (7, 7, 7, 1, Shard(1, 1)),  # a one-task array
])
def test_shard_from_the_array_task(task: int, lo: int, hi: int, step: int, want: Shard) -> None:
    got = shard_from_slurm(array_env(task, lo, hi, step))
    assert got is not None
    shard, note = got
    assert shard == want
    assert f"SLURM_ARRAY_TASK_ID={task}" in note and str(want) in note


def test_every_task_of_an_array_is_a_different_shard_and_together_they_cover_it() -> None:
    shards = [shard_from_slurm(array_env(t, 0, 7))[0] for t in range(8)]  # type: ignore[index]
    assert sorted(s.index for s in shards) == list(range(1, 9)) and {s.count for s in shards} == {8}


def test_outside_an_array_there_is_no_shard() -> None:
    assert shard_from_slurm({"SLURM_JOB_ID": "12"}) is None
    assert resolve_shard(None, {}) == (Shard(), "")


def test_shard_option_wins_over_the_array() -> None:
    assert resolve_shard("2/3", array_env(0, 0, 3)) == (Shard(2, 3), "")


@pytest.mark.parametrize(("env", "words"), [
    # --array=1,5,7: not evenly spaced, no shard mapping
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7",
      "SLURM_ARRAY_TASK_COUNT": "3"}, "not evenly spaced"),
    ({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}, "whole number"),
    ({"SLURM_ARRAY_TASK_ID": "2"}, "pass --shard"),
    ({"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, "not one of"),
])
def test_arrays_that_do_not_map_onto_shards_are_refused(env: dict[str, str], words: str) -> None:
    with pytest.raises(WorkstationError, match=words):
        shard_from_slurm(env)


@pytest.mark.parametrize(("task", "lo", "hi", "want"), [
    (2, 2, 2, Shard(3, 4)),  # task 2 submitted again on its own: --array=2, a one-task array
    (0, 0, 0, Shard(1, 4)),  # task 0 again
    (3, 1, 3, Shard(4, 4)),  # --array=1-3
    (1, 0, 3, Shard(2, 4)),  # the whole array
])
def test_with_the_jobs_shard_count_a_task_is_its_shard_in_any_array(task: int, lo: int, hi: int,
                                                                     want: Shard) -> None:
    got = shard_from_slurm({**array_env(task, lo, hi), "WORKSTATION_SHARDS": "4"})
    assert got is not None
    shard, note = got
    assert shard == want
    assert note == f"shard {want} from the Slurm job array (SLURM_ARRAY_TASK_ID={task}, WORKSTATION_SHARDS=4)"


@pytest.mark.parametrize(("task", "total", "words"), [
    ("4", "4", "tasks are 0 … 3"), ("2", "x", "WORKSTATION_SHARDS='x' is not a whole number"),
    ("0", "0", "must be at least 1"), ("y", "4", "SLURM_ARRAY_TASK_ID='y'"),
])
def test_a_task_outside_the_jobs_shards_is_refused(task: str, total: str, words: str) -> None:
    with pytest.raises(WorkstationError, match=re.escape(words)):
        shard_from_slurm({"SLURM_ARRAY_TASK_ID": task, "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": task,
                          "WORKSTATION_SHARDS": total})


def test_generate_takes_the_shard_from_the_array_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    for k, v in array_env(1, 0, 2).items():
        monkeypatch.setenv(k, v)
    project = tmp_path / "p"
    assert main(["generate", "--project", str(project), "--suite", "builtin", "--pairs", "2", "--model",
                 "procedural", "--seeds", "2", "--no-run"]) == 0
    out = capsys.readouterr().out
    assert "shard 2/3 from the Slurm job array (SLURM_ARRAY_TASK_ID=1" in out
    with Project.open(project, read_only=True) as p:
        (job,) = p.jobs()
    assert job["job_id"].endswith("-shard2of3") and job["spec"]["shard"] == [2, 3]
    log = (project / "jobs" / job["job_id"] / "log.txt").read_text()
    assert "shard 2/3 from the Slurm job array" in log


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_example_sbatch_scripts_generate_detect_and_merge(tmp_path: Path) -> None:
    """Three array tasks (--array=0-2), then the merge step: one project with every item once."""
    env = dict(os.environ, WORKSTATION_ROOT=str(ROOT), PYTHON=sys.executable, SHARDS_DIR=str(tmp_path / "shards"),
               PROJECT=str(tmp_path / "merged"), SUITE="builtin", PAIRS="2", MODEL="procedural", SEEDS="2",
               DETECTOR="scene", DET_ARGS="--perturbations none", GEN_ARGS="--batch-size 2")
    env.pop("SLURM_ARRAY_TASK_ID", None)
    for task in range(3):
        r = subprocess.run(["bash", str(SLURM / "generate_array.sbatch")], env={**env, **array_env(task, 0, 2)},
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert f"shard {task + 1}/3 from the Slurm job array" in r.stdout
    r = subprocess.run(["bash", str(SLURM / "merge.sbatch")], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    per_shard = []
    for task in range(3):
        with Project.open(tmp_path / "shards" / f"task_{task}", read_only=True) as p:
            per_shard.append({row[0] for row in p.con.execute("SELECT sample_id FROM samples").fetchall()})
    assert sum(len(s) for s in per_shard) == 16  # 2 pairs × 4 relations × 2 seeds, each made once
    assert not (per_shard[0] & per_shard[1]) and not (per_shard[1] & per_shard[2]) and not (per_shard[0] & per_shard[2])
    with Project.open(tmp_path / "merged", read_only=True) as p:
        ids = {row[0] for row in p.con.execute("SELECT sample_id FROM samples").fetchall()}
        n_runs = len(p.run_ids())
        verdicts = p.con.execute("SELECT count(*) FROM spatial_verdicts WHERE eval_id = ?", [SpatialStore(p).active_config_id()]).fetchone()
        dets = p.con.execute("SELECT count(DISTINCT sample_id) FROM detections").fetchone()
    assert ids == per_shard[0] | per_shard[1] | per_shard[2]
    assert n_runs == 1  # the same run id in every shard
    assert verdicts == (16,) and dets is not None and dets[0] > 0


def test_a_script_outside_an_array_says_how_to_run_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    r = subprocess.run(["bash", str(SLURM / "generate_array.sbatch")], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode != 0 and "sbatch --array" in r.stderr
