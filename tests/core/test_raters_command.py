"""`raters`: the rater monitor on the command line, on a project whose MetaLogic pairs three raters
labelled (one of them fast and careless), and its JSON file."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.store import Project

T0 = datetime(2026, 3, 2, 9, 0, 0)


def make_rated(folder: Path) -> Path:
    """MetaLogic pairs three raters labelled: ann and bea right, every 30 s and 40 s; cy fast (5 s)
    and careless (every third pair MISALIGNED)."""
    truth = ["ALIGNED", "MISALIGNED", "ALIGNED", "ALIGNED", "MISALIGNED", "ALIGNED"] * 4
    careless = [("MISALIGNED" if i % 3 == 0 else v) for i, v in enumerate(truth)]
    with Project.create(folder) as p:
        for name, labels, every in (("ann", truth, 30), ("bea", truth, 40), ("cy", careless, 5)):
            for i, v in enumerate(labels):
                p.labels.add("metalogic.pair", "pair", f"p{i}|run|0", name, v,
                             created_at=T0 + timedelta(seconds=every * i))
    return folder


@pytest.fixture
def rated(tmp_path: Path) -> Path:
    return make_rated(tmp_path / "proj")


def test_raters_prints_the_agreement_and_a_row_per_rater(rated: Path, capsys: Any) -> None:
    assert main(["raters", "--project", str(rated), "--boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "metalogic.pair: 3 raters, 24 items, 24 rated by two or more" in out
    assert "Krippendorff's α (nominal)" in out and "Fleiss' κ" in out and "Gwet's AC1" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and line.split()[0] in
            ("ann", "bea", "cy")}
    assert "SPEEDER" in rows["cy"] and "SPEEDER" not in rows["ann"] and "SPEEDER" not in rows["bea"]
    assert rows["ann"].split()[1:3] == ["24", "30.0"]
    assert "each target is its own unit" in out  # the project has no MetaLogic results to take prompts from


def test_raters_writes_every_figure_as_json_and_never_replaces_a_file_unasked(rated: Path, tmp_path: Path,
                                                                               capsys: Any) -> None:
    out = tmp_path / "raters.json"
    assert main(["raters", "--project", str(rated), "--task", "metalogic", "--boot", "0", "--json", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    (task,) = data
    assert task["task"] == "metalogic.pair" and task["items"] == 24
    by = {r["annotator"]: r for r in task["raters"]}
    assert by["cy"]["speeder"] is True and by["ann"]["median_seconds"] == 30.0
    assert by["ann"]["peer_percent"]["value"] == pytest.approx((24 + 16) / 48)  # all of bea's, 2 in 3 of cy's
    assert task["agreement"]["ac1"]["n"] == 24
    assert task["intervals"]["bootstrap_unit"] == "target" and task["intervals"]["bootstrap_resamples"] == 0
    assert main(["raters", "--project", str(rated), "--task", "metalogic", "--json", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_raters_refuses_a_bad_session_gap(rated: Path, capsys: Any) -> None:
    assert main(["raters", "--project", str(rated), "--session-gap", "0"]) != 0
    assert "--session-gap" in capsys.readouterr().err


def test_raters_takes_the_prompts_and_the_checkers_verdicts_from_the_audit_table(project: Path, capsys: Any) -> None:
    """Spatial labels of the imported fixture: the intervals are over its prompts and the judge is the checker."""
    from workstation.methods.audit_sources import audit_table

    with Project.open(project) as p:
        table = audit_table(p, "spatial")
        ids = table.item_id.tolist()[:24]
        checker = {t: ("PASS" if o == 1 else "FAIL" if o == 0 else "UNDECIDABLE")
                   for t, o in zip(table.item_id.tolist(), table.outcome.tolist())}
        prompts = {t: c for t, c in zip(table.item_id.tolist(), table.cluster.tolist())}
        for k, t in enumerate(ids):
            p.labels.add("spatial.verdict", "sample", t, "a1", checker[t], created_at=T0 + timedelta(seconds=20 * k))
            p.labels.add("spatial.verdict", "sample", t, "a2", "PASS" if k % 2 else "FAIL",
                         created_at=T0 + timedelta(seconds=25 * k))
    out_json = project.parent / "raters.json"
    assert main(["raters", "--project", str(project), "--task", "spatial", "--boot", "100", "--json",
                 str(out_json)]) == 0
    assert "units: prompts of the audit table; judge: the checker" in capsys.readouterr().out
    (task,) = json.loads(out_json.read_text(encoding="utf-8"))
    by = {r["annotator"]: r for r in task["raters"]}
    assert by["a1"]["judge_percent"]["value"] == 1.0 and by["a1"]["judge_percent"]["n"] == 24
    a2 = [("PASS" if k % 2 else "FAIL") == checker[t] for k, t in enumerate(ids)]
    assert by["a2"]["judge_percent"]["value"] == pytest.approx(sum(a2) / 24)
    assert task["agreement"]["ac1"]["units"] == len({prompts[t] for t in ids}) < 24
    assert task["intervals"]["bootstrap_unit"] == "prompt"


def test_raters_has_help_and_needs_a_project(tmp_path: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit) as e:
        main(["raters", "--help"])
    assert e.value.code == 0 and "--session-gap" in capsys.readouterr().out
    assert main(["raters", "--project", str(tmp_path / "none")]) != 0
    assert "no project in" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_raters_on_a_project_without_labels(tmp_path: Path, capsys: Any) -> None:
    Project.create(tmp_path / "empty").close()
    assert main(["raters", "--project", str(tmp_path / "empty")]) == 0
    assert "no labels in this project yet" in capsys.readouterr().out
