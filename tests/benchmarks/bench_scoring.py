"""CLIPScore throughput, batched vs one image at a time: prints figures, asserts nothing.

    .venv/bin/python tests/benchmarks/bench_scoring.py [--model FOLDER] [--arch tiny|vit-b32]
        [--images 64] [--batch 16] [--size 512] [--device auto] [--dtype fp32] [--repeats 3]

Without ``--model`` a random-weight CLIP is built in a temporary folder: ``tiny`` (2-layer towers,
32-px input; the figure is mostly preprocessing and call overhead) or ``vit-b32`` (the sizes of
openai/clip-vit-base-patch32: 224 px, 12 + 12 layers). ``--model`` takes a real local CLIP folder
(with its tokenizer and preprocessor files). Images are random RGB ``--size``² arrays; texts are
prompts of 8–40 words, all distinct, and the text cache is off, so every pair costs an image and
a text pass. Scoring goes through the batch runner (``score_items``) as a job would.
Needs ../shared/models/clip_tokenizer for the built models.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOKENIZER = ROOT.parent / "shared" / "models" / "clip_tokenizer"
WORDS = ("a red cube to the left of a blue sphere on a wooden table with two cats and a dog sitting next "
         "to a green bowl of apples under a tree in the garden").split()


def best_of(repeats: int, fn: Any) -> float:
    """Shortest wall time of ``repeats`` runs of ``fn()`` (least disturbed by other processes)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def build_model(arch: str, folder: Path) -> Path:
    import models_tiny

    if not (TOKENIZER / "vocab.json").is_file():
        sys.exit(f"CLIP tokenizer not found at {TOKENIZER}; give a real model with --model")
    if arch == "tiny":
        return models_tiny.build_tiny_clip(folder, TOKENIZER)
    import transformers as tf

    model = tf.CLIPModel(tf.CLIPConfig())  # the defaults are clip-vit-base-patch32's sizes
    processor = tf.CLIPProcessor(image_processor=tf.CLIPImageProcessorPil(),
                                 tokenizer=models_tiny.clip_tokenizer(TOKENIZER))
    model.save_pretrained(str(folder), safe_serialization=True)
    processor.save_pretrained(str(folder))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="a local CLIP model folder (default: build a random one)")
    ap.add_argument("--arch", choices=("tiny", "vit-b32"), default="tiny")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import torch

    from workstation.scoring import ScoreItem, create_scorer, score_items

    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (args.size, args.size, 3), dtype=np.uint8) for _ in range(args.images)]
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(8, 41)))) for _ in range(args.images)]
    items = [ScoreItem(str(i), i, t) for i, t in enumerate(texts)]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.model) if args.model else build_model(args.arch, Path(tmp) / f"clip-{args.arch}")
        # no text cache: every repeat embeds every text, as a run over distinct prompts does
        opts = {"model": str(folder), "device": args.device, "dtype": args.dtype, "text_cache": 0}
        batched = create_scorer("clipscore", batch_size=args.batch, **opts)
        single = create_scorer("clipscore", batch_size=1, **opts)
        batched.score(images[:2], texts[:2])  # load and warm up
        single.score(images[:1], texts[:1])

        def run_batched() -> None:
            score_items(batched, items, args.batch, load_image=images.__getitem__)

        def run_single() -> None:
            for im, t in zip(images, texts):
                single.score([im], [t])

        def sync() -> None:
            if torch.cuda.is_available():
                torch.cuda.synchronize()

        tb = best_of(args.repeats, lambda: (run_batched(), sync()))
        ts = best_of(args.repeats, lambda: (run_single(), sync()))
        prov = batched.provenance()
        dev = torch.cuda.get_device_name(0) if prov["device"].startswith("cuda") else f"cpu ({torch.get_num_threads()} threads)"
        print(f"CLIPScore, model {folder.name if args.model else 'random ' + args.arch}, {args.images} images "
              f"{args.size}², device {dev}, {prov['dtype']}, best of {args.repeats}")
        print(f"  batched (batch {args.batch}): {args.images / tb:9.2f} images/s  ({tb:.3f} s)")
        print(f"  one image at a time:  {args.images / ts:9.2f} images/s  ({ts:.3f} s)")
        print(f"  speed-up: {ts / tb:.2f}x")
        if batched.notes:
            print("  notes:", "; ".join(batched.notes))


if __name__ == "__main__":
    main()
