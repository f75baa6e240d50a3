"""Simulation benchmark: do the workstation's 95 % intervals cover the truth 95 % of the time?

Draws audits from a known truth with prompt-level correlation (the K seeds of a prompt share its
difficulty: a prompt's images pass, abstain and are judged alike) and runs the workstation's own
functions on each simulated audit — `spatial.metrics.headline`, `spatial.calibration.
operating_point` and `risk_band`, `evaluation.agreement.annotator_agreement`,
`protobias.metrics.metric_table` and `annotator_kappa_table`, `metalogic.metrics.rate_rows`,
`dyeval.metrics.Summary.apr_estimate`. For every interval it prints the share of audits whose
interval holds the true value (the goal: 94–96 % for nominal 95 %) and its mean width, and beside
it the image-level percentile bootstrap (images resampled as if independent), which under-covers
when images share prompts. The true values come from one large seeded draw of the same
population (2,000,000 prompts or pairs), so they are exact to about 1e-3.

    .venv/bin/python tests/benchmarks/bench_intervals.py [--reps 1000] [--n-boot 2000] [--seed 0]

The audits: 200 prompts × 4 seeds for the per-image and prompt-level rates; 60 prompts × 4
seeds labelled by people for the operating point, the risk band and κ; 150 MetaLogic suite pairs ×
4 seeds; 40 DyEval prompts × 4 images; 300 ProtoBias triplets, two annotators rating both images.
`tests/core/test_interval_coverage.py` runs a smaller draw and asserts coverage ≥ 90 %.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workstation.dataset import Dataset, Detections, Samples  # noqa: E402
from workstation.evaluation.intervals import bootstrap_ratio_intervals, kappa_estimate  # noqa: E402

PASS, FAIL, UND = 0, 1, 2
K = 4  # seeds per prompt
TAUS = (0.3, 0.5, 0.7)


# =============================================================================================
# The population
# =============================================================================================
@dataclass(frozen=True)
class Population:
    """Prompt difficulty q ~ Beta(a, b) (ICC 1 / (a + b + 1)); a prompt's abstention propensity
    and the checker's error rate on it shift with normal effects on the logit scale, so coverage
    and risk are correlated within prompts too."""

    a: float = 1.6
    b: float = 1.2
    abstain_sd: float = 1.0
    error_sd: float = 1.0  # a prompt's effect on the checker's errors (logit scale)

    def images(self, rng: np.random.Generator, n_prompts: int, k: int = K) -> dict[str, np.ndarray]:
        q = rng.beta(self.a, self.b, n_prompts)
        ab = rng.normal(0.0, self.abstain_sd, n_prompts)
        er = rng.normal(0.0, self.error_sd, n_prompts)
        truth = rng.random((n_prompts, k)) < q[:, None]  # the image follows the prompt
        p_und = 1.0 / (1.0 + np.exp(-(-0.3 + ab[:, None] + 0.6 * ~truth)))
        und = rng.random((n_prompts, k)) < p_und
        # the checker's verdict when it decides: right less often on some prompts than on others
        p_right = 1.0 / (1.0 + np.exp(-(np.where(truth, 2.6, 1.7) - er[:, None])))
        right = rng.random((n_prompts, k)) < p_right
        says_pass = np.where(right, truth, ~truth)
        verdict = np.where(und, UND, np.where(says_pass, PASS, FAIL)).astype(np.int8)
        conf = np.where(right, rng.beta(5, 2, (n_prompts, k)), rng.beta(2, 3, (n_prompts, k)))
        conf = np.where(und, rng.beta(1, 4, (n_prompts, k)), conf)
        h_und = rng.random((n_prompts, k)) < 0.08  # people say UNDECIDABLE now and then
        h_err = rng.random((n_prompts, k)) < 0.05
        human = np.where(h_und, UND, np.where(truth ^ h_err, PASS, FAIL)).astype(np.int8)
        # a second annotator: agrees with the first on most images
        other = np.where(rng.random((n_prompts, k)) < 0.8, human, rng.integers(0, 3, (n_prompts, k))).astype(np.int8)
        return {"verdict": verdict.ravel(), "conf": conf.ravel(), "human": human.ravel(), "other": other.ravel(),
                "prompt": np.repeat(np.arange(n_prompts), k)}


def _kappa_table(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(x.astype(np.int64) * k + y.astype(np.int64), minlength=k * k).reshape(k, k).astype(float)


def _kappa(table: np.ndarray, weighted: bool) -> float:
    from workstation.evaluation.intervals import kappa_from_tables

    return float(kappa_from_tables(table, weighted))


def truths(pop: Population, seed: int, n: int = 2_000_000) -> dict[str, float]:
    """The population values every interval estimates (one large draw)."""
    rng = np.random.default_rng(seed + 1_000_003)
    t: dict[str, float] = {}
    parts: list[dict[str, np.ndarray]] = [pop.images(rng, n // 4) for _ in range(4)]
    d = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    v, c, h = d["verdict"], d["conf"], d["human"]
    dec = v != UND
    t["pass_rate"] = float(np.mean(v == PASS))
    t["coverage"] = float(np.mean(dec))
    t["pass_rate_cond"] = float(np.sum(v == PASS) / np.sum(dec))
    t["mean_conf"] = float(np.mean(c))
    per = (v == PASS).reshape(-1, K)
    t["prompt_pass_rate"] = float(np.mean(per.any(axis=1)))
    for tau in TAUS:
        cov = dec & (c >= tau)
        hd = cov & (h != UND)
        t[f"op_coverage@{tau}"] = float(np.mean(cov))
        t[f"risk@{tau}"] = float(np.sum(hd & (v != h)) / np.sum(hd))
        pl = cov & (v == PASS)
        t[f"fpr_pass@{tau}"] = float(np.sum(pl & (h == FAIL)) / np.sum(pl))
    t["kappa"] = _kappa(_kappa_table(h, d["other"], 3), weighted=False)
    # MetaLogic: a suite pair's misalignment propensity, its seeds alike
    m = rng.beta(1.5, 1.0, n // 4)
    mis = rng.random((n // 4, K)) < m[:, None]
    und = rng.random((n // 4, K)) < np.where(mis, 0.35, 0.15)
    t["paper_rate"] = float(np.mean(mis))
    t["decided_rate"] = float(np.sum(mis & ~und) / np.sum(~und))
    t["ml_coverage"] = float(np.mean(~und))
    t["apr"] = pop.a / (pop.a + pop.b)
    # ProtoBias: a triplet fails with probability 0.6; the margin where it ranks correctly
    diff = _pb_diff(rng, n)
    t["failure_rate"] = float(np.mean(diff <= 0))
    t["correct_margin"] = float(np.mean(diff[diff > 0]))
    r = _pb_ratings(rng, n // 2)
    t["kappa_w"] = _kappa(_kappa_table(r[0] - 1, r[1] - 1, 4), weighted=True)
    return t


def _pb_diff(rng: np.random.Generator, n: int) -> np.ndarray:
    """M(corr) − M(adv) on the rescaled scale: a failure when ≤ 0 (probability ~0.6)."""
    return rng.normal(-0.06, 0.24, n)


def _pb_ratings(rng: np.random.Generator, n_images: int) -> np.ndarray:
    """Two annotators' 1–4 ratings of ``n_images`` images (a shared image quality plus noise)."""
    base = rng.normal(2.5, 0.9, n_images)
    out = np.empty((2, n_images), np.int64)
    for a in range(2):
        out[a] = np.clip(np.rint(base + rng.normal(0, 0.55, n_images)), 1, 4)
    return out


# =============================================================================================
# One simulated audit per estimator
# =============================================================================================
@dataclass
class Tally:
    name: str
    interval: str
    hits: int = 0
    width: float = 0.0
    naive_hits: int = 0
    naive_width: float = 0.0
    naive: bool = False
    n: int = 0
    skipped: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, truth: float, lo: float, hi: float, nlo: float = math.nan, nhi: float = math.nan) -> None:
        if not (math.isfinite(lo) and math.isfinite(hi)):
            self.skipped += 1
            return
        self.n += 1
        self.hits += lo <= truth <= hi
        self.width += hi - lo
        if math.isfinite(nlo) and math.isfinite(nhi):
            self.naive = True
            self.naive_hits += nlo <= truth <= nhi
            self.naive_width += nhi - nlo

    def row(self) -> dict[str, Any]:
        n = max(self.n, 1)
        return {"estimate": self.name, "interval": self.interval, "audits": self.n, "coverage": self.hits / n,
                "mean_width": self.width / n,
                "image_bootstrap_coverage": self.naive_hits / n if self.naive else math.nan,
                "image_bootstrap_width": self.naive_width / n if self.naive else math.nan, "skipped": self.skipped}


def _naive(num: np.ndarray, den: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """The image-level percentile bootstrap: every image its own unit."""
    lo, hi = bootstrap_ratio_intervals(num, den, n_boot=n_boot, seed=seed)
    return float(lo[0]), float(hi[0])


def _spatial_dataset(n_prompts: int) -> Dataset:
    from workstation.methods.spatial.data import spatial_prompts

    n = n_prompts * K
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    pid = [f"p{i:05d}" for i in range(n_prompts)]
    samples = Samples(
        sample_id=o([f"s{i}" for i in range(n)]), run_id=o(["sim"] * n), prompt_id=o(np.repeat(pid, K).tolist()),
        seed=np.tile(np.arange(K, dtype=np.int64), n_prompts), width=np.full(n, 512.0), height=np.full(n, 512.0),
        image_path=o([""] * n), has_secondary=np.zeros(n, bool),
        has_perturbed=np.zeros(n, bool))
    prompts = spatial_prompts(pid, [""] * n_prompts, ["left_of"] * n_prompts, ["dog"] * n_prompts,
                              ["cat"] * n_prompts, suite="sim")
    return Dataset(samples, Detections.empty(), prompts)


def simulate(reps: int = 1000, n_boot: int = 2000, seed: int = 0, progress: Callable[[int], None] | None = None,
             only: tuple[str, ...] = (), truth_n: int = 2_000_000) -> list[dict[str, Any]]:
    """Run ``reps`` simulated audits of every kind (``only``: some of spatial, audit, metalogic,
    dyeval, protobias); one result row per interval. ``truth_n``: the size of the draw the true
    values come from."""
    from workstation.evaluation.agreement import annotator_agreement
    from workstation.methods.dyeval.metrics import outcome, summarize
    from workstation.methods.metalogic.metrics import StoredOutcomes, rate_rows
    from workstation.methods.protobias.metrics import Ratings, TripletScores, annotator_kappa_table, metric_table
    from workstation.methods.spatial.calibration import operating_point, risk_band
    from workstation.methods.spatial.metrics import headline

    pop = Population()
    truth = truths(pop, seed, truth_n)
    rng = np.random.default_rng(seed)
    tallies: dict[str, Tally] = {}

    def tally(name: str, interval: str) -> Tally:
        if name not in tallies:
            tallies[name] = Tally(name, interval)
        return tallies[name]

    want = set(only)

    def on(group: str) -> bool:
        return not want or group in want

    ds = _spatial_dataset(200)
    for r in range(reps):
        s = seed * 100_003 + r
        if on("spatial"):  # 200 prompts × 4 seeds: the per-image and prompt-level rates
            d = pop.images(rng, 200)
            v = SimpleNamespace(verdict=d["verdict"], conf=d["conf"], reason=np.zeros(len(d["verdict"]), np.int8))
            hl = headline(ds, v, n_boot=n_boot, seed=s).plain
            is_pass = (d["verdict"] == PASS).astype(float)
            dec = (d["verdict"] != UND).astype(float)
            ones = np.ones(len(dec))
            for key, num, den in (("pass_rate", is_pass, ones), ("coverage", dec, ones),
                                  ("pass_rate_cond", is_pass, dec), ("mean_conf", d["conf"], ones)):
                e = hl[key]
                tally(f"spatial {key}", e.method).add(truth[key], e.lo, e.hi, *_naive(num, den, n_boot, s))
            e = hl["prompt_pass_rate"]
            tally("spatial prompt_pass_rate (best-of-4)", e.method).add(truth["prompt_pass_rate"], e.lo, e.hi)
        if on("audit"):  # 60 prompts × 4 seeds labelled by people
            d = pop.images(rng, 60)
            for tau in TAUS:
                op = operating_point(d["verdict"], d["conf"], d["human"], d["prompt"], tau, n_boot=n_boot, seed=s)
                cov = (d["verdict"] != UND) & (d["conf"] >= tau)
                hd = cov & (d["human"] != UND)
                for key, tkey, num, den in (
                        ("coverage", f"op_coverage@{tau}", cov, np.ones(len(cov))),
                        ("risk", f"risk@{tau}", hd & (d["verdict"] != d["human"]), hd),
                        ("fpr_pass", f"fpr_pass@{tau}", cov & (d["verdict"] == PASS) & (d["human"] == FAIL),
                         cov & (d["verdict"] == PASS))):
                    e = op[key]
                    tally(f"audit {key} at τ={tau}", e.method).add(
                        truth[tkey], e.lo, e.hi, *_naive(num.astype(float), den.astype(float), n_boot, s))
            lo, hi = risk_band(d["verdict"], d["conf"], d["human"], d["prompt"], np.array(TAUS), n_boot=n_boot, seed=s)
            for j, tau in enumerate(TAUS):
                tally(f"audit risk band at τ={tau}", "cluster bootstrap (pointwise)").add(
                    truth[f"risk@{tau}"], float(lo[j]), float(hi[j]))
            sample = np.arange(len(d["human"]))
            rows = annotator_agreement(np.r_[sample, sample], np.r_[np.zeros(len(sample)), np.ones(len(sample))],
                                       np.r_[d["human"], d["other"]].astype(float), n_boot=n_boot,
                                       unit_of=lambda i, pr=d["prompt"]: int(pr[int(i)]))
            naive = kappa_estimate(d["human"], d["other"], categories=3, n_boot=n_boot, seed=0)
            tally("audit κ between annotators", "cluster bootstrap").add(
                truth["kappa"], rows[0]["kappa_lo"], rows[0]["kappa_hi"], naive.lo, naive.hi)
        if on("metalogic"):  # 150 suite pairs × 4 seeds
            m = rng.beta(1.5, 1.0, 150)
            mis = rng.random((150, K)) < m[:, None]
            und = rng.random((150, K)) < np.where(mis, 0.35, 0.15)
            n = 150 * K
            verdict = np.where(und, 2, mis.astype(np.int8)).ravel().astype(np.int8)
            z = np.zeros(n, np.int8)
            oc = StoredOutcomes(verdict=verdict, kind=z, reason=z, law=z, modifier=z, dimension=z,
                                run=np.array(["sim"] * n, dtype=object), unit=np.repeat(np.arange(150), K),
                                paper_verdict=mis.ravel().astype(np.int8))
            (row,) = rate_rows(oc, n_boot=n_boot, seed=s)
            ones = np.ones(n)
            dec = (verdict != 2).astype(float)
            for key, tkey, num, den in (("paper_rate", "paper_rate", mis.ravel().astype(float), ones),
                                        ("decided_rate", "decided_rate", (verdict == 1).astype(float), dec),
                                        ("coverage", "ml_coverage", dec, ones)):
                tally(f"metalogic {key}", "cluster bootstrap").add(
                    truth[tkey], row[f"{key}_lo"], row[f"{key}_hi"], *_naive(num, den, n_boot, s))
        if on("dyeval"):  # 40 prompts × 4 judged images
            q = rng.beta(pop.a, pop.b, 40)
            lab = rng.random((40, K)) < q[:, None]
            summ = summarize(outcome(f"p{i}", ["PASS" if x else "FAIL" for x in lab[i]], K, 0.5) for i in range(40))
            e = summ.apr_estimate(n_boot=n_boot, seed=s)
            tally("dyeval APR", e.method).add(truth["apr"], e.lo, e.hi,
                                              *_naive(lab.ravel().astype(float), np.ones(40 * K), n_boot, s))
        if on("protobias"):  # 300 triplets; two annotators rate both images of 60 of them
            diff = _pb_diff(rng, 300)
            adv = rng.random(300)
            ts = TripletScores.from_mapping([f"t{i}" for i in range(300)], ["animals"] * 300, ["count"] * 300,
                                            {"toy_proto": (np.clip(adv + diff, 0, 1), adv)})
            # the toy metric lives on [0, 1]: clipping keeps the sign of diff except at the edges
            cm, ca = ts.column("toy_proto")
            dd = cm - ca
            t_fail, t_margin = _pb_clipped_truth(seed)
            (all_row,) = [x for x in metric_table(ts, n_boot=n_boot, seed=s) if x["domain"] == "all"]
            tally("protobias failure rate", "wilson").add(t_fail, all_row["failure_rate_lo"],
                                                          all_row["failure_rate_hi"])
            tally("protobias correct margin", "bootstrap").add(t_margin, all_row["correct_margin_lo"],
                                                               all_row["correct_margin_hi"])
            del dd
            rr = _pb_ratings(rng, 120)  # 60 triplets × 2 images
            tid = [f"t{i // 2}" for i in range(120)]
            role = ["corr" if i % 2 == 0 else "adv" for i in range(120)]
            ratings = Ratings.from_columns(tid * 2, role * 2, ["A"] * 120 + ["B"] * 120, np.r_[rr[0], rr[1]])
            (krow,) = annotator_kappa_table(ratings, n_boot=n_boot)
            naive = kappa_estimate(rr[0] - 1, rr[1] - 1, categories=4, weighted=True, n_boot=n_boot, seed=0)
            tally("protobias κ_w between annotators", "cluster bootstrap").add(
                truth["kappa_w"], krow["kappa_w_lo"], krow["kappa_w_hi"], naive.lo, naive.hi)
        if progress is not None:
            progress(r + 1)
    return [t.row() for t in tallies.values()]


_PB_CACHE: dict[int, tuple[float, float]] = {}


def _pb_clipped_truth(seed: int) -> tuple[float, float]:
    """ProtoBias's failure rate and correct margin after the toy metric's clipping to [0, 1]."""
    if seed not in _PB_CACHE:
        rng = np.random.default_rng(seed + 7_000_001)
        n = 4_000_000
        diff = _pb_diff(rng, n)
        adv = rng.random(n)
        d = np.clip(adv + diff, 0, 1) - adv
        _PB_CACHE[seed] = (float(np.mean(d <= 0)), float(np.mean(d[d > 0])))
    return _PB_CACHE[seed]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=1000, help="simulated audits per estimator (default 1000)")
    ap.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (default 2000, as reports)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=[], help="spatial audit metalogic dyeval protobias")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    step = max(1, a.reps // 10)
    rows = simulate(a.reps, a.n_boot, a.seed, progress=lambda k: print(f"  {k}/{a.reps}", file=sys.stderr)
                    if k % step == 0 else None, only=tuple(a.only))
    print(f"{a.reps} simulated audits per estimator, {a.n_boot} resamples, seed {a.seed}; nominal 95 %")
    print(f"{'estimate':40s} {'interval':32s} {'cover':>6s} {'width':>7s} | {'image-level bootstrap':>22s}")
    for r in rows:
        naive = ("" if math.isnan(r["image_bootstrap_coverage"]) else
                 f"{100 * r['image_bootstrap_coverage']:6.1f}% {r['image_bootstrap_width']:7.4f}")
        skip = f"  ({r['skipped']} undefined)" if r["skipped"] else ""
        print(f"{r['estimate']:40s} {r['interval']:32s} {100 * r['coverage']:5.1f}% {r['mean_width']:7.4f} | "
              f"{naive:>22s}{skip}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
