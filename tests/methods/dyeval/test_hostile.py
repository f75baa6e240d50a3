"""Hostile DyEval inputs (new-tree options and configs, judgement CSVs, step options, suite options):
each is refused in one line naming the file and line, and nothing changes — no project left by a
refused new-tree, no DyEval tables added by a refused label (`tests.hostile`)."""

from __future__ import annotations

import csv
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile import Case, Place, assert_refused, cases_of
from workstation.cli import main

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))


def _new_tree(place: Place, *args: str, config: bytes | None = None) -> list[str]:
    place.new = place.tmp / "new"
    argv = ["dyeval", "new-tree", "--project", str(place.new / "p"), *args]
    if config is not None:
        (place.tmp / "c.yaml").write_bytes(config)
        argv += ["--config", str(place.tmp / "c.yaml")]
    return argv


def new(id: str, *args: str, config: bytes | None = None, file: str | None = None, line: int | None = None,
        words: tuple[str, ...] = ()) -> Case:
    return Case(f"new-tree-{id}", lambda p: _new_tree(p, *args, config=config), file, line, words, project=False)


NEW_TREES = [
    new("tree-id-dotdot", "--topic", "Cars", "--tree", "../x", words=("tree id",)),
    new("blank-topic", "--topic", "   ", words=("--topic", "empty")),
    new("topic-5000-characters", "--topic", "x" * 5000, words=("too long",)),
    new("topic-with-nul", "--topic", "a\x00b", words=("control character",)),
    new("unknown-perspective", "--perspectives", "Nope", words=("unknown initial topic",)),
    new("config-alias-bomb", "--topic", "Cars", config=BOMB.encode(), file="c.yaml", line=1, words=("anchors",)),
    new("config-non-utf8", "--topic", "Cars", config=b"n_i: 3\nlm: caf\xe9\n", file="c.yaml", line=2,
        words=("not UTF-8",)),
    new("config-n-i-huge", "--topic", "Cars", config=b"rho: 0.5\nn_i: 100000000\n", file="c.yaml", line=2,
        words=("n_i", "50")),
    new("config-unknown", "--topic", "Cars", config=b"rho: 0.5\nbogus: 1\n", file="c.yaml", line=2, words=("bogus",)),
    new("config-5000-digits", "--topic", "Cars", config=b"n_x: " + b"9" * 5000 + b"\n", file="c.yaml", line=1,
        words=("digits",)),
    new("set-n-i-text", "--topic", "Cars", "--set", "n_i=abc", words=("--set", "n_i")),
    new("set-n-x-huge", "--topic", "Cars", "--set", "n_x=1000000000", words=("n_x", "16")),
    new("set-n-i-1e400", "--topic", "Cars", "--set", "n_i=1e400", words=("finite",)),
    new("set-rho-nan", "--topic", "Cars", "--set", "rho=nan", words=("finite",)),
    new("set-unknown", "--topic", "Cars", "--set", "colour=1", words=("unknown DyEval setting",)),
]


def _label(place: Place, text: bytes) -> list[str]:
    f = place.tmp / "judged.csv"
    f.write_bytes(text)
    return ["dyeval", "label", str(f), "--project", str(place.project), "--annotator", "ann"]


def _todo(place: Place) -> list[list[str]]:
    """The template's images waiting for a judgement (image_id, value)."""
    assert place.project is not None
    todo = place.tmp / "todo.csv"
    assert main(["dyeval", "show", "--project", str(place.project), "--todo", str(todo)]) == 0
    with open(todo, newline="", encoding="utf-8") as fh:
        rows = [[r["image_id"], "PASS"] for r in csv.DictReader(fh)]
    todo.unlink()
    assert len(rows) >= 3
    return rows


def _judged(place: Place, edit: Callable[[list[list[str]]], bytes]) -> list[str]:
    return _label(place, edit(_todo(place)))


def _lines(rows: list[list[str]]) -> bytes:
    return ("image_id,value\n" + "".join(",".join(r) + "\n" for r in rows)).encode()


def label(id: str, edit: Callable[[list[list[str]]], bytes], line: int | None, *words: str) -> Case:
    return Case(f"label-{id}", lambda p: _judged(p, edit), "judged.csv", line, words)


LABELS = [
    # the unterminated quote would swallow the FAIL on the next line: the row it starts is named
    label("unterminated-quote", lambda r: _lines(r[:1]) + f'"{r[1][0]},PASS\n{r[2][0]},FAIL\n'.encode(), 3,
          "malformed CSV"),
    label("text-after-quote", lambda r: _lines(r[:1]) + f'"{r[1][0]}"x,PASS\n'.encode(), 3, "malformed CSV"),
    label("non-utf8", lambda r: _lines(r[:2]) + r[2][0].encode() + b",PASS,caf\xe9\n", 4, "not UTF-8"),
    label("unknown-image", lambda r: _lines(r[:2] + [["nope", "FAIL"]]), 4, "'nope'", "not in tree"),
    label("bad-value", lambda r: _lines(r[:1] + [[r[1][0], "maybe"]]), 3, "'maybe'"),
    label("control-character", lambda r: _lines(r[:1] + [[r[1][0] + "\x01", "PASS"]]), 3, "control character"),
    label("too-many-fields", lambda r: _lines(r[:1]) + f"{r[1][0]},PASS,x\n".encode(), 3, "fields"),
    label("no-header", lambda r: b"", None, "empty"),
]


def _plain_label(place: Place) -> list[str]:
    """A judgement file for a project without DyEval: refused, and no DyEval table is added."""
    assert place.project is not None
    shutil.rmtree(place.project)
    assert main(["suite", "--method", "metalogic", "--set", "n_pairs=2", "--set", "objects=demo",
                 "--project", str(place.project)]) == 0
    return _label(place, b"image_id,value\nx,PASS\n")


def _step(place: Place, *args: str) -> list[str]:
    return ["dyeval", "step", "--project", str(place.project), *args]


OTHERS = [
    Case("label-project-without-dyeval", _plain_label, None, None, ("no DyEval tree",)),
    Case("step-size-60000", lambda p: _step(p, "--size", "60000"), None, None, ("--size", "4,096")),
    Case("step-size-odd", lambda p: _step(p, "--size", "100"), None, None, ("--size", "multiple of 8")),
    Case("step-only-unknown", lambda p: _step(p, "--only", "dance"), None, None, ("--only", "dance")),
    Case("step-unknown-tree", lambda p: _step(p, "--tree", "zz"), None, None, ("no DyEval tree 'zz'",)),
    Case("step-unknown-generator", lambda p: _step(p, "--generator", "nosuch"), None, None, ("unknown generator",)),
    Case("suite-n-i-huge", lambda p: ["suite", "--method", "dyeval", "--set", "n_i=100000000", "--out",
                                      str(p.tmp / "s.jsonl")], None, None, ("n_i", "50"), project=False),
    Case("suite-seed-text", lambda p: ["suite", "--method", "dyeval", "--set", "seed=abc", "--out",
                                       str(p.tmp / "s.jsonl")], None, None, ("seed",), project=False),
]

CASES = cases_of(NEW_TREES, LABELS, OTHERS)


def test_enough_cases() -> None:
    assert len(CASES) >= 10


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree whose root has written, confirmed and generated prompts: images waiting for judgements."""
    proj = tmp_path_factory.mktemp("dy") / "p"
    assert main(["dyeval", "new-tree", "--project", str(proj), "--topic", "Material objects", "--set", "n_i=2",
                 "--set", "n_x=2", "--set", "d_max=2"]) == 0
    assert main(["dyeval", "step", "--project", str(proj)]) == 0
    assert main(["dyeval", "step", "--project", str(proj), "--confirm", "--size", "64"]) == 0
    return proj


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_dyeval_input(case: Case, tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]) -> None:
    place = Place(tmp_path)
    if case.project:
        place.project = tmp_path / "p"
        shutil.copytree(template, place.project)
    assert_refused(case, place, capsys)


def test_a_strict_judgement_file_records_every_row(tmp_path: Path, template: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The lenient reader took the row after an unterminated quote as part of it; a well-formed file
    with a quoted note over two lines records every judgement, the FAIL included."""
    proj = tmp_path / "p"
    shutil.copytree(template, proj)
    place = Place(tmp_path)
    place.project = proj
    rows = _todo(place)
    f = tmp_path / "judged.csv"
    f.write_text("image_id,value,notes\n" + f'{rows[0][0]},PASS,"two\nlines"\n' + f"{rows[1][0]},FAIL,\n",
                 encoding="utf-8")
    assert main(["dyeval", "label", str(f), "--project", str(proj), "--annotator", "ann"]) == 0
    assert "recorded 2 judgement(s)" in capsys.readouterr().out
