"""Every command's and sub-command's `--help` text, one file each, to compare two checkouts.

    .venv/bin/python packaging/compare_help.py OUT_DIR
    diff -r OUT_DIR_BEFORE OUT_DIR_AFTER

Builds the command line as `main.py` does (the core's commands, every method's own and the
window's) and writes the help of each parser, sub-commands included, to ``OUT_DIR/<command
words>.txt`` (``workstation.txt`` for the top level), formatted at a fixed width of 100 columns so
that two runs compare line for line whatever the terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = "100"


Parsers = Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]


def parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Parsers:
    """``parser`` and each of its sub-commands' parsers (depth first, in the order they were added),
    with the words that name them; an alias is left out (it shows the same parser)."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue
                seen.add(id(sub))
                yield from parsers(sub, (*words, name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="folder for the help texts (created; files in it are replaced)")
    args = ap.parse_args(argv)
    os.environ["COLUMNS"] = WIDTH  # argparse fills to the terminal's width: the same on every machine
    os.environ.pop("LINES", None)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from main import UI_COMMANDS
    from workstation.cli import build_parser

    args.out.mkdir(parents=True, exist_ok=True)
    n = 0
    for words, parser in parsers(build_parser(UI_COMMANDS)):
        name = "_".join(("workstation", *words))
        (args.out / f"{name}.txt").write_text(parser.format_help(), encoding="utf-8")
        n += 1
    print(f"wrote the help of {n} commands and sub-commands to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
