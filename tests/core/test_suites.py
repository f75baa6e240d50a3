"""The built-in spatial suite and custom prompt files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workstation.methods.spatial.data import prompt_columns
from workstation.methods.spatial.suite import (
    SPATIAL_OBJECTS,
    content_hash,
    load_prompt_file,
    prompt_text,
    spatial_suite,
    write_prompt_file,
)
from workstation.methods.spatial.types import INVERSE_RELATION, RELATIONS
from workstation.types import InputError, WorkstationError


def _rows(p):
    return {
        str(pid): (RELATIONS[int(r)], str(a), str(b), str(cf), str(pair), str(t))
        for pid, r, a, b, cf, pair, t in zip(p.prompt_id, prompt_columns(p).relation, prompt_columns(p).label_a, prompt_columns(p).label_b,
                                             p.twin_id, p.group_id, p.text)
    }


def test_builtin_suite_has_200_prompts_in_50_object_pairs() -> None:
    p = spatial_suite()
    assert len(p) == 200
    assert len(set(p.prompt_id.tolist())) == 200
    pairs, counts = np.unique(p.group_id.astype(str), return_counts=True)
    assert len(pairs) == 50 and set(counts.tolist()) == {4}
    # each object pair is asked in all four relations
    for pair in pairs:
        rows = np.flatnonzero(p.group_id.astype(str) == pair)
        assert sorted(RELATIONS[int(r)] for r in prompt_columns(p).relation[rows]) == sorted(RELATIONS)
        assert len({frozenset((prompt_columns(p).label_a[i], prompt_columns(p).label_b[i])) for i in rows}) == 1
    assert set(prompt_columns(p).label_a.tolist()) | set(prompt_columns(p).label_b.tolist()) <= set(SPATIAL_OBJECTS)
    assert len(set(prompt_columns(p).label_a.tolist()) | set(prompt_columns(p).label_b.tolist())) >= 25
    assert set(p.suite.tolist()) == {"builtin-1"}


def test_every_prompt_has_its_counterfactual_twin() -> None:
    rows = _rows(spatial_suite())
    for pid, (rel, a, b, cf, pair, _) in rows.items():
        assert cf in rows, f"{pid}: twin {cf} missing"
        rel2, a2, b2, cf2, pair2, _ = rows[cf]
        assert rel2 == INVERSE_RELATION[rel]  # A left_of B <-> B right_of A
        assert (a2, b2) == (b, a)
        assert cf2 == pid  # twins point at each other
        assert pair2 == pair


def test_prompt_texts_follow_the_templates() -> None:
    rows = _rows(spatial_suite())
    for rel, a, b, _, _, text in rows.values():
        assert text == prompt_text(rel, a, b)
        assert a in text and b in text
    assert prompt_text("left_of", "cat", "dog") == "A photo of a cat to the left of a dog."
    assert prompt_text("above", "apple", "umbrella") == "A photo of an apple above an umbrella."
    assert prompt_text("below", "cup", "bed") == "A photo of a cup below a bed."


def test_suite_is_stable_and_seeded() -> None:
    a, b = spatial_suite(), spatial_suite()
    assert a.prompt_id.tolist() == b.prompt_id.tolist()
    assert content_hash(a) == content_hash(b)
    first = a.take(np.array([0]))
    assert a.prompt_id[0] == f"builtin-1_{prompt_columns(first).label_a[0]}_left_of_{prompt_columns(first).label_b[0]}".replace(" ", "-")
    c = spatial_suite(seed=99)
    assert content_hash(c) != content_hash(a)
    # the hash does not depend on row order
    rev = a.take(np.arange(len(a))[::-1])
    assert content_hash(rev) == content_hash(a)


def test_suites_of_other_sizes_agree_on_shared_ids() -> None:
    """Generating with 4 pairs and later with 8 in one project must not clash."""
    small, large = spatial_suite(n_pairs=4), spatial_suite(n_pairs=8)
    text_small = dict(zip(small.prompt_id.tolist(), small.text.tolist()))
    text_large = dict(zip(large.prompt_id.tolist(), large.text.tolist()))
    shared = set(text_small) & set(text_large)
    assert all(text_small[k] == text_large[k] for k in shared)


def test_suite_arguments() -> None:
    small = spatial_suite(n_pairs=3, objects=["cat", "dog", "cup"], version="mini")
    assert len(small) == 12
    assert small.prompt_id[0].startswith("mini_") and "_left_of_" in small.prompt_id[0]
    with pytest.raises(WorkstationError, match="only 3 distinct pairs"):
        spatial_suite(n_pairs=4, objects=["cat", "dog", "cup"])
    with pytest.raises(WorkstationError, match="at least one object pair"):
        spatial_suite(n_pairs=0)
    with pytest.raises(WorkstationError, match="distinct"):
        spatial_suite(n_pairs=1, objects=["cat", "Cat"])


def test_write_and_read_back_as_jsonl(tmp_path: Path) -> None:
    p = spatial_suite(n_pairs=5)
    path = write_prompt_file(p, tmp_path / "mine.jsonl")
    q = load_prompt_file(path)
    assert content_hash(q) == content_hash(p)
    assert set(q.suite.tolist()) == {"mine"}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_prompt_file_links_twins_and_pairs(tmp_path: Path) -> None:
    path = _write(tmp_path, "custom.csv", (
        "prompt,relation,object_a,object_b\n"
        "A cat to the left of a dog,left_of,cat,dog\n"
        "A dog to the right of a cat,right_of,dog,cat\n"
        "A cup above a bed,above,Cup,bed\n"
        "\n"
        "A bed below a cup,below,bed,cup\n"
    ))
    p = load_prompt_file(path)
    assert len(p) == 4
    assert p.prompt_id.tolist() == ["custom_000000", "custom_000001", "custom_000002", "custom_000003"]
    assert p.twin_id.tolist() == ["custom_000001", "custom_000000", "custom_000003", "custom_000002"]
    assert prompt_columns(p).label_a[2] == "cup"
    assert p.group_id[0] == p.group_id[1] != p.group_id[2] == p.group_id[3]


def test_csv_with_explicit_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, "ids.csv", (
        "prompt_id,prompt,relation,object_a,object_b,counterfactual_id,pair_id\n"
        "p1,\"A cat, to the left of a dog\",left_of,cat,dog,p2,x\n"
        "p2,A dog to the right of a cat,right_of,dog,cat,p1,x\n"
    ))
    p = load_prompt_file(path)
    assert p.prompt_id.tolist() == ["p1", "p2"]
    assert p.text[0] == "A cat, to the left of a dog"
    assert p.twin_id.tolist() == ["p2", "p1"]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("prompt,relation,object_a\nx,left_of,cat\n", 1, "missing column"),
        ("prompt,relation,object_a,object_b\nx,left_of,cat,dog\ny,beside,cat,dog\n", 3, "unknown relation 'beside'"),
        ("prompt,relation,object_a,object_b\nx,left_of,,dog\n", 2, "empty field 'object_a'"),
        ("prompt,relation,object_a,object_b\nx,left_of,cat,cat\n", 2, "same object"),
        ("prompt,relation,object_a,object_b\nx,left_of,cat,dog,extra\n", 2, "expected 4 fields"),
        ("prompt_id,prompt,relation,object_a,object_b\na,x,left_of,cat,dog\na,y,above,cat,dog\n", 3,
         "duplicate prompt_id"),
        ("prompt_id,prompt,relation,object_a,object_b,counterfactual_id\na,x,left_of,cat,dog,zz\n", 2,
         "'zz'"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(InputError) as e:
        load_prompt_file(path)
    assert e.value.line == line
    assert message in str(e.value)
    assert str(path) in str(e.value)


def test_other_prompt_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_prompt_file(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="expected .jsonl or .csv"):
        load_prompt_file(_write(tmp_path, "p.txt", "x"))
    with pytest.raises(InputError, match="empty"):
        load_prompt_file(_write(tmp_path, "e.csv", ""))
    with pytest.raises(InputError, match="no prompts"):
        load_prompt_file(_write(tmp_path, "h.csv", "prompt,relation,object_a,object_b\n"))
    bad = _write(tmp_path, "bad.jsonl", (
        '{"prompt_id": "a", "prompt": "x", "relation": "left_of", "object_a": "cat", "object_b": "dog"}\n'
        '{"prompt_id": "b", "prompt": "y", "relation": "near", "object_a": "cat", "object_b": "dog"}\n'
    ))
    with pytest.raises(InputError) as e:
        load_prompt_file(bad)
    assert e.value.line == 2 and "unknown relation 'near'" in str(e.value)
    (tmp_path / "latin.csv").write_bytes("prompt,relation,object_a,object_b\ncaf\xe9,left_of,cat,dog\n".encode("latin-1"))
    with pytest.raises(InputError, match="UTF-8"):
        load_prompt_file(tmp_path / "latin.csv")
