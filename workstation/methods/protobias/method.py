"""The ProtoBias method behind the `workstation.evaluation.Method` protocol.

How triplets live in a project (`data` reads them):

* **Prompts** — two per triplet (T, I_corr, I_adv): ``<triplet_id>:corr`` and
  ``<triplet_id>:adv``, method ``protobias``, ``group_id`` = the triplet id, each the other's twin.
  Their text is the image's generation prompt; their ``attrs`` hold the domain, the knob, the
  role, the extra element, what T states and what I_adv's prompt states instead
  (``knob_value_text`` / ``knob_value_adv``), T (``eval_text``) and ``score_text`` = T, so that a
  score job scores *both* images against T.
* **Images** — samples of a run: a generation run (``generate --method protobias``: one image per
  prompt and seed) or an import run (``protobias import FOLDER``). The evaluated unit is a triplet
  instance (run, triplet, seed) with both images present, id ``<run>/<triplet_id>/s<seed>``.
* **Metric scores** — the project's ``scores`` table, one scorer id per metric: its name and the
  hash of its weights (``clipscore@3f2a…``; the demo's ``toy_proto@p=0.35``), shown in every table;
  only scores against T count.
* **Human ratings** — ``protobias.fidelity`` label events (target kind ``image``, target id = the
  sample id, values "1".."4"); the latest per image and annotator counts, the task's label
  selection decides which count and how they combine (`data.selected_ratings`).
* **Results** — ``protobias_results`` (per evaluation version, triplet instance and metric: raw
  scores, rescaled scores, failed, tie, the rescaling rule).

The pieces: `build` / `templates` / `vocab` (the built-in suite), `importer`, `results` (pure,
vectorised `evaluate`), `tables` / `report` (the audit's tables, charts, report section),
`project_demo` (the demo's part: procedural triplets, toy metrics of known bias, simulated raters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...evaluation.base import AuditSource, Method, ReportSection
from .config import ProtoBiasConfig
from .data import ProtoBiasData
from .labels import FIDELITY_SCHEME
from .results import ProtoBiasResults


MAX_SUITE_N = 10_000  # triplets per domain of the built-in suite


class ProtoBiasMethod:
    name = "protobias"
    title = "ProtoBias (metrics vs prototypes)"
    summary = ("Do image-text metrics prefer the prototypical image to the correct one? Triplets (T, I_corr, I_adv), "
               "every local metric's failure rate and margins, 1-4 human ratings and their agreement.")
    label_schemes = (FIDELITY_SCHEME,)
    audit_source = AuditSource("workstation.methods.protobias.audit_source",
                               title="ProtoBias: a metric's preferences",
                               description="a metric's preference against the humans' ratings")

    def unblind_label_file(self, project: Any, path: Path) -> tuple[list[str], list[list[str]]]:
        """`labels unblind`: the header and rows of a label file written during a blind audit, each
        neutral target id (``<item id>#A`` / ``#B``) mapped back to the project's sample id (a row
        whose target is no neutral id of the project's triplets: an `InputError` naming its line)."""
        from .data import load_project_data
        from .labels import neutral_ids, unblind_rows

        d = load_project_data(project)
        neutral = {v: k for k, v in neutral_ids(d.item_id, d.sample_corr, d.sample_adv).items()}
        return unblind_rows(path, neutral)

    def default_config(self) -> ProtoBiasConfig:
        return ProtoBiasConfig()

    def config_from_dict(self, d: Mapping[str, Any]) -> ProtoBiasConfig:
        return ProtoBiasConfig.from_dict(dict(d))

    def load_config_file(self, path: Path) -> ProtoBiasConfig:
        from .config import load_config

        return load_config(path)

    def migrations(self) -> list[list[Any]]:
        from .results import MIGRATIONS

        return MIGRATIONS

    def suite(self, n: int = 100, seed: int = 0, domains: str | Sequence[str] | None = None, demo: bool = False,
              **options: Any) -> Any:
        """``n`` triplets per domain built from the seed's templates (``demo=True``: the procedural
        demo's flat-shape triplets, which the ``procedural`` generator can draw), seeded,
        versioned by content hash: two prompts per triplet (see `data`)."""
        from ...types import WorkstationError
        from .build import build_triplets
        from .data import triplet_prompts
        from .demo import build_demo_triplets
        from .vocab import DOMAINS

        if options:
            raise WorkstationError(f"unknown ProtoBias suite option(s) {', '.join(sorted(options))} "
                                   "(known: n, seed, domains, demo)")
        from ...util.numbers import whole_number

        n = whole_number(n, "n (triplets per domain)", 1, MAX_SUITE_N, "each triplet is two images to make and score")
        seed = whole_number(seed, "seed", 0, 2**63 - 1)
        if not isinstance(demo, bool):
            raise WorkstationError(f"demo must be true or false, got {demo!r:.40}")
        if domains is not None and not isinstance(domains, (str, list, tuple)):
            raise WorkstationError("domains must be names separated by commas")
        doms = tuple(DOMAINS if domains is None else
                     ([d.strip() for d in domains.split(",") if d.strip()] if isinstance(domains, str) else domains))
        ts = (build_demo_triplets(n, seed=int(seed), domains=doms) if demo
              else build_triplets(n, seed=int(seed), domains=doms))
        kind = "protobias-demo" if demo else "protobias-builtin"
        return triplet_prompts(ts, suite=f"{kind}@{ts.version}")

    def judges(self, project: Any) -> Any:
        """Every automatic source of an outcome for the method's items (`judges.protobias_judges`: listed,
        computed when asked)."""
        from .judges import protobias_judges

        return protobias_judges(project)

    def load(self, project: Any) -> ProtoBiasData:
        from .data import load_project_data

        return load_project_data(project)

    def evaluate(self, data: ProtoBiasData, cfg: ProtoBiasConfig) -> ProtoBiasResults:
        from .results import evaluate

        return evaluate(data, cfg)

    def metrics(self, data: ProtoBiasData, results: ProtoBiasResults) -> dict[str, list[dict[str, Any]]]:
        from .tables import audit_tables

        return audit_tables(data, results)

    def save_results(self, project: Any, eval_id: int, data: ProtoBiasData, results: ProtoBiasResults) -> None:
        from .results import save_results

        save_results(project, eval_id, data, results)

    def report_section(self, project: Any, out_dir: Path, **options: Any) -> ReportSection:
        from .report import report_section

        return report_section(project, out_dir, annotator=options.get("annotator"))

    def has_data(self, project: Any) -> bool:
        return bool(project.samples.prompt_methods().get(self.name))

    def summary_lines(self, data: ProtoBiasData, results: ProtoBiasResults, eval_id: int,
                      cfg: ProtoBiasConfig) -> list[str]:
        import numpy as np

        lines = [(f"audited {len(data)} triplets ({data.n_incomplete} incomplete left out) with ProtoBias config "
                  f"v{eval_id} ({cfg.content_hash()}): {len(results.metrics)} metric(s)")]
        for j, m in enumerate(results.metrics):
            v = results.valid[:, j]
            if not v.any():
                lines.append(f"  {m}: no triplet scored on both images")
                continue
            f = results.failed[:, j][v]
            margin = results.margin[:, j][v]
            cm = float(margin[~f].mean()) if (~f).any() else float("nan")
            im = float(-margin[f].mean()) if f.any() else float("nan")
            lines.append(f"  {m}: failure rate {f.mean():.1%} ({int(f.sum())}/{int(v.sum())}, "
                         f"{int(results.tie[:, j].sum())} ties), correct margin {cm:.3f}, incorrect margin {im:.3f}")
        from .data import selected_ratings, selection_for

        labels = selected_ratings(data, selection_for(data, cfg))
        if len(labels.resolved):
            lines.append(f"  human ratings: {labels.line()}")
        return lines

    def render_demo_row(self, row: dict[str, Any], seed: int, size: int = 512) -> Any:
        from .project_demo import render_demo_row

        return render_demo_row(row, seed, size)

    def commands(self) -> tuple[Any, ...]:
        """`protobias import`: a folder of triplet images into a project."""
        from ...command_base import Command
        from .commands import register

        return (Command("protobias", register),)

    def build_demo(self, project: Any, *, small: bool = False, progress: Any = None,
                   workers: int | None = None) -> dict[str, Any]:
        from .project_demo import add_demo

        return add_demo(project, small=small, progress=progress)


METHOD: Method = ProtoBiasMethod()
