"""Where a first open of the large synthetic project spends its time and fresh memory.

    .venv/bin/python tests/benchmarks/bench_load_phases.py --work WORK [--n 1000000] [--runs 3] [--busy-core]

Each run is a fresh process that opens `WORK/synthetic_N_f32` (build it first:
`bench_gui.py --n N --work WORK`, or its `build_project`) with an empty detection cache of its
own, loads the spatial dataset as the window does (`workstation.methods.spatial.store.load_dataset`)
and checks it under the active config (`checker.evaluate`). It prints, for each step of the
load and the check, its seconds and the memory it faulted in (minor page faults × 4 KiB, from
`getrusage`): on a machine whose host backs memory lazily (see `bench_fresh_memory.py`) the
second figure costs time too. Steps nest: a step's figures include those of the steps it calls.
The load reads the detections on a second thread while it builds the prompts and samples: steps
on the two threads overlap, and a step's faults are the whole process's while it ran.
`--busy-core` keeps one core busy with a second process for the whole run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

STEPS = [  # (module, qualified name), outermost last
    ("workstation.store.samples", "SamplesRepo._prompts_of"),
    ("workstation.store.samples", "SamplesRepo._load_detections"),
    ("workstation.store.samples", "_samples_from_arrow"),
    ("workstation.store.samples", "SamplesRepo._detection_cache_family"),
    ("workstation.store.samples", "SamplesRepo._detection_cache_key"),
    ("workstation.store.samples", "SamplesRepo._scan_plan"),
    ("workstation.store.samples", "SamplesRepo._scan_detections"),
    ("workstation.store.detection_cache", "store"),
    ("workstation.store.samples", "SamplesRepo.load_dataset"),
    ("workstation.methods.spatial.checker.prepared", "_prepare"),
    ("workstation.methods.spatial.checker", "evaluate"),
]

CHILD = """
import functools, importlib, json, resource, sys, time
sys.path.insert(0, {root!r})
steps = json.loads({steps!r})
seen = []

def wrap(modname, qual):
    owner = importlib.import_module(modname)
    parts = qual.split(".")
    for p in parts[:-1]:
        owner = getattr(owner, p)
    f = getattr(owner, parts[-1])
    static = isinstance(vars(owner).get(parts[-1]) if isinstance(owner, type) else None, staticmethod)

    @functools.wraps(f)
    def timed(*a, **k):
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            seen.append((qual, time.perf_counter() - t0, (r1.ru_minflt - r0.ru_minflt) * 4 / 1024))
    setattr(owner, parts[-1], staticmethod(timed) if static else timed)

for m, q in steps:
    wrap(m, q)
from workstation.methods.spatial.checker import evaluate
from workstation.methods.spatial.store import SpatialStore, load_dataset
from workstation.store import Project

t0 = time.perf_counter()
with Project.open({project!r}, read_only=True) as p:
    p.con.execute("SET enable_progress_bar = false")  # DuckDB's bar on long scans: not a figure
    ds = load_dataset(p)
    _, cfg = SpatialStore(p).active_config()
    evaluate(ds, cfg)
total = time.perf_counter() - t0
for qual, s, mb in seen:
    print(f"  {{qual:38s}} {{s:6.2f}} s  {{mb:7.0f}} MB faulted")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"  {{'load and check':38s}} {{total:6.2f}} s  peak resident {{peak:.0f}} MB")
"""


def main(argv: list[str] | None = None) -> int:
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--busy-core", action="store_true", help="a second process keeps one core busy throughout")
    args = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]
    import bench_gui
    import machine_load

    print(f"{'one core kept busy by a second process; ' if args.busy_core else ''}{machine_load.describe()}", flush=True)
    with machine_load.one_core_busy(args.busy_core) as busy:
        _runs(args, bench_gui)
    if args.busy_core:
        print(busy.summary())
    print(f"after: {machine_load.describe()}")
    return 0


def _runs(args: argparse.Namespace, bench_gui: Any) -> None:
    import json

    import machine_load

    project = args.work / bench_gui.big_project_name(args.n)
    if not project.exists():
        raise SystemExit(f"{project} does not exist: build it first (bench_gui.py --n {args.n} --work {args.work})")
    code = CHILD.format(root=str(ROOT), steps=json.dumps(STEPS), project=str(project))
    for r in range(args.runs):
        cache = Path(tempfile.mkdtemp(prefix="bench-load-cache-"))
        try:
            env = dict(os.environ, WORKSTATION_CACHE_DIR=str(cache))
            print(f"run {r + 1} (first open: empty cache; load {machine_load.load()[0]:.2f})", flush=True)
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
        finally:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
