"""`protocol`: a label task's instructions and worked examples, kept with the project.

    python main.py protocol --project DIR --task TASK [--instructions FILE] [--examples FILE] [--clear]

Without a file it prints the task's instructions and examples. --instructions FILE (UTF-8 text)
replaces the instructions; --examples FILE replaces the examples (one a non-empty line); --clear
drops both. The window shows them beside the task's judging page (the "Instructions" box, where
they can be edited too) and the report's protocol card prints them (the "Raters" section).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..command_base import add_command, add_project_arg, open_project, reading_project


def register(sub: Any) -> None:
    p = add_command(sub, "protocol", "a label task's instructions and worked examples (the protocol card's)", run,
                    doc=__doc__)
    add_project_arg(p)
    p.add_argument("--task", required=True, metavar="TASK", help="the label task (spatial.verdict, ...)")
    p.add_argument("--instructions", type=Path, metavar="FILE", help="replace the instructions with this text file")
    p.add_argument("--examples", type=Path, metavar="FILE",
                   help="replace the worked examples with this text file's lines (one example a line)")
    p.add_argument("--clear", action="store_true", help="drop the task's instructions and examples")


def _read(path: Path, what: str) -> str:
    from ..types import WorkstationError

    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise WorkstationError(f"{path}: the {what} file is not UTF-8 text") from None
    except OSError as e:
        raise WorkstationError(f"{path}: cannot read the {what} file ({e.strerror or e})") from None


def run(args: argparse.Namespace) -> int:
    """Print, replace or drop a task's instructions and examples (module docstring)."""
    from ..evaluation.protocol import ProtocolText, load_protocol, read_examples, save_protocol
    from ..types import WorkstationError
    from .tasks import label_tasks

    if args.task not in label_tasks():
        raise WorkstationError(f"unknown label task {args.task!r} (expected one of {', '.join(label_tasks())})")
    if args.clear and (args.instructions or args.examples):
        raise WorkstationError("--clear drops the instructions and examples: give no file with it")
    if not (args.clear or args.instructions or args.examples):
        with reading_project(args.project) as project:
            text = load_protocol(project, args.task)
        if text.empty:
            print(f"{args.task}: no instructions kept (protocol --instructions FILE)")
            return 0
        print(f"{args.task} — instructions:\n{text.instructions.strip() or '—'}")
        print("examples:" + "".join(f"\n  • {x}" for x in text.examples) if text.examples else "examples: —")
        return 0
    new_instr = _read(args.instructions, "instructions") if args.instructions else None
    new_ex = read_examples(_read(args.examples, "examples")) if args.examples else None
    with open_project(args.project) as project:
        old = load_protocol(project, args.task)
        text = ProtocolText() if args.clear else ProtocolText(
            old.instructions if new_instr is None else new_instr.strip(), old.examples if new_ex is None else new_ex)
        save_protocol(project, args.task, text)
    print(f"{args.task}: " + ("instructions and examples dropped" if args.clear else
                              f"instructions of {len(text.instructions)} characters, {len(text.examples)} "
                              f"example{'s' if len(text.examples) != 1 else ''} kept"))
    return 0
