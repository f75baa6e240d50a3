"""Custom MetaLogic pair files: JSONL / CSV import, every bad line named, nothing partial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workstation.methods.metalogic import io as mio
from workstation.methods.metalogic.io import load_pairs, write_pairs
from workstation.methods.metalogic.suite import build_suite, pair_seed
from workstation.types import InputError

GOOD = {"pair_id": "p1", "law": "De Morgan", "modifier": "or", "dimension": "X-axis",
        "prompt_a": "A cat left of a dog, and not a bird or the dog left of the cat.",
        "prompt_b": "A cat left of a dog, with no bird and the dog not left of the cat.",
        "entities": ["Cat", "dog", "bird"]}


def _jsonl(tmp_path: Path, *recs: object, name: str = "pairs.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs), encoding="utf-8")
    return p


def test_minimal_record_gets_defaults(tmp_path: Path) -> None:
    s = load_pairs(_jsonl(tmp_path, GOOD, "", {**GOOD, "pair_id": "p2", "expected_counts": [1, 1, 0]}))
    assert s.name == "pairs" and len(s) == 2
    p1, p2 = s.pairs
    assert (p1.law, p1.modifier, p1.dimension, p1.axis) == ("DeMorgan", "OR", "x", "x")
    assert p1.entities == ("cat", "dog", "bird")
    assert p1.expected_count == (1, 1, 1) and p1.expected_order == ("cat", "dog", "bird")
    assert p2.expected_count == (1, 1, 0) and p2.expected_order == ("cat", "dog")
    assert p1.seed == pair_seed("p1") and p1.variant == "custom"


def test_forms_give_the_expectation_and_are_checked(tmp_path: Path) -> None:
    rec = {**GOOD, "form_a": "[cat<dog] & ~([bird] | [dog<cat])", "form_b": "[cat<dog] & ~[bird] & ~[dog<cat]"}
    (p,) = load_pairs(_jsonl(tmp_path, rec)).pairs
    assert p.expected_count == (1, 1, 0) and p.expected_order == ("cat", "dog")
    assert p.form_b == "[cat<dog] & ~[bird] & ~[dog<cat]"
    bad = {**rec, "form_b": "[cat<dog] & ~[bird] & [dog<cat]"}
    with pytest.raises(InputError, match=r"pairs.jsonl:1: form_a and form_b are not logically equivalent"):
        load_pairs(_jsonl(tmp_path, bad))
    with pytest.raises(InputError, match="disagree with form_a"):
        load_pairs(_jsonl(tmp_path, {**rec, "expected_counts": [1, 1, 1]}))
    with pytest.raises(InputError, match="models"):  # a bare disjunction has no single correct image
        load_pairs(_jsonl(tmp_path, {**GOOD, "form_a": "[cat] | [dog]", "form_b": "[dog] | [cat]"}))
    with pytest.raises(InputError, match="'fish', which is not in entities"):
        load_pairs(_jsonl(tmp_path, {**GOOD, "form_a": "[fish]", "form_b": "~~[fish]"}))
    with pytest.raises(InputError, match="bad form"):
        load_pairs(_jsonl(tmp_path, {**GOOD, "form_a": "[cat] &", "form_b": "[cat]"}))
    with pytest.raises(InputError, match="both form_a and form_b"):
        load_pairs(_jsonl(tmp_path, {**GOOD, "form_a": "[cat]"}))


def test_built_in_suite_round_trips(tmp_path: Path) -> None:
    suite = build_suite("student", n_pairs=60, objects="demo")
    path = write_pairs(suite, tmp_path / "student.jsonl")
    back = load_pairs(path)
    assert back.content_hash == suite.content_hash
    assert [p.to_record() for p in back.pairs] == [p.to_record() for p in suite.pairs]


def test_csv_import(tmp_path: Path) -> None:
    p = tmp_path / "pairs.csv"
    p.write_text(
        "pair_id,law,modifier,dimension,prompt_a,prompt_b,entities,expected_counts,seed\n"
        'c1,Commutative,AND,none,"A cat and a dog.","A dog and a cat.",cat;dog,,5\n'
        "\n"
        'c2,complement,OR,y,"A cat above a dog, or, not without a bird; no bird.",'
        '"A cat above a dog or a bird; no bird.",cat;dog;bird,1;1;0,\n',
        encoding="utf-8")
    s = load_pairs(p)
    assert [q.pair_id for q in s.pairs] == ["c1", "c2"]
    assert s.pairs[0].seed == 5 and s.pairs[0].expected_count == (1, 1)
    assert s.pairs[1].law == "Complement" and s.pairs[1].expected_order == ("cat", "dog")
    assert s.pairs[1].text_a == "A cat above a dog, or, not without a bird; no bird."


@pytest.mark.parametrize("rec, line, message", [
    ({k: v for k, v in GOOD.items() if k != "prompt_b"}, 2, "missing field(s) prompt_b"),
    ({**GOOD, "law": "modus ponens"}, 2, "unknown law 'modus ponens'"),
    ({**GOOD, "modifier": "XOR"}, 2, "unknown modifier 'XOR'"),
    ({**GOOD, "dimension": "z"}, 2, "unknown dimension 'z'"),
    ({**GOOD, "pair_id": "a\x00b"}, 2, "control character"),
    ({**GOOD, "pair_id": "a\nb"}, 2, "control character"),
    ({**GOOD, "pair_id": "x" * 201}, 2, "at most 200"),
    ({**GOOD, "entities": "cat"}, 2, "entities must be a list"),
    ({**GOOD, "entities": ["cat", "Cat"]}, 2, "distinct"),
    ({**GOOD, "entities": ["cat", "dog[1]"]}, 2, "bracket"),
    ({**GOOD, "expected_counts": [1, 1]}, 2, "one count per entity"),
    ({**GOOD, "expected_counts": [1, -1, 0]}, 2, "from 0 to 100"),
    ({**GOOD, "expected_counts": [1, 1.5, 0]}, 2, "whole numbers"),
    ({**GOOD, "expected_order": ["cat", "fish"]}, 2, "'fish', which is not in entities"),
    ({**GOOD, "expected_counts": [1, 1, 0], "expected_order": ["bird", "cat"]}, 2, "expected count is 0"),
    ({**GOOD, "dimension": "none", "expected_order": ["cat", "dog"]}, 2, "position-less"),
    ({**GOOD, "seed": "soon"}, 2, "seed must be a whole number"),
    ({**GOOD, "prompt_a": "x" * 4001}, 2, "at most 4,000"),
    ({**GOOD, "colour": "red"}, 2, "unknown field(s) colour"),
    ({**GOOD, "entities": ["e%d" % i for i in range(9)]}, 2, "at most 8"),
    ("[1, 2]", 2, "expected a JSON object"),
    ("{not json", 2, "not valid JSON"),
    (GOOD, 2, "duplicate pair_id 'p1' (first on line 1)"),
])
def test_every_bad_line_is_named(tmp_path: Path, rec: object, line: int, message: str) -> None:
    path = _jsonl(tmp_path, GOOD, rec)
    with pytest.raises(InputError) as ei:
        load_pairs(path)
    assert ei.value.line == line and ei.value.path == str(path)
    assert message in str(ei.value)
    assert str(ei.value).startswith(f"{path}:{line}: ")


def test_encoding_size_and_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "latin.jsonl"
    p.write_bytes(json.dumps(GOOD).encode() + b"\n" + json.dumps({**GOOD, "pair_id": "caf\xe9"}, ensure_ascii=False).encode("utf-8")
                  .replace(b"\xc3\xa9", b"\xe9") + b"\n")
    with pytest.raises(InputError, match=r"latin.jsonl:2: not UTF-8"):
        load_pairs(p)
    rec2 = {**GOOD, "pair_id": "p2", "prompt_b": "y" * 25_000}
    long = _jsonl(tmp_path, GOOD, rec2, name="long.jsonl")
    n = len(json.dumps(rec2))
    with pytest.raises(InputError, match=rf"long.jsonl:2: line is {n:,} characters long; at most 20,000"):
        load_pairs(long)
    monkeypatch.setattr(mio, "MAX_FILE_BYTES", 100)
    with pytest.raises(InputError, match="MiB"):
        load_pairs(_jsonl(tmp_path, GOOD, name="big.jsonl"))
    monkeypatch.undo()
    monkeypatch.setattr(mio, "MAX_PAIRS", 1)
    with pytest.raises(InputError, match="more than 1 pairs"):
        load_pairs(_jsonl(tmp_path, GOOD, {**GOOD, "pair_id": "p2"}, name="many.jsonl"))
    monkeypatch.undo()
    with pytest.raises(InputError, match="not found"):
        load_pairs(tmp_path / "missing.jsonl")
    (tmp_path / "pairs.txt").write_text("x")
    with pytest.raises(InputError, match="unsupported"):
        load_pairs(tmp_path / "pairs.txt")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="no pairs"):
        load_pairs(tmp_path / "empty.jsonl")


def test_csv_errors(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("pair_id,law,modifier,dimension,prompt_a,prompt_b\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv:1: missing column\(s\) entities"):
        load_pairs(p)
    p.write_text("pair_id,law,modifier,dimension,prompt_a,prompt_b,entities\n"
                 "a,Commutative,AND,none,x,y,cat;dog\n"
                 "b,Commutative,AND,none,x,y\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv:3: expected 7 fields, got 6"):
        load_pairs(p)
    p.write_text("pair_id,law,modifier,dimension,prompt_a,prompt_b,entities\n"
                 'a,Commutative,AND,none,"two\nlines",y,cat;dog\n'
                 "a,Commutative,AND,none,x,y,cat;dog\n", encoding="utf-8")
    # a row over two lines is named by the line it starts on
    with pytest.raises(InputError, match=r"bad.csv:4: duplicate pair_id 'a' \(first on line 2\)"):
        load_pairs(p)
