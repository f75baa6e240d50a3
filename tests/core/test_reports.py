"""Report bundle: SpatialBench-UC tables reproduced to the digit, plots, index.html, atomic write."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from workstation.methods.spatial import audit, checker, report as reports
from workstation.methods.spatial.types import FAIL, PASS, UNDECIDABLE
from workstation.types import WorkstationError

# the published calibrated report's row for this run (tables/*.csv of SpatialBench-UC)
PUBLISHED = {
    "main_results": ("run,samples,pass_rate,coverage,pass_rate_cond,prompt_pass_rate,mean_conf",
                     '"sd15_boxdiff",800,0.4037,0.4250,0.9500,0.7600,0.3948'),
    "by_relation": ("run,above_pass_rate,below_pass_rate,left_of_pass_rate,right_of_pass_rate",
                    '"sd15_boxdiff",0.4200,0.3850,0.4000,0.4100'),
    "counterfactual": ("run,pairs,both_pass_rate,one_sided_rate,both_fail_rate,undecidable_rate,undecidable_count",
                       '"sd15_boxdiff",100,0.6600,0.0000,0.0000,0.3400,34'),
    "prompt_metrics": ("run,total_prompts,best_of_k_pass_rate,all_of_k_pass_rate",
                       '"sd15_boxdiff",200,0.7600,0.0850'),
}


@pytest.fixture(scope="module")
def evaluated(sbuc_parsed):
    ds = sbuc_parsed.dataset
    cfg = sbuc_parsed.config
    return ds, cfg, checker.evaluate(ds, cfg)


def human_labels(ds, v, n=200, seed=0):
    """Labels on a stratified sample: the checker's verdict, with a few disagreements."""
    rows = audit.stratified_sample(ds, v, n, seed=seed)
    human = np.full(ds.n, -1, np.int8)
    human[rows] = v.verdict[rows]
    rng = np.random.default_rng(seed)
    flip = rows[rng.random(len(rows)) < 0.15]
    human[flip] = rng.choice([PASS, FAIL, UNDECIDABLE], len(flip))
    return human


def test_report_reproduces_the_published_tables(evaluated, tmp_path):
    ds, cfg, v = evaluated
    prov = {"project": "fixture", "verdict_set": 3, "source": "sd15_boxdiff/eval/per_sample.jsonl"}
    paths = reports.write_report(tmp_path / "report", ds, v, cfg, cfg.content_hash(), prov)
    for name, (header, line) in PUBLISHED.items():
        text = paths[name].read_text(encoding="utf-8").splitlines()
        assert text == [header, line], name
    # full precision beside the presentation tables
    with paths["main_results_full"].open(newline="") as fh:
        full = list(csv.DictReader(fh))
    assert float(full[0]["pass_rate"]) == 0.40375 and full[0]["pass_count"] == "323"
    ab = {r["reason"]: r for r in csv.DictReader(paths["abstention"].open(newline=""))}
    assert ab["missing"]["count"] == "366" and ab["ambiguous"]["count"] == "63"
    assert ab["high_overlap"]["count"] == "6" and ab["near_boundary"]["count"] == "25"
    assert ab["missing"]["rate"] == "0.4575"


def test_report_files_plots_html_and_meta(evaluated, tmp_path):
    ds, cfg, v = evaluated
    human = human_labels(ds, v)
    prov = {"project": "fixture-project", "labels": "labels_filled.json"}
    out = tmp_path / "rep"
    paths = reports.write_report(out, ds, v, cfg, "abc123def4567890", prov, labels=human)
    for key in ("pass_rate_by_relation", "pass_rate_comparison", "confidence_distribution",
                "counterfactual_consistency", "risk_coverage"):
        data = paths[key].read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, key
    html = paths["index"].read_text(encoding="utf-8")
    assert "abc123def4567890" in html and "fixture-project" in html and "labels_filled.json" in html
    for key in ("main_results", "by_relation", "counterfactual", "prompt_metrics", "abstention",
                "audit_confusion", "risk_coverage"):
        assert f"tables/{key}.csv" in html and paths[key].is_file()
    for key in ("pass_rate_by_relation", "confidence_distribution", "counterfactual_consistency", "risk_coverage"):
        assert f"assets/{key}.png" in html
    meta = json.loads(paths["meta"].read_text(encoding="utf-8"))
    assert meta["config_hash"] == "abc123def4567890"
    assert {k: x for k, x in meta["provenance"].items() if k != "intervals"} == prov
    # the intervals' method, resample count, seed and unit are part of the provenance
    iv = meta["provenance"]["intervals"]
    assert (iv["bootstrap_resamples"], iv["bootstrap_seed"], iv["level"]) == (2000, 0, 0.95)
    assert iv["bootstrap_unit"].startswith("prompt")
    assert meta["tables"]["main_results"]["rows"][0]["pass_rate"] == 0.40375
    # audit tables agree with the confusion over the labelled rows
    lab = np.flatnonzero(human >= 0)
    m = audit.confusion(v.verdict[lab], human[lab])
    rows = list(csv.DictReader(paths["audit_confusion"].open(newline="")))
    assert [[int(r[f"human_{h}"]) for h in ("PASS", "FAIL", "UNDECIDABLE")] for r in rows] == m.tolist()
    assert meta["audit"]["n_audited"] == 200
    assert "audit_confusion_at_tau" not in paths  # tau 0: no operating-point table
    paths2 = reports.write_report(tmp_path / "rep2", ds, v, cfg.replace(tau=0.9), "h", {}, labels=human)
    at = list(csv.DictReader(paths2["audit_confusion_at_tau"].open(newline="")))
    from workstation.methods.spatial.calibration import apply_tau
    m_tau = audit.confusion(apply_tau(v.verdict[lab], v.conf[lab], 0.9), human[lab])
    assert [[int(r[f"human_{h}"]) for h in ("PASS", "FAIL", "UNDECIDABLE")] for r in at] == m_tau.tolist()
    rc = list(csv.DictReader(paths["risk_coverage_full"].open(newline="")))
    assert float(rc[0]["tau"]) == 0.0 and float(rc[-1]["coverage"]) == 0.0
    # nothing else is left in the parent folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "rep2"]


def test_report_on_a_small_subset_matches_the_metrics(evaluated, tmp_path):
    ds, cfg, v = evaluated
    rows = np.arange(0, 48)  # 12 prompts x 4 seeds
    sub = ds.subset(rows)
    vs = v.take(rows)
    paths = reports.write_report(tmp_path / "small", sub, vs, cfg, cfg.content_hash(), {})
    got = next(csv.DictReader(paths["main_results_full"].open(newline="")))
    p = int(np.sum(vs.verdict == PASS))
    f = int(np.sum(vs.verdict == FAIL))
    assert int(got["samples"]) == 48
    assert float(got["pass_rate"]) == p / 48
    assert float(got["coverage"]) == (p + f) / 48
    assert float(got["mean_conf"]) == pytest.approx(float(np.mean(vs.conf)), abs=0, rel=1e-15)


def test_failed_report_leaves_nothing_and_existing_folder_is_protected(evaluated, tmp_path, monkeypatch):
    ds, cfg, v = evaluated
    out = tmp_path / "rep"

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(reports, "plot_counterfactual", boom)
    with pytest.raises(RuntimeError):
        reports.write_report(out, ds, v, cfg, "h", {})
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()

    reports.write_report(out, ds, v, cfg, "first", {})
    with pytest.raises(WorkstationError, match="already exists"):
        reports.write_report(out, ds, v, cfg, "second", {})
    # a failed overwrite keeps the old report
    monkeypatch.setattr(reports, "plot_counterfactual", boom)
    with pytest.raises(RuntimeError):
        reports.write_report(out, ds, v, cfg, "second", {}, overwrite=True)
    monkeypatch.undo()
    assert "first" in (out / "index.html").read_text(encoding="utf-8")
    reports.write_report(out, ds, v, cfg, "second", {}, overwrite=True)
    assert "second" in (out / "index.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_report_rejects_misaligned_verdicts(evaluated, tmp_path):
    ds, cfg, v = evaluated
    with pytest.raises(WorkstationError, match="rows but the dataset"):
        reports.write_report(tmp_path / "x", ds, v.take(np.arange(10)), cfg, "h", {})
    assert not (tmp_path / "x").exists()


def test_csv_format_follows_spatialbench_uc(tmp_path):
    p = tmp_path / "t.csv"
    reports.write_csv(p, ["run", "n", "rate"], [{"run": 'a"b', "n": np.int64(3), "rate": 0.51625}], full=False)
    assert p.read_text().splitlines() == ["run,n,rate", '"a""b",3,0.5162']
    reports.write_csv(p, ["run", "n", "rate"], [{"run": "a", "n": 3, "rate": 0.51625}], full=True)
    assert p.read_text().splitlines()[1] == '"a",3,0.51625'


def test_report_with_no_decided_sample_and_no_audited_label(evaluated, tmp_path):
    ds, cfg, v = evaluated
    rows = np.flatnonzero(v.verdict == UNDECIDABLE)[:20]
    sub, vs = ds.subset(rows), v.take(rows)
    paths = reports.write_report(tmp_path / "r", sub, vs, cfg, "h", {"note": float("nan")},
                                 labels=np.full(sub.n, -1))
    meta = json.loads(paths["meta"].read_text(encoding="utf-8"))  # strict JSON: NaN became null
    assert meta["tables"]["main_results"]["rows"][0]["pass_rate_cond"] is None
    assert meta["audit"]["n_audited"] == 0
    assert paths["main_results"].read_text().splitlines()[1].split(",")[4] == "nan"
