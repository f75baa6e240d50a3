"""The score job kind: images of a project scored against their prompts' texts by a scorer
backend in a worker process, ingested into the scores table; resumable after SIGKILL to the
same scores; the same CLIPScore as a direct computation with the same local model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models_tiny  # noqa: E402
from test_scoring import direct_clip  # noqa: E402

from workstation.jobs import DONE, FAILED, JobPaths  # noqa: E402
from workstation.jobs.chunks import read_image  # noqa: E402
from workstation.jobs.runner import JobRun, run_job  # noqa: E402
from workstation.jobs.spec import create_generate_job, create_score_job  # noqa: E402
from workstation.methods.spatial.suite import spatial_suite  # noqa: E402
from workstation.store import Project  # noqa: E402
from workstation.types import WorkstationError  # noqa: E402

GEN = {"width": 64, "height": 64}


def project_with_images(folder: Path, pairs: int = 4, seeds: tuple[int, ...] = (0, 1)) -> Project:
    p = Project.create(folder)
    spec = create_generate_job(p, spatial_suite(pairs), seeds=list(seeds), params=GEN, batch_size=8)
    assert run_job(p, spec.job_id).status == DONE
    return p


def score_rows(p: Project) -> dict[str, tuple[str, str, float]]:
    t = p.scores.table()
    return {s: (sc, tx, v) for s, sc, tx, v in zip(t["sample_id"], t["scorer"], t["text"], t["score"])}


def test_a_fake_score_job_scores_every_image_against_its_prompt(tmp_path: Path) -> None:
    p = project_with_images(tmp_path / "p")
    try:
        spec = create_score_job(p, scorer="fake", batch_size=5)
        run = run_job(p, spec.job_id)
        assert run.status == DONE, run.message
        rows = score_rows(p)
        assert len(rows) == 32 == p.samples.count()
        texts = dict(p.con.execute("SELECT s.sample_id, p.text FROM samples s JOIN prompts p USING (prompt_id)")
                     .fetchall())
        assert all(rows[s][1] == texts[s] and rows[s][0] == "fake" for s in rows)
        assert all(0.0 <= v[2] <= 100.0 for v in rows.values()) and len({v[2] for v in rows.values()}) > 20
        assert "score fake" in spec.describe()
        # the same job again is the same job (resumed: nothing to do)
        again = create_score_job(p, scorer="fake", batch_size=5)
        assert again.job_id == spec.job_id and run_job(p, again.job_id).status == DONE
        assert len(score_rows(p)) == 32
    finally:
        p.close()


def test_a_score_job_that_can_only_fail_is_refused_before_it_is_stored(tmp_path: Path) -> None:
    p = Project.create(tmp_path / "p")
    try:
        with pytest.raises(WorkstationError, match="unknown scorer 'nosuch'"):
            create_score_job(p, scorer="nosuch")
        with pytest.raises(WorkstationError, match="needs a model"):
            create_score_job(p, scorer="clipscore")
        with pytest.raises(WorkstationError, match="not found"):
            create_score_job(p, scorer="clipscore", model=str(tmp_path / "missing-clip"))
        assert p.jobs.all() == []
    finally:
        p.close()


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tok = models_dir / "clip_tokenizer"
    if not (tok / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {tok}")
    return models_tiny.build_tiny_clip(tmp_path_factory.mktemp("clip") / "clip", tok, seed=3)


def test_clipscore_job_killed_and_resumed_equals_a_direct_computation(tiny_clip: Path, tmp_path: Path) -> None:
    p = project_with_images(tmp_path / "p", pairs=6)
    try:
        spec = create_score_job(p, scorer="clipscore", model=str(tiny_clip), batch_size=4)
        run = JobRun(p, spec.job_id, env=dict(os.environ, WORKSTATION_JOB_DELAY="60")).start()
        deadline = 120
        import time

        t0 = time.monotonic()
        while run.progress.done < 4 and time.monotonic() - t0 < deadline:
            run.step()
            time.sleep(0.05)
        run.kill()
        while not run.finished:
            run.step()
            time.sleep(0.05)
        assert run.status == FAILED and "SIGKILL" in run.message
        partial = score_rows(p)
        assert 4 <= len(partial) < 48
        resumed = JobRun(p, spec.job_id).start()
        resumed.wait(timeout=300)
        assert resumed.status == DONE, resumed.message
        rows = score_rows(p)
        assert len(rows) == 48
        assert all(partial[s] == rows[s] for s in partial)  # what was kept is what the finished job has
        (scorer,) = {r[0] for r in rows.values()}
        assert scorer.startswith("clipscore@") and len(scorer) == len("clipscore@") + 12
        # CLIPScore = 100 * max(cos, 0) with the same local model, computed directly
        paths = dict(p.con.execute("SELECT sample_id, image_path FROM samples").fetchall())
        ids = sorted(rows)
        ims = [read_image(p.folder / paths[s]) for s in ids]
        cos, _ = direct_clip(tiny_clip, ims, [rows[s][1] for s in ids], 4)
        np.testing.assert_allclose([rows[s][2] for s in ids], 100.0 * np.maximum(cos, 0.0), rtol=0, atol=1e-5)
        prov = JobPaths(p.folder, spec.job_id).provenance.read_text()
        assert "weights_sha256" in prov and scorer.split("@")[1] in prov
    finally:
        p.close()


def test_scores_of_one_method_only(tmp_path: Path) -> None:
    p = project_with_images(tmp_path / "p", pairs=2, seeds=(0,))
    try:
        with pytest.raises(WorkstationError, match="no samples with images to score of method metalogic"):
            create_score_job(p, scorer="fake", method="metalogic")  # refused before a job exists
        assert [j["kind"] for j in p.jobs.all()] == ["generate"]
        assert not [d for d in (p.folder / "jobs").iterdir() if d.name.startswith("score-")]
        run = JobRun(p, create_score_job(p, scorer="fake", method="spatial").job_id).start()
        run.wait(timeout=60)
        assert run.status == DONE and len(score_rows(p)) == 8
    finally:
        p.close()


@pytest.fixture(scope="module")
def models_dir() -> Path:
    d = Path(__file__).resolve().parents[2].parent / "shared" / "models"
    if not d.is_dir():
        pytest.skip(f"shared models not found at {d}")
    return d

