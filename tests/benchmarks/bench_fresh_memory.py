"""What touching fresh memory costs on this machine: a figure to read every other one against.

    .venv/bin/python tests/benchmarks/bench_fresh_memory.py [--gb 2] [--pause 30]

A virtual machine may back its memory lazily: the first write to a page the guest has not used
lately waits for the host to provide it. Where it does, a process that builds half a gigabyte of
arrays pays for it in seconds, and a figure measured right after another process freed memory
(pages the host still backs) is much lower than the same figure a minute later. This prints,
each in a fresh child process: the seconds to touch `--gb` GB once (one byte per 4 KiB page),
at once again (the pages the first child just freed), and again after `--pause` seconds idle.
A machine that backs its memory eagerly (bare metal) shows three similar, small figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

CHILD = """
import sys, time
import numpy as np
n = int(float(sys.argv[1]) * 2**30)
t = time.perf_counter()
a = np.empty(n, np.uint8)
a[::4096] = 1
print(f"{time.perf_counter() - t:.3f}")
"""


def touch(gb: float) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, str(gb)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=2.0, help="memory touched by each child (GB)")
    ap.add_argument("--pause", type=float, default=30.0, help="seconds idle before the third child")
    args = ap.parse_args(argv)
    first = touch(args.gb)
    again = touch(args.gb)
    time.sleep(args.pause)
    later = touch(args.gb)
    per_mb = 1000.0 / (args.gb * 1024)
    print(f"touch {args.gb:g} GB of fresh memory: {first:.2f} s ({first * per_mb:.2f} ms/MB)")
    print(f"at once again (pages just freed by the first): {again:.2f} s ({again * per_mb:.2f} ms/MB)")
    print(f"after {args.pause:g} s idle: {later:.2f} s ({later * per_mb:.2f} ms/MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
