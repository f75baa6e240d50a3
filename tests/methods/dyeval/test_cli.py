"""`main.py dyeval ...`: a tree driven from the command line, and its errors (one line each)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from workstation.cli import main
from workstation.store import Project


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["dyeval", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_tree_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = str(tmp_path / "p")
    rc, out, _ = _run(capsys, "new-tree", "--project", proj, "--topic", "Material objects", "--set", "n_i=2",
                      "--set", "n_x=2", "--set", "d_max=2")
    assert rc == 0 and "made tree t1" in out and "write 2 prompts for 'Material objects'" in out
    rc, out, _ = _run(capsys, "step", "--project", proj)
    assert rc == 0 and "- wrote 2 prompt(s) for 'Material objects'" in out
    assert "review the 2 prompt(s)" in out and f"dyeval step --project {proj} --tree t1 --confirm" in out
    rc, out, _ = _run(capsys, "step", "--project", proj, "--confirm", "--size", "64")
    assert rc == 0 and "- generated 4 image(s)" in out and "jobs: generate-dyeval-t1-" in out
    assert "judge 4 image(s) of 'Material objects' PASS / FAIL" in out
    todo = tmp_path / "todo.csv"
    rc, out, _ = _run(capsys, "show", "--project", proj, "--todo", str(todo))
    with open(todo, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rc == 0 and len(rows) == 4 and all(r["value"] == "" and r["image_path"] for r in rows)
    # a bad value names the file and the line
    rows[1]["value"] = "maybe"
    with open(todo, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    rc, _, err = _run(capsys, "label", str(todo), "--project", proj, "--annotator", "ann")
    assert rc == 2 and err.count("\n") == 1 and "todo.csv:3:" in err and "'maybe'" in err
    for r in rows:
        r["value"] = "P"
    with open(todo, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    rc, out, _ = _run(capsys, "label", str(todo), "--project", proj, "--annotator", "ann")
    assert rc == 0 and "recorded 4 judgement(s)" in out and "APR 1.00" in out
    rc, out, _ = _run(capsys, "step", "--project", proj, "--only", "propose")
    assert rc == 0 and "t1 proposed: 'Vehicles'" in out
    rc, out, _ = _run(capsys, "accept", "--project", proj, "t2", "--text", "Kitchen furniture")
    assert rc == 0 and "accepted t2 'Kitchen furniture' as node n2" in out
    rc, out, _ = _run(capsys, "reject", "--project", proj, "t1", "t3")
    assert rc == 0 and "rejected t1 'Vehicles'" in out and "rejected t3 'Food'" in out
    rc, out, err = _run(capsys, "accept", "--project", proj, "t1")
    assert rc == 2 and err == "error: DyEval: proposal t1 was already rejected\n"
    out_json = tmp_path / "tree.json"
    rc, out, _ = _run(capsys, "export", "--project", proj, "--out", str(out_json))
    assert rc == 0 and "exported tree t1 (2 nodes, 2 prompts, 4 images" in out
    d = json.loads(out_json.read_text())
    assert [n["topic"] for n in d["nodes"]] == ["Material objects", "Kitchen furniture"]
    assert all(im["label"] == "PASS" and im["annotator"] == "ann" for im in d["images"])
    with Project.open(tmp_path / "p", read_only=True) as p:
        assert len(p.labels.events(task="dyeval.image")) == 4


def test_perspectives_and_errors_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = str(tmp_path / "p")
    rc, out, _ = _run(capsys, "new-tree", "--project", proj, "--perspectives", "", "--tree", "paper")
    assert rc == 0 and "made tree paper" in out and out.count("prompts for '") == 9
    rc, out, _ = _run(capsys, "new-tree", "--project", proj, "--perspectives", "Style,Culture")
    assert rc == 0 and "made tree t1" in out and "'Style'" in out and "'Culture'" in out
    cases = [
        (("new-tree", "--project", proj), "give a root topic (--topic TEXT) or --perspectives"),
        (("new-tree", "--project", proj, "--perspectives", "Nope"), "unknown initial topic in nope"),
        (("new-tree", "--project", proj, "--topic", "x", "--set", "rho=2"), "rho must be between 0 and 1"),
        (("step", "--project", proj, "--tree", "zz"), "no DyEval tree 'zz' in the project; its trees: paper, t1"),
        (("step", "--project", proj, "--only", "dance"), "unknown step 'dance'"),
        (("step", "--project", proj, "--lm", str(tmp_path / "none")), "neither 'templates' nor a model folder"),
        (("accept", "--project", proj), "name the proposals to accept"),
        (("show", "--project", str(tmp_path / "nothing")), "no project in"),
    ]
    for args, msg in cases:
        rc, _, err = _run(capsys, *args)
        assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1 and msg in err, (args, err)
