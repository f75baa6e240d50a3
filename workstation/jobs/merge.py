"""Merge shard projects (or shard job folders) made on other machines into one project.

A lab spreads one job over machines with ``--shard i/n``; each machine fills its own project
folder. ``merge_into`` brings them together: runs, prompts, samples (with their images and
ground truth), detections and the job history. Every source lands in one transaction.

* A sample id already in the target with the same run, prompt, seed, size and image bytes, and
  the same values in the methods' own tables of samples (spatial's recorded stability: the
  ``merge_samples`` hook), is the same sample: it is skipped (detections of (detector, variant)
  groups the target lacks are still added). What the methods keep of the new samples is copied
  by the same hook.
* The same sample id with different content is an error naming both places; nothing of that
  source is kept.
* A run present in both must have the same method, model and parameters (the machines'
  provenance may differ).

A source may also be a job folder (``PROJECT/jobs/<job_id>`` with ``spec.json``): its chunk
files are ingested as the project that ran it would have, its images copied from that project.
Labels, verdicts and audit sets of the sources are not merged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..types import WorkstationError
from .chunks import pending_chunks
from .ingest import copy_image, file_sha256, ingest_job_folder, remove_copied
from .spec import JobPaths

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project


@dataclass
class MergeReport:
    sources: int = 0
    runs_added: int = 0
    samples_added: int = 0
    samples_identical: int = 0
    detections_added: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        s = (f"merged {self.sources} source(s): {self.samples_added} new sample(s), "
             f"{self.samples_identical} identical skipped, {self.detections_added} detection(s), "
             f"{self.runs_added} new run(s)")
        return s + "".join(f"\nwarning: {w}" for w in self.warnings)


_SAMPLE_COLS = ("sample_id", "run_id", "prompt_id", "seed", "image_path", "width", "height",
                "has_secondary", "has_perturbed", "truth")

#: what the methods keep of samples in their own tables, merged (`methods.merge_samples`):
#: ``(target, source, new_ids, same_ids) -> [(sample_id, what differs), ...]`` copies the rows of
#: the new samples and says which identical ones differ there
MergeSamples = Callable[["Project", "Project", list[str], list[str]], list[tuple[str, str]]]
_DET_COLS = ("sample_id", "source", "detector", "variant", "label", "score", "x1", "y1", "x2", "y2")


def _open_source(folder: Path) -> "Project":
    from ..store import Project, ProjectLocked

    try:
        return Project.open(folder, read_only=True)
    except ProjectLocked:
        return Project.open_snapshot(folder)


def _rows(project: "Project", sql: str, cols: Sequence[str], params: Any = None) -> dict[str, list[Any]]:
    rows = project.con.execute(sql, params).fetchall() if params is not None else project.con.execute(sql).fetchall()
    return {c: [r[i] for r in rows] for i, c in enumerate(cols)}


def _same_run(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["method"] == b["method"] and a["model"] == b["model"] and a["params"] == b["params"]


def _merge_project(target: "Project", folder: Path, report: MergeReport,
                   merge_samples: MergeSamples | None = None) -> None:
    import pyarrow as pa

    from ..dataset import Dataset, Detections, Prompts, Samples

    src = _open_source(folder)
    copied: list[Path] = []
    try:
        jobs_dir = folder / "jobs"
        if jobs_dir.is_dir():
            for jd in sorted(p for p in jobs_dir.iterdir() if (p / "spec.json").is_file()):
                n = len(pending_chunks(JobPaths.of_dir(jd)))
                if n:
                    report.warnings.append(
                        f"{jd} has {n} finished chunk(s) its project has not ingested; run "
                        f"`jobs resume --project {folder}` there first, or merge that job folder too")
        t_runs = {r["run_id"]: r for r in target.samples.runs()}
        s_cols = _rows(src, f"SELECT {', '.join(_SAMPLE_COLS)} FROM samples ORDER BY ord", _SAMPLE_COLS)
        ids = s_cols["sample_id"]
        with target.transaction():
            for r in src.samples.runs():
                old = t_runs.get(r["run_id"])
                if old is None:
                    target.samples.add_run(r["run_id"], method=r["method"], model=r["model"], params=r["params"],
                                           provenance={**(r["provenance"] or {}), "merged_from": str(folder)},
                                           source=r["source"] or f"merged from {folder}")
                    report.runs_added += 1
                elif not _same_run(old, r):
                    raise WorkstationError(
                        f"run {r['run_id']!r} has other settings in {folder} than in {target.folder} "
                        "(method, model or parameters differ); these are not shards of one job")
            target.samples.add_prompts(src.samples.load_prompts())
            # samples already in the target
            target.con.register("_merge_ids", pa.table({"sample_id": list(ids)}))
            try:
                t_cols = _rows(target, f"SELECT {', '.join('s.' + c for c in _SAMPLE_COLS)} FROM samples s "
                               "JOIN _merge_ids m USING (sample_id)", _SAMPLE_COLS)
            finally:
                target.con.unregister("_merge_ids")
            t_index = {sid: i for i, sid in enumerate(t_cols["sample_id"])}
            new_rows, same_ids = [], []
            for i, sid in enumerate(ids):
                j = t_index.get(sid)
                if j is None:
                    new_rows.append(i)
                    continue
                diff = [c for c in ("run_id", "prompt_id", "seed", "width", "height")
                        if s_cols[c][i] != t_cols[c][j]]
                if not diff:
                    a, b = folder / (s_cols["image_path"][i] or ""), target.folder / (t_cols["image_path"][j] or "")
                    if s_cols["image_path"][i] and t_cols["image_path"][j] and a.is_file() and b.is_file() \
                            and file_sha256(a) != file_sha256(b):
                        diff.append("image bytes")
                if diff:
                    raise WorkstationError(
                        f"sample {sid!r} is in both {folder} and {target.folder} with different "
                        f"{', '.join(diff)}; duplicate sample ids across shards cannot be merged")
                same_ids.append(sid)
            if merge_samples is not None:
                differ = merge_samples(target, src, [ids[i] for i in new_rows], same_ids)
                if differ:
                    sid, what = differ[0]
                    raise WorkstationError(
                        f"sample {sid!r} is in both {folder} and {target.folder} with different "
                        f"{what}; duplicate sample ids across shards cannot be merged")
            report.samples_identical += len(same_ids)
            # new samples: images, rows, truth
            if new_rows:
                for i in new_rows:
                    if s_cols["image_path"][i]:
                        copy_image(folder, target.folder, s_cols["image_path"][i], copied)
                take = lambda c, dt: np.array([s_cols[c][i] for i in new_rows], dtype=dt)  # noqa: E731
                samples = Samples(
                    sample_id=take("sample_id", object), run_id=take("run_id", object),
                    prompt_id=take("prompt_id", object), seed=take("seed", np.int64),
                    width=take("width", np.float64), height=take("height", np.float64),
                    image_path=np.array([s_cols["image_path"][i] or "" for i in new_rows], dtype=object),
                    has_secondary=np.array([bool(s_cols["has_secondary"][i]) for i in new_rows]),
                    has_perturbed=np.array([bool(s_cols["has_perturbed"][i]) for i in new_rows]))
                target.samples.add_dataset(Dataset(samples, Detections.empty(), Prompts.empty()),
                                           truth=[s_cols["truth"][i] for i in new_rows])
                report.samples_added += len(new_rows)
            # detections: all of the new samples; of identical ones, the groups the target lacks
            d = src.con.execute(f"SELECT {', '.join(_DET_COLS)} FROM detections").to_arrow_table()
            if d.num_rows:
                target.con.register("_merge_det", d)
                try:
                    before_row = target.con.execute("SELECT count(*) FROM detections").fetchone()
                    assert before_row is not None
                    before = before_row[0]
                    target.con.execute(
                        f"INSERT INTO detections ({', '.join(_DET_COLS)}) "
                        f"SELECT {', '.join('m.' + c for c in _DET_COLS)} FROM _merge_det m "
                        "WHERE NOT EXISTS (SELECT 1 FROM detections t WHERE t.sample_id = m.sample_id "
                        "AND t.detector IS NOT DISTINCT FROM m.detector AND t.variant IS NOT DISTINCT FROM m.variant)")
                    after_row = target.con.execute("SELECT count(*) FROM detections").fetchone()
                    assert after_row is not None
                    after = after_row[0]
                    report.detections_added += int(after - before)
                finally:
                    target.con.unregister("_merge_det")
            if same_ids:
                same_set = set(same_ids)
                flags = [(sid, bool(s_cols["has_secondary"][i]), bool(s_cols["has_perturbed"][i]))
                         for i, sid in enumerate(ids) if sid in same_set]
                target.con.register("_merge_flags", pa.table({
                    "sample_id": [f[0] for f in flags], "sec": [f[1] for f in flags], "pert": [f[2] for f in flags]}))
                try:
                    target.con.execute(
                        "UPDATE samples SET has_secondary = coalesce(samples.has_secondary, false) OR f.sec, "
                        "has_perturbed = coalesce(samples.has_perturbed, false) OR f.pert "
                        "FROM _merge_flags f WHERE samples.sample_id = f.sample_id")
                finally:
                    target.con.unregister("_merge_flags")
            # job history
            known = {job["job_id"] for job in target.jobs.all()}
            for job in src.jobs.all():
                if job["job_id"] not in known:
                    target.jobs.record(job["job_id"], job["kind"], job["spec"], status=job["status"] or "",
                                       done=int(job["done"] or 0), total=int(job["total"] or 0),
                                       message=f"merged from {folder}"
                                       + (f": {job['message']}" if job["message"] else ""))
    except BaseException:
        remove_copied(copied)
        raise
    finally:
        src.close()


def source_kind(folder: Path, target_folder: Path | None = None) -> str:
    """'project' or 'job' for a merge source; WorkstationError for anything else."""
    if not folder.is_dir():
        raise WorkstationError(f"{folder} is not a folder (expected a project folder or a job folder)")
    if target_folder is not None and target_folder.exists() and folder.resolve() == target_folder.resolve():
        raise WorkstationError(f"{folder} is the target project itself")
    if (folder / "project.duckdb").is_file():
        return "project"
    if (folder / "spec.json").is_file():
        return "job"
    raise WorkstationError(f"{folder} is neither a project folder (project.duckdb) nor a job folder (spec.json)")


def _source_images(folder: Path, kind: str) -> tuple[Path, list[tuple[str, str]]]:
    """(image root, [(sample id, image path)]) of a merge source, read without writing anything."""
    from .chunks import chunk_files
    from .spec import load_spec

    if kind == "project":
        src = _open_source(folder)
        try:
            rows = src.con.execute("SELECT sample_id, image_path FROM samples WHERE coalesce(image_path, '') <> '' "
                                   "ORDER BY ord").fetchall()
            check_source_ids(src, folder)
            check_source_jobs(src, folder)
        finally:
            src.close()
        return folder, [(str(a), str(b)) for a, b in rows]
    from .ingest import check_chunk

    paths = JobPaths.of_dir(folder)
    spec = load_spec(paths)
    out: list[tuple[str, str]] = []
    for chunk in chunk_files(paths):  # every chunk of a job folder from elsewhere, every cell checked
        cols, _items = check_chunk(chunk, spec)
        if spec.kind == "generate":
            for sid, rel in zip(cols.get("sample_id", []), cols.get("image_path", [])):
                if rel:
                    out.append((str(sid), str(rel)))
    return paths.project, out


def unfinished_jobs(folder: Path, kind: str) -> list[str]:
    """The jobs of a merge source that have not finished, one line each (job id, state, its message).

    A project's jobs are read from its jobs table; a job folder's state from its progress file.
    A job whose process was killed (``scancel``, a node lost) keeps the state it had then."""
    from .progress import DONE, read_progress

    def line(job_id: str, state: str, message: str) -> str:
        first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
        return f"job {job_id} is {state or 'not started'}" + (f" ({first})" if first else "")

    if kind == "project":
        src = _open_source(folder)
        try:
            jobs = src.jobs.all()
        finally:
            src.close()
        return [line(j["job_id"], str(j["status"] or ""), str(j["message"] or "")) for j in jobs
                if j["status"] != DONE]
    paths = JobPaths.of_dir(folder)
    p = read_progress(paths.progress)
    if p is not None and p.state == DONE:
        return []
    return [line(folder.name, p.state if p is not None else "", (p.error or p.message) if p is not None else "")]


def check_source_ids(src: "Project", folder: Path) -> None:
    """The ids a shard project brings along are checked before anything is copied: run ids name
    image folders and job ids (`check_run_id`), sample and prompt ids end up in file names, CSV
    cells and terminals (`util.ids.check_id`: no control characters)."""
    from ..util.ids import check_id
    from .spec import check_run_id

    for (rid,) in src.con.execute("SELECT run_id FROM runs").fetchall():
        try:
            check_run_id(rid)
        except WorkstationError as e:
            raise WorkstationError(f"{folder}: {e}") from None
    for table, col in (("samples", "sample_id"), ("samples", "run_id"), ("prompts", "prompt_id")):
        for (v,) in src.con.execute(f"SELECT DISTINCT {col} FROM {table}").fetchall():
            try:
                check_id(v, col)
            except ValueError as e:
                raise WorkstationError(f"{folder}: {e}") from None


def check_source_jobs(src: "Project", folder: Path) -> None:
    """Every job row of a shard project is checked before it is copied: its id must name a folder
    ``jobs/<job_id>/`` (no ``..``, no separator: the id becomes a path in the target) and its spec
    must be a job spec of that id, so that nothing later builds a path from it or fails on it."""
    from .spec import JobSpec, check_job_id

    rows = src.con.execute("SELECT job_id, kind, spec FROM jobs ORDER BY created_at").fetchall()
    for job_id, kind, spec_text in rows:
        where = f"{folder}: job {ascii(str(job_id))[:60]}"
        try:
            check_job_id(job_id)
        except WorkstationError as e:
            raise WorkstationError(f"{where}: {e}; a shard's jobs are not merged from ids that are paths") from None
        try:
            from ..util.jsonsafe import JSONInputError, loads_strict

            spec = JobSpec.from_dict(loads_strict(spec_text or "{}"))
        except (WorkstationError, JSONInputError) as e:
            raise WorkstationError(f"{where}: its spec is not a job spec ({' '.join(str(e).split())[:100]})") from None
        if spec.job_id != job_id or spec.kind != kind:
            raise WorkstationError(f"{where}: its spec is of job {spec.job_id!r} ({spec.kind}), not of this row")


def preflight(target_folder: Path, sources: Sequence[str | Path],
              check_images: bool = True, require_done: bool = False) -> list[tuple[Path, str]]:
    """Check every merge source before anything is written: its kind, and every image path it
    would copy (relative, inside its folder, no links out, a regular file that decodes as an
    image within `util.images`' limits, no link below the target). With ``require_done`` a source
    with a job that has not finished (failed, cancelled, killed while running) is refused: its
    share of the work is incomplete. Returns (folder, kind) pairs."""
    from ..util.images import BadImage, check_image
    from ..util.paths import UnsafePath, check_relative, source_file, target_file

    out: list[tuple[Path, str]] = []
    for s in sources:
        folder = Path(s)
        kind = source_kind(folder, target_folder)
        if require_done:
            unfinished = unfinished_jobs(folder, kind)
            if unfinished:
                raise WorkstationError(
                    f"{folder} is not finished: " + "; ".join(unfinished)
                    + f". Finish it first (`python main.py jobs resume --project {folder}`, or run its shard "
                    "again), then merge")
        root, images = _source_images(folder, kind)
        for sid, rel in images:
            where = f"{folder}: sample {sid!r}"
            try:
                check_relative(rel, "image path")
                if target_folder.exists():
                    target_file(target_folder, rel)
                real = source_file(root, rel)
            except FileNotFoundError:
                raise WorkstationError(f"{where}: image {rel!r} is missing from {root}") from None
            except UnsafePath as e:
                raise WorkstationError(f"{where}: {e}") from None
            if check_images:
                try:
                    check_image(real)
                except BadImage as e:
                    raise WorkstationError(f"{where}: image {rel!r} {e}") from None
        out.append((folder, kind))
    return out


def merge_into(target: "Project", sources: Sequence[str | Path],
               on_source: Callable[[int, int, str], None] | None = None,
               checked: list[tuple[Path, str]] | None = None,
               merge_samples: MergeSamples | None = None) -> MergeReport:
    """Merge shard projects / job folders into ``target``, one transaction per source.

    Every source is checked first (`preflight`, unless its result is given as ``checked``);
    nothing is written when one is bad. ``merge_samples`` merges what the methods keep of a
    shard project's samples in their own tables (the command's: `methods.merge_samples`)."""
    report = MergeReport()
    if checked is None:
        checked = preflight(target.folder, sources)
    for k, (folder, kind) in enumerate(checked):
        if on_source is not None:
            on_source(k, len(checked), str(folder))
        if kind == "project":
            _merge_project(target, folder, report, merge_samples)
        else:
            r = ingest_job_folder(target, folder)
            report.samples_added += r.samples
            report.samples_identical += r.skipped
            report.detections_added += r.detections
        report.sources += 1
    return report
