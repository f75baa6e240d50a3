"""The MetaLogic part of the built-in demo project, made through the workstation's own jobs.

`add_demo(project)` builds a MetaLogic suite over the demo's 30 drawable classes, stores a
``generate`` job of the procedural generator (which draws each prompt row through the method's
`render_demo_row`: one layout per (pair, seed), errors injected per law at the published rates,
`demo.DEFAULT_ERROR_RATES`) and a ``detect`` job of the demo's scene detector, runs them in
worker processes (``workers`` shards of each, stepped side by side), evaluates the image pairs
with the default parameters and stores that version. The run is recorded as a demo run, so
`main.py demo --rebuild` recognises the project.

Its summary compares what the comparison measured with what was drawn (each image's ground
truth is stored with its sample): per law the injected error rate and the measured misalignment
rate with its Wilson interval, and how often a decided pair agrees with the truth.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...evaluation.intervals import wilson_arrays
from ...types import WorkstationError
from .demo import DEFAULT_ERROR_RATES
from .laws import LAWS
from .results import ALIGNED, MISALIGNED, UNDECIDABLE

__all__ = ["add_demo", "DEMO_RUN_ID", "truth_summary"]

DEMO_RUN_ID = "demo_metalogic"
ProgressFn = Callable[..., None]


def _default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


def _run_all(project: Any, specs: list[Any], progress: ProgressFn | None, offset: int, total: int,
             what: str) -> None:
    """Start the jobs, step them side by side to the end; WorkstationError if one fails."""
    from ...jobs.progress import DONE
    from ...jobs.runner import JobRun

    runs = [JobRun(project, s.job_id).start() for s in specs]
    try:
        while True:
            for r in runs:
                r.step()
            if progress is not None:
                progress(offset + sum(int(r.progress.done) for r in runs), total, what)
            if all(r.finished for r in runs):
                break
            time.sleep(0.1)
    except BaseException:
        for r in runs:
            r.cancel()
        raise
    bad = [r for r in runs if r.status != DONE]
    if bad:
        raise WorkstationError(f"the MetaLogic demo's {what} job {bad[0].job_id} ended {bad[0].status}: "
                               f"{bad[0].message}")


def truth_summary(data: Any, results: Any, truths: dict[str, Any]) -> dict[str, Any]:
    """The measured outcome against the drawn truth of each image pair (its A image's truth)."""
    n = len(data)
    injected = np.zeros(n, bool)
    known = np.zeros(n, bool)
    for i, sid in enumerate(data.sample_a.tolist()):
        t = truths.get(sid)
        if isinstance(t, dict) and "injected" in t:
            known[i] = True
            injected[i] = bool(t["injected"])
    v = np.asarray(results.verdict)
    decided = (v != UNDECIDABLE) & known
    mis = v == MISALIGNED
    law = np.asarray(results.law, np.int64)
    rows = []
    for k, name in enumerate(LAWS):
        sel = decided & (law == k)
        m, d = int((mis & sel).sum()), int(sel.sum())
        lo, hi = wilson_arrays(np.array([m]), np.array([d]))
        rows.append({"law": name, "pairs": int(((law == k) & known).sum()), "decided": d,
                     "set_rate": DEFAULT_ERROR_RATES[name],
                     "injected_rate": float(injected[(law == k) & known].mean()) if ((law == k) & known).any()
                     else float("nan"),
                     "measured_rate": m / d if d else float("nan"), "rate_lo": float(lo[0]), "rate_hi": float(hi[0])})
    right = decided & (mis == injected)
    return {"pairs_with_truth": int(known.sum()), "decided": int(decided.sum()),
            "coverage": float(decided.sum() / known.sum()) if known.any() else float("nan"),
            "decided_accuracy": float(right.sum() / decided.sum()) if decided.any() else float("nan"),
            "missed_errors": int((decided & injected & (v == ALIGNED)).sum()),
            "false_errors": int((decided & ~injected & mis).sum()), "by_law": rows}


def add_demo(project: Any, *, n_pairs: int = 200, seeds: int = 2, size: int = 512, workers: int | None = None,
             progress: ProgressFn | None = None, suite_seed: int = 0, run_id: str = DEMO_RUN_ID) -> dict[str, Any]:
    """Add the MetaLogic demo to an open project; returns its summary (see the module docstring)."""
    from ...evaluation.run import evaluate_and_store
    from ...jobs.spec import PROCEDURAL, SCENE, create_detect_job, create_generate_job
    from .config import MetaLogicConfig
    from .. import get_method
    from .prompts import suite_prompts
    from .suite import build_suite

    METHOD = get_method("metalogic")  # the registered method object (its module imports this one)
    if seeds < 1:
        raise WorkstationError(f"the MetaLogic demo needs at least one seed per pair, got {seeds}")
    if run_id in project.samples.run_ids():
        raise WorkstationError(f"the project already holds the run {run_id!r}; the MetaLogic demo is built once")
    t0 = time.perf_counter()
    n_jobs = _default_workers() if workers is None else max(1, int(workers))
    suite = build_suite("main", n_pairs, seed=suite_seed, objects="demo")
    prompts = suite_prompts(suite)
    label = f"builtin:metalogic:{suite.name}:{prompts.content_hash()}"
    shards = [None] if n_jobs == 1 else [f"{i}/{n_jobs}" for i in range(1, n_jobs + 1)]
    gen = [create_generate_job(project, prompts, generator=PROCEDURAL, params={"width": size, "height": size},
                               seeds=list(range(seeds)), run_id=run_id, shard=sh, batch_size=16, suite=label)
           for sh in shards]
    project.samples.add_run(run_id, method="demo_procedural", model={"generator": PROCEDURAL},
                            params={"seeds": seeds, "width": size, "height": size, "suite": label},
                            provenance={"generator": PROCEDURAL, "renderer": "workstation.methods.metalogic.demo.render_side",
                                        "suite": suite.name, "suite_hash": suite.content_hash,
                                        "error_rates": DEFAULT_ERROR_RATES, "jobs": [g.job_id for g in gen]},
                            source="demo")
    total = 2 * len(prompts) * seeds
    _run_all(project, gen, progress, 0, total, "image")
    det = [create_detect_job(project, detector=SCENE, runs=[run_id], shard=sh, batch_size=32) for sh in shards]
    _run_all(project, det, progress, total // 2, total, "detection")
    data = METHOD.load(project)
    cfg = MetaLogicConfig(name="default")
    eid, results = evaluate_and_store(project, METHOD, cfg=cfg, note="demo: default MetaLogic parameters",
                                      data=data)
    if progress is not None:
        progress(total, total, "evaluated")
    truths = {k: v for k, v in project.samples.truth().items() if isinstance(v, dict)}
    a, m, u = results.counts()
    return {"method": "metalogic", "run_id": run_id, "suite": suite.name, "suite_pairs": len(suite),
            "seeds": seeds, "image_pairs": len(data), "images": 2 * len(data),
            "detections": int(data.pairs.n_detections), "config_id": eid,
            "verdicts": {"ALIGNED": a, "MISALIGNED": m, "UNDECIDABLE": u},
            "truth": truth_summary(data, results, truths),
            "lines": METHOD.summary_lines(data, results, eid, cfg),
            "timings": {"total_s": time.perf_counter() - t0, "workers": n_jobs}}
