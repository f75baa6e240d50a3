"""Benchmark: audit plans, prediction-powered estimates and Learn then Test on simulated audits
with known truth and prompt-level correlation (`tests/audit_sim.py`: 200 prompts × 4 seeds).

Every simulated audit draws a fresh population (its own seed) and audits it; the truth is that
population's own rate (a finite population: these 800 images). Printed:

1. **Coverage** of every estimator over ``--audits`` audits (nominal 95 %), with its mean
   half-width and labels: a uniform sample of images; a sample of whole prompts (all four seeds
   labelled: intervals that treat the images as independent under-cover there); today's
   stratified sampler (`workstation.methods.spatial.audit.stratified_sample`: run × relation ×
   verdict, five confidence bins, proportional), read as the audited share with a Wilson
   interval and as a stratified estimate; the audit plan stopped at its goal (single images,
   whole prompts, and the checker's PASS precision).
2. **Labels for the same target width** (the true PASS rate to ±``--width`` and the PASS
   precision to ±``--precision-width``, 95 %): uniform sampling, today's sampler (its size found
   by bisection, each reading) and the plan, with the coverage each reached.
3. **Learn then Test vs J**: a uniform audit of ``--ltt-labels`` images, a grid of confidence
   thresholds τ; how often the chosen τ's realised risk (its error rate over the whole
   population) exceeds α, for LTT (fixed sequence and Bonferroni) and for the τ minimising the
   paper's objective J.

    .venv/bin/python tests/benchmarks/bench_audit_plans.py [--audits 1000] [--population checker]
        [--width 0.04] [--precision-width 0.03] [--alpha 0.05] [--delta 0.1] [--workers 2]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT, ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from audit_sim import Population, population, todays_sample  # noqa: E402
from workstation.evaluation.ltt import learn_then_test  # noqa: E402
from workstation.evaluation.plan import AuditPlan, Goal  # noqa: E402
from workstation.evaluation.ppi import (  # noqa: E402
    Estimate,
    cluster_bootstrap_estimate,
    design_estimate,
    ppi_mean_estimate,
    ppi_mean_interval_clustered,
    t_ppf,
    wilson_estimate,
    z_for,
)
from workstation.evaluation.intervals import wilson_arrays  # noqa: E402

CONF = 0.95
N_FIXED = 160  # labels of the fixed-size audits
PROMPTS_FIXED = 40  # whole prompts (4 images each)
TAUS = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.96)


# ---------------------------------------------------------------------------------------------
# one audit
# ---------------------------------------------------------------------------------------------


def _cover(e: Estimate, truth: float) -> dict[str, float]:
    return {"cover": float(e.low <= truth <= e.high) if e.defined else float("nan"),
            "hw": e.half_width, "labels": float(e.labels), "err": e.value - truth}


def _z_rate(pop: Population) -> np.ndarray:
    return (pop.human == 1).astype(np.float64)


def _today_strata(pop: Population) -> np.ndarray:
    from workstation.methods.spatial.audit import confidence_bins

    return pop.verdict.astype(np.int64) * 5 + confidence_bins(pop.conf, 5)


def _today_estimates(pop: Population, rows: np.ndarray, domain: np.ndarray) -> tuple[Estimate, Estimate]:
    """Today's sample read two ways over a domain: the audited share with Wilson, and the
    stratified estimate (verdict × confidence bin, with the finite-population correction)."""
    z = _z_rate(pop)
    in_dom = np.zeros(pop.n, bool)
    in_dom[rows] = True
    in_dom &= domain
    w = wilson_estimate(z[in_dom], confidence=CONF, population=int(domain.sum()))
    dom = np.flatnonzero(domain)
    zz = np.full(len(dom), np.nan)
    pos = np.searchsorted(dom, np.flatnonzero(in_dom))
    zz[pos] = z[np.flatnonzero(in_dom)]
    _, st = np.unique(_today_strata(pop)[dom], return_inverse=True)
    s = design_estimate(np.zeros(len(dom)), zz, st, len(dom), confidence=CONF)
    return w, s


def _run_plan(pop: Population, goal: Goal, seed: int) -> tuple[AuditPlan, Estimate]:
    human = np.full(pop.n, -1, np.int8)
    plan = AuditPlan(pop.table(human), goal, seed=seed)
    while not plan.reached():
        new = plan.draw(1)
        if not new:
            break
        for it in new[0].items:
            i = int(it[1:])
            human[i] = pop.human[i]
        plan.update_labels(human)
    return plan, plan.estimate()


def _first_n(hw: np.ndarray, width: float, start: int) -> int:
    ok = np.flatnonzero(hw[start:] <= width)
    return start + int(ok[0]) if len(ok) else len(hw) - 1


def _sequential_uniform(pop: Population, perm: np.ndarray, width: float) -> dict[str, dict[str, float]]:
    """Labels a uniform audit needs (images in a random order, stopped at the width)."""
    z = _z_rate(pop)[perm]
    f = pop.table().soft_prediction()[perm]
    big_n = pop.n
    truth = pop.truth_rate()
    n = np.arange(big_n + 1, dtype=np.float64)
    cz = np.concatenate([[0.0], np.cumsum(z)])
    out: dict[str, dict[str, float]] = {}
    zc = z_for(CONF)
    start = 20
    # Wilson (independent items: the plain audited share)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = wilson_arrays(cz[1:], n[1:], zc)
    hw = np.concatenate([[np.inf], (hi - lo) / 2.0])
    k = _first_n(hw, width, start)
    out["uniform, Wilson"] = {"labels": k, "cover": float(lo[k - 1] <= truth <= hi[k - 1])}
    # the design's interval: the finite-population correction
    with np.errstate(invalid="ignore", divide="ignore"):
        p = cz / np.maximum(n, 1)
        s2 = np.where(n > 1, p * (1 - p) * n / np.maximum(n - 1, 1), np.inf)
        hw2 = zc * np.sqrt(s2 * (1 - n / big_n) / np.maximum(n, 1))
    hw2[:2] = np.inf
    k = _first_n(hw2, width, start)
    out["uniform, labels only (FPC)"] = {"labels": k, "cover": float(abs(p[k] - truth) <= hw2[k])}
    # PPI with the finite-population correction (the difference estimator, λ = 1)
    rr = z - f
    cr, crr = np.concatenate([[0.0], np.cumsum(rr)]), np.concatenate([[0.0], np.cumsum(rr * rr)])
    with np.errstate(invalid="ignore", divide="ignore"):
        mr = cr / np.maximum(n, 1)
        vr = np.where(n > 1, (crr - n * mr * mr) / np.maximum(n - 1, 1), np.inf)
        hw3 = np.array([t_ppf(1 - (1 - CONF) / 2, max(k - 1, 1)) for k in range(big_n + 1)]) * np.sqrt(
            np.maximum(vr, 0) * (1 - n / big_n) / np.maximum(n, 1))
    hw3[:2] = np.inf
    k = _first_n(hw3, width, start)
    est3 = f.mean() + mr[k]
    out["uniform, PPI with the design's correction (FPC)"] = {"labels": k, "cover": float(abs(est3 - truth) <= hw3[k])}
    # PPI++ (the reference's formula; unlabelled = the rest)
    cf, cff, czf = (np.concatenate([[0.0], np.cumsum(x)]) for x in (f, f * f, z * f))
    tot_f, tot_ff = cf[-1], cff[-1]
    var_all = (tot_ff - tot_f ** 2 / big_n) / (big_n - 1)
    best = None
    for m in range(start, big_n - 1):
        mu_y, mu_f = cz[m] / m, cf[m] / m
        cov = czf[m] / m - mu_y * mu_f
        lam = float(np.clip(cov / ((1 + m / (big_n - m)) * var_all), 0, 1)) if var_all > 0 else 0.0
        uf, uff = (tot_f - cf[m]) / (big_n - m), (tot_ff - cff[m]) / (big_n - m)
        imp = lam * lam * (uff - uf * uf) / (big_n - m)
        r_mean = mu_y - lam * mu_f
        r_var = (cz[m] / m) - 2 * lam * czf[m] / m + lam * lam * cff[m] / m - r_mean ** 2
        h = zc * math.sqrt(max(imp + r_var / m, 0.0))
        if h <= width:
            est = lam * uf + r_mean
            best = {"labels": m, "cover": float(abs(est - truth) <= h)}
            break
    out["uniform, PPI++ (reference formula)"] = best or {"labels": big_n, "cover": 1.0}
    return out


def _bisect_size(pop: Population, seed: int, ok: Any) -> int:
    lo, hi = 20, pop.n
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(todays_sample(pop, mid, seed)):
            hi = mid
        else:
            lo = mid + 1
    return lo


def one_audit(args: tuple[int, str, float, float, float, float, int]) -> dict[str, dict[str, float]]:
    r, kind, width, pwidth, alpha, delta, ltt_labels = args
    pop = population(r, kind)
    rng = np.random.default_rng([r, 5])
    z = _z_rate(pop)
    truth = pop.truth_rate()
    truth_p = pop.truth_precision()
    table = pop.table()
    f = table.soft_prediction()
    out: dict[str, dict[str, float]] = {}
    # ---- 1. fixed-size audits -------------------------------------------------------------------------
    rows = np.sort(rng.choice(pop.n, N_FIXED, replace=False))
    lab = np.zeros(pop.n, bool)
    lab[rows] = True
    out["uniform 160 images: Wilson"] = _cover(wilson_estimate(z[rows], confidence=CONF), truth)
    zz = np.where(lab, z, np.nan)
    one = np.zeros(pop.n, np.int64)
    out["uniform 160 images: design (FPC)"] = _cover(design_estimate(f, zz, one, pop.n, confidence=CONF), truth)
    out["uniform 160 images: PPI++ (reference)"] = _cover(
        ppi_mean_estimate(z[rows], f[rows], f[~lab], confidence=CONF), truth)
    out["uniform 160 images: PPI++, prompt clusters"] = _cover(
        ppi_mean_interval_clustered(z[rows], f[rows], pop.prompt[rows], f[~lab], pop.prompt[~lab],
                                    confidence=CONF), truth)
    out["uniform 160 images: PPI, design (FPC)"] = _cover(
        design_estimate(f, zz, one, pop.n, confidence=CONF, lam=1.0), truth)
    prompts = rng.choice(pop.n_prompts, PROMPTS_FIXED, replace=False)
    prow = np.flatnonzero(np.isin(pop.prompt, prompts))
    out["40 whole prompts: Wilson (images independent)"] = _cover(wilson_estimate(z[prow], confidence=CONF), truth)
    zt = np.bincount(pop.prompt[prow], weights=z[prow], minlength=pop.n_prompts)
    zt_u = np.where(np.isin(np.arange(pop.n_prompts), prompts), zt, np.nan)
    out["40 whole prompts: design over prompts (FPC)"] = _cover(
        design_estimate(np.zeros(pop.n_prompts), zt_u, np.zeros(pop.n_prompts, np.int64), pop.n,
                        items_per_unit=np.full(pop.n_prompts, pop.k, np.float64), confidence=CONF), truth)
    out["40 whole prompts: prompt bootstrap"] = _cover(
        cluster_bootstrap_estimate(z[prow], pop.prompt[prow], confidence=CONF, n_boot=1000, seed=r), truth)
    trows = todays_sample(pop, N_FIXED, r)
    everything = np.ones(pop.n, bool)
    w, s = _today_estimates(pop, trows, everything)
    out["today's sampler 160: audited share, Wilson"] = _cover(w, truth)
    out["today's sampler 160: stratified (FPC)"] = _cover(s, truth)
    plan, e = _run_plan(pop, Goal("rate", width, CONF, "item"), r)
    out[f"plan: true PASS rate to ±{width:g}, images"] = _cover(e, truth)
    plan_c, ec = _run_plan(pop, Goal("rate", width, CONF, "cluster"), r)
    out[f"plan: true PASS rate to ±{width:g}, whole prompts"] = _cover(ec, truth)
    plan_p, ep = _run_plan(pop, Goal("precision", pwidth, CONF, "item"), r)
    out[f"plan: PASS precision to ±{pwidth:g}"] = _cover(ep, truth_p)
    # ---- 2. labels for the same width -----------------------------------------------------------------
    need: dict[str, dict[str, float]] = {}
    for name, v in _sequential_uniform(pop, rng.permutation(pop.n), width).items():
        need["rate | " + name] = v
    k = _bisect_size(pop, r, lambda rr: _today_estimates(pop, rr, everything)[0].half_width <= width)
    need["rate | today's sampler, audited share + Wilson"] = {
        "labels": k, "cover": _cover(_today_estimates(pop, todays_sample(pop, k, r), everything)[0], truth)["cover"]}
    k = _bisect_size(pop, r, lambda rr: _today_estimates(pop, rr, everything)[1].half_width <= width)
    need["rate | today's sampler, stratified (FPC)"] = {
        "labels": k, "cover": _cover(_today_estimates(pop, todays_sample(pop, k, r), everything)[1], truth)["cover"]}
    need["rate | audit plan"] = {"labels": e.labels, "cover": out[f"plan: true PASS rate to ±{width:g}, images"]["cover"]}
    dom_p = pop.verdict == 0
    k = _bisect_size(pop, r, lambda rr: _today_estimates(pop, rr, dom_p)[1].half_width <= pwidth)
    need["precision | today's sampler, stratified (FPC)"] = {
        "labels": k, "cover": _cover(_today_estimates(pop, todays_sample(pop, k, r), dom_p)[1], truth_p)["cover"]}
    k = _bisect_size(pop, r, lambda rr: _today_estimates(pop, rr, dom_p)[0].half_width <= pwidth)
    need["precision | today's sampler, audited share + Wilson"] = {
        "labels": k, "cover": _cover(_today_estimates(pop, todays_sample(pop, k, r), dom_p)[0], truth_p)["cover"]}
    need["precision | audit plan"] = {"labels": ep.labels, "cover": out[f"plan: PASS precision to ±{pwidth:g}"]["cover"]}
    for key, v in need.items():
        out["NEED " + key] = v
    # ---- 3. Learn then Test vs J ------------------------------------------------------------------------
    if kind == "checker":
        out.update(_ltt_vs_j(pop, rng, alpha, delta, ltt_labels))
    return out


def _ltt_vs_j(pop: Population, rng: np.random.Generator, alpha: float, delta: float,
              n_labels: int) -> dict[str, dict[str, float]]:
    from workstation.methods.spatial.calibration import objective, rank_combinations

    audit = np.zeros(pop.n, bool)
    audit[rng.choice(pop.n, n_labels, replace=False)] = True
    hv = np.where(pop.human == 1, 0, np.where(pop.human == 0, 1, 2))  # human as a verdict code
    decided_h = pop.human < 2
    taus = np.asarray(TAUS)
    cov_all = np.array([((pop.verdict < 2) & (pop.conf >= t)).mean() for t in taus])
    real = np.empty(len(taus))
    n = np.empty(len(taus), np.int64)
    k = np.empty(len(taus), np.int64)
    fpr = np.empty(len(taus))
    risk = np.empty(len(taus))
    cov_a = np.empty(len(taus))
    for i, t in enumerate(taus):
        c = (pop.verdict < 2) & (pop.conf >= t)
        wrong = c & decided_h & (pop.verdict != hv)
        real[i] = wrong.sum() / max((c & decided_h).sum(), 1)
        ca = c & audit
        n[i] = int((ca & decided_h).sum())
        k[i] = int((wrong & audit).sum())
        passes = ca & (pop.verdict == 0) & (pop.human >= 0)
        fpr[i] = ((passes & (pop.human == 0)).sum() / passes.sum()) if passes.sum() else 1.0
        risk[i] = (k[i] / n[i]) if n[i] else (0.0 if ca.sum() == 0 else 1.0)
        cov_a[i] = ca.sum() / n_labels
    j = objective(fpr, risk, cov_a)
    j_pick = int(rank_combinations(j, cov_a)[0])
    order = np.lexsort((np.arange(len(taus)), cov_all))  # least coverage (most conservative) first
    out: dict[str, dict[str, float]] = {}
    out["LTT | J's choice"] = {"exceed": float(real[j_pick] > alpha), "coverage": cov_all[j_pick], "none": 0.0,
                               "risk": real[j_pick]}
    for method in ("fixed_sequence", "bonferroni"):
        res = learn_then_test(n, k, alpha, delta, order=order, score=cov_all, method=method, n_audited=n_labels)
        if res.chosen is None:
            out[f"LTT | Learn then Test, {method.replace('_', ' ')}"] = {
                "exceed": 0.0, "coverage": 0.0, "none": 1.0, "risk": float("nan"),
                "more": float(res.more_labels) if res.more_labels is not None else float("nan")}
        else:
            out[f"LTT | Learn then Test, {method.replace('_', ' ')}"] = {
                "exceed": float(real[res.chosen] > alpha), "coverage": cov_all[res.chosen], "none": 0.0,
                "risk": real[res.chosen], "more": float("nan")}
    return out


# ---------------------------------------------------------------------------------------------
# printing
# ---------------------------------------------------------------------------------------------


def _mean(xs: list[float]) -> float:
    a = np.asarray(xs, np.float64)
    a = a[np.isfinite(a)]
    return float(a.mean()) if len(a) else float("nan")


def report(results: list[dict[str, dict[str, float]]], args: argparse.Namespace, kind: str) -> None:
    agg: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for res in results:
        for name, vals in res.items():
            for k, v in vals.items():
                agg[name][k].append(float(v))
    n_aud = len(results)
    print(f"\n=== population: {kind} — {n_aud} simulated audits (nominal {100 * CONF:g} %) ===")
    print("\n1. Coverage of each estimator (truth: the simulated run's own rate)")
    print(f"   {'design: estimator':58s} {'coverage':>9s} {'mean ±':>8s} {'labels':>7s} {'bias':>8s}")
    for name, vals in agg.items():
        if name.startswith(("NEED ", "LTT ")):
            continue
        cov = _mean(vals["cover"])
        print(f"   {name:58s} {100 * cov:8.1f}% {_mean(vals['hw']):8.4f} {_mean(vals['labels']):7.1f} "
              f"{_mean(vals['err']):+8.4f}")
    print(f"\n2. Labels for the same target width (95 %): true PASS rate ±{args.width:g}, "
          f"PASS precision ±{args.precision_width:g}")
    print(f"   {'quantity | design':58s} {'labels':>7s} {'median':>7s} {'coverage':>9s}")
    needs = {n[5:]: v for n, v in agg.items() if n.startswith("NEED ")}
    for name, vals in needs.items():
        print(f"   {name:58s} {_mean(vals['labels']):7.1f} {float(np.median(vals['labels'])):7.0f} "
              f"{100 * _mean(vals['cover']):8.1f}%")
    for q in ("rate", "precision"):
        plan = _mean(needs[f"{q} | audit plan"]["labels"])
        for today in ("today's sampler, stratified (FPC)", "today's sampler, audited share + Wilson"):
            t = _mean(needs[f"{q} | {today}"]["labels"])
            print(f"   {q}: the plan needs {100 * (1 - plan / t):.1f} % fewer labels than {today}")
    ltt = {n[6:]: v for n, v in agg.items() if n.startswith("LTT | ")}
    if ltt:
        print(f"\n3. Learn then Test vs J (uniform audit of {args.ltt_labels} images, {len(TAUS)} thresholds τ, "
              f"α = {args.alpha:g}, δ = {args.delta:g})")
        print(f"   {'choice':40s} {'P(risk > α)':>12s} {'none found':>11s} {'coverage':>9s} {'risk':>7s}")
        for name, vals in ltt.items():
            print(f"   {name:40s} {100 * _mean(vals['exceed']):11.1f}% {100 * _mean(vals['none']):10.1f}% "
                  f"{_mean([c for c, nn in zip(vals['coverage'], vals['none']) if not nn]):9.3f} "
                  f"{_mean(vals['risk']):7.4f}")
        more = [m for m in ltt.get("Learn then Test, fixed sequence", {}).get("more", []) if np.isfinite(m)]
        if more:
            print(f"   when none qualified (fixed sequence): about {np.median(more):.0f} more labels (median) "
                  "would let the first threshold qualify")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--population", choices=("checker", "scored", "both"), default="both")
    ap.add_argument("--width", type=float, default=0.04)
    ap.add_argument("--precision-width", type=float, default=0.03)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--ltt-labels", type=int, default=400)
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--seed", type=int, default=0, help="first audit's seed (audits use seed, seed+1, ...)")
    args = ap.parse_args()
    kinds = ("checker", "scored") if args.population == "both" else (args.population,)
    t0 = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_audit_plans: {args.audits} audits per population, {args.workers} worker(s), load {load:.2f}")
    for kind in kinds:
        jobs = [(args.seed + r, kind, args.width, args.precision_width, args.alpha, args.delta, args.ltt_labels)
                for r in range(args.audits)]
        if args.workers > 1:
            with ProcessPoolExecutor(args.workers) as ex:
                results = list(ex.map(one_audit, jobs, chunksize=8))
        else:
            results = [one_audit(j) for j in jobs]
        report(results, args, kind)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
