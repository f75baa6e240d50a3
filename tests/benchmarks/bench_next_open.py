"""The window's first open of a project after a command changed it, with and without the
command preparing that open, alternating.

    .venv/bin/python tests/benchmarks/bench_next_open.py --n 1000000 --work /tmp/perf/work --rounds 3

Each round, with the detection cache emptied before each half:
- "cold": `main.py gui --project WORK/synthetic_N_f32` as a first open (it scans the database and
  prepares the checker itself);
- "prepared": a process that opens the project and runs `prepare_next_open` (what `import-sbuc`,
  `detect`, `merge` and `runs remove` do at their end), timed whole from process start with its
  peak resident memory, then the same `main.py gui` start.
Prints the seconds from process start until the READY line (the window shown, the samples shown and
their verdicts in), the window's process's CPU seconds, and the READY line itself. Build the project
first (`bench_gui.py --n N --work WORK` builds it; so does its `build_project`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]

import bench_gui  # noqa: E402

PREPARE = """
import resource, sys
from workstation.store import Project
from workstation.methods.spatial.next_open import prepare_next_open
with Project.open(sys.argv[1]) as p:
    ok = prepare_next_open(p)
print(f"PREPARED ok={ok} maxrss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
"""


def prepare(project: Path, cache: Path) -> tuple[float, str]:
    """`prepare_next_open` in a process of its own: (seconds from process start to its end, its line)."""
    env = dict(os.environ, WORKSTATION_CACHE_DIR=str(cache))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", PREPARE, str(project)], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=False, timeout=900)
    wall = time.perf_counter() - t0
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("PREPARED")), "")
    if r.returncode != 0 or "ok=True" not in line:
        raise SystemExit(f"preparing the next open failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return wall, line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy-core", action="store_true", help="a second process keeps one core busy throughout")
    args = ap.parse_args(argv)
    import machine_load

    print(f"{'one core kept busy by a second process; ' if args.busy_core else ''}{machine_load.describe()}", flush=True)
    with machine_load.one_core_busy(args.busy_core) as busy:
        rc = _main(args)
    if args.busy_core:
        print(busy.summary())
    print(f"after: {machine_load.describe()}")
    return rc


def _main(args: argparse.Namespace) -> int:
    project = args.work / bench_gui.big_project_name(args.n)
    if not project.exists():
        raise SystemExit(f"{project} does not exist: build it first "
                         f"(bench_gui.py --n {args.n} --work {args.work})")
    settings = args.work / "next-open-settings.json"
    settings.write_text("{}", encoding="utf-8")
    cache = args.work / "cache-next-open"
    env = {"WORKSTATION_CACHE_DIR": str(cache)}
    ready: dict[str, list[float]] = {"cold": [], "prepared": []}
    verdicts: dict[str, list[float]] = {"cold": [], "prepared": []}
    cpu: dict[str, list[float]] = {"cold": [], "prepared": []}
    spent: list[float] = []
    for r in range(args.rounds):
        for k in ready:
            shutil.rmtree(cache, ignore_errors=True)
            extra = ""
            if k == "prepared":
                wall, line = prepare(project, cache)
                spent.append(wall)
                extra = f"   (the command's preparation: {wall:.2f} s whole process, {line})"
            readies, _, lines = bench_gui.cold_start(project, settings, repeat=1, extra_env=env, cpu=cpu[k])
            ready[k].append(readies[0])
            m = re.search(r"verdicts_ms=(\d+)", lines[0])
            if m:
                verdicts[k].append(int(m.group(1)) / 1000)
            print(f"round {r + 1} {k}: READY at {readies[0]:.2f} s, CPU {cpu[k][-1]:.2f} s (load "
                  f"{os.getloadavg()[0]:.2f})   "
                  f"{lines[0]}{extra}", flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    for k, v in ready.items():
        print(f"{k}: READY median {statistics.median(v):.2f} s (min {min(v):.2f}, max {max(v):.2f}); "
              f"verdicts in (verdicts_ms) median {statistics.median(verdicts[k]):.2f} s; the window's process's "
              f"CPU median {statistics.median(cpu[k]):.2f} s; over {len(v)}")
    print(f"the command's preparation: median {statistics.median(spent):.2f} s (whole process)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
