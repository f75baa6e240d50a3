"""Benchmark: audit plans with a second judge, on the simulated audits of `tests/audit_sim.py`
(200 prompts × 4 seeds, a checker that abstains on about 60 % of the images).

A simulated second judge scores every image: s = sigmoid(a·(2z − 1) + ε), z = 1 where a human
labels the image PASS, ε standard normal, a set per population so that the Pearson correlation
of s with z is the stated one (``--correlations``). Every audit draws a fresh population (its
own seed) and, on the same population and the same judge, runs:

* **the true PASS rate to ±``--width``** (95 %): the plan without a second judge, the plan with
  it (its score bins inside each of the checker's outcome groups, `plan.SecondJudge`), the plan
  with a judge that judged only ``--partial`` of the images (the rest are strata of their own),
  and a uniform sample of images read by the design's estimate (one stratum, finite-population
  correction), each stopped as soon as its interval is as narrow as the goal;
* **the checker's PASS precision to ±``--precision-width``**: uniform sampling of the PASS
  images (the honest baseline: the saving of labelling PASS images only is not the judge's), the
  plan without and with the second judge.

Printed per design: mean and median labels at the stopping point, coverage of the truth (the
population's own rate) at the stopping point, the mean effective sample size the plan reports,
and how many fewer labels the second judge needs than the plan without it (and than uniform).

    .venv/bin/python tests/benchmarks/bench_second_judge.py [--audits 1000] [--correlations 0.8 0.45]
        [--width 0.04] [--precision-width 0.03] [--partial 0.8] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT, ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from audit_sim import Population, population  # noqa: E402
from workstation.evaluation.plan import AuditPlan, Goal, SecondJudge  # noqa: E402
from workstation.evaluation.ppi import z_for  # noqa: E402

CONF = 0.95


def judge_scores(pop: Population, rho: float, seed: int) -> np.ndarray:
    """A second judge's score per image whose correlation with the human PASS is ``rho``."""
    z = (pop.human == 1).astype(np.float64)
    eps = np.random.default_rng([seed, 77, int(round(1000 * rho))]).normal(size=pop.n)
    lo, hi = 0.0, 30.0
    s = z
    for _ in range(50):  # the correlation grows with a: bisect
        a = (lo + hi) / 2
        s = 1.0 / (1.0 + np.exp(-(a * (2 * z - 1) + eps)))
        if np.corrcoef(s, z)[0, 1] < rho:
            lo = a
        else:
            hi = a
    return s


def run_plan(pop: Population, goal: Goal, seed: int, judge: SecondJudge | None) -> dict[str, float]:
    human = np.full(pop.n, -1, np.int8)
    plan = AuditPlan(pop.table(human), goal, seed=seed, second_judge=judge)
    while not plan.reached():
        new = plan.draw(1)
        if not new:
            break
        for it in new[0].items:
            i = int(it[1:])
            human[i] = pop.human[i]
        plan.update_labels(human)
    st = plan.status()
    e = st.estimate
    truth = pop.truth_rate() if goal.quantity == "rate" else pop.truth_precision()
    return {"labels": float(e.labels), "cover": float(e.low <= truth <= e.high), "ess": st.effective_labels,
            "hw": e.half_width}


def run_uniform(pop: Population, domain: np.ndarray, width: float, seed: int) -> dict[str, float]:
    """Images of the domain in a random order, read by the design's estimate of one stratum
    (`ppi.design_estimate`: the sample variance, at least that of the adjusted rate
    (k + z²/2) / (n + z²), with the finite-population correction, Student's t at n − 1), stopped
    at the width; computed for every n at once (a test checks it equals design_estimate)."""
    z = (pop.human == 1).astype(np.float64)
    dom = np.flatnonzero(domain)
    big = len(dom)
    zs = z[dom][np.random.default_rng([seed, 11]).permutation(big)]
    n, lo, hi, hw = uniform_path(zs)
    ok = np.flatnonzero((hw <= width + 1e-12) & (n >= 2))
    i = int(ok[0]) if len(ok) else big - 1
    truth = float(zs.mean())
    return {"labels": float(n[i]), "cover": float(lo[i] <= truth <= hi[i]), "ess": float("nan"), "hw": float(hw[i])}


def uniform_path(zs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n, low, high, half-width) of the one-stratum design estimate after each of the first n
    labels of ``zs`` (the population in its labelling order)."""
    from scipy.special import stdtrit

    big = len(zs)
    n = np.arange(1, big + 1, dtype=np.float64)
    k = np.cumsum(zs)
    p = k / n
    s2 = np.where(n > 1, (k - k * k / n) / np.maximum(n - 1, 1), 0.0)
    zc2 = z_for(CONF) ** 2
    const = (k == 0) | (k == n)
    q = 0.5 * zc2 / (n + zc2)
    s2 = np.where(const & (n > 1), np.maximum(s2, q * (1 - q)), s2)
    pt = np.clip((k + 0.5 * zc2) / (n + zc2), 0, 1)
    s2 = np.where(n > 1, np.maximum(s2, pt * (1 - pt)), 0.25)
    var = s2 * (1 - n / big) / n
    tq = stdtrit(np.maximum(n - 1, 1), 1 - (1 - CONF) / 2)
    hw = tq * np.sqrt(np.maximum(var, 0))
    return n, np.clip(p - hw, 0, 1), np.clip(p + hw, 0, 1), hw


def one_audit(args: tuple[int, tuple[float, ...], float, float, float]) -> dict[str, dict[str, float]]:
    r, rhos, width, pwidth, partial = args
    pop = population(r, "checker")
    z = (pop.human == 1).astype(np.float64)
    out: dict[str, dict[str, float]] = {}
    g_rate = Goal("rate", width, CONF, "item")
    g_prec = Goal("precision", pwidth, CONF, "item")
    out["rate | uniform images, design estimate"] = run_uniform(pop, np.ones(pop.n, bool), width, r)
    out["rate | plan, no second judge"] = run_plan(pop, g_rate, r, None)
    out["precision | uniform PASS images, design estimate"] = run_uniform(pop, pop.verdict == 0, pwidth, r)
    out["precision | plan, no second judge"] = run_plan(pop, g_prec, r, None)
    for rho in rhos:
        s = judge_scores(pop, rho, r)
        d = pop.verdict == 0
        corr = {"corr": float(np.corrcoef(s, z)[0, 1]), "corr_pass": float(np.corrcoef(s[d], z[d])[0, 1]),
                "corr_abst": float(np.corrcoef(s[pop.outcome == -1], z[pop.outcome == -1])[0, 1])}
        judge = SecondJudge(f"sim ρ={rho:g}", s)
        out[f"rate | plan, second judge ρ={rho:g}"] = run_plan(pop, g_rate, r, judge) | corr
        out[f"precision | plan, second judge ρ={rho:g}"] = run_plan(pop, g_prec, r, judge) | corr
        if partial < 1.0 and rho == rhos[0]:
            miss = np.random.default_rng([r, 13]).random(pop.n) >= partial
            part = SecondJudge(f"sim ρ={rho:g}, {100 * partial:g} % judged", np.where(miss, np.nan, s))
            out[f"rate | plan, second judge ρ={rho:g}, {100 * partial:g} % judged"] = run_plan(pop, g_rate, r, part)
    return out


def _mean(xs: list[float]) -> float:
    a = np.asarray(xs, np.float64)
    a = a[np.isfinite(a)]
    return float(a.mean()) if len(a) else float("nan")


def report(results: list[dict[str, dict[str, float]]], args: argparse.Namespace) -> None:
    agg: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for res in results:
        for name, vals in res.items():
            for k, v in vals.items():
                agg[name][k].append(float(v))
    n = len(results)
    print(f"\n=== {n} simulated audits (checker population, 800 images each; nominal {100 * CONF:g} %) ===")
    print(f"goals: true PASS rate ±{args.width:g}, PASS precision ±{args.precision_width:g}, at 95 %")
    print(f"   {'quantity | design':58s} {'labels':>7s} {'median':>7s} {'coverage':>9s} {'± (95 % of cov.)':>17s}"
          f" {'ESS':>7s} {'corr':>6s} {'corr in group':>13s}")
    for name, vals in agg.items():
        cov = _mean(vals["cover"])
        se = 1.96 * np.sqrt(cov * (1 - cov) / max(1, len(vals["cover"])))
        corr = _mean(vals["corr"]) if "corr" in vals else float("nan")
        grp = (_mean(vals["corr_pass"]) if name.startswith("precision") else _mean(vals["corr_abst"])) \
            if "corr" in vals else float("nan")
        print(f"   {name:58s} {_mean(vals['labels']):7.1f} {float(np.median(vals['labels'])):7.0f} "
              f"{100 * cov:8.1f}% {100 * se:16.1f}% {_mean(vals['ess']):7.1f} "
              + (f"{corr:6.2f} {grp:13.2f}" if np.isfinite(corr) else f"{'':6s} {'':13s}"))
    print("\n   labels saved by the second judge (mean labels, same populations, same run):")
    for q, base, honest in (("rate", "rate | plan, no second judge", "rate | uniform images, design estimate"),
                            ("precision", "precision | plan, no second judge",
                             "precision | uniform PASS images, design estimate")):
        b = _mean(agg[base]["labels"])
        u = _mean(agg[honest]["labels"])
        for name in agg:
            if name.startswith(f"{q} | plan, second judge"):
                w = _mean(agg[name]["labels"])
                print(f"   {name:58s} {100 * (1 - w / b):5.1f} % fewer than the plan without it, "
                      f"{100 * (1 - w / u):5.1f} % fewer than {honest.split('| ')[1]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--correlations", type=float, nargs="+", default=[0.8, 0.45])
    ap.add_argument("--width", type=float, default=0.04)
    ap.add_argument("--precision-width", type=float, default=0.03)
    ap.add_argument("--partial", type=float, default=0.8,
                    help="share of images the partial judge judged (1: no partial judge)")
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--seed", type=int, default=0, help="first audit's seed (audits use seed, seed+1, ...)")
    ap.add_argument("--jsonl", default="", help="write each audit's figures to this file as it ends")
    ap.add_argument("--report", default="", help="only print the figures of a --jsonl file")
    args = ap.parse_args()
    if args.report:
        with open(args.report, encoding="utf-8") as fh:
            report([json.loads(line) for line in fh if line.strip()], args)
        return
    t0 = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_second_judge: {args.audits} audits, {args.workers} worker(s), load {load:.2f}")
    jobs = [(args.seed + r, tuple(args.correlations), args.width, args.precision_width, args.partial)
            for r in range(args.audits)]
    results: list[dict[str, dict[str, float]]] = []
    log = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    ex = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        for res in (ex.map(one_audit, jobs, chunksize=4) if ex else map(one_audit, jobs)):
            results.append(res)
            if log:
                log.write(json.dumps(res) + "\n")
                log.flush()
    finally:
        if ex:
            ex.shutdown()
        if log:
            log.close()
    report(results, args)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
