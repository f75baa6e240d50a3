"""Start the window on a project many times over and count the starts that did not reach READY.

    .venv/bin/python tests/benchmarks/start_loop.py --project DIR [--runs 100] [--checkout PATH]

Each run is `main.py gui --project DIR` with `WORKSTATION_EXIT_WHEN_READY=1` (the window shown,
the project's samples shown and their verdicts in, then it quits) and Python's fault handler on,
so that a crash prints every thread's Python stack. A run that exits with an error or a signal,
or without printing READY, is counted, and the end of its output is printed. For rare failures
that depend on the timing of the window's threads (a crash once in twenty starts is invisible in
a test run once). The detection cache is the run's own (a folder under the system's temporary
folder, emptied before each start: each start is a first open).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--project", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose main.py is started")
    args = ap.parse_args(argv)
    if not args.project.is_dir():
        raise SystemExit(f"{args.project} is not a project folder")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="start-loop-") as tmp:
        cache = Path(tmp) / "cache"
        env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
                   WORKSTATION_EXIT_WHEN_READY="1", PYTHONFAULTHANDLER="1",
                   WORKSTATION_SETTINGS=str(Path(tmp) / "settings.ini"), WORKSTATION_CACHE_DIR=str(cache))
        t0 = time.perf_counter()
        for i in range(1, args.runs + 1):
            shutil.rmtree(cache, ignore_errors=True)
            r = subprocess.run([sys.executable, "main.py", "gui", "--project", str(args.project)],
                               cwd=args.checkout, env=env, capture_output=True, text=True, check=False,
                               timeout=600)
            ready = any(ln.startswith("READY") for ln in r.stdout.splitlines())
            if r.returncode != 0 or not ready:
                failed += 1
                print(f"run {i}: exit status {r.returncode}, READY {'printed' if ready else 'not printed'}")
                print((r.stdout + r.stderr)[-4000:], flush=True)
        print(f"{failed} of {args.runs} starts failed ({time.perf_counter() - t0:.0f} s in all)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
