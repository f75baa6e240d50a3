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


def test_a_version_5_project_gains_the_pause_tables(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        aid = p.audit.create_set("old", "spatial.verdict", ["s1"], {}, blind=True)
        p.con.execute("DROP TABLE audit_unblinded")
        p.con.execute("DROP TABLE audit_pauses")
        p.con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    with Project.open(folder) as p:
        assert p.schema_version == SCHEMA_VERSION
        assert p.audit.items(aid) == [("s1", False)]
        assert p.audit.pause(aid, "alice", "search") == 1


def test_labels_on_items_seen_unblinded_are_flagged_in_the_figures_and_the_report(tmp_path: Path) -> None:
    from workstation.evaluation.audit_sets import blind_audits_section, flagged_labels, self_agreement_report
    from workstation.evaluation.base import LabelScheme

    S = LabelScheme(task="test.pair", target="pair", values=("PASS", "FAIL"), keys=("P", "F"))

    folder = tmp_path / "p"
    with Project.create(folder) as p:
        aid = p.audit.create_set("blind one", S.task, ["s1", "s2"], {}, blind=True, rechecks=[(2, "s1"), (3, "s2")])
        for t in ("s1", "s2"):
            p.labels.add(S.task, S.target, t, "a2", "PASS", audit_set_id=aid)
            p.labels.add(S.task, S.target, t, "a2", "PASS", audit_set_id=aid, source="recheck")
        assert flagged_labels(p, S.task, aid) == 0
        before = self_agreement_report(p, S, aid).text()
        assert "unblinded" not in before
        p.audit.pause(aid, "a2", "Browse: review the filtered samples", ["s2", "s9"])
        assert flagged_labels(p, S.task, aid) == 1 and flagged_labels(p, S.task) == 1
        r = self_agreement_report(p, S, aid)
        assert r.unblinded == 1 and r.by_annotator["a2"].unblinded == 1
        assert "1 of them seen unblinded during a pause (flagged)" in r.text()
        section = blind_audits_section(p, tmp_path / "out")
        assert section is not None and section.title == "Blind audits"
        (row,) = section.tables["pauses"]
        assert (row["audit_set_id"], row["annotator"], row["seen_unblinded"], row["flagged_labels"]) == (aid, "a2", 2, 1)
        assert row["ended_at"] == "" and "not resumed" in section.html and "Browse" in section.html
        text = (tmp_path / "out" / "pauses.csv").read_text(encoding="utf-8")
        assert "s2 s9" in text


def test_no_pause_no_blind_audits_section(tmp_path: Path) -> None:
    from workstation.evaluation.audit_sets import blind_audits_section

    with Project.create(tmp_path / "p") as p:
        p.audit.create_set("blind one", "spatial.verdict", ["s1"], {}, blind=True)
        assert blind_audits_section(p, tmp_path / "out") is None


def test_the_report_lists_the_pauses_of_blind_audits(tmp_path: Path) -> None:
    from workstation.cli import main
    from workstation.methods import get_method

    folder = tmp_path / "p"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        sid = p.con.execute("SELECT min(sample_id) FROM samples").fetchone()[0]
        aid = p.audit.create_set("blind one", "spatial.verdict", [sid], {}, blind=True)
        p.labels.add("spatial.verdict", "sample", sid, "a2", "PASS", audit_set_id=aid)
        p.audit.pause(aid, "a2", "Browse: review the filtered samples", [sid])
    out = tmp_path / "report"
    assert main(["report", "--project", str(folder), "--out", str(out)]) == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "Blind audits" in index and "Browse: review the filtered samples" in index
    rows = (out / "blind_audits" / "pauses.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 2 and sid in rows[1] and ",a2," in rows[1]
