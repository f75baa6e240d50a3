"""`calibrate`: grid search of checker parameters against the human labels.

    python main.py calibrate --project DIR --grid margin=0.03,0.05,0.07,0.10 --grid t_det=0.2,0.3,0.4 \
        --grid tau=0.3,0.5,0.7 --out FILE.json [--weights 10,2,0.5] [--apply] [--overwrite]

Minimises J = w_fpr·FPR_PASS(τ) + w_risk·Risk(τ) + w_cov·(1 − Coverage(τ)) over the audited
samples (METHODS.md §1), starting from the active config. Writes the best parameters, their
objective terms and the ranked table to JSON; `--apply` stores the best config as a new version
with its verdict set over every sample and makes it active.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from ....util.jsonsafe import dumps
from ....types import WorkstationError
from ....command_base import add_command, add_output_arg, add_project_arg, open_project, reading_project
from .common import active_verdicts, load_samples, print_main_results
from ..store import SpatialStore


def parse_grid(items: list[str] | None) -> dict[str, list[Any]]:
    """['margin=0.03,0.05', 'tau=0.5'] → {'margin': [0.03, 0.05], 'tau': [0.5]} (order kept)."""
    out: dict[str, list[Any]] = {}
    for item in items or []:
        name, sep, vals = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise WorkstationError(f"--grid must look like NAME=V1,V2,..., got {item!r}")
        if name in out:
            raise WorkstationError(f"--grid {name} is given twice")
        values: list[Any] = []
        for x in vals.split(","):
            x = x.strip()
            if not x:
                continue
            low = x.lower()
            if low in ("true", "false"):
                values.append(low == "true")  # only a true/false parameter accepts these
                continue
            try:
                values.append(float(x))
            except ValueError:
                raise WorkstationError(f"--grid {name}: {x!r} is not a number") from None
            if not math.isfinite(values[-1]):
                raise WorkstationError(f"--grid {name}: {x!r} is not a finite number")
        if not values:
            raise WorkstationError(f"--grid {name} has no values")
        out[name] = values
    return out


def parse_weights(text: str | None) -> Any:
    from ..calibration import Weights

    if text is None:
        return Weights()
    parts = [p.strip() for p in text.split(",")]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise WorkstationError(f"--weights must be three numbers W_FPR,W_RISK,W_COVERAGE, got {text!r}") from None
    if len(vals) != 3:
        raise WorkstationError(f"--weights must be three numbers W_FPR,W_RISK,W_COVERAGE, got {text!r}")
    return Weights(*vals)


def register(sub: Any) -> None:
    p = add_command(sub, "calibrate", "grid-search checker parameters against the human labels", run)
    add_project_arg(p)
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2,...",
                   help="a parameter and its values (repeat for each parameter; 'tau' is the threshold)")
    p.add_argument("--weights", metavar="W_FPR,W_RISK,W_COV", help="objective weights (default 10,2,0.5)")
    add_output_arg(p, "--out", "FILE.json", "output JSON", what="calibration result", required=True)
    p.add_argument("--annotator", metavar="NAME", help="use only this annotator's labels")
    p.add_argument("--apply", action="store_true",
                   help="store the best config as a new version with its verdict set and make it active")


def _num(x: Any) -> str:
    """4 decimals; an undefined rate (NaN, or None once through JSON) as "—"."""
    return "—" if x is None or x != x else f"{x:.4f}"


def run(args: argparse.Namespace) -> int:
    """Grid search over checker parameters (and the confidence threshold tau) minimising J =
    w_fpr*FPR_PASS + w_risk*Risk + w_cov*(1 - Coverage) over the audited samples, starting from the
    active config. Without --grid the paper's grid is used (margin 0.03,0.05,0.07,0.10 × t_det
    0.2,0.3,0.4 × tau 0.3,0.5,0.7)."""
    from ..calibration import PAPER_GRID, _check_grids, grid_search
    from ..config import CheckerConfig
    from ....progress import TerminalProgress
    from ....util.output import write_output_text

    grids = parse_grid(args.grid) or {k: list(v) for k, v in PAPER_GRID.items()}
    weights = parse_weights(args.weights)
    if args.out.suffix.lower() != ".json":
        raise WorkstationError(f"--out must be a .json file, got {args.out}")
    names, values, taus = _check_grids(CheckerConfig(), grids)  # sizes and values, before the project opens
    evaluations = math.prod(len(v) for v in values) if values else 1
    if evaluations >= 100:
        print(f"grid: {evaluations:,} checker evaluation(s) × {len(taus or [0])} tau value(s); "
              "Ctrl-C cancels (nothing is written)", file=sys.stderr)
    opener = open_project if args.apply else reading_project
    bar = TerminalProgress("calibrating", unit="config")
    with opener(args.project) as project:
        ds = load_samples(project)
        base_id, base_cfg, _ = active_verdicts(project, ds)
        human = SpatialStore(project).human_verdicts(ds, args.annotator)
        try:
            with bar:
                result = grid_search(ds, base_cfg, human, grids, weights, progress=bar)
        except KeyboardInterrupt:
            print(f"calibration cancelled after {bar.done} of {bar.total} checker evaluations; "
                  "nothing was written", file=sys.stderr)
            return 130
        best = result.best
        best_cfg = result.best_config().replace(name="calibrated")
        report: dict[str, Any] = {
            "project": str(Path(args.project).resolve()),
            "base_config_version": base_id,
            "annotator": args.annotator,
            "audited": result.n_audited,
            "weights": {"fpr_pass": weights.fpr_pass, "risk": weights.risk, "coverage": weights.coverage},
            "grid": grids,
            "best": {"params": result.params_at(result.best_index),
                     "J": best["j"], "FPR_PASS": best["fpr_pass"], "risk": best["risk"],
                     "coverage": best["coverage"], "accuracy": best["accuracy"],
                     "n_covered": best["n_covered"], "n_pass_covered": best["n_pass_covered"]},
            "best_config": best_cfg.to_dict(),
            "best_config_hash": best_cfg.content_hash(),
            "table": result.table(ranked=True),
            "applied_config_version": None,
        }
        v_all = None
        if args.apply:
            from .. import checker

            v_all = checker.evaluate(ds, best_cfg)
            params = ", ".join(f"{k}={val:g}" if isinstance(val, float) else f"{k}={val}"
                               for k, val in report["best"]["params"].items())
            # the new version and the file land together (a file that cannot be written rolls back)
            with project.transaction():
                cid = SpatialStore(project).save_config(best_cfg, note=f"calibrate: {params}; J={best['j']:.4f}",
                                          parent_id=base_id)
                SpatialStore(project).save_verdicts(cid, ds, v_all)
                report["applied_config_version"] = cid
                write_output_text(args.out, dumps(report, indent=2) + "\n", "calibration result",
                                  overwrite=args.overwrite, projects=[args.project])
        else:
            write_output_text(args.out, dumps(report, indent=2) + "\n", "calibration result",
                              overwrite=args.overwrite, projects=[args.project])
    b = report["best"]
    params = ", ".join(f"{k} {val:g}" if isinstance(val, float) else f"{k} {val}" for k, val in b["params"].items())
    print(f"best of {len(result)} combinations over {result.n_audited} audited samples: {params}; "
          f"J {b['J']:.4f} (FPR_PASS {_num(b['FPR_PASS'])}, risk {_num(b['risk'])}, coverage {b['coverage']:.4f})")
    if v_all is not None:
        p, f, u = v_all.counts()
        print(f"applied as checker config v{report['applied_config_version']} (active): "
              f"{p} PASS, {f} FAIL, {u} UNDECIDABLE over {ds.n} samples")
        print_main_results(ds, v_all)
    print(f"wrote {args.out}")
    return 0
