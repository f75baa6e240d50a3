"""Bad input through the command line: one clear message naming the file and line, a non-zero
exit, and the project exactly as it was (every table compared before and after).

Each broken input is the SpatialBench-UC fixture copied into tmp_path with one line edited.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main

from tests.core.conftest import assert_one_clear_error, dump_tables, edit_json_line, edit_line
from workstation.store import DB_NAME


# ---------------------------------------------------------------------------------------------
# helpers (edit_line, edit_json_line, assert_one_clear_error and dump_tables live in conftest)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def run_copy(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path) -> Path:
    """The fixture run folder and prompt file copied into tmp_path (run/ and prompts.jsonl)."""
    dst = tmp_path / "run"
    shutil.copytree(sbuc_run_dir, dst)
    shutil.copy(sbuc_prompts, tmp_path / "prompts.jsonl")
    return dst


def import_into(project: Path, run_dir: Path, prompts: Path, capsys: pytest.CaptureFixture[str],
                run_id: str = "second_run") -> tuple[int, str]:
    rc = main(["import-sbuc", str(run_dir), "--prompts", str(prompts), "--project", str(project),
               "--run-id", run_id])
    return rc, capsys.readouterr().err


def check_rejected(project: Path, run_dir: Path, capsys: pytest.CaptureFixture[str], file_name: str,
                   line: int | None, *words: str) -> None:
    before = dump_tables(project)
    files_before = sorted(p.relative_to(project) for p in project.rglob("*"))
    rc, err = import_into(project, run_dir, run_dir.parent / "prompts.jsonl", capsys)
    assert rc != 0
    assert_one_clear_error(err, file_name, line, *words)
    assert dump_tables(project) == before
    assert sorted(p.relative_to(project) for p in project.rglob("*") if p.name != DB_NAME + ".wal") == \
        [f for f in files_before if f.name != DB_NAME + ".wal"]


# ---------------------------------------------------------------------------------------------
# run folders
# ---------------------------------------------------------------------------------------------


def test_malformed_jsonl_line(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ps = run_copy / "eval" / "per_sample.jsonl"
    edit_line(ps, 5, lambda old: old[: len(old) // 2])  # a line cut in half
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 5, "malformed JSON")


def test_missing_field(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ps = run_copy / "eval" / "per_sample.jsonl"
    edit_json_line(ps, 12, lambda o: o.pop("verdict_raw"))
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 12, "missing field", "verdict_raw")


def test_missing_gen_params_in_manifest(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_json_line(run_copy / "manifest.jsonl", 3, lambda o: o.pop("gen_params"))
    check_rejected(project, run_copy, capsys, "manifest.jsonl", 3, "gen_params")


def test_unknown_relation(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_json_line(run_copy / "eval" / "per_sample.jsonl", 40, lambda o: o.update(relation="inside"))
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 40, "unknown relation", "inside")


def test_unknown_relation_in_prompt_file(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_json_line(run_copy.parent / "prompts.jsonl", 7, lambda o: o.update(relation="behind"))
    check_rejected(project, run_copy, capsys, "prompts.jsonl", 7, "unknown relation", "behind")


def _set_first_box(o: dict[str, Any], box: list[Any]) -> None:
    o["detectors"]["primary"]["detections"][0]["box_xyxy"] = box


def test_nan_box(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ps = run_copy / "eval" / "per_sample.jsonl"
    edit_json_line(ps, 3, lambda o: _set_first_box(o, [float("nan"), 10.0, 50.0, 60.0]))
    assert "[NaN, " in ps.read_text().splitlines()[2]  # as Python's json writes it
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 3, "NaN")


def test_negative_box(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_json_line(run_copy / "eval" / "per_sample.jsonl", 8, lambda o: _set_first_box(o, [-200.0, 10.0, 50.0, 60.0]))
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 8, "outside")


def test_inverted_box(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_json_line(run_copy / "eval" / "per_sample.jsonl", 9, lambda o: _set_first_box(o, [300.0, 10.0, 100.0, 60.0]))
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 9, "inverted box")


def test_duplicate_sample_id(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ps = run_copy / "eval" / "per_sample.jsonl"
    first = json.loads(ps.read_text().splitlines()[9])["sample_id"]
    edit_json_line(ps, 11, lambda o: o.update(sample_id=first))
    check_rejected(project, run_copy, capsys, "per_sample.jsonl", 11, "duplicate sample_id", first)


def test_duplicate_sample_id_in_manifest(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    man = run_copy / "manifest.jsonl"
    first = json.loads(man.read_text().splitlines()[0])["sample_id"]
    edit_json_line(man, 2, lambda o: o.update(sample_id=first))
    check_rejected(project, run_copy, capsys, "manifest.jsonl", 2, "duplicate sample_id")


def test_missing_prompt_file(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_copy.parent / "prompts.jsonl").unlink()
    check_rejected(project, run_copy, capsys, "prompts.jsonl", None, "not found")


def test_image_path_escaping_the_project(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_json_line(run_copy / "manifest.jsonl", 6, lambda o: o.update(image_path="../../../outside.png"))
    check_rejected(project, run_copy, capsys, "manifest.jsonl", 6, "escapes")


def test_run_id_already_in_the_project(project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = dump_tables(project)
    rc, err = import_into(project, run_copy, run_copy.parent / "prompts.jsonl", capsys, run_id="sd15_boxdiff")
    assert rc != 0
    assert "already exists" in err and len(err.strip().splitlines()) == 1
    assert dump_tables(project) == before


def test_samples_already_in_the_project_roll_back_the_whole_import(
        project: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run row is written before the samples clash: the transaction must undo it."""
    before = dump_tables(project)
    rc, err = import_into(project, run_copy, run_copy.parent / "prompts.jsonl", capsys, run_id="again")
    assert rc != 0
    assert "already in the project" in err
    assert dump_tables(project) == before


def test_failed_import_into_a_new_folder_creates_nothing(
        tmp_path: Path, run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_line(run_copy / "eval" / "per_sample.jsonl", 2, lambda old: "{not json")
    target = tmp_path / "new_project"
    rc, err = import_into(target, run_copy, run_copy.parent / "prompts.jsonl", capsys)
    assert rc != 0
    assert_one_clear_error(err, "per_sample.jsonl", 2, "malformed JSON")
    assert not target.exists()


# ---------------------------------------------------------------------------------------------
# label files
# ---------------------------------------------------------------------------------------------


def test_labels_for_unknown_samples(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "labels_filled.json"
    f.write_text(json.dumps([
        {"sample_id": "sd15_boxdiff_v1_000000_seed0000", "human_verdict": "PASS", "notes": "",
         "timestamp": "2026-01-14T15:39:09.080Z"},
        {"sample_id": "no_such_sample", "human_verdict": "FAIL", "notes": "",
         "timestamp": "2026-01-14T15:39:10.080Z"},
    ], indent=2))
    before = dump_tables(project)
    rc = main(["labels", "import", str(f), "--project", str(project)])
    err = capsys.readouterr().err
    assert rc != 0
    assert_one_clear_error(err, "labels_filled.json", 8, "unknown sample", "no_such_sample")
    assert dump_tables(project) == before


def test_bad_checker_config_for_evaluate(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "checker.yaml"
    cfg.write_text("margin: 0.05\nt_det: [oops\n")
    before = dump_tables(project)
    rc = main(["evaluate", "--project", str(project), "--config", str(cfg)])
    err = capsys.readouterr().err
    assert rc != 0
    assert "checker.yaml:" in err and "YAML" in err
    assert dump_tables(project) == before
