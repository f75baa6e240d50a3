"""Benchmark: the vectorised checker at 100k, 300k and 1M samples, against the original.

For each size, a synthetic dataset (~6 primary detections per image with distractor labels,
4 perturbation variants, a secondary detector; ~32 cached detections per sample) and:

- ``prepare`` (parameter-independent, once per loaded dataset) and the first ``evaluate``;
- re-evaluation under new parameters, median of ``--repeat`` calls, each with values not seen
  before (so no cached result can answer): every stage (min_area_fraction changes too), the
  selection and decision stages (t_det and the rest, min_area_fraction kept), the area filter
  alone (min_area_fraction in steps of 0.001, as a drag), a move of the window's benchmark
  (margin and t_det together, in steps of 0.005 and 0.01, as ``bench_gui.py``'s slider moves
  change them), and one slider at a time (margin, t_det, ambiguity Δ, max-overlap IoU, weights,
  τ); wall and CPU time,
  with 1 and 2 threads. The last two results are kept alive, as the window keeps the one it
  shows: a margin or weight change decides again from it what it changes (the checker's
  stages, module docstring), as a drag in the window does;
- peak memory: tracemalloc's peak of ``prepare`` and of one new-parameter ``evaluate`` (numpy
  reports its buffers to tracemalloc), and the process's ru_maxrss so far;
- the baseline: SpatialBench-UC's own ``evaluate_sample`` (``../shared/anchors``, unchanged),
  in this process on the same detections (``sbuc_original.py``), timed on the first
  ``--orig-n`` samples and extrapolated linearly to the size; the verdicts of both are compared
  on those samples.

    .venv/bin/python tests/benchmarks/bench_checker.py [--sizes 100000,300000,1000000]
        [--repeat 7] [--threads 1,2] [--orig-n 10000]
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, Path(__file__).resolve().parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from workstation.methods.spatial import checker
from workstation.methods.spatial.checker import evaluate, prepare
from workstation.perturb import DEFAULT_PERTURBATIONS
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Detections, Samples
from workstation.methods.spatial.data import spatial_dataset
from workstation.types import ORIGINAL_NAME, PRIMARY, SECONDARY

VOCAB = np.array([f"object{i:02d}" for i in range(60)], dtype=object)


def synthetic_dataset(n: int, seed: int = 0) -> Dataset:
    """n samples of 512x512 images with cached primary / secondary / perturbed detections."""
    rng = np.random.default_rng(seed)
    W = H = 512.0
    rel = rng.integers(0, 4, n).astype(np.int8)
    a = rng.integers(0, len(VOCAB), n)
    b = (a + rng.integers(1, len(VOCAB), n)) % len(VOCAB)

    # ---- primary detections on the original image: 4..8 per image ------------------------
    k = rng.integers(4, 9, n)
    si = np.repeat(np.arange(n), k)
    pos = np.arange(len(si)) - np.repeat(np.cumsum(k) - k, k)
    lab = rng.integers(0, len(VOCAB), len(si))
    r = rng.random(len(si))
    lab = np.where(r < 0.12, a[si], np.where(r < 0.24, b[si], lab))  # extra instances
    lab = np.where((pos == 0) & (rng.random(len(si)) < 0.92), a[si], lab)
    lab = np.where((pos == 1) & (rng.random(len(si)) < 0.92), b[si], lab)
    score = np.round(rng.uniform(0.05, 1.0, len(si)), 3)
    cx = rng.uniform(0, W, len(si))
    cy = rng.uniform(0, H, len(si))
    bw = W * rng.uniform(0.02, 0.6, len(si))
    bh = H * rng.uniform(0.02, 0.6, len(si))
    x1, x2 = np.clip(cx - bw / 2, 0, W), np.clip(cx + bw / 2, 0, W)
    y1, y2 = np.clip(cy - bh / 2, 0, H), np.clip(cy + bh / 2, 0, H)

    # ---- four perturbed variants: jittered copies, 5% dropped ----------------------------
    nv = len(DEFAULT_PERTURBATIONS)
    rep = np.repeat(np.arange(len(si)), nv)
    var = np.tile(np.arange(1, nv + 1), len(si))
    keep = rng.random(len(rep)) >= 0.05
    rep, var = rep[keep], var[keep]
    jit = lambda s: rng.normal(0, s, len(rep))
    px1 = np.clip(x1[rep] + jit(3.0), 0, W)
    py1 = np.clip(y1[rep] + jit(3.0), 0, H)
    px2 = np.clip(np.maximum(x2[rep] + jit(3.0), px1), 0, W)
    py2 = np.clip(np.maximum(y2[rep] + jit(3.0), py1), 0, H)
    pscore = np.clip(score[rep] + jit(0.03), 0, 1)

    # ---- secondary detector: copies of A / B boxes (85% kept) + one distractor ------------
    ab = np.flatnonzero((lab == a[si]) | (lab == b[si]))
    ab = ab[rng.random(len(ab)) < 0.85]
    sd = rng.integers(0, len(VOCAB), n)
    s_si = np.concatenate([si[ab], np.arange(n)])
    s_lab = np.concatenate([lab[ab], sd])
    s_score = np.concatenate([np.clip(score[ab] * 0.8 + rng.uniform(0, 0.2, len(ab)), 0, 1),
                              rng.uniform(0.3, 0.9, n)])
    m2 = len(s_si)
    s_x1 = np.clip(np.concatenate([x1[ab], rng.uniform(0, W / 2, n)]) + rng.normal(0, 4, m2), 0, W)
    s_y1 = np.clip(np.concatenate([y1[ab], rng.uniform(0, H / 2, n)]) + rng.normal(0, 4, m2), 0, H)
    s_x2 = np.clip(np.maximum(np.concatenate([x2[ab], s_x1[len(ab):] + 40]) + rng.normal(0, 4, m2), s_x1), 0, W)
    s_y2 = np.clip(np.maximum(np.concatenate([y2[ab], s_y1[len(ab):] + 40]) + rng.normal(0, 4, m2), s_y1), 0, H)

    cat = np.concatenate
    dets = Detections(
        sample_idx=cat([si, si[rep], s_si]).astype(np.int64),
        source=cat([np.full(len(si), PRIMARY), np.full(len(rep), PRIMARY),
                    np.full(m2, SECONDARY)]).astype(np.int8),
        variant=cat([np.zeros(len(si)), var, np.zeros(m2)]).astype(np.int16),
        label=VOCAB[cat([lab, lab[rep], s_lab])],
        score=cat([score, pscore, s_score]), x1=cat([x1, px1, s_x1]), y1=cat([y1, py1, s_y1]),
        x2=cat([x2, px2, s_x2]), y2=cat([y2, py2, s_y2]),
    )
    sid = np.array([f"s{i:07d}" for i in range(n)], dtype=object)
    pid = np.array([f"p{i:07d}" for i in range(n)], dtype=object)
    samples = Samples(
        sample_id=sid, run_id=np.full(n, "synthetic", dtype=object), prompt_id=pid,
        seed=(np.arange(n) % 4).astype(np.int64),
        width=np.full(n, W), height=np.full(n, H), image_path=np.full(n, "", dtype=object),
        has_secondary=rng.random(n) < 0.97,
        has_perturbed=np.ones(n, bool),
    )
    names = (ORIGINAL_NAME,) + tuple(p.name for p in DEFAULT_PERTURBATIONS)
    return spatial_dataset(samples, rel, VOCAB[a], VOCAB[b], dets, names)


# Each scenario gives a config whose changed values were never evaluated before (a fresh k per
# call: tiny offsets keep the values representative), so no cached result can answer.
BASE = CheckerConfig()
_K = itertools.count(1)


def _fresh(**offsets: float) -> CheckerConfig:
    k = next(_K)
    return BASE.replace(**{name: getattr(BASE, name) + step * k for name, step in offsets.items()})


_TICKS = itertools.count(1)


def _tick(name: str, step: float, *more: tuple[str, float]) -> CheckerConfig:
    """``name`` one step of the window's slider (``step``: 0.005 for the margin, 0.01 for t_det)
    from the value before, up from the default and back after forty steps: the checker starts
    from the result before it (kept alive), as in a drag, and decides again what the values
    between can change, which a step of 1e-5 would all but empty. A new value each time but
    after a jump back (one in forty). ``more``: other (name, step) moved with it."""
    i = next(_TICKS) % 40
    return BASE.replace(**{n: round(getattr(BASE, n) + s * i, 6) for n, s in ((name, step), *more)})


SCENARIOS: list[tuple[str, Callable[[], CheckerConfig]]] = [
    ("every stage (+ min_area_fraction)", lambda: _fresh(
        min_area_fraction=1e-6, t_det=1e-5, margin=-1e-5, ambiguity_delta=-1e-5, w_detection=1e-5)),
    ("selection + decision (all but maf)", lambda: _fresh(
        t_det=1e-5, margin=-1e-5, ambiguity_delta=-1e-5, max_overlap_iou=-1e-5, consistency_threshold=1e-5,
        w_geometry=1e-5)),
    ("area filter alone (0.001 steps)", lambda: _tick("min_area_fraction", 0.001)),
    ("slider move: margin + t_det together", lambda: _tick("margin", 0.005, ("t_det", 0.01))),
    ("slider: margin (0.005 steps)", lambda: _tick("margin", 0.005)),
    ("slider: t_det (0.01 steps)", lambda: _tick("t_det", 0.01)),
    ("slider: ambiguity_delta", lambda: _fresh(ambiguity_delta=-1e-5)),
    ("slider: max_overlap_iou", lambda: _fresh(max_overlap_iou=-1e-5)),
    ("slider: weights (conf only)", lambda: _fresh(w_detection=1e-5)),
    ("slider: tau (nothing to compute)", lambda: _fresh(tau=1e-5)),
]


def held_mb(prep: Any) -> float:
    """Memory of the arrays a Prepared holds (its nbytes(), or counted from its fields)."""
    if hasattr(prep, "nbytes"):
        return float(prep.nbytes()) / 1e6
    total = 0
    for v in vars(prep).values():
        for a in (v.values() if isinstance(v, dict) else [v]):
            total += a.nbytes if isinstance(a, np.ndarray) else 0
    return total / 1e6


def set_threads(k: int | None) -> None:
    checker.parallel.THREADS = k


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def traced_peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def run_size(n: int, args: argparse.Namespace) -> None:
    t = time.perf_counter()
    ds = synthetic_dataset(n, seed=1)
    print(f"\n=== {n:,} samples, {len(ds.detections):,} cached detections "
          f"({len(ds.detections) / n:.1f}/sample; built in {time.perf_counter() - t:.1f} s)")
    prep_peak = traced_peak_mb(lambda: prepare(Dataset(ds.samples, ds.detections, ds.prompts, ds.variant_names)))
    t, c = time.perf_counter(), time.process_time()
    prep = prepare(ds)
    print(f"prepare(): {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU; holds "
          f"{held_mb(prep):.0f} MB; tracemalloc peak {prep_peak:.0f} MB (once per loaded dataset)")
    t = time.perf_counter()
    first = evaluate(ds, BASE)
    p_, f_, u_ = first.counts()
    print(f"first evaluate(): {1e3 * (time.perf_counter() - t):.0f} ms (builds the stages); "
          f"PASS {p_:,} FAIL {f_:,} UNDECIDABLE {u_:,}")
    keep = [first]  # the caller keeps its last results alive, as the GUI does
    for threads in args.threads:
        set_threads(threads)
        print(f"-- {threads} thread(s); wall ms median (min-max) and CPU ms median of {args.repeat}")
        for s_i, (label, make) in enumerate(SCENARIOS):
            walls, cpus = [], []
            for i in range(args.repeat):
                cfg = make()
                t, c = time.perf_counter(), time.process_time()
                v = evaluate(ds, cfg)
                walls.append(time.perf_counter() - t)
                cpus.append(time.process_time() - c)
                keep.append(v)
                del keep[:-2]
            med = statistics.median(walls)
            print(f"   {label:36s} {1e3 * med:7.1f} ({1e3 * min(walls):.1f}-{1e3 * max(walls):.1f})"
                  f"  CPU {1e3 * statistics.median(cpus):7.1f}   {1e9 * med / n:5.0f} ns/sample")
    set_threads(None)
    ev_peak = traced_peak_mb(lambda: keep.append(evaluate(ds, SCENARIOS[0][1]())))
    print(f"tracemalloc peak of one every-stage evaluate(): {ev_peak:.0f} MB "
          f"(its result holds {sum(getattr(keep[-1], f).nbytes for f in ('verdict', 'reason', 'reason_detail', 'conf', 'c_detection', 'c_geometry', 'c_stability', 'c_agreement', 'delta', 'iou_ab', 'sel_a', 'sel_b', 'sel2_a', 'sel2_b')) / 1e6:.0f} MB)")
    stages = getattr(prep, "stages", None)
    if stages is not None:
        print(f"stage caches now hold {stages.nbytes() / 1e6:.0f} MB (at most {stages.MAX_AREA} area and "
              f"{stages.MAX_SELECTIONS} selection stages; selected rows shared with live results)")
    print(f"process ru_maxrss so far: {maxrss_mb():.0f} MB (includes building the synthetic data)")

    if args.orig_n:
        import sbuc_original as orig

        rows = np.arange(min(args.orig_n, n))
        items = orig.inputs(ds, rows)
        cfg = SCENARIOS[1][1]()
        ours = evaluate(ds, cfg)
        t = time.perf_counter()
        res = orig.evaluate_original(ds, items, cfg)
        per = (time.perf_counter() - t) / len(rows)
        bad, err = orig.agreement(res, ours, rows)
        ours_wall = _median_wall(ds, SCENARIOS[1][1], 7)
        print(f"original SpatialBench-UC evaluate_sample (same process, same detections): "
              f"{1e6 * per:.0f} us/sample on {len(rows):,} samples -> {per * n:.1f} s extrapolated to {n:,}; "
              f"vectorised (selection + decision, median) {1e3 * ours_wall:.0f} ms -> {per * n / ours_wall:.0f}x; "
              f"verdict/reason differences on those samples: {bad}, max |conf difference| {err:.1e}")


def _median_wall(ds: Dataset, make: Callable[[], CheckerConfig], k: int) -> float:
    walls = []
    keep = []
    for _ in range(k):
        cfg = make()
        t = time.perf_counter()
        keep.append(evaluate(ds, cfg))
        walls.append(time.perf_counter() - t)
        del keep[:-2]
    return statistics.median(walls)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,300000,1000000", help="comma-separated sample counts")
    ap.add_argument("--repeat", type=int, default=7, help="evaluate() calls per scenario (median reported)")
    ap.add_argument("--threads", default="1,2", help="thread counts to time, e.g. 1,2")
    ap.add_argument("--orig-n", type=int, default=10_000,
                    help="samples timed with the original evaluate_sample (0: skip the baseline)")
    args = ap.parse_args(argv)
    args.threads = [int(x) for x in args.threads.split(",") if x]
    chunks = checker.parallel
    print(f"checker chunks: about {chunks.CHUNKS_PER_PASS} a pass, of {chunks.CHUNK:,} to "
          f"{chunks.MAX_CHUNK:,} samples; default threads {chunks._threads()}")
    for n in (int(x) for x in args.sizes.split(",") if x):
        run_size(n, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
