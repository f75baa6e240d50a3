"""`score`: score the project's images against their prompts with an automatic metric (a
resumable job in a worker process).

    python main.py score --project DIR --scorer clipscore|pickscore|vqa_yes|vqa_faithfulness \\
        --model MODEL_FOLDER [--processor FOLDER] [--method NAME] [--run RUN ...] \\
        [--batch-size B] [--device auto|cpu|cuda] [--dtype fp32|fp16|bf16] [--shard i/n] [--no-run]

Each image is scored against its prompt's text (ProtoBias triplet images against their text T).
Scores are stored under the scorer's name and the hash of its weights (`clipscore@3f2a…`), so
two models never mix; the methods read them (MetaLogic's CLIPScore stability, ProtoBias's
metric audit, DyEval's pre-marks). Ctrl-C stops after the current batch; the same command
resumes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_project_arg


def register(sub: Any) -> None:
    p = add_command(sub, "score", "score images against their prompts with a metric (a resumable job)",
                    run, doc=__doc__)
    add_project_arg(p)
    p.add_argument("--scorer", required=True, metavar="NAME", help="clipscore, pickscore, vqa_yes, vqa_faithfulness")
    p.add_argument("--model", metavar="FOLDER|HF_ID", help="the scorer's local model folder (or cached id)")
    p.add_argument("--processor", metavar="FOLDER", help="a separate tokenizer / image processor folder")
    p.add_argument("--method", default="", metavar="NAME", help="only images of this method's prompts")
    p.add_argument("--run", action="append", default=[], dest="runs", metavar="RUN", help="only this run (repeatable)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default=None, help="auto, cpu, cuda, cuda:N")
    p.add_argument("--dtype", default=None, choices=("fp32", "fp16", "bf16"))
    p.add_argument("--shard", default=None, metavar="i/n", help="score only shard i of n")
    p.add_argument("--no-run", action="store_true", help="store the job without running it")


def run(args: argparse.Namespace) -> int:
    from ..jobs.spec import create_score_job
    from ..command_base import open_project
    from .generate import exit_code, watch

    model = args.model
    if model and Path(model).expanduser().exists():
        model = str(Path(model).expanduser().resolve())
    options = {k: v for k, v in {"processor": args.processor, "device": args.device, "dtype": args.dtype}.items()
               if v is not None}
    project = open_project(args.project)
    try:
        spec = create_score_job(project, scorer=args.scorer, model=model, options=options, runs=args.runs,
                                method=args.method, shard=args.shard, batch_size=args.batch_size)
        print(f"job {spec.job_id}: {spec.describe()}")
        if args.no_run:
            return 0
        return exit_code(watch(project, spec.job_id, unit="img"))
    finally:
        project.close()
