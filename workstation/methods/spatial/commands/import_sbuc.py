"""`import-sbuc`: import a SpatialBench-UC run folder into a project (created if absent).

    python main.py import-sbuc RUN_DIR --prompts PROMPTS.jsonl --project DIR [--run-id NAME]

The run folder is parsed and validated completely before the project is touched. Then, in one
transaction: the run (method, model, generation parameters, provenance), its prompts, samples
and detections, the run's checker config as a config version, and the recorded verdicts as that
version's verdict set (so the project shows the published verdicts at once). Images present in
the run folder are copied to `images/<run id>/` in the project. On any error the project is
left exactly as it was: a new project is built in a hidden folder beside DIR and renamed into
place only when the import has succeeded, so even a killed import leaves no project behind.

Every file is checked before the project is touched: the manifest, results and prompts
(`io.sbuc`), the YAML files (no aliases, size-capped: `util.safeyaml`) and each image (a
regular file inside the run folder — a symbolic link out of it is refused — that decodes fully
within the size limits of `util.images`); errors name the manifest line.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..sbuc import MAX_IMAGE_SIDE
from ....types import WorkstationError
from ....util.jsonsafe import loads_strict
from ....util.images import MAX_PIXELS as MAX_IMAGE_PIXELS
from ....util.atomic import new_folder_mode
from ....util.paths import remove_made
from ....command_base import add_command, add_project_arg
from ..next_open import prepare_next_open
from ..store import SpatialStore, add_dataset

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def register(sub: Any) -> None:
    p = add_command(sub, "import-sbuc", "import a SpatialBench-UC run folder (manifest, per-sample results, config)",
                    run)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run folder (holds manifest.jsonl and eval/)")
    p.add_argument("--prompts", required=True, type=Path, metavar="PROMPTS.jsonl", help="the prompt suite")
    add_project_arg(p)
    p.add_argument("--run-id", metavar="NAME", help="run id in the project (default: the manifest's run_id)")


def _image_target(run_id: str, rel: str) -> str:
    """Project-relative path for a run image: images/<run id>/<path without a leading images/>."""
    parts = Path(rel).parts
    if parts and parts[0] == "images":
        parts = parts[1:]
    return Path("images", run_id, *parts).as_posix()


MAX_GEN_CONFIG_BYTES = 256 * 1024  # gen_config.yaml is provenance: a few KB in practice
MAX_GEN_CONFIG_JSON_BYTES = 64 * 1024  # of gen_config.yaml, as stored in the run's provenance


def _read_gen_config(run_dir: Path) -> Any:
    """The run's gen_config.yaml (provenance), read safely: no aliases ("billion laughs"), at
    most MAX_GEN_CONFIG_BYTES; a broken file fails the import with its file and line."""
    from ....util.safeyaml import load_yaml

    path = run_dir / "gen_config.yaml"
    if not path.is_file():
        return None
    return load_yaml(path, what="generation config", max_bytes=MAX_GEN_CONFIG_BYTES)


def plan_images(parsed: Any, run_dir: Path, src_images: list[str], targets: list[str]) -> list[tuple[Path, str]]:
    """(source file, project-relative target) of every image to copy, each one checked first.

    An image the manifest names but the folder lacks is left out (as before); a link leaving
    the run folder, something that is not a regular file, a file that is not an acceptable
    image (`util.images.check_image`) or one whose size differs from the manifest's is an error
    naming the manifest line."""
    from ....types import InputError
    from ....util.images import BadImage, check_image
    from ....util.paths import UnsafePath, source_file

    man = parsed.manifest_path or (run_dir / "manifest.jsonl")
    lines = parsed.manifest_lines
    s = parsed.dataset.samples
    out: list[tuple[Path, str]] = []
    for i, (src, dst) in enumerate(zip(src_images, targets)):
        if not src:
            continue
        line = lines.get(str(s.sample_id[i]))
        try:
            real = source_file(run_dir, src, "image")
        except FileNotFoundError:
            continue
        except UnsafePath as e:
            raise InputError(man, str(e), line) from None
        try:
            w, h = check_image(real, max_side=MAX_IMAGE_SIDE, max_pixels=MAX_IMAGE_PIXELS)
        except BadImage as e:
            raise InputError(man, f"image {src!r} {e}", line) from None
        if (w, h) != (int(s.width[i]), int(s.height[i])):
            raise InputError(man, f"image {src!r} is {w}x{h} pixels but the manifest says "
                                  f"{int(s.width[i])}x{int(s.height[i])}", line)
        out.append((real, dst))
    return out


def run(args: argparse.Namespace) -> int:
    """Import a SpatialBench-UC run folder (manifest.jsonl, eval/per_sample.jsonl,
    eval/checker_config.yaml) with its prompt suite into a project, creating the project if it does not
    exist. The recorded verdicts become the verdict set of the run's checker config. All or nothing: on
    any error the project is left as it was."""
    from ..config import CheckerConfig
    from ..sbuc import parse_run
    from ....util.jsonsafe import capped

    if args.run_id is not None and not _RUN_ID.fullmatch(args.run_id):
        raise WorkstationError(f"--run-id: run id {args.run_id[:40]!r} must be letters, digits, '.', '_' or '-'")
    parsed = parse_run(args.run_dir, args.prompts, args.run_id)
    rid = parsed.run_id
    if not _RUN_ID.fullmatch(rid):
        raise WorkstationError(f"run id {rid[:40]!r} must be letters, digits, '.', '_' or '-'; choose one with --run-id")
    ds = parsed.dataset
    meta = dict(parsed.meta)
    run_dir = Path(args.run_dir)
    # the method is the run's own name in the benchmark, whatever it is called here
    method = _manifest_run_id(run_dir) or run_dir.name
    src_images = ds.samples.image_path.tolist()
    targets = [_image_target(rid, p) if p else "" for p in src_images]
    ds.samples.image_path = np.array(targets, dtype=object)
    cfg = parsed.config or CheckerConfig(name="default")
    detectors = meta.pop("detectors", {"primary": "primary", "secondary": "secondary"})
    provenance = {k: v for k, v in meta.items() if k not in ("model", "gen_params")}
    gen_config = _read_gen_config(run_dir)
    if gen_config is not None:
        provenance["gen_config"] = capped(gen_config, MAX_GEN_CONFIG_JSON_BYTES)
    provenance["detectors"] = detectors
    images = plan_images(parsed, run_dir, src_images, targets)  # all checked before the project is touched

    folder = Path(args.project)
    copied: list[Path] = []
    with _project_folder(folder, copied) as (project, root):
        from ....io.prompts import check_prompt_texts

        check_prompt_texts(project, parsed.dataset.prompts, parsed.prompts_path or "prompt file", parsed.prompt_lines)
        if rid in project.samples.run_ids():
            raise WorkstationError(f"run {rid!r} already exists in the project {folder}; choose another --run-id")
        _copy_images(images, root, copied)
        with project.transaction():
            project.samples.add_run(rid, method=method, model=meta.get("model"), params=meta.get("gen_params"),
                                    provenance=provenance, source="spatialbench_uc")
            add_dataset(project, ds, detector_names=(detectors.get("primary", "primary"),
                                                     detectors.get("secondary", "secondary")))
            cid = SpatialStore(project).save_config(cfg, note=f"imported with run {rid} from {run_dir}")
            if parsed.recorded is not None:
                from ..sbuc_export import StoredVerdicts

                SpatialStore(project).save_verdicts(cid, ds, StoredVerdicts.from_recorded(parsed.recorded))

    n_prompts = len(set(ds.samples.prompt_id.tolist()))
    if parsed.recorded is not None:
        c = np.bincount(parsed.recorded.verdict.astype(np.int64), minlength=3)
        verdicts = f"published verdicts {c[0]} PASS, {c[1]} FAIL, {c[2]} UNDECIDABLE"
    else:
        verdicts = "no recorded verdicts (run `evaluate`)"
    print(f"imported run {rid} into {folder}: {ds.n} samples, {n_prompts} prompts, "
          f"{len(ds.detections)} detections, {len(images)} images; {verdicts} as checker config v{cid}")
    del ds, parsed
    from ....store import Project, ProjectLocked

    try:
        project = Project.open(folder, read_only=True)  # its final folder: the cache's key names it
    except ProjectLocked:  # opened elsewhere meanwhile (the window): that open reads it
        return 0
    with project:
        prepare_next_open(project)
    return 0


def _copy_images(images: list[tuple[Path, str]], root: Path, made: list[Path]) -> None:
    """Copy checked images under `root`, listing every file and folder made in `made`
    (innermost last), so that a failed import can remove them again."""
    from ....progress import track
    from ....util.paths import target_file

    for src, rel in track(images, desc="copying images", unit="img"):
        dst = target_file(root, rel)
        for parent in reversed(dst.parents):
            if not parent.exists():
                parent.mkdir()
                made.append(parent)
        if dst.exists():
            raise WorkstationError(f"image {dst} is already in the project; choose another --run-id")
        shutil.copyfile(src, dst)  # the checked regular file, never a link
        made.append(dst)


@contextmanager
def _project_folder(folder: Path, made: list[Path]) -> Iterator[tuple[Any, Path]]:
    """The project to import into, and the folder its files go to.

    An existing project (or a folder that already holds other files) is opened in place: the
    import is one transaction, and the files and folders listed in `made` are removed on failure.
    A new project is built in a hidden sibling folder and renamed into place when the import has
    succeeded, so a failed or killed import never leaves a project behind (a killed import's
    hidden folder is removed by the next import into the same place)."""
    from ....store import DB_NAME, Project

    in_place = (folder / DB_NAME).is_file() or (folder.exists() and (not folder.is_dir() or any(folder.iterdir())))
    parents: list[Path] = []
    if in_place:
        build = folder
    else:
        for p in reversed((folder.parent, *folder.parent.parents)):
            if not p.exists():
                p.mkdir()
                parents.append(p)
        _remove_stale_builds(folder)
        # made here, exclusively, under a name no one can plant a link or a folder at beforehand
        build = Path(tempfile.mkdtemp(prefix=f"{_build_prefix(folder)}{os.getpid()}-", dir=str(folder.parent)))
        os.chmod(build, new_folder_mode())  # a project folder as a plain mkdir makes it, not mkdtemp's 0700
    db_existed = (build / DB_NAME).exists()
    images_existed = (build / "images").exists()
    try:
        project = Project.create(build, exist_ok=True)
    except BaseException:
        remove_made(parents)
        raise
    ok = False
    try:
        yield project, build
        ok = True
    finally:
        project.close()
        if not ok:
            remove_made(made)
            if not in_place:
                shutil.rmtree(build, ignore_errors=True)
                remove_made(parents)
            elif not db_existed:
                for name in (DB_NAME, DB_NAME + ".wal"):
                    (build / name).unlink(missing_ok=True)
                if not images_existed:
                    shutil.rmtree(build / "images", ignore_errors=True)
    if not in_place:
        try:
            if folder.exists():
                folder.rmdir()  # an empty folder is replaced
            os.rename(build, folder)
        except OSError:
            shutil.rmtree(build, ignore_errors=True)
            remove_made(parents)
            raise


def _build_prefix(folder: Path) -> str:
    return f".{folder.name}.importing-"


def _remove_stale_builds(folder: Path) -> None:
    """Hidden build folders (``.NAME.importing-<pid>-<random>``) of earlier imports into `folder`
    whose process is gone (killed); a link under such a name is removed as a link."""
    from ....jobs.runner import pid_alive

    prefix = _build_prefix(folder)
    for p in folder.parent.glob(f"{glob.escape(prefix)}*"):
        try:
            pid = int(p.name[len(prefix):].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not pid_alive(pid):
            if p.is_symlink() or not p.is_dir():
                p.unlink(missing_ok=True)
            else:
                shutil.rmtree(p, ignore_errors=True)


def _manifest_run_id(run_dir: Path) -> str | None:
    """The run_id on the manifest's first line (the benchmark's name for the method)."""
    try:
        with (run_dir / "manifest.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    v = loads_strict(line[:1 << 20]).get("run_id")
                    return str(v)[:200] if v else None
    except (OSError, ValueError, AttributeError):
        return None
    return None
