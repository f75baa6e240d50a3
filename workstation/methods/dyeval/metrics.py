"""APR, AFR and #Bugs (seed 002, §5.1, Eqs. 1, 7-9), from labels alone.

What is a test. The paper defines ``test(x, i)`` on a *text-image pair* — an image x generated for
a text input i passes when it meets the criteria — and ``test(i)`` on a *text input* — it fails
when the pass rate of its images is below ρ (Eq. 1), and such a failing input is a bug. So:

* **APR** = #passing text-image pairs / #text-image pairs (Eq. 8), over every judged image of
  the node's (or tree's) prompts; **AFR** = 1 − APR (Eq. 9). Undefined (None) with no judged pair.
* **#Bugs** = the number of failing ``test(i)``: prompts whose pass rate over their images is
  < ρ (Eq. 7, summed over the nodes).
* Both exclude the contextual reflection module's sub-prompts (failure-location steps): "#test_total
  is the total number of test pairs in a testing tree T (which do not contain contextual reflection
  modules)"; the non-adaptive comparison likewise counts "13 nodes × 5 test inputs ... excluding
  prompts in the contextual reflection module".

Our precision where the paper is silent: a prompt's pass/fail is decided only when it is
*complete* — it has its n_x images and every one is judged — so that a half-judged prompt is not
called a bug; APR counts every judged pair, complete prompt or not.

Intervals (`Summary.apr_estimate`, `Summary.afr_estimate`): the images of one prompt share it, so
APR's 95 % interval is the cluster bootstrap over the prompts (Wilson when every prompt has one
judged image), `workstation.evaluation.intervals`; AFR's is 1 minus APR's. #Bugs is a count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...evaluation.intervals import N_BOOT, SEED, Estimate, ratio_estimates

PASS, FAIL = "PASS", "FAIL"


@dataclass(frozen=True)
class Outcome:
    """One text input's images: how many, how many judged and passed; its pass rate and verdict."""

    owner: str
    n_images: int
    judged: int
    passes: int
    expected: int
    rho: float

    @property
    def fails(self) -> int:
        return self.judged - self.passes

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.judged if self.judged else None

    @property
    def complete(self) -> bool:
        return self.n_images >= self.expected and self.judged == self.n_images

    @property
    def is_bug(self) -> bool:
        """test(i) fails: complete and pass rate < ρ (Eq. 1)."""
        rate = self.pass_rate
        return self.complete and rate is not None and rate < self.rho

    @property
    def verdict(self) -> str | None:
        """FAIL for a bug, PASS for a complete non-bug, None while incomplete."""
        if not self.complete:
            return None
        return FAIL if self.is_bug else PASS

    def to_dict(self) -> dict[str, Any]:
        return {"owner": self.owner, "n_images": self.n_images, "judged": self.judged, "passes": self.passes,
                "fails": self.fails, "pass_rate": self.pass_rate, "complete": self.complete,
                "is_bug": self.is_bug, "verdict": self.verdict}


def outcome(owner: str, labels: Sequence[str | None], expected: int, rho: float) -> Outcome:
    """The outcome of a text input from its images' effective labels (None: not judged)."""
    judged = sum(1 for v in labels if v is not None)
    passes = sum(1 for v in labels if v == PASS)
    return Outcome(owner, len(labels), judged, passes, expected, rho)


@dataclass(frozen=True)
class Summary:
    """APR / AFR / #Bugs over a set of text inputs (a node, a subtree, a tree)."""

    prompts: int
    complete_prompts: int
    tests: int  # judged text-image pairs (#test_total)
    passes: int
    bugs: int
    #: per prompt: its passing and its judged images (the units of APR's interval)
    prompt_passes: tuple[int, ...] = ()
    prompt_judged: tuple[int, ...] = ()

    @property
    def fails(self) -> int:
        return self.tests - self.passes

    @property
    def apr(self) -> float | None:
        return self.passes / self.tests if self.tests else None

    @property
    def afr(self) -> float | None:
        a = self.apr
        return None if a is None else 1.0 - a

    def apr_estimate(self, n_boot: int = N_BOOT, seed: int = SEED) -> Estimate:
        """APR with its 95 % interval: the cluster bootstrap over the prompts (module doc)."""
        judged = np.asarray(self.prompt_judged, np.int64)
        passes = np.asarray(self.prompt_passes)
        if len(judged) != len(passes) or int(judged.sum()) != self.tests or int(passes.sum()) != self.passes:
            raise ValueError("the per-prompt counts do not add up to the summary's")
        unit = np.repeat(np.arange(len(judged)), judged)  # every judged image, by prompt
        rank = np.arange(len(unit)) - np.repeat(np.cumsum(judged) - judged, judged)  # its place in its prompt
        success = rank < np.repeat(passes, judged)  # the first `passes` of a prompt pass
        return ratio_estimates(success, np.ones(len(unit)), unit, n_boot=n_boot, seed=seed)[0]

    def afr_estimate(self, n_boot: int = N_BOOT, seed: int = SEED) -> Estimate:
        """AFR = 1 − APR with the interval 1 − APR's."""
        a = self.apr_estimate(n_boot, seed)
        return Estimate(1.0 - a.value, 1.0 - a.hi, 1.0 - a.lo, n=a.n, units=a.units, method=a.method,
                        level=a.level)

    def to_dict(self, n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
        """The figures, with APR's and AFR's 95 % bounds (None without an interval) and a note when
        fewer than 10 judged images or prompts stand behind them."""
        out: dict[str, Any] = {"prompts": self.prompts, "complete_prompts": self.complete_prompts,
                               "tests": self.tests, "passes": self.passes, "fails": self.fails, "bugs": self.bugs,
                               "apr": self.apr, "afr": self.afr, "apr_lo": None, "apr_hi": None, "afr_lo": None,
                               "afr_hi": None, "note": ""}
        a = self.apr_estimate(n_boot, seed)
        if a.has_interval:
            out.update(apr_lo=a.lo, apr_hi=a.hi, afr_lo=1.0 - a.hi, afr_hi=1.0 - a.lo)
        if a.n:
            out["note"] = a.small_note("judged images")
        return out


def summarize(outcomes: Iterable[Outcome]) -> Summary:
    os_ = list(outcomes)
    return Summary(len(os_), sum(o.complete for o in os_), sum(o.judged for o in os_),
                   sum(o.passes for o in os_), sum(o.is_bug for o in os_),
                   tuple(o.passes for o in os_), tuple(o.judged for o in os_))


def merge(summaries: Iterable[Summary]) -> Summary:
    """One summary of the prompts of several (a tree's nodes)."""
    ss = list(summaries)
    return Summary(sum(x.prompts for x in ss), sum(x.complete_prompts for x in ss), sum(x.tests for x in ss),
                   sum(x.passes for x in ss), sum(x.bugs for x in ss),
                   tuple(p for x in ss for p in x.prompt_passes), tuple(j for x in ss for j in x.prompt_judged))
