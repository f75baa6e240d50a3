"""ProtoBias ways in and the demo: the built-in suite as prompts (`suite --method protobias`),
both images generated through the generate job (the procedural demo renderer, and a local
diffusers model), the demo's toy metric of known bias measured back within sampling error."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from workstation.cli import main as cli_main
from workstation.jobs import DONE
from workstation.jobs.chunks import read_image
from workstation.jobs.runner import run_job
from workstation.jobs.spec import create_generate_job, prompt_row
from workstation.methods import get_method
from workstation.methods.protobias import ToyProtoMetric
from workstation.methods.protobias.project_demo import DEMO_PS, add_demo, render_demo_row, toy_scorer_id
from workstation.methods.protobias.results import stored_results
from workstation.store import Project
from workstation.types import WorkstationError

M = get_method("protobias")
MODELS = Path(__file__).resolve().parents[3].parent / "shared" / "models"


def test_demo_failure_rates_match_the_toy_metrics_set_probabilities(tmp_path: Path) -> None:
    """300 procedural triplets scored by two toy metrics that prefer the prototype on a set fraction
    p of texts (0.35 and 0.7): each fails exactly on those, and its measured rate is within sampling
    error of p."""
    with Project.create(tmp_path / "demo") as p:
        s = add_demo(p)
        assert s["triplets"] == 300 and s["images"] == 600 and s["metrics"] == ["toy_proto@p=0.35", "toy_proto@p=0.7"]
        assert p.samples.runs()[0]["source"] == "demo"
        assert p.scores.scorers() == [{"scorer": "toy_proto@p=0.35", "scores": 600}, {"scorer": "toy_proto@p=0.7", "scores": 600}]
        d = M.load(p)
        r = M.evaluate(d, M.default_config())
        tables = M.metrics(d, r)
        st = stored_results(p, s["eval_id"])
        n = len(d)
        for prob in DEMO_PS:
            sid = toy_scorer_id(prob)
            j = r.metrics.index(sid)
            toy = ToyProtoMetric(p=prob, seed=0)
            biased = np.array([toy.is_biased(t) for t in d.text])
            # the toy metric fails exactly where its draw made it biased …
            np.testing.assert_array_equal(r.failed[:, j], biased)
            # … so its failure rate is Binomial(n, p) / n: within 3.29 standard errors (99.9 %) of p
            rate = float(r.failed[:, j].mean())
            assert abs(rate - prob) <= 3.29 * math.sqrt(prob * (1 - prob) / n), (sid, rate)
            assert s["failure_rates"][sid] == pytest.approx(rate)
            # the stored version and the report's table say the same
            assert int(np.sum(st["failed"][st["metric"] == sid])) == int(r.failed[:, j].sum())
            row = next(x for x in tables["failure_by_domain"] if x["domain"] == "all" and x["metric"] == sid)
            assert row["failure_rate"] == pytest.approx(rate)
            assert row["failure_rate_lo"] < prob < row["failure_rate_hi"]
        # simulated annotators rated 60 triplets spread over the three domains
        assert {x["domain"]: x["n"] for x in tables["human"]} == {"animals": 20, "objects": 20, "demography": 20,
                                                                 "all": 60}
        assert tables["annotator_kappa"][0]["n"] == 120


def test_procedural_generate_job_draws_the_demo_suite_as_the_demo_does(tmp_path: Path) -> None:
    prompts = M.suite(n=1, demo=True)
    assert len(prompts) == 6 and prompts.suite[0].startswith("protobias-demo@")
    assert all(a["score_text"] == a["eval_text"] for a in prompts.attrs)
    with Project.create(tmp_path / "p") as p:
        spec = create_generate_job(p, prompts, seeds=[0], params={"width": 128, "height": 128}, run_id="gen")
        assert run_job(p, spec.job_id).status == DONE
        d = M.load(p)
        assert len(d) == 3 and d.run_id.tolist() == ["gen"] * 3
        for i in range(len(prompts)):
            row = prompt_row(prompts, i)
            img, truth = render_demo_row(row, 0, 128)
            sid = f"gen_{row['prompt_id']}_seed0000"
            (path,) = [r[0] for r in p.con.execute("SELECT image_path FROM samples WHERE sample_id=?", [sid]).fetchall()]
            assert np.array_equal(read_image(p.folder / path), img)
            assert truth["role"] == row["attrs"]["role"]
    with pytest.raises(WorkstationError, match="not a demo triplet"):
        render_demo_row(prompt_row(M.suite(n=1), 0), 0, 128)


def test_suite_command_writes_versioned_prompts_and_adds_them_to_a_project(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "triplets.jsonl"
    assert cli_main(["suite", "--method", "protobias", "--set", "n=2", "--set", "seed=3", "--out", str(out),
                     "--project", str(tmp_path / "p")]) == 0
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12  # 2 triplets per domain × 3 domains × (corr, adv)
    by_id = {x["prompt_id"]: x for x in lines}
    for x in lines:
        tid, _, role = x["prompt_id"].rpartition(":")
        twin = by_id[f"{tid}:{'adv' if role == 'corr' else 'corr'}"]
        assert x["group_id"] == tid and x["attrs"]["role"] == role and x["twin_id"] == twin["prompt_id"]
        assert x["attrs"]["score_text"] == twin["attrs"]["score_text"] != x["text"]  # both against T
    assert len({x["suite"] for x in lines}) == 1 and "protobias-templates-1+" in lines[0]["suite"]
    with Project.open(tmp_path / "p") as p:
        assert p.samples.prompt_methods() == {"protobias": 12} and M.has_data(p)
    # the same options give the same suite (same content hash); another seed another one
    assert M.suite(n=2, seed=3).content_hash() == M.suite(n=2, seed=3).content_hash() != M.suite(n=2).content_hash()
    assert cli_main(["suite", "--method", "protobias", "--set", "colour=red", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "unknown ProtoBias suite option(s) colour" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("diffusers")
    tok = MODELS / "clip_tokenizer"
    if not (tok / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {tok}")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "core"))
    import models_tiny

    return models_tiny.build_tiny_sd(tmp_path_factory.mktemp("models") / "tiny-sd", tok)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_generate_both_images_with_a_local_model(tiny_sd: Path, tmp_path: Path) -> None:
    """`generate --method protobias` with a (tiny, random-weight) diffusers model: each triplet's two
    generation prompts become two samples, and the triplets are complete for the audit."""
    suite = tmp_path / "t.jsonl"
    assert cli_main(["suite", "--method", "protobias", "--set", "n=1", "--out", str(suite)]) == 0
    rc = cli_main(["generate", "--method", "protobias", "--suite", str(suite), "--model", str(tiny_sd),
                   "--project", str(tmp_path / "p"), "--seeds", "1", "--width", "64", "--height", "64",
                   "--steps", "2", "--batch-size", "6", "--run-id", "sd"])
    assert rc == 0
    with Project.open(tmp_path / "p") as p:
        d = M.load(p)
        assert len(d) == 3 and d.n_incomplete == 0 and set(d.domain.tolist()) == {"animals", "objects", "demography"}
        a = read_image(d.image_path(0, "corr"))
        b = read_image(d.image_path(0, "adv"))
        assert a.shape == b.shape == (64, 64, 3) and not np.array_equal(a, b)  # two prompts, two images
        texts = dict(p.con.execute("SELECT prompt_id, text FROM prompts").fetchall())
        assert texts[f"{d.triplet_id[0]}:corr"] == d.prompt_corr[0] != d.text[0]


def test_evaluate_and_report_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Project.create(tmp_path / "p") as p:
        add_demo(p, small=True)
    assert cli_main(["evaluate", "--method", "protobias", "--project", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "audited 12 triplets" in out and "toy_proto@p=0.35: failure rate" in out and "toy_proto@p=0.7" in out
    assert cli_main(["report", "--method", "protobias", "--project", str(tmp_path / "p"),
                     "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "protobias" / "tables" / "failure_by_domain.csv").is_file()
    assert "ProtoBias" in (tmp_path / "r" / "index.html").read_text(encoding="utf-8")

