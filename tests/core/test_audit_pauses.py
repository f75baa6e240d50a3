"""Pauses of blind audits are kept in the project: who paused which audit set, when, why, and the
items each pause showed unblinded; a reopened project still has them, and an older project
gains the tables when it is opened for writing."""

from __future__ import annotations

from pathlib import Path

from workstation.store import SCHEMA_VERSION, Project


def test_a_pause_and_its_unblinded_items_are_recorded_and_kept(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        aid = p.audit.create_set("blind one", "spatial.verdict", ["s1", "s2", "s3"], {}, blind=True)
        assert p.audit.pauses(aid) == [] and p.audit.seen_unblinded(aid) == set()
        pid = p.audit.pause(aid, "a2", "Browse: review s9", ["s9", "s2"])
        assert p.audit.open_pause(aid, "a2") == pid and p.audit.open_pause(aid, "a1") is None
        # more items shown while the pause lasts join it; the same item is counted once
        assert p.audit.mark_unblinded(pid, ["s2", "s3"]) == 1
        # asking again while paused takes up the same pause
        assert p.audit.pause(aid, "a2", "Grid", ["s1"]) == pid
        assert p.audit.end_pause(aid, "a2") == pid
        assert p.audit.open_pause(aid, "a2") is None
        assert p.audit.end_pause(aid, "a2") is None
    with Project.open(folder, read_only=True) as p:
        (pause,) = p.audit.pauses(aid)
        assert (pause["annotator"], pause["reason"]) == ("a2", "Browse: review s9")
        assert pause["started_at"] is not None and pause["ended_at"] >= pause["started_at"]
        assert sorted(pause["unblinded"]) == ["s1", "s2", "s3", "s9"]
        assert p.audit.seen_unblinded(aid) == {("a2", t) for t in ("s1", "s2", "s3", "s9")}
        assert p.audit.seen_unblinded(aid, "a1") == set()


def test_a_version_4_project_gains_the_pause_tables(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        aid = p.audit.create_set("old", "spatial.verdict", ["s1"], {}, blind=True)
        p.con.execute("DROP TABLE audit_unblinded")
        p.con.execute("DROP TABLE audit_pauses")
        p.con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with Project.open(folder) as p:
        assert p.schema_version == SCHEMA_VERSION
        assert p.audit.items(aid) == [("s1", False)]
        assert p.audit.pause(aid, "alice", "search") == 1
