"""The temporary file of an atomic write (`workstation.util.atomic`) cannot be used to redirect the
write: it has an unpredictable name, is created exclusively and never through a link, gets a
normal file's mode before the rename, and the rename never goes through a link at the target.

A link is planted under the temporary name the old code used (``.NAME.<pid>.partial``), under
the name the new code draws next (the name generator forced to hand it out), and at the target;
the victim file the links point to never changes, and the export lands as a regular file or is
refused. The same for the other temporaries built by hand: a job's progress file and the hidden
folder a new project is imported into.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile import assert_one_line
from workstation.cli import main
from workstation.util import atomic
from workstation.util.atomic import TargetIsLink, TemporaryReplaced, atomic_path, atomic_write_bytes

VICTIM = "the victim: every number here took a year\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    f = tmp_path / "elsewhere" / "victim.txt"
    f.parent.mkdir()
    f.write_text(VICTIM, encoding="utf-8")
    return f


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """An output folder others can write to (where they plant their links)."""
    d = tmp_path / "shared"
    d.mkdir()
    return d


def _force_next_names(monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    """Make tempfile hand out ``names`` first (then random ones), as if they were drawn."""
    real = tempfile._get_candidate_names()  # type: ignore[attr-defined]

    def candidates() -> Iterator[str]:
        yield from names
        yield from real

    gen = candidates()

    class Names:
        def __iter__(self) -> "Names":
            return self

        def __next__(self) -> str:
            return next(gen)

    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: Names())


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def test_a_link_under_the_old_temporary_name_redirects_nothing(project: Path, shared: Path, victim: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = shared / "labels.csv"
    os.symlink(victim, shared / f".labels.csv.{os.getpid()}.partial")  # main() runs in this process
    assert main(["labels", "export", "--project", str(project), "--out", str(out)]) == 0
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert _regular(out) and out.read_text(encoding="utf-8").startswith("sample_id,")


def test_a_link_under_the_next_temporary_name_redirects_nothing(shared: Path, victim: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a planted name that is drawn is never opened through: the temporary file is created
    exclusively (O_EXCL, O_NOFOLLOW), so the next name is taken."""
    os.symlink(victim, shared / ".labels.csv.guessed.partial")
    os.symlink(shared / "nothing-yet", shared / ".labels.csv.dangling.partial")  # a link to a file not there
    _force_next_names(monkeypatch, ["guessed", "dangling"])
    atomic_write_bytes(shared / "labels.csv", b"the export\n")
    assert victim.read_text(encoding="utf-8") == VICTIM and not (shared / "nothing-yet").exists()
    assert _regular(shared / "labels.csv") and (shared / "labels.csv").read_bytes() == b"the export\n"
    # the planted links are left alone; nothing of ours is left beside them
    assert sorted(q.name for q in shared.iterdir()) == [".labels.csv.dangling.partial", ".labels.csv.guessed.partial",
                                                       "labels.csv"]


def test_the_same_through_atomic_path(shared: Path, victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.symlink(victim, shared / f".out.json.{os.getpid()}.partial")
    os.symlink(victim, shared / ".out.json.guessed.partial")
    _force_next_names(monkeypatch, ["guessed"])
    with atomic_path(shared / "out.json") as tmp:
        assert _regular(tmp) and tmp.stat().st_size == 0
        tmp.write_text("{}\n", encoding="utf-8")
    assert victim.read_text(encoding="utf-8") == VICTIM and (shared / "out.json").read_text() == "{}\n"


def test_temporary_names_are_unpredictable_and_recognisable(shared: Path) -> None:
    names = []
    for _ in range(2):
        with atomic_path(shared / "labels.csv") as tmp:
            names.append(tmp.name)
            tmp.write_text("x", encoding="utf-8")
    assert names[0] != names[1]
    for n in names:  # a killed write's leftover: a hidden file named after the target, ending .partial
        assert re.fullmatch(r"\.labels\.csv\.[A-Za-z0-9_]{6,}\.partial", n), n
        assert str(os.getpid()) not in n.split(".")[2]


def test_a_link_at_the_target_is_refused_not_followed(shared: Path, victim: Path) -> None:
    os.symlink(victim, shared / "labels.csv")
    with pytest.raises(TargetIsLink):
        atomic_write_bytes(shared / "labels.csv", b"the export\n")
    assert victim.read_text(encoding="utf-8") == VICTIM and (shared / "labels.csv").is_symlink()
    assert [q.name for q in shared.iterdir()] == ["labels.csv"]


def test_a_link_at_the_target_is_refused_on_the_command_line(project: Path, shared: Path, victim: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = shared / "labels.csv"
    os.symlink(victim, out)
    for extra in ([], ["--overwrite"]):
        capsys.readouterr()
        assert main(["labels", "export", "--project", str(project), "--out", str(out), *extra]) == 2
        assert_one_line(capsys.readouterr().err, str(out), None, ("symbolic link",))
    assert victim.read_text(encoding="utf-8") == VICTIM and out.is_symlink()


def test_a_link_that_appears_at_the_target_while_writing_is_refused(shared: Path, victim: Path) -> None:
    out = shared / "labels.csv"
    with pytest.raises(TargetIsLink):
        with atomic_path(out) as tmp:
            tmp.write_text("the export\n", encoding="utf-8")
            os.symlink(victim, out)
    assert victim.read_text(encoding="utf-8") == VICTIM and out.is_symlink()
    assert [q.name for q in shared.iterdir()] == ["labels.csv"]


def test_a_temporary_swapped_for_a_link_is_not_renamed_into_place(shared: Path, victim: Path) -> None:
    out = shared / "labels.csv"
    with pytest.raises(TemporaryReplaced):
        with atomic_path(out) as tmp:
            tmp.unlink()
            os.symlink(victim, tmp)
    assert not os.path.lexists(out) and victim.read_text(encoding="utf-8") == VICTIM
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_written_file_has_the_mode_of_a_new_file(shared: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        atomic_write_bytes(shared / "a.csv", b"x")
        with atomic_path(shared / "b.csv") as tmp:
            tmp.write_text("x", encoding="utf-8")
        with open(shared / "plain.csv", "w", encoding="utf-8") as fh:  # what open() makes
            fh.write("x")
    finally:
        os.umask(old)
    plain = (shared / "plain.csv").stat().st_mode & 0o777
    assert plain == 0o666 & ~umask
    assert (shared / "a.csv").stat().st_mode & 0o777 == plain
    assert (shared / "b.csv").stat().st_mode & 0o777 == plain


def test_replace_false_never_replaces(shared: Path) -> None:
    (shared / "a.csv").write_text("mine\n", encoding="utf-8")
    with pytest.raises(FileExistsError):
        atomic_write_bytes(shared / "a.csv", b"theirs\n", replace=False)
    assert (shared / "a.csv").read_text(encoding="utf-8") == "mine\n"
    assert [q.name for q in shared.iterdir()] == ["a.csv"]
    atomic_write_bytes(shared / "b.csv", b"new\n", replace=False)
    assert (shared / "b.csv").read_bytes() == b"new\n"


def test_a_jobs_progress_file_is_not_written_through_a_planted_link(tmp_path: Path, victim: Path) -> None:
    from workstation.jobs.progress import Progress, read_progress, write_progress

    job = tmp_path / "jobs" / "generate-x"
    job.mkdir(parents=True)
    os.symlink(victim, job / "progress.json.tmp")  # the temporary name the progress writer used
    write_progress(job / "progress.json", Progress(done=3, total=8))
    assert victim.read_text(encoding="utf-8") == VICTIM
    prog = read_progress(job / "progress.json")
    assert prog is not None and (prog.done, prog.total) == (3, 8) and _regular(job / "progress.json")


def test_a_planted_build_folder_does_not_take_an_import(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`import-sbuc` builds a new project in a hidden folder beside it; a link planted under the
    name it used (``.NAME.importing-<pid>``) does not send the project into the folder it points to."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "new"
    os.symlink(elsewhere, tmp_path / f".new.importing-{os.getpid()}")
    assert main(["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project", str(target)]) == 0
    assert list(elsewhere.iterdir()) == [], "nothing is built through the planted link"
    assert target.is_dir() and not target.is_symlink() and (target / "project.duckdb").is_file()
    assert (target.stat().st_mode & 0o777) == atomic.new_folder_mode()
