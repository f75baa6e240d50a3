"""The checker of two checkouts in one process, on the same synthetic detections, in turn.

    .venv/bin/python tests/benchmarks/ab_checker.py --old /tmp/old-checkout [--n 1000000]
        [--repeat 9] [--threads 2] [--busy-core]

The other checkout's checker (`workstation/methods/spatial/checker/`, a package, or a single
`checker.py`) is loaded beside this one (as a module of this checkout's package, so both read the
same dataset classes); each prepares its own
copy of the dataset (`bench_checker.synthetic_dataset`, the same arrays). Then, for each
scenario, the two evaluate the same sequence of configs in turn, config by config, so that a
slow spell of the machine hits both: every verdict array is compared bit for bit between the
two, and the medians of the wall times (with their range) and of the CPU times (the process's
threads together) are printed side by side with the load average.

Scenarios (each config new to both checkers' caches; the previous two results kept alive):
- every stage: min_area_fraction, t_det, margin, ambiguity Δ and a weight moved (bench_checker's);
- the area filter alone: min_area_fraction one step of 0.001 up or down from the one before;
- the area filter jumping: min_area_fraction between values 0.01 apart, none of them seen before;
- a slider move as the window's benchmark makes it: the margin (steps of 0.005) and t_det (steps
  of 0.01) moved together.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT)]

import machine_load  # noqa: E402
from bench_checker import BASE, synthetic_dataset  # noqa: E402
from workstation.dataset import Dataset  # noqa: E402
from workstation.methods.spatial import checker as new_checker  # noqa: E402
from workstation.methods.spatial.config import CheckerConfig  # noqa: E402

FIELDS = ("verdict", "reason", "reason_detail", "conf", "c_detection", "c_geometry", "c_stability", "c_agreement",
          "delta", "iou_ab", "sel_a", "sel_b", "sel2_a", "sel2_b")


def load_other(checkout: Path) -> Any:
    """The other checkout's checker as a module of this package (its relative imports are ours)."""
    where = checkout / "workstation" / "methods" / "spatial"
    package = where / "checker" / "__init__.py"
    name = "workstation.methods.spatial._other_checker"
    if package.is_file():
        spec = importlib.util.spec_from_file_location(name, package,
                                                      submodule_search_locations=[str(package.parent)])
    else:
        spec = importlib.util.spec_from_file_location(name, where / "checker.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def same(a: Any, b: Any) -> bool:
    return all(np.array_equal(np.asarray(getattr(a, k)).view(np.uint8), np.asarray(getattr(b, k)).view(np.uint8))
               for k in FIELDS)


def scenarios() -> list[tuple[str, Callable[[], CheckerConfig]]]:
    k = itertools.count(1)
    step = itertools.count(1)
    jump = itertools.count(1)

    def every() -> CheckerConfig:
        i = next(k)
        return BASE.replace(min_area_fraction=BASE.min_area_fraction + 1e-6 * i, t_det=BASE.t_det + 1e-5 * i,
                            margin=BASE.margin - 1e-5 * i, ambiguity_delta=BASE.ambiguity_delta - 1e-5 * i,
                            w_detection=BASE.w_detection + 1e-5 * i)

    def area_step() -> CheckerConfig:  # up ten steps, down ten, ...
        i = next(step)
        up = (i // 10) % 2 == 0
        pos = i % 10 if up else 10 - i % 10
        return BASE.replace(min_area_fraction=round(0.005 + 0.001 * pos, 6) + 1e-9 * (i // 20))

    def area_jump() -> CheckerConfig:
        i = next(jump)
        return BASE.replace(min_area_fraction=round(0.002 + 0.01 * (i % 4) + 1e-5 * i, 8))

    move = itertools.count(1)

    def margin_t_det() -> CheckerConfig:
        i = next(move) % 40
        return BASE.replace(margin=round(BASE.margin + 0.005 * i, 6), t_det=round(BASE.t_det + 0.01 * i, 6))

    return [("every stage (+ min_area_fraction)", every), ("area filter, steps of 0.001", area_step),
            ("area filter, jumps of 0.01", area_jump), ("slider: margin and t_det", margin_t_det)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the other checkout")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy-core", action="store_true", help="a second process keeps one core busy")
    args = ap.parse_args(argv)
    old = load_other(args.old.resolve())
    mods = {"other": old, "this": new_checker}
    for m in mods.values():
        getattr(m, "parallel", m).THREADS = args.threads  # where it is read (a package: its `parallel`)
    t = time.perf_counter()
    ds = synthetic_dataset(args.n, seed=1)
    print(f"{args.n:,} samples, {len(ds.detections):,} detections (built in {time.perf_counter() - t:.0f} s); "
          f"{args.threads} checker threads; {machine_load.describe()}")
    copies = {k: Dataset(ds.samples, ds.detections, ds.prompts, ds.variant_names) for k in mods}
    for k, m in mods.items():
        t = time.perf_counter()
        m.prepare(copies[k])
        print(f"  {k} checkout: prepare {time.perf_counter() - t:.2f} s; first evaluate", end=" ")
        t = time.perf_counter()
        m.evaluate(copies[k], BASE)
        print(f"{1e3 * (time.perf_counter() - t):.0f} ms")
    with machine_load.one_core_busy(args.busy_core) as busy:
        for label, make in scenarios():
            walls: dict[str, list[float]] = {k: [] for k in mods}
            cpus: dict[str, list[float]] = {k: [] for k in mods}
            keep: dict[str, list[Any]] = {k: [] for k in mods}
            loads = []
            differ = 0
            for i in range(args.repeat):
                cfg = make()
                got = {}
                for k in (("other", "this") if i % 2 == 0 else ("this", "other")):
                    t, c = time.perf_counter(), time.process_time()
                    got[k] = mods[k].evaluate(copies[k], cfg)
                    walls[k].append(time.perf_counter() - t)
                    cpus[k].append(time.process_time() - c)
                    keep[k].append(got[k])
                    del keep[k][:-2]
                differ += not same(got["other"], got["this"])
                loads.append(machine_load.load()[0])
            busy.sample()
            med = {k: statistics.median(v) * 1e3 for k, v in walls.items()}
            cpu = {k: statistics.median(v) * 1e3 for k, v in cpus.items()}
            print(f"  {label:34s} other {med['other']:6.1f} ms ({1e3 * min(walls['other']):.1f}-"
                  f"{1e3 * max(walls['other']):.1f}; CPU {cpu['other']:.1f}), this {med['this']:6.1f} ms "
                  f"({1e3 * min(walls['this']):.1f}-{1e3 * max(walls['this']):.1f}; CPU {cpu['this']:.1f}); "
                  f"medians of {args.repeat}; results differing: {differ}; "
                  f"load {min(loads):.2f}-{max(loads):.2f}", flush=True)
    if args.busy_core:
        print(busy.summary())
    print(f"after: {machine_load.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
