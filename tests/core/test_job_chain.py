"""A chain of jobs (generate → detect → evaluate): every model path and option is checked before
anything is stored, and a failed step stops the steps that depend on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from workstation.commands.pipeline import PipelineRequest, create_pipeline
from workstation.jobs import CANCELLED, FAILED, JobPaths, create_detect_job, create_evaluate_job, create_generate_job
from workstation.jobs.queue import JobQueue
from workstation.methods.spatial.suite import spatial_suite
from workstation.store import Project
from workstation.types import WorkstationError

GEN = {"width": 64, "height": 64}


def _nothing_stored(p: Project) -> None:
    assert p.jobs.all() == [] and p.samples.count() == 0 and p.samples.run_ids() == []
    assert p.con.execute("SELECT count(*) FROM prompts").fetchone()[0] == 0
    assert not (Path(p.folder) / "jobs").exists() or not any((Path(p.folder) / "jobs").iterdir())


@pytest.mark.parametrize("field, what", [
    ("detector_model", "detector model (scene) not found"),
    ("model", "generator model (diffusers) not found"),
])
def test_a_missing_model_path_is_refused_before_any_job_is_stored(tmp_path: Path, field: str, what: str) -> None:
    missing = tmp_path / "models" / "no_such_model"
    p = Project.create(tmp_path / "p")
    try:
        req = PipelineRequest(pairs=1, seeds=1, params=GEN, perturbations=[])
        if field == "model":
            req.generator, req.model = "diffusers", str(missing)
        else:
            req.detector_model = str(missing)
        with pytest.raises(WorkstationError) as e:
            create_pipeline(p, req)
        assert str(e.value) == f"{what}: {missing}"
        _nothing_stored(p)
    finally:
        p.close()


def test_bad_options_are_refused_before_any_job_is_stored(tmp_path: Path) -> None:
    p = Project.create(tmp_path / "p")
    try:
        for req, words in (
            (PipelineRequest(pairs=1, seeds=1, params=GEN, detector="nosuch"), "nosuch"),
            (PipelineRequest(pairs=1, seeds=1, params=GEN, perturbations=["sharpen_9"]), "sharpen_9"),
            (PipelineRequest(pairs=1, seeds=1, params={"width": 3, "height": 64}), "width"),
            (PipelineRequest(pairs=1, seeds=1, params=GEN, secondary=[("scene", str(tmp_path / "gone"))]),
             str(tmp_path / "gone")),
        ):
            with pytest.raises(WorkstationError) as e:
                create_pipeline(p, req)
            assert words in str(e.value) and "\n" not in str(e.value)
            _nothing_stored(p)
    finally:
        p.close()


def test_a_failed_generation_stops_detection_and_evaluation(tmp_path: Path) -> None:
    missing = tmp_path / "models" / "gone"
    p = Project.create(tmp_path / "p")
    try:
        # stored directly (the pipeline would refuse the path): the model disappears after queueing
        gen = create_generate_job(p, spatial_suite(1), generator="diffusers", model=str(missing), seeds=[0],
                                  params=GEN)
        det = create_detect_job(p, detector="scene", runs=[gen.run_id], check_runs=False)
        ev = create_evaluate_job(p)
        q = JobQueue(p)
        ids = [gen.job_id, det.job_id, ev.job_id]
        for i, j in enumerate(ids):
            q.submit(j, after=ids[:i])
        runs = q.run_all(poll=0.05)
        assert [(r.job_id, r.status) for r in runs] == [(gen.job_id, FAILED)]  # nothing else ran
        status = {j["job_id"]: (j["status"], j["message"]) for j in p.jobs.all()}
        assert status[gen.job_id][0] == FAILED and str(missing) in status[gen.job_id][1]
        assert status[det.job_id] == (CANCELLED, f"not run: {gen.job_id} ended failed")
        assert status[ev.job_id] == (CANCELLED, f"not run: {gen.job_id} ended failed")
        assert q.skipped == {det.job_id: gen.job_id, ev.job_id: gen.job_id}
        assert "not run" in JobPaths(p.folder, det.job_id).log.read_text()
        assert p.samples.count() == 0
    finally:
        p.close()
