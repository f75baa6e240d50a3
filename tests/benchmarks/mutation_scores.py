"""Mutation scores per module (and for the path guards alone) from a finished `mutmut run`.

    .venv/bin/mutmut run --max-children 2      # [tool.mutmut] in pyproject.toml names modules and tests
    .venv/bin/python tests/benchmarks/mutation_scores.py [--survivors]

Reads ``mutants/**/*.py.meta`` (mutmut's results). The score is killed / all mutants of the module,
where all counts every mutant: survived, not covered by any selected test ("no tests"),
timeouts (counted as killed: the mutant never finished) and the rest. The path guards are the
functions `check_relative`, `source_file`, `target_file` and `_inside` of `util/paths.py` (the
module's other functions name the user's folders).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KILLED = {1, 3, 24, -24, 36, 152, 255, 37}  # test failures, timeouts, type-check catches
GUARDS = ("x_check_relative__", "x_source_file__", "x_target_file__", "x__inside__")


def scores(root: Path = ROOT) -> list[tuple[str, int, int, Counter[str]]]:
    out = []
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes = data.get("exit_code_by_key", {})
        if not codes:
            continue
        rel = meta.relative_to(root / "mutants").as_posix()[: -len(".meta")]
        groups: dict[str, dict[str, object]] = {rel: codes}
        if rel.endswith("util/paths.py"):
            groups = {rel + " (path guards)": {k: v for k, v in codes.items() if any(g in k for g in GUARDS)},
                      rel + " (whole module)": codes}
        for name, group in groups.items():
            status: Counter[str] = Counter()
            for v in group.values():
                status["killed" if v in KILLED else "survived" if v == 0 else "no tests" if v in (5, 33)
                       else "not checked" if v is None else f"exit {v}"] += 1
            out.append((name, status["killed"], len(group), status))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--survivors", action="store_true", help="list the mutants that survived")
    a = ap.parse_args(argv)
    rows = scores()
    if not rows:
        print("no mutmut results under mutants/: run `mutmut run` first", file=sys.stderr)
        return 1
    for name, killed, total, status in rows:
        rest = ", ".join(f"{k} {v}" for k, v in sorted(status.items()) if k != "killed")
        print(f"{name:60s} {killed:5d} / {total:5d} killed = {100 * killed / max(total, 1):5.1f} %   ({rest})")
    if a.survivors:
        for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
            for k, v in json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {}).items():
                if v in (0, 5, 33):
                    print(("survived  " if v == 0 else "no tests  ") + k)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
