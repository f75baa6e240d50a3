"""A score job over 2,000 ProtoBias triplets (4,000 images) with a random-weight CLIP built from a
config and the real CLIP tokenizer: every image scored against its triplet's text T in batches;
SIGKILLed midway and resumed, it ends with exactly the scores of an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from workstation.dataset import Dataset, Detections, Samples
from workstation.jobs import DONE, FAILED
from workstation.jobs.runner import JobRun, run_job
from workstation.jobs.spec import create_score_job, image_path_for, sample_id_for
from workstation.methods import get_method
from workstation.methods.protobias import build_triplets
from workstation.methods.protobias.data import triplet_prompts
from workstation.store import Project

M = get_method("protobias")
MODELS = Path(__file__).resolve().parents[3].parent / "shared" / "models"
N_PER_DOMAIN = {"animals": 700, "objects": 700, "demography": 600}  # 2,000 triplets


def make_scoring_project(folder: Path, counts: dict[str, int] = N_PER_DOMAIN, size: int = 32) -> Project:
    """Built-in triplets with both images as small seeded noise PNGs (a stand-in for generations)."""
    from PIL import Image

    ts = build_triplets(counts, seed=0)
    prompts = triplet_prompts(ts)
    p = Project.create(folder)
    rng = np.random.default_rng(0)
    run = "noise"
    pids = prompts.prompt_id.tolist()
    paths = [image_path_for(run, pid, 0) for pid in pids]
    (folder / "images" / run).mkdir(parents=True, exist_ok=True)
    for rel in paths:
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(folder / rel, compress_level=1)
    with p.transaction():
        p.samples.add_run(run, method="noise")
        p.samples.add_dataset(Dataset(Samples.build([sample_id_for(run, x, 0) for x in pids], run, pids, width=float(size),
                                                    height=float(size), image_path=paths), Detections.empty(), prompts))
    return p


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tok = MODELS / "clip_tokenizer"
    if not (tok / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {tok}")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "core"))
    import models_tiny

    return models_tiny.build_tiny_clip(tmp_path_factory.mktemp("clip") / "clip", tok, seed=5)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pb") / "p"
    make_scoring_project(folder).close()
    return folder


def scores(p: Project) -> dict[str, tuple[str, str, float]]:
    t = p.scores.table()
    return {s: (sc, tx, float(v)) for s, sc, tx, v in zip(t["sample_id"], t["scorer"], t["text"], t["score"])}


def test_score_job_over_2000_triplets_killed_and_resumed_is_identical(tiny_clip: Path, template: Path,
                                                                       tmp_path: Path) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    shutil.copytree(template, whole)
    shutil.copytree(template, broken)

    with Project.open(whole) as p:
        spec = create_score_job(p, scorer="clipscore", model=str(tiny_clip), method="protobias", batch_size=64)
        run = run_job(p, spec.job_id, env=env)
        assert run.status == DONE, run.message
        ref = scores(p)
        d = M.load(p)
    assert len(d) == 2000 and len(ref) == 4000
    (sid,) = {v[0] for v in ref.values()}
    assert sid.startswith("clipscore@") and d.scores.metrics == (sid,)
    # both images of a triplet are scored against T, not against their own generation prompt
    for i in range(0, 2000, 97):
        assert ref[d.sample_corr[i]][1] == ref[d.sample_adv[i]][1] == d.text[i] != d.prompt_corr[i]
    assert np.isfinite(d.scores.score_corr).all() and np.isfinite(d.scores.score_adv).all()
    assert len({v[2] for v in ref.values()}) > 3000  # real, varied scores

    with Project.open(broken) as p:
        spec = create_score_job(p, scorer="clipscore", model=str(tiny_clip), method="protobias", batch_size=64)
        r = JobRun(p, spec.job_id, env=dict(env, WORKSTATION_JOB_DELAY="0.05")).start()
        t0 = time.monotonic()
        while r.progress.done < 1500 and not r.finished and time.monotonic() - t0 < 600:
            r.step()
            time.sleep(0.02)
        assert not r.finished, "the job ended before it could be killed"
        r.kill()
        while not r.finished:
            r.step()
            time.sleep(0.05)
        assert r.status == FAILED and "SIGKILL" in r.message
        partial = scores(p)
        assert 1000 <= len(partial) < 4000
        resumed = run_job(p, spec.job_id, env=env)
        assert resumed.status == DONE, resumed.message
        again = scores(p)
    assert again == ref  # every score, bit for bit, as the uninterrupted run gave it
    assert all(partial[s] == ref[s] for s in partial)
