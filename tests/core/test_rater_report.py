"""The report's "Raters" section and the protocol card, and the `protocol` command, on a project
whose MetaLogic pairs three raters labelled (one of them fast and careless)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.store import Project

from .test_raters_command import rated  # noqa: F401 - the fixture is used by name


def _command_figures(folder: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "raters.json"
    assert main(["raters", "--project", str(folder), "--boot", "50", "--json", str(out)]) == 0
    (task,) = json.loads(out.read_text(encoding="utf-8"))
    return task


def test_the_raters_section_shows_the_monitor_and_the_agreement_with_the_commands_numbers(rated: Path,
                                                                                         tmp_path: Path) -> None:
    from workstation.commands.raters import report_section

    task = _command_figures(rated, tmp_path)
    with Project.open(rated, read_only=True) as p:
        sec = report_section(p, tmp_path / "raters", n_boot=50)
    rows = {r["rater"]: r for r in sec.tables["metalogic_pair_raters"]}
    assert set(rows) == {"ann", "bea", "cy"}
    for r in task["raters"]:
        row = rows[r["annotator"]]
        assert row["items"] == str(r["items"])
        assert row["seconds"] == f"{r['median_seconds']:.1f}"
        assert (row["speed"] == "SPEEDER") == r["speeder"]
        p_ = r["peer_percent"]
        assert row["peers"] == f"{100 * p_['value']:.1f}% [{100 * p_['lo']:.1f}, {100 * p_['hi']:.1f}]"
        assert row["alpha_without"] == f"{r['alpha_without']:.3f}"
    assert rows["cy"]["speed"] == "SPEEDER" and rows["ann"]["seconds"] == "30.0"
    agree = {r["statistic"]: r for r in sec.tables["metalogic_pair_agreement"]}
    for name, title in (("ac1", "Gwet's AC1"), ("fleiss_kappa", "Fleiss' κ"), ("alpha_nominal",
                                                                              "Krippendorff's α (nominal)")):
        e = task["agreement"][name]
        assert agree[title]["value"] == f"{e['value']:.3f} [{e['lo']:.3f}, {e['hi']:.3f}]"
        assert agree[title]["n"] == "24"
    assert "Protocol card" in sec.html and "Rater monitor" in sec.html and "SPEEDER" in sec.html
    assert (tmp_path / "raters" / "metalogic_pair_raters.csv").is_file()


def test_the_report_has_a_raters_section(project: Path, tmp_path: Path) -> None:
    """Spatial labels of three raters on the imported fixture: `report` writes the section."""
    from datetime import datetime, timedelta

    from workstation.methods.audit_sources import audit_table

    t0 = datetime(2026, 3, 2, 9, 0, 0)
    with Project.open(project) as p:
        ids = audit_table(p, "spatial").item_id.tolist()[:12]
        for name, every in (("a1", 20), ("a2", 30), ("a3", 4)):
            for k, t in enumerate(ids):
                p.labels.add("spatial.verdict", "sample", t, name, "PASS" if (k % 3 or name == "a3") else "FAIL",
                             created_at=t0 + timedelta(seconds=every * k))
    report = tmp_path / "report"
    assert main(["report", "--project", str(project), "--out", str(report)]) == 0
    meta = json.loads((report / "report_meta.json").read_text(encoding="utf-8"))
    (sec,) = [s for s in meta["sections"] if s["method"] == "raters"]
    assert {r["rater"] for r in sec["tables"]["spatial_verdict_raters"]} == {"a1", "a2", "a3"}
    card = {r["field"]: r["value"] for r in sec["tables"]["spatial_verdict_protocol"]}
    assert card["overlap"] == "3 raters on 12 items" and "UNDECIDABLE" in card["scale"]
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "Protocol card" in html and "Rater monitor" in html


def test_the_protocol_card_holds_the_instructions_the_scale_and_the_consensus_rule(rated: Path, tmp_path: Path,
                                                                                   capsys: Any) -> None:
    instr = tmp_path / "instructions.md"
    instr.write_text("Say whether the two images keep the law.\n", encoding="utf-8")
    ex = tmp_path / "examples.txt"
    ex.write_text("a red cube left of a ball, the ball moved: MISALIGNED\n\n  same scene, same place: ALIGNED\n",
                  encoding="utf-8")
    assert main(["protocol", "--project", str(rated), "--task", "metalogic.pair", "--instructions", str(instr),
                 "--examples", str(ex)]) == 0
    assert "2 examples kept" in capsys.readouterr().out
    assert main(["protocol", "--project", str(rated), "--task", "metalogic.pair"]) == 0
    shown = capsys.readouterr().out
    assert "keep the law" in shown and "• same scene, same place: ALIGNED" in shown

    from workstation.commands.raters import protocol_card, task_monitor

    with Project.open(rated, read_only=True) as p:
        card = dict(protocol_card(p, task_monitor(p, "metalogic.pair", n_boot=0)))
    assert card["instructions"] == "Say whether the two images keep the law."
    assert card["examples"].splitlines() == ["• a red cube left of a ball, the ball moved: MISALIGNED",
                                             "• same scene, same place: ALIGNED"]
    assert "ALIGNED" in card["scale"] and "MISALIGNED" in card["scale"]
    assert card["raters"] == "3: ann, bea, cy" and card["overlap"] == "3 raters on 24 items"
    assert "majority" in card["labels and consensus rule"] or "latest" in card["labels and consensus rule"]
    assert "Krippendorff's α (nominal)" in card["agreement (95 % intervals over the units)"]

    assert main(["protocol", "--project", str(rated), "--task", "metalogic.pair", "--clear"]) == 0
    assert main(["protocol", "--project", str(rated), "--task", "metalogic.pair"]) == 0
    assert "no instructions kept" in capsys.readouterr().out


def test_protocol_refuses_an_unknown_task_and_a_file_that_is_not_text(rated: Path, tmp_path: Path, capsys: Any) -> None:
    assert main(["protocol", "--project", str(rated), "--task", "nope"]) != 0
    assert "unknown label task" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\x00bad")
    assert main(["protocol", "--project", str(rated), "--task", "metalogic.pair", "--instructions", str(bad)]) != 0
    assert "bad.txt" in capsys.readouterr().err
    with Project.open(rated, read_only=True) as p:
        from workstation.evaluation.protocol import load_protocol

        assert load_protocol(p, "metalogic.pair").empty  # nothing half-written


@pytest.mark.parametrize("task", ["spatial.verdict"])
def test_the_scale_names_the_unable_to_answer_option(task: str) -> None:
    from workstation.commands.labels import label_tasks
    from workstation.commands.raters import scale_text
    from workstation.methods import get_method

    scheme = next(s for s in get_method(label_tasks()[task]).label_schemes if s.task == task)
    assert scale_text(scheme).endswith(f"unable to answer: {scheme.abstain}") and scheme.abstain


def test_gold_qualification_and_adjudication_reach_the_monitor_and_the_card(rated: Path, monkeypatch: Any) -> None:
    """The raters' protocol (`workstation.evaluation.raters`: gold answers, accuracy on gold, the
    qualification rule, adjudications) as the monitor and the card read it, through its functions."""
    import sys
    import types
    from dataclasses import dataclass

    from workstation.commands.raters import protocol_card, rater_rows, task_monitor

    gold = {f"p{i}|run|0": v for i, v in enumerate(["ALIGNED", "MISALIGNED", "ALIGNED"] * 3)}  # the truth of p0..p8

    @dataclass(frozen=True)
    class Acc:
        rater: str
        correct: int
        n: int

        def text(self) -> str:
            return f"gold {self.correct}/{self.n}"

    fake = types.ModuleType("workstation.evaluation.raters")
    fake.gold_answers = lambda project, task: dict(gold)  # type: ignore[attr-defined]
    fake.gold_accuracy = lambda project, task: {"ann": Acc("ann", 9, 9), "cy": Acc("cy", 6, 9)}  # type: ignore[attr-defined]
    fake.load_qualification = lambda project: types.SimpleNamespace(text=lambda: "≥ 90 % on ≥ 5 gold items")  # type: ignore[attr-defined]
    fake.unqualified = lambda project, task, annotators=None: {"cy": "gold 6/9 < 90 %"}  # type: ignore[attr-defined]
    fake.adjudicated = lambda project, task: {"p0|run|0": ("MISALIGNED", "moved", "lead")}  # type: ignore[attr-defined]
    fake.adjudicators = lambda project: ["lead"]  # type: ignore[attr-defined]
    fake.adjudication_queue = lambda project, task, include_done=False: [object()] * 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "workstation.evaluation.raters", fake)
    from workstation.store.audit import AuditRepo

    # the gold items seeded into audit sets (the monitor's gold accuracy counts only those)
    monkeypatch.setattr(AuditRepo, "gold_items", lambda self: [(1, t) for t in gold], raising=False)
    with Project.open(rated, read_only=True) as p:
        tm = task_monitor(p, "metalogic.pair", n_boot=0)
        rows = {r["rater"]: r for r in rater_rows(tm)}
        card = dict(protocol_card(p, tm))
    assert rows["ann"]["gold"] == "100.0% [70.1, 100.0]"  # Wilson, 9 of 9
    assert rows["cy"]["gold"].startswith("66.7%")  # p0, p3, p6 are the careless rater's misses
    assert rows["cy"]["qualification"] == "left out: gold 6/9 < 90 %" and rows["ann"]["qualification"] == "qualified"
    assert card["qualification"] == "rule: ≥ 90 % on ≥ 5 gold items; left out: cy (gold 6/9 < 90 %)"
    assert "9 gold answers" in card["gold"] and "ann: gold 9/9" in card["gold"] and "cy: gold 6/9" in card["gold"]
    assert card["adjudication"] == "1 adjudicated, 7 open (adjudicators: lead)"


def test_a_project_without_gold_answers_or_a_rule_says_so(rated: Path) -> None:
    from workstation.commands.raters import protocol_card, rater_rows, task_monitor

    with Project.open(rated, read_only=True) as p:
        tm = task_monitor(p, "metalogic.pair", n_boot=0)
        card = dict(protocol_card(p, tm))
        rows = rater_rows(tm)
    # no gold: the rows' gold column is empty, every rater qualified (no rule), the card says why
    assert [(r["gold"], r["qualification"]) for r in rows] == [("—", "qualified")] * 3
    assert card["gold"] == "no gold answers; no rater labelled gold" and card["qualification"] == "rule: none"
    # the three raters disagree on 8 of the 24 pairs: open for adjudication, none adjudicated yet
    assert card["adjudication"] == "0 adjudicated, 8 open"
