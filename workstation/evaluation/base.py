"""What every evaluation method provides, and what the kernel asks of it.

A method (SpatialBench-UC's spatial checker, MetaLogic's equivalent-prompt pairs, ProtoBias's
metric audit, DyEval's test trees, ...) is a package under ``workstation/methods/<name>/``,
registered by name in ``workstation.methods`` and imported only when used. The kernel (store,
jobs, commands, report bundle) talks to it only through these protocols:

* `Method` — its name, config, label schemes, tables (migrations), suite, pure evaluation,
  metrics and report section;
* `MethodConfig` — its parameters: a dict round trip and a content hash (stored as numbered
  evaluation versions, with the parent each was derived from);
* `Results` — what one evaluation gives per item (sample, pair, triplet or tree node):
  ids, an optional verdict with a confidence, and named columns;
* `LabelScheme` — one kind of human judgement (P/F/U per sample, aligned/misaligned per pair,
  1-4 fidelity rating per image, PASS/FAIL per test image): the task name, the kind of target,
  the values with their keys, and whether they are ordinal. Every label of every method is one
  event in the project's single append-only label log, keyed by (task, target id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..types import WorkstationError

#: what a label or a result can be about
TARGET_KINDS: tuple[str, ...] = ("sample", "pair", "triplet", "image", "node")


@dataclass(frozen=True)
class LabelScheme:
    """One kind of human judgement.

    ``task`` is unique across methods ("spatial.verdict", "metalogic.pair", "protobias.fidelity",
    "dyeval.image"); ``values`` are what is stored (text), ``keys`` the keyboard key of each value,
    ``titles`` their display names. Ordinal schemes (ratings) compare annotators with the quadratic
    weighted κ, the others with Cohen's κ. ``abstain``: the value that says the target cannot be
    judged (UNDECIDABLE), the only one a judging page records where it cannot show the target
    ("" when the scheme has none: nothing is recorded there).
    """

    task: str
    target: str
    values: tuple[str, ...]
    keys: tuple[str, ...]
    titles: tuple[str, ...] = ()
    ordinal: bool = False
    title: str = ""
    abstain: str = ""

    def __post_init__(self) -> None:
        if self.target not in TARGET_KINDS:
            raise ValueError(f"label scheme {self.task!r}: unknown target {self.target!r}")
        if len(self.keys) != len(self.values) or (self.titles and len(self.titles) != len(self.values)):
            raise ValueError(f"label scheme {self.task!r}: one key (and title) per value")
        if self.abstain and self.abstain not in self.values:
            raise ValueError(f"label scheme {self.task!r}: the abstaining value {self.abstain!r} is not one of its values")

    def code(self, value: str | None) -> int:
        """Index of ``value`` in ``values``; -1 for None (no label)."""
        if value is None:
            return -1
        try:
            return self.values.index(value)
        except ValueError:
            return -1

    def validate(self, value: object) -> str:
        """``value`` as stored, or a WorkstationError naming the allowed values."""
        v = str(value).strip() if value is not None else ""
        if self.ordinal:
            # ratings may arrive as numbers: 3, 3.0, "3"
            try:
                f = float(v)
                if f.is_integer():
                    v = str(int(f))
            except ValueError:
                pass
        up = v.upper()
        for cand in self.values:
            if v == cand or up == cand.upper():
                return cand
        raise WorkstationError(
            f"{self.title or self.task}: {value!r} is not one of {', '.join(self.values)}")

    def value_for_key(self, key: str) -> str | None:
        k = key.upper()
        for value, kk in zip(self.values, self.keys):
            if kk.upper() == k:
                return value
        return None

    def title_of(self, value: str) -> str:
        i = self.code(value)
        return self.titles[i] if self.titles and i >= 0 else value


@runtime_checkable
class MethodConfig(Protocol):
    """A method's parameters. Equal content → equal hash → one stored version."""

    def to_dict(self) -> dict[str, Any]: ...

    def content_hash(self) -> str: ...

    def validate(self) -> None: ...


@runtime_checkable
class Results(Protocol):
    """What one evaluation gives, one entry per item, aligned arrays.

    ``item_kind`` is one of TARGET_KINDS; ``ids`` the item ids (object array of str);
    ``verdict`` int8 codes into ``verdict_names`` (or None for score-only methods) and
    ``conf`` float64 in [0, 1] (or None); ``columns()`` every per-item column to store or export,
    ids and verdicts included, as numpy arrays of equal length.
    """

    @property
    def item_kind(self) -> str: ...

    @property
    def ids(self) -> np.ndarray: ...

    @property
    def verdict(self) -> np.ndarray | None: ...

    @property
    def conf(self) -> np.ndarray | None: ...

    @property
    def verdict_names(self) -> tuple[str, ...]: ...

    def __len__(self) -> int: ...

    def columns(self) -> dict[str, np.ndarray]: ...


@dataclass
class ReportSection:
    """One method's part of a report bundle: tables (CSV), figures (PNG) and an HTML fragment.

    ``tables`` map a file stem to rows; ``figures`` map a file stem to a PNG path already written
    under the bundle folder; ``html`` is the section body (the bundle adds the heading);
    ``meta`` holds the config hash and provenance that the bundle records beside it.
    """

    method: str
    title: str
    html: str = ""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditSource:
    """A method's source of audit tables for audit plans (`workstation.methods.audit_sources`): a
    method object that has one as its ``audit_source`` can be planned for; nothing outside its
    folder names it. ``module`` ("package.module", imported when a plan needs it) defines:

    * ``audit_table(project, **options) -> AuditTable`` — the items, the automated outcome with its
      confidence, the cluster (prompt) and the human label (`workstation.evaluation.plan`); its
      keyword-only options are what a plan may be made with;
    * ``human_labels(project, table) -> ndarray`` — the current human codes of a (frozen) table's items;
    * ``present_items(project, table, *, without_run=None) -> ndarray`` — which of them the
      project still holds (as if run ``without_run`` were removed too);

    and may define (the audit plan window asks for each where the module has it):

    * ``plan_options(project) -> list[PlanOption]`` — the options of ``audit_table`` the window
      lets a new plan choose (a metric among the project's, a threshold);
    * ``plan_basis(project) -> str`` — what a new plan would be made on, where the window could
      show another ("" when nothing needs saying);
    * ``made_on(table) -> str`` — what a (stored) plan's table was made on ("" when nothing).
    """

    module: str
    title: str  # the audit plan window's entry: "Spatial: the checker's verdicts"
    description: str  # what its table sets against the human labels


@dataclass(frozen=True)
class PlanOption:
    """An option of a method's audit table that the audit plan window lets a new plan choose
    (`AuditSource`'s ``plan_options``): keyword ``name`` of ``audit_table``, shown as ``title``;
    a choice among ``choices`` (text; none to choose from yet: an empty tuple) or, where
    ``choices`` is None, a number from ``minimum`` to ``maximum`` with ``decimals`` decimals,
    ``default`` at first."""

    name: str
    title: str
    choices: tuple[str, ...] | None = None
    default: float = 0.0
    minimum: float = 0.0
    maximum: float = 100.0
    decimals: int = 1


class Method(Protocol):
    """An evaluation method, as the kernel (store, jobs, CLI, report bundle) uses it.

    Every method module defines one object satisfying this protocol as ``METHOD``.
    """

    name: str  # registry name, also the prefix of its tables and label tasks
    title: str  # "Spatial checker (SpatialBench-UC)"

    @property
    def label_schemes(self) -> tuple[LabelScheme, ...]: ...

    def default_config(self) -> MethodConfig: ...

    def config_from_dict(self, d: Mapping[str, Any]) -> MethodConfig: ...

    def migrations(self) -> list[list[str]]:
        """SQL statements creating and migrating the method's own tables (``<name>_*``), one list
        per schema version; the store runs the ones a project has not had yet."""
        ...

    def load(self, project: Any) -> Any:
        """The method's data from an open project (what `evaluate` takes)."""
        ...

    def evaluate(self, data: Any, cfg: Any) -> Results:
        """Pure and vectorised: no store, no files, no UI."""
        ...

    def metrics(self, data: Any, results: Any) -> dict[str, list[dict[str, Any]]]:
        """Named tables of rows (the report's tables and the UI's metric views)."""
        ...

    def save_results(self, project: Any, eval_id: int, data: Any, results: Any) -> None:
        """Store ``results`` as the result set of evaluation version ``eval_id`` (in a transaction
        the caller holds)."""
        ...

    def report_section(self, project: Any, out_dir: Path, **options: Any) -> ReportSection:
        """Tables, figures and HTML for the project's current state (active evaluation), written
        under ``out_dir``; ``options`` are the report command's (e.g. ``annotator``)."""
        ...

    def has_data(self, project: Any) -> bool:
        """Whether the project holds anything of this method (its prompts, triplets, trees)."""
        ...

    def suite(self, **options: Any) -> Any:
        """The method's built-in suite (generic `Prompts`), seeded and versioned by content hash."""
        ...

    def load_config_file(self, path: Path) -> MethodConfig:
        """A config from a YAML / JSON file (errors name the file and line)."""
        ...

    def summary_lines(self, data: Any, results: Any, eval_id: int, cfg: Any) -> list[str]:
        """A few lines for the terminal after an evaluation."""
        ...

    def commands(self) -> Sequence[Any]:
        """The method's own sub-commands of the command line (`workstation.command_base.Command`:
        a name and ``register(subparsers)``); the command line adds them after the kernel's."""
        ...

    # optional: ``render_demo_row(row, seed, size=512) -> (image, truth)`` draws one prompt row of
    # the method procedurally (the ``procedural`` generator calls it for the method's prompts)
    # optional: ``audit_source: AuditSource`` — the method's audit tables for audit plans
    # optional: ``read_label_file(path, annotator=None) -> Callable[[project], str]`` — `labels
    # import` of a file in the method's own layouts: the file is read and checked whole when it is
    # called; the function it returns appends the labels to a project and says what it did (the
    # label log's own layout is read for every method by the kernel: `io.label_log.read_label_log`)
    # optional: ``write_label_file(project, path, *, layout, all_events, annotator, overwrite,
    # projects) -> int`` — `labels export` of the method's labels (when ``--task`` names its tasks
    # and the file is not .jsonl) in layouts of its own, ``label_file_formats`` (a tuple of names,
    # besides ``auto``) the layouts its ``--format`` may name; the number of labels written
    # optional: ``unblind_label_file(project, path) -> (header, rows)`` — `labels unblind`: a label
    # file written during a blind audit with its neutral target ids mapped back to sample ids
    # optional: ``judges(project) -> MethodJudges`` — every automatic source of an outcome or a
    # score for the method's label targets (`workstation.evaluation.judges`), listed without
    # computing anything; the `judges` command and the report's judge tables read it
    #
    # optional hooks: the kernel's commands call each where the method defines it (see
    # `METHOD_HOOKS`), so a method without one needs nothing and no command names a method:
    # ``after_samples_changed(project)`` after a command changed the project's samples or
    # detections (`workstation.methods.after_samples_changed`; spatial readies the window's next
    # open); ``merge_samples(target, source, new_ids, same_ids) -> [(sample_id, what differs)]``
    # while `merge` brings a shard project's samples into ``target``
    # (`workstation.methods.merge_samples`): the method copies its own rows of the new samples and
    # names the identical samples (in both projects) whose rows differ, which stops the merge;
    # ``pipeline_suite(pairs, options) -> (prompts, label)`` the built-in suite of a pipeline or
    # `generate` with its ``pairs`` (else ``suite(**options)``);
    # ``read_suite_file_with_lines(path) -> (prompts, {prompt_id: line})`` or
    # ``read_suite_file(path) -> prompts`` the method's own prompt files; the `demo` command's:
    # ``demo_order`` (int, default 1: lowest built and shown first), ``demo_part(seeds, pairs) ->
    # (title, unit)``, ``build_demo_part(project, *, seeds, pairs, progress, workers) -> summary``
    # (else ``build_demo``), ``demo_summary(project)`` (a demo project built earlier; else the
    # summary lines) and ``demo_lines(summary)`` (the lines printed of its part)

    def build_demo(self, project: Any, *, small: bool = False, progress: Any = None,
                   workers: int | None = None) -> dict[str, Any]:
        """Add the method's part of the built-in demo to a project (procedural images, detections
        or scores, a first evaluation); returns a summary. ``small`` is for tests."""
        ...


#: the optional hooks of a method object (see `Method`); a method defines any of them or none
METHOD_HOOKS: tuple[str, ...] = ("after_samples_changed", "merge_samples", "pipeline_suite",
                                 "read_suite_file_with_lines", "read_suite_file", "demo_order", "demo_part",
                                 "build_demo_part", "demo_summary", "demo_lines", "read_label_file",
                                 "write_label_file", "label_file_formats", "unblind_label_file", "judges")


def method_table_prefix(method: str) -> str:
    return f"{method}_"
