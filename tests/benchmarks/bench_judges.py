"""What the judges cost when asked (never on open): GenEval's position rule, the twin consistency
and one agreement row (coverage, accuracy and κ with their intervals over the prompts) on the
synthetic datasets of `bench_checker` (~6 primary detections per image, 4 seeds per prompt), and
one sample's judges as Review's pair view asks for them (`item_judges`, the store's part left
out: the median over 50 samples after the first, which reads the prompts' maps once).

    python tests/benchmarks/bench_judges.py [--sizes 100000,1000000]

Prints the wall time of each step per size (one run each; the machine's load is printed too).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]

from bench_checker import synthetic_dataset  # noqa: E402
from workstation.evaluation.judges import pair_agreement  # noqa: E402
from workstation.methods.spatial.judges import geneval_outcomes, item_judges, order_shown  # noqa: E402


class _NoStore:
    """A project with no stored verdicts and no scores: `item_judges`'s dataset part alone."""

    class evaluations:  # noqa: N801
        @staticmethod
        def all(_method: str) -> list[Any]:
            return []

    class con:  # noqa: N801
        @staticmethod
        def execute(_sql: str, _params: Any = None) -> Any:
            return type("R", (), {"fetchone": lambda _s: (0,), "fetchall": lambda _s: []})()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="100000,1000000")
    args = ap.parse_args(argv)
    import os

    print(f"load average {os.getloadavg()[0]:.2f}")
    for n in [int(x) for x in args.sizes.split(",")]:
        ds = synthetic_dataset(n)
        t0 = time.perf_counter()
        passed, _score = geneval_outcomes(ds)
        t1 = time.perf_counter()
        shown = order_shown(ds)
        t2 = time.perf_counter()
        a = np.where(passed == 1, "PASS", "FAIL").astype(object)
        b = np.where(shown, "PASS", "UNDECIDABLE").astype(object)
        prompts = np.asarray(ds.samples.prompt_id, dtype=object)
        row = pair_agreement(a, b, prompts, values=("PASS", "FAIL", "UNDECIDABLE"), abstain="UNDECIDABLE")
        t3 = time.perf_counter()
        print(f"n={n}: geneval {t1 - t0:.2f} s, positional order {t2 - t1:.2f} s, one agreement row "
              f"{t3 - t2:.2f} s ({len(set(prompts.tolist()))} prompts; accuracy {row['accuracy']:.4f} "
              f"[{row['accuracy_lo']:.4f}, {row['accuracy_hi']:.4f}], κ {row['kappa']:.4f} "
              f"[{row['kappa_lo']:.4f}, {row['kappa_hi']:.4f}])")
        rng = np.random.default_rng(0)
        item_judges(_NoStore(), ds, 0)
        took = []
        for r in rng.choice(ds.n, 50, replace=False).tolist():
            t4 = time.perf_counter()
            item_judges(_NoStore(), ds, int(r), -1)  # the pair view knows the twin's row
            took.append(time.perf_counter() - t4)
        print(f"n={n}: one sample's judges (the pair view), median {1000 * float(np.median(took)):.1f} ms, "
              f"max {1000 * max(took):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
