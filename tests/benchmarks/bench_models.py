"""Model-layer throughput: prints figures, asserts nothing.

    .venv/bin/python tests/benchmarks/bench_models.py [--images 48] [--sd-images 16] [--sd-batch 8]

- Any machine: YOLOX-Nano (OpenCV DNN, CPU) images/s, one image per call vs batches of 8, on
  the COCO fixture photographs.
- With CUDA (or --gpu-parts-on-cpu to smoke-test them with small sizes): a Stable Diffusion
  1.5-architecture pipeline with random weights (SD 1.5 config sizes, fp16, 512², 30 steps,
  DPM-Solver++ 2M) through the workstation's generator in batches vs a plain one-image-at-a-time
  diffusers loop; and OWLv2-base-architecture detection (960², patch 16) batched vs per image.
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

SHARED = ROOT.parent / "shared"
MODELS = SHARED / "models"


def coco_images() -> list[np.ndarray]:
    import cv2

    out = []
    for p in sorted((SHARED / "fixtures" / "coco").glob("*.jpg")):
        out.append(np.ascontiguousarray(cv2.imread(str(p))[:, :, ::-1]))
    return out


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:8.2f} images/s  ({seconds:.2f} s for {n})"


def best_of(repeats: int, fn: Any) -> float:
    """Shortest wall time of ``repeats`` runs of ``fn()`` (least disturbed by other processes)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_yolox(n: int, repeats: int) -> None:
    from workstation.detection import create_detector

    path = MODELS / "yolox_nano" / "yolox_nano.onnx"
    if not path.is_file():
        print(f"YOLOX-Nano: skipped ({path} not found)")
        return
    import cv2

    det = create_detector("yolox", model=str(path))
    base = coco_images()
    images = [base[i % len(base)] for i in range(n)]
    det.detect_batch(images[:2])  # warm-up
    print(f"YOLOX-Nano 416², OpenCV {cv2.__version__} DNN, {cv2.getNumThreads()} threads, {len(base)} COCO photos "
          f"cycled, best of {repeats}")

    def single() -> None:
        for im in images:
            det.detect_batch([im])

    def batched() -> None:
        for i in range(0, n, 8):
            det.detect_batch(images[i : i + 8])

    print(f"  one image per call : {rate(n, best_of(repeats, single))}")
    print(f"  batches of 8       : {rate(n, best_of(repeats, batched))}")


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bench_sd(device: str, n: int, batch: int, small: bool, workdir: Path) -> None:
    import torch

    import models_tiny
    from workstation.generation import GenerationParams, GenerationRequest, create_generator

    tok = MODELS / "clip_tokenizer"
    folder = workdir / ("tiny-sd" if small else "sd15-random")
    t = time.perf_counter()
    if small:
        models_tiny.build_tiny_sd(folder, tok)
        size, steps = 64, 4
    else:
        from diffusers import StableDiffusionPipeline

        pipe = StableDiffusionPipeline(**models_tiny.sd15_size_components(tok), requires_safety_checker=False)
        pipe.to(torch.float16).save_pretrained(str(folder), safe_serialization=True)
        del pipe
        size, steps = 512, 30
    print(f"SD 1.5-architecture pipeline, random weights ({'tiny sizes' if small else 'SD 1.5 sizes'}), built and "
          f"saved in {time.perf_counter() - t:.1f} s")
    dtype = "fp16" if device.startswith("cuda") else "fp32"
    params = GenerationParams(width=size, height=size, steps=steps, guidance=7.5, batch_size=batch, dtype=dtype,
                              device=device)
    prompts = [f"A photo of a cat to the left of a dog, variant {i}" for i in range(n)]
    seeds = list(range(n))

    gen = create_generator("diffusers", model=str(folder))
    gen.generate(GenerationRequest(prompts[:batch], seeds[:batch]), params)  # load + warm-up
    sync(device)
    t = time.perf_counter()
    images = gen.generate(GenerationRequest(prompts, seeds), params)
    sync(device)
    batched = time.perf_counter() - t
    prov = gen.provenance()
    gen.unload()

    from diffusers import DPMSolverMultistepScheduler, StableDiffusionPipeline

    pipe = StableDiffusionPipeline.from_pretrained(str(folder), dtype=torch.float16 if dtype == "fp16" else torch.float32)
    pipe.scheduler = DPMSolverMultistepScheduler.from_config(pipe.scheduler.config, algorithm_type="dpmsolver++")
    pipe = pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    kw = dict(height=size, width=size, num_inference_steps=steps, guidance_scale=7.5)
    pipe(prompts[0], generator=torch.Generator("cpu").manual_seed(0), **kw)  # warm-up
    sync(device)
    t = time.perf_counter()
    for p, s in zip(prompts, seeds):
        pipe(p, generator=torch.Generator("cpu").manual_seed(s), **kw)
    sync(device)
    single = time.perf_counter() - t
    print(f"  {size}², {steps} steps, {dtype}, {prov['scheduler_class']}, device {prov['device']}")
    print(f"  workstation generator, batches of {batch}: {rate(n, batched)}")
    print(f"  plain diffusers loop, one image per call : {rate(n, single)}")
    print(f"  speed-up: {single / batched:.2f}×   ({len(images)} images, {images[0].shape})")
    if device.startswith("cuda"):
        print(f"  peak GPU memory: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    del pipe


def bench_owlv2(device: str, n: int, small: bool, workdir: Path) -> None:
    import transformers as tf

    from workstation.detection import create_detector

    folder = workdir / ("owlv2-tiny" if small else "owlv2-base")
    t = time.perf_counter()
    if small:
        import models_tiny

        models_tiny.build_tiny_owl(folder, MODELS / "clip_tokenizer", v2=True)
    else:
        config = tf.Owlv2Config(
            text_config=dict(max_position_embeddings=16),
            vision_config=dict(image_size=960, patch_size=16),
        )
        model = tf.Owlv2ForObjectDetection(config)
        model.save_pretrained(str(folder), safe_serialization=True)
        tok = tf.CLIPTokenizer.from_pretrained(str(MODELS / "clip_tokenizer"), model_max_length=16, pad_token="!")
        tf.Owlv2Processor(image_processor=tf.Owlv2ImageProcessorPil(size={"height": 960, "width": 960}),
                          tokenizer=tok).save_pretrained(str(folder))
        del model
    print(f"OWLv2 {'tiny' if small else 'base-architecture (ViT-B/16, 960²)'} random weights, built in "
          f"{time.perf_counter() - t:.1f} s")
    dtype = "fp16" if device.startswith("cuda") else "fp32"
    det = create_detector("owlv2", model=str(folder), device=device, dtype=dtype, batch_size=8)
    base = coco_images()
    images = [base[i % len(base)] for i in range(n)]
    queries = [["person", "tv"], ["truck", "car"], ["bowl", "broccoli"]]
    qs = [queries[i % len(queries)] for i in range(n)]
    det.detect_batch(images[:8], qs[:8])  # load + warm-up
    sync(device)
    t = time.perf_counter()
    for im, q in zip(images, qs):
        det.detect_batch([im], [q])
    sync(device)
    single = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(0, n, 8):
        det.detect_batch(images[i : i + 8], qs[i : i + 8])
    sync(device)
    batched = time.perf_counter() - t
    print(f"  {dtype}, device {det.device}")
    print(f"  one image per call : {rate(n, single)}")
    print(f"  batches of 8       : {rate(n, batched)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=48, help="images for the detection figures")
    ap.add_argument("--sd-images", type=int, default=16, help="images for the generation figures")
    ap.add_argument("--sd-batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3, help="CPU detection timings: best of this many runs")
    ap.add_argument("--gpu-parts-on-cpu", action="store_true",
                    help="run the GPU benchmarks on the CPU with tiny models (a smoke test of this script)")
    args = ap.parse_args()

    from workstation import env

    info = env.environment_info(include_torch=False)
    print(f"GPU: {env.gpu_name()}   driver: {info['gpus'][0]['driver'] if info['gpus'] else '-'}   "
          f"CPU cores: {info['cpu_count']}")
    print("packages:", ", ".join(f"{k} {v}" for k, v in info["packages"].items()
                                  if k in ("torch", "diffusers", "transformers", "opencv-python-headless", "numpy")))
    bench_yolox(args.images, args.repeats)

    try:
        import torch
    except ImportError:
        print("torch not installed: generation / OWLv2 benchmarks skipped")
        return
    cuda = torch.cuda.is_available()
    if cuda:
        print(f"CUDA {torch.version.cuda}, device {torch.cuda.get_device_name(0)}")
    elif not args.gpu_parts_on_cpu:
        print("no CUDA device: SD 1.5 and OWLv2 benchmarks skipped (--gpu-parts-on-cpu smoke-tests them)")
        return
    device = "cuda" if cuda else "cpu"
    small = not cuda
    with tempfile.TemporaryDirectory(prefix="bench-models-") as tmp:
        bench_sd(device, args.sd_images if cuda else 4, args.sd_batch if cuda else 2, small, Path(tmp))
        bench_owlv2(device, args.images if cuda else 8, small, Path(tmp))


if __name__ == "__main__":
    main()
