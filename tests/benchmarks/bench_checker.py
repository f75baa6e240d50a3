"""Benchmark: vectorised checker vs the plain per-sample reference.

Builds a synthetic dataset (default 1,000,000 samples; ~6 primary detections per image with
distractor labels, 4 perturbation variants, a secondary detector), then prints
- the time of ``prepare`` (parameter-independent, paid once per loaded dataset),
- the median time of ``evaluate`` under new parameter sets (what a slider move costs),
- the time of ``evaluate_reference`` (pure Python loop) on a subset, extrapolated per sample,
- the ratio, and a check that both give the same verdicts on the subset.

    .venv/bin/python tests/benchmarks/bench_checker.py [--n 1000000] [--ref-n 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workstation.methods.spatial.checker import evaluate, evaluate_reference, prepare
from workstation.perturb import DEFAULT_PERTURBATIONS
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Detections, Samples  # noqa: E402
from workstation.methods.spatial.data import spatial_dataset  # noqa: E402
from workstation.types import ORIGINAL_NAME, PRIMARY, SECONDARY  # noqa: E402

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
    jit = lambda s: rng.normal(0, s, len(rep))  # noqa: E731
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
        recorded_stability=np.full(n, np.nan), has_secondary=rng.random(n) < 0.97,
        has_perturbed=np.ones(n, bool),
    )
    names = (ORIGINAL_NAME,) + tuple(p.name for p in DEFAULT_PERTURBATIONS)
    return spatial_dataset(samples, rel, VOCAB[a], VOCAB[b], dets, names)


PARAMS = [
    dict(t_det=0.3, margin=0.07, min_area_fraction=0.01),
    dict(t_det=0.4, margin=0.05, ambiguity_delta=0.05),
    dict(t_det=0.25, margin=0.1, max_overlap_iou=0.4, consistency_threshold=0.6),
    dict(t_det=0.2, margin=0.03, min_area_fraction=0.02, geom_slope=0.2),
    dict(t_det=0.35, margin=0.08, ambiguity_delta=0.15),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="samples in the synthetic dataset")
    ap.add_argument("--ref-n", type=int, default=20_000, help="samples for the pure-Python reference")
    ap.add_argument("--repeat", type=int, default=5, help="evaluate() timings (median reported)")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    ds = synthetic_dataset(args.n, seed=1)
    print(f"dataset: {args.n:,} samples, {len(ds.detections):,} cached detections "
          f"({len(ds.detections) / args.n:.1f}/sample; built in {time.perf_counter() - t:.1f} s)")

    t, c = time.perf_counter(), time.process_time()
    prepare(ds)
    print(f"prepare():                 {time.perf_counter() - t:8.3f} s wall, CPU {time.process_time() - c:.3f} s"
          " (once per loaded dataset)")

    base = CheckerConfig()
    v = evaluate(ds, base)  # warm-up
    p, f, u = v.counts()
    print(f"default verdicts: PASS {p:,}  FAIL {f:,}  UNDECIDABLE {u:,}")
    times, cpu = [], []
    for i in range(args.repeat):
        cfg = base.replace(**PARAMS[i % len(PARAMS)])
        t, c = time.perf_counter(), time.process_time()
        evaluate(ds, cfg)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    t_eval = statistics.median(times)
    print(f"evaluate() new parameters: {t_eval:8.3f} s median wall of {len(times)} "
          f"(min {min(times):.3f}, max {max(times):.3f}; CPU median {statistics.median(cpu):.3f} s)"
          f" = {1e9 * t_eval / args.n:.0f} ns/sample")

    small = synthetic_dataset(args.ref_n, seed=2)
    cfg = base.replace(**PARAMS[0])
    t = time.perf_counter()
    ref = evaluate_reference(small, cfg)
    t_ref = time.perf_counter() - t
    per = t_ref / args.ref_n
    vec = evaluate(small, cfg)
    same = bool((vec.verdict == ref.verdict).all() and (vec.reason == ref.reason).all()
                and np.allclose(vec.conf, ref.conf, rtol=1e-12, atol=0))
    print(f"evaluate_reference():      {t_ref:8.3f} s for {args.ref_n:,} samples = {1e6 * per:.1f} us/sample"
          f" -> {per * args.n:.1f} s extrapolated to {args.n:,}")
    print(f"speed-up (reference / vectorised): {per * args.n / t_eval:.0f}x;"
          f" vectorised == reference on the subset: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
