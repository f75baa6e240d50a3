"""The label log's events of single targets, kept between writes (`LabelsRepo.events_of`):
what is read is what the table holds at every moment, whatever wrote to it last, and targets read
together cost one query."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workstation.store import Project

TASK = "metalogic.pair"  # a pair's events: no sample rows needed


class Counting:
    """Counts the statements that read the label log on a project's connection."""

    def __init__(self, p: Project) -> None:
        self.p, self.reads = p, 0
        self._execute = p.con.execute

    def __enter__(self) -> "Counting":
        def execute(sql: str, params: Any = None) -> Any:
            if "FROM label_events" in sql:
                self.reads += 1
            return self._execute(sql, params)

        self.p.con.execute = execute  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self.p.con.execute = self._execute  # type: ignore[method-assign]


def plain(p: Project, target: str) -> list[tuple[Any, ...]]:
    """The events of `target` read straight from the table (the kept copy bypassed)."""
    return [tuple(r) for r in p.con.execute(
        "SELECT event_id, annotator, value, notes FROM label_events WHERE task = ? AND target_id = ? "
        "ORDER BY event_id", [TASK, target]).fetchall()]


def seen(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.event_id, e.annotator, e.value, e.notes) for e in events]


@pytest.fixture
def project(tmp_path: Path) -> Any:
    with Project.create(tmp_path / "p") as p:
        for i, (target, who, value) in enumerate([("pair-1", "ann", "aligned"), ("pair-2", "ann", "misaligned"),
                                                  ("pair-1", "bob", "aligned"), ("pair-3", "ann", None)]):
            p.labels.add(TASK, "pair", target, who, value, notes=f"n{i}")
        yield p


def test_targets_read_together_cost_one_query_and_a_second_read_none(project: Project) -> None:
    p = project
    with Counting(p) as c:
        got = p.labels.events_of(TASK, ["pair-1", "pair-2", "pair-9", "pair-1"])
        assert c.reads == 1
        assert list(got) == ["pair-1", "pair-2", "pair-9"]
        for t in ("pair-1", "pair-2", "pair-9"):
            assert seen(got[t]) == plain(p, t)
        assert [e.annotator for e in got["pair-1"]] == ["ann", "bob"] and got["pair-9"] == []
        reads = c.reads
        for t in ("pair-1", "pair-2", "pair-9"):
            assert seen(p.labels.events(task=TASK, target_id=t)) == plain(p, t)
        assert c.reads == reads + 3  # the plain reads of the check above, and none by the kept ones
        p.labels.events_of(TASK, ["pair-2", "pair-3"])
        assert c.reads == reads + 4  # pair-3 alone was read


def test_every_write_to_the_log_is_seen_by_the_next_read(project: Project) -> None:
    p = project
    assert seen(p.labels.events(task=TASK, target_id="pair-1")) == plain(p, "pair-1")
    p.labels.add(TASK, "pair", "pair-1", "cat", "misaligned")
    assert seen(p.labels.events(task=TASK, target_id="pair-1")) == plain(p, "pair-1")
    assert p.labels.events(task=TASK, target_id="pair-1")[-1].annotator == "cat"
    p.labels.add_bulk(TASK, "pair", {"target_id": ["pair-1", "pair-2"], "annotator": ["dan", "dan"],
                                     "value": ["aligned", "aligned"]})
    for t in ("pair-1", "pair-2"):
        assert seen(p.labels.events(task=TASK, target_id=t)) == plain(p, t)
        assert p.labels.events(task=TASK, target_id=t)[-1].annotator == "dan"
    # a bulk insert of the table's own columns (as a merge writes)
    cols = {"task": [TASK], "target_kind": ["pair"], "target_id": ["pair-2"], "annotator": ["eve"],
            "value": ["misaligned"], "created_at": [p.labels.events(task=TASK, target_id="pair-2")[0].created_at]}
    p.insert_columns("label_events", cols)
    assert p.labels.events(task=TASK, target_id="pair-2")[-1].annotator == "eve"


def test_a_rolled_back_write_is_not_seen(project: Project) -> None:
    p = project
    before = plain(p, "pair-2")
    with pytest.raises(RuntimeError):
        with p.transaction():
            p.labels.add(TASK, "pair", "pair-2", "fay", "aligned")
            # read inside the transaction: its own write shows, and is kept
            assert p.labels.events(task=TASK, target_id="pair-2")[-1].annotator == "fay"
            raise RuntimeError("abandoned")
    assert plain(p, "pair-2") == before
    assert seen(p.labels.events(task=TASK, target_id="pair-2")) == before


def test_what_a_caller_changes_in_its_events_is_not_kept(project: Project) -> None:
    p = project
    first = p.labels.events_of(TASK, ["pair-1"])["pair-1"]
    first[0].value = "changed"
    first.append(first[0])
    again = p.labels.events(task=TASK, target_id="pair-1")
    assert seen(again) == plain(p, "pair-1")


def test_more_targets_than_are_kept_are_all_answered(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    p = project
    monkeypatch.setattr(type(p.labels), "EVENTS_KEPT", 2)
    monkeypatch.setattr(type(p.labels), "_EVENTS_PER_QUERY", 2)
    targets = ["pair-1", "pair-2", "pair-3", "pair-4", "pair-5"]
    with Counting(p) as c:
        got = p.labels.events_of(TASK, targets)
        assert c.reads == 3  # two targets a query
    for t in targets:
        assert seen(got[t]) == plain(p, t)
        assert seen(p.labels.events(task=TASK, target_id=t)) == plain(p, t)
