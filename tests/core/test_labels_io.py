"""Label files in and out: SpatialBench-UC labels_filled.json / .csv, our CSV / Parquet, and
their validation (one message naming file and line, nothing written)."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main

from tests.core.conftest import dump_tables
from workstation.methods.spatial.labels_io import LabelRecord, read_labels, write_labels
from workstation.store import Project
from workstation.types import InputError
from workstation.methods.spatial.store import SpatialStore

S0 = "sd15_boxdiff_v1_000000_seed0000"
S1 = "sd15_boxdiff_v1_000001_seed0000"
S2 = "sd15_boxdiff_v1_000002_seed0002"





def latest(folder: Path) -> dict[tuple[str, str], tuple[Any, ...]]:
    with Project.open(folder, read_only=True) as p:
        return {(r.sample_id, r.annotator): (r.verdict, r.rating, r.notes, r.created_at) for r in SpatialStore(p).latest_labels()}


def sbuc_json(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text(json.dumps([{"sample_id": s, "human_verdict": v, "notes": n,
                                 "timestamp": "2026-01-14T15:39:09.080Z"} for s, v, n in rows], indent=2))
    return path


# ---------------------------------------------------------------------------------------------
# formats
# ---------------------------------------------------------------------------------------------


def test_sbuc_json_import(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = sbuc_json(tmp_path / "labels_filled.json", [(S0, "PASS", ""), (S1, "UNDECIDABLE", "bed hidden"),
                                                    (S2, "", "")])
    assert main(["labels", "import", str(f), "--project", str(project), "--annotator", "alice"]) == 0
    out = capsys.readouterr().out
    assert "imported 2 label(s)" in out and "skipped 1" in out
    got = latest(project)
    assert got == {
        (S0, "alice"): ("PASS", None, "", datetime(2026, 1, 14, 15, 39, 9, 80000)),
        (S1, "alice"): ("UNDECIDABLE", None, "bed hidden", datetime(2026, 1, 14, 15, 39, 9, 80000)),
    }


def test_sbuc_csv_import_with_quoted_commas_and_newlines(project: Path, tmp_path: Path) -> None:
    f = tmp_path / "labels_filled.csv"
    with f.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL)
        w.writerow(["sample_id", "human_verdict", "notes", "timestamp"])
        w.writerow([S0, "FAIL", "cake, not bed\nsecond line", "2026-01-14T15:40:00.000Z"])
        w.writerow([S1, "PASS", "", "2026-01-14T15:41:00.000Z"])
    assert main(["labels", "import", str(f), "--project", str(project)]) == 0
    got = latest(project)
    assert got[(S0, "imported")][:3] == ("FAIL", None, "cake, not bed\nsecond line")
    assert got[(S1, "imported")][0] == "PASS"


def test_native_csv_with_annotators_and_ratings(project: Path, tmp_path: Path) -> None:
    f = tmp_path / "ours.csv"
    f.write_text("sample_id,annotator,verdict,rating,notes,created_at\n"
                 f"{S0},alice,PASS,4,,2026-02-01T10:00:00Z\n"
                 f"{S0},bob,FAIL,1,looks wrong,2026-02-01T10:05:00Z\n"
                 f"{S1},,UNDECIDABLE,,,\n")
    assert main(["labels", "import", str(f), "--project", str(project), "--annotator", "carol"]) == 0
    got = latest(project)
    assert got[(S0, "alice")][:2] == ("PASS", 4)
    assert got[(S0, "bob")][:3] == ("FAIL", 1, "looks wrong")
    assert got[(S1, "carol")][0] == "UNDECIDABLE"  # the file names no annotator: --annotator does


def test_latest_label_wins_after_a_second_import(project: Path, tmp_path: Path) -> None:
    a = sbuc_json(tmp_path / "a.json", [(S0, "PASS", "")])
    b = sbuc_json(tmp_path / "b.json", [(S0, "FAIL", "changed my mind")])
    assert main(["labels", "import", str(a), "--project", str(project), "--annotator", "alice"]) == 0
    assert main(["labels", "import", str(b), "--project", str(project), "--annotator", "alice"]) == 0
    with Project.open(project, read_only=True) as p:
        assert [e.verdict for e in SpatialStore(p).label_events(S0)] == ["PASS", "FAIL"]  # both events kept
        assert [(r.verdict, r.notes) for r in SpatialStore(p).latest_labels()] == [("FAIL", "changed my mind")]


@pytest.mark.parametrize("suffix,fmt", [(".csv", "auto"), (".parquet", "auto"), (".json", "auto")])
def test_export_then_import_round_trips(project: Path, tmp_path: Path, suffix: str, fmt: str) -> None:
    f = tmp_path / "ours.csv"
    f.write_text("sample_id,annotator,verdict,rating,notes,created_at\n"
                 f"{S0},alice,PASS,4,\"a, b\",2026-02-01T10:00:00.123456Z\n"
                 f"{S1},bob,FAIL,,x,2026-02-01T10:05:00Z\n"
                 f"{S2},alice,UNDECIDABLE,2,y,2026-02-01T10:06:00Z\n")
    assert main(["labels", "import", str(f), "--project", str(project)]) == 0
    out = tmp_path / f"export{suffix}"
    assert main(["labels", "export", "--project", str(project), "--out", str(out), "--format", fmt]) == 0
    table = read_labels(out)
    assert list(zip(table.sample_id, table.annotator, table.verdict, table.rating, table.notes, table.created_at)) == [
        (S0, "alice", "PASS", 4, "a, b", datetime(2026, 2, 1, 10, 0, 0, 123456)),
        (S1, "bob", "FAIL", None, "x", datetime(2026, 2, 1, 10, 5)),
        (S2, "alice", "UNDECIDABLE", 2, "y", datetime(2026, 2, 1, 10, 6)),
    ]


def test_sbuc_csv_export_has_the_four_quoted_columns(project: Path, tmp_path: Path) -> None:
    f = sbuc_json(tmp_path / "in.json", [(S0, "PASS", "ok"), (S1, "FAIL", "")])
    assert main(["labels", "import", str(f), "--project", str(project), "--annotator", "alice"]) == 0
    out = tmp_path / "labels_filled.csv"
    assert main(["labels", "export", "--project", str(project), "--out", str(out), "--format", "sbuc"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == '"sample_id","human_verdict","notes","timestamp"'
    assert lines[1] == f'"{S0}","PASS","ok","2026-01-14T15:39:09.080Z"'


def test_export_filters_by_annotator(project: Path, tmp_path: Path) -> None:
    f = tmp_path / "ours.csv"
    f.write_text(f"sample_id,annotator,verdict\n{S0},alice,PASS\n{S0},bob,FAIL\n{S1},bob,PASS\n")
    assert main(["labels", "import", str(f), "--project", str(project)]) == 0
    out = tmp_path / "bob.json"
    assert main(["labels", "export", "--project", str(project), "--out", str(out), "--annotator", "bob"]) == 0
    data = json.loads(out.read_text())
    assert [(d["sample_id"], d["human_verdict"], d["annotator"]) for d in data] == [(S0, "FAIL", "bob"), (S1, "PASS", "bob")]


def test_write_and_read_labels_directly(tmp_path: Path) -> None:
    recs = [LabelRecord(S0, "a", "PASS", 3, "n", datetime(2026, 1, 1, 12)), LabelRecord(S1, "b", "FAIL")]
    for suffix in (".csv", ".parquet", ".json"):
        path = tmp_path / f"l{suffix}"
        assert write_labels(path, recs) == 2
        t = read_labels(path)
        assert t.sample_id == [S0, S1] and t.verdict == ["PASS", "FAIL"] and t.rating == [3, None]


# ---------------------------------------------------------------------------------------------
# validation: one message naming file and line; nothing written
# ---------------------------------------------------------------------------------------------


def rejected(project: Path, f: Path, capsys: pytest.CaptureFixture[str], where: str, *words: str) -> None:
    before = dump_tables(project)
    rc = main(["labels", "import", str(f), "--project", str(project)])
    err = capsys.readouterr().err
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert where in lines[0], f"{where!r} not in {lines[0]!r}"
    for w in words:
        assert w.lower() in lines[0].lower(), f"{w!r} not in {lines[0]!r}"
    assert dump_tables(project) == before


def test_unknown_verdict(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = sbuc_json(tmp_path / "labels_filled.json", [(S0, "PASS", ""), (S1, "MAYBE", "")])
    rejected(project, f, capsys, "labels_filled.json:8", "unknown verdict", "MAYBE")


def test_unknown_verdict_csv(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f"sample_id,annotator,verdict\n{S0},a,PASS\n{S1},a,pass\n{S2},a,yes\n")
    rejected(project, f, capsys, "l.csv:4", "unknown verdict")


def test_unknown_sample_csv(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f'"sample_id","human_verdict","notes","timestamp"\n"{S0}","PASS","",""\n"ghost","FAIL","",""\n')
    rejected(project, f, capsys, "l.csv:3", "unknown sample", "ghost")


def test_malformed_json(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "labels_filled.json"
    f.write_text('[\n  {"sample_id": "%s", "human_verdict": "PASS"},\n  {"sample_id": "%s", "human_verdict": }\n]\n'
                 % (S0, S1))
    rejected(project, f, capsys, "labels_filled.json:3", "malformed JSON")


def test_json_that_is_not_a_list(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "labels_filled.json"
    f.write_text('{"sample_id": "x"}\n')
    rejected(project, f, capsys, "labels_filled.json:1", "list")


def test_malformed_csv_row(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f"sample_id,annotator,verdict\n{S0},a,PASS\n{S1},a,FAIL,extra\n")
    rejected(project, f, capsys, "l.csv:3", "malformed CSV row")


def test_unterminated_quote_in_csv(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f'sample_id,annotator,verdict\n{S0},a,PASS\n"{S1},a,FAIL\n')
    rejected(project, f, capsys, "l.csv:3", "malformed CSV")


def test_missing_columns(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f"sample_id,annotator,notes\n{S0},a,hi\n")
    rejected(project, f, capsys, "l.csv:1", "missing column", "verdict")


def test_missing_field_in_json(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "labels_filled.json"
    f.write_text(json.dumps([{"sample_id": S0, "human_verdict": "PASS"}, {"human_verdict": "FAIL"}], indent=1))
    rejected(project, f, capsys, "labels_filled.json:6", "missing field", "sample_id")


def test_bad_rating_and_timestamp(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f"sample_id,annotator,verdict,rating\n{S0},a,PASS,7\n")
    rejected(project, f, capsys, "l.csv:2", "rating")
    g = tmp_path / "m.csv"
    g.write_text(f"sample_id,annotator,verdict,created_at\n{S0},a,PASS,yesterday\n")
    rejected(project, g, capsys, "m.csv:2", "timestamp")


def test_parquet_rows_are_named(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "l.parquet"
    pq.write_table(pa.table({"sample_id": [S0, "ghost"], "annotator": ["a", "a"], "verdict": ["PASS", "FAIL"]}), f)
    rejected(project, f, capsys, "l.parquet", "row 2", "unknown sample")


def test_missing_label_file(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rejected(project, tmp_path / "nope.json", capsys, "nope.json", "not found")


def test_read_labels_raises_input_error_with_line(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_text("sample_id,verdict\na,PASS\nb,NOPE\n")
    with pytest.raises(InputError) as e:
        read_labels(f)
    assert e.value.line == 3 and e.value.path.endswith("x.csv")


# ---------------------------------------------------------------------------------------------
# every method's judgements: the labels that stand, or the event log
# ---------------------------------------------------------------------------------------------


def _judge_every_method(folder: Path) -> None:
    """One project with judgements of all four methods, some changed, some undone."""
    with Project.open(folder) as p:
        p.labels.add("spatial.verdict", "sample", S0, "alice", "PASS")
        p.labels.add("spatial.verdict", "sample", S1, "alice", "FAIL")
        p.labels.add("spatial.verdict", "sample", S1, "alice", None)  # undone
        p.labels.add("metalogic.pair", "pair", "ml0001|run|0", "alice", "MISALIGNED", notes="=cat missing")
        p.labels.add("metalogic.pair", "pair", "ml0001|run|0", "bob", "ALIGNED")
        p.labels.add("protobias.fidelity", "image", S2, "alice", "2")
        p.labels.add("protobias.fidelity", "image", S2, "alice", "4")  # changed: 4 stands
        p.labels.add("protobias.fidelity", "image", S0, "bob", "3")
        p.labels.add("protobias.fidelity", "image", S0, "bob", None)  # undone: no row
        p.labels.add("dyeval.image", "image", S1, "carol", "FAIL", source="ui")


def test_export_writes_every_methods_standing_judgements_as_csv_and_jsonl(project: Path, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _judge_every_method(project)
    out = tmp_path / "all.csv"
    assert main(["labels", "export", "--project", str(project), "--out", str(out), "--task", "all"]) == 0
    assert "wrote 5 labels" in capsys.readouterr().out
    with out.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["task", "target_kind", "target_id", "annotator", "value", "rating", "notes", "created_at",
                             "source", "audit_set_id"]
    got = [(r["task"], r["target_id"], r["annotator"], r["value"]) for r in rows]
    assert got == [("spatial.verdict", S0, "alice", "PASS"), ("metalogic.pair", "ml0001|run|0", "alice", "MISALIGNED"),
                   ("metalogic.pair", "ml0001|run|0", "bob", "ALIGNED"), ("protobias.fidelity", S2, "alice", "4"),
                   ("dyeval.image", S1, "carol", "FAIL")]
    assert rows[1]["notes"] == "'=cat missing"  # a spreadsheet shows it as text
    assert all(r["value"] for r in rows) and rows[0]["created_at"].endswith("Z")
    # JSONL: the same labels, one object a line
    j = tmp_path / "all.jsonl"
    assert main(["labels", "export", "--project", str(project), "--out", str(j), "--task", "all"]) == 0
    recs = [json.loads(line) for line in j.read_text(encoding="utf-8").splitlines()]
    assert [(r["task"], r["target_id"], r["annotator"], r["value"]) for r in recs] == got
    assert recs[1]["notes"] == "=cat missing" and recs[3]["rating"] is None


def test_export_takes_any_methods_task_and_the_event_log_is_its_own_option(project: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _judge_every_method(project)
    pb = tmp_path / "pb.csv"
    assert main(["labels", "export", "--project", str(project), "--out", str(pb), "--task", "protobias"]) == 0
    with pb.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    # the standing rating per (image, annotator): alice's 4 (not her earlier 2), bob's undone one left out
    assert [(r["target_id"], r["annotator"], r["value"]) for r in rows] == [(S2, "alice", "4")]
    log = tmp_path / "pb_log.jsonl"
    assert main(["labels", "export", "--project", str(project), "--out", str(log), "--task", "protobias.fidelity",
                 "--all-events"]) == 0
    recs = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["target_id"], r["annotator"], r["value"]) for r in recs] == [(S2, "alice", "2"), (S2, "alice", "4"),
                                                                             (S0, "bob", "3"), (S0, "bob", None)]
    assert all(isinstance(r["event_id"], int) for r in recs)
    # the spatial task keeps its own layouts; an undone spatial label does not stand either
    sp = tmp_path / "spatial.csv"
    assert main(["labels", "export", "--project", str(project), "--out", str(sp)]) == 0
    assert "also holds" in capsys.readouterr().out  # the other methods' labels are pointed at
    assert [(t.sample_id, t.verdict) for t in [read_labels(sp)]][0] == ([S0], ["PASS"])
    ml = tmp_path / "ml.csv"
    assert main(["labels", "export", "--project", str(project), "--out", str(ml), "--task", "metalogic.pair",
                 "--annotator", "bob"]) == 0
    with ml.open(encoding="utf-8", newline="") as fh:
        assert [(r["annotator"], r["value"]) for r in csv.DictReader(fh)] == [("bob", "ALIGNED")]


def test_export_refuses_an_unknown_task_and_a_layout_it_cannot_write(project: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["labels", "export", "--project", str(project), "--out", str(tmp_path / "x.csv"),
                 "--task", "nosuch"]) != 0
    assert "unknown label task 'nosuch'" in capsys.readouterr().err
    assert main(["labels", "export", "--project", str(project), "--out", str(tmp_path / "x.json"),
                 "--task", "all"]) != 0
    assert ".csv or .jsonl" in capsys.readouterr().err
    assert main(["labels", "export", "--project", str(project), "--out", str(tmp_path / "x.csv"),
                 "--task", "dyeval", "--format", "sbuc"]) != 0
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.csv").exists()


# ---------------------------------------------------------------------------------------------
# every method's judgements back in: the label log's layout
# ---------------------------------------------------------------------------------------------


def _standing(folder: Path) -> set[tuple[Any, ...]]:
    with Project.open(folder, read_only=True) as p:
        return {(e.task, e.target_kind, e.target_id, e.annotator, e.value, e.rating, e.notes, e.created_at)
                for t in p.labels.tasks() for e in p.labels.standing(t, None)}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_every_methods_exported_labels_import_into_another_project(project: Path, tmp_path: Path, suffix: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`labels export --task all` and `labels import` of that file: every method's standing
    labels arrive as they were (values, ratings, notes with a formula's first character, times)."""
    import shutil

    fresh = tmp_path / "fresh"
    shutil.copytree(project, fresh)
    _judge_every_method(project)
    out = tmp_path / f"all{suffix}"
    assert main(["labels", "export", "--project", str(project), "--out", str(out), "--task", "all"]) == 0
    capsys.readouterr()
    assert _standing(fresh) == set()
    assert main(["labels", "import", str(out), "--project", str(fresh)]) == 0
    said = capsys.readouterr().out
    assert "imported 5 label(s)" in said and "label log: 1 spatial.verdict, 2 metalogic.pair" in said
    assert _standing(fresh) == _standing(project)
    with Project.open(fresh, read_only=True) as p:
        assert {e.source for t in p.labels.tasks() for e in p.labels.events(task=t)} == {f"import:all{suffix}"}


def _log(path: Path, *rows: str) -> Path:
    path.write_text("task,target_kind,target_id,annotator,value,rating,notes,created_at\n" + "".join(r + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("row, words", [
    ("nosuch.task,sample,{S0},alice,PASS,,,", ("unknown label task 'nosuch.task'",)),
    ("metalogic.pair,pair,ml0001|run|0,alice,MAYBE,,,", ("'MAYBE' is not one of",)),
    ("spatial.verdict,pair,{S0},alice,PASS,,,", ("the targets of spatial.verdict are samples",)),
    ("protobias.fidelity,image,{S2},alice,3,three,,", ("rating must be a whole number",)),
    ("spatial.verdict,sample,{S0},alice,PASS,,,yesterday", ("created_at 'yesterday'",)),
    ("dyeval.image,image,no_such_sample,alice,PASS,,,", ("unknown sample", "no_such_sample")),
    ("spatial.verdict,sample,{S0},a\x01b,PASS,,,", ("annotator", "control")),
])
def test_a_bad_row_of_a_label_log_names_its_line_and_nothing_is_written(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str, words: tuple[str, ...]) -> None:
    f = _log(tmp_path / "log.csv", f"spatial.verdict,sample,{S0},alice,PASS,,,", row.format(S0=S0, S2=S2))
    rejected(project, f, capsys, "log.csv:3", *words)


def test_a_label_log_without_its_columns_or_labels_is_refused(project: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(json.dumps({"task": "spatial.verdict", "target_id": S0, "value": "PASS"}) + "\n[1]\n", encoding="utf-8")
    rejected(project, f, capsys, "log.jsonl:2", "JSON object")
    g = tmp_path / "empty.jsonl"
    g.write_text("\n", encoding="utf-8")
    rejected(project, g, capsys, "empty.jsonl", "no labels")
