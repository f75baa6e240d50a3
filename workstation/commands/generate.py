"""`generate`: make images for a prompt suite with a generator, as a resumable job.

    python main.py generate --project DIR --suite builtin|PROMPTS.jsonl|PROMPTS.csv \\
        --model procedural|MODEL_FOLDER|HF_ID --seeds K [--width W --height H --steps N \\
        --guidance G --scheduler NAME --negative-prompt TEXT --dtype auto|fp32|fp16|bf16] \\
        [--batch-size B] [--run-id NAME] [--shard i/n]

The work runs in a worker process; this command shows a progress bar (items/s, ETA) and adds
the finished images to the project as they come. Ctrl-C stops after the current batch; the same
command (or `jobs resume`) later makes only the missing images. With `--shard i/n` each machine
makes its share of the items (the same run id everywhere); `merge` joins the shard projects.
Inside a Slurm job array (`sbatch --array=0-N`) the shard comes from the array's variables when
`--shard` is not given (see packaging/slurm/). Everything is checked before the project is
created: a bad request leaves no folder behind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from ..command_base import add_command, add_project_arg

if TYPE_CHECKING:  # pragma: no cover
    from ..dataset import Prompts
    from ..jobs.runner import JobRun
    from ..store import Project


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = add_command(sub, "generate", "generate images for a prompt suite (a resumable job)", run, doc=__doc__)
    add_project_arg(p, "project folder (created if it does not exist)")
    p.add_argument("--suite", default="builtin", metavar="builtin|FILE",
                   help="'builtin' (the --method's built-in suite) or a prompt file (.jsonl / .csv, or one "
                        "written by `suite --out`)")
    p.add_argument("--method", default="spatial", metavar="NAME",
                   help="the method whose built-in suite 'builtin' means (default: spatial)")
    p.add_argument("--pairs", type=int, default=50, help="object pairs of the built-in suite (4 prompts each)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="use only the first N prompts")
    p.add_argument("--model", required=True, metavar="procedural|PATH|HF_ID",
                   help="'procedural' (built-in scenes, no weights) or a diffusers model folder / cached HF id")
    p.add_argument("--generator", default=None, metavar="NAME",
                   help="generator backend for a model (default: diffusers; e.g. gligen)")
    p.add_argument("--seeds", type=int, default=1, metavar="K", help="seeds per prompt: 0 … K-1 (+ --seed-start)")
    p.add_argument("--seed-start", type=int, default=0, help="first seed")
    p.add_argument("--width", type=int, default=None)
    p.add_argument("--height", type=int, default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--guidance", type=float, default=None)
    p.add_argument("--scheduler", default=None, help="e.g. dpmpp_2m, euler, ddim, unipc")
    p.add_argument("--negative-prompt", default=None)
    p.add_argument("--dtype", default=None, choices=("auto", "fp32", "fp16", "bf16"))
    p.add_argument("--device", default=None, help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--batch-size", type=int, default=4, help="images per batch (halved on out-of-memory)")
    p.add_argument("--run-id", default=None, help="run id (default: derived from model, settings and suite)")
    p.add_argument("--shard", default=None, metavar="i/n",
                   help="make only shard i of n (1-based); inside a Slurm job array the default is the "
                        "array task's shard (SLURM_ARRAY_TASK_ID / _MIN / _COUNT)")
    p.add_argument("--no-run", action="store_true", help="store the job without running it")


def load_suite(suite: str, pairs: int = 50, limit: int | None = None,
               method: str = "spatial") -> tuple["Prompts", str]:
    from .pipeline import load_suite as _load

    return _load(suite, pairs, limit, method)


def generation_params(args: argparse.Namespace) -> dict[str, Any]:
    d = {"width": args.width, "height": args.height, "steps": args.steps, "guidance": args.guidance,
         "scheduler": args.scheduler, "negative_prompt": args.negative_prompt, "dtype": args.dtype,
         "device": args.device}
    return {k: v for k, v in d.items() if v is not None}


def open_or_create(folder: Path) -> "Project":
    from ..store import Project

    return Project.create(folder, exist_ok=True)


def watch(project: "Project", job_id: str, unit: str = "img") -> "JobRun":
    """Run a stored job with a terminal progress bar; print how it ended."""
    from ..jobs.progress import CANCELLED, DONE
    from ..jobs.runner import run_job
    from ..progress import TerminalProgress

    with TerminalProgress(job_id, unit=unit) as bar:
        def show(p: Any) -> None:
            if p.total:
                bar(p.done, p.total, p.message)

        run = run_job(project, job_id, show)
    stream = sys.stdout if run.status == DONE else sys.stderr
    print(f"{job_id}: {run.message or run.status}", file=stream)
    if run.status == CANCELLED:
        print(f"resume with: python main.py jobs resume --project {project.folder} {job_id}", file=sys.stderr)
    return run


def announce_job(project: Any, spec: Any, shard_note: str | None) -> None:
    """Says which job was made and what it does, after its shard's note (also kept in the job's log)."""
    from ..jobs.spec import JobPaths, append_log

    if shard_note:
        print(shard_note)
        append_log(JobPaths(project.folder, spec.job_id), shard_note)
    print(f"job {spec.job_id}: {spec.describe()}")


def exit_code(run: "JobRun") -> int:
    from ..jobs.progress import CANCELLED, DONE

    return 0 if run.status == DONE else (130 if run.status == CANCELLED else 1)


def run(args: argparse.Namespace) -> int:
    import os

    from ..jobs import PROCEDURAL, create_generate_job
    from ..jobs.shards import resolve_shard
    from ..jobs.spec import check_generate_request
    from ..io.prompts import check_prompt_texts
    from .pipeline import load_suite_with_lines

    prompts, label, lines = load_suite_with_lines(args.suite, args.pairs, args.limit, getattr(args, "method", "spatial"))
    if args.seeds < 1:
        raise WorkstationError(f"--seeds must be at least 1, got {args.seeds}")
    seeds = list(range(args.seed_start, args.seed_start + args.seeds))
    model = args.model
    if model == PROCEDURAL:
        generator, model_arg = args.generator or PROCEDURAL, None
    else:
        generator, model_arg = args.generator or "diffusers", model
        if generator != PROCEDURAL:
            from ..env import is_hub_id

            p = Path(model).expanduser()
            if not p.exists() and not is_hub_id(model):
                raise WorkstationError(f"model folder not found: {p}")
            if p.exists():
                model_arg = str(p.resolve())
    shard, shard_note = resolve_shard(args.shard, os.environ)
    # everything is checked before the project is created or opened: a bad request leaves nothing
    check_generate_request(prompts, generator=generator, params=generation_params(args), seeds=seeds,
                           run_id=args.run_id, shard=shard, batch_size=args.batch_size)
    project = open_or_create(args.project)
    try:
        check_prompt_texts(project, prompts, args.suite if args.suite != "builtin" else "the built-in suite", lines)
        spec = create_generate_job(project, prompts, generator=generator, model=model_arg,
                                   params=generation_params(args), seeds=seeds, run_id=args.run_id,
                                   shard=shard, batch_size=args.batch_size, suite=label)
        announce_job(project, spec, shard_note)
        if args.no_run:
            return 0
        return exit_code(watch(project, spec.job_id))
    finally:
        project.close()
