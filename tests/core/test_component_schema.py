"""A method's own tables: `Project.ensure_schema` brings them to the newest migration, once.

The check runs whenever a method's store is made (on every step through a queue), so a project
remembers a component it has seen at its newest version; a longer migration list (a newer
method) still migrates, a rolled-back transaction leaves nothing remembered, and a read-only
project still refuses tables that are behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from workstation.store import Project
from workstation.store.base import ProjectError

V1 = [["CREATE TABLE toy_items (id VARCHAR)"]]
V2 = [*V1, ["ALTER TABLE toy_items ADD COLUMN score DOUBLE"]]


def _columns(p: Project) -> list[str]:
    return [r[0] for r in p.con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'toy_items' ORDER BY ordinal_position"
    ).fetchall()]


def test_newest_once_then_a_longer_list_still_migrates(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        assert p.ensure_schema("toy", V1) == 1
        assert p.ensure_schema("toy", V1) == 1  # remembered: nothing to do
        assert _columns(p) == ["id"]
        assert p.ensure_schema("toy", V2) == 2  # a newer method's list is not answered from memory
        assert _columns(p) == ["id", "score"] and p.component_version("toy") == 2


def test_a_rolled_back_transaction_leaves_nothing_remembered(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        with pytest.raises(RuntimeError):
            with p.transaction():
                assert p.ensure_schema("toy", V1) == 1
                raise RuntimeError("abandon")
        assert p.component_version("toy") == 0
        assert p.ensure_schema("toy", V1) == 1 and _columns(p) == ["id"]


def test_read_only_refuses_tables_behind_even_after_an_earlier_check(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        p.ensure_schema("toy", V1)
    with Project.open(tmp_path / "p", read_only=True) as ro:
        assert ro.ensure_schema("toy", V1) == 1
        with pytest.raises(ProjectError, match="read-only"):
            ro.ensure_schema("toy", V2)
