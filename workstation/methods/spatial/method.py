"""The spatial method (SpatialBench-UC) behind the `workstation.evaluation.Method` protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Dataset
from ...evaluation.base import AuditSource, LabelScheme, Method, ReportSection
from .config import CheckerConfig
from .types import VERDICTS

LABELS = LabelScheme(task="spatial.verdict", target="sample", values=("PASS", "FAIL", "UNDECIDABLE"),
                     keys=("P", "F", "U"), titles=("pass", "fail", "undecidable"),
                     title="Does the image show the relation?", abstain="UNDECIDABLE")


@dataclass
class SpatialResults:
    """The checker's verdicts for the samples of a dataset (`checker.VerdictArrays` inside)."""

    ids: np.ndarray
    arrays: Any  # checker.VerdictArrays
    item_kind: str = "sample"
    verdict_names: tuple[str, ...] = VERDICTS

    @property
    def verdict(self) -> np.ndarray:
        return np.asarray(self.arrays.verdict)

    @property
    def conf(self) -> np.ndarray:
        return np.asarray(self.arrays.conf)

    def __len__(self) -> int:
        return len(self.ids)

    def columns(self) -> dict[str, np.ndarray]:
        a = self.arrays
        return {"sample_id": self.ids, "verdict": a.verdict, "reason": a.reason, "reason_text": a.reason_texts(),
                "conf": a.conf, "c_detection": a.c_detection, "c_geometry": a.c_geometry,
                "c_stability": a.c_stability, "c_agreement": a.c_agreement, "delta": a.delta, "iou_ab": a.iou_ab}


class SpatialMethod:
    name = "spatial"
    title = "Spatial checker (SpatialBench-UC)"
    summary = ("Does the image put object A left of / right of / above / below object B? An abstaining "
               "checker over detections gives PASS / FAIL / UNDECIDABLE with a reason and a confidence.")
    label_schemes = (LABELS,)
    audit_source = AuditSource("workstation.methods.spatial.audit_source",
                               title="Spatial: the checker's verdicts",
                               description="the checker's verdicts against human P/F/U")

    def read_label_file(self, path: Path, annotator: str | None = None) -> Any:
        """`labels import` of SpatialBench-UC's and this method's own label files
        (`labels_io.label_import`: checked whole now, added to a project by the function returned)."""
        from .labels_io import label_import

        return label_import(path, annotator)

    #: the layouts `labels export --format` names for this method's labels (besides ``auto``)
    label_file_formats = ("native", "sbuc")

    def write_label_file(self, project: Any, path: Path, *, layout: str = "auto", all_events: bool = False,
                         annotator: str | None = None, overwrite: bool = False,
                         projects: Any = ()) -> int:
        """`labels export` of the spatial labels in this method's own layouts (.csv with our columns
        or SpatialBench-UC's with ``layout="sbuc"``, .json, .parquet: `labels_io.write_labels`): the
        labels that stand, or every label event with ``all_events``; the number written."""
        from .labels_io import write_labels
        from .store import SpatialStore

        if all_events:
            rows = SpatialStore(project).label_events()
            if annotator:
                rows = [r for r in rows if r.annotator == annotator]
        else:
            rows = [r for r in SpatialStore(project).latest_labels(annotator) if r.verdict is not None]
        return write_labels(path, rows, layout, overwrite=overwrite, projects=projects)
    def judges(self, project: Any) -> Any:
        """The checker under each stored config, GenEval's position rule, the twin consistency and
        each scorer of the spatial samples (`judges.spatial_judges`: listed, computed when asked)."""
        from .judges import spatial_judges

        return spatial_judges(project)

    def default_config(self) -> CheckerConfig:
        return CheckerConfig()

    def config_from_dict(self, d: Mapping[str, Any]) -> CheckerConfig:
        return CheckerConfig.from_dict(dict(d))

    def migrations(self) -> list[list[Any]]:
        from .store import MIGRATIONS

        return MIGRATIONS

    def suite(self, n_pairs: int = 50, **options: Any) -> Any:
        from ...util.numbers import whole_number
        from .suite import spatial_suite

        n_pairs = whole_number(n_pairs, "spatial suite: n_pairs", 1, 100_000)
        if "seed" in options:
            options["seed"] = whole_number(options["seed"], "spatial suite: seed", 0, 2**63 - 1)
        return spatial_suite(n_pairs, **options)

    def pipeline_suite(self, pairs: int, options: Mapping[str, Any]) -> tuple[Any, str]:
        """The built-in suite of ``pairs`` object pairs a pipeline or `generate` makes, and its
        provenance label (``options`` are other methods')."""
        from .suite import spatial_suite

        return spatial_suite(pairs), f"builtin:{pairs}"

    def read_suite_file_with_lines(self, path: Path) -> tuple[Any, dict[str, int]]:
        """A SpatialBench-UC prompt file (.jsonl / .csv) and the line of each prompt id in it."""
        from .suite import load_prompt_file_with_lines

        return load_prompt_file_with_lines(path)

    def after_samples_changed(self, project: Any) -> bool:
        """Readies the window's next open (`next_open.prepare_next_open`): a command changed the
        project's samples or detections."""
        from .next_open import prepare_next_open

        return prepare_next_open(project)

    def merge_samples(self, target: Any, source: Any, new_ids: list[str],
                      same_ids: list[str]) -> list[tuple[str, str]]:
        """`merge` of a shard project: the recorded stabilities of its new samples are copied;
        the identical samples whose recorded stability differs are named."""
        from .store import merge_stabilities

        return merge_stabilities(target, source, new_ids, same_ids)

    def load(self, project: Any) -> Dataset:
        from .store import load_dataset

        return load_dataset(project)

    def evaluate(self, data: Dataset, cfg: CheckerConfig) -> SpatialResults:
        from .checker import evaluate

        return SpatialResults(data.samples.sample_id, evaluate(data, cfg))

    def metrics(self, data: Dataset, results: SpatialResults) -> dict[str, list[dict[str, Any]]]:
        from .metrics import summarize

        s = summarize(data, results.arrays)
        return {"main_results": s.main_results, "by_relation": s.by_relation, "relation_detail": s.relation_detail,
                "counterfactual": s.counterfactual, "prompt_metrics": s.prompt_metrics, "abstention": s.abstention}

    def save_results(self, project: Any, eval_id: int, data: Dataset, results: SpatialResults) -> None:
        from .store import SpatialStore

        if len(results):
            SpatialStore(project).save_verdicts(eval_id, data, results.arrays)

    def report_section(self, project: Any, out_dir: Path, **options: Any) -> ReportSection:
        from .report import report_section

        return report_section(project, out_dir, annotator=options.get("annotator"))

    def has_data(self, project: Any) -> bool:
        return bool(project.samples.prompt_methods().get(self.name))

    def load_config_file(self, path: Path) -> CheckerConfig:
        from .config import load_config

        return load_config(path)

    def summary_lines(self, data: Dataset, results: SpatialResults, eval_id: int, cfg: CheckerConfig) -> list[str]:
        from .report import summary_lines

        p, f, u = results.arrays.counts()
        return [f"evaluated {data.n} samples with checker config v{eval_id} ({cfg.name}, {cfg.content_hash()}): "
                f"{p} PASS, {f} FAIL, {u} UNDECIDABLE"] + summary_lines(data, results.arrays)

    def commands(self) -> tuple[Any, ...]:
        """`import-sbuc`, `export-sbuc`, `audit-sample` / `audit-metrics` and `calibrate`."""
        from ...command_base import Command
        from .commands import audit, calibrate, export_sbuc, import_sbuc

        return (Command("import-sbuc", import_sbuc.register), Command("export-sbuc", export_sbuc.register),
                Command("audit-sample", audit.register), Command("calibrate", calibrate.register))

    #: the spatial part of the `demo` command is built (and shown) first
    demo_order = 0

    def demo_part(self, seeds: int, pairs: int) -> tuple[str, str]:
        """What the `demo` command's spatial part builds (a title) and counts (its unit)."""
        from .suite import spatial_suite

        return f"scenes of 2 objects ({len(spatial_suite(n_pairs=pairs).prompt_id)} prompts x {seeds} seeds)", "img"

    def build_demo_part(self, project: Any, *, seeds: int, pairs: int, progress: Any = None,
                        workers: int | None = None) -> dict[str, Any]:
        """The `demo` command's spatial part: ``seeds`` seeds of the built-in suite of ``pairs`` pairs,
        and a multi-rater audit of them (`demo_raters`)."""
        import time

        from .demo import add_demo
        from .demo_raters import add_rater_audit
        from .suite import spatial_suite

        out = add_demo(project, n_seeds=seeds, prompts=spatial_suite(n_pairs=pairs), progress=progress,
                       workers=workers)
        t0 = time.perf_counter()
        out["raters"] = add_rater_audit(project, LABELS)
        out.setdefault("timings", {})["raters_s"] = time.perf_counter() - t0
        return out

    def demo_summary(self, project: Any) -> dict[str, Any]:
        """The spatial part of a demo project built earlier (truth agreement recomputed from the store)."""
        from .demo import demo_summary

        return demo_summary(project)

    def demo_lines(self, summary: Mapping[str, Any]) -> list[str]:
        """The lines the `demo` command prints of its spatial part."""
        from .demo import demo_lines

        return demo_lines(summary)

    def build_demo(self, project: Any, *, small: bool = False, progress: Any = None,
                   workers: int | None = None) -> dict[str, Any]:
        from .demo import add_demo
        from .suite import spatial_suite

        return add_demo(project, n_seeds=1 if small else 4, prompts=spatial_suite(2 if small else 50),
                        progress=progress, workers=workers, size=128 if small else 512)


METHOD: Method = SpatialMethod()
