"""MetaLogic by name on the command line, end to end: suite → generate → detect → evaluate → report,
a custom pair file generated directly, and the errors a user can make."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.store import Project


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_suite_generate_detect_evaluate_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite, proj, rep = tmp_path / "suite.jsonl", tmp_path / "p", tmp_path / "report"
    code, out, err = run(capsys, "suite", "--method", "metalogic", "--set", "n_pairs=10", "--set", "objects=demo",
                         "--set", "seed=4", "--out", suite)
    assert code == 0, err
    lines = [json.loads(x) for x in suite.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 20 and {x["method"] for x in lines} == {"metalogic"}
    assert lines[0]["twin_id"] == lines[1]["prompt_id"] and lines[0]["attrs"]["side"] == "A"
    assert "wrote 20 metalogic prompts" in out
    code, out, err = run(capsys, "generate", "--project", proj, "--method", "metalogic", "--suite", suite,
                         "--model", "procedural", "--seeds", "2", "--width", "192", "--height", "192")
    assert code == 0, err
    code, out, err = run(capsys, "detect", "--project", proj, "--detector", "scene", "--perturbations", "none")
    assert code == 0, err
    cfg = tmp_path / "strict.yaml"
    cfg.write_text("name: strict\nscore_threshold: 0.4\naxis_margin: 0.06\n", encoding="utf-8")
    code, out, err = run(capsys, "evaluate", "--project", proj, "--method", "metalogic", "--config", cfg)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("evaluated 20 MetaLogic image pairs with config v1 (strict, ")
    assert "misalignment rate" in out and "by law:" in out
    with Project.open(proj, read_only=True) as p:
        assert p.evaluations.all("metalogic")[0]["name"] == "strict"
        n = p.con.execute("SELECT count(*), count(DISTINCT run_id) FROM metalogic_outcomes").fetchone()
        assert n == (20, 1)
    code, out, err = run(capsys, "report", "--project", proj, "--method", "metalogic", "--out", rep)
    assert code == 0, err
    assert (rep / "index.html").is_file() and (rep / "metalogic" / "assets" / "heatmap.png").is_file()
    with open(rep / "metalogic" / "tables" / "overall.csv", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert int(row["pairs"]) == 20 and row["run"] in out
    assert "metalogic: 20 image pairs, config v1" in out
    # the same version evaluated again is the same version
    code, out, err = run(capsys, "evaluate", "--project", proj, "--method", "metalogic")
    assert code == 0 and "config v1 (strict," in out


def test_a_custom_pair_file_generates_and_evaluates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pairs, proj = tmp_path / "pairs.csv", tmp_path / "p"
    pairs.write_text(
        "pair_id,law,modifier,dimension,prompt_a,prompt_b,entities,expected_counts\n"
        "lr,Commutative,AND,x,a cat left of a dog,a dog right of a cat,cat;dog,1;1\n"
        "neg,DeMorgan,AND,none,a cat and not both a cat and a dog,a cat and either no cat or no dog,cat;dog,1;0\n",
        encoding="utf-8")
    from workstation.methods import get_method

    assert get_method("metalogic").read_suite_file(pairs).prompt_id.tolist() == ["lr.A", "lr.B", "neg.A", "neg.B"]
    code, out, err = run(capsys, "generate", "--project", proj, "--method", "metalogic", "--suite", pairs,
                         "--model", "procedural", "--seeds", "1", "--width", "128", "--height", "128")
    assert code == 0, err
    assert run(capsys, "detect", "--project", proj, "--detector", "scene", "--perturbations", "none")[0] == 0
    code, out, err = run(capsys, "evaluate", "--project", proj, "--method", "metalogic")
    assert code == 0 and out.startswith("evaluated 2 MetaLogic image pairs"), err


def test_errors_a_user_can_make(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "suite", "--method", "metalogic", "--set", "pairs=4", "--out", tmp_path / "s.jsonl")
    assert code == 2 and "unknown option(s) pairs" in err and not (tmp_path / "s.jsonl").exists()
    code, _, err = run(capsys, "suite", "--method", "metalogic", "--set", "variant=other", "--out", tmp_path / "s.jsonl")
    assert code == 2 and "unknown MetaLogic variant 'other'" in err
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"pair_id": "x", "law": "DeMorgan"}\n', encoding="utf-8")
    code, _, err = run(capsys, "generate", "--project", tmp_path / "p", "--method", "metalogic", "--suite", bad,
                       "--model", "procedural")
    assert code == 2 and f"{bad}:1: missing field(s)" in err
    proj = tmp_path / "q"
    assert run(capsys, "suite", "--method", "metalogic", "--set", "n_pairs=3", "--project", proj)[0] == 0
    cfg = tmp_path / "c.yaml"
    cfg.write_text("score_threshold: 0.3\nnear_band: 2\n", encoding="utf-8")
    code, _, err = run(capsys, "evaluate", "--project", proj, "--method", "metalogic", "--config", cfg)
    assert code == 2 and f"{cfg}:2: MetaLogic parameter near_band must be in [0, 1]" in err
    code, out, err = run(capsys, "evaluate", "--project", proj, "--method", "metalogic")
    assert code == 0 and "no image pairs to compare yet" in out
    code, out, err = run(capsys, "report", "--project", proj, "--method", "metalogic", "--out", tmp_path / "r")
    assert code == 0 and "no image pair yet" in (tmp_path / "r" / "metalogic" / "index.html").read_text()
