"""Export of a whole tree as strict JSON and import back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workstation.methods.dyeval import (
    DyEvalConfig,
    TemplateLM,
    TestTree,
    add_perspective_roots,
    advance,
    export_dict,
    export_json,
    import_tree,
    read_tree,
    write_tree,
)
from workstation.types import InputError


def _grown_tree() -> TestTree:
    t = TestTree.new(DyEvalConfig(n_i=2, n_x=2, d_max=2, premark_threshold=22.0))
    add_perspective_roots(t, ["Culture"])
    lm = TemplateLM(seed=3)
    k = 0
    for _ in range(20):
        for r in t.generation_requests():
            for j in range(r.count):
                k += 1
                t.add_image(r.owner, f"img{k}", f"images/img{k:04d}.png", seed=r.have + j)
                t.premark(f"img{k}", 15.0 if k % 5 == 0 else 30.0)
        for q in t.judging_queue():
            t.record_label(q.image_id, "FAIL" if "kimono" in q.text or "sari" in q.text else "PASS", "ann")
        if not advance(t, lm, auto_confirm=True, auto_accept=True) and not t.generation_requests():
            break
    return t


def test_round_trip_through_strict_json_keeps_everything() -> None:
    t = _grown_tree()
    assert t.locations, "the grown tree has failure locations to export"
    text = export_json(t)
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    # what the export holds: topics, prompts + graphs, images + paths, labels, pre-marks, steps
    assert {n["topic"] for n in data["nodes"]} >= {"Culture"}
    assert all(p["graph"] is not None and p["provenance"]["source"] == "templates" for p in data["prompts"])
    assert any(i["premark_fail"] for i in data["images"]) and all(i["path"] for i in data["images"])
    assert all(i["label"] in ("PASS", "FAIL") for i in data["images"])
    loc = data["locations"][0]
    assert loc["machine"]["steps"][0]["verdict"] == "FAIL" and loc["machine"]["triggers"]
    assert data["derived"]["states"][data["nodes"][0]["node_id"]] == "done"
    assert data["derived"]["tree_summary"]["tests"] == sum(1 for i in data["images"] if "/s" not in i["owner"])
    back = import_tree(text)
    assert back.to_dict() == t.to_dict()
    assert export_dict(back) == export_dict(t)


def test_files_and_bad_input(tmp_path: Path) -> None:
    t = _grown_tree()
    p = write_tree(t, tmp_path / "tree.json")
    assert read_tree(p).to_dict() == t.to_dict()
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "format": "dyeval.tree",\n oops\n}')
    with pytest.raises(InputError, match=r"bad\.json:3: invalid JSON"):
        read_tree(bad)
    with pytest.raises(InputError, match="not a DyEval tree"):
        import_tree('{"format": "something else"}', source="x.json")
    d = t.to_dict()
    d["images"][0]["owner"] = "p999"
    with pytest.raises(InputError, match="unknown owner"):
        import_tree(d, source="edited.json")
    with pytest.raises(InputError, match="cannot read"):
        read_tree(tmp_path / "missing.json")
