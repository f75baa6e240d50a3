"""The usual chain of jobs from one request: generate → detect → evaluate.

``create_pipeline`` stores the jobs (the detection job restricted to the generation job's run)
and returns their specs in the order they should run. The "New job…" dialog and scripts use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jobs.spec import PROCEDURAL, SCENE, JobSpec, create_detect_job, create_evaluate_job, create_generate_job
from ..types import WorkstationError

if TYPE_CHECKING:  # pragma: no cover
    from ..dataset import Prompts
    from ..store import Project


def default_perturbations() -> list[str]:
    from ..perturb import DEFAULT_PERTURBATIONS

    return [p.name for p in DEFAULT_PERTURBATIONS]


def _is_generic_prompt_file(path: Path) -> bool:
    """A prompt file written by `suite --out` (every line carries its method)."""
    from ..util.jsonsafe import loads_strict

    try:
        with path.open("rb") as fh:
            while True:
                line = fh.readline(1 << 20)
                if not line:
                    return False
                if line.strip():
                    obj = loads_strict(line.decode("utf-8-sig"))
                    return isinstance(obj, dict) and "method" in obj and "entities" in obj
    except (OSError, ValueError):  # not UTF-8, not JSON: the method's own reader says what is wrong
        return False


def load_suite(suite: str, pairs: int = 50, limit: int | None = None, method: str = "spatial",
               options: dict[str, Any] | None = None) -> tuple["Prompts", str]:
    """The prompts of a suite and a provenance label: 'builtin' (the method's built-in suite;
    the spatial one with `pairs` object pairs), a prompt file written by `suite --out`, a spatial
    prompt file (SpatialBench-UC .jsonl / .csv) or the method's own suite file."""
    prompts, label, _lines = load_suite_with_lines(suite, pairs, limit, method, options)
    return prompts, label


def load_suite_with_lines(suite: str, pairs: int = 50, limit: int | None = None, method: str = "spatial",
                          options: dict[str, Any] | None = None) -> tuple["Prompts", str, dict[str, int]]:
    """`load_suite` and the line of each prompt id in its file (empty where it has none)."""
    import numpy as np

    from ..methods import get_method

    lines: dict[str, int] = {}
    if suite == "builtin":
        own = getattr(get_method(method), "pipeline_suite", None)  # a suite of `pairs` (spatial's)
        if own is not None:
            prompts, label = own(pairs, options or {})
        else:
            prompts = get_method(method).suite(**(options or {}))
            label = f"builtin:{method}:{prompts.content_hash()}"
    else:
        path = Path(suite).expanduser()
        if not path.is_file():
            raise WorkstationError(f"prompt file not found: {path}")
        if _is_generic_prompt_file(path):
            from ..io.prompts import read_prompts_jsonl
            from ..methods import METHODS

            prompts = read_prompts_jsonl(path, methods=METHODS.names())
        elif (with_lines := getattr(get_method(method), "read_suite_file_with_lines", None)) is not None:
            prompts, lines = with_lines(path)
        else:
            reader = getattr(get_method(method), "read_suite_file", None)
            if reader is None:
                raise WorkstationError(f"{path}: not a prompt file of the workstation (see `suite --out`), and "
                                       f"method {method!r} reads no suite files of its own")
            prompts = reader(path)
        label = str(path.resolve())
    if limit is not None:
        if limit < 1:
            raise WorkstationError(f"the prompt limit must be at least 1, got {limit}")
        prompts = prompts.take(np.arange(min(limit, len(prompts))))
    return prompts, label, lines


@dataclass
class PipelineRequest:
    """What to make and check: suite, seeds, generator, detectors, evaluation."""

    suite: str = "builtin"
    method: str = "spatial"  # whose built-in suite 'builtin' means
    suite_options: dict[str, Any] = field(default_factory=dict)
    pairs: int = 4  # built-in suite: object pairs (4 prompts each)
    limit: int | None = None
    seeds: int = 2
    seed_start: int = 0
    generator: str = PROCEDURAL
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 4
    run_id: str | None = None
    detector: str | None = SCENE  # None: no detection job
    detector_model: str | None = None
    secondary: list[tuple[str, str | None]] = field(default_factory=list)
    perturbations: list[str] = field(default_factory=default_perturbations)
    detect_batch_size: int = 8
    evaluate: bool = True


def check_pipeline_request(req: PipelineRequest) -> tuple["Prompts", str]:
    """Every check of a request before anything is stored or run: the suite, the generator, its
    model path and options, the detectors and their model paths, the perturbations. Raises one
    `WorkstationError` line (naming the path where a path is wrong); returns (prompts, label)."""
    from ..env import check_model_path
    from ..jobs.spec import check_detector_name, check_generate_request
    from ..perturb import Perturbation

    if req.generator != PROCEDURAL and not req.model:
        raise WorkstationError(f"generator {req.generator!r} needs a model folder (or a Hugging Face id)")
    if req.seeds < 1:
        raise WorkstationError(f"give at least one seed, got {req.seeds}")
    prompts, label = load_suite(req.suite, req.pairs, req.limit, req.method, req.suite_options)
    check_generate_request(prompts, generator=req.generator, params=req.params,
                           seeds=list(range(req.seed_start, req.seed_start + req.seeds)), run_id=req.run_id,
                           shard=None, batch_size=req.batch_size)
    if req.generator != PROCEDURAL and req.model:
        check_model_path(req.model, f"generator model ({req.generator})")
    if req.detector:
        check_detector_name(req.detector)
        if req.detector_model:
            check_model_path(req.detector_model, f"detector model ({req.detector})")
        for name, model in req.secondary:
            check_detector_name(name)
            if model:
                check_model_path(model, f"secondary detector model ({name})")
        if isinstance(req.detect_batch_size, bool) or int(req.detect_batch_size) < 1:
            raise WorkstationError(f"detection batch size must be at least 1, got {req.detect_batch_size}")
        for name in req.perturbations:
            try:
                Perturbation.from_name(name)
            except ValueError as e:
                raise WorkstationError(f"{e}; perturbations look like brightness_1.1, gaussian_blur_1, "
                                       "resize_0.9") from None
    return prompts, label


def create_pipeline(project: "Project", req: PipelineRequest) -> list[JobSpec]:
    """Store the jobs of ``req``; returns them in running order. Everything is checked first
    (`check_pipeline_request`), so a bad request stores nothing. Run them with each job after
    the ones before it (`JobQueue.submit(job, after=...)`): a failed step stops the rest."""
    prompts, label = check_pipeline_request(req)
    gen = create_generate_job(project, prompts, generator=req.generator,
                              model=req.model if req.generator != PROCEDURAL else None, params=req.params,
                              seeds=list(range(req.seed_start, req.seed_start + req.seeds)), run_id=req.run_id,
                              batch_size=req.batch_size, suite=label)
    specs = [gen]
    if req.detector:
        specs.append(create_detect_job(project, detector=req.detector, model=req.detector_model,
                                       secondary=req.secondary, perturbations=req.perturbations,
                                       runs=[gen.run_id], batch_size=req.detect_batch_size, check_runs=False))
    if req.evaluate:
        specs.append(create_evaluate_job(project))
    return specs
