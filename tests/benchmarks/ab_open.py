"""Whole-process opens of the large synthetic project by two checkouts, alternating.

    .venv/bin/python tests/benchmarks/ab_open.py --old /tmp/old-checkout --n 1000000 \
        --work /tmp/perf/work --rounds 5 [--first]

Each round starts `main.py gui --project WORK/synthetic_N_f32` once from each checkout (the
old one first), with `WORKSTATION_EXIT_WHEN_READY=1`, and prints the seconds from process start
until the READY line (the window shown, the samples shown and their verdicts in) and to the
process's end, with the READY line itself. `--first` empties the checkout's detection cache
before each start (a first open after a change); otherwise each checkout opens from its own
cache (`WORK/cache-old`, `WORK/cache-new`), filled by a first open before the rounds. Build the
project first (`bench_gui.py --n N --work WORK` builds it; so does its `build_project`). Both
checkouts run with this interpreter (`.venv` of the checkout the script is run from).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]

import bench_gui  # noqa: E402


def one_open(checkout: Path, project: Path, cache: Path, settings: Path) -> tuple[float, float, str]:
    """One cold start of `checkout` with its own cache folder: (READY at, process ended at, READY line)."""
    readies, walls, lines = bench_gui.cold_start(project, settings, repeat=1, checkout=checkout,
                                                 extra_env={"WORKSTATION_CACHE_DIR": str(cache)})
    return readies[0], walls[0], lines[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the other checkout (its own bytecode compiled)")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--first", action="store_true", help="empty the detection cache before each open")
    args = ap.parse_args(argv)
    project = args.work / bench_gui.big_project_name(args.n)
    if not project.exists():
        raise SystemExit(f"{project} does not exist: build it first (bench_gui.py --n {args.n} --work {args.work})")
    settings = args.work / "ab-settings.json"
    settings.write_text("{}", encoding="utf-8")
    trees = {"old": args.old.resolve(), "new": ROOT}
    caches = {k: args.work / f"cache-{k}" for k in trees}
    if not args.first:
        for k, tree in trees.items():  # each checkout's cache filled once
            one_open(tree, project, caches[k], settings)
    ready: dict[str, list[float]] = {k: [] for k in trees}
    for r in range(args.rounds):
        for k, tree in trees.items():
            if args.first:
                shutil.rmtree(caches[k] / "detections", ignore_errors=True)
            at, wall, line = one_open(tree, project, caches[k], settings)
            ready[k].append(at)
            print(f"round {r + 1} {k}: READY at {at:.2f} s, process ended at {wall:.2f} s   {line}", flush=True)
    for k, v in ready.items():
        print(f"{k}: READY median {statistics.median(v):.2f} s (min {min(v):.2f}, max {max(v):.2f}) over {len(v)}")
    diffs = [o - n for o, n in zip(ready["old"], ready["new"])]
    print(f"old - new, pair by pair: {', '.join(f'{d:+.2f}' for d in diffs)} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
