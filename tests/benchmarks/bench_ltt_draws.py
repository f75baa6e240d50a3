"""Learn then Test under unequal draws: how often the guaranteed choice's realised risk exceeds α.

Each simulated audit makes a population of checker outcomes (PASS / FAIL with a confidence) whose
errors against the truth grow as the confidence falls, FAIL more error-prone than PASS; the grid
is the confidence threshold τ (a configuration covers the outcomes with confidence ≥ τ). The
calibration labels come from one of three draws of the same size:

* **uniform** — a simple random sample of the population;
* **stratified** — equal numbers from every (outcome × confidence fifth) cell, so a cell's
  inclusion probability is n_h / N_h, unequal across cells;
* **PASS-only plan** — a precision plan's draw: the checker's PASS only, uniformly.

Learn then Test (`workstation.evaluation.ltt`) runs on each with the plain counts and with the
design weights (`design_counts`: 1/π, Kish's effective n, the part out of the draw's reach
counted as errors). The figure is the share of audits whose chosen τ has a true risk above α
(at most δ is the guarantee), beside the mean coverage of the choice. Beside them, the operating
point's risk at τ = 0.5 (`calibration.operating_point`, plain and weighted by 1/π): its mean
error against the true risk of the samples the draw reaches, over the same audits.

    .venv/bin/python tests/benchmarks/bench_ltt_draws.py --audits 1000
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from workstation.evaluation.ltt import design_counts, learn_then_test  # noqa: E402
from workstation.methods.spatial.calibration import operating_point  # noqa: E402
from workstation.methods.spatial.types import FAIL, PASS  # noqa: E402

TAUS = np.round(np.linspace(0.0, 0.95, 20), 4)


def population(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    conf = rng.uniform(0.0, 1.0, n)
    is_pass = rng.random(n) < 0.6
    p_err = np.where(is_pass, 0.30 * (1 - conf) ** 2, 0.05 + 0.45 * (1 - conf))
    error = rng.random(n) < p_err
    return conf, is_pass, error


def draw(rng: np.random.Generator, design: str, conf: np.ndarray, is_pass: np.ndarray, size: int
         ) -> tuple[np.ndarray, np.ndarray, float]:
    """(drawn rows, their inclusion probabilities, the share of the population the draw reaches)."""
    n = len(conf)
    if design == "uniform":
        rows = rng.choice(n, size, replace=False)
        return rows, np.full(size, size / n), 1.0
    if design == "pass-only plan":
        cand = np.flatnonzero(is_pass)
        rows = rng.choice(cand, min(size, len(cand)), replace=False)
        return rows, np.full(len(rows), len(rows) / len(cand)), len(cand) / n
    cell = is_pass.astype(np.int64) * 5 + np.minimum((conf * 5).astype(np.int64), 4)
    per = size // 10
    rows_l, pi_l = [], []
    for h in range(10):
        members = np.flatnonzero(cell == h)
        k = min(per, len(members))
        rows_l.append(rng.choice(members, k, replace=False))
        pi_l.append(np.full(k, k / len(members)))
    return np.concatenate(rows_l), np.concatenate(pi_l), 1.0


OP_TAU = 0.5


def op_error(conf: np.ndarray, is_pass: np.ndarray, error: np.ndarray, rows: np.ndarray, pi: np.ndarray,
             design: str) -> dict[bool, float]:
    """The operating point's risk at OP_TAU, plain and weighted, minus the true risk of the part of
    the population the draw reaches."""
    reach = is_pass if design == "pass-only plan" else np.ones(len(conf), bool)
    cov = reach & (conf >= OP_TAU)
    truth = float(error[cov].mean())
    checker = np.where(is_pass, PASS, FAIL)
    human = np.where(error, np.where(is_pass, FAIL, PASS), checker)
    out = {}
    for weighted in (False, True):
        e = operating_point(checker[rows], conf[rows], human[rows], None, OP_TAU,
                            weights=(1.0 / pi) if weighted else None, n_boot=0)
        out[weighted] = float(e["risk"].value) - truth
    return out


def one_audit(rng: np.random.Generator, design: str, n_pop: int, size: int, alpha: float, delta: float
              ) -> dict[bool, tuple[bool, float, float]]:
    conf, is_pass, error = population(rng, n_pop)
    covered_pop = conf[None, :] >= TAUS[:, None]
    cov_share = covered_pop.mean(axis=1)
    n_cov = covered_pop.sum(axis=1)
    true_risk = np.where(n_cov > 0, (covered_pop & error[None, :]).sum(axis=1) / np.maximum(n_cov, 1), 0.0)
    rows, pi, share = draw(rng, design, conf, is_pass, size)
    cov = covered_pop[:, rows]
    decided = np.ones(len(rows), bool)
    err = np.broadcast_to(error[rows], cov.shape)
    order = np.lexsort((np.arange(len(TAUS)), cov_share))
    op = op_error(conf, is_pass, error, rows, pi, design)
    out: dict[bool, tuple[bool, float, float]] = {}
    for weighted in (False, True):
        if weighted:
            c = design_counts(cov, decided, err, 1.0 / pi, alpha, covered_all=cov_share, drawn_share=share)
            res = learn_then_test(c.n, c.k, alpha, delta, order=order, score=cov_share, levels=c.alpha)
        else:
            c = design_counts(cov, decided, err, None, alpha)
            res = learn_then_test(c.n, c.k, alpha, delta, order=order, score=cov_share)
        if res.chosen is None:
            out[weighted] = (False, 0.0, op[weighted])
        else:
            out[weighted] = (bool(true_risk[res.chosen] > alpha), float(cov_share[res.chosen]), op[weighted])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--population", type=int, default=3000)
    ap.add_argument("--size", type=int, default=400)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"Learn then Test, α = {a.alpha:g}, δ = {a.delta:g}: {a.audits} audits of {a.size} labels "
          f"from a population of {a.population}, seed {a.seed}")
    print(f"{'draw':<16} {'weights':<8} {'risk > α':>9} {'mean coverage':>14} {'op. risk bias':>14}")
    worst = 0.0
    for di, design in enumerate(("pass-only plan", "stratified", "uniform")):
        rng = np.random.default_rng([a.seed, di])
        hits = {False: 0, True: 0}
        cover = {False: 0.0, True: 0.0}
        bias = {False: 0.0, True: 0.0}
        for _ in range(a.audits):
            r = one_audit(rng, design, a.population, a.size, a.alpha, a.delta)
            for wtd, (bad, cv, err) in r.items():
                hits[wtd] += bad
                cover[wtd] += cv
                bias[wtd] += err
        for wtd in (False, True):
            share = hits[wtd] / a.audits
            if wtd:
                worst = max(worst, share)
            print(f"{design:<16} {'yes' if wtd else 'no':<8} {100 * share:8.1f} % {cover[wtd] / a.audits:14.3f} "
                  f"{bias[wtd] / a.audits:+14.4f}")
    print(f"with weights, the largest share of audits above α: {100 * worst:.1f} % "
          f"({'within' if worst <= a.delta else 'ABOVE'} δ = {100 * a.delta:g} %); "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
