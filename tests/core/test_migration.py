"""A project written by the code of schema version 2 (before methods had their own tables)
opens with every label, note, config version, verdict set and audit set intact.

The project is `tests/fixtures/legacy_schema2/export/`, exported with DuckDB's EXPORT DATABASE
from a project that code made (see `make_legacy.py` there)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

from workstation.methods.spatial.checker import evaluate
from workstation.methods.spatial.data import recorded_stability, spatial_columns
from workstation.methods.spatial.store import SpatialStore, load_dataset
from workstation.methods.spatial.types import RELATIONS
from workstation.store import DB_NAME, SCHEMA_VERSION, Project, ProjectError

EXPORT = Path(__file__).resolve().parent.parent / "fixtures" / "legacy_schema2" / "export"


def legacy(name: str) -> list[dict]:
    return pq.read_table(EXPORT / f"{name}.parquet").to_pylist()


@pytest.fixture()
def legacy_project(tmp_path: Path) -> Path:
    folder = tmp_path / "legacy"
    (folder / "images").mkdir(parents=True)
    con = duckdb.connect(str(folder / DB_NAME))
    con.execute((EXPORT / "schema.sql").read_text())
    con.execute((EXPORT / "load.sql").read_text().replace("{DIR}", EXPORT.as_posix()))
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
    con.close()
    return folder


def test_a_version_2_project_refuses_a_read_only_open_until_upgraded(legacy_project: Path) -> None:
    with pytest.raises(ProjectError, match="open it once for writing"):
        Project.open(legacy_project, read_only=True)


def test_every_label_and_note_survives_the_migration(legacy_project: Path) -> None:
    old = legacy("label_events")
    assert len(old) == 61 and any(r["notes"] for r in old) and any(r["verdict"] is None for r in old)
    with Project.open(legacy_project) as p:
        assert p.schema_version == SCHEMA_VERSION
        new = p.labels.events(task="spatial.verdict")
        assert len(new) == len(old)
        for o, n in zip(old, new):
            assert (n.event_id, n.target_id, n.annotator, n.value, n.rating, n.notes, n.created_at,
                    n.audit_set_id, n.source) == (o["event_id"], o["sample_id"], o["annotator"], o["verdict"],
                                                  o["rating"], o["notes"], o["created_at"], o["audit_set_id"],
                                                  o["source"])
            assert n.target_kind == "sample"
        store = SpatialStore(p)
        # the latest label per (sample, annotator) still counts, and the undo still takes alice's first label back
        latest = {(r.sample_id, r.annotator): r for r in store.latest_labels()}
        first = old[0]["sample_id"]
        assert latest[(first, "alice")].verdict is None
        assert latest[(old[5]["sample_id"], "alice")].notes == "Overlap/centered"
        assert {r.annotator for r in store.latest_labels()} == {"alice", "bob"}
        # new labels continue the event numbering
        eid = store.add_label(old[3]["sample_id"], "carol", "PASS")
        assert eid == max(r["event_id"] for r in old) + 1


def test_every_config_version_and_verdict_set_survives(legacy_project: Path) -> None:
    old_cfg = legacy("checker_configs")
    old_v = legacy("verdicts")
    active = {r["key"]: r["value"] for r in legacy("settings")}["active_config"]
    with Project.open(legacy_project) as p:
        store = SpatialStore(p)
        cfgs = store.configs()
        assert [(c["config_id"], c["content_hash"], c["note"], c["parent_id"]) for c in cfgs] == \
            [(r["config_id"], r["content_hash"], r["note"], r["parent_id"]) for r in old_cfg]
        assert [c["verdicts"] for c in cfgs] == [sum(v["config_id"] == r["config_id"] for v in old_v)
                                                 for r in old_cfg]
        assert store.active_config_id() == int(active)
        ds = load_dataset(p)  # with the recorded stabilities (version 7 moved them to spatial's table)
        old_samples = legacy("samples")
        assert len(old_samples) == ds.n and all(r["recorded_stability"] == 0.8 for r in old_samples)
        assert recorded_stability(ds).tolist() == [0.8] * ds.n
        for r in old_cfg:
            cfg = store.get_config(r["config_id"])
            assert cfg.content_hash() == r["content_hash"]
            table = store.load_verdict_table(r["config_id"])
            want = sorted((v["sample_id"], v["verdict"], v["reason"], v["conf"]) for v in old_v
                          if v["config_id"] == r["config_id"])
            from workstation.methods.spatial.types import REASONS, VERDICTS
            got = sorted(zip(table["sample_id"].tolist(), [VERDICTS[c] for c in table["verdict"]],
                             [REASONS[c] for c in table["reason"]], table["conf"].tolist()))
            assert got == want
            # and the checker still gives them from the migrated prompts and detections
            fresh = evaluate(ds, cfg)
            by_id = dict(zip(table["sample_id"].tolist(), table["verdict"].tolist()))
            assert [by_id[s] for s in ds.samples.sample_id.tolist()] == fresh.verdict.tolist()


def test_prompts_audit_sets_filters_jobs_and_settings_survive(legacy_project: Path) -> None:
    old_prompts = {r["prompt_id"]: r for r in legacy("prompts")}
    old_items = legacy("audit_items")
    with Project.open(legacy_project) as p:
        prompts = p.samples.load_prompts()
        assert len(prompts) == len(old_prompts)
        for i, pid in enumerate(prompts.prompt_id.tolist()):
            o = old_prompts[pid]
            assert prompts.method[i] == "spatial"
            assert prompts.entities[i] == (o["object_a"], o["object_b"])
            assert prompts.attrs[i] == {"relation": o["relation"]}
            assert (prompts.text[i], prompts.twin_id[i], prompts.group_id[i]) == \
                (o["text"], o["counterfactual_id"], o["pair_id"])
        ds = p.samples.load_dataset()
        sc = spatial_columns(ds)
        for j in range(ds.n):
            o = old_prompts[ds.samples.prompt_id[j]]
            assert (RELATIONS[sc.relation[j]], sc.label_a[j], sc.label_b[j]) == \
                (o["relation"], o["object_a"], o["object_b"])
        (aset,) = p.audit.sets()
        assert aset["name"] == "audit A" and aset["blind"] and aset["task"] == "spatial.verdict"
        assert p.audit.items(aset["audit_set_id"]) == [(r["sample_id"], r["is_recheck"]) for r in
                                                        sorted(old_items, key=lambda r: r["position"])]
        assert p.audit.saved_filters() == {"fails": {"verdict": "FAIL"}}
        assert [j["job_id"] for j in p.jobs.all()] == ["generate-x"]
        assert p.get_setting("annotator") == "alice"
        tables = {r[0] for r in p.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert not {"checker_configs", "verdicts"} & tables
    # a second open is a no-op
    with Project.open(legacy_project) as p:
        assert p.schema_version == SCHEMA_VERSION
        assert len(p.labels.events()) == 61
    with Project.open(legacy_project, read_only=True) as p:
        assert len(SpatialStore(p).configs()) == 2
        assert np.isfinite(SpatialStore(p).load_verdict_table(1)["conf"]).all()


def test_a_version_6_project_gains_raters_and_gold_and_reads_as_before(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        aid = p.audit.create_set("old", "spatial.verdict", ["s1", "s2"], {}, blind=True, rechecks=[(2, "s1")])
        p.con.execute("DROP TABLE gold_answers")
        p.con.execute("DROP TABLE audit_assignments")
        p.con.execute("ALTER TABLE audit_items DROP COLUMN is_gold")
        p.con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    with Project.open(folder) as p:
        assert p.schema_version == SCHEMA_VERSION
        assert p.audit.items(aid) == [("s1", False), ("s2", False), ("s1", True)]
        assert p.audit.assignments(aid) == {} and p.audit.gold_items() == set()
        assert p.audit.gold("spatial.verdict") == {}
        p.audit.add_gold("spatial.verdict", [("s1", "PASS", None)], "test")
        assert p.audit.gold("spatial.verdict") == {"s1": ("PASS", "test")}


# ---- version 7 -> 8: the recorded stabilities leave the kernel's samples table --------------------
def _version_6_project(folder: Path, stabilities: list[float], spatial_at: int) -> None:
    """A project as version 6 wrote it (it goes through versions 7 and 8 when opened): one run, one spatial prompt per sample, samples with
    these recorded stabilities (NaN: none), the spatial tables at version ``spatial_at``."""
    from workstation.store import schema

    folder.mkdir(parents=True)
    (folder / "images").mkdir()
    con = duckdb.connect(str(folder / DB_NAME))
    for steps in schema.KERNEL_MIGRATIONS[:6]:
        for step in steps:
            schema._run(con, step)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '6')")
    for stmts in (schema.SPATIAL_V1, schema.SPATIAL_V2)[:spatial_at]:
        for stmt in stmts:
            con.execute(stmt)
    if spatial_at:
        con.execute("INSERT INTO schema_components VALUES ('spatial', ?)", [spatial_at])
    con.execute("INSERT INTO runs (run_id, method) VALUES ('r', 'm')")
    n = len(stabilities)
    for i in range(n):
        con.execute("INSERT INTO prompts VALUES (?, 's', 'spatial', 'a dog left of a cat', ['dog', 'cat'], "
                    "'{\"relation\": \"left_of\"}', '', '', 'h')", [f"p{i}"])
    # stored out of order: the samples keep their own order (ord)
    for i in reversed(range(n)):
        con.execute("INSERT INTO samples VALUES (?, 'r', ?, ?, ?, 512, 384, ?, ?, false, ?, ?)",
                    [f"s{i}", f"p{i}", i, f"images/s{i}.png", stabilities[i], i % 2 == 0,
                     "PASS" if i % 3 else None, 10 * i])
    con.close()


STABILITIES = [0.25, float("nan"), 1.0, 0.0, float("nan"), 0.75, float("inf")]


@pytest.mark.parametrize("spatial_at", [0, 1, 2])
def test_a_version_6_project_keeps_every_recorded_stability_in_the_spatial_table(
        tmp_path: Path, spatial_at: int) -> None:
    folder = tmp_path / "v6"
    _version_6_project(folder, STABILITIES, spatial_at)
    with Project.open(folder) as p:
        assert p.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == \
            (str(SCHEMA_VERSION),)
        cols = [r[0] for r in p.con.execute("SELECT column_name FROM duckdb_columns() "
                                            "WHERE table_name = 'samples'").fetchall()]
        assert "recorded_stability" not in cols
        rows = p.con.execute("SELECT sample_id, run_id, prompt_id, seed, image_path, width, height, "
                             "has_secondary, has_perturbed, truth, ord FROM samples ORDER BY ord").fetchall()
        assert rows == [(f"s{i}", "r", f"p{i}", i, f"images/s{i}.png", 512.0, 384.0, i % 2 == 0, False,
                         "PASS" if i % 3 else None, 10 * i) for i in range(len(STABILITIES))]
        kept = dict(p.con.execute("SELECT sample_id, recorded FROM spatial_stability").fetchall())
        # rows only where finite
        assert kept == {f"s{i}": v for i, v in enumerate(STABILITIES) if np.isfinite(v)}
        assert p.component_version("spatial") == 3
        ds = load_dataset(p)
        assert ds.samples.sample_id.tolist() == [f"s{i}" for i in range(len(STABILITIES))]
        want = [v if np.isfinite(v) else np.nan for v in STABILITIES]
        assert np.array_equal(recorded_stability(ds), np.array(want), equal_nan=True)
        store = SpatialStore(p)  # the spatial tables whole: a verdict set is written and read back
        v = evaluate(ds, store.active_config()[1])
        store.save_verdicts(store.save_config(store.active_config()[1]), ds, v)
    with Project.open(folder, read_only=True) as p:  # opened again: nothing left to migrate
        assert np.array_equal(recorded_stability(load_dataset(p)), np.array(want), equal_nan=True)


def test_a_version_6_project_without_recorded_stabilities_leaves_the_spatial_tables_alone(
        tmp_path: Path) -> None:
    folder = tmp_path / "v6"
    _version_6_project(folder, [float("nan")] * 3, 0)
    with Project.open(folder) as p:
        assert p.component_version("spatial") == 0
        assert not p.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'spatial_stability'"
                                 ).fetchone()[0]
        ds = load_dataset(p)
        assert ds.n == 3 and np.isnan(recorded_stability(ds)).all()
        SpatialStore(p)  # the spatial tables made at their newest version, the stability table empty
        assert p.component_version("spatial") == 3
        assert p.con.execute("SELECT count(*) FROM spatial_stability").fetchone() == (0,)
