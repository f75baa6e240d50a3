"""`methods`: the evaluation methods this workstation knows, what they label and how to start.

    python main.py methods [--name NAME]

Lists every registered method with its description, its label tasks (the values and their
keys) and its default configuration. Loading a method imports its package only (no model
libraries).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..command_base import add_command


def register(sub: Any) -> None:
    p = add_command(sub, "methods", "list the evaluation methods, their label tasks and default settings",
                    run, doc=__doc__)
    p.add_argument("--name", metavar="NAME", help="only this method")


def describe(name: str) -> list[str]:
    """The lines `methods` prints for one method."""
    from ..methods import METHODS, get_method

    m = get_method(name)
    lines = [f"{name}: {m.title}", f"  {METHODS.entry(name).description}"]
    for s in m.label_schemes:
        keys = ", ".join(f"{k} = {s.title_of(v)}" for k, v in zip(s.keys, s.values))
        lines.append(f"  labels {s.task} on each {s.target}: {keys}")
    cfg = m.default_config().to_dict()
    shown = ", ".join(f"{k}={v}" for k, v in list(cfg.items())[:8])
    more = f", … ({len(cfg)} in all)" if len(cfg) > 8 else ""
    lines.append(f"  default config: {shown}{more}")
    lines.append(f"  start: main.py suite --method {name} --out PROMPTS.jsonl; "
                 f"main.py evaluate --method {name} --project DIR; main.py report --method {name} --project DIR --out OUT")
    return lines


def run(args: argparse.Namespace) -> int:
    from ..methods import METHODS

    names = [METHODS.entry(args.name).name] if args.name else METHODS.names()
    for i, name in enumerate(names):
        if i:
            print()
        print("\n".join(describe(name)))
    return 0
