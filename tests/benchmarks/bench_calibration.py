"""Benchmark: the calibration grid search, against SpatialBench-UC's own 36-combination search.

1. The published run (``../shared/fixtures/spatialbench_uc/sd15_boxdiff``, 800 samples) with 200
   labels made as ``tests/core/test_calibration.py`` makes them (a stratified audit sample of the
   checker's verdicts, 20 % of them changed at random): ``calibration.grid_search`` over the
   paper's grid (margin {0.03,0.05,0.07,0.10} × t_det {0.2,0.3,0.4} × τ {0.3,0.5,0.7}) and the
   original ``grid_search_calibration`` (``../shared/anchors``, unchanged, same process, same
   recorded detections: ``sbuc_original.py``); both timed, the same best parameters asserted.
2. Synthetic datasets of 100k, 300k and 1M samples (``bench_checker.synthetic_dataset``) with
   ``--labels`` (10,000) labelled samples made the same way: the paper's grid, from a dataset
   not prepared yet (as ``main.py calibrate`` meets it) and from one already prepared and
   evaluated (as the window has it), median of ``--repeat``; a 20 × 20 × 50 grid too; the
   tracemalloc peak of one search. The original's search re-evaluates only the labelled
   samples, so its time does not depend on the dataset size: it is timed on the first
   ``--orig-labels`` labelled samples and extrapolated linearly to ``--labels``, and its best
   parameters on those samples are asserted equal to ours on the same samples.

    .venv/bin/python tests/benchmarks/bench_calibration.py [--sizes 100000,300000,1000000]
        [--labels 10000] [--repeat 5] [--orig-labels 1000]
"""

from __future__ import annotations

import argparse
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

from workstation.methods.spatial import audit, checker
from workstation.methods.spatial import calibration as cal
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset
from workstation.methods.spatial.types import FAIL, PASS, UNDECIDABLE

SBUC = ROOT.parent / "shared" / "fixtures" / "spatialbench_uc"
BIG_GRID = {"margin": np.linspace(0.02, 0.2, 20).tolist(), "t_det": np.linspace(0.1, 0.6, 20).tolist(),
            "tau": np.linspace(0.0, 0.98, 50).tolist()}


def labelled(ds: Dataset, cfg: CheckerConfig, size: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """(audited rows, human verdict per sample row or -1): a stratified sample of the checker's
    verdicts, 20 % of them replaced by a random verdict (tests/core/test_calibration.py)."""
    v = checker.evaluate(ds, cfg)
    rows = audit.stratified_sample(ds, v, size, seed=seed)
    rng = np.random.default_rng(seed)
    human = np.full(ds.n, -1)
    human[rows] = v.verdict[rows]
    flip = rows[rng.random(len(rows)) < 0.2]
    human[flip] = rng.choice([PASS, FAIL, UNDECIDABLE], len(flip))
    return rows, human


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, float, Any]:
    """(median, min, max) wall seconds of fn() and its last result."""
    walls = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
    return statistics.median(walls), min(walls), max(walls), out


def traced_peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def fresh(ds: Dataset) -> Dataset:
    """The same arrays without any cached preparation (as a newly loaded dataset)."""
    return Dataset(ds.samples, ds.detections, ds.prompts, ds.variant_names)


def params(best: dict[str, Any]) -> str:
    return f"margin {best['margin']:g}, t_det {best['t_det']:g}, tau {best['tau']:g}"


def published(args: argparse.Namespace) -> None:
    import sbuc_original as orig

    from workstation.methods.spatial.sbuc import parse_run

    run = SBUC / "sd15_boxdiff"
    if not (run / "eval" / "per_sample.jsonl").is_file():
        print(f"published run not found at {run} (needs ../shared): part 1 skipped")
        return
    parsed = parse_run(run, SBUC / "v1.0.1" / "prompts.jsonl")
    ds, cfg = parsed.dataset, parsed.config
    assert cfg is not None
    rows, human = labelled(ds, cfg, 200)
    grid = {k: list(v) for k, v in cal.PAPER_GRID.items()}
    ours_t, ours_min, ours_max, res = timed(lambda: cal.grid_search(fresh(ds), cfg, human, grid), args.repeat)
    items = orig.inputs(ds, rows)
    orig_t, orig_min, orig_max, theirs = timed(lambda: orig.calibrate_original(ds, rows, human, cfg, items),
                                               max(1, args.repeat // 2))
    same = orig.same_best(res.best, theirs)
    print(f"published run, {ds.n} samples, {len(rows)} labels, paper grid (36 combinations):")
    print(f"  calibration.grid_search:           {1e3 * ours_t:8.1f} ms median ({1e3 * ours_min:.1f}-{1e3 * ours_max:.1f})"
          f"  best: {params(res.best)}, J {res.best['j']:.4f}")
    print(f"  original grid_search_calibration:  {1e3 * orig_t:8.1f} ms median ({1e3 * orig_min:.1f}-{1e3 * orig_max:.1f})"
          f"  best: margin {theirs['margin']:g}, detection_score {theirs['detection_score']:g}, "
          f"confidence_threshold {theirs['confidence_threshold']:g}")
    print(f"  ratio original / ours: {orig_t / ours_t:.0f}x; same best parameters: {same}")
    if not same:
        raise SystemExit("the original and the project's grid search chose different parameters")


def at_size(n: int, args: argparse.Namespace) -> None:
    import sbuc_original as orig
    from bench_checker import synthetic_dataset

    t = time.perf_counter()
    ds = synthetic_dataset(n, seed=1)
    cfg = CheckerConfig()
    rows, human = labelled(fresh(ds), cfg, args.labels)
    print(f"\n=== {n:,} samples ({len(ds.detections):,} cached detections), {len(rows):,} labels "
          f"(built in {time.perf_counter() - t:.1f} s)")
    grid = {k: list(v) for k, v in cal.PAPER_GRID.items()}
    cold_t, cold_min, cold_max, res = timed(lambda: cal.grid_search(fresh(ds), cfg, human, grid), args.repeat)
    print(f"  paper grid, dataset not prepared (CLI):  {1e3 * cold_t:7.1f} ms median ({1e3 * cold_min:.1f}-"
          f"{1e3 * cold_max:.1f}); best: {params(res.best)}")
    checker.evaluate(ds, cfg)  # prepared and evaluated, as in the window
    warm_t, warm_min, warm_max, res_w = timed(lambda: cal.grid_search(ds, cfg, human, grid), args.repeat)
    assert res_w.best == res.best
    print(f"  paper grid, dataset prepared (window):   {1e3 * warm_t:7.1f} ms median ({1e3 * warm_min:.1f}-"
          f"{1e3 * warm_max:.1f})")
    peak = traced_peak_mb(lambda: cal.grid_search(fresh(ds), cfg, human, grid))
    print(f"  tracemalloc peak of one paper-grid search: {peak:.0f} MB")
    big_t, _, _, big = timed(lambda: cal.grid_search(ds, cfg, human, BIG_GRID), max(1, args.repeat // 2))
    print(f"  20 x 20 x 50 grid (400 checker evaluations): {1e3 * big_t:7.1f} ms median; best: {params(big.best)}")
    print(f"  target: paper grid over {len(rows):,} labels <= 2 s: "
          f"{'met' if max(cold_t, warm_t) <= 2.0 else 'NOT met'}")

    if args.orig_labels:
        sub_rows = rows[:min(args.orig_labels, len(rows))]
        sub_human = np.full(ds.n, -1)
        sub_human[sub_rows] = human[sub_rows]
        ours_sub = cal.grid_search(ds, cfg, sub_human, grid)
        items = orig.inputs(ds, sub_rows)
        t = time.perf_counter()
        theirs = orig.calibrate_original(ds, sub_rows, sub_human, cfg, items)
        t_orig = time.perf_counter() - t
        scale = len(rows) / len(sub_rows)
        same = orig.same_best(ours_sub.best, theirs)
        print(f"  original grid_search_calibration (same process, same detections): {t_orig:.2f} s on "
              f"{len(sub_rows):,} labels -> {t_orig * scale:.1f} s extrapolated to {len(rows):,} labels "
              f"({t_orig * scale / cold_t:.0f}x ours, dataset not prepared); same best parameters on those "
              f"{len(sub_rows):,} labels: {same}")
        if not same:
            raise SystemExit("the original and the project's grid search chose different parameters")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,300000,1000000", help="comma-separated sample counts (0: none)")
    ap.add_argument("--labels", type=int, default=10_000, help="labelled samples per synthetic dataset")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs (median reported)")
    ap.add_argument("--orig-labels", type=int, default=1_000,
                    help="labels the original search is timed on at each size (0: skip)")
    args = ap.parse_args(argv)
    published(args)
    for n in (int(x) for x in args.sizes.split(",") if x and int(x) > 0):
        at_size(n, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
