"""Fixtures shared by the core tests: the SpatialBench-UC fixture imported into a project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.digest import dump_tables  # noqa: F401 - the corpus tests import it from here
from workstation.cli import main
from workstation.store import Project
from workstation.methods.spatial.store import SpatialStore


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


def edit_line(path: Path, lineno: int, edit: Any) -> None:
    """Replace line `lineno` (1-based) with edit(old_line) — a str, or a dict → JSON."""
    lines = path.read_text(encoding="utf-8").splitlines()
    old = lines[lineno - 1]
    new = edit(old)
    lines[lineno - 1] = new if isinstance(new, str) else json.dumps(new)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def edit_json_line(path: Path, lineno: int, change: Any) -> None:
    """Parse line `lineno` as JSON, apply change(obj) in place, write it back."""
    def f(old: str) -> dict[str, Any]:
        obj = json.loads(old)
        change(obj)
        return obj

    edit_line(path, lineno, f)


def assert_one_clear_error(err: str, file_name: str | None, line: int | None, *words: str) -> None:
    """Exactly one non-empty stderr line, starting with 'error: ', naming `file_name`:`line` (when
    given) and holding each of `words` (case-insensitive); never a traceback."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one message, got:\n{err}"
    msg = lines[0]
    assert msg.startswith("error: "), msg
    assert "Traceback" not in err
    if file_name is not None:
        where = f"{file_name}:{line}" if line is not None else file_name
        assert where in msg, f"{where!r} not in {msg!r}"
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in {msg!r}"


def add_seeded_labels(folder: Path, n: int = 120, seed: int = 3, annotator: str = "alice") -> None:
    """`n` human labels from the recorded verdicts, 15 % changed, for calibrate / audit commands."""
    import numpy as np

    with Project.open(folder) as p:
        rows = p.con.execute("SELECT v.sample_id, v.verdict FROM spatial_verdicts v ORDER BY v.sample_id").fetchall()
        rng = np.random.default_rng(seed)
        pick = rng.choice(len(rows), n, replace=False)
        verdicts = ["PASS", "FAIL", "UNDECIDABLE"]
        human = [rows[i][1] if rng.random() > 0.15 else verdicts[int(rng.integers(0, 3))] for i in pick]
        SpatialStore(p).add_labels_bulk({"sample_id": [rows[i][0] for i in pick], "annotator": [annotator] * n,
                           "verdict": human})


@pytest.fixture(scope="module")
def labelled_imported(imported: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The imported fixture with 120 seeded labels of annotator 'alice' (do not modify it)."""
    folder = tmp_path_factory.mktemp("labelled") / "project"
    shutil.copytree(imported, folder)
    add_seeded_labels(folder)
    return folder


@pytest.fixture
def labelled_project(labelled_imported: Path, tmp_path: Path) -> Path:
    """A fresh copy of the labelled fixture project."""
    dst = tmp_path / "labelled_project"
    shutil.copytree(labelled_imported, dst)
    return dst


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The detection cache in a folder of the test's own, used from the first detection."""
    root = tmp_path / "user-cache"
    monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(root))
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
    return root / "detections"


def load_spatial(folder: Path, read_only: bool = True) -> Any:
    """The project's spatial dataset, as the window loads it."""
    from workstation.methods.spatial.store import load_dataset

    with Project.open(folder, read_only=read_only) as p:
        return load_dataset(p)


def scanned_spatial(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The project's spatial dataset read by a scan of its tables (the cache turned off)."""
    with monkeypatch.context() as m:
        m.setenv("WORKSTATION_DETECTION_CACHE_MIN", "off")
        return load_spatial(folder)


def is_mapped(a: Any) -> bool:
    """Whether array `a` is (a view of) a memory-mapped file."""
    import numpy as np

    while a is not None:
        if isinstance(a, np.memmap):
            return True
        a = a.base
    return False


def resident_kb(path: Path) -> int:
    """This process's resident memory in its mappings of `path` (from /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and not line.startswith(("Rss", "Size")):
                inside = line.rstrip().endswith(str(path))
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total
