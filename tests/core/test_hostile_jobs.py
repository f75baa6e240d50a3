"""Hostile job ids, merged shards, run removal and report folders: every id that becomes a path is
refused where it comes in, nothing outside the project is read, written or removed, and
`report --overwrite` replaces only a report this program wrote (`tests.hostile`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.digest import project_digest, tree_digest
from tests.hostile import Case, Place, assert_refused, cases_of
from workstation.cli import main
from workstation.store import Project

VICTIM = "../../sentinel"  # from PROJECT/jobs/: the sentinel folder beside the project


def _shard(place: Place, sql: str, params: list[object]) -> list[str]:
    """A copy of the project as a shard, with one job row changed by ``sql``, merged into the project."""
    assert place.project is not None
    shard = place.tmp / "shard"
    shutil.copytree(place.project, shard)
    with Project.open(shard) as p:
        p.con.execute(sql, params)
    return ["merge", "--project", str(place.project), str(shard)]


def _add_job(job_id: str, spec: str) -> tuple[str, list[object]]:
    return ("INSERT INTO jobs SELECT ?, kind, ?, status, created_at, updated_at, done, total, message FROM jobs LIMIT 1",
            [job_id, spec])


def _job_folder(place: Place, edit: "object") -> list[str]:
    """A shard's job folder (PROJECT/jobs/<id>) whose spec.json is changed, merged into the project."""
    assert place.project is not None
    shard = place.tmp / "shard"
    shutil.copytree(place.project, shard)
    (job,) = [d for d in (shard / "jobs").iterdir() if d.name.startswith("generate-")]
    spec = json.loads((job / "spec.json").read_text(encoding="utf-8"))
    (job / "spec.json").write_text(edit(spec) if callable(edit) else str(edit), encoding="utf-8")  # type: ignore[operator]
    return ["merge", "--project", str(place.project), str(job)]


def _chunk(place: Place, change: "object") -> list[str]:
    """A shard's generation job folder whose first chunk is rewritten by ``change(columns)``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert place.project is not None
    shard = place.tmp / "shard"
    shutil.copytree(place.project, shard)
    (job,) = [d for d in (shard / "jobs").iterdir() if d.name.startswith("generate-")]
    chunk = sorted((job / "chunks").glob("*.parquet"))[0]
    t = pq.read_table(chunk)
    cols = {n: t.column(n).to_pylist() for n in t.column_names}
    change(cols)  # type: ignore[operator]
    pq.write_table(pa.table(cols).replace_schema_metadata(t.schema.metadata), chunk)
    return ["merge", "--project", str(place.tmp / "new" / "p"), str(job)]


MERGES = [
    Case("merge-chunk-lacks-columns", lambda p: _chunk(p, lambda c: [c.pop(k) for k in ("seed", "run_id")]), None,
         None, ("missing",)),
    Case("merge-chunk-seed-negative", lambda p: _chunk(p, lambda c: c.__setitem__("seed", [-1] * len(c["seed"]))),
         None, None, ("seed",)),
    Case("merge-chunk-other-run", lambda p: _chunk(p, lambda c: c.__setitem__("run_id", ["x"] * len(c["run_id"]))),
         None, None, ("of run 'x'",)),
    Case("merge-chunk-width-nan", lambda p: _chunk(p, lambda c: c.__setitem__("width", [float("nan")] * len(c["width"]))),
         None, None, ("width",)),
    Case("merge-chunk-image-path-dotdot", lambda p: _chunk(p, lambda c: c.__setitem__(
        "image_path", ["../../sentinel/thesis.tex"] * len(c["image_path"]))), None, None, ("escapes",)),
    Case("merge-job-id-dotdot", lambda p: _shard(p, *_add_job(VICTIM, '{"job_id": "../../sentinel", "kind": "generate"}')),
         None, None, ("job id", "sentinel")),
    Case("merge-job-id-absolute", lambda p: _shard(p, *_add_job("/etc", '{"job_id": "/etc", "kind": "generate"}')),
         None, None, ("job id",)),
    Case("merge-job-spec-lacks-fields", lambda p: _shard(p, *_add_job("generate-x", "{}")), None, None,
         ("not a job spec", "lacks")),
    Case("merge-job-spec-a-list", lambda p: _shard(p, *_add_job("generate-x", "[1, 2]")), None, None,
         ("not a job spec",)),
    Case("merge-job-spec-other-id", lambda p: _shard(p, *_add_job("generate-x", '{"job_id": "generate-y", '
                                                                  '"kind": "generate"}')), None, None, ("generate-y",)),
    Case("merge-job-spec-deep", lambda p: _shard(p, *_add_job("generate-x", "[" * 200 + "]" * 200)), None, None,
         ("nested",)),
    Case("merge-run-id-dotdot", lambda p: _shard(p, "UPDATE runs SET run_id = '../../sentinel'", []), None, None,
         ("run id",)),
    Case("merge-sample-id-control", lambda p: _shard(p, "UPDATE samples SET sample_id = sample_id || chr(27) || '[2J'",
                                                     []), None, None, ("control character",)),
    Case("merge-job-folder-spec-dotdot", lambda p: _job_folder(p, lambda s: json.dumps({**s, "job_id": VICTIM})),
         "spec.json", None, ("job id",)),
    Case("merge-job-folder-spec-nan", lambda p: _job_folder(p, lambda s: json.dumps(s)[:-1] + ', "x": NaN}'),
         "spec.json", 1, ("NaN",)),
    Case("merge-job-folder-spec-wrong-type", lambda p: _job_folder(p, lambda s: json.dumps({**s, "seeds": "all"})),
         "spec.json", None, ("seeds",)),
]


def _jobs(place: Place, action: str, job_id: str) -> list[str]:
    return ["jobs", action, "--project", str(place.project), job_id]


JOBS = [
    Case("jobs-show-dotdot", lambda p: _jobs(p, "show", VICTIM), None, None, ("job id",)),
    Case("jobs-cancel-dotdot", lambda p: _jobs(p, "cancel", VICTIM), None, None, ("job id",)),
    Case("jobs-resume-dotdot", lambda p: _jobs(p, "resume", VICTIM), None, None, ("job id",)),
    Case("jobs-show-absolute", lambda p: _jobs(p, "show", str(p.sentinel)), None, None, ("job id",)),
    Case("jobs-cancel-newline", lambda p: _jobs(p, "cancel", "generate-x\n"), None, None, ("job id",)),
    Case("jobs-show-long", lambda p: _jobs(p, "show", "j" * 300), None, None, ("longer than 200",)),
    Case("jobs-show-unknown", lambda p: _jobs(p, "show", "nosuch"), None, None, ("nosuch",)),
    Case("runs-remove-unknown", lambda p: ["runs", "remove", "--project", str(p.project), "nosuch", "--yes"], None,
         None, ("nosuch",)),
]


def _report(place: Place, out: Path, *extra: str) -> list[str]:
    return ["report", "--project", str(place.project), "--out", str(out), "--overwrite", *extra]


def _link_to_report(place: Place) -> list[str]:
    assert main(["report", "--project", str(place.project), "--out", str(place.tmp / "real")]) == 0
    os.symlink(place.tmp / "real", place.tmp / "rep")
    return _report(place, place.tmp / "rep")


def _marker_link(place: Place) -> list[str]:
    folder = place.tmp / "other"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    os.symlink(place.tmp / "real-marker", folder / ".t2i-workstation-report")
    (place.tmp / "real-marker").write_text("", encoding="utf-8")
    return _report(place, folder)


REPORTS = [
    Case("report-overwrite-the-project", lambda p: _report(p, p.project), None, None, ("the project",)),  # type: ignore[arg-type]
    Case("report-overwrite-above-the-project", lambda p: _report(p, p.tmp), None, None, ("holds the project",)),
    Case("report-overwrite-unrelated-folder", lambda p: _report(p, p.sentinel), None, None,
         ("not a report this program wrote",)),
    Case("report-overwrite-through-a-link", _link_to_report, None, None, ("symbolic link",)),
    Case("report-overwrite-marker-is-a-link", _marker_link, None, None, ("not a report this program wrote",)),
    Case("report-out-a-file", lambda p: _report(p, p.sentinel / "thesis.tex"), None, None, ("is a file",)),
]

CASES = cases_of(MERGES, JOBS, REPORTS)


def test_enough_cases() -> None:
    assert len(CASES) >= 10


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated project: one run of 4 procedural images, its generation and detection jobs and
    their folders, evaluated (so that it can be reported)."""
    folder = tmp_path_factory.mktemp("gen") / "p"
    assert main(["generate", "--project", str(folder), "--suite", "builtin", "--pairs", "1", "--model", "procedural",
                 "--seeds", "1", "--width", "64", "--height", "64"]) == 0
    assert main(["detect", "--project", str(folder), "--detector", "scene", "--perturbations", "none"]) == 0
    assert main(["evaluate", "--project", str(folder)]) == 0
    return folder


@pytest.fixture
def place(tmp_path: Path, template: Path) -> Place:
    pl = Place(tmp_path)
    pl.project = tmp_path / "p"
    shutil.copytree(template, pl.project)
    return pl


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_job_input(case: Case, place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(case, place, capsys)


def _row(project: Path, job_id: str, spec: str, kind: str = "generate") -> None:
    """A job row as a project merged before job ids were checked may hold it."""
    with Project.open(project) as p:
        p.con.execute("INSERT INTO jobs SELECT ?, ?, ?, 'running', created_at, updated_at, done, total, message "
                      "FROM jobs LIMIT 1", [job_id, kind, spec])


def test_runs_remove_never_deletes_outside_the_project(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    """A job row ``../../sentinel`` of the removed run (from an old merge): the run goes, the job
    row goes, and the folder its id points to outside the project stays, named as not deleted."""
    assert place.project is not None
    with Project.open(place.project, read_only=True) as p:
        (run,) = p.samples.run_ids()
    _row(place.project, VICTIM, json.dumps({"job_id": VICTIM, "kind": "generate", "run_id": run}))
    sentinel = tree_digest(place.sentinel)
    capsys.readouterr()
    assert main(["runs", "remove", "--project", str(place.project), run, "--yes"]) == 0
    captured = capsys.readouterr()
    assert f"removed run {run!r}" in captured.out and "could not be deleted" in captured.err
    assert tree_digest(place.sentinel) == sentinel and (place.sentinel / "thesis.tex").is_file()
    with Project.open(place.project, read_only=True) as p:
        assert p.samples.run_ids() == [] and [j["kind"] for j in p.jobs.all()] == ["detect"]
    assert not [d for d in (place.project / "jobs").iterdir() if d.name.startswith("generate-")], \
        "the run's own job folder is removed"


def test_jobs_list_reads_rows_with_broken_specs(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    assert place.project is not None
    _row(place.project, VICTIM, json.dumps({"job_id": VICTIM, "kind": "generate"}))
    _row(place.project, "generate-lacks", '{"kind": "generate"}')
    _row(place.project, "generate-list", "[1]")
    before = project_digest(place.project)
    sentinel = tree_digest(place.sentinel)
    capsys.readouterr()
    assert main(["jobs", "list", "--project", str(place.project)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "../../sentinel" in out.out and "generate-lacks" in out.out
    assert out.out.count("unreadable spec") == 3
    assert project_digest(place.project) == before and tree_digest(place.sentinel) == sentinel
    # resume leaves the rows that name no job folder alone (and says so)
    assert main(["jobs", "resume", "--project", str(place.project)]) in (0, 2)
    assert "1 job row(s) with an id that names no job folder" in capsys.readouterr().err
    assert tree_digest(place.sentinel) == sentinel


def test_report_overwrite_replaces_its_own_report(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    out = place.tmp / "rep"
    assert main(["report", "--project", str(place.project), "--out", str(out)]) == 0
    assert (out / ".t2i-workstation-report").is_file()
    (out / "stale.txt").write_text("from before", encoding="utf-8")
    assert main(["report", "--project", str(place.project), "--out", str(out), "--overwrite"]) == 0
    assert (out / "index.html").is_file() and not (out / "stale.txt").exists()
    assert (out / ".t2i-workstation-report").is_file()
    inside = place.project / "reports" / "r1"  # a report inside the project folder is allowed
    assert main(["report", "--project", str(place.project), "--out", str(inside)]) == 0
    assert (inside / "index.html").is_file()


@pytest.mark.parametrize("provenance", [b"[1, 2]", b"[" * 5000 + b"]" * 5000, b'{"backend": [1], "x": NaN}'])
def test_a_merged_job_folder_with_a_hostile_provenance_file(place: Place, provenance: bytes,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The worker's provenance.json of a job folder from elsewhere is provenance only: one that
    cannot be read is left out, the job's samples are merged."""
    assert place.project is not None
    shard = place.tmp / "shard"
    shutil.copytree(place.project, shard)
    (job,) = [d for d in (shard / "jobs").iterdir() if d.name.startswith("generate-")]
    (job / "provenance.json").write_bytes(provenance)
    target = place.tmp / "new" / "p"
    assert main(["merge", "--project", str(target), str(job)]) == 0, capsys.readouterr().err
    with Project.open(target, read_only=True) as p:
        (run,) = p.samples.runs()
        assert run["samples"] == 4 and run["provenance"]["backend"] == {}
