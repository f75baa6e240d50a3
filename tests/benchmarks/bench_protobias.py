"""Benchmark: the ProtoBias core — building triplets, importing an image folder, statistics, demo.

Prints
- the time to build N triplets per domain from the templates,
- the time to validate an image folder (T triplets, two 512×512 PNGs each: path checks, full
  decode, hashing), and to import it into a project (validate, copy, one transaction),
- the time of ``metric_table`` (6 metrics, 1000 bootstrap resamples) for 1k and 10k triplets,
  per domain and per domain × knob,
- the time per demo image to render and to score with the toy metric,
- the score job over ``--score`` triplets (2 images each, 32×32) with a random-weight CLIP built
  from a config (``tests/core/models_tiny.build_tiny_clip`` + the real tokenizer in
  ../shared/models/clip_tokenizer): images/s end to end (worker start, model load, batches,
  ingestion into the project) and images/s of the scorer's batches alone, on the CPU and — when
  a CUDA device is present — on the GPU (fp32 and fp16).

    .venv/bin/python tests/benchmarks/bench_protobias.py [--build 2000] [--folder 200] [--repeat 3]
        [--score 2000] [--score-batch 64] [--only score]
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

from workstation.methods.protobias import (
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


def bench_scoring(n_triplets: int, batch: int) -> None:
    """The score job over n triplets with a tiny random-weight CLIP; GPU figures when CUDA is there."""
    import os
    import shutil

    sys.path.insert(0, str(ROOT / "tests" / "core"))
    sys.path.insert(0, str(ROOT / "tests" / "methods" / "protobias"))
    tok = ROOT.parent / "shared" / "models" / "clip_tokenizer"
    if not (tok / "vocab.json").is_file():
        print(f"score job: skipped (no CLIP tokenizer at {tok})")
        return
    import models_tiny
    import torch
    from test_protobias_scoring import make_scoring_project

    from workstation.jobs import DONE
    from workstation.jobs.chunks import read_image
    from workstation.jobs.runner import run_job
    from workstation.jobs.spec import create_score_job
    from workstation.scoring.registry import create_scorer

    per = {"animals": n_triplets - 2 * (n_triplets // 3), "objects": n_triplets // 3, "demography": n_triplets // 3}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clip = models_tiny.build_tiny_clip(root / "clip", tok, seed=5)
        t = time.perf_counter()
        p = make_scoring_project(root / "p", per)
        print(f"score job: project with {n_triplets} triplets ({2 * n_triplets} PNG 32x32) made in "
              f"{time.perf_counter() - t:.1f} s")
        try:
            spec = create_score_job(p, scorer="clipscore", model=str(clip), method="protobias", batch_size=batch)
            t = time.perf_counter()
            run = run_job(p, spec.job_id, env=dict(os.environ))
            wall = time.perf_counter() - t
            assert run.status == DONE, run.message
            n = len(p.scores.table()["sample_id"])
            print(f"score job (worker process, CPU, batch {batch}): {n} images in {wall:.1f} s = "
                  f"{n / wall:.0f} images/s end to end (start, load, score, ingest)")
            paths = [p.folder / r[0] for r in p.con.execute(
                "SELECT image_path FROM samples ORDER BY ord LIMIT ?", [min(2048, 2 * n_triplets)]).fetchall()]
            texts = [r[0] for r in p.con.execute(
                "SELECT json_extract_string(p.attrs, '$.score_text') FROM samples s JOIN prompts p USING (prompt_id) "
                "ORDER BY s.ord LIMIT ?", [len(paths)]).fetchall()]
        finally:
            p.close()
        images = [read_image(x) for x in paths]
        devices = [("cpu", "fp32")] + ([("cuda", "fp32"), ("cuda", "fp16")] if torch.cuda.is_available() else [])
        for device, dtype in devices:
            sc = create_scorer("clipscore", model=str(clip), device=device, dtype=dtype, batch_size=batch)
            sc.score(images[:batch], texts[:batch])  # load and warm up
            if device == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            for i in range(0, len(images), batch):
                sc.score(images[i:i + batch], texts[i:i + batch])
            if device == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t
            name = torch.cuda.get_device_name(0) if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
            print(f"scorer batches only, {name}, {dtype}, batch {batch}: {len(images) / dt:.0f} images/s "
                  f"({len(images)} images, texts cached after first sight)")
        if not torch.cuda.is_available():
            print("GPU figures: no CUDA device here")
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=int, default=2000, help="triplets per domain to build")
    ap.add_argument("--folder", type=int, default=200, help="triplets in the image folder to import")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--score", type=int, default=2000, help="triplets for the score job (0: skip)")
    ap.add_argument("--score-batch", type=int, default=64)
    ap.add_argument("--only", choices=("score",), default=None, help="run only this part")
    a = ap.parse_args()
    if a.only == "score":
        bench_scoring(a.score, a.score_batch)
        return

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
        from workstation.methods.protobias.importer import import_folder
        from workstation.store import Project

        times = []
        with tempfile.TemporaryDirectory() as ptmp:
            for k in range(a.repeat):
                with Project.create(Path(ptmp) / f"project-{k}") as proj:
                    t0 = time.perf_counter()
                    import_folder(proj, root, run_id="bench")
                    times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        print(f"import_folder (validate, copy, add in one transaction): {a.folder} triplets in {t:.2f} s "
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
    if a.score:
        bench_scoring(a.score, a.score_batch)


if __name__ == "__main__":
    main()
