"""Fixtures shared by the core tests: the SpatialBench-UC fixture imported into a project."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.store import Project


def dump_tables(folder: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a project, sorted: equal dumps = identical projects."""
    with Project.open(folder, read_only=True) as p:
        names = [r[0] for r in p.con.execute(
            "SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
        return {n: [tuple("NaN" if isinstance(x, float) and math.isnan(x) else x for x in row)
                    for row in p.con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall()]
                for n in names}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, sbuc_run_dir: Path, sbuc_prompts: Path) -> Path:
    """The fixture run imported once per test module with `import-sbuc` (do not modify it)."""
    folder = tmp_path_factory.mktemp("imported") / "project"
    assert main(["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project", str(folder)]) == 0
    return folder


@pytest.fixture
def project(imported: Path, tmp_path: Path) -> Path:
    """A fresh copy of the imported fixture project."""
    dst = tmp_path / "project"
    shutil.copytree(imported, dst)
    return dst
