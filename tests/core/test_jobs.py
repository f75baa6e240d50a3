"""The job system as a user meets it: generate / detect / evaluate jobs in worker processes,
progress, cancel, kill and resume, clear failures, out-of-memory and out-of-disk handling,
shard projects merged into one, and the command line."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.cli import main
from workstation.jobs import (
    CANCELLED,
    DONE,
    FAILED,
    JobPaths,
    create_detect_job,
    create_generate_job,
)
from workstation.jobs.chunks import chunk_files, ingested_names
from workstation.jobs.ingest import ingest_pending
from workstation.jobs.merge import merge_into
from workstation.commands.pipeline import PipelineRequest, create_pipeline
from workstation.jobs.progress import read_progress
from workstation.jobs.queue import JobQueue
from workstation.jobs.runner import JobRun, run_job
from workstation.jobs.worker import EXIT_FAILED, run_worker
from workstation.store import Project
from workstation.methods.spatial.suite import spatial_suite
from workstation.types import WorkstationError
from workstation.methods.spatial.store import SpatialStore

SIZE = 128
GEN = {"width": SIZE, "height": SIZE}
SLOW = dict(os.environ, WORKSTATION_JOB_DELAY="0.25")


def new_project(folder: Path) -> Project:
    return Project.create(folder)


def procedural_job(project: Project, *, batch_size: int = 4, shard: str | None = None, pairs: int = 4,
                   seeds: tuple[int, ...] = (0, 1)) -> str:
    """16 prompts (4 object pairs × 4 relations) × 2 seeds with the procedural generator."""
    spec = create_generate_job(project, spatial_suite(pairs), seeds=list(seeds), params=GEN, batch_size=batch_size,
                               shard=shard, suite="builtin:4")
    return spec.job_id


def image_set(project: Project) -> dict[str, tuple[int, str, str]]:
    """sample id -> (seed, prompt id, sha256 of the image file)."""
    rows = project.con.execute("SELECT sample_id, seed, prompt_id, image_path FROM samples").fetchall()
    return {sid: (seed, pid, hashlib.sha256((project.folder / path).read_bytes()).hexdigest())
            for sid, seed, pid, path in rows}


def detection_rows(project: Project) -> list[tuple[Any, ...]]:
    rows = project.con.execute(
        "SELECT sample_id, source, detector, variant, label, score, x1, y1, x2, y2 FROM detections").fetchall()
    return sorted((r[0], r[1], r[2], r[3], r[4], round(r[5], 9), *(round(v, 6) for v in r[6:])) for r in rows)


def step_until(run: JobRun, cond: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        run.step()
        assert time.monotonic() < deadline, f"timed out; job at {run.progress}"
        time.sleep(0.03)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project where the 16×2 procedural job and a scene-detector job ran without interruption."""
    folder = tmp_path_factory.mktemp("reference") / "project"
    p = new_project(folder)
    try:
        run = run_job(p, procedural_job(p))
        assert run.status == DONE, run.message
        det = create_detect_job(p, detector="scene", perturbations=[], batch_size=8)
        run = run_job(p, det.job_id)
        assert run.status == DONE, run.message
    finally:
        p.close()
    return folder


# ---- generation ----------------------------------------------------------------------------------
def test_procedural_job_makes_every_image_and_records_the_run(reference: Path) -> None:
    with Project.open(reference, read_only=True) as p:
        imgs = image_set(p)
        assert len(imgs) == 32
        assert {seed for seed, _, _ in imgs.values()} == {0, 1}
        assert len({pid for _, pid, _ in imgs.values()}) == 16
        ds = p.samples.load_dataset()
        assert set(ds.samples.width) == {float(SIZE)} and set(ds.samples.height) == {float(SIZE)}
        assert all(path.startswith("images/") and (reference / path).is_file() for path in ds.samples.image_path)
        (run,) = p.samples.runs()
        assert run["method"] == "demo_procedural" and run["samples"] == 32
        assert run["params"]["seeds"] == [0, 1] and run["params"]["width"] == SIZE
        assert "python" in run["provenance"]["environment"]
        assert len(p.samples.truth()) == 32  # the procedural generator's ground truth came along
        jobs = {j["job_id"]: j for j in p.jobs.all()}
        gen = next(j for j in jobs.values() if j["kind"] == "generate")
        assert (gen["status"], gen["done"], gen["total"]) == (DONE, 32, 32)
        paths = JobPaths(reference, gen["job_id"])
        assert "finished: 32/32" in paths.log.read_text()
        assert read_progress(paths.progress).state == DONE
        assert len(ds.detections) > 0 and set(ds.variant_names) == {"original"}


def test_rerun_gives_bit_identical_images(reference: Path, tmp_path: Path) -> None:
    with Project.open(reference, read_only=True) as ref:
        want = image_set(ref)
    p = new_project(tmp_path / "again")
    try:
        run = run_job(p, procedural_job(p, batch_size=3))  # other batches, same pixels
        assert run.status == DONE
        assert image_set(p) == want
    finally:
        p.close()


def test_resuming_a_finished_job_adds_nothing(tmp_path: Path) -> None:
    p = new_project(tmp_path / "p")
    try:
        job = procedural_job(p, pairs=1)
        assert run_job(p, job).status == DONE
        before = image_set(p)
        again = create_generate_job(p, spatial_suite(1), seeds=[0, 1], params=GEN, batch_size=4, suite="builtin:4")
        assert again.job_id == job  # the same request finds the same job
        run = run_job(p, job)
        assert run.status == DONE and run.ingested.samples == 0
        assert image_set(p) == before
        assert "nothing to generate" in JobPaths(p.folder, job).log.read_text()
    finally:
        p.close()


def test_killed_worker_then_resume_gives_the_same_set(reference: Path, tmp_path: Path) -> None:
    with Project.open(reference, read_only=True) as ref:
        want = image_set(ref)
    p = new_project(tmp_path / "killed")
    try:
        job = procedural_job(p, batch_size=2)
        run = JobRun(p, job, env=SLOW).start()
        step_until(run, lambda: run.progress.done >= 4)
        run.kill()  # SIGKILL, as a crash in a CUDA library would end it
        step_until(run, lambda: run.finished)
        assert run.status == FAILED
        assert "stopped unexpectedly" in run.message and "SIGKILL" in run.message and "resume" in run.message
        partial = image_set(p)
        assert 4 <= len(partial) < 32
        assert all(want[sid] == v for sid, v in partial.items())  # what was kept is right
        assert {j["job_id"]: j["status"] for j in p.jobs.all()}[job] == FAILED

        resumed = JobRun(p, job).start()
        resumed.wait(timeout=60)
        assert resumed.status == DONE, resumed.message
        assert image_set(p) == want
        assert not list((p.folder / "images").rglob("*.tmp"))
        assert not [c for c in chunk_files(JobPaths(p.folder, job)) if c.name not in ingested_names(JobPaths(p.folder, job))]
    finally:
        p.close()


def test_cancel_stops_after_the_batch_and_resume_finishes(reference: Path, tmp_path: Path) -> None:
    with Project.open(reference, read_only=True) as ref:
        want = image_set(ref)
    p = new_project(tmp_path / "cancelled")
    try:
        job = procedural_job(p, batch_size=2)
        run = JobRun(p, job, env=SLOW).start()
        step_until(run, lambda: run.progress.done >= 2)
        run.cancel()
        step_until(run, lambda: run.finished)
        assert run.status == CANCELLED and "resume" in run.message
        assert 2 <= p.samples.count() < 32
        assert run_job(p, job).status == DONE
        assert image_set(p) == want
    finally:
        p.close()


# ---- failures --------------------------------------------------------------------------------------
def test_missing_model_folder_fails_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "models" / "no_such_model"
    p = new_project(tmp_path / "p")
    try:
        spec = create_generate_job(p, spatial_suite(1), generator="diffusers", model=str(missing), seeds=[0],
                                   params=GEN)
        run = run_job(p, spec.job_id)
        assert run.status == FAILED
        assert "not found" in run.message and str(missing) in run.message
        assert p.samples.count() == 0
        assert str(missing) in JobPaths(p.folder, spec.job_id).log.read_text()
    finally:
        p.close()
    code = main(["generate", "--project", str(tmp_path / "cli"), "--suite", "builtin", "--pairs", "1",
                 "--model", str(missing), "--seeds", "1"])
    err = capsys.readouterr().err
    assert code != 0 and "model folder not found" in err and str(missing) in err


def test_unknown_scheduler_is_refused_naming_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "model"
    model.mkdir()
    p = new_project(tmp_path / "p")
    try:
        with pytest.raises(WorkstationError, match=r"(?s)bogus_sampler.*dpmpp_2m"):
            create_generate_job(p, spatial_suite(1), generator="diffusers", model=str(model), seeds=[0],
                                params={**GEN, "scheduler": "bogus_sampler"})
        assert p.jobs.all() == []
    finally:
        p.close()
    code = main(["generate", "--project", str(tmp_path / "cli"), "--suite", "builtin", "--pairs", "1",
                 "--model", str(model), "--seeds", "1", "--scheduler", "bogus_sampler"])
    assert code == 2 and "bogus_sampler" in capsys.readouterr().err


def test_corrupt_weights_file_fails_with_a_clear_message(tmp_path: Path) -> None:
    model = tmp_path / "broken_model"
    (model / "unet").mkdir(parents=True)
    (model / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline"}))
    (model / "unet" / "diffusion_pytorch_model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":")
    p = new_project(tmp_path / "p")
    try:
        spec = create_generate_job(p, spatial_suite(1), generator="diffusers", model=str(model), seeds=[0], params=GEN)
        run = run_job(p, spec.job_id)
        assert run.status == FAILED
        assert "corrupt weights file" in run.message and "diffusion_pytorch_model.safetensors" in run.message
    finally:
        p.close()


class OomProbe:
    """A generator that runs out of memory for batches larger than two."""

    name = "oom_probe"

    def __init__(self, **_: Any) -> None:
        from workstation.generation.fake import FakeGenerator

        self.fake = FakeGenerator()

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.name}

    def generate(self, request: Any, params: Any, progress: Any = None) -> list[np.ndarray]:
        from workstation.generation import OutOfMemory

        if len(request.prompts) > 2:
            raise OutOfMemory(len(request.prompts), "CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.fake.generate(request, params)


def test_out_of_memory_halves_the_batch_and_goes_on(tmp_path: Path) -> None:
    from workstation.generation import GENERATORS

    if "oom_probe" not in GENERATORS:
        GENERATORS.register("oom_probe", OomProbe)
    p = new_project(tmp_path / "p")
    try:
        spec = create_generate_job(p, spatial_suite(4), generator="oom_probe", model="unused", seeds=[0, 1],
                                   params={"width": 64, "height": 64}, batch_size=8)
        paths = JobPaths(p.folder, spec.job_id)
        assert run_worker(paths.dir) == 0  # in this process, where the probe is registered
        log = paths.log.read_text()
        assert "out of GPU memory at batch size 8 generating; going on with 4" in log
        assert "out of GPU memory at batch size 4 generating; going on with 2" in log
        assert read_progress(paths.progress).state == DONE
        ingest_pending(p, paths)
        assert p.samples.count() == 32
    finally:
        p.close()


def test_disk_full_keeps_finished_items_and_resume_completes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workstation.jobs import chunks

    p = new_project(tmp_path / "p")
    try:
        job = procedural_job(p, batch_size=4)
        paths = JobPaths(p.folder, job)
        real_write = chunks.atomic_write_bytes  # how a worker writes each image
        calls = {"n": 0}

        def filling_write(path: Path, data: bytes, **kw: Any) -> None:
            calls["n"] += 1
            if calls["n"] > 10:  # the disk fills up during the third batch
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
            real_write(path, data, **kw)

        monkeypatch.setattr(chunks, "atomic_write_bytes", filling_write)
        assert run_worker(paths.dir) == EXIT_FAILED
        prog = read_progress(paths.progress)
        assert prog.state == FAILED and "out of disk space" in prog.error and "resume" in prog.error
        assert "out of disk space" in paths.log.read_text()
        ingest_pending(p, paths)
        assert p.samples.count() == 8  # two finished batches are kept
        monkeypatch.undo()
        run = run_job(p, job)
        assert run.status == DONE and p.samples.count() == 32
    finally:
        p.close()


# ---- detection, evaluation, queue ------------------------------------------------------------------------
def test_detect_job_covers_every_variant_and_reingesting_changes_nothing(tmp_path: Path) -> None:
    p = new_project(tmp_path / "p")
    try:
        assert run_job(p, procedural_job(p, pairs=1, seeds=(0,))).status == DONE
        det = create_detect_job(p, detector="scene", secondary=[("fake", None)],
                                perturbations=["brightness_1.1", "gaussian_blur_1", "resize_0.9"], batch_size=3)
        run = run_job(p, det.job_id)
        assert run.status == DONE, run.message
        groups = set(p.con.execute("SELECT DISTINCT detector, variant, source FROM detections").fetchall())
        assert ("fake", "original", 1) in groups
        assert {v for d, v, s in groups if d == "scene"} <= {"original", "brightness_1.1", "gaussian_blur_1", "resize_0.9"}
        assert {v for d, v, s in groups if d == "scene"} >= {"original"}
        flags = p.con.execute("SELECT bool_and(has_secondary), bool_and(has_perturbed) FROM samples").fetchone()
        assert flags == (True, True)
        ds = p.samples.load_dataset()
        assert {"brightness_1.1", "resize_0.9"} <= set(ds.variant_names)
        rows = detection_rows(p)
        paths = JobPaths(p.folder, det.job_id)
        paths.ingested.unlink()  # as if the process died between a commit and its note
        ingest_pending(p, paths)
        assert detection_rows(p) == rows
        again = run_job(p, create_detect_job(p, detector="scene", secondary=[("fake", None)],
                                             perturbations=["brightness_1.1", "gaussian_blur_1", "resize_0.9"],
                                             batch_size=3).job_id)
        assert again.status == DONE and detection_rows(p) == rows
    finally:
        p.close()


def test_queue_runs_generate_detect_evaluate_in_order(tmp_path: Path) -> None:
    p = new_project(tmp_path / "p")
    try:
        specs = create_pipeline(p, PipelineRequest(pairs=1, seeds=1, params=GEN, perturbations=[]))
        assert [s.kind for s in specs] == ["generate", "detect", "evaluate"]
        q = JobQueue(p)
        for s in specs:
            q.submit(s.job_id)
        runs = q.run_all(poll=0.05)
        assert [(r.spec.kind, r.status) for r in runs] == [("generate", DONE), ("detect", DONE), ("evaluate", DONE)]
        cid = SpatialStore(p).active_config_id()
        assert cid is not None and len(SpatialStore(p).load_verdict_table(cid)["sample_id"]) == 4
        assert [j["status"] for j in p.jobs.all()] == [DONE, DONE, DONE]
    finally:
        p.close()


# ---- shards and merge ------------------------------------------------------------------------------------------
def test_merge_of_two_shard_projects_equals_the_unsharded_run(reference: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--suite", "builtin", "--pairs", "4", "--model", "procedural", "--seeds", "2",
            "--width", str(SIZE), "--height", str(SIZE), "--batch-size", "4"]
    for i in (1, 2):
        shard = tmp_path / f"shard{i}"
        assert main(["generate", "--project", str(shard), *base, "--shard", f"{i}/2"]) == 0
        assert main(["detect", "--project", str(shard), "--detector", "scene", "--perturbations", "none"]) == 0
    sizes = []
    for i in (1, 2):
        with Project.open(tmp_path / f"shard{i}", read_only=True) as s:
            sizes.append(s.samples.count())
    assert sum(sizes) == 32 and all(n > 0 for n in sizes)
    merged = tmp_path / "merged"
    assert main(["merge", "--project", str(merged), str(tmp_path / "shard1"), str(tmp_path / "shard2")]) == 0
    assert "32 new sample(s)" in capsys.readouterr().out
    with Project.open(reference, read_only=True) as ref, Project.open(merged, read_only=True) as m:
        assert image_set(m) == image_set(ref)
        assert detection_rows(m) == detection_rows(ref)
        assert [r["run_id"] for r in m.samples.runs()] == [r["run_id"] for r in ref.samples.runs()]
        assert m.samples.truth() == ref.samples.truth()

    # merging a shard again: identical samples are skipped
    with Project.open(merged) as m:
        rep = merge_into(m, [tmp_path / "shard1"])
        assert rep.samples_added == 0 and rep.samples_identical == sizes[0] and rep.detections_added == 0
        # the same sample id with other pixels is an error, and nothing of that source lands
        bad = tmp_path / "bad"
        shutil.copytree(tmp_path / "shard2", bad)
        with Project.open(bad) as b:
            path = b.con.execute("SELECT image_path FROM samples LIMIT 1").fetchone()[0]
        (bad / path).write_bytes((bad / path).read_bytes()[:-8] + b"\x00" * 8)
        before = (m.samples.count(), len(detection_rows(m)))
        with pytest.raises(WorkstationError, match="different image bytes"):
            merge_into(m, [bad])
        assert (m.samples.count(), len(detection_rows(m))) == before


def test_shard_job_folder_merges_like_its_project(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    p = new_project(shard)
    try:
        job = procedural_job(p, shard="1/2", pairs=1)
        assert run_job(p, job).status == DONE
        want = image_set(p)
    finally:
        p.close()
    with Project.create(tmp_path / "merged") as m:
        rep = merge_into(m, [shard / "jobs" / job])
        assert rep.samples_added == len(want) > 0
        assert image_set(m) == want
        assert [j["job_id"] for j in m.jobs.all()] == [job]


def test_merge_that_requires_done_shards_refuses_an_unfinished_one(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--suite", "builtin", "--pairs", "1", "--model", "procedural", "--seeds", "2",
            "--width", str(SIZE), "--height", str(SIZE)]
    done, unfinished = tmp_path / "shard1", tmp_path / "shard2"
    assert main(["generate", "--project", str(done), *base, "--shard", "1/2"]) == 0
    assert main(["generate", "--project", str(unfinished), *base, "--shard", "2/2", "--no-run"]) == 0
    with Project.open(unfinished, read_only=True) as p:
        (job,) = [j["job_id"] for j in p.jobs.all()]
    capsys.readouterr()
    merged = tmp_path / "merged"
    for source in (unfinished, unfinished / "jobs" / job):
        assert main(["merge", "--require-done", "--project", str(merged), str(done), str(source)]) == 2
        err = capsys.readouterr().err
        assert f"{source} is not finished: job {job} is " in err and "jobs resume" in err
        assert not merged.exists()  # nothing written
    # without the requirement the finished share is merged alone (what --require-done prevents)
    assert main(["merge", "--project", str(merged), str(done), str(unfinished)]) == 0
    with Project.open(merged, read_only=True) as m:
        half = m.samples.count()
    shutil.rmtree(merged)
    assert main(["jobs", "resume", "--project", str(unfinished)]) == 0
    assert main(["merge", "--require-done", "--project", str(merged), str(done), str(unfinished)]) == 0
    with Project.open(merged, read_only=True) as m:
        assert m.samples.count() == 8 > half


# ---- command line --------------------------------------------------------------------------------------------
def test_cli_jobs_list_show_resume_cancel(reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(reference, folder)
    assert main(["jobs", "list", "--project", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "generate" in out and "detect" in out and "32/32" in out and "done" in out
    with Project.open(folder, read_only=True) as p:
        gen = next(j["job_id"] for j in p.jobs.all() if j["kind"] == "generate")
    assert main(["jobs", "show", "--project", str(folder), gen]) == 0
    out = capsys.readouterr().out
    assert "finished: 32/32" in out and "procedural" in out
    assert main(["jobs", "resume", "--project", str(folder)]) == 0
    assert "every job of the project is done" in capsys.readouterr().out
    assert main(["jobs", "cancel", "--project", str(folder), gen]) == 0
    assert "was not running" in capsys.readouterr().out
    assert main(["jobs", "show", "--project", str(folder), "no-such-job"]) == 2
    assert "no job 'no-such-job'" in capsys.readouterr().err


def test_worker_runs_from_the_command_line(tmp_path: Path) -> None:
    import subprocess

    p = new_project(tmp_path / "p")
    try:
        job = procedural_job(p, pairs=1, seeds=(0,))
    finally:
        p.close()
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, str(root / "main.py"), "jobs", "worker", str(tmp_path / "p" / "jobs" / job)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert read_progress(JobPaths(tmp_path / "p", job).progress).state == DONE
    with Project.open(tmp_path / "p") as p:  # the project ingests what the worker left
        assert p.samples.count() == 0
        ingest_pending(p, JobPaths(p.folder, job))
        assert p.samples.count() == 4


# ---- a tiny random-weight Stable Diffusion pipeline ------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("diffusers")
    import importlib.util

    tokenizer = Path(__file__).resolve().parents[3] / "shared" / "models" / "clip_tokenizer"
    if not (tokenizer / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {tokenizer}")
    spec = importlib.util.spec_from_file_location("models_tiny", Path(__file__).with_name("models_tiny.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_tiny_sd(tmp_path_factory.mktemp("tiny_sd") / "tiny-sd", tokenizer)


TINY = {"width": 32, "height": 32, "steps": 2, "guidance": 1.0}  # no classifier-free guidance: half the work


@pytest.mark.slow
def test_tiny_diffusers_job_killed_and_resumed_equals_an_uninterrupted_run(tiny_sd: Path, tmp_path: Path) -> None:
    def job(p: Project) -> str:
        return create_generate_job(p, spatial_suite(4), generator="diffusers", model=str(tiny_sd), seeds=[0, 1],
                                   params=TINY, batch_size=16).job_id

    b = new_project(tmp_path / "killed")
    a = new_project(tmp_path / "whole")
    try:
        job_b = job(b)
        # a worker process that pauses long after each batch, so it is surely killed midway
        run = JobRun(b, job_b, env=dict(os.environ, WORKSTATION_JOB_DELAY="60")).start()
        # meanwhile, the uninterrupted run (in this process)
        job_a = job(a)
        assert run_worker(JobPaths(a.folder, job_a).dir) == 0
        ingest_pending(a, JobPaths(a.folder, job_a))
        want = image_set(a)
        assert len(want) == 32
        (run_a,) = a.samples.runs()
        assert run_a["model"]["pipeline"] == "StableDiffusionPipeline" and run_a["model"]["weights_fingerprint"]

        step_until(run, lambda: run.progress.done >= 16, timeout=120)
        run.kill()
        step_until(run, lambda: run.finished)
        assert run.status == FAILED and "SIGKILL" in run.message
        assert b.samples.count() == 16
        # resume (here in this process; the model is already imported)
        assert run_worker(JobPaths(b.folder, job_b).dir) == 0
        ingest_pending(b, JobPaths(b.folder, job_b))
        assert image_set(b) == want  # same ids, bit-identical pixels
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_tiny_diffusers_unknown_scheduler_in_a_stored_job_fails_clearly(tiny_sd: Path, tmp_path: Path) -> None:
    p = new_project(tmp_path / "p")
    try:
        spec = create_generate_job(p, spatial_suite(1), generator="diffusers", model=str(tiny_sd), seeds=[0],
                                   params=TINY)
        paths = JobPaths(p.folder, spec.job_id)
        raw = json.loads(paths.spec.read_text())
        raw["generator"]["params"]["scheduler"] = "warp_drive"  # e.g. written by a newer version
        paths.spec.write_text(json.dumps(raw))
        assert run_worker(paths.dir) == EXIT_FAILED
        err = read_progress(paths.progress).error
        assert "warp_drive" in err and "dpmpp_2m" in err
        assert p.samples.count() == 0
    finally:
        p.close()


@pytest.mark.parametrize("job_id", ["../../victim", "..", ".", "/etc", "a/b", "a\\b", "x\n", "", "j" * 201, "-x", ".hidden"])
def test_a_job_id_names_one_folder_under_jobs_or_is_refused(tmp_path: Path, job_id: str) -> None:
    """Where a job id comes in (a job row) and wherever a path is built from one (JobPaths)."""
    from workstation.jobs.spec import JobPaths, JobSpec
    from workstation.store import Project

    with pytest.raises(WorkstationError, match="job id"):
        JobPaths(tmp_path, job_id)
    with pytest.raises(WorkstationError, match="job id"):
        JobSpec.from_dict({"job_id": job_id, "kind": "generate"})
    with Project.create(tmp_path / "p") as p:
        with pytest.raises(WorkstationError, match="job id"):
            p.jobs.record(job_id, "generate", {})
        assert p.jobs.all() == []
    assert JobPaths(tmp_path, "generate-run_1.v2-shard1of2").dir == tmp_path / "jobs" / "generate-run_1.v2-shard1of2"


def _spatial_shard(folder: Path, ids: list[str], stabilities: list[float]) -> Path:
    """A shard project of spatial samples with these recorded stabilities (NaN: none)."""
    from workstation.dataset import Samples
    from workstation.methods.spatial.data import spatial_dataset
    from workstation.methods.spatial.store import add_dataset

    n = len(ids)
    samples = Samples.build(ids, "r", [f"p_{s}" for s in ids])
    ds = spatial_dataset(samples, ["left_of"] * n, ["dog"] * n, ["cat"] * n, recorded_stability=stabilities)
    with Project.create(folder) as p:
        p.samples.add_run("r", method="m")
        p.samples.add_prompts(ds.prompts)
        add_dataset(p, ds)
    return folder


def test_merge_brings_the_recorded_stabilities_and_refuses_an_identical_sample_that_differs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.methods.spatial.data import recorded_stability
    from workstation.methods.spatial.store import load_dataset

    a = _spatial_shard(tmp_path / "a", ["s1", "s2"], [0.25, float("nan")])
    b = _spatial_shard(tmp_path / "b", ["s2", "s3", "s4"], [float("nan"), 0.5, 1.0])
    merged = tmp_path / "merged"
    assert main(["merge", "--project", str(merged), str(a), str(b)]) == 0
    assert "4 new sample(s), 1 identical skipped" in capsys.readouterr().out
    with Project.open(merged, read_only=True) as m:
        ds = load_dataset(m)
        got = dict(zip(ds.samples.sample_id.tolist(), recorded_stability(ds).tolist()))
    assert got.keys() == {"s1", "s2", "s3", "s4"} and np.isnan(got.pop("s2"))
    assert got == {"s1": 0.25, "s3": 0.5, "s4": 1.0}
    # the same sample with another recorded stability is not the same sample: nothing of it lands
    c = _spatial_shard(tmp_path / "c", ["s3", "s5"], [0.75, 0.5])
    assert main(["merge", "--project", str(merged), str(c)]) != 0
    assert "sample 's3' is in both" in capsys.readouterr().err  # ... with different recorded stability
    with Project.open(merged, read_only=True) as m:
        assert m.samples.count() == 4
        row = m.con.execute("SELECT recorded FROM spatial_stability WHERE sample_id = 's3'").fetchone()
        assert row == (0.5,)
