"""The commands that change a project's samples or detections (import-sbuc, detect, merge, runs
remove, jobs resume of a detect job) leave the detection cache holding them, with the checker's
preparation, so that the window's next open maps both instead of scanning the database and
preparing again; with too few detections for the cache, or with it off, they read nothing more;
a cache folder that cannot be written costs a note, never the command's own work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.core.conftest import is_mapped, load_spatial, scanned_spatial
from tests.core.test_prepared_cache import _assert_same_verdicts, _kept, _prepared_here
from tests.core.test_runs_remove import _two_runs
from workstation.cli import main
from workstation.store import Project

FIXTURE = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "spatialbench_uc"
READY = "detection cache ready for the workstation's next open"


def _import(project: Path, run_id: str = "sd15_boxdiff") -> list[str]:
    return ["import-sbuc", str(FIXTURE / "sd15_boxdiff"), "--prompts",
            str(FIXTURE / "v1.0.1" / "prompts.jsonl"), "--project", str(project), "--run-id", run_id]


def _opens_from_the_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's load of `project` maps its detections and the checker's preparation, and
    they give the verdicts of a scan of the database."""
    ds = load_spatial(project)
    assert is_mapped(ds.detections.score) and is_mapped(ds.detections.x1)
    assert not _prepared_here(ds)  # mapped, not computed
    scanned = scanned_spatial(project, monkeypatch)
    assert ds.n == scanned.n and np.array_equal(ds.samples.sample_id, scanned.samples.sample_id)
    _assert_same_verdicts(project, ds, scanned)


def test_an_import_leaves_the_next_open_mapped_and_prepared(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p"
    assert main(_import(project)) == 0
    out = capsys.readouterr().out
    assert f"{READY}: 800 samples, 2,270 detections" in out
    (kept,) = _kept(cache_dir)
    assert (kept / "manifest.json").is_file()
    _opens_from_the_cache(project, monkeypatch)


def test_removing_a_run_prepares_the_next_open_of_what_is_left(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p"
    _two_runs(project)  # 8 samples each, made by jobs (the window's path: no cache prepared)
    load_spatial(project)  # an open of both runs: their entry
    assert main(["runs", "remove", "--project", str(project), "drop", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "removed run 'drop'" in out and f"{READY}: 8 samples" in out
    assert len(_kept(cache_dir)) == 1  # the entry of the samples left; the older one of the scope went
    _opens_from_the_cache(project, monkeypatch)


def test_detect_prepares_the_next_open_and_a_shard_does_not(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    gen = ["--suite", "builtin", "--pairs", "2", "--model", "procedural", "--seeds", "2"]
    det = ["--detector", "scene", "--perturbations", "none"]
    shards = []
    for i in (1, 2):
        shard = tmp_path / f"shard{i}"
        assert main(["generate", "--project", str(shard), *gen, "--shard", f"{i}/2"]) == 0
        assert main(["detect", "--project", str(shard), *det, "--shard", f"{i}/2"]) == 0
        shards.append(shard)
    assert READY not in capsys.readouterr().out  # a shard's project is merged, not opened
    assert not _kept(cache_dir)

    merged = tmp_path / "merged"
    assert main(["merge", "--project", str(merged), *map(str, shards)]) == 0
    assert f"{READY}: 16 samples" in capsys.readouterr().out
    _opens_from_the_cache(merged, monkeypatch)

    whole = tmp_path / "whole"
    assert main(["generate", "--project", str(whole), *gen]) == 0
    assert main(["detect", "--project", str(whole), *det]) == 0
    assert f"{READY}: 16 samples" in capsys.readouterr().out
    _opens_from_the_cache(whole, monkeypatch)


def test_a_resumed_detect_job_prepares_the_next_open(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p"
    assert main(["generate", "--project", str(project), "--suite", "builtin", "--pairs", "1", "--model",
                 "procedural", "--seeds", "2"]) == 0
    assert main(["detect", "--project", str(project), "--detector", "scene", "--perturbations", "none",
                 "--no-run"]) == 0
    assert READY not in capsys.readouterr().out and not _kept(cache_dir)  # nothing detected yet
    assert main(["jobs", "resume", "--project", str(project)]) == 0
    assert f"{READY}: 8 samples" in capsys.readouterr().out
    _opens_from_the_cache(project, monkeypatch)


@pytest.mark.parametrize("setting", ["off", "1000000"])
def test_with_the_cache_off_or_too_few_detections_nothing_more_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        setting: str) -> None:
    monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(tmp_path / "user-cache"))
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", setting)
    assert main(_import(tmp_path / "p")) == 0
    captured = capsys.readouterr()
    assert "imported run sd15_boxdiff" in captured.out
    assert READY not in captured.out and "detection cache" not in captured.err
    assert not (tmp_path / "user-cache").exists()


def test_a_cache_folder_that_cannot_be_written_costs_a_note_and_the_import_stands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(blocked))
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
    project = tmp_path / "p"
    assert main(_import(project)) == 0
    captured = capsys.readouterr()
    assert "imported run sd15_boxdiff" in captured.out and READY not in captured.out
    assert "the detection cache was not prepared for the workstation's next open" in captured.err
    assert str(project) in captured.err and "reads the database instead" in captured.err
    with Project.open(project, read_only=True) as p:
        assert p.samples.run_ids() == ["sd15_boxdiff"] and p.samples.count() == 800
    assert blocked.read_text() == "not a folder"


def test_an_import_whose_project_is_opened_elsewhere_meanwhile_still_succeeds(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.store import ProjectLocked

    real = Project.open

    def locked_when_read(folder: Path, *a: object, read_only: bool = False, **k: object) -> Project:
        if read_only:  # the window took the project between the import's commit and this read
            raise ProjectLocked(f"{folder} is open in another process")
        return real(folder, *a, read_only=read_only, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Project, "open", staticmethod(locked_when_read))
    project = tmp_path / "p"
    assert main(_import(project)) == 0
    captured = capsys.readouterr()
    assert "imported run sd15_boxdiff" in captured.out and READY not in captured.out
    assert not _kept(cache_dir)
    monkeypatch.setattr(Project, "open", real)
    with Project.open(project, read_only=True) as p:
        assert p.samples.run_ids() == ["sd15_boxdiff"] and p.samples.count() == 800


def test_an_interrupted_preparation_leaves_the_import_whole_and_no_entry(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.methods.spatial import checker

    def interrupted(ds: object) -> None:
        raise KeyboardInterrupt

    real = checker.prepare
    monkeypatch.setattr(checker, "prepare", interrupted)  # Ctrl+C while the checker prepares
    project = tmp_path / "p"
    assert main(_import(project)) == 0
    captured = capsys.readouterr()
    assert "imported run sd15_boxdiff" in captured.out and READY not in captured.out
    assert "(interrupted" in captured.err and "reads the database instead" in captured.err
    assert not _kept(cache_dir) and not list(cache_dir.glob("*/.tmp-*"))
    monkeypatch.setattr(checker, "prepare", real)
    with Project.open(project, read_only=True) as p:
        assert p.samples.run_ids() == ["sd15_boxdiff"] and p.samples.count() == 800
    ds = load_spatial(project)
    assert is_mapped(ds.detections.score)  # the detections' entry was whole before the interruption
    assert _prepared_here(ds)  # the checker's preparation was not: the next open prepares it



def test_an_open_from_the_cache_after_the_recorded_stabilities_change_gives_the_new_verdicts(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The recorded stabilities live in the spatial method's own table, outside what the cache
    keeps: an open that maps the detections and the preparation reads the stabilities as they
    are now, and its verdicts are a scan's."""
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.data import recorded_stability
    from workstation.methods.spatial.store import SpatialStore
    from workstation.methods.spatial.types import UNDECIDABLE

    project = tmp_path / "p"
    assert main(_import(project)) == 0
    capsys.readouterr()
    before = load_spatial(project)
    assert np.isfinite(recorded_stability(before)).sum() > 100  # the run recorded them
    with Project.open(project, read_only=True) as p:
        _, cfg = SpatialStore(p).active_config()
    cfg = cfg.replace(stability_enabled=True, consistency_threshold=0.5)
    first = evaluate(before, cfg)
    with Project.open(project) as p:  # every recorded stability 0: each decided sample unstable
        ids = before.samples.sample_id
        SpatialStore(p).set_stabilities(ids, np.where(np.isfinite(recorded_stability(before)), 0.0, np.nan))
    after = load_spatial(project)
    assert is_mapped(after.detections.score) and not _prepared_here(after)  # the kept entry, mapped
    assert np.array_equal(np.isfinite(recorded_stability(after)), np.isfinite(recorded_stability(before)))
    assert (recorded_stability(after)[np.isfinite(recorded_stability(after))] == 0.0).all()
    second = evaluate(after, cfg)
    changed = first.verdict != second.verdict
    assert changed.sum() > 10 and (second.verdict[changed] == UNDECIDABLE).all()
    scanned = scanned_spatial(project, monkeypatch)
    assert np.array_equal(evaluate(scanned, cfg).verdict, second.verdict)
    _assert_same_verdicts(project, after, scanned)
