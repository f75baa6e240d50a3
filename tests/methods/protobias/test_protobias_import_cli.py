"""`main.py protobias import FOLDER --project DIR`: a folder of triplet images with a JSONL / CSV
index becomes an import run of the project, or — on a bad line, a corrupt image, a link out of the
folder, a clash — exit 2 with one line naming the index file and line, and the project as it was."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.methods.protobias.folders import _png, make_folder  # noqa: F401 - _png for the tests below
from workstation.cli import main as cli_main
from workstation.methods import get_method
from workstation.methods.protobias import importer
from workstation.store import Project, SamplesRepo

M = get_method("protobias")


def state(folder: Path) -> dict[str, Any]:
    """Everything a user could see of a project: its rows and its files."""
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
                   and not p.name.startswith("project.duckdb"))
    with Project.open(folder) as p:
        tables = {t: repr(p.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall())  # repr: NaN == NaN
                  for t in ("runs", "prompts", "samples", "scores", "label_events")}
    return {"files": files, **tables}


def run_import(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli_main(["protobias", "import", *args])
    c = capsys.readouterr()
    return rc, c.out, c.err


@pytest.fixture
def existing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A project that already holds one import."""
    proj = tmp_path / "proj"
    rc, _, err = run_import(capsys, str(make_folder(tmp_path / "first", n=2)), "--project", str(proj),
                            "--run-id", "first")
    assert rc == 0, err
    return proj


def test_import_copies_checked_images_and_adds_triplets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_folder(tmp_path / "src")
    rc, out, err = run_import(capsys, str(src), "--project", str(tmp_path / "p"))
    assert rc == 0, err
    assert "imported 3 triplets (6 images)" in out
    with Project.open(tmp_path / "p") as p:
        (run,) = p.samples.runs()
        assert run["run_id"].startswith("import-src-") and run["source"] == "protobias_import"
        d = M.load(p)
        assert d.triplet_id.tolist() == ["tr0", "tr1", "tr2"] and d.n_incomplete == 0
        assert d.domain.tolist() == ["animals", "objects", "demography"]
        assert d.text[1] == "An animal stands near a pond with exactly 2 rocks."
        assert d.prompt_corr[1] == "An okapi stands near a pond with exactly 2 rocks." and d.prompt_adv[1] == d.text[1]
        assert (d.extra_element[0], d.knob_value[0], d.knob_value_adv[0]) == ("rock", "1", "2")
        for i in range(3):
            for role, name in (("corr", f"{i}_corr.png"), ("adv", f"{i}_adv.jpg")):
                copy = d.image_path(i, role)
                assert copy is not None and copy.is_relative_to(p.folder / "images" / run["run_id"])
                assert copy.suffix == Path(name).suffix  # bytes copied as they are, format kept
                assert hashlib.sha256(copy.read_bytes()).digest() == hashlib.sha256((src / "img" / name).read_bytes()).digest()
        w = dict(p.con.execute("SELECT sample_id, width FROM samples").fetchall())
        assert sorted(w.values()) == [30.0, 30.0, 30.0, 40.0, 41.0, 42.0]
        attrs = json.loads(p.con.execute("SELECT attrs FROM prompts WHERE prompt_id='tr0:adv'").fetchone()[0])
        assert attrs["score_text"] == d.text[0] and attrs["extra"] == {"source_model": "sdxl"}
    # the same folder again: the same run id, found complete in the project, nothing changed
    before = state(tmp_path / "p")
    rc, out, err = run_import(capsys, str(src), "--project", str(tmp_path / "p"))
    assert rc == 0 and "already holds this import" in out and state(tmp_path / "p") == before
    # another import under the same run id is refused, nothing changed
    (src / "img" / "0_corr.png").write_bytes((src / "img" / "1_corr.png").read_bytes())
    rc, _, err = run_import(capsys, str(src), "--project", str(tmp_path / "p"), "--run-id", run["run_id"])
    assert rc == 2 and "already exists" in err and state(tmp_path / "p") == before


def test_a_csv_index_and_a_named_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_folder(tmp_path / "src", fmt="csv")
    rc, _, err = run_import(capsys, str(src), "--project", str(tmp_path / "p"), "--run-id", "batch-7")
    assert rc == 0, err
    with Project.open(tmp_path / "p") as p:
        d = M.load(p)
        assert len(d) == 3 and set(d.run_id.tolist()) == {"batch-7"}
        assert d.prompt_corr[0] == d.text[0]  # no generation prompts in this index: T stands in


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("case", ["bad_line", "corrupt_image", "symlink_out", "clash"])
def test_bad_input_exits_2_naming_file_and_line_and_leaves_the_project_unchanged(
        case: str, tmp_path: Path, existing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_folder(tmp_path / "src", n=3)
    index = src / "index.jsonl"
    lines = index.read_text(encoding="utf-8").splitlines()
    if case == "bad_line":
        r = json.loads(lines[2])
        del r["domain"]
        lines[2] = json.dumps(r)
        expect = (3, "missing field 'domain'")
    elif case == "corrupt_image":
        (src / "img" / "1_corr.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
        expect = (2, "image_corr 'img/1_corr.png'")
    elif case == "symlink_out":
        secret = tmp_path / "outside.png"
        _png(secret, 8, 8, (0, 0, 0))
        (src / "img" / "1_adv.jpg").unlink()
        os.symlink(secret, src / "img" / "1_adv.jpg")
        expect = (2, "resolves outside the image folder")
    else:  # tr0 is already in the project (the first import) with another text
        r = json.loads(lines[0])
        assert r["triplet_id"] == "tr0"
        r["text"] = "Another text for the same triplet id."
        lines[0] = json.dumps(r)
        expect = (1, "already in the project with another text")
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = state(existing)
    rc, out, err = run_import(capsys, str(src), "--project", str(existing))
    assert rc == 2 and "imported" not in out
    line = _one_error_line(err)
    assert line.startswith(f"error: {index}:{expect[0]}: ") and expect[1] in line, line
    assert state(existing) == before


def test_a_failure_while_copying_or_writing_removes_what_was_copied(
        tmp_path: Path, existing: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_folder(tmp_path / "src", n=3)
    before = state(existing)
    real = importer._read_again
    calls = [0]

    def flaky(*a: Any, **k: Any) -> Any:
        calls[0] += 1
        if calls[0] == 4:  # the fourth image "changed" after it was validated
            from workstation.types import InputError

            raise InputError(a[2], "image 'x' changed while it was being imported", a[3])
        return real(*a, **k)

    monkeypatch.setattr(importer, "_read_again", flaky)
    rc, _, err = run_import(capsys, str(src), "--project", str(existing), "--run-id", "second")
    assert rc == 2 and "changed while it was being imported" in _one_error_line(err)
    assert state(existing) == before and not (existing / "images" / "second").exists()
    monkeypatch.setattr(importer, "_read_again", real)

    def broken_add_dataset(self: Any, *a: Any, **k: Any) -> None:
        from workstation.types import WorkstationError

        raise WorkstationError("disk full (simulated)")

    monkeypatch.setattr(SamplesRepo, "add_dataset", broken_add_dataset)
    rc, _, err = run_import(capsys, str(src), "--project", str(existing), "--run-id", "second")
    assert rc == 2 and "disk full" in err
    assert state(existing) == before and not (existing / "images" / "second").exists()


def test_a_failed_import_into_a_new_folder_leaves_no_project(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    src = make_folder(tmp_path / "src", n=2)
    (src / "img" / "0_corr.png").write_bytes(b"")
    rc, _, err = run_import(capsys, str(src), "--project", str(tmp_path / "new"))
    assert rc == 2 and f"{src / 'index.jsonl'}:1:" in err and "empty" in err
    assert not (tmp_path / "new").exists()
    (src / "img" / "0_corr.png").unlink()
    _png(src / "img" / "0_corr.png", 10, 10, (1, 2, 3))
    rc, _, err = run_import(capsys, str(src), "--project", str(tmp_path / "new"), "--run-id", "bad id!")
    assert rc == 2 and "run id 'bad id!'" in err and not (tmp_path / "new").exists()


def test_another_folder_under_a_run_id_the_project_holds_is_refused_naming_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of an imported folder elsewhere (the same name and bytes: the same default run id)
    is another import, not the same one found complete: one line naming the run and the two
    folders, the project unchanged. The first folder again is the same import: done, exit 0."""
    import shutil

    a = make_folder(tmp_path / "a" / "triplets", n=2)
    b = tmp_path / "b" / "triplets"
    shutil.copytree(a, b)
    proj = tmp_path / "proj"
    rc, out, err = run_import(capsys, str(a), "--project", str(proj))
    assert rc == 0, err
    with Project.open(proj, read_only=True) as p:
        (run,) = p.samples.runs()
    before = state(proj)
    for extra in ([], ["--run-id", run["run_id"]]):
        rc, out, err = run_import(capsys, str(b), "--project", str(proj), *extra)
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 300, err
        assert f"run {run['run_id']!r} already exists" in err
        assert str(a.resolve()) in err and str(b.resolve()) in err, err
        assert state(proj) == before
    rc, out, _ = run_import(capsys, str(a), "--project", str(proj))
    assert rc == 0 and "already holds this import" in out and state(proj) == before
