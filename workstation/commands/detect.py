"""`detect`: run detectors over the project's samples, as a resumable job.

    python main.py detect --project DIR --detector NAME [--model PATH] [--secondary NAME[=PATH] ...] \\
        [--perturbations default|none|NAME,NAME] [--runs RUN ...] [--batch-size B] [--shard i/n]

The primary detector runs on every image and on each perturbed variant (for the checker's
stability term); secondary detectors run on the original image. `scene` is the built-in
detector for procedural images. Ctrl-C stops after the current batch; `jobs resume` goes on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..types import WorkstationError
from ..command_base import add_command, add_project_arg


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = add_command(sub, "detect", "run detectors over the samples (a resumable job)", run, doc=__doc__)
    add_project_arg(p)
    p.add_argument("--detector", required=True, metavar="NAME", help="primary detector (e.g. scene, yolox)")
    p.add_argument("--model", default=None, metavar="PATH", help="the primary detector's model file or folder")
    p.add_argument("--secondary", nargs="*", default=[], metavar="NAME[=PATH]", help="secondary detector(s)")
    p.add_argument("--perturbations", default="default", metavar="default|none|LIST",
                   help="perturbed variants for the stability term: default, none, or names such as "
                        "brightness_1.1,gaussian_blur_1,resize_0.9")
    p.add_argument("--runs", nargs="*", default=[], metavar="RUN", help="only the samples of these runs")
    p.add_argument("--batch-size", type=int, default=8, help="samples per batch")
    p.add_argument("--shard", default=None, metavar="i/n",
                   help="only shard i of n (1-based); inside a Slurm job array the default is the array "
                        "task's shard")
    p.add_argument("--evaluate", action="store_true", help="compute the checker's verdicts afterwards")
    p.add_argument("--no-run", action="store_true", help="store the job without running it")


def perturbation_names(text: str) -> list[str]:
    from ..perturb import DEFAULT_PERTURBATIONS, Perturbation

    t = text.strip().lower()
    if t == "default":
        return [p.name for p in DEFAULT_PERTURBATIONS]
    if t in ("none", ""):
        return []
    names = []
    for part in text.split(","):
        part = part.strip()
        try:
            names.append(Perturbation.from_name(part).name)
        except ValueError:
            raise WorkstationError(f"unknown perturbation {part!r}; use default, none, or names such as "
                                   "brightness_1.1,gaussian_blur_1,resize_0.9") from None
    return names


def parse_secondary(items: list[str]) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for s in items:
        name, _, model = s.partition("=")
        if not name:
            raise WorkstationError(f"--secondary {s!r}: give NAME or NAME=PATH")
        out.append((name, model or None))
    return out


def run(args: argparse.Namespace) -> int:
    import os

    from ..jobs import create_detect_job, create_evaluate_job
    from ..jobs.shards import resolve_shard
    from ..command_base import open_project
    from ..methods import after_samples_changed
    from .generate import announce_job, exit_code, watch

    shard, shard_note = resolve_shard(args.shard, os.environ)
    secondary = parse_secondary(args.secondary)
    perturbations = perturbation_names(args.perturbations)
    project = open_project(args.project)
    try:
        model = str(Path(args.model).expanduser().resolve()) if args.model and Path(args.model).expanduser().exists() \
            else args.model
        spec = create_detect_job(project, detector=args.detector, model=model, secondary=secondary,
                                 perturbations=perturbations, runs=args.runs, shard=shard,
                                 batch_size=args.batch_size)
        announce_job(project, spec, shard_note)
        if args.no_run:
            return 0
        code = exit_code(watch(project, spec.job_id, unit="sample"))
        if code == 0 and args.evaluate:
            ev = create_evaluate_job(project)
            code = exit_code(watch(project, ev.job_id, unit="step"))
        if code == 0 and shard.whole:  # a shard's project is merged, not opened
            after_samples_changed(project)
        return code
    finally:
        project.close()
