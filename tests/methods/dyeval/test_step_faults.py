"""A DyEval step whose generation job fails (a full disk) leaves no job behind: not the job's
folder, not its inputs, not the project's record of it, not an empty run folder; the step says so
in one line, and the next step, with room again, makes the images in a new job."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.digest import project_digest, tree_digest
from tests.fs_faults import fill, tiny_disk
from workstation.cli import main
from workstation.store import Project


def _tree(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dyeval", "new-tree", "--project", str(proj), "--topic", "Material objects", "--set", "n_i=2",
                 "--set", "n_x=2", "--set", "d_max=2"]) == 0
    assert main(["dyeval", "step", "--project", str(proj)]) == 0  # its prompts written
    capsys.readouterr()


def _no_job_left(proj: Path) -> None:
    with Project.open(proj, read_only=True) as p:
        assert p.jobs.all() == [], "the failed job's record stayed"
        assert not [r for r in p.samples.run_ids() if r.startswith("dyeval-")]
    assert not (proj / "jobs").exists() or not any((proj / "jobs").iterdir()), list((proj / "jobs").iterdir())
    assert not [d for d in (proj / "images").iterdir() if d.name.startswith("dyeval-")], "an empty run folder stayed"


def test_a_full_disk_in_a_step_leaves_no_job_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tiny_disk(tmp_path / "disk", "48m") as disk:
        proj = disk / "p"
        _tree(proj, capsys)
        filler = fill(disk)
        with open(filler, "r+b") as fh:  # room for the database's writes, not for the images
            fh.truncate(os.path.getsize(filler) - 40_000)
        rc = main(["dyeval", "step", "--project", str(proj), "--confirm", "--size", "64"])
        err = capsys.readouterr().err
        filler.unlink()
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and len(lines[0]) < 300, err
        assert "out of disk space" in err and "the job was removed" in err and "run the step again" in err
        _no_job_left(proj)
        # room again: the next step makes the images in a new job, and finishes it
        assert main(["dyeval", "step", "--project", str(proj), "--size", "64"]) == 0
        assert "generated 4 image(s)" in capsys.readouterr().out


def test_a_failed_generation_job_of_a_step_is_removed_with_its_inputs(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Without a small disk: a folder stands where the job's first image goes, so the job fails."""
    proj = tmp_path / "p"
    _tree(proj, capsys)
    from workstation.methods.dyeval.runner import DyEvalRunner

    with Project.open(proj) as p:
        r = DyEvalRunner(p)
        r.confirm_prompts(next(iter(r.tree.nodes)))
        (spec,) = r.create_generation_jobs(size=64)
        from workstation.jobs.spec import generation_items, read_prompts, JobPaths

        paths = JobPaths(p.folder, spec.job_id)
        first = generation_items(spec, read_prompts(paths.inputs))[0]
        p.jobs.remove(spec.job_id)  # made again by the step, as a step makes it
        import shutil

        shutil.rmtree(paths.dir)
    obstacle = proj / first.image_path
    obstacle.mkdir(parents=True)
    (obstacle / "keep.txt").write_text("not the program's")
    rc = main(["dyeval", "step", "--project", str(proj), "--size", "64"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "the job was removed" in err, err
    with Project.open(proj, read_only=True) as p:
        assert p.jobs.all() == []
    assert not (proj / "jobs" / spec.job_id).exists()
    assert (obstacle / "keep.txt").read_text() == "not the program's"  # nothing of the user's removed


def test_a_full_disk_while_a_job_is_stored_leaves_no_job_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.jobs import spec as spec_mod

    proj = tmp_path / "p"
    _tree(proj, capsys)
    with Project.open(proj) as p:
        from workstation.methods.dyeval.runner import DyEvalRunner

        DyEvalRunner(p).confirm_prompts("n1")
    before = project_digest(proj)
    real = spec_mod.write_prompts

    def full(path: Path, prompts: object) -> None:
        real(path, prompts)  # type: ignore[arg-type]
        with open(path, "r+b") as fh:
            fh.truncate(10)  # half written when the disk filled
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spec_mod, "write_prompts", full)
    rc = main(["dyeval", "step", "--project", str(proj), "--size", "64"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert not (proj / "jobs").exists(), tree_digest(proj / "jobs")
    with Project.open(proj, read_only=True) as p:
        assert p.jobs.all() == []
    after = project_digest(proj)
    assert {k: v for k, v in after.items() if k != "tables"} == {k: v for k, v in before.items() if k != "tables"}
