"""Benchmark: an open of the large synthetic project from the detection cache, whole processes.

    .venv/bin/python tests/benchmarks/bench_cached_open.py --work WORK [--n 1000000] [--runs 5]
        [--base CHECKOUT] [--check full,sampled] [--first-open]

Each run is a fresh process (`--child`) that reads the project as the window does, without Qt
(`ui.loading.load_project`: the samples, the detections from the cache, the checker's kept
preparation, the verdicts under the active config, the labels), then exits. It is timed from
outside, from its start to its exit, with the CPU seconds it used and its peak resident memory.
The project is `WORK/synthetic_N_f32`, built once by `bench_gui.build_project` when missing.

`--first-open` empties each tree's cache before every run instead: the open that scans the
detections, writes the entry (with its digests and syncs) and keeps the preparation.

The trees compared run in turn, round by round (each round begins with the next arm: this
checkout's, then `--base`, a checkout of another commit, run with its own code through
PYTHONPATH), each with a cache folder of its own,
filled by two runs that are not counted (the first open writes the entry and the preparation).
At the end, the check's own work is timed in this process: every file of the entry and of the
kept preparation hashed as the full check reads them and as the sampled one would.
`--check` names the ways of checking a cached entry's contents to run from this checkout:
`full` (the shipped check: a keyed digest over every byte of every file) and `sampled` (the
cheaper alternative measured against it: structure, and 16 blocks of 64 KiB of each file
hashed; what that does not catch is said in `store/cache_files.py`). The 1-minute load average
is printed before every run; the medians and each tree's run-by-run ratio to the first come at
the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, sys, time
t0 = time.perf_counter()
check = os.environ.get("BENCH_CACHE_CHECK", "")
if check == "sampled":
    sys.path.insert(0, {bench!r})
    import bench_cached_open
    bench_cached_open.use_sampled_check()
from ui.loading import load_project
loaded = load_project({project!r}, read_only=True)
assert loaded.parts["spatial"].verdicts is not None and loaded.parts["spatial"].dataset.n == {n}
loaded.project.close()
print(f"in-process {{time.perf_counter() - t0:.3f}} s", flush=True)
"""


def use_sampled_check() -> None:
    """The cheaper check measured against the full one: each file's structure as the full check
    reads it, then only 16 blocks of 64 KiB of its bytes hashed (first, last, 14 spread evenly)."""
    import hashlib

    from workstation.store import cache_files

    def sampled(fd: int, size: int, key: bytes, algorithm: str | None = None) -> int:
        block = 64 << 10
        h = hashlib.blake2b(key=key[:64], digest_size=16)
        for at in sorted({0, max(0, size - block), *(i * size // 15 for i in range(1, 15))}):
            h.update(os.pread(fd, block, at))
        return int.from_bytes(h.digest(), "big")

    cache_files.file_digest = sampled  # type: ignore[assignment]


def check_alone(cache: Path, runs: int) -> None:
    """The check's own work on one open, in this process: every file of the project's entry and
    of its kept preparation hashed as a load checks them (full), and as the sampled check would,
    in turn, `runs` times; wall and CPU seconds of this thread."""
    import statistics

    from workstation.store import cache_files

    files = sorted(f for f in cache.glob("detections/*/**/*.npy"))
    total = sum(f.stat().st_size for f in files)
    full = cache_files.file_digest
    use_sampled_check()
    sampled = cache_files.file_digest
    cache_files.file_digest = full  # type: ignore[assignment]
    times: dict[str, list[tuple[float, float]]] = {"full": [], "sampled": []}
    for _ in range(runs):
        for name, digest in (("full", full), ("sampled", sampled)):
            t0, c0 = time.perf_counter(), time.thread_time()
            for f in files:
                fd = os.open(f, os.O_RDONLY)
                try:
                    digest(fd, os.fstat(fd).st_size, cache_files.digest_key(f.name))
                finally:
                    os.close(fd)
            times[name].append((time.perf_counter() - t0, time.thread_time() - c0))
    for name, ts in times.items():
        print(f"the {name} check alone ({cache_files.DIGEST if name == 'full' else 'blake2b of 16 blocks a file'}), "
              f"{len(files)} files, {total / 1e9:.2f} GB: wall median {statistics.median(t[0] for t in ts):.3f} s, "
              f"CPU median {statistics.median(t[1] for t in ts):.3f} s ({runs} runs)")


def run_child(tree: Path, project: Path, n: int, cache: Path, check: str = "") -> tuple[float, float, float, str]:
    """One whole process: (wall s, CPU s, peak MB, what it printed)."""
    env = dict(os.environ, PYTHONPATH=str(tree), WORKSTATION_CACHE_DIR=str(cache), PYTHONMALLOC="malloc",
               BENCH_CACHE_CHECK=check, QT_QPA_PLATFORM="offscreen")
    env.pop("WORKSTATION_DETECTION_CACHE_MIN", None)  # the default: on from a million detections
    code = CHILD.format(project=str(project), n=n, bench=str(ROOT / "tests" / "benchmarks"))
    with tempfile.TemporaryFile("w+") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=str(tree), env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU and peak
        except BaseException:
            proc.kill()
            raise
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        said = log.read().strip()
    if proc.returncode != 0:
        raise SystemExit(f"the run in {tree} failed:\n{said}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, said[said.rfind("in-process"):]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--base", type=Path, help="a checkout of another commit, run in turn with this one")
    ap.add_argument("--check", default="full", help="comma-separated: full, sampled (this checkout's runs)")
    ap.add_argument("--first-open", action="store_true",
                    help="empty each tree's cache before every run: the open that scans and writes the entry "
                         "(its digests and syncs) and keeps the preparation")
    args = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]
    import bench_gui
    import machine_load

    project = args.work / bench_gui.big_project_name(args.n)
    if not project.exists():
        print(f"building {project}…", flush=True)
        bench_gui.build_project(project, args.n)
    arms: list[tuple[str, Path, str]] = [(f"this checkout, {c} check", ROOT, c) for c in args.check.split(",") if c]
    if args.base is not None:
        arms.append((f"{args.base} (base)", args.base.resolve(), ""))
    caches = {name: Path(tempfile.mkdtemp(prefix="bench-cached-open-")) for name, _, _ in arms}
    try:
        for name, tree, check in arms:  # the first open writes the entry and the preparation; then one more
            for _ in range(0 if args.first_open else 2):
                run_child(tree, project, args.n, caches[name], check)
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _, _ in arms}
        for r in range(args.runs):
            k = r % len(arms)  # each arm first in turn: no arm always follows the same one
            for name, tree, check in arms[k:] + arms[:k]:
                if args.first_open:
                    shutil.rmtree(caches[name], ignore_errors=True)
                    caches[name].mkdir()
                load = machine_load.load()[0]
                wall, cpu, peak, said = run_child(tree, project, args.n, caches[name], check)
                figures[name].append((wall, cpu, peak))
                print(f"round {r + 1} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak {peak:.0f} MB "
                      f"({said}); load before {load:.2f}", flush=True)
        print(f"after: {machine_load.describe()}")
        if not args.first_open and any(check == "full" for _, _, check in arms):
            check_alone(caches[next(name for name, _, check in arms if check == "full")], args.runs)
        first = arms[0][0]
        for name, _, _ in arms:
            w = [f[0] for f in figures[name]]
            c = [f[1] for f in figures[name]]
            ratio = [a[0] / b[0] for a, b in zip(figures[first], figures[name])]  # the same round's
            print(f"{name}: wall median {statistics.median(w):.2f} s ({min(w):.2f}-{max(w):.2f}), "
                  f"CPU median {statistics.median(c):.2f} s, peak median "
                  f"{statistics.median(f[2] for f in figures[name]):.0f} MB; "
                  f"{first!r} / this, run by run: median {statistics.median(ratio):.3f}")
    finally:
        for c in caches.values():
            shutil.rmtree(c, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
