"""`protobias import` killed (SIGKILL) at points drawn from fixed seeds — while copying an image
(half a file on disk), between the copies and the transaction, inside the transaction, after the
commit, right after a new project was made — and then run again: the same import completes, and
the project is the one a clean import makes (rows, image files), with nothing of the dead
import left behind."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.digest import dump_tables, tree_digest
from tests.methods.protobias.folders import make_folder
from tests.proc import Lines
from workstation.cli import main

ROOT = Path(__file__).resolve().parents[3]
N_TRIPLETS = 5  # 10 image copies
SEEDS = range(6)

# runs the import in a child process that kills itself (SIGKILL) at the point given
CHILD = r'''
import os, signal, sys
point, arg = sys.argv[1], int(sys.argv[2])

def die():
    print("DYING", point, arg, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

import workstation.methods.protobias.importer as importer
from workstation.store import SamplesRepo
from workstation.util.atomic import temporary_beside

if point == "copy":  # the arg-th image copy: half of its bytes written, then killed
    real_write = importer.atomic_write_bytes
    count = [0]

    def write(path, data, **kw):
        count[0] += 1
        if count[0] == arg:
            fd, _tmp = temporary_beside(path)  # the temporary file an atomic write makes
            os.write(fd, data[: len(data) // 2])
            die()
        real_write(path, data, **kw)

    importer.atomic_write_bytes = write
elif point == "copied":  # every copy made, before the transaction
    real_build = importer.Samples.build

    def build(*a, **k):
        die()

    importer.Samples.build = build
elif point == "transaction":  # inside the transaction: the run added, the samples not yet
    def add_dataset(self, *a, **k):
        die()

    SamplesRepo.add_dataset = add_dataset
elif point == "committed":  # the transaction committed, the command not finished
    real_import = importer.import_folder

    def import_folder(*a, **k):
        real_import(*a, **k)
        die()

    importer.import_folder = import_folder
elif point == "placed":  # the staging folder renamed into place, the transaction not committed
    from workstation.util import staging

    real_place = staging.Staging.place

    def place(self, files):
        real_place(self, files)
        die()

    staging.Staging.place = place
elif point == "unsettled":  # committed, the staging marker not yet removed
    from workstation.util import staging

    def settle(self):
        die()

    staging.Staging.settle = settle
elif point == "created":  # a new project made, nothing imported yet
    real_import = importer.import_folder

    def import_folder(*a, **k):
        die()

    importer.import_folder = import_folder

from workstation.cli import main
sys.exit(main(["protobias", "import", sys.argv[3], "--project", sys.argv[4]]))
'''


def kill_points(seed: int) -> list[tuple[str, int]]:
    """Two kill points drawn from ``seed``: each one is where a run of the same import dies before
    the import is run to its end."""
    rng = random.Random(seed)
    stages = ("copy", "copied", "transaction", "committed", "created")
    return [(stage, rng.randint(1, 2 * N_TRIPLETS) if stage == "copy" else 0)
            for stage in (rng.choice(stages) for _ in range(2))]


def _killed_run(folder: Path, project: Path, point: str, arg: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, point, str(arg), str(folder), str(project)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    with Lines(proc, timeout=120) as out:  # every read bounded by this deadline
        out.wait_for(lambda line: line.startswith("DYING"))
        proc.wait(60)
    assert proc.returncode == -signal.SIGKILL, out.tail()


def _state(project: Path) -> tuple[dict[str, object], dict[str, str]]:
    """The project's rows (times left out) and its image files."""
    tables = dump_tables(project)
    keep = {t: rows for t, rows in tables.items() if t in ("runs", "prompts", "samples", "label_events", "scores")}
    keep["runs"] = [r[:5] for r in tables["runs"]]  # run id, method, model, params, provenance (not the time)
    return keep, tree_digest(project / "images")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[dict[str, object], dict[str, str]]]:
    """The folder and the project a clean import of it makes."""
    root = tmp_path_factory.mktemp("ref")
    folder = make_folder(root / "folder", n=N_TRIPLETS)
    assert main(["protobias", "import", str(folder), "--project", str(root / "p")]) == 0
    return folder, _state(root / "p")


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_import_runs_again_to_the_same_project(seed: int, tmp_path: Path, reference: tuple[Path, object],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder, want = reference
    for into_new in (True, False):
        project = tmp_path / ("new" if into_new else "existing") / "p"
        if not into_new:
            assert main(["suite", "--method", "metalogic", "--set", "n_pairs=1", "--set", "objects=demo",
                         "--project", str(project)]) == 0
        for point, arg in kill_points(seed):
            _killed_run(folder, project, point, arg)
        capsys.readouterr()
        rc = main(["protobias", "import", str(folder), "--project", str(project)])
        out = capsys.readouterr()
        assert rc == 0, out.err
        assert "imported 5 triplets" in out.out or "already holds this import" in out.out
        tables, images = _state(project)
        ref_tables, ref_images = want  # type: ignore[misc]
        assert images == ref_images, "the image files differ from a clean import's (a dead import's files left?)"
        for t in ("runs", "samples"):
            assert tables[t] == ref_tables[t], t
        mine = {r[0] for r in tables["prompts"]}
        assert {r[0] for r in ref_tables["prompts"]} <= mine
        # and once more: the same import found complete, nothing changed
        rc = main(["protobias", "import", str(folder), "--project", str(project)])
        assert rc == 0 and "already holds this import" in capsys.readouterr().out
        assert _state(project) == (tables, images)


def test_the_kill_points_cover_every_stage() -> None:
    seen = {p for s in SEEDS for p, _ in kill_points(s)}
    assert seen == {"copy", "copied", "transaction", "committed", "created"}, seen


def _entries(images: Path) -> set[str]:
    return {p.relative_to(images).as_posix() for p in images.rglob("*")} if images.is_dir() else set()


@pytest.mark.parametrize(("point", "arg"), [("copy", 1), ("copy", 7), ("copied", 0), ("transaction", 0),
                                            ("placed", 0), ("unsettled", 0)])
def test_a_killed_import_never_run_again_leaves_no_orphan(point: str, arg: int, tmp_path: Path,
                                                          reference: tuple[Path, object]) -> None:
    """Killed and never run again: no image lies in the run's folder that no sample names (the
    copies wait in a hidden staging folder), and the next open of the project for writing clears
    what the dead import left; an import killed after its commit keeps every image."""
    from workstation.store import Project

    folder, want = reference
    project = tmp_path / "p"
    assert main(["suite", "--method", "metalogic", "--set", "n_pairs=1", "--set", "objects=demo",
                 "--project", str(project)]) == 0
    images = project / "images"
    before = _entries(images)
    _killed_run(folder, project, point, arg)
    with Project.open(project, read_only=True) as p:
        named = {r[0] for r in p.con.execute("SELECT image_path FROM samples").fetchall()}
        runs = [r for r in p.samples.run_ids() if r.startswith("import-")]
    visible = {e for e in _entries(images) - before if not any(part.startswith(".") for part in e.split("/"))}
    orphans = {e for e in visible if (images / e).is_file() and f"images/{e}" not in named}
    if point != "placed":  # killed between the rename and the commit: only files the marker names
        assert not orphans, f"{len(orphans)} orphan image(s) in the run's folder: {sorted(orphans)[:3]}"
    with Project.open(project):  # the next open for writing clears what the dead import left
        pass
    left = _entries(images) - before
    if runs:  # committed before it died: the run and all its images, no marker
        assert point == "unsettled"
        assert {f"images/{e}" for e in left if (images / e).is_file()} == named - {f"images/{e}" for e in before}
        assert tree_digest(images, skip=tuple(before)) == want[1]  # type: ignore[index]
    else:
        assert left == set(), f"left behind: {sorted(left)[:5]}"
