"""The work of a job as a plain generator: it yields ``Progress`` after every batch.

``iter_job(job_dir)`` runs inside the worker process (``workstation.jobs.worker``); the caller
stops it between batches by closing the generator (``gen.close()``) — that is the cancel point.
It reads only the job folder, writes images and chunk files, and never opens the database.

Resume: items already in a chunk file of the job, or listed in ``skip.txt`` (what the project
held when the job started), are skipped; the rest are made in the same order with the same
seeds, so an interrupted and resumed job gives exactly the set an uninterrupted run gives.

Out of accelerator memory: the batch is halved and retried (down to one item), and the smaller
size is kept for the rest of the job; the log and the progress message say so.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..types import ORIGINAL_NAME, PRIMARY, SECONDARY, WorkstationError
from . import backends
from .kind_registry import kind_object
from .chunks import encode_png, finished_keys, read_image, write_bytes_atomic, write_chunk
from .progress import STARTING, Progress, RateMeter
from .spec import prompt_row
from .spec import (
    DetItem,
    GenItem,
    JobPaths,
    JobSpec,
    detection_items,
    generation_items,
    load_spec,
    read_prompts,
    read_table,
    write_json_atomic,
)

T = TypeVar("T")
R = TypeVar("R")
Item = TypeVar("Item", GenItem, DetItem)
LogFn = Callable[[str], None]


def iter_job(job_dir: str | Path, log: LogFn | None = None,
             delay: float = 0.0) -> Generator[Progress, None, None]:
    """Do the job in ``job_dir`` batch by batch, yielding progress; close it to cancel."""
    paths = JobPaths.of_dir(job_dir)
    spec = load_spec(paths)
    say = log or (lambda _m: None)
    yield from kind_object(spec.kind).run(paths, spec, say, delay)


class _Halving:
    """Runs work in parts of at most ``size`` items, halving ``size`` on out-of-memory errors."""

    def __init__(self, size: int, what: str, say: LogFn) -> None:
        self.size = max(1, int(size))
        self.what = what
        self.say = say
        self.notes: list[str] = []

    def run(self, items: Sequence[T], fn: Callable[[Sequence[T]], list[R]]) -> list[R]:
        out: list[R] = []
        i = 0
        while i < len(items):
            part = items[i : i + self.size]
            try:
                res = fn(part)
            except Exception as e:  # noqa: BLE001 - only out-of-memory errors are handled here
                if not backends.is_out_of_memory(e):
                    raise
                if self.size == 1:
                    raise WorkstationError(
                        f"out of GPU memory {self.what} even one at a time; lower the resolution, "
                        f"use --dtype fp16, or free the GPU ({e})") from e
                old, self.size = self.size, max(1, self.size // 2)
                note = f"out of GPU memory at batch size {old} {self.what}; going on with {self.size}"
                self.say(note)
                self.notes.append(note)
                continue
            out.extend(res)
            i += len(part)
        return out


def write_provenance(paths: JobPaths, spec: JobSpec, backend: dict[str, Any], include_torch: bool) -> None:
    from .. import env

    info = {"job_id": spec.job_id, "kind": spec.kind, "spec": spec.to_dict(), "backend": backend,
            "environment": env.environment_info(include_torch=include_torch), "written": time.time()}
    write_json_atomic(paths.provenance, info)


def unfinished(paths: JobPaths, items: list[Item], verb: str, noun: str,
               say: LogFn) -> tuple[list[Item], RateMeter]:
    """The items a run still has to do (a resumed job's finished ones left out) and the meter over
    all of them; the log says when nothing is left or where the run resumes."""
    skip = finished_keys(paths)
    todo = [it for it in items if it.key not in skip]
    meter = RateMeter(len(items), len(items) - len(todo))
    if not todo:
        say(f"nothing to {verb}: all {len(items)} {noun}(s) are done")
    elif meter.done:
        say(f"resuming: {meter.done} of {len(items)} {noun}(s) already done")
    return todo, meter


# ---- generation ---------------------------------------------------------------------------------
def iter_generate(paths: JobPaths, spec: JobSpec, say: LogFn, delay: float) -> Iterator[Progress]:
    from ..generation import GenerationRequest, Grounding

    prompts = read_prompts(paths.inputs)
    items = generation_items(spec, prompts)
    todo, meter = unfinished(paths, items, "generate", "item", say)
    if not todo:
        yield meter.progress("all items already done")
        return
    gname = str(spec.generator.get("name"))
    model = spec.generator.get("model")
    yield meter.progress(f"loading {gname}" + (f" {model}" if model else ""), state=STARTING)
    gen = backends.make_generator(spec.generator)
    params = backends.generation_params(spec.generator, spec.batch_size)
    takes_rows = bool(getattr(gen, "takes_rows", False)) or hasattr(gen, "generate_rows")
    grounded = getattr(gen, "name", gname) == "gligen"
    prov = gen.provenance()
    write_provenance(paths, spec, prov, include_torch=not takes_rows)
    say(f"generating {len(todo)} image(s) with {gname} ({params.width}×{params.height}, "
        f"{params.steps} steps, batch {spec.batch_size})")
    halving = _Halving(spec.batch_size, "generating", say)

    def make(part: Sequence[GenItem]) -> list[tuple[np.ndarray, dict[str, Any] | None]]:
        seeds = [it.seed for it in part]
        # the generator pads a short part to the current batch size: same tensor shapes every batch
        p = params.replace(batch_size=max(len(part), halving.size))
        if takes_rows:
            rows = [prompt_row(prompts, it.prompt_index) for it in part]
            images, truths = gen.generate_rows(rows, seeds, p)
            return list(zip(images, truths))
        texts = [str(prompts.text[it.prompt_index]) for it in part]
        groundings = None
        if grounded:
            groundings = [Grounding.for_prompt_row(prompt_row(prompts, it.prompt_index)) for it in part]
        images = gen.generate(GenerationRequest(texts, seeds, groundings), p)
        if len(images) != len(part):
            raise WorkstationError(f"generator {gname!r} returned {len(images)} image(s) for {len(part)} prompt(s)")
        return [(im, None) for im in images]

    meter.start()
    pos = 0
    while pos < len(todo):
        batch = todo[pos : pos + halving.size]
        results = halving.run(batch, make)
        cols: dict[str, list[Any]] = {k: [] for k in (
            "sample_id", "run_id", "prompt_id", "seed", "image_path", "width", "height", "truth", "image_sha256")}
        written: list[Path] = []
        try:
            for it, (img, truth) in zip(batch, results):
                data = encode_png(img)
                write_bytes_atomic(paths.project / it.image_path, data)
                written.append(paths.project / it.image_path)
                cols["sample_id"].append(it.key)
                cols["run_id"].append(spec.run_id)
                cols["prompt_id"].append(it.prompt_id)
                cols["seed"].append(it.seed)
                cols["image_path"].append(it.image_path)
                cols["width"].append(float(img.shape[1]))
                cols["height"].append(float(img.shape[0]))
                cols["truth"].append(None if truth is None else json.dumps(truth, sort_keys=True))
                cols["image_sha256"].append(hashlib.sha256(data).hexdigest())
            write_chunk(paths, "generate", cols, [it.key for it in batch])
        except BaseException:
            # a batch whose chunk was not written (a full disk, a failed write) leaves no images:
            # no chunk names them, and a resumed job makes them again
            for f in written:
                try:
                    f.unlink()
                except OSError:
                    pass
            raise
        pos += len(batch)
        meter.add(len(batch))
        note = halving.notes[-1] if halving.notes else ""
        yield meter.progress(note or f"batch of {len(batch)}", batch_size=halving.size)
        if delay:
            time.sleep(delay)


# ---- detection ------------------------------------------------------------------------------------
def iter_detect(paths: JobPaths, spec: JobSpec, say: LogFn, delay: float) -> Iterator[Progress]:
    from ..perturb import Perturbation
    from ..perturb import apply

    samples = read_table(paths.inputs) if paths.inputs.is_file() else {
        "sample_id": [], "image_path": [], "entities": []}
    items = detection_items(spec, samples)
    todo, meter = unfinished(paths, items, "detect", "sample", say)
    if not todo:
        yield meter.progress("all samples already done")
        return
    perts = [Perturbation.from_name(n) for n in spec.perturbations]
    variants = [ORIGINAL_NAME] + [p.name for p in perts]
    yield meter.progress(f"loading detector {spec.detector.get('name')}", state=STARTING)
    primary = backends.make_detector(spec.detector)
    secondaries = [backends.make_detector(s) for s in spec.secondary]
    prov = {"primary": primary.provenance(), "secondary": [s.provenance() for s in secondaries]}
    write_provenance(paths, spec, prov, include_torch=False)
    pname = str(spec.detector["name"])
    snames = [str(s["name"]) for s in spec.secondary]
    say(f"detecting on {len(todo)} sample(s): {pname} on {len(variants)} variant(s)"
        + (f", secondary {', '.join(snames)} on the original" if snames else ""))
    det_bs = int(getattr(primary, "batch_size", 8) or 8)
    halvings = [_Halving(det_bs, f"detecting with {pname}", say)] + [
        _Halving(int(getattr(s, "batch_size", 8) or 8), f"detecting with {n}", say)
        for s, n in zip(secondaries, snames)]

    meter.start()
    pos = 0
    while pos < len(todo):
        batch = todo[pos : pos + spec.batch_size]
        originals = [read_image(paths.project / it.image_path) for it in batch]
        queries = [list(it.queries) for it in batch]
        # primary: every variant of every sample
        jobs: list[tuple[int, str, np.ndarray]] = []
        for k, img in enumerate(originals):
            jobs.append((k, ORIGINAL_NAME, img))
            for p in perts:
                jobs.append((k, p.name, apply(img, p)))
        rows: dict[str, list[Any]] = {k: [] for k in (
            "sample_id", "source", "detector", "variant", "label", "score", "x1", "y1", "x2", "y2")}

        def add(k: int, source: int, detector: str, variant: str, dets: Sequence[Any]) -> None:
            for d in dets:
                rows["sample_id"].append(batch[k].key)
                rows["source"].append(source)
                rows["detector"].append(detector)
                rows["variant"].append(variant)
                rows["label"].append(str(d.label).lower())
                rows["score"].append(float(d.score))
                x1, y1, x2, y2 = (float(v) for v in d.box)
                rows["x1"].append(x1)
                rows["y1"].append(y1)
                rows["x2"].append(x2)
                rows["y2"].append(y2)

        res = halvings[0].run(jobs, lambda part: primary.detect_batch([j[2] for j in part],
                                                                       [queries[j[0]] for j in part]))
        for (k, variant, _img), dets in zip(jobs, res):
            add(k, PRIMARY, pname, variant, dets)
        for sec, sname, halv in zip(secondaries, snames, halvings[1:]):
            idx = list(range(len(batch)))

            def detect_secondary(part: Sequence[int], s: Any = sec) -> list[Any]:
                return s.detect_batch([originals[i] for i in part], [queries[i] for i in part])

            sres = halv.run(idx, detect_secondary)
            for k, dets in zip(idx, sres):
                add(k, SECONDARY, sname, ORIGINAL_NAME, dets)
        write_chunk(paths, "detect", rows, [it.key for it in batch], types=_DET_TYPES())
        pos += len(batch)
        meter.add(len(batch))
        notes = [n for h in halvings for n in h.notes]
        yield meter.progress(notes[-1] if notes else f"batch of {len(batch)}", batch_size=len(batch))
        if delay:
            time.sleep(delay)


def _DET_TYPES() -> dict[str, Any]:  # noqa: N802 - a constant built lazily (pyarrow import)
    import pyarrow as pa

    f = pa.float64()
    return {"sample_id": pa.string(), "source": pa.int8(), "detector": pa.string(), "variant": pa.string(),
            "label": pa.string(), "score": f, "x1": f, "y1": f, "x2": f, "y2": f}


def detection_groups(spec: JobSpec) -> list[tuple[str, str]]:
    """(detector, variant) groups a detect job writes for every sample it finishes."""
    from ..perturb import Perturbation

    groups = [(str(spec.detector["name"]), ORIGINAL_NAME)]
    groups += [(str(spec.detector["name"]), Perturbation.from_name(n).name) for n in spec.perturbations]
    groups += [(str(s["name"]), ORIGINAL_NAME) for s in spec.secondary]
    return groups


__all__ = ["DetItem", "GenItem", "detection_groups", "iter_job"]
