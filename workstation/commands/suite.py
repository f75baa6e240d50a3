"""`suite`: build a method's built-in suite (seeded, versioned by content hash) and write it to a
prompt file or add it to a project.

    python main.py suite --method metalogic [--set n_pairs=800 --set seed=0 ...] (--out FILE.jsonl [--overwrite] | --project DIR)

`--set key=value` passes the method's suite options (numbers, true/false and text are read as
such); `generate --suite FILE` makes images for the file's prompts. An existing FILE is replaced
only with `--overwrite`; never a project's database or a file inside a project but in its
exports/ or reports/ folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_output_arg, parse_options
from ..types import WorkstationError


def register(sub: Any) -> None:
    p = add_command(sub, "suite", "build a method's built-in suite into a prompt file or a project",
                    run, doc=__doc__)
    p.add_argument("--method", required=True, metavar="NAME", help="the method (`main.py methods` lists them)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a suite option (repeatable)")
    add_output_arg(p, "--out", "FILE.jsonl", "write the prompts to this file", what="prompt file")
    p.add_argument("--project", type=Path, metavar="DIR", help="add the prompts to this project")


def run(args: argparse.Namespace) -> int:
    from ..io.prompts import write_prompts_jsonl
    from ..methods import METHODS, get_method

    if not args.out and not args.project:
        raise WorkstationError("give --out FILE.jsonl, --project DIR, or both")
    METHODS.entry(args.method)
    opts = parse_options(args.set)
    try:
        prompts = get_method(args.method).suite(**opts)
    except (TypeError, ValueError, OverflowError) as e:
        raise WorkstationError(f"{args.method} suite: {' '.join(str(e).split())[:200]}") from None
    if args.out:
        n = write_prompts_jsonl(prompts, args.out, overwrite=args.overwrite, projects=[args.project])
        print(f"wrote {n} {args.method} prompts ({prompts.content_hash()}) to {args.out}")
    if args.project:
        from ..store import Project

        with Project.create(args.project, exist_ok=True) as p:
            added = p.samples.add_prompts(prompts)
        print(f"added {added} of {len(prompts)} {args.method} prompts ({prompts.content_hash()}) to {args.project}")
    return 0
