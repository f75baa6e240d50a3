"""DyEval (dynamic interactive test trees) behind the `workstation.evaluation.Method` protocol.

Results are per tree node (item kind "node"): APR, AFR and #Bugs of its prompts. How a tree lives
in a project: `store.py`; the controller that resumes it: `runner.py`; the command line:
`commands.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...evaluation.base import AuditSource, Method, ReportSection
from ...types import WorkstationError
from .config import DyEvalConfig, load_config
from .results import DyEvalData, NodeResults
from .tree import LABEL_SCHEME


def _bounds(row: dict[str, Any], key: str) -> str:
    lo, hi = row.get(f"{key}_lo"), row.get(f"{key}_hi")
    return f" [{lo:.4f}, {hi:.4f}]" if isinstance(lo, float) and isinstance(hi, float) else ""


class DyEvalMethod:
    name = "dyeval"
    title = "DyEval test trees"
    summary = ("Test trees that grow where the model is strong and dig where it fails: topics, prompts, human "
               "PASS / FAIL per image, APR / AFR / #Bugs per node, failure location of bug prompts.")
    label_schemes = (LABEL_SCHEME,)
    audit_source = AuditSource("workstation.methods.dyeval.audit_source",
                               title="DyEval: pre-marks",
                               description="the pre-marks (CLIPScore, or the demo's object finder) against "
                                           "human PASS / FAIL")

    def default_config(self) -> DyEvalConfig:
        return DyEvalConfig()

    def config_from_dict(self, d: Mapping[str, Any]) -> DyEvalConfig:
        return DyEvalConfig.from_dict(dict(d))

    def migrations(self) -> list[list[Any]]:
        from .store import MIGRATIONS

        return MIGRATIONS

    def suite(self, n_i: int = 5, seed: int = 0, topics: Any = None, **options: Any) -> Any:
        from .demo import builtin_suite

        from ...util.numbers import whole_number
        from .config import LIMIT_REASONS, LIMITS

        if options:
            raise WorkstationError(f"unknown DyEval suite option {sorted(options)[0][:40]!r}; options: n_i, seed, topics")
        n_i = whole_number(n_i, "n_i", 1, LIMITS["n_i"], LIMIT_REASONS["n_i"])
        seed = whole_number(seed, "seed", 0, 2**63 - 1)
        if topics is not None and not isinstance(topics, (str, list, tuple)):
            raise WorkstationError("topics must be names separated by commas")
        if isinstance(topics, str):
            topics = [t.strip() for t in topics.split(",") if t.strip()]
        return builtin_suite(n_i=n_i, seed=seed, topics=topics)

    def judges(self, project: Any) -> Any:
        """Every automatic source of an outcome for the method's items (`judges.dyeval_judges`: listed,
        computed when asked)."""
        from .judges import dyeval_judges

        return dyeval_judges(project)

    def load(self, project: Any) -> DyEvalData:
        from .results import load_data

        return load_data(project)

    def evaluate(self, data: DyEvalData, cfg: DyEvalConfig) -> NodeResults:
        from .results import evaluate

        return evaluate(data, cfg)

    def metrics(self, data: DyEvalData, results: NodeResults) -> dict[str, list[dict[str, Any]]]:
        from .results import metrics

        return metrics(data, results)

    def save_results(self, project: Any, eval_id: int, data: DyEvalData, results: NodeResults) -> None:
        from .store import RESULT_COLUMNS, TreeStore

        c = results.cols
        n = len(results)
        cols = {"eval_id": np.full(n, int(eval_id), np.int64), "tree_id": c["tree_id"], "node_id": c["node_id"],
                "parent_id": c["parent_id"], "topic": c["topic"], "depth": c["depth"], "state": c["state"],
                "prompts": c["prompts"], "complete_prompts": c["complete_prompts"], "tests": c["tests"],
                "passes": c["passes"], "bugs": c["bugs"], "apr": c["apr"], "afr": c["afr"]}
        assert tuple(cols) == RESULT_COLUMNS
        TreeStore(project).save_node_results(eval_id, cols)

    def report_section(self, project: Any, out_dir: Path, **options: Any) -> ReportSection:
        from .report import report_section

        return report_section(project, out_dir, **options)  # type: ignore[no-any-return]

    def has_data(self, project: Any) -> bool:
        from .store import TreeStore

        return bool(project.samples.prompt_methods().get(self.name)) or bool(TreeStore(project).tree_ids())

    def load_config_file(self, path: Path) -> DyEvalConfig:
        return load_config(path)

    def summary_lines(self, data: DyEvalData, results: NodeResults, eval_id: int, cfg: DyEvalConfig) -> list[str]:
        from .results import metrics

        out = [f"evaluated {len(results)} node(s) of {len(data.trees)} DyEval tree(s) with config v{eval_id} "
               f"({cfg.content_hash()}, rho {cfg.rho:g})"]
        for tr in metrics(data, results)["trees"]:
            apr = "n/a" if tr["apr"] is None else f"{tr['apr']:.4f}" + _bounds(tr, "apr")
            afr = "n/a" if tr["afr"] is None else f"{tr['afr']:.4f}" + _bounds(tr, "afr")
            out.append(f"  tree {tr['tree_id']} ({tr['roots']}): {tr['nodes']} nodes, {tr['tests']} judged images, "
                       f"APR {apr}, AFR {afr}, #Bugs {tr['bugs']}, {tr['triggers']} failure trigger(s)")
        return out

    def commands(self) -> tuple[Any, ...]:
        """`dyeval`: make a tree, take its next steps, judge, decide on proposals, export."""
        from ...command_base import Command
        from .commands import register

        return (Command("dyeval", register),)

    def build_demo(self, project: Any, *, small: bool = False, progress: Any = None,
                   workers: int | None = None) -> dict[str, Any]:
        from .demo import build_demo

        return build_demo(project, small=small, progress=progress)

    def render_demo_row(self, row: Mapping[str, Any], seed: int, size: int = 512) -> tuple[np.ndarray, dict[str, Any]]:
        from .render import render_demo_row

        return render_demo_row(row, seed, size=size)


METHOD: Method = DyEvalMethod()
