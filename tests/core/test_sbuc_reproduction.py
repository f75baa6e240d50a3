"""The published SpatialBench-UC run is reproduced exactly from its recorded detections."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workstation.methods.spatial.checker import evaluate, evaluate_reference
from workstation.methods.spatial.metrics import summarize
from workstation.methods.spatial.types import REASONS


@pytest.fixture(scope="module")
def verdicts(sbuc_parsed):
    assert sbuc_parsed.config is not None and sbuc_parsed.recorded is not None
    return evaluate(sbuc_parsed.dataset, sbuc_parsed.config)


def test_every_verdict_reason_and_confidence_matches(sbuc_parsed, verdicts):
    rec = sbuc_parsed.recorded
    v = verdicts
    assert len(v) == 800
    np.testing.assert_array_equal(v.verdict, rec.verdict)
    np.testing.assert_array_equal(v.reason, rec.reason)
    assert list(v.reason_texts()) == list(rec.reason_text)
    for ours, theirs in [(v.conf, rec.conf), (v.c_detection, rec.c_detection),
                         (v.c_geometry, rec.c_geometry), (v.c_stability, rec.c_stability),
                         (v.c_agreement, rec.c_agreement)]:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    np.testing.assert_allclose(v.delta, rec.delta, rtol=0, atol=1e-9)  # NaN where not computed


def test_reference_implementation_agrees(sbuc_parsed, verdicts):
    ref = evaluate_reference(sbuc_parsed.dataset, sbuc_parsed.config)
    np.testing.assert_array_equal(ref.verdict, verdicts.verdict)
    np.testing.assert_array_equal(ref.sel_a, verdicts.sel_a)
    np.testing.assert_allclose(ref.conf, verdicts.conf, rtol=1e-12)


def test_reason_strings_look_like_the_published_ones(sbuc_parsed, verdicts):
    texts = set(verdicts.reason_texts())
    assert "ambiguous: multiple banana" in texts
    assert "high_overlap: IoU=0.96 > 0.5" in texts
    assert "near_boundary (|delta|=0.049 <= margin=0.1)" in texts
    assert any(t.startswith("missing: ") for t in texts)


def test_published_report_tables(sbuc_parsed, verdicts):
    s = summarize(sbuc_parsed.dataset, verdicts)
    (main,) = s.main_results
    assert main["run"] == "sd15_boxdiff" and main["samples"] == 800
    expected = {"pass_rate": 0.4037, "coverage": 0.4250, "pass_rate_cond": 0.9500,
                "prompt_pass_rate": 0.7600, "mean_conf": 0.3948}
    for k, val in expected.items():
        assert round(main[k], 4) == pytest.approx(val, abs=1e-9), k
    (rel,) = s.by_relation
    assert {k: round(v, 4) for k, v in rel.items() if k != "run" and not k.endswith(("_lo", "_hi"))} == {
        "above_pass_rate": 0.42, "below_pass_rate": 0.385, "left_of_pass_rate": 0.40,
        "right_of_pass_rate": 0.41}
    (cf,) = s.counterfactual
    assert cf["pairs"] == 100 and cf["undecidable_count"] == 34
    assert [round(cf[k], 4) for k in ("both_pass_rate", "one_sided_rate", "both_fail_rate",
                                      "undecidable_rate")] == [0.66, 0.0, 0.0, 0.34]
    (pm,) = s.prompt_metrics
    assert pm["total_prompts"] == 200 and pm["k"] == 4
    assert round(pm["best_of_k_pass_rate"], 4) == 0.76 and round(pm["all_of_k_pass_rate"], 4) == 0.085


def test_metrics_json_counts(sbuc_parsed, sbuc_run_dir, verdicts):
    published = json.loads((sbuc_run_dir / "eval" / "metrics.json").read_text(encoding="utf-8"))
    s = summarize(sbuc_parsed.dataset, verdicts)
    (main,) = s.main_results
    assert (main["pass_count"], main["fail_count"], main["undecidable_count"]) == (
        published["pass_count"], published["fail_count"], published["undecidable_count"])
    assert main["mean_conf"] == pytest.approx(published["mean_confidence"], abs=1e-9)
    counts = {r["reason"]: r["count"] for r in s.abstention}
    for reason in REASONS[1:]:
        assert counts[reason] == published["undecidable_reasons"].get(reason, 0), reason
    by_rel = {r["relation"]: r for r in s.relation_detail}
    for rel, pub in published["by_relation"].items():
        assert (by_rel[rel]["pass_count"], by_rel[rel]["fail_count"], by_rel[rel]["undecidable_count"]) \
            == (pub["pass_count"], pub["fail_count"], pub["undecidable_count"])
        assert by_rel[rel]["pass_rate_cond"] == pytest.approx(pub["pass_rate_conditional"])


def test_an_imported_project_reproduces_the_run_from_the_stored_stabilities(sbuc_parsed, tmp_path, capsys):
    """The run imported into a project and read back as the spatial method loads it (its
    recorded stabilities from the method's own table) gives the published confidences."""
    from pathlib import Path

    from workstation.cli import main
    from workstation.methods.spatial.store import SpatialStore, load_dataset
    from workstation.store import Project

    fixture = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "spatialbench_uc"
    project = tmp_path / "p"
    assert main(["import-sbuc", str(fixture / "sd15_boxdiff"), "--prompts", str(fixture / "v1.0.1" / "prompts.jsonl"),
                 "--project", str(project)]) == 0
    capsys.readouterr()
    with Project.open(project, read_only=True) as p:
        ds = load_dataset(p)
        _, cfg = SpatialStore(p).active_config()
    rec = sbuc_parsed.recorded
    assert ds.samples.sample_id.tolist() == sbuc_parsed.dataset.samples.sample_id.tolist()
    v = evaluate(ds, cfg)
    np.testing.assert_array_equal(v.verdict, rec.verdict)
    np.testing.assert_allclose(v.c_stability, rec.c_stability, rtol=0, atol=1e-6)
    np.testing.assert_allclose(v.conf, rec.conf, rtol=0, atol=1e-6)
