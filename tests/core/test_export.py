"""SpatialBench-UC per-sample export: the imported fixture exports back to its own records, and
importing an export (with the run's manifest) reproduces the same verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.store import Project
from workstation.methods.spatial.store import SpatialStore

COMPARED = ("sample_id", "prompt_id", "relation", "object_a", "object_b", "verdict_raw", "verdict_reason",
            "conf", "conf_components", "selected", "geometry")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def verdict_rows(folder: Path) -> list[tuple[Any, ...]]:
    """(sample, verdict, reason, reason text, conf, components) of the active verdict set."""
    with Project.open(folder, read_only=True) as p:
        cid = SpatialStore(p).active_config_id()
        rows = p.con.execute(
            "SELECT sample_id, verdict, reason, reason_text, conf, c_detection, c_geometry, c_stability, "
            "c_agreement FROM spatial_verdicts WHERE eval_id=? ORDER BY sample_id", [cid]).fetchall()
    return rows


def detection_rows(folder: Path) -> list[tuple[Any, ...]]:
    with Project.open(folder, read_only=True) as p:
        return p.con.execute("SELECT sample_id, source, detector, variant, label, score, x1, y1, x2, y2 "
                             "FROM detections ORDER BY ALL").fetchall()



def make_run_folder(tmp: Path, manifest: Path, per_sample: Path) -> Path:
    run = tmp / "sd15_boxdiff"
    (run / "eval").mkdir(parents=True)
    shutil.copy(manifest, run / "manifest.jsonl")
    shutil.copy(per_sample, run / "eval" / "per_sample.jsonl")
    return run


def test_export_of_imported_fixture_equals_the_published_records(
        imported: Path, sbuc_run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "per_sample.jsonl"
    assert main(["export-sbuc", "--project", str(imported), "--run", "sd15_boxdiff", "--out", str(out)]) == 0
    assert "wrote 800 records" in capsys.readouterr().out
    original = read_jsonl(sbuc_run_dir / "eval" / "per_sample.jsonl")
    exported = read_jsonl(out)
    assert len(exported) == len(original) == 800
    for o, e in zip(original, exported):
        for key in COMPARED:
            assert e[key] == o[key], (o["sample_id"], key, o[key], e[key])
        # the same detectors, each with the same detections in the same order
        assert set(e["detectors"]) == set(o["detectors"]), o["sample_id"]
        for src, block in o["detectors"].items():
            assert e["detectors"][src] == block, (o["sample_id"], src)


def test_reimporting_the_export_reproduces_verdicts_and_detections(
        imported: Path, sbuc_run_dir: Path, sbuc_prompts: Path, tmp_path: Path) -> None:
    out = tmp_path / "exported.jsonl"
    assert main(["export-sbuc", "--project", str(imported), "--run", "sd15_boxdiff", "--out", str(out)]) == 0
    run = make_run_folder(tmp_path, sbuc_run_dir / "manifest.jsonl", out)
    again = tmp_path / "again"
    assert main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(again)]) == 0
    assert verdict_rows(again) == verdict_rows(imported)
    assert detection_rows(again) == detection_rows(imported)


def test_export_of_a_new_verdict_set_round_trips(
        imported: Path, sbuc_run_dir: Path, sbuc_prompts: Path, tmp_path: Path) -> None:
    """After `evaluate` with other parameters, the export carries the new verdict set, and
    importing it gives back exactly those verdicts."""
    project = tmp_path / "project"
    shutil.copytree(imported, project)
    cfg = tmp_path / "checker.yaml"
    cfg.write_text("margin: 0.03\nt_det: 0.3\nprimary_threshold: 0.5\nsecondary_threshold: 0.35\n")
    assert main(["evaluate", "--project", str(project), "--config", str(cfg)]) == 0
    out = tmp_path / "exported.jsonl"
    assert main(["export-sbuc", "--project", str(project), "--run", "sd15_boxdiff", "--out", str(out)]) == 0
    recs = read_jsonl(out)
    assert {r["geometry"]["margin"] for r in recs} == {0.03}
    run = make_run_folder(tmp_path / "rt", sbuc_run_dir / "manifest.jsonl", out)
    again = tmp_path / "again"
    assert main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(again)]) == 0
    a, b = verdict_rows(again), verdict_rows(project)
    assert len(a) == len(b) == 800
    assert a == b  # verdict, reason, reason text, confidence and components: exactly equal
    # the new verdicts differ from the published ones somewhere (the export is not a copy)
    assert verdict_rows(project) != verdict_rows(imported)


def test_export_of_an_unknown_run_is_refused(imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.jsonl"
    assert main(["export-sbuc", "--project", str(imported), "--run", "nope", "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "no run 'nope'" in err and "sd15_boxdiff" in err
    assert not out.exists()
