"""`judges`: every automatic judge of a method's items, how many items each judged, and how often
any two of them — and each with the humans — agree.

    python main.py judges --project DIR [--method NAME ...] [--json FILE] [--overwrite]

Per method with data (or each --method): one line per judge (its name, what it is, its version,
the items it judged and decided), then the agreement table — over the items both judged, the
share both decided (coverage), the accuracy over the items both decided and Cohen's κ, each with
its 95 % interval resampling the prompts (docs/judges.md). The humans are the task's kept label
selection (`labels select`). ``--json`` writes the same numbers (the report's judge tables).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..command_base import add_command, add_output_arg, add_project_arg, reading_project
from ..types import WorkstationError


def register(sub: Any) -> None:
    p = add_command(sub, "judges", "list each method's judges and their agreement (with the humans too)", run,
                    doc=__doc__)
    add_project_arg(p)
    p.add_argument("--method", action="append", metavar="NAME",
                   help="only this method (repeatable; default: every method with data)")
    add_output_arg(p, "--json", "FILE", "also write the judges and the agreement table as JSON", what="judges file")


def tables(project: Any, methods: list[Any], n_boot: int | None = None) -> dict[str, Any]:
    """Per method name: its judges' ``judges`` and ``judge_agreement`` rows (`evaluation.judges`)."""
    from ..evaluation.intervals import N_BOOT
    from ..evaluation.judges import JudgeRun, report_tables
    from ..methods import method_judges

    out: dict[str, Any] = {}
    for m in methods:
        spec = method_judges(project, m.name)
        if spec is None:
            continue
        try:
            out[m.name] = report_tables(JudgeRun(project, spec), n_boot=N_BOOT if n_boot is None else n_boot)
        except WorkstationError as e:  # one method's judges that cannot be read do not hide the others'
            out[m.name] = {"judges": [], "judge_agreement": [], "error": str(e)}
    return out


def lines(found: dict[str, Any]) -> list[str]:
    """What `judges` prints."""
    from ..evaluation.judges import interval_text as _num

    out: list[str] = []
    for method, t in found.items():
        out.append(f"{method}:")
        if t.get("error"):
            out.append(f"  the judges could not be compared: {t['error']}")
        for r in t["judges"]:
            out.append(f"  {r['judge']}: {r['title']} (version {r['version'] or '—'}): judged {r['covered']} of "
                       f"{r['items']}, decided {r['decided']}")
        if t["judge_agreement"]:
            out.append("  agreement (coverage = both decided / both judged; accuracy and κ over both decided; "
                       "95 % intervals over the prompts):")
        for r in t["judge_agreement"]:
            out.append(f"  {r['judge_a']} × {r['judge_b']}: both judged {r['both_judged']}, both decided "
                       f"{r['both_decided']}; coverage {_num(r, 'coverage')}, accuracy {_num(r, 'accuracy')}, "
                       f"κ {_num(r, 'kappa')}")
    return out


def run(args: argparse.Namespace) -> int:
    """Print each method's judges and their agreement table; with --json also write them."""
    from ..methods import methods_with_data
    from ..util.jsonsafe import dumps
    from ..util.output import write_output_text

    with reading_project(args.project) as project:
        found = tables(project, methods_with_data(project, args.method))
    print("\n".join(lines(found)) if found else "no method of this project has judges")
    if args.json is not None:
        write_output_text(args.json, dumps(found, indent=2) + "\n", "judges file", overwrite=args.overwrite,
                          projects=[args.project])
        print(f"wrote {args.json}")
    return 0
