"""The large-project figures of `docs/performance.md`'s section on re-evaluating, every-stage
changes and a loaded machine, in one run: each benchmark below as a process of its own, its
command and the machine's load printed before it, and at the end the lines that carry the
figures again, part by part (each part's command, load and duration with them).

    .venv/bin/python tests/benchmarks/bench_targets.py --work WORK [--rounds 5] [--old OTHER_CHECKOUT]
        [--n 1000000] [--pairs-n 1000000] [--skip evaluate,checker,gui,next_open,drag]

1. `bench_evaluate.py`: `main.py evaluate`'s first run against a re-run at 100,000 and N samples
   (goal: re-run <= 1.2x the first run), each `--rounds` times (and the other checkout's, in turn);
2. `bench_checker.py` at N samples: every stage (min_area_fraction with the rest) and each
   slider, medians of `--rounds` (at least 7); with `--old`, `ab_checker.py`: both checkouts'
   checkers in one process, the every-stage change and the area filter alone, in turn;
3. `bench_gui.py --busy-core` at N samples: cold starts (first open and from the cache,
   `--rounds` each), next pair (on an N-sample project sharing 120 PNGs with `--pairs-n`), the
   slider moves, memory, with a second process keeping one core busy throughout;
4. `bench_next_open.py --busy-core`: the first open after a command prepared it, `--rounds`;
5. `bench_drag.py --busy-core`: a Calibration slider dragged at 60 Hz on the N-sample project,
   the window's handling of slow live updates against every update on its thread, `--rounds`.

Projects are built under WORK (and reused): `bench_gui.py`'s synthetic projects. Allow an hour
or more at N = 1,000,000 on a two-core machine.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import machine_load  # noqa: E402

PARTS = ("evaluate", "checker", "gui", "next_open", "drag")


# the lines of each part's output that carry the section's figures, repeated at the end
KEY_LINES = ("medians of", "load average before the runs", "every stage", "area filter alone", "slider move:", "slider: margin",
             "slider: t_det", "first open (no cache", "synthetic project (", "with prefetch",
             "checker evaluate alone", "set_config -> views", "filtered to UNDECIDABLE", "with the Calibration tab",
             "Browse tab:", "filtered and sorted:", "Calibration tab:", "READY median", "rounds: gaps", "second process spun")
SUMMARY: list[str] = []


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    """`cmd` from the checkout's root, its output passed on as it comes and its key lines kept."""
    shown = " ".join(shlex.quote(str(c)) for c in cmd).replace(sys.executable, ".venv/bin/python").replace(
        f"{ROOT}/", "")
    head = f"$ {shown}\n  ({time.strftime('%Y-%m-%d %H:%M')}; {machine_load.describe()})"
    print(f"\n{head}", flush=True)
    SUMMARY.append(head)
    t = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        if any(k in line for k in KEY_LINES):
            SUMMARY.append(line.rstrip())
    rc = proc.wait()
    tail = f"  ({'exit ' + str(rc) + ', ' if rc else ''}{time.perf_counter() - t:.0f} s)"
    print(tail, flush=True)
    SUMMARY.append(tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--pairs-n", type=int, default=0, help="also time next pair on a project of this many samples")
    ap.add_argument("--old", type=Path, default=None, help="another checkout for the A/B parts")
    ap.add_argument("--skip", default="", help=f"comma-separated parts to leave out: {', '.join(PARTS)}")
    args = ap.parse_args(argv)
    skip = {x.strip() for x in args.skip.split(",") if x.strip()}
    py = sys.executable
    bench = HERE
    old = ["--old", str(args.old)] if args.old else []
    head = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=ROOT, capture_output=True, text=True).stdout
    print(f"checkout {ROOT} ({head.strip()[:80]}); python {sys.version.split()[0]}; {machine_load.describe()}")
    sizes = ",".join(str(n) for n in sorted({100_000, args.n}))
    if "evaluate" not in skip:
        run([py, bench / "bench_evaluate.py", "--sizes", sizes, "--work", args.work, "--rounds", str(args.rounds), *old])
    if "checker" not in skip:
        run([py, bench / "bench_checker.py", "--sizes", str(args.n), "--repeat", str(max(7, args.rounds)),
             "--threads", "2", "--orig-n", "0"])
        if args.old:
            run([py, bench / "ab_checker.py", "--n", str(args.n), "--repeat", str(max(7, args.rounds)), *old])
    if "gui" not in skip:
        run([py, bench / "bench_gui.py", "--n", str(args.n), "--work", args.work, "--busy-core",
             "--first-opens", str(args.rounds), "--opens", str(args.rounds), "--cycles", "3",
             *(["--pairs-n", str(args.pairs_n)] if args.pairs_n else [])])
    if "next_open" not in skip:
        run([py, bench / "bench_next_open.py", "--n", str(args.n), "--work", args.work, "--rounds", str(args.rounds),
             "--busy-core"])
    if "drag" not in skip:
        run([py, bench / "bench_drag.py", args.work / f"synthetic_{args.n}_f32", "--rounds", str(args.rounds),
             "--busy-core"], env={"WORKSTATION_CACHE_DIR": str(args.work / "cache")})
    print(f"\ndone; {machine_load.describe()}")
    print("\n== the figures, part by part ==")
    print("\n".join(SUMMARY))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
