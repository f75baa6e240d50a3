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
from workstation.methods.spatial.data import spatial_columns
from workstation.methods.spatial.store import SpatialStore
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
        ds = p.samples.load_dataset()
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
