"""Sharding from Slurm job arrays, and the example sbatch scripts in packaging/slurm/.

The scripts are run with bash exactly as Slurm would run them (the #SBATCH lines are comments),
each array task with the variables Slurm sets for it; then the merge step joins the shards.
submit.sh is run against a stand-in sbatch that records its calls. The same scripts on a
running Slurm cluster: test_slurm_cluster.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slurm_cluster import one_machine_run, project_summary
from workstation.cli import main
from workstation.commands.pipeline import load_suite
from workstation.jobs.shards import Shard, resolve_shard, shard_from_slurm
from workstation.jobs.spec import JobSpec, generation_items
from workstation.store import Project
from workstation.types import WorkstationError

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
        (job,) = p.jobs.all()
    assert job["job_id"].endswith("-shard2of3") and job["spec"]["shard"] == [2, 3]
    log = (project / "jobs" / job["job_id"] / "log.txt").read_text()
    assert "shard 2/3 from the Slurm job array" in log


def run_script(name: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SLURM / name)], env=env, capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_example_sbatch_scripts_make_what_one_machine_makes(tmp_path: Path) -> None:
    """Three array tasks (--array=0-2, SHARDS=3), one failing mid-way; the merge refuses until that
    task, submitted again alone (--array=1), has resumed; then one project equal to a one-machine run."""
    env = dict(os.environ, WORKSTATION_ROOT=str(ROOT), PYTHON=sys.executable, SHARDS="3",
               SHARDS_DIR=str(tmp_path / "shards"), PROJECT=str(tmp_path / "merged"), SUITE="builtin", PAIRS="2",
               MODEL="procedural", SEEDS="2", RUN_ID="bash-demo", DETECTOR="scene", GEN_ARGS="--batch-size 1")
    env.pop("SLURM_ARRAY_TASK_ID", None)
    env.pop("WORKSTATION_SHARDS", None)
    prompts, _ = load_suite("builtin", 2)
    items = generation_items(JobSpec(job_id="g", kind="generate", run_id="bash-demo", seeds=[0, 1], shard=[2, 3]),
                             prompts)
    assert len(items) >= 2
    obstacle = tmp_path / "shards" / "task_1" / items[1].image_path  # task 1's second image cannot be written
    obstacle.mkdir(parents=True)
    for task in range(3):
        r = run_script("generate_array.sbatch", {**env, **array_env(task, 0, 2)}, tmp_path)
        assert (r.returncode == 0) == (task != 1), r.stdout[-2000:] + r.stderr[-2000:]
        note = f"shard {task + 1}/3 from the Slurm job array (SLURM_ARRAY_TASK_ID={task}, WORKSTATION_SHARDS=3)"
        assert note in r.stdout
    # the merge refuses an unfinished shard, says which task to run again, and writes nothing
    r = run_script("merge.sbatch", env, tmp_path)
    assert r.returncode == 2
    assert f"task_1 is not finished: job generate-bash-demo-shard2of3 is failed" in r.stderr
    assert "packaging/slurm/submit.sh 3" in r.stderr and not (tmp_path / "merged").exists()
    # task 1 alone, as `sbatch --array=1` runs it: still shard 2/3; it resumes after its first image
    obstacle.rmdir()
    r = run_script("generate_array.sbatch", {**env, **array_env(1, 1, 1)}, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "shard 2/3 from the Slurm job array (SLURM_ARRAY_TASK_ID=1, WORKSTATION_SHARDS=3)" in r.stdout
    log = (tmp_path / "shards" / "task_1" / "jobs" / "generate-bash-demo-shard2of3" / "log.txt").read_text()
    assert f"resuming: 1 of {len(items)} item(s) already done" in log
    r = run_script("merge.sbatch", env, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]

    per_shard = [set(project_summary(tmp_path / "shards" / f"task_{k}")["images"]) for k in range(3)]
    assert sum(len(s) for s in per_shard) == len(set().union(*per_shard)) == 16  # 2 pairs × 4 relations × 2 seeds
    merged = project_summary(tmp_path / "merged")
    assert {d[0] for d in merged["detections"]} == set(merged["samples"])
    one = one_machine_run(tmp_path / "one", pairs=2, seeds=2, run_id="bash-demo")
    assert merged == project_summary(one)  # images, detections and verdicts alike


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_merge_names_the_tasks_whose_shard_projects_are_missing(tmp_path: Path) -> None:
    (tmp_path / "shards" / "task_1").mkdir(parents=True)
    env = dict(os.environ, WORKSTATION_ROOT=str(ROOT), PYTHON=sys.executable, SHARDS="4",
               SHARDS_DIR=str(tmp_path / "shards"), PROJECT=str(tmp_path / "merged"))
    r = run_script("merge.sbatch", env, tmp_path)
    assert r.returncode == 2
    assert "no shard project for task(s) 0,2,3 of 4" in r.stderr and "packaging/slurm/submit.sh 4 0,2,3" in r.stderr
    env.pop("SHARDS")
    r = run_script("merge.sbatch", env, tmp_path)
    assert r.returncode != 0 and "set SHARDS" in r.stderr
    assert not (tmp_path / "merged").exists()


FAKE_SBATCH = """#!/usr/bin/env bash
n=$(( $(cat "$CALLS" 2>/dev/null | wc -l) + 100 ))
echo "$n SHARDS=$SHARDS $*" >> "$CALLS"
echo "$n;cluster"
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(("args", "array"), [(["4"], "--array=0-3"), (["4", "2"], "--array=2"),
                                             (["8", "1,5"], "--array=1,5"), (["4", "0-3%2"], "--array=0-3%2")])
def test_submit_sends_the_tasks_with_the_shard_count_and_a_merge_cancelled_if_one_fails(
        tmp_path: Path, args: list[str], array: str) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text(FAKE_SBATCH)
    (fake / "sbatch").chmod(0o755)
    calls = tmp_path / "calls.txt"
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}", CALLS=str(calls),
               ARRAY_SBATCH_ARGS="--partition=gpu --account=lab", MERGE_SBATCH_ARGS="--partition=cpu")
    env.pop("SHARDS", None)
    r = subprocess.run(["bash", str(SLURM / "submit.sh"), *args], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    first, second = calls.read_text().splitlines()
    assert first.split() == ["100", f"SHARDS={args[0]}", "--parsable", array, "--partition=gpu", "--account=lab",
                             str(SLURM / "generate_array.sbatch")]
    assert second.split() == ["101", f"SHARDS={args[0]}", "--parsable", "--dependency=afterok:100",
                              "--kill-on-invalid-dep=yes", "--partition=cpu", str(SLURM / "merge.sbatch")]
    assert "generation array job 100" in r.stdout and "merge job 101" in r.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(("args", "words"), [(["4", "4"], "task 4 is not one of the 4 shards' tasks 0-3"),
                                             (["4", "1-5"], "task 5 is not one"), (["4", "two"], "TASKS must be"),
                                             (["0"], "a whole number from 1"), ([], "usage: submit.sh")])
def test_submit_refuses_tasks_that_are_not_the_jobs(tmp_path: Path, args: list[str], words: str) -> None:
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")  # no sbatch is reached
    r = subprocess.run(["bash", str(SLURM / "submit.sh"), *args], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode != 0 and words in r.stderr


def test_a_script_outside_an_array_says_how_to_run_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    r = subprocess.run(["bash", str(SLURM / "generate_array.sbatch")], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode != 0 and "sbatch --array" in r.stderr


# ---- hostile numbers: every number is a decimal in range before any arithmetic ---------------------

#: values no script or option may take as a number: huge, wrapped past 2^64, negative, with a
#: leading zero (octal in bash arithmetic), an arithmetic expression that runs a command, empty,
#: spaces, signs, other digits
HOSTILE_NUMBERS = ["99999999999999999999999", "18446744073709551617", "18446744073709551616", "-1", "08", "010",
                   "0x10", "+4", "1e3", "1_000", " 4", "4 ", "4 4", "", "٣", "100001", "HOME[$(touch {F})]",
                   "$(touch {F})", "`touch {F}`", "a[$(touch {F})]", "1\n2", "4\x1b[2J"]

RECORDER = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$CALLS"
echo "100;cluster"
"""


def _hostile_env(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """An environment whose sbatch and PYTHON are stubs that record their arguments in CALLS; F is
    the file a command injected through a number would create."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("sbatch", "python-stub"):
        (stubs / name).write_text(RECORDER)
        (stubs / name).chmod(0o755)
    calls = tmp_path / "calls.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", CALLS=str(calls), PYTHON=str(stubs / "python-stub"),
               WORKSTATION_ROOT=str(ROOT), SHARDS_DIR=str(tmp_path / "shards"), PROJECT=str(tmp_path / "merged"))
    env.pop("SHARDS", None)
    env.pop("WORKSTATION_SHARDS", None)
    return env, calls, tmp_path / "F"


def _assert_refused(r: subprocess.CompletedProcess[str], calls: Path, f: Path, tmp_path: Path, words: str) -> None:
    assert r.returncode != 0, r.stdout + r.stderr
    assert "error: " in r.stderr and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "\x1b" not in r.stderr, r.stderr  # one line, shown safely
    assert not f.exists(), "a command in a number was run"
    assert not calls.exists(), f"a stub was called: {calls.read_text()}"
    assert not (tmp_path / "shards").exists() and not (tmp_path / "merged").exists()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
def test_submit_refuses_a_hostile_number_of_shards(tmp_path: Path, value: str) -> None:
    env, calls, f = _hostile_env(tmp_path)
    r = subprocess.run(["bash", str(SLURM / "submit.sh"), value.format(F=f)], env=env, capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    _assert_refused(r, calls, f, tmp_path, "number of shards")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("tasks", ["08", "0-08", "1,03", "99999999999999999999", "18446744073709551617",
                                   "0-18446744073709551617", "-1", "3-1", "0-3:0", "0-3:05", "0-3%0", "0-3%99",
                                   "0-3%08", "HOME[$(touch {F})]", "1,$(touch {F})", " 1", "1 ", "", "٣"])
def test_submit_refuses_hostile_tasks(tmp_path: Path, tasks: str) -> None:
    env, calls, f = _hostile_env(tmp_path)
    r = subprocess.run(["bash", str(SLURM / "submit.sh"), "4", tasks.format(F=f)], env=env, capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    if tasks == "":  # an empty TASKS is the default: every task
        assert r.returncode == 0 and "--array=0-3" in calls.read_text() and not f.exists()
        return
    _assert_refused(r, calls, f, tmp_path, "")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
def test_the_merge_step_refuses_a_hostile_shards(tmp_path: Path, value: str) -> None:
    env, calls, f = _hostile_env(tmp_path)
    env["SHARDS"] = value.format(F=f)
    r = run_script("merge.sbatch", env, tmp_path)
    _assert_refused(r, calls, f, tmp_path, "SHARDS")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
def test_an_array_task_refuses_a_hostile_shards_or_task_id(tmp_path: Path, value: str) -> None:
    env, calls, f = _hostile_env(tmp_path)
    for shards, task in ((value, "0"), ("4", value)):
        env.update(SHARDS=shards.format(F=f), SLURM_ARRAY_TASK_ID=task.format(F=f))
        r = run_script("generate_array.sbatch", env, tmp_path)
        if task == "":  # an empty task id: not run as an array
            assert r.returncode != 0 and "sbatch --array" in r.stderr and not calls.exists()
            continue
        _assert_refused(r, calls, f, tmp_path, "SHARDS" if shards is value else "SLURM_ARRAY_TASK_ID")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_an_array_task_out_of_the_jobs_shards_is_refused_before_anything_runs(tmp_path: Path) -> None:
    env, calls, f = _hostile_env(tmp_path)
    env.update(SHARDS="4", SLURM_ARRAY_TASK_ID="4")
    r = run_script("generate_array.sbatch", env, tmp_path)
    _assert_refused(r, calls, f, tmp_path, "not one of the tasks 0 … 3 of SHARDS=4")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_scripts_still_take_good_numbers(tmp_path: Path) -> None:
    env, calls, f = _hostile_env(tmp_path)
    r = subprocess.run(["bash", str(SLURM / "submit.sh"), "100000", "0,99999%10"], env=env, capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "sbatch --parsable --array=0,99999%10" in calls.read_text()
    calls.unlink()
    env.update(SHARDS="10", SLURM_ARRAY_TASK_ID="0")
    r = run_script("generate_array.sbatch", {**env, "DETECTOR": "none"}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"python-stub {ROOT / 'main.py'} generate --project {tmp_path / 'shards' / 'task_0'}" in calls.read_text()


@pytest.mark.parametrize("text", ["1/18446744073709551617", "1/99999999999999999999999", "1/100001", "0/4", "5/4",
                                  "-1/4", "01/4", "1/04", "1/0x4", "1/4 4", "1 1/4", "١/٤", "1/4/4", "1/", "/4", "",
                                  "1/1_0", "+1/4", "1/4\n", "1/\u00a04"])
def test_shard_option_refuses_hostile_numbers(text: str) -> None:
    if text == "":
        assert Shard.parse(text) == Shard()  # no --shard: the whole job
        return
    with pytest.raises(WorkstationError) as e:
        Shard.parse(text)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


@pytest.mark.parametrize("stored", [[1, 2**64 + 1], [1, 10**6], [True, 2], [1.5, 3], ["1", "2"], [1], None, "x"])
def test_a_stored_jobs_shard_is_checked(stored: object) -> None:
    with pytest.raises(WorkstationError):
        Shard.parse(stored) if stored is not None else Shard.parse([None, None])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["WORKSTATION_SHARDS", "SLURM_ARRAY_TASK_ID"])
@pytest.mark.parametrize("value", ["18446744073709551617", "99999999999999999999999", "08", "-1", " 2", "2 ", "٢",
                                   "+2", "1e3", "HOME[$(touch F)]", "100001"])
def test_hostile_array_variables_are_refused(name: str, value: str) -> None:
    env = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
           "WORKSTATION_SHARDS": "4", name: value}
    with pytest.raises(WorkstationError) as e:
        shard_from_slurm(env)
    assert name in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
                                  "SLURM_ARRAY_TASK_STEP"])
@pytest.mark.parametrize("value", ["18446744073709551617", "08", "-1", " 3", "٣", "0x3"])
def test_hostile_array_shape_variables_are_refused(name: str, value: str) -> None:
    env = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
           "SLURM_ARRAY_TASK_MAX": "3", name: value}
    with pytest.raises(WorkstationError) as e:
        shard_from_slurm(env)
    assert name in str(e.value)


def test_generate_refuses_a_wrapped_shard_count_before_a_project_exists(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p"
    rc = main(["generate", "--project", str(project), "--suite", "builtin", "--pairs", "2", "--model", "procedural",
               "--seeds", "2", "--no-run", "--shard", "1/18446744073709551617"])
    err = capsys.readouterr().err
    assert rc != 0 and "--shard's count" in err and len(err.strip().splitlines()) == 1
    assert not project.exists()
