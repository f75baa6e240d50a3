"""Build the demo: the built-in suite drawn as procedural scenes, detected, stored and checked.

`build_demo_dataset` renders every (prompt, seed) to a PNG under the given folder, runs the
primary scene detector on the original image and on each perturbation of the checker config,
runs the secondary detector on the original, and returns a `Dataset` (variant names
``("original", *perturbation names)``) with the ground truth of every sample. The work is
spread over processes (both cores by default); each worker only writes image files and returns
results, so the database is written by the calling process alone.

`build_demo_project` does the same into a new project folder, stores run, prompts, samples,
detections, ground truth, the default checker config and its verdicts, and returns a summary
that includes the checker's agreement with the known truth.
"""

from __future__ import annotations

import json
import logging
import math
import os
import struct
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Dataset, Detections, Prompts, Samples
from ...perturb import Perturbation
from ...types import ORIGINAL_NAME, PRIMARY, SECONDARY, WorkstationError
from ...util.atomic import atomic_write_bytes
from .config import CheckerConfig
from .data import prompt_columns
from .store import SpatialStore
from .types import FAIL, PASS, UNDECIDABLE, VERDICT_CODE, VERDICTS

log = logging.getLogger(__name__)

DEMO_RUN_ID = "demo_procedural"
DEMO_METHOD = "demo_procedural"
IMAGE_DIR = "images"
DETECTOR_NAMES = ("scene", "scene_template")  # primary, secondary (the detectors' names)

ProgressFn = Callable[[int, int], None]
CancelFn = Callable[[], bool]

# stages whose CPU time (process time, summed over workers) the builder reports
STAGES = ("render", "write_png", "perturb", "detect_primary", "detect_secondary")


class DemoCancelled(WorkstationError):
    """The user cancelled building the demo."""


def sample_id_for(run_id: str, prompt_id: str, seed: int) -> str:
    return f"{run_id}_{prompt_id}_seed{int(seed):04d}"


# ---- worker side -------------------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _worker_state() -> dict[str, Any]:
    if not _WORKER:
        from ...demo.detector import SceneDetector, TemplateSceneDetector

        _WORKER["primary"] = SceneDetector()
        _WORKER["secondary"] = TemplateSceneDetector()
    return _WORKER


def _init_worker(parent_pid: int | None = None) -> None:
    # die with the builder: a killed build must not leave workers blocked on a pipe for good
    from ...util.lifeline import die_with_parent

    die_with_parent(parent_pid)
    # one OpenCV thread per process: the processes already use every core
    import cv2

    cv2.setNumThreads(1)
    _worker_state()


def encode_png(img: np.ndarray) -> bytes:
    """A standard 8-bit RGB PNG of `img` (H×W×3 uint8), fast: "Up" row filter and
    Huffman-only deflate (the scenes' grain makes slower compression gain little)."""
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise ValueError("expected an H×W×3 uint8 RGB image")
    h, w, _ = img.shape
    raw = np.ascontiguousarray(img).reshape(h, w * 3)
    rows = np.empty((h, w * 3 + 1), np.uint8)
    rows[:, 0] = 2  # filter type Up: each byte minus the byte above (mod 256)
    rows[0, 1:] = raw[0]
    np.subtract(raw[1:], raw[:-1], out=rows[1:, 1:])
    comp = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_HUFFMAN_ONLY)
    data = comp.compress(rows.tobytes()) + comp.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit truecolour, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def write_png(path: Path, img: np.ndarray) -> None:
    """Write `img` as PNG (via a temporary file, so a cancelled build leaves no torn image)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        atomic_write_bytes(path, encode_png(img), fsync=False)
    except OSError as e:
        raise WorkstationError(f"could not write the image {path}: {e.strerror or e}") from None


def _work_chunk(task: dict[str, Any]) -> dict[str, Any]:
    """Render, save, perturb and detect a list of (prompt row, seed) items."""
    from ...perturb import apply
    from ...demo.scenes import render

    st = _worker_state()
    prim, sec = st["primary"], st["secondary"]
    folder = Path(task["folder"])
    perts = [Perturbation.from_name(n) for n in task["perturbations"]]
    times = dict.fromkeys(STAGES, 0.0)
    out = []
    clock = time.process_time  # CPU seconds of this process: independent of other load
    for row, seed, rel_path in task["items"]:
        t0 = clock()
        img, truth = render(row, seed, size=task["size"])
        t1 = clock()
        write_png(folder / rel_path, img)
        t2 = clock()
        variants = [img] + [apply(img, p) for p in perts]
        t3 = clock()
        dets: list[tuple[int, int, str, float, float, float, float, float]] = []
        for v, im in enumerate(variants):
            for d in prim.detect(im):
                dets.append((PRIMARY, v, d.label, d.score, *d.box))
        t4 = clock()
        for d in sec.detect(img):
            dets.append((SECONDARY, 0, d.label, d.score, *d.box))
        t5 = clock()
        for k, a, b in zip(STAGES, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5)):
            times[k] += b - a
        out.append({"truth": truth, "dets": dets})
    return {"index": task["index"], "results": out, "times": times, "pid": os.getpid()}


# ---- builder side ------------------------------------------------------------------------------
def _default_workers() -> int:
    n = os.cpu_count() or 1
    return max(1, min(n, 8))


def build_demo_dataset(
    folder: str | Path,
    n_seeds: int = 4,
    prompts: Prompts | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    *,
    size: int = 512,
    perturbations: Sequence[Perturbation] | None = None,
    run_id: str = DEMO_RUN_ID,
    workers: int | None = None,
    chunk_size: int = 16,
    stats: dict[str, Any] | None = None,
) -> tuple[Dataset, list[dict[str, Any]]]:
    """Render and detect the demo; returns (Dataset, truth rows aligned with its samples).

    Images go to ``<folder>/images/<run_id>/<sample_id>.png`` (paths in the dataset are
    relative to `folder`). `prompts` defaults to the built-in 200-prompt spatial suite;
    `perturbations` to the default checker config's. `workers` processes (default: every
    core; 0 or 1 = in this process). `progress(done, total)` is called as samples finish;
    `cancel()` returning True stops the build with :class:`DemoCancelled`. If `stats` is given
    it receives the wall time and the CPU seconds of each stage summed over the workers.
    """
    from .suite import spatial_suite
    from ...demo.scenes import prompt_rows, style_of

    t_start = time.perf_counter()
    if n_seeds < 1:
        raise WorkstationError(f"the demo needs at least one seed per prompt, got {n_seeds}")
    if size < 64:
        raise WorkstationError(f"demo images must be at least 64 pixels wide, got {size}")
    if prompts is None:
        prompts = spatial_suite()
    if len(prompts) == 0:
        raise WorkstationError("the demo needs at least one prompt")
    pc = prompt_columns(prompts)
    for lab in set(pc.label_a.tolist()) | set(pc.label_b.tolist()):
        style_of(str(lab))  # clear error for objects the demo cannot draw
    perts = tuple(CheckerConfig().perturbations if perturbations is None else perturbations)
    pert_names = [p.name for p in perts]
    if len(set(pert_names)) != len(pert_names):
        raise WorkstationError(f"duplicate perturbations: {', '.join(pert_names)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    rows = prompt_rows(prompts)
    items: list[tuple[Any, int, str]] = []
    sample_ids: list[str] = []
    prompt_index: list[int] = []
    seeds: list[int] = []
    for pi, row in enumerate(rows):
        for seed in range(n_seeds):
            sid = sample_id_for(run_id, row.prompt_id, seed)
            rel = f"{IMAGE_DIR}/{run_id}/{sid}.png"
            items.append((row, seed, rel))
            sample_ids.append(sid)
            prompt_index.append(pi)
            seeds.append(seed)
    total = len(items)
    chunk_size = max(1, int(chunk_size))
    tasks = [
        {"index": k, "folder": str(folder), "size": int(size), "perturbations": pert_names,
         "items": items[s:s + chunk_size]}
        for k, s in enumerate(range(0, total, chunk_size))
    ]
    n_workers = _default_workers() if workers is None else max(0, int(workers))
    results: dict[int, dict[str, Any]] = {}
    done = 0
    if progress:
        progress(0, total)

    def run_here(todo: list[dict[str, Any]]) -> None:
        nonlocal done
        for task in todo:
            if cancel is not None and cancel():
                raise DemoCancelled("building the demo was cancelled")
            res = _work_chunk(task)
            results[task["index"]] = res
            done += len(res["results"])
            if progress:
                progress(done, total)

    if n_workers <= 1 or len(tasks) == 1:
        run_here(tasks)
    else:
        import multiprocessing
        from concurrent.futures.process import BrokenProcessPool

        ctx = multiprocessing.get_context("spawn")  # safe beside threads (GUI, database)
        ex = ProcessPoolExecutor(max_workers=min(n_workers, len(tasks)), mp_context=ctx,
                                 initializer=_init_worker, initargs=(os.getpid(),))
        broken: BaseException | None = None
        try:
            pending: set[Future[dict[str, Any]]] = {ex.submit(_work_chunk, t) for t in tasks}
            while pending:
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in finished:
                    try:
                        res = fut.result()
                    except BrokenProcessPool as e:
                        broken = e
                        continue
                    results[res["index"]] = res
                    done += len(res["results"])
                    if progress:
                        progress(done, total)
                if broken is not None:
                    break
                if pending and cancel is not None and cancel():
                    for f in pending:
                        f.cancel()
                    raise DemoCancelled("building the demo was cancelled")
        finally:
            ex.shutdown(wait=True, cancel_futures=True)
        if broken is not None:
            # e.g. a script without an `if __name__ == "__main__":` guard, or a frozen app
            # without multiprocessing.freeze_support(): finish the work in this process
            log.warning("demo worker processes failed (%s); continuing in this process", broken)
            run_here([t for t in tasks if t["index"] not in results])

    # ---- assemble the dataset in sample order ------------------------------------------------
    t_asm = time.perf_counter()
    truths: list[dict[str, Any]] = []
    d_si: list[int] = []
    d_cols: list[tuple[int, int, str, float, float, float, float, float]] = []
    i = 0
    times = dict.fromkeys(STAGES, 0.0)
    for k in range(len(tasks)):
        res = results[k]
        for key in STAGES:
            times[key] += res["times"][key]
        for r in res["results"]:
            t = dict(r["truth"])
            t["sample_id"] = sample_ids[i]
            truths.append(t)
            d_si.extend([i] * len(r["dets"]))
            d_cols.extend(r["dets"])
            i += 1
    n = total
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    pidx = np.array(prompt_index, np.int64)
    samples = Samples(
        sample_id=o(sample_ids),
        run_id=o([run_id] * n),
        prompt_id=prompts.prompt_id[pidx].astype(object),
        seed=np.array(seeds, np.int64),
        width=np.full(n, float(size)),
        height=np.full(n, float(size)),
        image_path=o([it[2] for it in items]),
        has_secondary=np.ones(n, bool),
        has_perturbed=np.full(n, len(perts) > 0),
    )
    if d_cols:
        src, var, lab, score, x1, y1, x2, y2 = zip(*d_cols)
    else:
        src = var = lab = score = x1 = y1 = x2 = y2 = ()
    f64 = lambda v: np.array(v, dtype=np.float64)  # noqa: E731
    dets = Detections(
        sample_idx=np.array(d_si, np.int64), source=np.array(src, np.int8), variant=np.array(var, np.int16),
        label=o(list(lab)), score=f64(score), x1=f64(x1), y1=f64(y1), x2=f64(x2), y2=f64(y2),
    )
    ds = Dataset(samples, dets, prompts, (ORIGINAL_NAME, *pert_names))
    if stats is not None:
        stats.update({
            "samples": n, "workers": max(1, n_workers), "wall_s": time.perf_counter() - t_start,
            "assemble_s": time.perf_counter() - t_asm, "cpu_s": times,
            "detections": len(dets), "images": n, "variants": 1 + len(perts),
        })
    return ds, truths


def truth_agreement(verdict: np.ndarray, truths: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How the checker's verdicts compare with the known truth of demo samples.

    ``decided_accuracy``: of the samples the checker decided (PASS/FAIL), the fraction whose
    true verdict is the same (a decision on a truly undecidable sample counts as wrong).
    ``accuracy_on_decidable``: the same restricted to samples whose truth is PASS/FAIL.
    ``agreement``: exact three-way agreement over all samples. ``confusion[truth][checker]``.
    """
    v = np.asarray(verdict, dtype=np.int64)
    t = np.array([VERDICT_CODE[str(r["expected"])] for r in truths], np.int64)
    if len(v) != len(t):
        raise ValueError(f"{len(v)} verdicts for {len(t)} truth rows")
    n = len(v)
    decided = v != UNDECIDABLE
    both = decided & (t != UNDECIDABLE)
    conf = np.zeros((3, 3), np.int64)
    np.add.at(conf, (t, v), 1)
    by_kind: dict[str, dict[str, int]] = {}
    for r, vi in zip(truths, v.tolist()):
        k = by_kind.setdefault(str(r.get("error", "")), dict.fromkeys(VERDICTS, 0))
        k[VERDICTS[vi]] += 1
    return {
        "samples": n,
        "decided": int(decided.sum()),
        "coverage": float(decided.mean()) if n else 0.0,
        "decided_accuracy": float((v[decided] == t[decided]).mean()) if decided.any() else math.nan,
        "accuracy_on_decidable": float((v[both] == t[both]).mean()) if both.any() else math.nan,
        "agreement": float((v == t).mean()) if n else math.nan,
        "false_pass": int(((v == PASS) & (t != PASS)).sum()),
        "false_fail": int(((v == FAIL) & (t != FAIL)).sum()),
        "confusion": {VERDICTS[i]: {VERDICTS[j]: int(conf[i, j]) for j in range(3)} for i in range(3)},
        "by_error": by_kind,
    }


def build_demo_project(
    folder: str | Path,
    n_seeds: int = 4,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    *,
    prompts: Prompts | None = None,
    config: CheckerConfig | None = None,
    size: int = 512,
    workers: int | None = None,
    run_id: str = DEMO_RUN_ID,
) -> dict[str, Any]:
    """Create a project in `folder` (which must not hold one) with the demo, and check it.

    Stores the run, prompts, samples (with their ground truth), detections of both detectors
    and of every perturbation, the checker config (default unless given, saved as the active
    version) and its verdicts. Returns a summary: counts, verdict counts, the checker's
    agreement with the truth (:func:`truth_agreement`), and timings.
    """
    from ...store import Project
    from .suite import spatial_suite

    cfg = config or CheckerConfig(name="default")
    if prompts is None:
        prompts = spatial_suite()
    t0 = time.perf_counter()
    stats: dict[str, Any] = {}
    folder = Path(folder)
    existed = folder.exists()
    project = Project.create(folder)
    try:
        with project:
            ds, truths, v, cid = _fill_project(project, n_seeds, prompts, progress, cancel, cfg, size,
                                               workers, run_id, stats)
    except BaseException:
        _discard(folder, existed, run_id)
        raise
    p, f_, u = v.counts()
    t_end = time.perf_counter()
    return {
        "folder": str(folder),
        "run_id": run_id,
        "samples": ds.n,
        "prompts": len(prompts),
        "seeds": n_seeds,
        "detections": len(ds.detections),
        "variants": list(ds.variant_names),
        "config_id": cid,
        "verdicts": {"PASS": p, "FAIL": f_, "UNDECIDABLE": u},
        "truth": truth_agreement(v.verdict, truths),
        "timings": {
            "build_s": stats.get("wall_s", math.nan),
            "store_s": stats.get("store_s", math.nan),
            "evaluate_s": stats.get("evaluate_s", math.nan),
            "save_verdicts_s": stats.get("save_verdicts_s", math.nan),
            "total_s": t_end - t0,
            "cpu_s": stats.get("cpu_s", {}),
            "workers": stats.get("workers", 1),
        },
    }


def add_demo(project: Any, *, n_seeds: int = 4, prompts: Prompts | None = None, progress: ProgressFn | None = None,
             cancel: CancelFn | None = None, config: CheckerConfig | None = None, size: int = 512,
             workers: int | None = None, run_id: str = DEMO_RUN_ID) -> dict[str, Any]:
    """Add the spatial demo to an open project (run, samples with truth, detections, a checked
    config); returns the same summary as `build_demo_project`."""
    from .suite import spatial_suite

    cfg = config or CheckerConfig(name="default")
    if prompts is None:
        prompts = spatial_suite()
    t0 = time.perf_counter()
    stats: dict[str, Any] = {}
    ds, truths, v, cid = _fill_project(project, n_seeds, prompts, progress, cancel, cfg, size, workers, run_id, stats)
    p, f_, u = v.counts()
    return {"method": "spatial", "run_id": run_id, "samples": ds.n, "prompts": len(prompts), "seeds": n_seeds,
            "detections": len(ds.detections), "variants": list(ds.variant_names), "config_id": cid,
            "verdicts": {"PASS": p, "FAIL": f_, "UNDECIDABLE": u}, "truth": truth_agreement(v.verdict, truths),
            "timings": {"total_s": time.perf_counter() - t0, "workers": stats.get("workers", 1)}}


def _discard(folder: Path, existed: bool, run_id: str) -> None:
    """Remove what a failed or cancelled demo build created in `folder`."""
    import shutil

    from ...store import DB_NAME

    if not existed:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for name in (DB_NAME, DB_NAME + ".wal"):
        (folder / name).unlink(missing_ok=True)
    shutil.rmtree(folder / IMAGE_DIR / run_id, ignore_errors=True)
    for sub in (folder / IMAGE_DIR, folder / "jobs"):
        try:
            sub.rmdir()  # only if empty
        except OSError:
            pass


def _fill_project(project: Any, n_seeds: int, prompts: Prompts, progress: ProgressFn | None,
                  cancel: CancelFn | None, cfg: CheckerConfig, size: int, workers: int | None,
                  run_id: str, stats: dict[str, Any]) -> tuple[Dataset, list[dict[str, Any]], Any, int]:
    from .checker import evaluate
    from .suite import content_hash
    from ...demo.detector import SceneDetector, TemplateSceneDetector

    ds, truths = build_demo_dataset(project.folder, n_seeds, prompts, progress, cancel, size=size,
                                    perturbations=cfg.perturbations, run_id=run_id, workers=workers,
                                    stats=stats)
    t_store = time.perf_counter()
    provenance = {
        "generator": "procedural", "renderer": "workstation.demo.scenes.render",
        "suite": str(prompts.suite[0]) if len(prompts) else "", "suite_hash": content_hash(prompts),
        "detectors": {"primary": SceneDetector().provenance(),
                      "secondary": TemplateSceneDetector().provenance()},
        "perturbations": list(ds.variant_names[1:]),
    }
    project.samples.add_run(run_id, method=DEMO_METHOD, model={"generator": "procedural"},
                            params={"seeds": n_seeds, "width": size, "height": size},
                            provenance=provenance, source="demo")
    project.samples.add_dataset(ds, detector_names=DETECTOR_NAMES,
                                truth=[json.dumps(t, separators=(",", ":")) for t in truths])
    cid = SpatialStore(project).save_config(cfg, note="demo: default checker parameters")
    t_eval = time.perf_counter()
    v = evaluate(ds, cfg)
    t_save = time.perf_counter()
    SpatialStore(project).save_verdicts(cid, ds, v)
    stats.update(store_s=t_eval - t_store, evaluate_s=t_save - t_eval,
                 save_verdicts_s=time.perf_counter() - t_save)
    return ds, truths, v, cid


def demo_summary(project: Any) -> dict[str, Any]:
    """The spatial part of a demo project built earlier: its run, samples, detections, the
    active checker version's verdicts and (where every sample has one) their agreement with the
    known truth, recomputed from the store."""
    from .commands.common import active_verdicts, load_samples

    ds = load_samples(project)
    cid, _, v = active_verdicts(project, ds)
    truth = project.samples.truth()
    runs = project.samples.runs()
    rows = [truth.get(s) for s in ds.samples.sample_id.tolist()]
    p, f, u = v.counts()
    out: dict[str, Any] = {
        "method": "spatial",
        "run_id": ", ".join(r["run_id"] for r in runs if r["run_id"] in set(ds.samples.run_id.tolist())),
        "samples": ds.n, "prompts": len(set(ds.samples.prompt_id.tolist())), "detections": len(ds.detections),
        "variants": list(ds.variant_names), "config_id": cid,
        "verdicts": {"PASS": p, "FAIL": f, "UNDECIDABLE": u},
    }
    if rows and all(r is not None for r in rows):
        out["truth"] = truth_agreement(v.verdict, rows)  # type: ignore[arg-type]
    from .demo_raters import rater_summary
    from .store import TASK

    out["raters"] = rater_summary(project, TASK)
    return out


def _pct(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100.0 * float(x):.1f}%"


def demo_lines(s: Mapping[str, Any]) -> list[str]:
    """What the `demo` command prints of the spatial part of its summary (`add_demo`'s or
    `demo_summary`'s): the run, the checker's verdicts and their agreement with the truth."""
    lines = [f"  run {s['run_id']}: {s['samples']} samples of {s['prompts']} prompts"
             + (f" x {s['seeds']} seeds" if "seeds" in s else "")
             + f", {s['detections']} detections over {len(s.get('variants', []))} image variants"]
    vc = s["verdicts"]
    lines.append(f"  checker (config v{s['config_id']}): {vc['PASS']} PASS, {vc['FAIL']} FAIL, "
                 f"{vc['UNDECIDABLE']} UNDECIDABLE")
    t = s.get("truth")
    if t:
        lines.append(f"  vs known truth: accuracy on decided {_pct(t.get('decided_accuracy'))}, "
                     f"on decidable samples {_pct(t.get('accuracy_on_decidable'))}, coverage "
                     f"{_pct(t.get('coverage'))}, exact agreement {_pct(t.get('agreement'))}; "
                     f"false PASS {t.get('false_pass')}, false FAIL {t.get('false_fail')}")
    r = s.get("raters")
    if r:
        acc = ", ".join(f"{name} {c}/{n}" for name, (c, n) in r["gold_accuracy"].items())
        out = "; ".join(f"{name} left out ({why})" for name, why in r["left_out"].items())
        lines.append(f"  raters: blind audit set #{r['audit_set_id']} of {r['drawn']} drawn and {r['gold']} gold "
                     f"items (+{r['rechecks']} re-checks), {len(r['raters'])} raters on each; gold right: {acc}"
                     + (f"; {out}" if out else "")
                     + f"; {r['adjudicated']} adjudicated")
    return lines
