"""Benchmark: the vectorised MetaLogic comparison vs the plain per-pair reference.

Builds synthetic image pairs (default 1,000,000 pairs = 2,000,000 images, ~6 detections per image:
the pair's entities, duplicate boxes, second labels on the same box, other objects; B is A's scene
with jitter and, for some pairs, an omission, a duplicate or a swap), then prints
- the time of ``prepare`` (duplicate suppression and sorting; once per loaded data set),
- the median time of ``evaluate`` under new thresholds (what a slider move costs), and the time of
  the per-entity selected boxes, which a result builds only when they are first read,
- the time of ``evaluate_reference`` (pure Python loop) on a subset, extrapolated to all pairs,
- the ratio, and whether both agree on the subset.

    .venv/bin/python tests/benchmarks/bench_metalogic.py [--n 1000000] [--ref-n 20000] [--repeat 7]
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

from workstation.methods.metalogic.compare import evaluate, evaluate_reference, prepare  # noqa: E402
from workstation.methods.metalogic.config import MetaLogicConfig  # noqa: E402
from workstation.methods.metalogic.data import PairData  # noqa: E402

VOCAB = np.array([f"object{i:02d}" for i in range(80)], dtype=object)


def synthetic_pairs(n: int, seed: int = 0) -> PairData:
    """n image pairs of 512×512 images, 2 or 3 entities each, ~6 detections per image."""
    rng = np.random.default_rng(seed)
    W = 512.0
    e = 3
    n_ent = rng.integers(2, 4, n)
    ent_code = np.stack([rng.integers(0, 80, n), rng.integers(1, 27, n), rng.integers(27, 53, n)], axis=1)
    ent_code[:, 1] = (ent_code[:, 0] + ent_code[:, 1]) % 80
    ent_code[:, 2] = (ent_code[:, 0] + ent_code[:, 2]) % 80
    used = np.arange(e)[None, :] < n_ent[:, None]
    entity = np.where(used, VOCAB[ent_code], "")
    dim = rng.integers(0, 3, n)  # none / x / y
    absent = used & (np.arange(e)[None, :] == n_ent[:, None] - 1) & (rng.random(n) < 0.3)[:, None]
    count = np.where(used, np.where(absent, 0, 1), -1).astype(np.int16)
    rank = np.where((count > 0) & (dim[:, None] > 0), np.cumsum(count > 0, axis=1) - 1, -1).astype(np.int8)

    # ---- image A: one box per present entity, extra instances, second labels, other objects ----
    pr, ps = np.nonzero(count > 0)
    k = len(pr)
    place = np.where(dim[pr] > 0, rank[pr, ps], rng.integers(0, 3, k))
    cx = np.where(dim[pr] == 1, 80 + 170 * place + rng.normal(0, 15, k), rng.uniform(60, 450, k))
    cy = np.where(dim[pr] == 2, 80 + 170 * place + rng.normal(0, 15, k), rng.uniform(60, 450, k))
    bw, bh = rng.uniform(30, 140, k), rng.uniform(30, 140, k)
    lab = ent_code[pr, ps]
    sc = rng.uniform(0.35, 0.98, k)
    parts = [(pr, lab, sc, cx, cy, bw, bh)]
    j = rng.random(k) < 0.35  # a second label on the same box, lower score
    parts.append((pr[j], rng.integers(0, 80, j.sum()), sc[j] * rng.uniform(0.2, 1.0, j.sum()),
                  cx[j], cy[j], bw[j], bh[j]))
    j = rng.random(k) < 0.15  # the detector's duplicate box of the same label
    parts.append((pr[j], lab[j], sc[j] * 0.7, cx[j] + 3, cy[j] + 2, bw[j], bh[j]))
    op = np.repeat(np.arange(n), rng.poisson(2.5, n))  # other objects, ~2.5 per image, low scores
    m = len(op)
    parts.append((op, rng.integers(0, 80, m), rng.uniform(0.05, 0.6, m), rng.uniform(30, 480, m),
                  rng.uniform(30, 480, m), rng.uniform(5, 120, m), rng.uniform(5, 120, m)))
    a_pair, a_lab, a_sc, a_cx, a_cy, a_bw, a_bh = (np.concatenate(c) for c in zip(*parts))

    # ---- image B: A jittered; some pairs lose a box, gain a copy or swap two entities ---------
    keep = rng.random(len(a_pair)) >= 0.04
    nk = int(keep.sum())
    b_pair, b_lab, b_bw, b_bh = a_pair[keep], a_lab[keep], a_bw[keep], a_bh[keep]
    b_sc = np.clip(a_sc[keep] + rng.normal(0, 0.03, nk), 0.01, 1.0)
    b_cx = a_cx[keep] + rng.normal(0, 4, nk)
    b_cy = a_cy[keep] + rng.normal(0, 4, nk)
    swap = (rng.random(n) < 0.08)[b_pair] & (dim[b_pair] > 0)
    b_cx = np.where(swap & (dim[b_pair] == 1), W - b_cx, b_cx)
    b_cy = np.where(swap & (dim[b_pair] == 2), W - b_cy, b_cy)
    dup = np.flatnonzero(rng.random(k) < 0.05)
    extra = (pr[dup], lab[dup], rng.uniform(0.3, 0.9, len(dup)), rng.uniform(40, 470, len(dup)),
             rng.uniform(40, 470, len(dup)), bw[dup], bh[dup])
    b_pair, b_lab, b_sc, b_cx, b_cy, b_bw, b_bh = (
        np.concatenate([x, y]) for x, y in zip((b_pair, b_lab, b_sc, b_cx, b_cy, b_bw, b_bh), extra))

    img = np.concatenate([2 * a_pair, 2 * b_pair + 1])
    lab_all = np.concatenate([a_lab, b_lab])
    score = np.round(np.concatenate([a_sc, b_sc]), 3)
    cxa, cya = np.concatenate([a_cx, b_cx]), np.concatenate([a_cy, b_cy])
    bwa, bha = np.concatenate([a_bw, b_bw]), np.concatenate([a_bh, b_bh])
    x1, x2 = np.clip(cxa - bwa / 2, 0, W), np.clip(cxa + bwa / 2, 0, W)
    y1, y2 = np.clip(cya - bha / 2, 0, W), np.clip(cya + bha / 2, 0, W)
    x2, y2 = np.maximum(x2, x1), np.maximum(y2, y1)
    return PairData(
        pair_id=np.array([f"p{i:07d}" for i in range(n)], dtype=object),
        law=rng.integers(0, 5, n).astype(np.int8), modifier=rng.integers(0, 2, n).astype(np.int8),
        dimension=dim.astype(np.int8), axis=dim.astype(np.int8),
        run=np.where(rng.random(n) < 0.5, "model-a", "model-b").astype(object),
        seed=np.arange(n, dtype=np.int64),
        entity=entity.astype(object), expected_count=count, expected_rank=rank,
        width=np.full((n, 2), W), height=np.full((n, 2), W),
        det_image=img, det_label=VOCAB[lab_all], det_score=score, det_x1=x1, det_y1=y1, det_x2=x2, det_y2=y2,
    )


PARAMS = [
    dict(score_threshold=0.35, near_band=0.04, axis_margin=0.06),
    dict(score_threshold=0.4, min_area_fraction=0.01, ambiguity_delta=0.05),
    dict(score_threshold=0.25, near_band=0.08, axis_margin=0.03),
    dict(score_threshold=0.3, min_area_fraction=0.02, score_slope=0.3),
    dict(score_threshold=0.45, near_band=0.02, ambiguity_delta=0.15, axis_margin=0.1),
]

FIELDS = ("verdict", "kind", "reason", "slot", "slot2", "side", "conf", "ok_a", "ok_b", "count", "count_lo",
          "count_hi", "sel_row")


def same(a, b) -> bool:  # type: ignore[no-untyped-def]
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS) and np.array_equal(
        a.coord, b.coord, equal_nan=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="image pairs in the synthetic data")
    ap.add_argument("--ref-n", type=int, default=20_000, help="pairs for the pure-Python reference")
    ap.add_argument("--repeat", type=int, default=7, help="evaluate() timings (median reported)")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    data = synthetic_pairs(args.n, seed=1)
    print(f"data: {args.n:,} image pairs, {data.n_detections:,} detections "
          f"({data.n_detections / (2 * args.n):.1f}/image; built in {time.perf_counter() - t:.1f} s)")
    base = MetaLogicConfig()
    t, c = time.perf_counter(), time.process_time()
    prepare(data, base.dedup_iou)
    print(f"prepare():                 {time.perf_counter() - t:8.3f} s wall, "
          f"CPU {time.process_time() - c:.3f} s (once per loaded data set)")
    r = evaluate(data, base)  # warm-up
    a, m, u = r.counts()
    print(f"default outcomes: ALIGNED {a:,}  MISALIGNED {m:,}  UNDECIDABLE {u:,}")
    times, cpu = [], []
    for i in range(args.repeat):
        cfg = base.replace(**PARAMS[i % len(PARAMS)])
        t, c = time.perf_counter(), time.process_time()
        evaluate(data, cfg)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    t_eval = statistics.median(times)
    print(f"evaluate() new thresholds: {t_eval:8.3f} s median wall of {len(times)} "
          f"(min {min(times):.3f}, max {max(times):.3f}; CPU median {statistics.median(cpu):.3f} s)"
          f" = {1e9 * t_eval / args.n:.0f} ns/pair")
    res = evaluate(data, base.replace(**PARAMS[0]))
    t = time.perf_counter()
    _ = res.sel_row, res.coord
    print(f"... selected boxes (sel_row, coord), built on first access: {time.perf_counter() - t:.3f} s")

    small = synthetic_pairs(args.ref_n, seed=2)
    cfg = base.replace(**PARAMS[0])
    t = time.perf_counter()
    ref = evaluate_reference(small, cfg)
    t_ref = time.perf_counter() - t
    per = t_ref / args.ref_n
    ok = same(evaluate(small, cfg), ref)
    print(f"evaluate_reference():      {t_ref:8.3f} s for {args.ref_n:,} pairs = {1e6 * per:.1f} us/pair"
          f" -> {per * args.n:.1f} s extrapolated to {args.n:,}")
    print(f"speed-up (reference / vectorised): {per * args.n / t_eval:.0f}x;"
          f" vectorised == reference on the subset: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
