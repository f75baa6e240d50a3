"""The MetaLogic method behind the `workstation.evaluation.Method` protocol (``METHOD``).

What the kernel calls, and where it is done:

=======================  ===================================================================
``suite(**options)``     `suite.build_suite` as generic prompts (`prompts.suite_prompts`)
``read_suite_file``      a custom pair file (`io.load_pairs`, JSONL / CSV) as prompts
``load(project)``        `adapter.load_project`: image pairs joined on (run, seed), primary
                         detector, original images, the image scores the project holds
``evaluate``             `compare.evaluate` (vectorised; abstains with a reason)
``metrics``              `metrics`: rates with Wilson intervals per run / law / modifier /
                         dimension / law × dimension, reasons, student-variant scores
``save_results``         `store.save_outcomes` (table ``metalogic_outcomes``)
``report_section``       `report.report_section` (tables, heatmap, rates, index.html)
``load_config_file``     `configfile.load_config_file` (YAML without aliases, JSON)
``render_demo_row``      `demo.render_side`: one prompt of a pair drawn procedurally
``build_demo``           `demo_project.add_demo` (generate and detect jobs, then evaluate)
=======================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Prompts
from ...evaluation.base import AuditSource, Method, ReportSection
from ...types import WorkstationError
from .config import MetaLogicConfig
from .results import LABEL_SCHEME, REASONS, UNDECIDABLE, PairResults

#: the options `suite` takes (``suite --method metalogic --set KEY=VALUE``)
SUITE_OPTIONS = ("variant", "n_pairs", "seed", "objects", "version")


def _fmt_rate(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}%"


class MetaLogicMethod:
    name = "metalogic"
    title = "MetaLogic (logically equivalent prompts)"
    summary = ("Are two images of logically equivalent prompts (same seed) the same scene? Entity presence, "
               "counts and order from detections; misalignments typed omission / duplication / positional, "
               "UNDECIDABLE with a reason where the evidence is weak.")
    label_schemes = (LABEL_SCHEME,)
    audit_source = AuditSource("workstation.methods.metalogic.audit_source",
                               title="MetaLogic: the comparison's outcomes",
                               description="the comparison's outcomes against human pair judgements")

    # ---- configs -----------------------------------------------------------------------------------
    def default_config(self) -> MetaLogicConfig:
        return MetaLogicConfig()

    def config_from_dict(self, d: Mapping[str, Any]) -> MetaLogicConfig:
        try:
            return MetaLogicConfig.from_dict(dict(d))
        except (TypeError, ValueError) as e:
            raise WorkstationError(str(e)) from None

    def load_config_file(self, path: Path) -> MetaLogicConfig:
        from .configfile import load_config_file

        return load_config_file(path)

    def migrations(self) -> list[list[Any]]:
        from .store import MIGRATIONS

        return MIGRATIONS

    # ---- suites ----------------------------------------------------------------------------------------
    def suite(self, **options: Any) -> Prompts:
        """The built-in suite: ``variant`` main (800 pairs) / student (200), ``n_pairs``, ``seed``,
        ``objects`` (coco, demo, or names separated by commas), ``version``."""
        from .prompts import suite_prompts
        from .suite import build_suite

        unknown = sorted(set(options) - set(SUITE_OPTIONS))
        if unknown:
            raise WorkstationError(f"metalogic suite: unknown option(s) {', '.join(unknown)} "
                                   f"(known: {', '.join(SUITE_OPTIONS)})")
        opts = dict(options)
        objects = opts.pop("objects", "coco")
        if isinstance(objects, str) and objects not in ("coco", "demo"):
            objects = [x.strip() for x in objects.split(",") if x.strip()]
        from ...util.numbers import whole_number
        from .io import MAX_PAIRS

        if "n_pairs" in opts:
            opts["n_pairs"] = whole_number(opts["n_pairs"], "metalogic suite: n_pairs", 1, MAX_PAIRS,
                                           "the pairs a pair file may hold")
        if "seed" in opts:
            opts["seed"] = whole_number(opts["seed"], "metalogic suite: seed", 0, 2**63 - 1)
        return suite_prompts(build_suite(str(opts.pop("variant", "main")), opts.pop("n_pairs", None),
                                         seed=int(opts.pop("seed", 0)), objects=objects,
                                         **({"version": str(opts["version"])} if "version" in opts else {})))

    def read_suite_file(self, path: Path) -> Prompts:
        """A custom pair file (JSONL / CSV; fields in `io`) as prompts; errors name file and line."""
        from .io import load_pairs
        from .prompts import suite_prompts

        return suite_prompts(load_pairs(path))

    # ---- data and evaluation ----------------------------------------------------------------------------
    def has_data(self, project: Any) -> bool:
        return bool(project.samples.prompt_methods().get(self.name))

    def judges(self, project: Any) -> Any:
        """Every automatic source of an outcome for the method's items (`judges.metalogic_judges`: listed,
        computed when asked)."""
        from .judges import metalogic_judges

        return metalogic_judges(project)

    def load(self, project: Any) -> Any:
        from .adapter import load_project

        return load_project(project)

    @staticmethod
    def _pairs(data: Any) -> Any:
        from .data import PairData

        return data if isinstance(data, PairData) else data.pairs

    def evaluate(self, data: Any, cfg: MetaLogicConfig) -> PairResults:
        """The comparison under ``cfg``, with the paper's decision of every pair beside it
        (``paper_verdict``: no abstention band; `compare.paper_outcomes`)."""
        from .compare import evaluate, paper_outcomes

        pairs = self._pairs(data)
        res = evaluate(pairs, cfg)
        res.paper_verdict = paper_outcomes(pairs, cfg)[0]
        return res

    def metrics(self, data: Any, results: PairResults) -> dict[str, list[dict[str, Any]]]:
        from .adapter import MetaLogicData
        from .metrics import misalignment_tables, reason_rows
        from .report import score_rows

        tables = dict(misalignment_tables(results))
        tables["reasons"] = reason_rows(results)
        if isinstance(data, MetaLogicData):
            tables.update(score_rows(data, results.law, results.dimension))
        return tables

    def save_results(self, project: Any, eval_id: int, data: Any, results: PairResults) -> None:
        from .store import save_outcomes

        save_outcomes(project, eval_id, data, results)

    def report_section(self, project: Any, out_dir: Path, **options: Any) -> ReportSection:
        from .report import report_section

        return report_section(project, out_dir, annotator=options.get("annotator"))

    def summary_lines(self, data: Any, results: PairResults, eval_id: int, cfg: MetaLogicConfig) -> list[str]:
        from .metrics import rate_rows

        n = len(results)
        if n == 0:
            extra = (f" (the project holds {data.n_prompts} MetaLogic prompts of {data.n_suite_pairs} pairs; generate "
                     "images for them and detect)") if hasattr(data, "n_prompts") else ""
            return [f"metalogic: no image pairs to compare yet{extra}"]
        a, m, u = results.counts()
        why = np.bincount(np.asarray(results.reason, np.int64)[np.asarray(results.verdict) == UNDECIDABLE],
                          minlength=len(REASONS))
        reasons = ", ".join(f"{REASONS[k]} {int(why[k])}" for k in range(1, len(REASONS)) if why[k])
        lines = [f"evaluated {n} MetaLogic image pairs with config v{eval_id} ({cfg.name}, {cfg.content_hash()}): "
                 f"{a} ALIGNED, {m} MISALIGNED, {u} UNDECIDABLE" + (f" ({reasons})" if reasons else "")]
        for r in rate_rows(results):
            lines.append(f"  {r['run']}: misalignment rate (the paper's rule, every pair decided) "
                         f"{_fmt_rate(r['paper_rate'])} [{_fmt_rate(r['paper_rate_lo'])}, "
                         f"{_fmt_rate(r['paper_rate_hi'])}] over {r['pairs']} pairs; abstention-aware "
                         f"{_fmt_rate(r['decided_rate'])} [{_fmt_rate(r['decided_rate_lo'])}, "
                         f"{_fmt_rate(r['decided_rate_hi'])}] over {r['decided']} decided pairs, coverage "
                         f"{_fmt_rate(r['coverage'])}; omission {r['omission']}, duplication {r['duplication']}, "
                         f"positional {r['positional']}")
            by_law = [x for x in rate_rows(results, ("law",)) if x["run"] == r["run"]]
            lines.append("    by law: " + " · ".join(f"{x['law']} {_fmt_rate(x['paper_rate'])}" for x in by_law)
                         + " (the paper's rule)")
        for note in getattr(data, "notes", []):
            lines.append(f"  note: {note}")
        return lines

    # ---- the demo ---------------------------------------------------------------------------------------
    def render_demo_row(self, row: Mapping[str, Any], seed: int, size: int = 512) -> tuple[np.ndarray, dict[str, Any]]:
        """One prompt of a pair drawn procedurally (the procedural generator's hook): the error
        decision is per (pair, seed), so the A and B images of a seed are drawn consistently."""
        from .demo import render_side
        from .prompts import spec_from_row

        spec = spec_from_row(row)
        side = str((row.get("attrs") or {}).get("side", ""))
        return render_side(spec, int(seed), side, size=int(size))

    def commands(self) -> tuple[Any, ...]:
        return ()  # the kernel's commands (suite, generate, detect, evaluate, report) serve it

    def build_demo(self, project: Any, *, small: bool = False, progress: Any = None,
                   workers: int | None = None) -> dict[str, Any]:
        from .demo_project import add_demo

        if small:
            return add_demo(project, n_pairs=20, seeds=1, size=256, workers=workers, progress=progress)
        return add_demo(project, n_pairs=200, seeds=2, size=512, workers=workers, progress=progress)


METHOD: Method = MetaLogicMethod()
