"""`import-sbuc`: import a SpatialBench-UC run folder into a project (created if absent).

    python main.py import-sbuc RUN_DIR --prompts PROMPTS.jsonl --project DIR [--run-id NAME]

The run folder is parsed and validated completely before the project is touched. Then, in one
transaction: the run (method, model, generation parameters, provenance), its prompts, samples
and detections, the run's checker config as a config version, and the recorded verdicts as that
version's verdict set (so the project shows the published verdicts at once). Images present in
the run folder are copied to `images/<run id>/` in the project. On any error the project is
left exactly as it was (a project created by this command is removed again).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..types import WorkstationError
from .evaluate import add_project_arg
from ..methods.spatial.store import SpatialStore

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import-sbuc", help="import a SpatialBench-UC run folder (manifest, per-sample results, config)",
        description="Import a SpatialBench-UC run folder (manifest.jsonl, eval/per_sample.jsonl, "
                    "eval/checker_config.yaml) with its prompt suite into a project, creating the project "
                    "if it does not exist. The recorded verdicts become the verdict set of the run's "
                    "checker config. All or nothing: on any error the project is left as it was.")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run folder (holds manifest.jsonl and eval/)")
    p.add_argument("--prompts", required=True, type=Path, metavar="PROMPTS.jsonl", help="the prompt suite")
    add_project_arg(p)
    p.add_argument("--run-id", metavar="NAME", help="run id in the project (default: the manifest's run_id)")
    p.set_defaults(func=run)


def _image_target(run_id: str, rel: str) -> str:
    """Project-relative path for a run image: images/<run id>/<path without a leading images/>."""
    parts = Path(rel).parts
    if parts and parts[0] == "images":
        parts = parts[1:]
    return Path("images", run_id, *parts).as_posix()


def _read_gen_config(run_dir: Path) -> Any:
    path = run_dir / "gen_config.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return None  # provenance only; an unreadable copy is not worth failing the import


def run(args: argparse.Namespace) -> int:
    from ..methods.spatial.config import CheckerConfig
    from ..methods.spatial.sbuc_export import StoredVerdicts
    from ..methods.spatial.sbuc import parse_run
    from ..progress import track
    from ..store import DB_NAME, Project

    if args.run_id is not None and not _RUN_ID.match(args.run_id):
        raise WorkstationError(f"run id {args.run_id!r} must be letters, digits, '.', '_' or '-'")
    parsed = parse_run(args.run_dir, args.prompts, args.run_id)
    rid = parsed.run_id
    if not _RUN_ID.match(rid):
        raise WorkstationError(f"run id {rid!r} must be letters, digits, '.', '_' or '-'; choose one with --run-id")
    ds = parsed.dataset
    meta = dict(parsed.meta)
    run_dir = Path(args.run_dir)
    # the method is the run's own name in the benchmark, whatever it is called here
    method = _manifest_run_id(run_dir) or run_dir.name
    src_images = ds.samples.image_path.tolist()
    ds.samples.image_path = np.array([_image_target(rid, p) if p else "" for p in src_images], dtype=object)
    cfg = parsed.config or CheckerConfig(name="default")
    detectors = meta.pop("detectors", {"primary": "primary", "secondary": "secondary"})
    provenance = {k: v for k, v in meta.items() if k not in ("model", "gen_params")}
    gen_config = _read_gen_config(run_dir)
    if gen_config is not None:
        provenance["gen_config"] = gen_config
    provenance["detectors"] = detectors

    folder = Path(args.project)
    folder_existed = folder.exists()
    db_existed = (folder / DB_NAME).exists()
    images_dir_existed = (folder / "images").exists()
    copied: list[Path] = []
    made_dirs: list[Path] = []
    project = Project.create(folder, exist_ok=True)
    ok = False
    try:
        if rid in project.run_ids():
            raise WorkstationError(f"run {rid!r} already exists in the project {folder}; choose another --run-id")
        todo = [(run_dir / s, folder / t) for s, t in zip(src_images, ds.samples.image_path.tolist())
                if s and (run_dir / s).is_file()]
        for src, dst in track(todo, desc="copying images", unit="img"):
            for parent in reversed(dst.parents):
                if not parent.exists():
                    parent.mkdir()
                    made_dirs.append(parent)
            if dst.exists():
                raise WorkstationError(f"image {dst} is already in the project; choose another --run-id")
            shutil.copy2(src, dst)
            copied.append(dst)
        with project.transaction():
            project.add_run(rid, method=method, model=meta.get("model"), params=meta.get("gen_params"),
                            provenance=provenance, source="spatialbench_uc")
            project.add_dataset(ds, detector_names=(detectors.get("primary", "primary"),
                                                    detectors.get("secondary", "secondary")))
            cid = SpatialStore(project).save_config(cfg, note=f"imported with run {rid} from {run_dir}")
            if parsed.recorded is not None:
                SpatialStore(project).save_verdicts(cid, ds, StoredVerdicts.from_recorded(parsed.recorded))
        ok = True
    finally:
        if not ok:
            for f in copied:
                f.unlink(missing_ok=True)
            for d in reversed(made_dirs):
                try:
                    d.rmdir()
                except OSError:
                    pass
        project.close()
        if not ok and not db_existed:
            for name in (DB_NAME, DB_NAME + ".wal"):
                (folder / name).unlink(missing_ok=True)
            if not images_dir_existed:
                shutil.rmtree(folder / "images", ignore_errors=True)
            if not folder_existed:
                shutil.rmtree(folder, ignore_errors=True)

    n_prompts = len(set(ds.samples.prompt_id.tolist()))
    if parsed.recorded is not None:
        c = np.bincount(parsed.recorded.verdict.astype(np.int64), minlength=3)
        verdicts = f"published verdicts {c[0]} PASS, {c[1]} FAIL, {c[2]} UNDECIDABLE"
    else:
        verdicts = "no recorded verdicts (run `evaluate`)"
    print(f"imported run {rid} into {folder}: {ds.n} samples, {n_prompts} prompts, "
          f"{len(ds.detections)} detections, {len(copied)} images; {verdicts} as checker config v{cid}")
    return 0


def _manifest_run_id(run_dir: Path) -> str | None:
    """The run_id on the manifest's first line (the benchmark's name for the method)."""
    try:
        with (run_dir / "manifest.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    v = json.loads(line).get("run_id")
                    return str(v) if v else None
    except (OSError, ValueError, AttributeError):
        return None
    return None
