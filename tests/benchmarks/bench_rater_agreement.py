"""Coverage of the prompt-clustered intervals of the many-rater agreement statistics
(`workstation.evaluation.rater_agreement`): simulated audits of several raters with a known population
value of every statistic.

The model: P prompts of J images each. A prompt is hard with probability ``p_hard`` (its images
then get a rater error rate of ``e_hard``, else ``e_easy``: the raters' errors on a prompt are
correlated) and has a class tendency: an image's true class is the prompt's class with probability
``rho``, else a fresh draw from the class shares ``pi`` (so the images of a prompt also share their
truth). Every one of R raters rates every image with probability 1 − ``missing``; a rating is the
true class, or with the prompt's error rate a value drawn uniformly from the scale. Marginally the
images are alike, so the population value of every statistic (its limit over ever more prompts) is
its function of the expected per-image figures, computed exactly by enumerating the count vectors
of one image (`population_values`).

For every simulated audit and statistic: whether the 95 % interval holds the population value, and
its width; the cluster bootstrap (the workstation's interval up to 5,000 prompts), the cluster
jackknife (its interval above), and the item-level bootstrap (images resampled as if independent)
for comparison::

    .venv/bin/python tests/benchmarks/bench_rater_agreement.py --audits 1000

`tests/core/test_rater_agreement.py` runs a small seeded draw and asserts at least 90 %.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from workstation.evaluation import rater_agreement as agreement


@dataclass(frozen=True)
class Design:
    prompts: int = 60
    images: int = 4  # per prompt
    raters: int = 4
    categories: int = 3
    pi: tuple[float, ...] = (0.6, 0.3, 0.1)  # class shares (one answer dominates, as PASS often does)
    rho: float = 0.6
    p_hard: float = 0.3
    e_easy: float = 0.15
    e_hard: float = 0.55
    missing: float = 0.2
    statistics: tuple[str, ...] = field(default=agreement.statistics_for(True))

    @property
    def values(self) -> np.ndarray:
        return np.arange(1, self.categories + 1, dtype=np.float64)


def draw_audit(d: Design, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(ratings images × raters with NaN missing, prompt of every image) of one simulated audit."""
    q = d.categories
    pi = np.asarray(d.pi)
    hard = rng.random(d.prompts) < d.p_hard
    tendency = rng.choice(q, size=d.prompts, p=pi)
    prompt = np.repeat(np.arange(d.prompts), d.images)
    n = len(prompt)
    fresh = rng.choice(q, size=n, p=pi)
    truth = np.where(rng.random(n) < d.rho, tendency[prompt], fresh)
    err = np.where(hard[prompt], d.e_hard, d.e_easy)
    wrong = rng.random((n, d.raters)) < err[:, None]
    noise = rng.integers(0, q, size=(n, d.raters))
    codes = np.where(wrong, noise, truth[:, None])
    ratings = d.values[codes]
    ratings[rng.random((n, d.raters)) < d.missing] = np.nan
    return ratings, prompt


def _count_vectors(m: int, q: int) -> list[tuple[int, ...]]:
    return [c for c in itertools.product(range(m + 1), repeat=q) if sum(c) == m]


def population_values(d: Design) -> dict[str, float]:
    """Every statistic's population value: its function of the expected per-image figures (the
    mean of one image's figures over the model's distribution of its rating counts)."""
    q = d.categories
    pi = np.asarray(d.pi)
    rows: list[np.ndarray] = []
    probs: list[float] = []
    for m in range(d.raters + 1):
        p_m = math.comb(d.raters, m) * (1 - d.missing) ** m * d.missing ** (d.raters - m)
        for c in _count_vectors(m, q):
            p_c = 0.0
            for err, p_err in ((d.e_hard, d.p_hard), (d.e_easy, 1 - d.p_hard)):
                for z in range(q):
                    p_k = np.full(q, err / q)
                    p_k[z] += 1 - err
                    multinom = math.factorial(m) / math.prod(math.factorial(x) for x in c)
                    p_c += p_err * pi[z] * multinom * float(np.prod(p_k ** np.asarray(c)))
            rows.append(np.asarray(c, np.float64))
            probs.append(p_m * p_c)
    r = np.array(rows)
    w = np.array(probs)
    out = {}
    for name in d.statistics:
        st = agreement._statistic(name, d.values)
        expected = (st.features(r) * w[:, None]).sum(axis=0) * 1e12  # many images: n − 1 ≈ n
        out[name] = float(st.of_sums(expected[None, :])[0])
    return out


def simulate(audits: int = 1000, design: Design | None = None, n_boot: int = 2000, seed: int = 0,
             item_bootstrap: bool = True) -> list[dict[str, float | str]]:
    """One row per statistic and interval: coverage of the population value and mean width."""
    d = design or Design()
    truth = population_values(d)
    rng = np.random.default_rng(seed)
    kinds = [("cluster bootstrap", "bootstrap", True), ("cluster jackknife", "jackknife", True)]
    if item_bootstrap:
        kinds.append(("item bootstrap", "bootstrap", False))
    hits: dict[tuple[str, str], list[bool]] = {(s, k[0]): [] for s in d.statistics for k in kinds}
    widths: dict[tuple[str, str], list[float]] = {key: [] for key in hits}
    for a in range(audits):
        ratings, prompt = draw_audit(d, rng)
        for label, interval, clustered in kinds:
            est = agreement.many_rater_agreement(ratings, prompt if clustered else None, categories=d.values,
                                              statistics=d.statistics, interval=interval, n_boot=n_boot,
                                              seed=a)
            for s, e in est.items():
                if e.has_interval:
                    hits[(s, label)].append(e.lo <= truth[s] <= e.hi)
                    widths[(s, label)].append(e.hi - e.lo)
    out: list[dict[str, float | str]] = []
    for (s, label), h in hits.items():
        out.append({"statistic": s, "interval": label, "truth": truth[s], "audits": len(h),
                    "coverage": float(np.mean(h)) if h else float("nan"),
                    "mean_width": float(np.mean(widths[(s, label)])) if h else float("nan")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompts", type=int, default=Design.prompts)
    ap.add_argument("--raters", type=int, default=Design.raters)
    ap.add_argument("--missing", type=float, default=Design.missing)
    args = ap.parse_args()
    d = Design(prompts=args.prompts, raters=args.raters, missing=args.missing)
    t0 = time.perf_counter()
    rows = simulate(args.audits, d, args.boot, args.seed)
    took = time.perf_counter() - t0
    print(f"{args.audits} audits of {d.prompts} prompts x {d.images} images, {d.raters} raters, "
          f"{d.categories} categories, {d.missing:.0%} missing; {args.boot} resamples; seed {args.seed}; "
          f"{took:.0f} s")
    print(f"{'statistic':<16} {'truth':>7}  {'interval':<18} {'coverage':>8} {'width':>7} {'audits':>6}")
    for r in rows:
        print(f"{r['statistic']:<16} {r['truth']:>7.4f}  {r['interval']:<18} {100 * float(r['coverage']):>7.1f}% "
              f"{float(r['mean_width']):>7.3f} {r['audits']:>6}")


if __name__ == "__main__":
    main()
