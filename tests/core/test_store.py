"""The project store: schema and migrations, transactions, the single-writer lock, snapshots,
append-only label events, and that an acknowledged label survives a killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.proc import Lines

from workstation.store import DB_NAME, SCHEMA_VERSION, Project, ProjectError
from workstation.methods.spatial.store import SpatialStore

ROOT = Path(__file__).resolve().parents[2]


def small_dataset(parsed: Any, n: int = 12) -> Any:
    return parsed.dataset.subset(np.arange(n))


def make_project(folder: Path, parsed: Any, n: int = 12) -> Path:
    ds = small_dataset(parsed, n)
    with Project.create(folder) as p:
        with p.transaction():
            p.samples.add_run(parsed.run_id, method="sd15_boxdiff", source="test")
            p.samples.add_dataset(ds)
    return folder


def python(code: str, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, **kw)


# ---------------------------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------------------------


def test_new_project_has_the_current_schema_and_every_table(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        assert p.schema_version == SCHEMA_VERSION
        tables = {r[0] for r in p.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert {"meta", "runs", "prompts", "samples", "detections", "evaluations", "label_events", "schema_components",
            "audit_sets", "audit_items", "jobs", "saved_filters", "settings"} <= tables
    assert not {"checker_configs", "verdicts", "spatial_verdicts"} & tables  # no method's tables until it is used
    assert (tmp_path / "p" / DB_NAME).is_file() and (tmp_path / "p" / "images").is_dir()


def test_an_unversioned_database_is_migrated_on_open(tmp_path: Path) -> None:
    import duckdb

    folder = tmp_path / "old"
    folder.mkdir()
    duckdb.connect(str(folder / DB_NAME)).close()  # a database without our schema (version 0)
    with Project.open(folder) as p:
        assert p.schema_version == SCHEMA_VERSION
        assert p.samples.count() == 0
    with Project.open(folder) as p:  # opening again does not migrate twice
        assert p.schema_version == SCHEMA_VERSION


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        p.con.execute("UPDATE meta SET value=? WHERE key='schema_version'", [str(SCHEMA_VERSION + 1)])
    with pytest.raises(ProjectError, match="newer version"):
        Project.open(folder)


def test_create_refuses_an_existing_project(tmp_path: Path) -> None:
    Project.create(tmp_path / "p").close()
    with pytest.raises(ProjectError, match="already exists"):
        Project.create(tmp_path / "p")


# ---------------------------------------------------------------------------------------------
# transactions
# ---------------------------------------------------------------------------------------------


def test_transaction_rolls_back_everything_on_error(tmp_path: Path, sbuc_parsed: Any) -> None:
    ds = small_dataset(sbuc_parsed)
    with Project.create(tmp_path / "p") as p:
        with pytest.raises(RuntimeError):
            with p.transaction():
                p.samples.add_run(sbuc_parsed.run_id)
                p.samples.add_dataset(ds)
                assert p.samples.count() == ds.n  # visible inside the transaction
                raise RuntimeError("boom")
        assert p.samples.run_ids() == []
        assert p.samples.count() == 0
        assert p.con.execute("SELECT count(*) FROM detections").fetchone()[0] == 0
        assert p.con.execute("SELECT count(*) FROM prompts").fetchone()[0] == 0


def test_nested_transactions_join_the_outer_one(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        with pytest.raises(ProjectError):
            with p.transaction():
                p.samples.add_run("a")  # add_run opens its own (nested) transaction
                p.samples.add_run("a")  # duplicate: the outer transaction is rolled back, "a" included
        assert p.samples.run_ids() == []


def test_duplicate_run_id_is_refused(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    with Project.open(folder) as p:
        with pytest.raises(ProjectError, match="already exists"):
            p.samples.add_run(sbuc_parsed.run_id)
        assert p.samples.run_ids() == [sbuc_parsed.run_id]


def test_duplicate_samples_are_refused_and_nothing_is_added(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    with Project.open(folder) as p:
        before = p.con.execute("SELECT count(*) FROM detections").fetchone()[0]
        with pytest.raises(ProjectError, match="already in the project"):
            p.samples.add_dataset(small_dataset(sbuc_parsed, 3))
        assert p.samples.count() == 12
        assert p.con.execute("SELECT count(*) FROM detections").fetchone()[0] == before


def test_dataset_round_trips_through_the_store(tmp_path: Path, sbuc_parsed: Any) -> None:
    ds = small_dataset(sbuc_parsed, 30)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(ds)
        back = p.samples.load_dataset()
    assert back.samples.sample_id.tolist() == ds.samples.sample_id.tolist()
    for col in ("x1", "y1", "x2", "y2", "score"):
        assert np.array_equal(getattr(back.detections, col), getattr(ds.detections, col))
    assert back.detections.label.tolist() == ds.detections.label.tolist()  # same order within each sample


def test_the_loader_keeps_the_arrow_form_of_sample_ids_and_paths_while_they_stand(
        tmp_path: Path, sbuc_parsed: Any) -> None:
    ds = small_dataset(sbuc_parsed, 30)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(ds)
        back = p.samples.load_dataset()
    for name in ("sample_id", "image_path"):
        kept = back.kept_arrow(name)
        assert kept is not None and kept.to_pylist() == getattr(back.samples, name).tolist(), name
    back.samples.sample_id = back.samples.sample_id.copy()  # a replaced column: its Arrow form is not used
    assert back.kept_arrow("sample_id") is None and back.kept_arrow("image_path") is not None
    assert back.subset(np.arange(5)).kept_arrow("image_path") is None  # another dataset


def test_work_given_to_the_load_runs_beside_the_detections_read_and_its_cache_is_kept(
        tmp_path: Path, sbuc_parsed: Any) -> None:
    """`load_dataset(meanwhile=...)` hands the loaded samples and prompts (no detections) to
    work done while the detections are read; what it caches is the loaded dataset's, and an
    error it raises does not stop the load."""
    import dataclasses
    import threading

    from workstation.methods.spatial.data import spatial_columns

    ds = small_dataset(sbuc_parsed, 30)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(ds)
        shells: list[Any] = []
        threads: list[str] = []

        def meanwhile(shell: Any) -> None:
            shells.append(shell)
            threads.append(threading.current_thread().name)
            shell.cache["columns"] = spatial_columns(shell)

        back = p.samples.load_dataset(method="spatial", meanwhile=meanwhile)
        plain = p.samples.load_dataset(method="spatial")

        def failing(shell: Any) -> None:
            raise RuntimeError("not this time")

        after_error = p.samples.load_dataset(method="spatial", meanwhile=failing)
    assert len(shells) == 1 and threads == [threading.current_thread().name]
    shell = shells[0]
    assert shell.n == 30 and len(shell.detections) == 0
    assert shell.samples is back.samples and shell.prompts is back.prompts
    cols = back.cache["columns"]
    assert spatial_columns(back) is cols  # taken from the cache, not worked out again
    fresh = spatial_columns(dataclasses.replace(back, cache={}))
    for k in ("relation", "label_a", "label_b", "code_a", "code_b"):
        assert np.array_equal(getattr(cols, k), getattr(fresh, k)), k
    for other in (plain, after_error):
        assert other.samples.sample_id.tolist() == back.samples.sample_id.tolist()
        assert np.array_equal(other.detections.score, back.detections.score)
        assert "columns" not in other.cache


@pytest.mark.parametrize("mapping", ["hash", "join"])
def test_loaded_dataset_matches_rows_labels_and_prompts_whatever_the_insertion_order(
        tmp_path: Path, sbuc_parsed: Any, mapping: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Detections inserted in two interleaved halves still come back grouped by sample in their
    stored order (mapped by id hashes, or by the join used when two ids' hashes collide); the
    loader's label codes give the same verdicts as hashing the labels."""
    from workstation.store.samples import SamplesRepo

    if mapping == "join":
        monkeypatch.setattr(SamplesRepo, "_sample_hashes", lambda self, st: None)
    from workstation.dataset import label_codes
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.config import CheckerConfig

    ds = small_dataset(sbuc_parsed, 40)
    d = ds.detections
    second = d.sample_idx >= 20
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        with p.transaction():
            p.samples.add_dataset(ds.subset(np.arange(20, 40)))  # later samples inserted first
            head = ds.subset(np.arange(20))
            p.samples.add_dataset(head)
        back = p.samples.load_dataset()
        prompts = p.samples.load_prompts()
        # a run filter loads a subset; the other samples' detections are left out
        sub = p.samples.load_dataset(runs=["nothing-here"])
        assert sub.n == 0 and len(sub.detections) == 0
    assert int(second.sum()) > 0
    # project order: the second half (inserted first) comes first
    assert back.samples.sample_id.tolist() == ds.samples.sample_id[np.r_[20:40, 0:20]].tolist()
    for k, sid in enumerate(back.samples.sample_id.tolist()[:3] + back.samples.sample_id.tolist()[-3:]):
        i = ds.samples.sample_id.tolist().index(sid)
        j = back.samples.sample_id.tolist().index(sid)
        assert back.detections.label[back.detections.sample_idx == j].tolist() == \
            ds.detections.label[d.sample_idx == i].tolist()
        assert np.array_equal(back.detections.score[back.detections.sample_idx == j], d.score[d.sample_idx == i])
    codes = label_codes(back)
    assert codes is not None
    assert [codes[1][c] for c in codes[0]] == back.detections.label.tolist()
    cfg = CheckerConfig()
    with_codes = evaluate(back, cfg)
    plain_dets = back.detections.take(np.arange(len(back.detections)))
    plain_dets.label = np.array(back.detections.label.tolist(), dtype=object)  # strings, not codes
    plain = type(back)(back.samples, plain_dets, back.prompts, back.variant_names)
    assert label_codes(plain) is None
    without = evaluate(plain, cfg)
    assert np.array_equal(with_codes.verdict, without.verdict)
    assert np.array_equal(with_codes.reason, without.reason)
    assert np.array_equal(with_codes.conf, without.conf)
    # prompts: entities as lower-case tuples, attrs as a dict of each prompt's own
    order = np.argsort(ds.prompts.prompt_id.astype(str))
    assert prompts.prompt_id.tolist() == ds.prompts.prompt_id[order].tolist()
    assert prompts.entities.tolist() == ds.prompts.entities[order].tolist()
    assert prompts.attrs.tolist() == ds.prompts.attrs[order].tolist()
    assert prompts.text.tolist() == ds.prompts.text[order].tolist()
    prompts.attrs[0]["edited"] = 1
    assert "edited" not in prompts.attrs[1]


# ---------------------------------------------------------------------------------------------
# lock and snapshot
# ---------------------------------------------------------------------------------------------


def test_second_process_gets_a_clear_lock_message(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    with Project.open(folder):
        r = python("""
            import sys
            from workstation.store import Project, ProjectLocked
            try:
                Project.open(sys.argv[1])
            except ProjectLocked as e:
                print("LOCKED:", e)
            """, str(folder))
        assert "LOCKED:" in r.stdout, r.stdout + r.stderr
        assert "open in another process" in r.stdout and "snapshot" in r.stdout
        # the command line says the same, in one line, with a non-zero exit
        cli = subprocess.run([sys.executable, "main.py", "evaluate", "--project", str(folder)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert cli.returncode != 0
        assert cli.stderr.strip().startswith("error: ") and "open in another process" in cli.stderr
        assert len(cli.stderr.strip().splitlines()) == 1


def test_snapshot_reads_a_locked_project(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    with Project.open(folder) as p:
        SpatialStore(p).add_label(str(sbuc_parsed.dataset.samples.sample_id[0]), "alice", "PASS")
        r = python("""
            import sys
            from workstation.methods.spatial.store import SpatialStore
            from workstation.store import Project
            with Project.open_snapshot(sys.argv[1]) as s:
                print("SAMPLES", s.samples.count(), "LABELS", len(SpatialStore(s).latest_labels()), "RO", s.read_only)
            """, str(folder))
        assert "SAMPLES 12 LABELS 1 RO True" in r.stdout, r.stdout + r.stderr
    with Project.open_snapshot(folder) as s:
        with pytest.raises(ProjectError, match="read-only"):
            s.samples.add_run("x")


def test_read_only_commands_work_while_another_process_holds_the_project(
        tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path) -> None:
    from workstation.cli import main

    folder = tmp_path / "p"
    assert main(["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project", str(folder)]) == 0
    with Project.open(folder):
        out = tmp_path / "x.jsonl"
        r = subprocess.run([sys.executable, "main.py", "export-sbuc", "--project", str(folder), "--run",
                            "sd15_boxdiff", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "open in another process" in r.stderr
        assert len(out.read_text().splitlines()) == 800


# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------


def test_label_events_are_append_only_and_the_latest_wins(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    sid = str(sbuc_parsed.dataset.samples.sample_id[0])
    other = str(sbuc_parsed.dataset.samples.sample_id[1])
    with Project.open(folder) as p:
        e1 = SpatialStore(p).add_label(sid, "alice", "PASS", rating=4)
        e2 = SpatialStore(p).add_label(sid, "alice", "FAIL", notes="second look")
        SpatialStore(p).add_label(sid, "bob", "UNDECIDABLE")
        SpatialStore(p).add_label(other, "alice", "PASS")
        assert e2 > e1
        assert [(e.annotator, e.verdict) for e in SpatialStore(p).label_events(sid)] == [
            ("alice", "PASS"), ("alice", "FAIL"), ("bob", "UNDECIDABLE")]
        latest = {(r.sample_id, r.annotator): (r.verdict, r.notes) for r in SpatialStore(p).latest_labels()}
        assert latest == {(sid, "alice"): ("FAIL", "second look"), (sid, "bob"): ("UNDECIDABLE", None),
                          (other, "alice"): ("PASS", None)}
        ds = p.samples.load_dataset()
        h = SpatialStore(p).human_verdicts(ds, "alice")
        assert h[0] == 1 and h[1] == 0 and (h[2:] == -1).all()
        with pytest.raises(ProjectError, match="unknown sample"):
            SpatialStore(p).add_label("ghost", "alice", "PASS")
        with pytest.raises(ProjectError, match="unknown verdict"):
            SpatialStore(p).add_label(sid, "alice", "MAYBE")
        assert len(SpatialStore(p).label_events()) == 4


def test_bulk_label_insert(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    ids = sbuc_parsed.dataset.samples.sample_id[:12].tolist()
    n = 3000
    rows = {"sample_id": [ids[i % 12] for i in range(n)], "annotator": [f"a{i % 3}" for i in range(n)],
            "verdict": [("PASS", "FAIL", "UNDECIDABLE")[i % 3] for i in range(n)],
            "rating": [None if i % 5 == 0 else 1 + i % 4 for i in range(n)]}
    with Project.open(folder) as p:
        assert SpatialStore(p).add_labels_bulk(rows) == n
        assert len(SpatialStore(p).label_events()) == n
        assert len(SpatialStore(p).latest_labels()) == 12  # i % 12 fixes i % 3: one annotator per sample
        bad = dict(rows, sample_id=rows["sample_id"][:-1] + ["ghost"])
        with pytest.raises(ProjectError, match="ghost"):
            SpatialStore(p).add_labels_bulk(bad)
        assert len(SpatialStore(p).label_events()) == n  # nothing of the failed batch


_WRITER = """
import sys
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project
folder, annotator = sys.argv[1], sys.argv[2]
p = Project.open(folder)
ids = [r[0] for r in p.con.execute("SELECT sample_id FROM samples ORDER BY ord").fetchall()]
store = SpatialStore(p)
i = 0
while True:
    sid = ids[i % len(ids)]
    eid = store.add_label(sid, annotator, ("PASS", "FAIL", "UNDECIDABLE")[i % 3], notes=f"n{i}")
    print(f"ACK {eid} {sid} {i}", flush=True)  # acknowledged: add_label has returned
    i += 1
"""


def test_acknowledged_labels_survive_sigkill(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(folder), "killme"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked: list[tuple[int, str, int]] = []
    out = Lines(proc, timeout=60)  # each read bounded by the deadline
    try:
        for line in out:
            if line.startswith("ACK "):
                _, eid, sid, i = line.split()
                acked.append((int(eid), sid, int(i)))
                if len(acked) >= 25:
                    break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        out.close()
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 25, proc.communicate(timeout=30)[1]
    with Project.open(folder) as p:  # reopening replays the write-ahead log
        events = {e.event_id: e for e in SpatialStore(p).label_events()}
    for eid, sid, i in acked:
        assert eid in events, f"acknowledged label {eid} lost"
        assert events[eid].sample_id == sid and events[eid].notes == f"n{i}"
        assert events[eid].verdict == ("PASS", "FAIL", "UNDECIDABLE")[i % 3]


def test_image_paths_may_not_escape_the_project(tmp_path: Path, sbuc_parsed: Any) -> None:
    ds = small_dataset(sbuc_parsed, 2)
    ds.samples.image_path = np.array(["images/ok.png", "../outside.png"], dtype=object)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        with pytest.raises(ProjectError, match="escapes the project folder"):
            p.samples.add_dataset(ds)
        assert p.samples.count() == 0



def test_scores_are_kept_per_sample_scorer_and_text_and_replaced_on_rescoring(tmp_path: Path, sbuc_parsed: Any) -> None:
    folder = make_project(tmp_path / "p", sbuc_parsed)
    with Project.open(folder) as p:
        ids = [r[0] for r in p.con.execute("SELECT sample_id FROM samples ORDER BY ord LIMIT 3").fetchall()]
        assert p.scores.add({"sample_id": ids, "scorer": ["clip@abc"] * 3, "text": ["a cat"] * 3,
                             "score": [31.5, 28.0, float("nan")]}) == 3
        p.scores.add({"sample_id": ids[:1], "scorer": ["clip@abc"], "text": ["a dog"], "score": [12.0]})
        p.scores.add({"sample_id": ids[:1], "scorer": ["clip@abc"], "text": ["a cat"], "score": [33.0]})  # rescored
        t = p.scores.table("clip@abc")
        got = sorted(zip(t["sample_id"].tolist(), t["text"].tolist(), t["score"].tolist()), key=str)
        assert len(got) == 4
        assert (ids[0], "a cat", 33.0) in got and (ids[0], "a dog", 12.0) in got
        assert p.scores.scorers() == [{"scorer": "clip@abc", "scores": 4}]
        with pytest.raises(ProjectError, match="ghost"):
            p.scores.add({"sample_id": ["ghost"], "scorer": ["clip@abc"], "text": ["x"], "score": [1.0]})
        assert p.scores.scorers() == [{"scorer": "clip@abc", "scores": 4}]  # nothing of the failed batch


@pytest.mark.parametrize("mapping", ["hashes", "join"])
def test_scores_and_boxes_load_in_float32_only_where_that_is_exact(
        tmp_path: Path, sbuc_parsed: Any, mapping: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Detections whose every score and coordinate is a float32 (as the detectors give them) load
    in 4 bytes a value, with the same verdicts, reasons and confidences, bit for bit, as the
    float64 dataset they were saved from; a column holding one value that is not a float32 loads
    as float64, every value exact."""
    import dataclasses

    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.methods.spatial.store import add_dataset as add_spatial_dataset
    from workstation.methods.spatial.store import load_dataset as load_spatial_dataset
    from workstation.store.samples import SamplesRepo

    if mapping == "join":
        monkeypatch.setattr(SamplesRepo, "_sample_hashes", lambda self, st: None)
    ds = small_dataset(sbuc_parsed, 40)
    d = ds.detections
    as32 = {k: getattr(d, k).astype(np.float32).astype(np.float64) for k in ("score", "x1", "y1", "x2", "y2")}
    exact = dataclasses.replace(ds, detections=dataclasses.replace(d, **as32), cache={})
    odd = dict(as32)
    odd["x2"] = as32["x2"].copy()
    odd["x2"][-1] += 1e-9  # not a float32
    mixed = dataclasses.replace(ds, detections=dataclasses.replace(d, **odd), cache={})
    for name, src in (("exact", exact), ("mixed", mixed)):
        with Project.create(tmp_path / name) as p:
            p.samples.add_run(sbuc_parsed.run_id)
            add_spatial_dataset(p, src)  # with its recorded stabilities, which the checker reads
            back = load_spatial_dataset(p)
        b = back.detections
        want64 = {"x2"} if name == "mixed" else set()
        for k in ("score", "x1", "y1", "x2", "y2"):
            assert getattr(b, k).dtype == (np.float64 if k in want64 else np.float32), (name, k)
            assert np.array_equal(getattr(b, k).astype(np.float64), getattr(src.detections, k)), (name, k)
        for cfg in (CheckerConfig(), CheckerConfig(min_area_fraction=0.05, margin=0.2, t_det=0.5)):
            got, want = evaluate(back, cfg), evaluate(src, cfg)
            for f in ("verdict", "reason", "reason_detail", "conf", "c_detection", "c_geometry", "delta",
                      "iou_ab"):
                np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f"{name} {f}")
            assert [got.reason_text(i) for i in range(back.n)] == [want.reason_text(i) for i in range(src.n)]


def test_detections_find_their_samples_whatever_the_gaps_and_order(tmp_path: Path, sbuc_parsed: Any) -> None:
    """Samples without detections between ones with, and detections stored out of their samples'
    order (several inserts): every detection comes back with its own sample, in stored order."""
    ds = small_dataset(sbuc_parsed, 60)
    rng = np.random.default_rng(3)
    d = ds.detections
    keep = np.flatnonzero(~np.isin(d.sample_idx, rng.choice(60, 25, replace=False)))  # 25 without any
    sparse = type(ds)(ds.samples, d.take(keep), ds.prompts, ds.variant_names)
    parts = np.array_split(rng.permutation(60), 5)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        with p.transaction():
            for rows in parts:  # samples (and their detections) inserted in five shuffled groups
                p.samples.add_dataset(sparse.subset(np.sort(rows)))
        back = p.samples.load_dataset()
    order = np.concatenate([np.sort(r) for r in parts])
    assert back.samples.sample_id.tolist() == sparse.samples.sample_id[order].tolist()
    for j, i in enumerate(order.tolist()):
        mine = sparse.detections.sample_idx == i
        got = back.detections.sample_idx == j
        assert back.detections.label[got].tolist() == sparse.detections.label[mine].tolist()
        assert np.array_equal(back.detections.x1[got].astype(np.float64), sparse.detections.x1[mine])
    assert len(back.detections) == len(sparse.detections)


@pytest.mark.parametrize("mapping", ["hashes", "join"])
def test_label_and_variant_codes_load_narrow_and_widen_when_their_names_outgrow_them(
        tmp_path: Path, sbuc_parsed: Any, mapping: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Label codes load in 2 bytes and variant codes in 1 while their names fit; a project with
    more names (40,000 labels, 200 variants, met batch by batch) loads them wider, every
    detection with its own label and variant."""
    from workstation.dataset import Dataset, Detections
    from workstation.store import samples as samples_mod
    from workstation.store.samples import SamplesRepo

    if mapping == "join":
        monkeypatch.setattr(SamplesRepo, "_sample_hashes", lambda self, st: None)
    monkeypatch.setattr(samples_mod, "SCAN_BATCH", 4096)  # names grow from one batch to the next
    few = small_dataset(sbuc_parsed, 40)
    m = 40_000
    rng = np.random.default_rng(5)
    names = ("original",) + tuple(f"v{k:03d}" for k in range(1, 200))
    f = rng.uniform(0, 100, m).astype(np.float32).astype(np.float64)
    many_dets = Detections(
        sample_idx=np.sort(rng.integers(0, 40, m)), source=np.zeros(m, np.int8),
        variant=rng.integers(0, len(names), m).astype(np.int16),
        label=np.array([f"thing {i}" for i in range(m)], dtype=object),
        score=rng.uniform(0.1, 1, m).astype(np.float32).astype(np.float64), x1=f, y1=f, x2=f + 5, y2=f + 5)
    many = Dataset(few.samples, many_dets, few.prompts, names)
    for name, src, label_bytes, variant_bytes in (("few", few, 2, 1), ("many", many, 4, 2)):
        with Project.create(tmp_path / f"{name}-{mapping}") as p:
            p.samples.add_run(sbuc_parsed.run_id)
            p.samples.add_dataset(src)
            back = p.samples.load_dataset()
        b, d = back.detections, src.detections
        codes, _ = b.label_codes()
        assert (codes.dtype.itemsize, b.variant.dtype.itemsize) == (label_bytes, variant_bytes), name
        order = np.lexsort((np.arange(len(d)), d.sample_idx))  # the loader's order: by sample, stored order
        assert b.label.tolist() == [str(x).lower() for x in d.label[order]]
        assert [back.variant_names[v] for v in b.variant.tolist()] == \
            [src.variant_names[v] for v in d.variant[order].tolist()]
        assert np.array_equal(b.score.astype(np.float64), d.score[order])


@pytest.mark.parametrize("read_as", ["codes", "text"])
@pytest.mark.parametrize("mapping", ["hashes", "join"])
def test_labels_and_variants_of_any_text_load_as_stored(
        tmp_path: Path, sbuc_parsed: Any, mapping: str, read_as: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan reads labels and variants as codes into their distinct values (as text when
    those are too many or too long): quotes, commas, parentheses, non-ASCII text, an empty string
    and a missing label (read as "") come back as stored, every detection with its own, and the
    checker's verdicts match the stored dataset's."""
    import dataclasses

    from workstation.dataset import Dataset
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.store import samples as samples_mod
    from workstation.store.samples import SamplesRepo

    if mapping == "join":
        monkeypatch.setattr(SamplesRepo, "_sample_hashes", lambda self, st: None)
    if read_as == "text":
        monkeypatch.setattr(samples_mod, "MAX_ENUM_CHARS", 8)
    ds = small_dataset(sbuc_parsed, 40)
    d = ds.detections
    odd = ["it's", "a 'quoted'' one", "x, y)", "caf\u00e9 \u732b", "", "ENUM('a')"]
    label = d.label.copy()
    label[: len(odd)] = odd
    names = ds.variant_names + ("o'brien blur",)
    variant = d.variant.copy()
    variant[len(d) - 3:] = len(names) - 1
    src = Dataset(ds.samples, dataclasses.replace(d, label=label, variant=variant), ds.prompts, names)
    with Project.create(tmp_path / mapping) as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(src)
        p.con.execute("UPDATE detections SET label = NULL WHERE label = 'ENUM(''a'')'")
        back = p.samples.load_dataset()
    b = back.detections
    order = np.lexsort((np.arange(len(d)), d.sample_idx))  # the loader's order: by sample, stored order
    want = ["" if x == "ENUM('a')" else str(x).lower() for x in label[order]]
    assert b.label.tolist() == want
    assert set(odd[:4]) <= set(b.label.tolist())
    assert [back.variant_names[v] for v in b.variant.tolist()] == [names[v] for v in variant[order].tolist()]
    read = label.copy()
    read[read == "ENUM('a')"] = ""  # the missing label, as loaded
    got = evaluate(back, CheckerConfig())
    exp = evaluate(Dataset(ds.samples, dataclasses.replace(src.detections, label=read), ds.prompts, names),
                   CheckerConfig())
    np.testing.assert_array_equal(got.verdict, exp.verdict)
    np.testing.assert_array_equal(got.conf, exp.conf)


@pytest.mark.parametrize("mapping", ["hashes", "join"])
def test_a_value_that_is_not_a_float32_late_in_the_scan_loads_its_column_as_float64(
        tmp_path: Path, sbuc_parsed: Any, mapping: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan reads scores and boxes as float32 while each row's are exactly that; a row that
    is not, in the last of many batches, has the scan start again reading them as float64: that
    column alone loads as float64, every value exact, and the detection cache's entry (filled in
    place by the scan) reads back the same."""
    import dataclasses

    from workstation.store import samples as samples_mod
    from workstation.store.samples import SamplesRepo

    monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(tmp_path / "user-cache"))
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
    if mapping == "join":
        monkeypatch.setattr(SamplesRepo, "_sample_hashes", lambda self, st: None)
    monkeypatch.setattr(samples_mod, "SCAN_BATCH", 16)
    ds = small_dataset(sbuc_parsed, 40)
    d = ds.detections
    as32 = {k: getattr(d, k).astype(np.float32).astype(np.float64) for k in ("score", "x1", "y1", "x2", "y2")}
    as32["y1"][-1] += 1e-9  # not a float32, in the scan's last batch
    src = dataclasses.replace(ds, detections=dataclasses.replace(d, **as32), cache={})
    assert len(d) > 3 * 16
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(src)
    order = np.lexsort((np.arange(len(d)), d.sample_idx))
    scans: list[int] = []
    real_scan = SamplesRepo._scan_detections

    def scan(self: Any, *a: Any, **k: Any) -> Any:
        scans.append(1)
        return real_scan(self, *a, **k)

    monkeypatch.setattr(SamplesRepo, "_scan_detections", scan)
    for n_scans in (1, 1):  # the scan (started again), then the cache's entry under the scan's key
        with Project.open(tmp_path / "p", read_only=True) as p:
            b = p.samples.load_dataset().detections
        assert len(scans) == n_scans
        for k in ("score", "x1", "y1", "x2", "y2"):
            assert getattr(b, k).dtype == (np.float64 if k == "y1" else np.float32), k
            assert np.array_equal(np.asarray(getattr(b, k), np.float64), as32[k][order]), k
        assert b.label.tolist() == [str(x).lower() for x in d.label[order]]


def test_a_load_that_fails_on_either_thread_raises_its_error_and_leaves_the_project_usable(
        tmp_path: Path, sbuc_parsed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader reads the detections on a second thread while it builds the samples: an error
    on either thread is raised by `load_dataset` once both have ended (no thread left using the
    connection), and the next load reads everything, also inside a transaction (whose thread
    holds the connection)."""
    import threading

    from workstation.store import samples as samples_mod
    from workstation.store.samples import SamplesRepo

    ds = small_dataset(sbuc_parsed, 40)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(ds)
    slow_scan_ended = threading.Event()
    real_scan = SamplesRepo._scan_detections

    def slow_scan(self: Any, *a: Any, **k: Any) -> Any:
        threading.Event().wait(0.3)  # still scanning when the samples' error is raised
        try:
            return real_scan(self, *a, **k)
        finally:
            slow_scan_ended.set()

    def failing_samples(*a: Any, **k: Any) -> Any:
        raise ValueError("sample table unreadable")

    def failing_scan(self: Any, *a: Any, **k: Any) -> Any:
        raise OSError("detections unreadable")

    with Project.open(tmp_path / "p") as p:
        with monkeypatch.context() as m:
            m.setattr(SamplesRepo, "_scan_detections", slow_scan)
            m.setattr(samples_mod, "_samples_from_arrow", failing_samples)
            with pytest.raises(ValueError, match="sample table unreadable"):
                p.samples.load_dataset()
            assert slow_scan_ended.is_set()  # raised only once the detections' read ended
        with monkeypatch.context() as m:
            m.setattr(SamplesRepo, "_scan_detections", failing_scan)
            with pytest.raises(OSError, match="detections unreadable"):
                p.samples.load_dataset()
        back = p.samples.load_dataset()
        inside: list[Any] = []

        def in_a_transaction() -> None:  # this thread holds the connection throughout
            with p.transaction():
                inside.append(p.samples.load_dataset())

        t = threading.Thread(target=in_a_transaction, daemon=True)
        t.start()
        t.join(60)
        assert not t.is_alive(), "a load inside a transaction waits for its own lock"
    assert back.samples.sample_id.tolist() == ds.samples.sample_id.tolist()
    assert len(back.detections) == len(inside[0].detections) == len(ds.detections)


def test_no_automatic_collection_runs_while_the_detections_thread_reads(
        tmp_path: Path, sbuc_parsed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's automatic cyclic collection is off while the load's second thread runs (one
    triggered there would free a closed window's Qt objects on that thread), and the collector
    is left as it was found: on after a load, after a failed load, and off when it was off."""
    import gc

    from workstation.store.samples import SamplesRepo

    ds = small_dataset(sbuc_parsed, 20)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(ds)
    seen: list[bool] = []
    real = SamplesRepo._load_detections

    def watched(self: Any, *a: Any, **k: Any) -> Any:
        seen.append(gc.isenabled())
        return real(self, *a, **k)

    monkeypatch.setattr(SamplesRepo, "_load_detections", watched)
    assert gc.isenabled()
    try:
        with Project.open(tmp_path / "p") as p:
            p.samples.load_dataset()
            assert seen == [False] and gc.isenabled()
            with monkeypatch.context() as m:
                m.setattr(SamplesRepo, "_prompts_of",
                          staticmethod(lambda t: (_ for _ in ()).throw(ValueError("bad prompts"))))
                with pytest.raises(ValueError, match="bad prompts"):
                    p.samples.load_dataset()
            assert gc.isenabled()
            gc.disable()
            p.samples.load_dataset()
            assert not gc.isenabled()
    finally:
        gc.enable()


def test_loaded_prompts_link_their_twins_by_the_same_strings_and_share_group_ids(
        tmp_path: Path, sbuc_parsed: Any) -> None:
    """Each prompt's twin id is the very string object of that twin's prompt id, the two
    prompts of a pair share one group-id string, and each sample's prompt id is its prompt's
    own string: at 250,000 prompts that is 750,000 Python strings fewer. Values are those
    stored, links to prompts not loaded stay plain strings."""
    ds = sbuc_parsed.dataset
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(ds)
        loaded = p.samples.load_dataset()
        back = loaded.prompts
    assert loaded.samples.prompt_id.tolist() == ds.samples.prompt_id.tolist()
    prompt_of = {pid: pid for pid in back.prompt_id.tolist()}
    assert all(pid is prompt_of[pid] for pid in loaded.samples.prompt_id.tolist())
    order = np.argsort(ds.prompts.prompt_id.astype(str))
    assert back.prompt_id.tolist() == ds.prompts.prompt_id[order].tolist()
    assert back.twin_id.tolist() == [x or "" for x in ds.prompts.twin_id[order].tolist()]
    assert back.group_id.tolist() == [x or "" for x in ds.prompts.group_id[order].tolist()]
    by_id = {pid: pid for pid in back.prompt_id.tolist()}
    linked = [t for t in back.twin_id.tolist() if t]
    assert len(linked) > 100 and all(t is by_id[t] for t in linked if t in by_id)
    assert sum(t in by_id for t in linked) > 100
    groups = [g for g in back.group_id.tolist() if g]
    assert len({id(g) for g in groups}) == len(set(groups)) < len(groups)


def test_loaded_detections_carry_their_samples_as_offsets_until_the_column_is_read(
        tmp_path: Path, sbuc_parsed: Any) -> None:
    """The loader gives each sample's first detection row instead of a row per detection: the
    checker and the overlays read those offsets, the column is built only when read whole, and
    everything reads the same as from the column (gaps, a take, a subset, the verdicts)."""
    from workstation.dataset import Detections, SampleRuns
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.config import CheckerConfig

    ds = small_dataset(sbuc_parsed, 40)
    d = ds.detections
    keep = np.flatnonzero(~np.isin(d.sample_idx, [0, 7, 8, 39]))  # samples without detections, at both ends
    sparse = type(ds)(ds.samples, d.take(keep), ds.prompts, ds.variant_names)
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run(sbuc_parsed.run_id)
        p.samples.add_dataset(sparse)
        back = p.samples.load_dataset()
    dets = back.detections
    offsets = dets.sample_offsets()
    assert offsets is not None and len(offsets) == back.n + 1 and dets.__dict__["_sample_idx"] is None
    assert len(dets) == len(sparse.detections) == offsets[-1]
    cfg = CheckerConfig()
    v = evaluate(back, cfg)  # the checker reads the offsets only
    assert dets.__dict__["_sample_idx"] is None and offsets[1] == offsets[0] == 0
    column = np.repeat(np.arange(back.n), np.diff(offsets))
    picked = dets.take(np.arange(0, len(dets), 3))
    assert picked.sample_idx.tolist() == column[::3].tolist() and dets.__dict__["_sample_idx"] is None
    assert dets.sample_idx.tolist() == column.tolist()  # built when read whole, and kept
    assert dets.sample_idx is dets.sample_idx and dets.sample_idx.dtype == np.int32
    plain = type(back)(back.samples, Detections(
        sample_idx=column, source=dets.source, variant=dets.variant, label=dets.label, score=dets.score,
        x1=dets.x1, y1=dets.y1, x2=dets.x2, y2=dets.y2), back.prompts, back.variant_names)
    w = evaluate(plain, cfg)
    for k in ("verdict", "reason", "conf", "sel_a", "sel_b"):
        assert np.array_equal(getattr(v, k), getattr(w, k))
    sub = back.subset(np.array([1, 2, 30]))
    assert sub.detections.sample_idx.tolist() == np.repeat([0, 1, 2], np.diff(offsets)[[1, 2, 30]]).tolist()
    runs = SampleRuns(np.array([0, 2, 2, 5]), np.dtype(np.int32))
    assert len(runs) == 5 and runs.materialize().tolist() == [0, 0, 2, 2, 2]


def test_a_subset_of_loaded_detections_reads_only_its_samples_rows(tmp_path: Path, sbuc_parsed: Any) -> None:
    """A subset (an audit sample, a calibration's labelled samples) of a project as loaded takes
    its samples' detections by their offsets, in the order the rows are given, without building
    the whole sample column: the same detections, labels and verdicts as the subset of a plain
    column, and the samples' prompt rows come along."""
    from workstation.dataset import Detections, SampleRuns
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.config import CheckerConfig

    with Project.open(make_project(tmp_path / "p", sbuc_parsed, 40)) as p:
        back = p.samples.load_dataset()
    dets = back.detections
    offsets = dets.sample_offsets()
    assert offsets is not None and dets.label_codes() is not None
    column = np.repeat(np.arange(back.n), np.diff(offsets)).astype(np.int32)
    plain = type(back)(back.samples, Detections(
        sample_idx=column, source=dets.source, variant=dets.variant, label=np.asarray(dets.labels_at(slice(None))),
        score=dets.score, x1=dets.x1, y1=dets.y1, x2=dets.x2, y2=dets.y2), back.prompts, back.variant_names)
    parent_rows = back.prompt_rows()
    rows = np.array([30, 2, 17, 1, 39, 0])  # not in order
    sub, ref = back.subset(rows), plain.subset(rows)
    got = sub.detections
    assert dets.__dict__["_sample_idx"] is None  # the whole column was not built
    assert isinstance(got.__dict__["_runs"], SampleRuns) and got.label_codes() is not None
    assert got.sample_offsets().tolist() == np.concatenate([[0], np.cumsum(np.diff(offsets)[rows])]).tolist()
    order = np.argsort(ref.detections.sample_idx, kind="stable")  # the plain subset keeps the table's order
    assert got.sample_idx.tolist() == ref.detections.sample_idx[order].tolist()
    for name in ("source", "variant", "score", "x1", "y1", "x2", "y2", "label"):
        assert getattr(got, name).tolist() == getattr(ref.detections, name)[order].tolist(), name
    assert sub.cache["prompt_rows"].tolist() == parent_rows[rows].tolist()
    v, w = evaluate(sub, CheckerConfig()), evaluate(ref, CheckerConfig())
    for k in ("verdict", "reason", "conf", "delta"):
        assert np.array_equal(getattr(v, k), getattr(w, k), equal_nan=True), k
    assert [sub.detections.sample_idx[int(i)] for i in v.sel_a[v.sel_a >= 0]] == np.flatnonzero(v.sel_a >= 0).tolist()
