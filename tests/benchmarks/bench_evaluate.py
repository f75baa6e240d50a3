"""`main.py evaluate` on a large project: its first run against a re-run with the same config.

    .venv/bin/python tests/benchmarks/bench_evaluate.py --sizes 100000,1000000 --work WORK
        [--rounds 5] [--old OTHER_CHECKOUT] [--busy-core]

For each size N, the synthetic project of `bench_gui.py` (N samples, 13 detections each, its
checker config stored, no verdict set yet) is built once under `WORK/evaluate_N/` (reused when
there). Each round copies it afresh (not timed) and runs, as whole processes from their start to
their exit, `main.py evaluate --project COPY` (the first run: it writes the verdict set) and the
same command again (the re-run: it replaces that set with an identical one). The goal is a re-run
within 1.2× the first run. Both read the detections through the detection cache (its own folder
under WORK, filled by an untimed run first), so that they differ only in what they store.

With `--old`, another checkout (its own code, this interpreter) runs the same rounds in turn,
each on a copy of a project that checkout built (a project's tables carry their version, and an
older checkout does not open tables a newer one upgraded). `--busy-core` keeps one core busy with a
second process throughout. Prints each run (wall, CPU, peak resident memory, the 1-minute load
average before it) and the medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]

import machine_load  # noqa: E402

BUILD = ("import sys; from pathlib import Path; sys.path[:0] = [sys.argv[3] + '/tests/benchmarks', sys.argv[3]]; "
         "import bench_gui; bench_gui.build_project(Path(sys.argv[1]), int(sys.argv[2]))")


def build(checkout: Path, folder: Path, n: int) -> None:
    """`bench_gui.build_project` of `checkout` (its own code writes the project's tables)."""
    if (folder / "project.duckdb").is_file():
        return
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", BUILD, str(folder), str(n), str(checkout)], cwd=checkout, check=True)
    print(f"  built {folder} ({n:,} samples) in {time.perf_counter() - t:.0f} s", flush=True)


def run_once(checkout: Path, project: Path, cache: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak resident MB) of `main.py evaluate --project project` from start to exit."""
    env = dict(os.environ, WORKSTATION_CACHE_DIR=str(cache))
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "main.py", "evaluate", "--project", str(project)], cwd=checkout,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"evaluate failed in {checkout}:\n{err[-3000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def fresh_copy(pristine: Path, run: Path) -> None:
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(pristine, run)


def med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--old", type=Path, default=None, help="another checkout, run in turn with this one")
    ap.add_argument("--busy-core", action="store_true", help="a second process keeps one core busy throughout")
    args = ap.parse_args(argv)
    trees = {"this checkout": ROOT, **({"other checkout": args.old.resolve()} if args.old else {})}
    print(f"evaluate, first run against a re-run: {args.rounds} rounds; {machine_load.describe()}")
    for k, tree in trees.items():
        head = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=tree, capture_output=True, text=True)
        print(f"  {k}: {tree} ({head.stdout.strip()[:70] or 'not a git checkout'})")
    with machine_load.one_core_busy(args.busy_core) as busy:
        for n in (int(x) for x in args.sizes.split(",") if x):
            base = args.work / f"evaluate_{n}"
            pristine = {k: base / f"pristine-{i}" for i, k in enumerate(trees)}
            for k, tree in trees.items():
                build(tree, pristine[k], n)
            cache = {k: base / f"cache-{i}" for i, k in enumerate(trees)}
            run = {k: base / f"run-{i}" for i, k in enumerate(trees)}
            for k, tree in trees.items():  # fills each checkout's detection cache (not timed)
                fresh_copy(pristine[k], run[k])
                run_once(tree, run[k], cache[k])
            times: dict[str, dict[str, list[tuple[float, float, float]]]] = {
                k: {"first": [], "again": []} for k in trees}
            loads: list[float] = []
            print(f"\n== {n:,} samples ==", flush=True)
            for r in range(args.rounds):
                for k, tree in trees.items():
                    fresh_copy(pristine[k], run[k])
                    load0 = machine_load.load()[0]
                    loads.append(load0)
                    first = run_once(tree, run[k], cache[k])
                    again = run_once(tree, run[k], cache[k])
                    times[k]["first"].append(first)
                    times[k]["again"].append(again)
                    busy.sample()
                    print(f"  round {r + 1}, {k}: first run {first[0]:.2f} s wall / {first[1]:.2f} s CPU / "
                          f"{first[2]:.0f} MB; re-run {again[0]:.2f} s / {again[1]:.2f} s CPU / {again[2]:.0f} MB; "
                          f"re-run / first {again[0] / first[0]:.2f}x (load {load0:.2f} before)", flush=True)
            for k in trees:
                shutil.rmtree(run[k], ignore_errors=True)
            for k in trees:
                f, a = times[k]["first"], times[k]["again"]
                ratios = [y[0] / x[0] for x, y in zip(f, a)]
                print(f"  {k}, {n:,} samples, medians of {len(f)}: first run {med([x[0] for x in f])} wall, "
                      f"{statistics.median(x[1] for x in f):.2f} s CPU; re-run {med([x[0] for x in a])} wall, "
                      f"{statistics.median(x[1] for x in a):.2f} s CPU; re-run / first run, round by round: "
                      f"median {statistics.median(ratios):.2f}x (goal <= 1.2x)")
            print(f"  1-minute load average before the runs: {min(loads):.2f}-{max(loads):.2f} "
                  f"(median {statistics.median(loads):.2f})", flush=True)
    if args.busy_core:
        print(busy.summary())
    print(f"after: {machine_load.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
