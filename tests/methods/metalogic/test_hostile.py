"""Hostile MetaLogic inputs (pair files, prompt files, configs, suite options): each is refused in
one line naming the file and line, and nothing changes (`tests.hostile`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import Case, Place, assert_refused, cases_of
from workstation.cli import main

PAIR = {"pair_id": "p1", "law": "DeMorgan", "modifier": "AND", "dimension": "none",
        "prompt_a": "a cat and a dog", "prompt_b": "a dog and a cat", "entities": ["cat", "dog"]}
CSV_HEAD = "pair_id,law,modifier,dimension,prompt_a,prompt_b,entities\n"
CSV_ROW = "p{i},Commutative,AND,none,a cat and a dog,a dog and a cat,cat;dog\n"


def _pairs(place: Place, lines: list[str], name: str = "pairs.jsonl") -> list[str]:
    f = place.tmp / name
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    place.new = place.tmp / "new"
    return ["generate", "--project", str(place.new / "p"), "--method", "metalogic", "--suite", str(f),
            "--model", "procedural", "--no-run"]


def _pair(**change: Any) -> str:
    return json.dumps({**PAIR, "pair_id": change.pop("pair_id", "p1"), **change})


def pair_case(id: str, lines: list[str], line: int, *words: str) -> Case:
    return Case(f"pairs-{id}", lambda p: _pairs(p, lines), "pairs.jsonl", line, words, project=False)


FORMS = [
    pair_case("deep-json", [_pair(), "[" * 5000 + "]" * 5000], 2, "nested more than 64"),
    pair_case("5000-digit-seed", [_pair().replace('"p1",', '"p1", "seed": ' + "7" * 5000 + ",")], 1, "5,000 digits"),
    pair_case("infinity-count", [_pair()[:-1] + ', "expected_counts": [Infinity, 1]}'], 1, "Infinity", "finite"),
    pair_case("nan-seed", [_pair(pair_id="a"), _pair(pair_id="b")[:-1] + ', "seed": NaN}'], 2, "NaN"),
    pair_case("count-1e300", [_pair(expected_counts=[1e300, 1])], 1, "expected_counts", "whole numbers"),
    pair_case("negative-seed", [_pair(seed=-1)], 1, "seed", "2**63"),
    pair_case("seed-2-pow-70", [_pair(seed=2**70)], 1, "seed", "2**63"),
    pair_case("form-3000-tildes", [_pair(form_a="~" * 3000 + "[cat]", form_b="[cat]")], 1, "too long"),
    pair_case("form-2000-parens", [_pair(form_a="(" * 2000 + "[cat]" + ")" * 2000, form_b="[cat]")], 1, "too long"),
    pair_case("form-nested-60", [_pair(pair_id="a"), _pair(form_a="~" * 60 + "[cat]", form_b="[cat]")], 2,
              "nested more than 40"),
    pair_case("form-17-atoms", [_pair(form_a=" & ".join(f"[cat:c{i}]" for i in range(17)),
                                      form_b=" & ".join(f"[cat:c{i}]" for i in reversed(range(17))))], 1,
              "17 atoms"),
    pair_case("law-huge-object", [_pair(law={"x": "y" * 5000})], 1, "unknown law"),
    pair_case("name-with-operator", [_pair(entities=["cat", "d&g"])], 1, "operator"),
    pair_case("duplicate-id", [_pair(), _pair()], 2, "duplicate pair_id"),
]


def _csv(place: Place, text: bytes) -> list[str]:
    f = place.tmp / "pairs.csv"
    f.write_bytes(text)
    place.new = place.tmp / "new"
    return ["generate", "--project", str(place.new / "p"), "--method", "metalogic", "--suite", str(f),
            "--model", "procedural", "--no-run"]


CSVS = [
    # an unterminated quote would swallow the rows after it into one field: the row it starts is named
    Case("csv-unterminated-quote", lambda p: _csv(p, (CSV_HEAD + CSV_ROW.format(i=1) + 'p2,Commutative,AND,none,"a cat,'
                                                      'b,cat;dog\n' + CSV_ROW.format(i=3)).encode()),
         "pairs.csv", 3, ("malformed CSV",), project=False),
    Case("csv-text-after-quote", lambda p: _csv(p, (CSV_HEAD + 'p1,Commutative,AND,none,"a"b,c,cat;dog\n').encode()),
         "pairs.csv", 2, ("malformed CSV",), project=False),
    Case("csv-non-utf8", lambda p: _csv(p, (CSV_HEAD + CSV_ROW.format(i=1)).encode() + b"p2,Commutative,AND,none,caf\xe9,"
                                        b"b,cat;dog\n"), "pairs.csv", 3, ("not UTF-8",), project=False),
    Case("csv-seed-5000-digits", lambda p: _csv(p, (CSV_HEAD.replace("\n", ",seed\n") + CSV_ROW.format(i=1).replace(
        "\n", "," + "9" * 5000 + "\n")).encode()), "pairs.csv", 2, ("seed",), project=False),
]


def _prompt_file(place: Place, change: Any) -> list[str]:
    src = place.tmp / "suite.jsonl"
    assert main(["suite", "--method", "metalogic", "--set", "n_pairs=2", "--set", "objects=demo", "--out", str(src)]) == 0
    rows = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()]
    change(rows)
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    place.new = place.tmp / "new"
    return ["generate", "--project", str(place.new / "p"), "--method", "metalogic", "--suite", str(src),
            "--model", "procedural", "--no-run"]


PROMPT_FILES = [
    Case("prompts-unknown-method", lambda p: _prompt_file(p, lambda rows: rows[1].update(method="nosuch")),
         "suite.jsonl", 2, ("unknown method 'nosuch'",), project=False),
    Case("prompts-deep-attrs", lambda p: _prompt_file(p, lambda rows: rows[2].update(attrs={"a": json.loads(
        "[" * 100 + "]" * 100)})), "suite.jsonl", 3, ("nested",), project=False),
]


def _config(place: Place, name: str, data: bytes) -> list[str]:
    f = place.tmp / name
    f.write_bytes(data)
    return ["evaluate", "--project", str(place.project), "--method", "metalogic", "--config", str(f)]


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
CONFIGS = [
    Case("config-alias-bomb", lambda p: _config(p, "c.yaml", BOMB.encode()), "c.yaml", 1, ("anchors",)),
    Case("config-5000-digits", lambda p: _config(p, "c.yaml", b"name: x\nnear_band: " + b"9" * 5000 + b"\n"),
         "c.yaml", 2, ("5,000 digits",)),
    Case("config-non-utf8", lambda p: _config(p, "c.yaml", b"name: x\nnear_band: 0.1 # caf\xe9\n"), "c.yaml", 2,
         ("not UTF-8",)),
    Case("config-infinity", lambda p: _config(p, "c.yaml", b"axis_margin: .inf\n"), "c.yaml", 1, ("axis_margin",)),
    Case("config-long-name-key", lambda p: _config(p, "c.yaml", ("k" * 1000 + ": 1\n").encode()), "c.yaml", 1,
         ("unknown MetaLogic parameter",)),
    Case("config-json-nan", lambda p: _config(p, "c.json", b'{\n "near_band": NaN\n}'), "c.json", 2, ("NaN",)),
]


def _suite(place: Place, *sets: str) -> list[str]:
    place.new = place.tmp / "s.jsonl"
    return ["suite", "--method", "metalogic", *[x for s in sets for x in ("--set", s)], "--out", str(place.new)]


OPTIONS = [
    Case("suite-seed-1e400", lambda p: _suite(p, "seed=1e400"), None, None, ("--set 'seed'", "finite"), project=False),
    Case("suite-n-pairs-text", lambda p: _suite(p, "n_pairs=abc"), None, None, ("n_pairs", "abc"), project=False),
    Case("suite-n-pairs-huge", lambda p: _suite(p, "n_pairs=100000000"), None, None, ("n_pairs", "200,000"),
         project=False),
    Case("suite-seed-negative", lambda p: _suite(p, "seed=-3"), None, None, ("seed",), project=False),
]

CASES = cases_of(FORMS, CSVS, PROMPT_FILES, CONFIGS, OPTIONS)


def test_enough_cases() -> None:
    assert len(CASES) >= 10


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ml") / "p"
    assert main(["suite", "--method", "metalogic", "--set", "n_pairs=3", "--set", "objects=demo",
                 "--project", str(folder)]) == 0
    return folder


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_metalogic_input(case: Case, tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]) -> None:
    place = Place(tmp_path)
    if case.project:
        place.project = tmp_path / "p"
        shutil.copytree(template, place.project)
    assert_refused(case, place, capsys)
