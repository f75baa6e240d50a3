"""Benchmark: calibration grid search, vectorised vs a plain per-combination implementation.

2,000 labelled synthetic samples (primary + secondary detections and 4 perturbed variants),
a 20 × 20 × 50 grid over margin × t_det × τ.

- vectorised: `calibration.grid_search` — one checker evaluation per (margin, t_det), all
  50 τ at once from sorted confidences;
- plain: every (margin, t_det, τ) combination on its own — a checker evaluation and the metrics
  in Python loops over the samples (timed on a subset of combinations and extrapolated);
- plain, τ hoisted: one evaluation per (margin, t_det), the metrics per τ in Python loops
  (as SpatialBench-UC's own search is organised), also extrapolated.

    .venv/bin/python tests/benchmarks/bench_calibration.py [--samples 2000] [--subset 40]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workstation.methods.spatial import calibration as cal
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Detections, Samples  # noqa: E402
from workstation.methods.spatial.data import spatial_dataset  # noqa: E402
from workstation.methods.spatial.types import FAIL, PASS, UNDECIDABLE
from workstation.types import PRIMARY, SECONDARY


def synthetic(n: int, seed: int = 0) -> tuple[Dataset, np.ndarray]:
    """n samples with boxes for A and B, distractors, secondary detections, perturbed copies;
    human labels derived from the true layout with some noise."""
    rng = np.random.default_rng(seed)
    cfg = CheckerConfig()
    W = H = 512.0
    rel = rng.integers(0, 4, n).astype(np.int8)
    names = [f"obj{i}" for i in range(20)]
    la = rng.choice(names, n)
    lb = np.array([names[(names.index(a) + 1 + rng.integers(0, 19)) % 20] for a in la])
    d_true = rng.uniform(-0.6, 0.6, n)
    cols: dict[str, list] = {k: [] for k in ("si", "src", "var", "lab", "score", "x1", "y1", "x2", "y2")}

    def add(i: int, src: int, var: int, lab: str, score: float, cx: float, cy: float, w: float, h: float) -> None:
        cols["si"].append(i); cols["src"].append(src); cols["var"].append(var); cols["lab"].append(lab)
        cols["score"].append(score)
        cols["x1"].append(max(0.0, cx - w / 2)); cols["y1"].append(max(0.0, cy - h / 2))
        cols["x2"].append(min(W, cx + w / 2)); cols["y2"].append(min(H, cy + h / 2))

    for i in range(n):
        horiz = rel[i] < 2
        c = rng.uniform(0.3, 0.7)
        off = d_true[i] / 2
        if horiz:
            ca = ((c + off) * W, rng.uniform(0.3, 0.7) * H)
            cb = ((c - off) * W, rng.uniform(0.3, 0.7) * H)
        else:
            ca = (rng.uniform(0.3, 0.7) * W, (c + off) * H)
            cb = (rng.uniform(0.3, 0.7) * W, (c - off) * H)
        sa, sb = rng.uniform(0.15, 1.0), rng.uniform(0.15, 1.0)
        wa, ha, wb, hb = rng.uniform(40, 160, 4)
        # the detector sees the objects with some localisation error
        ca = (ca[0] + rng.normal(0, 10), ca[1] + rng.normal(0, 10))
        cb = (cb[0] + rng.normal(0, 10), cb[1] + rng.normal(0, 10))
        for var in range(len(cfg.perturbations) + 1):
            for src in (PRIMARY, SECONDARY):
                if var > 0 and src == SECONDARY:
                    continue
                jj = (3.0 if var > 0 else 0.0) + (5.0 if src == SECONDARY else 0.0)
                if rng.random() > 0.08:
                    add(i, src, var, la[i], float(np.clip(sa + rng.normal(0, 0.03), 0.01, 1)),
                        ca[0] + rng.normal(0, jj + 1e-9), ca[1] + rng.normal(0, jj + 1e-9), wa, ha)
                if rng.random() > 0.08:
                    add(i, src, var, lb[i], float(np.clip(sb + rng.normal(0, 0.03), 0.01, 1)),
                        cb[0] + rng.normal(0, jj + 1e-9), cb[1] + rng.normal(0, jj + 1e-9), wb, hb)
                if rng.random() < 0.15:  # a second, weaker A: sometimes ambiguous
                    add(i, src, var, la[i], float(np.clip(sa - rng.uniform(0, 0.3), 0.01, 1)),
                        rng.uniform(50, 460), rng.uniform(50, 460), wa, ha)
                if rng.random() < 0.3:  # an unrelated detection
                    add(i, src, var, "clutter", rng.uniform(0.2, 0.9), rng.uniform(50, 460), rng.uniform(50, 460), 50, 50)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    samples = Samples(
        sample_id=o([f"syn_{i:05d}" for i in range(n)]), run_id=o(rng.choice(["m1", "m2", "m3"], n).tolist()),
        prompt_id=o([f"p{i}" for i in range(n)]), seed=np.arange(n, dtype=np.int64) % 4, width=np.full(n, W), height=np.full(n, H),
        image_path=o([""] * n), recorded_stability=np.full(n, np.nan), has_secondary=np.ones(n, bool),
        has_perturbed=np.ones(n, bool),
    )
    f = lambda k: np.array(cols[k], np.float64)  # noqa: E731
    dets = Detections(np.array(cols["si"], np.int64), np.array(cols["src"], np.int8), np.array(cols["var"], np.int16),
                      o(cols["lab"]), f("score"), f("x1"), f("y1"), f("x2"), f("y2"))
    ds = spatial_dataset(samples, rel, la, lb, dets, ("original",) + tuple(p.name for p in cfg.perturbations))
    # relation holds when A is on the relation's side of B: left_of/above need d < 0
    holds = np.where((rel == 0) | (rel == 2), d_true < 0, d_true > 0)
    human = np.where(holds, PASS, FAIL)
    human = np.where(np.abs(d_true) < 0.03, UNDECIDABLE, human)
    flip = rng.random(n) < 0.05
    human = np.where(flip, rng.choice([PASS, FAIL, UNDECIDABLE], n), human).astype(np.int8)
    return ds, human


def plain_metrics(verdict: np.ndarray, conf: np.ndarray, human: np.ndarray, tau: float, w: cal.Weights) -> tuple:
    verdict = verdict.tolist(); conf = conf.tolist(); human = human.tolist()
    covered = correct = evaluated = n_pass = n_fp = 0
    for c, cf, h in zip(verdict, conf, human):
        if c in (PASS, FAIL) and cf >= tau:
            covered += 1
            if h in (PASS, FAIL):
                evaluated += 1
                correct += c == h
            if c == PASS:
                n_pass += 1
                n_fp += h == FAIL
    risk = 0.0 if covered == 0 else 1.0 - (correct / evaluated if evaluated else 0.0)
    fpr = n_fp / n_pass if n_pass else 1.0
    cov = covered / len(verdict)
    return w.fpr_pass * fpr + w.risk * risk + w.coverage * (1 - cov), fpr, risk, cov


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--subset", type=int, default=40, help="(margin, t_det, tau) combinations timed for the plain run")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from workstation.methods.spatial import checker

    t0 = time.perf_counter()
    ds, human = synthetic(args.samples)
    print(f"synthetic data: {ds.n} samples, {len(ds.detections)} detections ({time.perf_counter() - t0:.1f} s to build)")
    grids = {"margin": np.linspace(0.02, 0.2, 20).tolist(), "t_det": np.linspace(0.1, 0.6, 20).tolist(),
             "tau": np.linspace(0.0, 0.98, 50).tolist()}
    n_combos = 20 * 20 * 50
    base = CheckerConfig()

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = cal.grid_search(ds, base, human, grids)
        times.append(time.perf_counter() - t0)
    t_vec = min(times)
    print(f"vectorised grid_search, {n_combos} combinations ({20 * 20} checker evaluations): "
          f"best of {args.repeat} = {t_vec:.3f} s (runs: {', '.join(f'{t:.3f}' for t in times)})")
    print(f"  best: {res.best}")

    # checker alone, for context
    sub = ds.subset(np.flatnonzero(human >= 0))
    checker.prepare(sub)
    t0 = time.perf_counter()
    for m, t in itertools.islice(itertools.product(grids["margin"], grids["t_det"]), 20):
        checker.evaluate(sub, base.replace(margin=m, t_det=t))
    t_eval = (time.perf_counter() - t0) / 20
    print(f"checker.evaluate on {sub.n} samples: {t_eval * 1e3:.2f} ms per call")

    # plain: each (margin, t_det, tau) on its own, metrics in Python loops
    w = cal.Weights()
    rng = np.random.default_rng(0)
    all_triples = list(itertools.product(grids["margin"], grids["t_det"], grids["tau"]))
    pick = rng.choice(len(all_triples), args.subset, replace=False)
    t0 = time.perf_counter()
    plain_j = []
    for k in pick.tolist():
        m, t, tau = all_triples[k]
        v = checker.evaluate(sub, base.replace(margin=m, t_det=t))
        plain_j.append(plain_metrics(np.asarray(v.verdict), np.asarray(v.conf), human[human >= 0], tau, w)[0])
    t_plain_each = (time.perf_counter() - t0) / args.subset
    t_plain = t_plain_each * n_combos
    # the vectorised table agrees with the plain values on the timed combinations
    idx = {(res.columns["margin"][i], res.columns["t_det"][i], res.columns["tau"][i]): i for i in range(len(res))}
    err = max(abs(res.j[idx[all_triples[k]]] - j) for k, j in zip(pick.tolist(), plain_j))
    print(f"plain per-combination: {t_plain_each * 1e3:.2f} ms per combination (timed {args.subset}) "
          f"-> {t_plain:.1f} s extrapolated for {n_combos}; max |J difference| vs vectorised = {err:.1e}")

    # plain with tau hoisted: one evaluation per (margin, t_det), Python loops per tau
    t0 = time.perf_counter()
    n_pairs = 4
    for m, t in itertools.islice(itertools.product(grids["margin"], grids["t_det"]), n_pairs):
        v = checker.evaluate(sub, base.replace(margin=m, t_det=t))
        vv, cc = np.asarray(v.verdict), np.asarray(v.conf)
        for tau in grids["tau"]:
            plain_metrics(vv, cc, human[human >= 0], tau, w)
    t_hoist = (time.perf_counter() - t0) / n_pairs * 400
    print(f"plain, tau hoisted (one evaluation per margin x t_det, Python loop per tau): "
          f"{t_hoist:.2f} s extrapolated from {n_pairs} of 400")
    print(f"ratio plain / vectorised = {t_plain / t_vec:.0f}x; plain-tau-hoisted / vectorised = {t_hoist / t_vec:.1f}x")
    print(f"target 20x20x50 over {args.samples} samples <= 2 s: {'met' if t_vec <= 2.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
