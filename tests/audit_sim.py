"""A simulated audit population with known truth and prompt-level correlation, and the audit
designs the benchmark and the tests compare (`tests/benchmarks/bench_audit_plans.py`,
`tests/core/test_audit_plan.py`).

The population imitates a SpatialBench-UC run: P prompts × K seeds (800 images by default), four
relations. Each prompt has a latent difficulty for the generator (shared by its seeds: the images
of a prompt are correlated) and a latent detectability of its objects. Per image:

* truth: whether both objects are drawn and whether their relation is right depend on the
  prompt's difficulty (shared by its seeds) and on the image; a human labels PASS, FAIL, or
  UNDECIDABLE (mostly where an object is missing, as in the published audit);
* the checker decides when both objects are detected (probability from the prompt's
  detectability) and the geometry is clear enough; a decided verdict is wrong more often the
  lower its confidence (about 10 % of decided verdicts are wrong, 1–2 % of those with
  confidence ≥ 0.9); an undecided image has confidence 0.

`Population.table()` is the generic audit table (the automated outcome is the checker's verdict);
`todays_sample` draws with the workstation's own stratified sampler
(`workstation.methods.spatial.audit.stratified_sample`: run × relation × verdict, five
confidence bins, proportional allocation).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from workstation.evaluation.plan import AuditTable


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@dataclass
class Population:
    prompt: np.ndarray  # int prompt index per image
    relation: np.ndarray  # int 0..3 per image
    human: np.ndarray  # 1 PASS, 0 FAIL, 2 UNDECIDABLE
    verdict: np.ndarray  # checker: 0 PASS, 1 FAIL, 2 UNDECIDABLE (the workstation's codes)
    conf: np.ndarray  # in [0, 1]
    n_prompts: int
    k: int

    @property
    def n(self) -> int:
        return len(self.prompt)

    @property
    def outcome(self) -> np.ndarray:
        """1 checker PASS, 0 FAIL, -1 UNDECIDABLE (the audit table's codes)."""
        return np.where(self.verdict == 0, 1, np.where(self.verdict == 1, 0, -1)).astype(np.int8)

    def truth_rate(self) -> float:
        """The true PASS rate of these images (human PASS over all)."""
        return float((self.human == 1).mean())

    def truth_precision(self) -> float:
        m = self.verdict == 0
        return float((self.human[m] == 1).mean())

    def table(self, human: np.ndarray | None = None) -> AuditTable:
        h = self.human if human is None else human
        return AuditTable("sim", "sim.verdict", [f"i{i}" for i in range(self.n)],
                          [f"p{p}" for p in self.prompt.tolist()], self.outcome, self.conf, h,
                          outcome_title="the checker", item_title="image")


def population(seed: int, kind: str = "checker", n_prompts: int = 200, k: int = 4) -> Population:
    """A simulated run. ``kind="checker"``: an abstaining checker like the published SpatialBench-UC
    run (about 40 % PASS, 2 % FAIL, the rest UNDECIDABLE, mostly a missing object, with confidence
    0); ``kind="scored"``: an automated outcome that always decides, with a confidence that grows
    with how clear the case is (a score against a threshold, as DyEval's CLIPScore pre-marks)."""
    if kind == "checker":
        return _checker_population(seed, n_prompts, k)
    if kind == "scored":
        return _scored_population(seed, n_prompts, k)
    raise ValueError(f"unknown population kind {kind!r}")


def _checker_population(seed: int, n_prompts: int, k: int) -> Population:
    rng = np.random.default_rng([seed, 38, 1])
    n = n_prompts * k
    prompt = np.repeat(np.arange(n_prompts), k)
    relation = np.repeat(np.arange(n_prompts) % 4, k)
    a = rng.normal(0.0, 1.0, n_prompts)[prompt]  # the generator's skill on the prompt
    b = rng.normal(0.0, 1.0, n_prompts)[prompt]  # how detectable its objects are
    drawn = rng.random(n) < _sigmoid(0.5 + 2.2 * a + 0.4 * rng.normal(0.0, 1.0, n))
    right = rng.random(n) < _sigmoid(1.4 + 1.4 * a + 0.4 * rng.normal(0.0, 1.0, n))
    unclear = rng.random(n)
    human = np.where(drawn, np.where(right, 1, 0), np.where(unclear < 0.7, 2, 0))
    human = np.where(drawn & (unclear < 0.08), 2, human)
    detected = np.where(drawn, rng.random(n) < _sigmoid(1.0 + 1.0 * b + 0.5 * rng.normal(0.0, 1.0, n)),
                        rng.random(n) < 0.03)
    clear = rng.random(n)
    decided = detected & (clear > 0.1)
    sure = rng.beta(4, 1.5, n)
    conf = np.where(decided, 0.55 + 0.45 * sure, 0.0)
    err = 0.002 + 0.9 * (1.0 - sure) ** 2
    correct = rng.random(n) >= err
    truth_v = np.where(drawn & right, 0, 1)
    verdict = np.where(decided, np.where(correct, truth_v, 1 - truth_v), 2)
    return Population(prompt, relation, human.astype(np.int8), verdict.astype(np.int8), conf, n_prompts, k)


def _scored_population(seed: int, n_prompts: int, k: int) -> Population:
    rng = np.random.default_rng([seed, 38, 2])
    n = n_prompts * k
    prompt = np.repeat(np.arange(n_prompts), k)
    relation = np.repeat(np.arange(n_prompts) % 4, k)
    a = rng.normal(0.0, 1.0, n_prompts)[prompt]
    logit = -0.2 + 1.6 * a + 0.8 * rng.normal(0.0, 1.0, n)
    follows = rng.random(n) < _sigmoid(logit)
    human = np.where(follows, 1, 0).astype(np.int8)
    score = logit + 0.9 * rng.normal(0.0, 1.0, n)  # what the metric sees of it
    verdict = np.where(score > 0, 0, 1).astype(np.int8)
    conf = np.abs(2.0 * _sigmoid(score) - 1.0)
    return Population(prompt, relation, human, verdict, conf, n_prompts, k)


@lru_cache(maxsize=4)
def _dataset(n_prompts: int, k: int):  # type: ignore[no-untyped-def]
    from workstation.dataset import Samples
    from workstation.methods.spatial.data import spatial_dataset

    n = n_prompts * k
    prompt = np.repeat(np.arange(n_prompts), k)
    samples = Samples.build([f"s{i}" for i in range(n)], ["run"] * n, [f"p{p}" for p in prompt.tolist()],
                            np.tile(np.arange(k), n_prompts))
    rel = (prompt % 4).tolist()
    return spatial_dataset(samples, rel, ["cat"] * n, ["dog"] * n)


class _V:
    def __init__(self, verdict: np.ndarray, conf: np.ndarray) -> None:
        self.verdict = verdict
        self.conf = conf


def todays_sample(pop: Population, size: int, seed: int) -> np.ndarray:
    """Rows the workstation's stratified sampler draws (run × relation × verdict, 5 bins)."""
    from workstation.methods.spatial.audit import stratified_sample

    ds = _dataset(pop.n_prompts, pop.k)
    return stratified_sample(ds, _V(pop.verdict, pop.conf), size, seed)


def todays_strata(pop: Population) -> np.ndarray:
    """The stratum of every image under today's sampler (relation × verdict × confidence bin)."""
    from workstation.methods.spatial.audit import confidence_bins

    return (pop.relation * 3 + pop.verdict.astype(np.int64)) * 5 + confidence_bins(pop.conf, 5)
