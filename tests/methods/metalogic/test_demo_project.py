"""The MetaLogic demo through the workstation: a suite rendered by the procedural generator job,
detected by the scene detector job, loaded from the project and evaluated — the measured
misalignment rate of each law is the injected one within sampling error, the report's heatmap
shows it, and CLIPScore from a scoring job feeds the pair stability scores."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.evaluation.bundle import write_bundle
from workstation.methods import get_method
from workstation.methods.metalogic.config import MetaLogicConfig
from workstation.methods.metalogic.demo import DEFAULT_ERROR_RATES, EXPECTED_KIND
from workstation.methods.metalogic.demo_project import add_demo
from workstation.methods.metalogic.laws import LAWS
from workstation.methods.metalogic.results import KINDS, MISALIGNED, UNDECIDABLE
from workstation.store import Project

METHOD = get_method("metalogic")
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """400 suite pairs (80 per law), one seed, 448-pixel images, two shards of each job."""
    folder = tmp_path_factory.mktemp("mldemo") / "p"
    with Project.create(folder) as p:
        summary = add_demo(p, n_pairs=400, seeds=1, size=448, workers=2)
    return folder, summary


def test_measured_misalignment_rate_per_law_is_the_injected_rate(demo: tuple[Path, dict[str, Any]]) -> None:
    folder, summary = demo
    with Project.open(folder) as p:
        runs = {r["run_id"]: r for r in p.samples.runs()}
        assert runs["demo_metalogic"]["source"] == "demo" and runs["demo_metalogic"]["samples"] == 800
        assert {j["kind"] for j in p.jobs.all()} == {"generate", "detect"}
        data = METHOD.load(p)
        truth = p.samples.truth()
        eid = p.evaluations.active_id("metalogic")
    assert len(data) == 400 and eid == summary["config_id"]
    res = METHOD.evaluate(data, MetaLogicConfig())
    t = [truth[s] for s in data.sample_a.tolist()]
    assert all(truth[b]["injected"] == ta["injected"] and truth[b]["side"] == ta["side"]
               for b, ta in zip(data.sample_b.tolist(), t))  # A and B were drawn from one decision
    injected = np.array([x["injected"] for x in t])
    law = np.array([LAWS.index(x["law"]) for x in t])
    decided = res.verdict != UNDECIDABLE
    mis = res.verdict == MISALIGNED
    wrong = decided & (mis != injected)  # the detector's own mistakes, known from the truth
    assert decided.mean() >= 0.9, "abstains too often"
    assert wrong[decided].mean() <= 0.05
    kind = np.array(KINDS, dtype=object)[res.kind]
    found = decided & mis & injected
    want = np.array([EXPECTED_KIND.get(x["kind"], "") for x in t], dtype=object)
    assert (kind[found] == want[found]).mean() >= 0.9
    for k, name in enumerate(LAWS):
        sel = decided & (law == k)
        n = int(sel.sum())
        rate = DEFAULT_ERROR_RATES[name]
        measured = float(mis[sel].mean())
        # binomial sampling of the injection (99.9 %) plus this law's share of detector mistakes
        bound = 3.29 * math.sqrt(rate * (1 - rate) / n) + float(wrong[sel].mean())
        assert abs(measured - rate) <= bound, (name, measured, rate, n, bound)
        # and against what was actually injected into these pairs: only the detector's mistakes
        assert abs(measured - float(injected[sel].mean())) <= float(wrong[sel].mean()) + 1e-12
        row = next(r for r in summary["truth"]["by_law"] if r["law"] == name)
        assert row["measured_rate"] == pytest.approx(measured) and row["set_rate"] == rate


def test_report_heatmap_shows_the_measured_rates(demo: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, summary = demo
    with Project.open(folder, read_only=True) as p:
        data = METHOD.load(p)

        def build(out: Path) -> list[Any]:
            return [METHOD.report_section(p, out / "metalogic")]

        (section,) = write_bundle(tmp_path / "r", build, provenance={"project": str(folder)})
    out = tmp_path / "r" / "metalogic"
    png = out / "assets" / "heatmap.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(png) as im:
        px = np.asarray(im.convert("RGB"), np.int64)
    assert px.shape[1] >= 500 and px.shape[0] >= 400
    assert (np.abs(px - px.reshape(-1, 3).mean(0)).sum(-1) > 60).mean() > 0.2  # coloured cells, not a blank canvas
    # (the section names its files where it wrote them, in the bundle's temporary folder)
    assert section.figures["heatmap"].parts[-3:] == png.parts[-3:] and "metalogic/assets/heatmap.png" in section.html
    # the heatmap's cells are the law × dimension table; summed per law they give the measured rates
    with open(out / "tables" / "law_dimension.csv", encoding="utf-8") as fh:
        cells = list(csv.DictReader(fh))
    assert len(cells) == 15  # 5 laws × position-less / X / Y
    for row in summary["truth"]["by_law"]:
        mine = [c for c in cells if c["law"] == row["law"]]
        mis = sum(int(c["misaligned"]) for c in mine)
        dec = sum(int(c["decided"]) for c in mine)
        assert dec == row["decided"] and mis / dec == pytest.approx(row["measured_rate"])
        for c in mine:
            d, n = int(c["decided"]), int(c["pairs"])
            assert float(c["decided_rate"]) == pytest.approx(int(c["misaligned"]) / d)
            assert float(c["decided_rate_lo"]) <= float(c["decided_rate"]) <= float(c["decided_rate_hi"])
            # the headline: every pair decided by the paper's rule, over all pairs
            assert float(c["paper_rate"]) == pytest.approx(int(c["paper_misaligned"]) / n)
            assert float(c["paper_rate_lo"]) <= float(c["paper_rate"]) <= float(c["paper_rate_hi"])
    with open(out / "tables" / "law.csv", encoding="utf-8") as fh:
        laws = {r["law"]: r for r in csv.DictReader(fh)}
    assert float(laws["Distributive"]["published"]) == 0.86  # the published figure beside the measured one
    with open(out / "tables" / "pairs.csv", encoding="utf-8") as fh:
        pairs = list(csv.DictReader(fh))
    assert [r["image_pair"] for r in pairs] == data.pair_id.tolist()
    assert (out / "index.html").read_text(encoding="utf-8").count("<img") == 2


# ---- CLIPScore from the scoring backend -------------------------------------------------------------
sys.path.insert(0, str(ROOT / "tests" / "core"))


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import models_tiny

    tok = models_dir / "clip_tokenizer"
    if not (tok / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {tok}")
    return models_tiny.build_tiny_clip(tmp_path_factory.mktemp("clip") / "clip", tok, seed=3)


def test_clipscore_job_feeds_clip_stability(tiny_clip: Path, tmp_path: Path) -> None:
    from test_scoring import direct_clip

    from workstation.jobs.chunks import read_image
    from workstation.jobs.progress import DONE
    from workstation.jobs.runner import run_job
    from workstation.jobs.spec import create_score_job

    with Project.create(tmp_path / "p") as p:
        add_demo(p, n_pairs=12, seeds=1, size=128, workers=1)
        spec = create_score_job(p, scorer="clipscore", model=str(tiny_clip), method="metalogic", batch_size=4)
        assert run_job(p, spec.job_id).status == DONE
        data = METHOD.load(p)
        paths = dict(p.con.execute("SELECT sample_id, image_path FROM samples").fetchall())
        folder = p.folder
    assert set(data.scores) == {"clip"} and data.scores["clip"]["scorer"].startswith("clipscore@")
    res = METHOD.evaluate(data, MetaLogicConfig())
    tables = METHOD.metrics(data, res)
    per_pair = {r["image_pair"]: r for r in tables["scores_pairs"]}
    assert len(per_pair) == len(data) == 12
    a, b = data.scores["clip"]["a"], data.scores["clip"]["b"]
    assert np.isfinite(a).all() and np.isfinite(b).all()
    picked = [i for i in range(len(data)) if abs(a[i] - b[i]) > 1e-3][:2]
    assert len(picked) == 2, "the tiny model gives A and B the same score everywhere"
    for i in picked:
        ims = [read_image(folder / paths[data.sample_a[i]]), read_image(folder / paths[data.sample_b[i]])]
        cos, _ = direct_clip(tiny_clip, ims, [str(data.text_a[i]), str(data.text_b[i])], 2)
        ca, cb = 100.0 * max(cos[0], 0.0), 100.0 * max(cos[1], 0.0)
        row = per_pair[data.pair_id[i]]
        assert row["clip_a"] == pytest.approx(ca, abs=1e-4) and row["clip_b"] == pytest.approx(cb, abs=1e-4)
        assert row["clip_diff"] == pytest.approx(abs(ca - cb) / 100.0, abs=2e-6)
        assert row["clip_stability"] == pytest.approx(1.0 - abs(ca - cb) / 100.0, abs=2e-6)
    # per category: the mean of its pairs' stabilities
    cat = tables["scores_category"][0]
    members = [r for r in per_pair.values() if (r["law"], r["dimension"]) == (cat["law"], cat["dimension"])]
    assert cat["n"] == len(members) and cat["clip_stability"] == pytest.approx(
        np.mean([r["clip_stability"] for r in members]))
    assert "faith_stability" not in cat and cat["clip_scorer"] == data.scores["clip"]["scorer"]
