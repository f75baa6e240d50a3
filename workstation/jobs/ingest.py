"""Ingest finished chunk files of a job into the project (in the process that holds it).

Each chunk lands in one transaction and is then listed in ``ingested.txt``. Ingesting is
idempotent, so a crash between the commit and that listing only means the chunk is read again:

* generation chunks add the run (with the worker's provenance) if it is not there yet, and the
  samples the project does not hold yet — a sample id already present is skipped;
* detection chunks replace, for each sample of the chunk, the rows of exactly the
  (detector, variant) groups the job computes, and set the samples' ``has_secondary`` /
  ``has_perturbed`` flags.

Chunks of another project's job folder (merge) carry their images along: ``src_root`` is that
project's folder; an image already in this project with other bytes is an error.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dataset import Dataset, Detections, Prompts, Samples
from ..types import ORIGINAL_NAME, PRIMARY, WorkstationError
from ..util.paths import remove_made
from .chunks import mark_ingested, pending_chunks, read_chunk
from .spec import JobPaths, JobSpec, append_log, load_spec, read_prompts

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project


@dataclass
class IngestResult:
    chunks: int = 0
    items: int = 0
    samples: int = 0  # new samples
    skipped: int = 0  # samples the project already held
    detections: int = 0
    scores: int = 0

    def __iadd__(self, o: "IngestResult") -> "IngestResult":
        self.chunks += o.chunks
        self.items += o.items
        self.samples += o.samples
        self.skipped += o.skipped
        self.detections += o.detections
        self.scores += o.scores
        return self


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def copy_image(src_root: Path, dst_root: Path, rel: str, copied: list[Path]) -> None:
    """Copy one image into this project; identical files are left alone, different ones are an error.

    ``rel`` is checked before anything is touched: relative, no ``..``, no link out of
    ``src_root`` (a link is followed only inside it), no link below ``dst_root`` (nothing is
    written through one), and the source is a regular file. (The images themselves are checked
    by `jobs.merge.preflight` before a merge starts.) Every file and folder made is listed in
    ``copied`` (outermost folder first) so that a failed merge can remove them."""
    from ..util.paths import UnsafePath, source_file, target_file

    try:
        dst = target_file(dst_root, rel)
        src = source_file(src_root, rel)
    except FileNotFoundError:
        raise WorkstationError(f"image {src_root / rel} is missing; cannot merge its sample") from None
    except UnsafePath as e:
        raise WorkstationError(f"{src_root}: {e}") from None
    if dst.exists():
        if file_sha256(src) != file_sha256(dst):
            raise WorkstationError(f"image {rel} differs between {src_root} and {dst_root}")
        return
    try:
        for parent in reversed(dst.parents):
            if not parent.exists():
                parent.mkdir()
                copied.append(parent)
        shutil.copyfile(src, dst)
    except OSError as e:
        dst.unlink(missing_ok=True)
        raise WorkstationError(f"cannot copy {src} to {dst}: {e.strerror or e}") from e
    copied.append(dst)


def remove_copied(copied: list[Path]) -> None:
    """Undo `copy_image`: the files, then the folders it made (innermost first)."""
    remove_made(copied)


MAX_PROVENANCE_FILE_BYTES = 4 * 1024 * 1024


def _provenance(paths: JobPaths) -> dict[str, Any]:
    """The worker's provenance.json (strict JSON, size-capped; {} when it is missing or unreadable:
    a job folder from elsewhere may hold anything)."""
    from ..types import InputError
    from ..util.jsonsafe import loads_strict
    from ..util.textio import read_bytes_capped

    try:
        prov = loads_strict(read_bytes_capped(paths.provenance, MAX_PROVENANCE_FILE_BYTES, "provenance"))
    except (OSError, ValueError, InputError):
        return {}
    return prov if isinstance(prov, dict) else {}


def ensure_run(project: "Project", paths: JobPaths, spec: JobSpec) -> None:
    """Add the generation job's run (model, parameters, worker provenance) if it is not there."""
    if spec.run_id in project.samples.run_ids():
        return
    prov = _provenance(paths)
    b = prov.get("backend")
    backend: dict[str, Any] = b if isinstance(b, dict) else {}
    g = spec.generator
    method = str(backend.get("method") or g.get("name") or "")
    model: dict[str, Any] = {"generator": g.get("name"), "model": g.get("model"),
             **{k: backend[k] for k in ("model_id", "model_path", "revision", "weights_fingerprint", "pipeline")
                if k in backend}}
    gp = g.get("params")
    params: dict[str, Any] = {**(gp if isinstance(gp, dict) else {}), "seeds": spec.seeds,
                              "batch_size": spec.batch_size, "suite": spec.suite}
    if "scheduler" in backend:
        params["scheduler_used"] = backend["scheduler"]
    project.samples.add_run(spec.run_id, method=method, model=model, params=params,
                            provenance={"environment": prov.get("environment", {}), "backend": backend,
                                        "job_id": spec.job_id},
                            source=f"job:{spec.job_id}")


def _existing_ids(project: "Project", ids: list[str]) -> set[str]:
    import pyarrow as pa

    if not ids:
        return set()
    project.con.register("_job_ids", pa.table({"sample_id": ids}))
    try:
        rows = project.con.execute(
            "SELECT s.sample_id FROM samples s JOIN _job_ids j USING (sample_id)").fetchall()
    finally:
        project.con.unregister("_job_ids")
    return {r[0] for r in rows}


def ingest_generate(project: "Project", paths: JobPaths, spec: JobSpec, cols: dict[str, list[Any]],
                     src_root: Path | None) -> IngestResult:
    res = IngestResult(chunks=1, items=len(cols["sample_id"]))
    have = _existing_ids(project, list(cols["sample_id"]))
    keep = [i for i, sid in enumerate(cols["sample_id"]) if sid not in have]
    res.skipped = len(cols["sample_id"]) - len(keep)
    if not keep:
        return res
    copied: list[Path] = []
    try:
        if src_root is not None and src_root.resolve() != project.folder.resolve():
            for i in keep:
                copy_image(src_root, project.folder, cols["image_path"][i], copied)
        prompts = project.samples.load_prompts()
        pidx = {p: j for j, p in enumerate(prompts.prompt_id.tolist())}
        missing = sorted({cols["prompt_id"][i] for i in keep} - set(pidx))
        if missing:
            raise WorkstationError(f"job {spec.job_id}: prompt {missing[0]!r} is not in the project")
        n = len(keep)
        o = lambda v: np.array(v, dtype=object)  # noqa: E731
        samples = Samples(
            sample_id=o([cols["sample_id"][i] for i in keep]), run_id=o([cols["run_id"][i] for i in keep]),
            prompt_id=o([cols["prompt_id"][i] for i in keep]),
            seed=np.array([cols["seed"][i] for i in keep], np.int64),
            width=np.array([cols["width"][i] for i in keep], np.float64),
            height=np.array([cols["height"][i] for i in keep], np.float64),
            image_path=o([cols["image_path"][i] for i in keep]),
            has_secondary=np.zeros(n, bool), has_perturbed=np.zeros(n, bool))
        ds = Dataset(samples, Detections.empty(), Prompts.empty())
        truth = [cols["truth"][i] for i in keep] if "truth" in cols else None
        with project.transaction():
            ensure_run(project, paths, spec)
            project.samples.add_dataset(ds, truth=truth)
    except BaseException:
        remove_copied(copied)
        raise
    res.samples = len(keep)
    return res


def ingest_detect(project: "Project", spec: JobSpec, cols: dict[str, list[Any]], items: list[str]) -> IngestResult:
    import pyarrow as pa

    from .work import detection_groups

    res = IngestResult(chunks=1, items=len(items))
    present = _existing_ids(project, items)
    gone = [s for s in items if s not in present]
    items = [s for s in items if s in present]
    res.skipped = len(gone)
    if not items:
        return res
    groups = detection_groups(spec)
    variant_names = tuple(dict.fromkeys([ORIGINAL_NAME] + [v for _d, v in groups]))
    vidx = {v: i for i, v in enumerate(variant_names)}
    sidx = {s: i for i, s in enumerate(items)}
    n = len(items)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    f = np.zeros(n)
    samples = Samples(o(items), o([""] * n), o([""] * n), np.zeros(n, np.int64), f, f, o([""] * n),
                      np.zeros(n, bool), np.zeros(n, bool))
    det = np.array(cols.get("detector", []), dtype=object)
    src = np.array(cols.get("source", []), dtype=np.int8)
    keep_row = np.array([s in sidx for s in cols.get("sample_id", [])], dtype=bool)
    pname = str(spec.detector["name"])
    has_sec = bool(spec.secondary)
    has_pert = bool(spec.perturbations)
    with project.transaction():
        project.samples.record_variants(variant_names)
        key = pa.table({"sample_id": [s for s in items for _ in groups],
                        "detector": [d for _ in items for d, _v in groups],
                        "variant": [v for _ in items for _d, v in groups]})
        project.con.register("_job_groups", key)
        try:
            project.con.execute(
                "DELETE FROM detections AS d USING _job_groups AS g WHERE d.sample_id = g.sample_id "
                "AND d.detector = g.detector AND d.variant = g.variant")
        finally:
            project.con.unregister("_job_groups")
        for name in dict.fromkeys(det.tolist()):
            rows = np.nonzero(keep_row & (det == name))[0]
            if not len(rows):
                continue
            sel = lambda k, dt: np.array([cols[k][i] for i in rows], dtype=dt)  # noqa: E731
            d = Detections(
                sample_idx=np.array([sidx[cols["sample_id"][i]] for i in rows], np.int64),
                source=src[rows], variant=np.array([vidx[cols["variant"][i]] for i in rows], np.int16),
                label=sel("label", object), score=sel("score", np.float64), x1=sel("x1", np.float64),
                y1=sel("y1", np.float64), x2=sel("x2", np.float64), y2=sel("y2", np.float64))
            names = (pname, pname) if int(src[rows[0]]) == PRIMARY and name == pname else (pname, str(name))
            project.samples.add_detections(Dataset(samples, d, Prompts.empty(), variant_names), detector_names=names)
            res.detections += len(rows)
        if has_sec or has_pert:
            project.con.register("_job_items", pa.table({"sample_id": items}))
            try:
                project.con.execute(
                    "UPDATE samples SET has_secondary = coalesce(has_secondary, false) OR ?, "
                    "has_perturbed = coalesce(has_perturbed, false) OR ? "
                    "WHERE sample_id IN (SELECT sample_id FROM _job_items)", [has_sec, has_pert])
            finally:
                project.con.unregister("_job_items")
    return res


MAX_CHUNK_TEXT = 64 * 1024  # characters of one text cell of a chunk (a truth record, a detail)


def check_chunk(chunk: Path, spec: JobSpec) -> tuple[dict[str, list[Any]], list[str]]:
    """The columns and items of a chunk from elsewhere (a merged job folder), every cell checked
    against what its kind writes, so that a hostile chunk is one clear error before anything is
    written, never a traceback in the middle of an ingest."""
    import math

    from ..util.ids import check_id
    from ..util.paths import UnsafePath, check_relative
    from .spec import MAX_SEED, MAX_SIDE

    def bad(what: str) -> WorkstationError:
        return WorkstationError(f"chunk {chunk}: {what}; it is not a result chunk of job {spec.job_id}")

    try:
        cols, items, kind = read_chunk(chunk)
    except Exception as e:  # noqa: BLE001 - a damaged file from elsewhere: one clear line
        raise bad(f"unreadable ({type(e).__name__})") from None
    if kind and kind != spec.kind:
        raise bad(f"it holds {kind[:20]!r} results")
    need = {"generate": ("sample_id", "run_id", "prompt_id", "seed", "image_path", "width", "height"),
            "detect": ("sample_id", "source", "detector", "variant", "label", "score", "x1", "y1", "x2", "y2"),
            "score": ("sample_id", "scorer", "text", "score")}.get(spec.kind, ("sample_id",))
    missing = [c for c in need if c not in cols]
    if missing:
        raise bad(f"the column(s) {', '.join(missing)} are missing")
    if len({len(v) for v in cols.values()}) > 1:
        raise bad("its columns differ in length")

    def ident(v: Any, what: str) -> None:
        try:
            check_id(v if isinstance(v, str) else None, what)
        except ValueError as e:
            raise bad(str(e)) from None

    def number(v: Any, what: str, lo: float, hi: float, whole: bool = False) -> None:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi
        if not ok or (whole and not isinstance(v, int)):
            raise bad(f"{what} {str(v)[:40]!r} is not a {'whole ' if whole else ''}number from {lo:g} to {hi:g}")

    def text(v: Any, what: str) -> None:
        if v is not None and (not isinstance(v, str) or len(v) > MAX_CHUNK_TEXT):
            raise bad(f"{what} is not a text of at most {MAX_CHUNK_TEXT:,} characters")

    for k in items:
        ident(k, "item")
    for v in cols["sample_id"]:
        ident(v, "sample_id")
    if spec.kind == "generate":
        for i in range(len(cols["sample_id"])):
            if cols["run_id"][i] != spec.run_id:
                raise bad(f"sample {cols['sample_id'][i][:40]!r} is of run {str(cols['run_id'][i])[:40]!r}")
            ident(cols["prompt_id"][i], "prompt_id")
            number(cols["seed"][i], "seed", 0, MAX_SEED, whole=True)
            number(cols["width"][i], "width", 1, MAX_SIDE)
            number(cols["height"][i], "height", 1, MAX_SIDE)
            try:
                check_relative(cols["image_path"][i], "image_path")
            except UnsafePath as e:
                raise bad(str(e)) from None
            text(cols.get("truth", [None] * len(cols["sample_id"]))[i], "truth")
    elif spec.kind == "detect":
        from .work import detection_groups

        variants = {v for _d, v in detection_groups(spec)}
        for i in range(len(cols["sample_id"])):
            number(cols["source"][i], "source", 0, 1, whole=True)
            if cols["variant"][i] not in variants:
                raise bad(f"variant {str(cols['variant'][i])[:40]!r} is not one the job computes")
            ident(cols["detector"][i], "detector")
            ident(cols["label"][i], "label")
            number(cols["score"][i], "score", 0, 1)
            for c in ("x1", "y1", "x2", "y2"):
                number(cols[c][i], c, -MAX_SIDE, 2 * MAX_SIDE)
    elif spec.kind == "score":
        for i in range(len(cols["sample_id"])):
            ident(cols["scorer"][i], "scorer")
            text(cols["text"][i], "text")
            if cols["score"][i] is not None:
                number(cols["score"][i], "score", -1e12, 1e12)
            text(cols.get("detail", [None] * len(cols["sample_id"]))[i], "detail")
    return cols, items


def ingest_chunk(project: "Project", paths: JobPaths, spec: JobSpec, chunk: Path,
                 src_root: Path | None = None) -> IngestResult:
    if src_root is not None:  # a chunk from elsewhere (a merged job folder): every cell checked first
        check_chunk(chunk, spec)
    cols, items, kind = read_chunk(chunk)
    if kind and kind != spec.kind:
        raise WorkstationError(f"chunk {chunk} holds {kind} results, but job {spec.job_id} is a {spec.kind} job")
    from .kind_registry import kind_object

    result: IngestResult = kind_object(spec.kind).ingest(project, paths, spec, cols, items, src_root)
    return result


def ingest_pending(project: "Project", paths: JobPaths, spec: JobSpec | None = None) -> IngestResult:
    """Ingest every finished chunk of the job not ingested yet, oldest first."""
    spec = spec or load_spec(paths)
    total = IngestResult()
    for chunk in pending_chunks(paths):
        r = ingest_chunk(project, paths, spec, chunk)
        mark_ingested(paths, [chunk.name])
        total += r
    if total.chunks:
        append_log(paths, f"ingested {total.chunks} chunk(s): {total.samples} new sample(s), "
                          f"{total.detections} detection(s)" + (f", {total.skipped} already present"
                                                                if total.skipped else ""))
    return total


def ingest_job_folder(project: "Project", job_dir: Path) -> IngestResult:
    """Ingest every chunk of a job folder from elsewhere (another machine's project) into ``project``.

    Its prompts come from its inputs, its run from its provenance, its images from its project folder.
    """
    src = JobPaths.of_dir(job_dir)
    spec = load_spec(src)
    total = IngestResult()
    from .chunks import chunk_files

    with project.transaction():
        if spec.kind == "generate" and src.inputs.is_file():
            project.samples.add_prompts(read_prompts(src.inputs))
        for chunk in chunk_files(src):
            total += ingest_chunk(project, src, spec, chunk, src_root=src.project)
        known = {j["job_id"] for j in project.jobs.all()}
        if spec.job_id not in known:
            project.jobs.record(spec.job_id, spec.kind, spec.to_dict(), status="done", done=total.items,
                                total=total.items, message=f"merged from {src.dir}")
    return total


__all__ = ["IngestResult", "check_chunk", "ingest_chunk", "ingest_job_folder", "ingest_pending"]
