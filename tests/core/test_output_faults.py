"""Outputs that cannot be written — a read-only folder, a full disk — and new projects in a
read-only folder: one clear line, exit 2, nothing partial left, the project unchanged.

Real faults where the machine allows them (a tmpfs remounted read-only, a 4 MB tmpfs filled to
the last byte; both need root, see tests/fs_faults.py), and everywhere a full disk simulated at
the moment the file is flushed to disk (os.fsync raising ENOSPC).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.core.conftest import assert_one_clear_error, dump_tables
from tests.fs_faults import fill, tiny_disk, writable_then_read_only
from workstation.cli import main

# (name, argv builder given (project, output folder), needs labels)
OUTPUTS: list[tuple[str, Callable[[Path, Path], list[str]], bool]] = [
    ("report", lambda p, d: ["report", "--project", str(p), "--out", str(d / "report")], False),
    ("labels-export-csv", lambda p, d: ["labels", "export", "--project", str(p), "--out", str(d / "labels.csv")], True),
    ("labels-export-json", lambda p, d: ["labels", "export", "--project", str(p), "--out", str(d / "l.json")], True),
    ("labels-export-parquet", lambda p, d: ["labels", "export", "--project", str(p), "--out", str(d / "l.parquet")],
     True),
    ("export-sbuc", lambda p, d: ["export-sbuc", "--project", str(p), "--run", "sd15_boxdiff",
                                  "--out", str(d / "per_sample.jsonl")], False),
    ("calibrate", lambda p, d: ["calibrate", "--project", str(p), "--out", str(d / "cal.json")], True),
    ("calibrate-apply", lambda p, d: ["calibrate", "--project", str(p), "--out", str(d / "cal.json"), "--apply"], True),
    ("audit-sample", lambda p, d: ["audit-sample", "--project", str(p), "--size", "20", "--seed", "1",
                                   "--out", str(d / "audit.csv")], False),
    ("audit-metrics", lambda p, d: ["audit-metrics", "--project", str(p), "--out", str(d / "m.json")], True),
]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(argv)
    return rc, capsys.readouterr().err


def _all_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize(("name", "argv", "labels"), OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_output_into_a_read_only_folder(name: str, argv: Callable[[Path, Path], list[str]], labels: bool,
                                        project: Path, labelled_project: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    proj = labelled_project if labels else project
    before = dump_tables(proj)
    with writable_then_read_only(tmp_path / "ro") as make_read_only:
        out_dir = tmp_path / "ro"
        make_read_only()
        rc, err = _run(argv(proj, out_dir), capsys)
        assert rc == 2, err
        assert_one_clear_error(err, None, None, "cannot write")
        assert "read-only" in err or "permission denied" in err, err
        assert _all_files(out_dir) == []
    assert dump_tables(proj) == before, "a refused output must not change the project (calibrate --apply, audit sets)"


@pytest.mark.parametrize(("name", "argv", "labels"), OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_output_on_a_full_disk(name: str, argv: Callable[[Path, Path], list[str]], labels: bool,
                               project: Path, labelled_project: Path, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    proj = labelled_project if labels else project
    before = dump_tables(proj)
    with tiny_disk(tmp_path / "disk", "4m") as disk:
        filler = fill(disk)
        rc, err = _run(argv(proj, disk / "out"), capsys)
        assert rc == 2, err
        assert_one_clear_error(err, None, None, "the disk is full")
        assert _all_files(disk) == [filler.name], "nothing partial (no 0-byte .partial file) is left"
    assert dump_tables(proj) == before


@pytest.mark.parametrize(("name", "argv", "labels"), OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_output_when_the_flush_fails_with_a_full_disk(name: str, argv: Callable[[Path, Path], list[str]],
                                                      labels: bool, project: Path, labelled_project: Path,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The same on any machine: the disk fills up between writing and flushing the file."""
    proj = labelled_project if labels else project
    before = dump_tables(proj)
    out_dir = tmp_path / "out"

    def no_space(*a: object, **k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    if name == "report":  # the report's files are written into a temporary folder, then renamed
        import workstation.methods.spatial.report as reports

        monkeypatch.setattr(reports, "write_csv", no_space)
    else:  # every other output is flushed by util.atomic before it is renamed into place
        monkeypatch.setattr(os, "fsync", no_space)
    rc, err = _run(argv(proj, out_dir), capsys)
    monkeypatch.undo()
    assert rc == 2, err
    assert_one_clear_error(err, None, None, "the disk is full")
    assert not out_dir.exists() or _all_files(out_dir) == [], _all_files(out_dir)
    assert dump_tables(proj) == before


def test_a_new_project_in_a_read_only_folder(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with writable_then_read_only(tmp_path / "ro") as make_read_only:
        make_read_only()
        for argv in (["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project",
                      str(tmp_path / "ro" / "new")],
                     ["generate", "--project", str(tmp_path / "ro" / "gen"), "--model", "procedural", "--no-run"],
                     ["demo", "--project", str(tmp_path / "ro" / "demo"), "--no-gui", "--pairs", "1", "--seeds", "1"]):
            rc, err = _run(argv, capsys)
            assert rc == 2, err
            assert_one_clear_error(err, None, None)
            assert "read-only" in err or "permission denied" in err, err
        assert _all_files(tmp_path / "ro") == []


def test_a_project_on_a_full_disk(tmp_path: Path, imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """evaluate / labels import when the project's own disk is full: one line; after space is
    freed the project is as it was and works."""
    import shutil

    with tiny_disk(tmp_path / "disk", "16m") as disk:
        proj = disk / "project"
        shutil.copytree(imported, proj)
        before = dump_tables(proj)
        labels = tmp_path / "labels.json"
        labels.write_text('[{"sample_id": "sd15_boxdiff_v1_000000_seed0000", "human_verdict": "PASS"}]')
        filler = fill(disk)
        for argv in (["evaluate", "--project", str(proj), "--config", str(_flat_config(tmp_path))],
                     ["labels", "import", str(labels), "--project", str(proj)]):
            rc, err = _run(argv, capsys)
            assert rc == 2, err
            assert_one_clear_error(err, None, None, "disk is full")
        filler.unlink()
        assert dump_tables(proj) == before
        rc, err = _run(["labels", "import", str(labels), "--project", str(proj)], capsys)
        assert rc == 0, err


def _flat_config(tmp_path: Path) -> Path:
    f = tmp_path / "narrow.yaml"
    f.write_text("name: narrow\nmargin: 0.03\n")
    return f


class _FullAt:
    """A stand-in for a file writer whose ``n``-th call finds the disk full."""

    def __init__(self, real: Callable[..., None], n: int) -> None:
        self.real, self.n, self.calls = real, n, 0

    def __call__(self, *a: object, **k: object) -> None:
        self.calls += 1
        if self.calls == self.n:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.real(*a, **k)


def test_a_full_disk_during_a_generation_batch_leaves_no_partial_images(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker writes a batch's images, then its chunk; when the disk fills in the middle of the
    second batch, the images of that batch (named by no chunk) are removed: what is on disk is what
    the chunks name, and a resumed job makes the rest."""
    from workstation.jobs import work
    from workstation.jobs.chunks import chunk_files, read_chunk
    from workstation.jobs.spec import JobPaths, create_generate_job
    from workstation.methods.spatial.suite import spatial_suite
    from workstation.store import Project

    with Project.create(tmp_path / "p") as p:
        spec = create_generate_job(p, spatial_suite(2), seeds=[0], params={"width": 64, "height": 64}, batch_size=4)
        paths = JobPaths(p.folder, spec.job_id)
    monkeypatch.setattr(work, "write_bytes_atomic", _FullAt(work.write_bytes_atomic, 7))  # 3rd image of batch 2
    with pytest.raises(OSError):
        for _ in work.iter_generate(paths, spec, lambda line: None, 0.0):
            pass
    named = {rel for c in chunk_files(paths) for rel in read_chunk(c)[0]["image_path"]}
    on_disk = {f.relative_to(tmp_path / "p").as_posix() for f in (tmp_path / "p" / "images").rglob("*") if f.is_file()}
    assert len(named) == 4 and on_disk == named, sorted(on_disk - named)


def test_a_full_disk_during_an_inline_render_leaves_no_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from tests.digest import project_digest
    from workstation.jobs import chunks
    from workstation.methods.dyeval.config import DyEvalConfig
    from workstation.methods.dyeval.runner import DyEvalRunner
    from workstation.store import Project

    with Project.create(tmp_path / "p") as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=2), topics=["Material objects"])
        r.run_automatic(("write",), confirm=True)
        assert r.tree.generation_requests()
    before = project_digest(tmp_path / "p")
    monkeypatch.setattr(chunks, "write_bytes_atomic", _FullAt(chunks.write_bytes_atomic, 3))
    with Project.open(tmp_path / "p") as p:
        r = DyEvalRunner(p)
        with pytest.raises(OSError):
            r.render_inline(size=64)
    assert project_digest(tmp_path / "p") == before
