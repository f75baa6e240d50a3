"""Benchmark: building the built-in demo (200 prompts × 4 seeds = 800 samples).

Per sample: render a 512×512 scene, write it as PNG, make the 4 perturbed copies of the
default checker config, run the primary detector on the original and the 4 copies, the
secondary detector on the original. Prints the wall time of `build_demo_dataset` with the
given number of worker processes, the CPU time of each stage summed over the workers (and per
sample; process CPU time, so other load on the machine does not inflate it), then stores everything in a new project and runs the checker
(`build_demo_project`) and prints that too, with the checker's agreement with the truth.

    .venv/bin/python tests/benchmarks/bench_demo.py [--seeds 4] [--workers N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workstation.methods.spatial.demo import STAGES, build_demo_dataset, build_demo_project  # noqa: E402
from workstation.methods.spatial.suite import spatial_suite


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
        return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"
    except OSError:  # pragma: no cover
        return f"{os.cpu_count()} cores"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    ap.add_argument("--keep", type=Path, default=None, help="build the project here and keep it")
    ap.add_argument("--skip-project", action="store_true", help="only time build_demo_dataset")
    args = ap.parse_args()

    prompts = spatial_suite()
    tmp = Path(tempfile.mkdtemp(prefix="bench-demo-"))
    try:
        print(f"machine: {_load()}")
        stats: dict = {}
        t = time.perf_counter()
        ds, truth = build_demo_dataset(tmp / "dataset", args.seeds, prompts, workers=args.workers, stats=stats)
        wall = time.perf_counter() - t
        n = ds.n
        print(f"build_demo_dataset: {n} samples ({len(prompts)} prompts × {args.seeds} seeds), "
              f"{stats['workers']} worker(s): {wall:.1f} s wall, {n / wall:.1f} samples/s")
        print(f"  images: {n} PNG, {sum(f.stat().st_size for f in (tmp / 'dataset').rglob('*.png')) / 2**20:.0f} MiB; "
              f"detections cached: {len(ds.detections)} ({len(ds.variant_names)} variants + secondary)")
        cpu = stats["cpu_s"]
        total_cpu = sum(cpu.values())
        print(f"  CPU time per stage, summed over workers ({total_cpu:.1f} s in all):")
        for k in STAGES:
            per = {"render": 1, "write_png": 1, "perturb": 4, "detect_primary": 5, "detect_secondary": 1}[k]
            print(f"    {k:17s} {cpu[k]:7.1f} s  {cpu[k] / n * 1000:6.1f} ms/sample  "
                  f"({cpu[k] / n / per * 1000:.1f} ms per {'image' if per == 1 else 'call'})")
        print(f"  assemble dataset   {stats['assemble_s']:.2f} s")
        w = stats["workers"]
        print(f"  the workers got {total_cpu / wall / w:.0%} of {w} core(s) (other load shares them); "
              f"on idle cores the build would take about {total_cpu / w:.1f} s")
        if args.skip_project:
            return 0
        folder = args.keep or (tmp / "project")
        t = time.perf_counter()
        s = build_demo_project(folder, args.seeds, workers=args.workers)
        wall = time.perf_counter() - t
        tm = s["timings"]
        print(f"build_demo_project: {wall:.1f} s wall (build {tm['build_s']:.1f} s, store {tm['store_s']:.2f} s, "
              f"checker {tm['evaluate_s']:.3f} s, save verdicts {tm['save_verdicts_s']:.2f} s)")
        v = s["verdicts"]
        a = s["truth"]
        print(f"  verdicts: PASS {v['PASS']}, FAIL {v['FAIL']}, UNDECIDABLE {v['UNDECIDABLE']}")
        print(f"  vs truth: coverage {a['coverage']:.3f}, decided accuracy {a['decided_accuracy']:.3f}, "
              f"accuracy on decidable {a['accuracy_on_decidable']:.3f}, three-way agreement {a['agreement']:.3f}, "
              f"false PASS {a['false_pass']}, false FAIL {a['false_fail']}")
        if args.keep:
            print(f"  project kept in {folder}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
