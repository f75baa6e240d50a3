"""Job specs: what a job does, stored as ``jobs/<job_id>/spec.json`` in the project folder.

A job is one of

* ``generate`` — make images for (prompt, seed) items with a generator backend; its inputs
  (the prompts) are frozen into ``inputs.parquet`` when the job is created;
* ``detect`` — run a primary detector (on the original image and each perturbed variant) and
  any secondary detectors (on the original) over samples; one item is one sample; its inputs
  (the samples to look at) are listed into ``inputs.parquet`` each time the job starts;
* ``evaluate`` — compute the checker's verdicts for the whole project (in the process that
  holds the project: it is fast and needs the database).

Everything a worker process needs is in the job folder, so a worker never opens the database.

Job folder layout (``JobPaths``)::

    spec.json          the spec (this module)
    inputs.parquet     prompts (generate) or samples (detect) the items come from
    skip.txt           item keys the project already holds, written at each start
    chunks/*.parquet   finished results, one file per batch, written atomically
    ingested.txt       chunk files already ingested into the project
    progress.json      the worker's latest Progress
    provenance.json    environment and model provenance, written by the worker
    log.txt            the job's log (worker and ingestion)
    worker.out         the worker process's raw stdout / stderr (crash traces)
    cancel             flag file: its presence asks the worker to stop at the next batch
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any


from ..dataset import Prompts
from ..types import WorkstationError
from ..util.atomic import atomic_path, atomic_write_text
from ..util.jsonsafe import dumps
from .backends import PROCEDURAL, SCENE  # noqa: F401  (the built-in backends named in specs)
from .shards import Shard

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project

SPEC_VERSION = 1

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def safe_name(text: str) -> str:
    """A file-name-safe form of ``text``; a short hash keeps changed names distinct."""
    s = _SAFE.sub("_", text).strip("._") or "x"
    if s != text:
        s = f"{s[:80]}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"
    return s


MAX_RUN_ID_LEN = 128


def check_run_id(run_id: str) -> str:
    """A run id: it names the run's image folder ``images/<run_id>/`` and is part of its job ids."""
    from ..util.textio import quote

    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id) or len(run_id) > MAX_RUN_ID_LEN:
        raise WorkstationError(
            f"run id {quote(run_id, 40)} may hold only letters, digits, '.', '_' and '-' (at most "
            f"{MAX_RUN_ID_LEN}, starting with a letter or digit)")
    return run_id


def check_job_id(job_id: object) -> str:
    """A job id that may name a folder ``jobs/<job_id>/`` of the project (`util.ids.check_job_id`)."""
    from ..util.ids import check_job_id as check

    try:
        return check(job_id)
    except ValueError as e:
        raise WorkstationError(str(e)) from None


def sample_id_for(run_id: str, prompt_id: str, seed: int) -> str:
    """Sample ids as the demo builder makes them: ``<run>_<prompt>_seed0007``."""
    return f"{run_id}_{prompt_id}_seed{int(seed):04d}"


def image_path_for(run_id: str, prompt_id: str, seed: int) -> str:
    """Project-relative PNG path of a generated sample."""
    return f"images/{run_id}/{safe_name(prompt_id)}_s{int(seed)}.png"


@dataclass
class JobSpec:
    """A stored job. Fields a kind does not use stay empty."""

    job_id: str
    kind: str
    # generate
    run_id: str = ""
    generator: dict[str, Any] = field(default_factory=dict)  # {"name", "model", "params"}
    seeds: list[int] = field(default_factory=list)
    suite: str = ""  # where the prompts came from (provenance)
    # detect
    detector: dict[str, Any] = field(default_factory=dict)  # primary {"name", "model", "options"}
    secondary: list[dict[str, Any]] = field(default_factory=list)
    perturbations: list[str] = field(default_factory=list)  # Perturbation names
    runs: list[str] = field(default_factory=list)  # samples of these runs; [] = every run
    # evaluate
    method: str = ""  # the evaluation method ("" in specs written before methods had names: spatial)
    config_id: int | None = None  # the method's evaluation version (None: the active one)
    # other kinds: their own options
    options: dict[str, Any] = field(default_factory=dict)
    # all kinds
    batch_size: int = 4
    shard: list[int] = field(default_factory=lambda: [1, 1])
    created_at: float = 0.0
    version: int = SPEC_VERSION

    def __post_init__(self) -> None:
        from .kind_registry import KINDS

        if self.kind not in KINDS:
            from ..util.textio import quote

            raise WorkstationError(f"unknown job kind {quote(self.kind, 40)}; expected one of {', '.join(KINDS.names())}")
        if self.batch_size < 1:
            raise WorkstationError(f"batch size must be at least 1, got {self.batch_size}")
        Shard.parse(self.shard)

    @property
    def shard_obj(self) -> Shard:
        return Shard.parse(self.shard)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: Any) -> "JobSpec":
        """A stored spec (a job folder's spec.json, a project's job row): every field checked, so
        that a spec from elsewhere is one clear error, never a traceback later."""
        if not isinstance(d, dict):
            raise WorkstationError("job spec is not a JSON object")
        names = {f.name for f in dataclasses.fields(JobSpec)}
        unknown = sorted(str(k) for k in set(d) - names)
        if unknown:
            raise WorkstationError(f"job spec has unknown field(s) {', '.join(unknown)[:120]}")
        missing = [k for k in ("job_id", "kind") if k not in d]
        if missing:
            raise WorkstationError(f"job spec lacks the field(s) {', '.join(missing)}")
        check_job_id(d["job_id"])
        kinds: dict[str, type | tuple[type, ...]] = {"job_id": str, "kind": str, "run_id": str, "generator": dict, "seeds": list, "suite": str,
                 "detector": dict, "secondary": list, "perturbations": list, "runs": list, "method": str,
                 "options": dict, "batch_size": int, "shard": list, "created_at": (int, float), "version": int}
        for k, v in d.items():
            want = kinds.get(k)
            if want is not None and (not isinstance(v, want) or isinstance(v, bool)):
                raise WorkstationError(f"job spec field {k!r} has the wrong type ({type(v).__name__})")
        if d.get("config_id") is not None and (isinstance(d["config_id"], bool) or not isinstance(d["config_id"], int)):
            raise WorkstationError("job spec field 'config_id' must be a whole number")
        if d.get("run_id"):
            check_run_id(d["run_id"])
        if any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_SEED for x in d.get("seeds", [])):
            raise WorkstationError("job spec field 'seeds' must list whole numbers from 0 to 2**63-1")
        for k in ("runs", "perturbations"):
            if not all(isinstance(x, str) for x in d.get(k, [])):
                raise WorkstationError(f"job spec field {k!r} must list names")
        return JobSpec(**d)

    def fingerprint(self) -> str:
        """Hash of what the job computes (not its id or creation time)."""
        d = self.to_dict()
        for k in ("job_id", "created_at"):
            d.pop(k)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def describe(self) -> str:
        """One line for lists: 'generate procedural · 16 prompts × 2 seeds · shard 1/2'."""
        from .kind_registry import kind_object

        what = str(kind_object(self.kind).describe(self))
        if not self.shard_obj.whole:
            what += f" · shard {self.shard_obj}"
        return what


class _JobFile:
    """A file of the job folder by its name: `JobPaths.spec` is `<job folder>/spec.json`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, paths: "JobPaths", owner: Any = None) -> Path:
        return paths.dir / self.name


class JobPaths:
    """The files of one job folder."""

    def __init__(self, project_folder: str | Path, job_id: str) -> None:
        self.project = Path(project_folder)
        self.job_id = check_job_id(job_id)  # a job id never names a folder outside jobs/
        self.dir = self.project / "jobs" / self.job_id

    @staticmethod
    def of_dir(job_dir: str | Path) -> "JobPaths":
        d = Path(job_dir)
        return JobPaths(d.parent.parent, d.name)

    spec = _JobFile("spec.json")
    inputs = _JobFile("inputs.parquet")
    skip = _JobFile("skip.txt")
    chunks = _JobFile("chunks")
    ingested = _JobFile("ingested.txt")
    progress = _JobFile("progress.json")
    provenance = _JobFile("provenance.json")
    log = _JobFile("log.txt")
    worker_out = _JobFile("worker.out")
    cancel = _JobFile("cancel")


def write_json_atomic(path: Path, obj: Any) -> None:
    atomic_write_text(path, dumps(obj, indent=1, sort_keys=True), fsync=False)


def save_spec(paths: JobPaths, spec: JobSpec) -> None:
    paths.dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(paths.spec, spec.to_dict())


MAX_SPEC_BYTES = 4 * 1024 * 1024


def load_spec(paths: JobPaths) -> JobSpec:
    """The job's spec.json, checked (`JobSpec.from_dict`); its job id must be its folder's name."""
    from ..types import InputError
    from ..util.jsonsafe import JSONInputError, loads_strict
    from ..util.textio import read_bytes_capped

    if not paths.spec.is_file():
        raise WorkstationError(f"no job {paths.job_id!r} in {paths.project} (missing {paths.spec})")
    data = read_bytes_capped(paths.spec, MAX_SPEC_BYTES, "job spec")
    try:
        raw = loads_strict(data)
    except JSONInputError as e:
        raise InputError(paths.spec, f"not a valid job spec ({e.message})", e.line) from None
    try:
        spec = JobSpec.from_dict(raw)
    except WorkstationError as e:
        raise InputError(paths.spec, str(e)) from None
    if spec.job_id != paths.job_id:
        raise InputError(paths.spec, f"the spec is of job {spec.job_id!r}, not of its folder's job {paths.job_id!r}")
    return spec


def append_log(paths: JobPaths, line: str) -> None:
    """Append a time-stamped line to the job's log (never fails the job)."""
    try:
        paths.dir.mkdir(parents=True, exist_ok=True)
        with paths.log.open("a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line.rstrip()}\n")
    except OSError:
        pass


# ---- inputs ---------------------------------------------------------------------------------
PROMPT_COLUMNS = ("prompt_id", "text", "suite", "method", "entities", "attrs", "twin_id", "group_id")
SAMPLE_COLUMNS = ("sample_id", "run_id", "image_path", "entities", "width", "height")


def write_table(path: Path, columns: dict[str, Sequence[Any]]) -> None:
    """Write columns to a Parquet file atomically (tmp file + rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, fsync=False) as tmp:
        pq.write_table(pa.table({k: list(v) for k, v in columns.items()}), tmp)


def read_table(path: Path) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    return {name: t.column(name).to_pylist() for name in t.column_names}


def write_prompts(path: Path, prompts: Prompts) -> None:
    write_table(path, {
        "prompt_id": prompts.prompt_id.tolist(), "text": prompts.text.tolist(), "suite": prompts.suite.tolist(),
        "method": prompts.method.tolist(), "entities": [list(e) for e in prompts.entities],
        "attrs": [dumps(a or {}, sort_keys=True) for a in prompts.attrs],
        "twin_id": prompts.twin_id.tolist(), "group_id": prompts.group_id.tolist(),
    })


def read_prompts(path: Path) -> Prompts:
    """The prompts of a job folder (also the layout of job folders made before methods had
    their own fields: relation, label_a, label_b, counterfactual_id, pair_id)."""
    t = read_table(path)
    if "relation" in t and "attrs" not in t:  # a job folder of an older version
        return Prompts.build(t["prompt_id"], t["text"], method="spatial", suite=t["suite"],
                             entities=list(zip(t["label_a"], t["label_b"])),
                             attrs=[{"relation": r} for r in t["relation"]], twin_id=t["counterfactual_id"],
                             group_id=t["pair_id"])
    return Prompts.build(t["prompt_id"], t["text"], method=t["method"], suite=t["suite"], entities=t["entities"],
                         attrs=[json.loads(a) if a else {} for a in t["attrs"]], twin_id=t["twin_id"],
                         group_id=t["group_id"])


def prompt_row(prompts: Prompts, i: int) -> dict[str, Any]:
    """One prompt as a plain row: what a generator that draws from rows (the procedural one) gets."""
    return {"prompt_id": str(prompts.prompt_id[i]), "text": str(prompts.text[i]), "method": str(prompts.method[i]),
            "entities": tuple(prompts.entities[i]), "attrs": dict(prompts.attrs[i] or {}),
            "twin_id": str(prompts.twin_id[i]), "group_id": str(prompts.group_id[i])}


# ---- items ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GenItem:
    """One image to make."""

    key: str  # = sample id
    prompt_index: int
    prompt_id: str
    seed: int
    image_path: str

    @property
    def shard_key(self) -> str:
        return f"{self.prompt_id}|{self.seed}"


@dataclass(frozen=True)
class DetItem:
    """One sample to run the detectors on."""

    key: str  # = sample id
    image_path: str
    queries: tuple[str, ...]

    @property
    def shard_key(self) -> str:
        return self.key


def generation_items(spec: JobSpec, prompts: Prompts) -> list[GenItem]:
    """Every (prompt, seed) of the job's shard, prompt-major: p0 s0, p0 s1, …, p1 s0, …"""
    items = []
    for i, pid in enumerate(prompts.prompt_id.tolist()):
        for seed in spec.seeds:
            items.append(GenItem(sample_id_for(spec.run_id, pid, seed), i, pid, int(seed),
                                 image_path_for(spec.run_id, pid, seed)))
    shard = spec.shard_obj
    return [it for it in items if shard.owns(it.shard_key)]


def detection_items(spec: JobSpec, samples: dict[str, list[Any]]) -> list[DetItem]:
    shard = spec.shard_obj
    out = []
    if "entities" in samples:
        queries = [tuple(str(q) for q in (e or ()) if q) for e in samples["entities"]]
    else:  # a job folder of an older version
        queries = [tuple(str(q) for q in (a, b) if q) for a, b in zip(samples["label_a"], samples["label_b"])]
    for sid, path, q in zip(samples["sample_id"], samples["image_path"], queries):
        it = DetItem(str(sid), str(path or ""), tuple(dict.fromkeys(q)))
        if shard.owns(it.shard_key):
            out.append(it)
    return out


# ---- creating jobs ------------------------------------------------------------------------------
def _model_short(generator: str, model: str | None) -> str:
    if generator == PROCEDURAL or not model:
        return generator
    return Path(str(model).rstrip("/\\")).name or generator


def default_run_id(generator: str, model: str | None, params: dict[str, Any], seeds: Sequence[int],
                   prompts: Prompts) -> str:
    """A run id that is the same on every machine for the same model, settings, seeds and prompts,
    so shards made apart merge into one run."""
    blob = json.dumps({"g": generator, "m": model, "p": params, "s": list(seeds), "c": prompts.content_hash()},
                      sort_keys=True, default=str)
    short = safe_name(_model_short(generator, model))[:40]
    return f"{short}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def _existing(project: "Project", paths: JobPaths, spec: JobSpec) -> JobSpec | None:
    """The stored spec when a job with this id exists and computes the same; an error if it differs."""
    if not paths.spec.exists():
        return None
    old = load_spec(paths)
    if old.fingerprint() != spec.fingerprint():
        raise WorkstationError(
            f"job {spec.job_id} already exists in {project.folder} with other settings; give another --run-id "
            f"or remove {paths.dir}")
    return old


def _register(project: "Project", paths: JobPaths, spec: JobSpec) -> None:
    save_spec(paths, spec)
    known = {j["job_id"]: j for j in project.jobs.all()}
    if spec.job_id not in known:
        project.jobs.record(spec.job_id, spec.kind, spec.to_dict(), status="queued")
    append_log(paths, f"job created: {spec.describe()}")


def _check_runs(project: "Project", runs: Sequence[str]) -> None:
    known = set(project.samples.run_ids())
    for r in runs:
        if r not in known:
            raise WorkstationError(f"run {r!r} is not in the project; known runs: {', '.join(sorted(known)) or '(none)'}")


def _store_backend_job(project: "Project", spec: JobSpec, backend: str, sh: Shard) -> JobSpec:
    """Name a job of one backend (its kind, the backend's name, its settings' fingerprint and its
    shard) and store it, or return the same job stored before, to resume it."""
    spec.job_id = f"{spec.kind}-{safe_name(backend)}-{spec.fingerprint()[:8]}" + (
        "" if sh.whole else f"-shard{sh.index}of{sh.count}")
    paths = JobPaths(project.folder, spec.job_id)
    old = _existing(project, paths, spec)
    if old is not None:
        return old
    _register(project, paths, spec)
    return spec


def create_generate_job(
    project: "Project",
    prompts: Prompts,
    *,
    generator: str = PROCEDURAL,
    model: str | None = None,
    params: dict[str, Any] | None = None,
    seeds: Sequence[int] = (0,),
    run_id: str | None = None,
    shard: "Shard | str | None" = None,
    batch_size: int = 4,
    suite: str = "",
) -> JobSpec:
    """Store a generation job (or return the same job stored before, to resume it).

    The prompts go into the project now; the run is added with the first finished images.
    """
    params, sh = check_generate_request(prompts, generator=generator, params=params, seeds=seeds, run_id=run_id,
                                        shard=shard, batch_size=batch_size)
    rid = check_run_id(run_id) if run_id else default_run_id(generator, model, params, seeds, prompts)
    job_id = f"generate-{rid}" + ("" if sh.whole else f"-shard{sh.index}of{sh.count}")
    spec = JobSpec(job_id=job_id, kind="generate", run_id=rid,
                   generator={"name": generator, "model": model, "params": params},
                   seeds=[int(s) for s in seeds], suite=suite, batch_size=int(batch_size),
                   shard=sh.to_list(), created_at=time.time())
    paths = JobPaths(project.folder, job_id)
    old = _existing(project, paths, spec)
    if old is not None:
        return old
    if rid in project.samples.run_ids():
        raise WorkstationError(f"run {rid!r} already exists in the project; choose another --run-id")
    made = [q for q in (paths.dir.parent, paths.dir) if not q.exists()]
    try:
        with project.transaction():
            project.samples.add_prompts(prompts)
            paths.dir.mkdir(parents=True, exist_ok=True)
            write_prompts(paths.inputs, prompts)
            _register(project, paths, spec)
    except BaseException:  # a full disk while the inputs are written: no half-made job folder stays
        import shutil

        for q in reversed(made):
            shutil.rmtree(q, ignore_errors=True)
        raise
    return spec


MAX_SEED = 2**63 - 1  # seeds are stored as signed 64-bit integers
MAX_SIDE = 16384  # pixels


def check_generate_request(prompts: Prompts, *, generator: str, params: dict[str, Any] | None,
                           seeds: Sequence[int], run_id: str | None, shard: "Shard | str | None",
                           batch_size: int) -> tuple[dict[str, Any], Shard]:
    """Every check of a generation request that needs no project: done before a project is
    created or opened, so a bad request leaves nothing behind. Returns (params, shard)."""
    if len(prompts) == 0:
        raise WorkstationError("the prompt suite is empty")
    if not seeds:
        raise WorkstationError("give at least one seed")
    for s in seeds:
        if isinstance(s, bool) or not 0 <= int(s) <= MAX_SEED:
            raise WorkstationError(f"seeds must be whole numbers from 0 to 2**63-1, got {s!r}")
    if len(set(int(s) for s in seeds)) != len(seeds):
        raise WorkstationError("seeds must be distinct")
    if isinstance(batch_size, bool) or int(batch_size) < 1:
        raise WorkstationError(f"batch size must be at least 1, got {batch_size}")
    check_generator_name(generator)
    params = {k: v for k, v in dict(params or {}).items() if v is not None}
    for k in ("width", "height"):
        if k in params and (isinstance(params[k], bool) or not isinstance(params[k], int)
                            or not 8 <= params[k] <= MAX_SIDE):
            raise WorkstationError(f"--{k} must be a whole number of pixels from 8 to {MAX_SIDE}, got {params[k]!r}")
    _check_generation_params(generator, params)
    if run_id:
        check_run_id(run_id)
    return params, Shard.parse(shard)


def check_generator_name(name: str) -> None:
    """An unknown generator name is an error now, not a job that can only fail."""
    from ..generation import GENERATORS
    from .backends import _ensure_builtins

    _ensure_builtins()
    GENERATORS.entry(str(name))


def check_detector_name(name: str) -> None:
    """An unknown detector name is an error now, not a job that can only fail."""
    from .backends import _ensure_builtins, detector_names, detector_registry

    _ensure_builtins()
    reg = detector_registry()
    if reg is not None:
        reg.entry(str(name))
    elif str(name).lower() not in detector_names():  # pragma: no cover
        raise WorkstationError(f"unknown detector {name!r}; available: {', '.join(detector_names())}")


def _check_generation_params(generator: str, params: dict[str, Any]) -> None:
    """Reject unknown parameters and bad values now, before anything is stored."""
    from ..generation import GenerationParams

    GenerationParams.from_dict(params)
    if "scheduler" in params and params["scheduler"] and generator != PROCEDURAL:
        from ..generation import canonical_scheduler

        canonical_scheduler(str(params["scheduler"]))


def create_detect_job(
    project: "Project",
    *,
    detector: str,
    model: str | None = None,
    options: dict[str, Any] | None = None,
    secondary: Sequence[tuple[str, str | None]] = (),
    perturbations: Sequence[str] = (),
    runs: Sequence[str] = (),
    shard: "Shard | str | None" = None,
    batch_size: int = 8,
    check_runs: bool = True,
) -> JobSpec:
    """Store a detection job over the samples of ``runs`` (every run when empty).

    ``check_runs=False`` allows runs that a queued generation job has yet to make."""
    from ..perturb import Perturbation

    check_detector_name(detector)
    for name, _model in secondary:
        check_detector_name(name)
    if isinstance(batch_size, bool) or int(batch_size) < 1:
        raise WorkstationError(f"batch size must be at least 1, got {batch_size}")
    for name in perturbations:
        try:
            Perturbation.from_name(name)
        except ValueError as e:
            raise WorkstationError(f"{e}; perturbations look like brightness_1.1, gaussian_blur_1, resize_0.9") from None
    if check_runs:
        _check_runs(project, runs)
    sh = Shard.parse(shard)
    spec = JobSpec(job_id="", kind="detect",
                   detector={"name": detector, "model": model, "options": dict(options or {})},
                   secondary=[{"name": n, "model": m, "options": {}} for n, m in secondary],
                   perturbations=list(perturbations), runs=list(runs), batch_size=int(batch_size),
                   shard=sh.to_list(), created_at=time.time())
    return _store_backend_job(project, spec, detector, sh)


def create_score_job(project: "Project", *, scorer: str, model: str | None = None,
                     options: dict[str, Any] | None = None, runs: Sequence[str] = (), method: str = "",
                     shard: "Shard | str | None" = None, batch_size: int = 16) -> JobSpec:
    """Store a job that scores the images of ``runs`` (every run when empty) whose prompts belong
    to ``method`` (any when empty) with a scorer backend. Checked before it is stored."""
    from .kind_registry import kind_object

    _check_runs(project, runs)
    sh = Shard.parse(shard)
    spec = JobSpec(job_id="", kind="score", batch_size=int(batch_size), shard=sh.to_list(), created_at=time.time(),
                   options={"scorer": {"name": scorer, "model": model, "options": dict(options or {})},
                            "runs": list(runs), "method": method})
    score = kind_object("score")
    score.check(spec)
    score.candidates(project, spec)  # no job for nothing to score
    return _store_backend_job(project, spec, scorer, sh)


def create_evaluate_job(project: "Project", config_id: int | None = None, method: str = "spatial") -> JobSpec:
    """Store a job that computes ``method``'s results under evaluation version ``config_id`` (the
    method's active version when None)."""
    spec = JobSpec(job_id=f"evaluate-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(2).hex()}", kind="evaluate",
                   method=method, config_id=config_id, batch_size=1, created_at=time.time())
    _register(project, JobPaths(project.folder, spec.job_id), spec)
    return spec
