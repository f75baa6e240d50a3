"""Benchmark: the ProtoBias core — building triplets, importing an image folder, statistics, demo.

Prints
- the time to build N triplets per domain from the templates,
- the time to validate an image folder (T triplets, two 512×512 PNGs each: path checks, full
  decode, hashing),
- the time of ``metric_table`` (6 metrics, 1000 bootstrap resamples) for 1k and 10k triplets,
  per domain and per domain × knob,
- the time per demo image to render and to score with the toy metric.

    .venv/bin/python tests/benchmarks/bench_protobias.py [--build 2000] [--folder 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workstation.methods.protobias import (  # noqa: E402
    ToyProtoMetric,
    TripletScores,
    build_demo_triplets,
    build_triplets,
    metric_table,
    read_triplet_index,
    render_demo,
)


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=int, default=2000, help="triplets per domain to build")
    ap.add_argument("--folder", type=int, default=200, help="triplets in the image folder to import")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    t = timed(lambda: build_triplets(a.build, seed=0), a.repeat)
    print(f"build_triplets: {3 * a.build} triplets in {t * 1000:.0f} ms ({t / (3 * a.build) * 1e6:.0f} µs each)")

    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rng = np.random.default_rng(0)
        rows = []
        for i in range(a.folder):
            for role in ("corr", "adv"):
                Image.fromarray(rng.integers(0, 255, (512, 512, 3), dtype=np.uint8)).save(root / f"{i}_{role}.png",
                                                                                       compress_level=1)
            rows.append({"triplet_id": f"t{i}", "text": "An animal stands near a pond.", "domain": "animals",
                         "knob": "count", "image_corr": f"{i}_corr.png", "image_adv": f"{i}_adv.png"})
        (root / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        t = timed(lambda: read_triplet_index(root), a.repeat)
        print(f"read_triplet_index: {a.folder} triplets ({2 * a.folder} PNG 512x512, noise) in {t:.2f} s "
              f"({t / (2 * a.folder) * 1000:.1f} ms per image)")

    rng = np.random.default_rng(1)
    for n in (1000, 10000):
        dom = rng.choice(["animals", "objects", "demography"], n)
        knob = rng.choice(["count", "color", "spatial", "layout_relation"], n)
        scores = TripletScores.from_mapping([f"t{i}" for i in range(n)], dom, knob,
                                            {f"m{j}": (rng.random(n), rng.random(n)) for j in range(6)})
        for by_knob in (False, True):
            t = timed(lambda s=scores, b=by_knob: metric_table(s, by_knob=b), a.repeat)
            print(f"metric_table: {n} triplets x 6 metrics, by_knob={by_knob}, 1000 resamples: {t:.2f} s")

    ts = build_demo_triplets(20, seed=0).triplets
    t = timed(lambda: [render_demo(x, "corr") for x in ts], a.repeat)
    imgs = [render_demo(x, "corr") for x in ts]
    texts = [x.text for x in ts]
    m = ToyProtoMetric(p=0.3)
    t2 = timed(lambda: m.score(imgs, texts), a.repeat)
    print(f"demo: render {t / len(ts) * 1000:.1f} ms, toy metric {t2 / len(ts) * 1000:.1f} ms per 256x256 image")


if __name__ == "__main__":
    main()
