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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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

    def to_dict(self) -> dict[str, Any]:
        return {"prompts": self.prompts, "complete_prompts": self.complete_prompts, "tests": self.tests,
                "passes": self.passes, "fails": self.fails, "bugs": self.bugs, "apr": self.apr, "afr": self.afr}


def summarize(outcomes: Iterable[Outcome]) -> Summary:
    os_ = list(outcomes)
    return Summary(len(os_), sum(o.complete for o in os_), sum(o.judged for o in os_),
                   sum(o.passes for o in os_), sum(o.is_bug for o in os_))
