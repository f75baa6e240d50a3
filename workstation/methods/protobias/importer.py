"""Import a folder of triplet images (a JSONL / CSV index, `io.read_triplet_index`) into a project.

Everything is checked before anything is written: the index line by line and every image (path
inside the folder, regular file, format, size, full decode — `io`), the run id, and that no
triplet's prompts clash with prompts already in the project. Then the images are copied into a
hidden staging folder under ``images/`` (each read again without following links, its bytes
checked against the hash taken when it was validated and decoded once more), and the run, the
prompts and the samples are added in one transaction whose last step renames that folder to
``images/<run_id>/`` (`workstation.util.staging`). Any failure removes the copies and leaves the
database as it was; a process killed at any point leaves only what the next open of the project
for writing (or the next import) clears: never a file in ``images/<run_id>/`` that no sample
names.

An index line may carry, besides the required fields, ``prompt_corr`` / ``prompt_adv`` (the
generation prompts of the two images), ``extra_element``, ``knob_value`` (what T states),
``knob_value_adv`` (what I_adv shows instead) and ``seed``; every other field is kept in the
prompts' ``attrs["extra"]``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...dataset import Dataset, Detections, Prompts, Samples
from ...types import InputError, WorkstationError
from ...util.atomic import atomic_write_bytes
from ...util.images import DEFAULT_MAX_BYTES, decode_check
from ...util.staging import stage
from .build import METHOD_NAME, ROLES, image_target_id
from .io import ImportedTriplets, read_triplet_index

_KNOWN_EXTRA = ("prompt_corr", "prompt_adv", "extra_element", "knob_value", "knob_value_adv", "seed")
_EXT = {"PNG": ".png", "JPEG": ".jpg", "WEBP": ".webp", "BMP": ".bmp"}


@dataclass(frozen=True)
class ImportSummary:
    run_id: str
    triplets: int
    images: int
    index: str
    folder: str
    already: bool = False  # the same import was found complete in the project: nothing was written


def default_run_id(imp: ImportedTriplets) -> str:
    """``import-<folder name>-<8 hex of the index and image hashes>``: the same folder gives the same id."""
    from ...jobs.spec import safe_name

    h = hashlib.sha256()
    for t, a, b in zip(imp.triplet_id, imp.sha256_corr, imp.sha256_adv):
        h.update(f"{t}\x1f{a}\x1f{b}\x1e".encode())
    return f"import-{safe_name(imp.folder.name)[:40]}-{h.hexdigest()[:8]}"


def _prompts(imp: ImportedTriplets, suite: str) -> Prompts:
    ids, texts, attrs, twins, groups = [], [], [], [], []
    for i in range(len(imp)):
        tid, t = str(imp.triplet_id[i]), str(imp.text[i])
        extra = dict(imp.extra[i])
        known = {k: extra.pop(k) for k in _KNOWN_EXTRA if k in extra}
        for role in ROLES:
            ids.append(image_target_id(tid, role))
            texts.append(str(known.get(f"prompt_{role}") or t))
            a: dict[str, Any] = {"domain": str(imp.domain[i]), "knob": str(imp.knob[i]), "role": role,
                                 "triplet_id": tid, "eval_text": t, "score_text": t,
                                 "image_source": str(imp.image_corr[i] if role == "corr" else imp.image_adv[i]),
                                 "index_line": int(imp.line[i])}
            for k in ("extra_element", "knob_value_adv"):
                if k in known:
                    a[k] = str(known[k])
            if "knob_value" in known:
                a["knob_value_text"] = str(known["knob_value"])
                a["knob_value"] = str(known["knob_value"] if role == "corr" else known.get("knob_value_adv", ""))
            if extra:
                a["extra"] = extra
            attrs.append(a)
            twins.append(image_target_id(tid, "adv" if role == "corr" else "corr"))
            groups.append(tid)
    return Prompts.build(ids, texts, method=METHOD_NAME, suite=suite, attrs=attrs, twin_id=twins, group_id=groups)


def _seed_of(imp: ImportedTriplets, i: int) -> int:
    from ...jobs.spec import MAX_SEED
    from ...util.textio import quote

    v = imp.extra[i].get("seed", 0)
    try:
        if isinstance(v, bool):
            raise ValueError
        if isinstance(v, str):  # a CSV cell
            s = int(v.strip())
        elif isinstance(v, int):
            s = v
        elif isinstance(v, float) and v.is_integer():
            s = int(v)
        else:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(imp.index_path, f"field 'seed' must be a whole number ≥ 0, got {quote(v, 40)}",
                         int(imp.line[i])) from None
    if not 0 <= s <= MAX_SEED:
        raise InputError(imp.index_path, f"field 'seed' must be a whole number from 0 to 2**63-1, got {quote(v, 40)}",
                         int(imp.line[i]))
    return s


def plan_import(imp: ImportedTriplets, run_id: str | None = None) -> tuple[str, list[int]]:
    """The run id and the seed of each triplet, checked (what `import_folder` checks before it
    touches the project; a command calls it before it creates one)."""
    from ...jobs.spec import check_run_id

    rid = check_run_id(run_id) if run_id else default_run_id(imp)
    return rid, [_seed_of(imp, i) for i in range(len(imp))]


def _read_again(src: Path, sha256: str, where: str, line: int) -> tuple[bytes, str]:
    """The bytes of a validated image, read without following links, checked against its hash and
    decoded once more; returns (bytes, file extension)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(src, flags)
    except OSError as e:
        raise InputError(where, f"image {src.name!r} cannot be read again: {e.strerror or e}", line) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(where, f"image {src.name!r} is no longer a regular file", line)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(DEFAULT_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise InputError(where, f"image {src.name!r} changed while it was being imported", line)
    _w, _h, fmt, _mode = decode_check(data, src)
    return data, _EXT.get(fmt, ".png")


def _leftovers(project: Any, images_dir: Path, rel_dir: str) -> list[Path]:
    """Entries of the import's image folder that no sample of the project names: what a killed
    import left (the run is not in the project, and the project is held by this process alone)."""
    if not images_dir.is_dir():
        return []
    named = {str(r[0]) for r in project.con.execute(
        "SELECT image_path FROM samples WHERE starts_with(image_path, ?)", [rel_dir + "/"]).fetchall()}
    out = []
    with os.scandir(images_dir) as it:
        for e in it:
            if f"{rel_dir}/{e.name}" not in named and not e.is_dir(follow_symlinks=False):
                out.append(Path(e.path))
    return out


def _held_import(project: Any, rid: str) -> dict[str, Any] | None:
    """Run ``rid`` of the project (its row), None when there is none."""
    return next((r for r in project.samples.runs() if r["run_id"] == rid), None)


def _same_import(run: dict[str, Any], imp: ImportedTriplets, provenance: dict[str, Any], n: int) -> bool:
    """Whether ``run`` is this very import, done before (a run of the same command again): a
    ProtoBias import of the same folder (its real path), with the same index and image bytes."""
    from ...store import MAX_PROVENANCE_BYTES
    from ...util.jsonsafe import capped

    got = run.get("params")
    params: dict[str, Any] = got if isinstance(got, dict) else {}
    return (run.get("source") == "protobias_import" and int(run.get("samples") or 0) == n
            and _same_folder(params.get("folder"), imp.folder)
            and run.get("provenance") == capped(provenance, MAX_PROVENANCE_BYTES))


def _same_folder(held: Any, folder: Path) -> bool:
    if not isinstance(held, str) or not held:
        return False
    return held == str(folder) or os.path.realpath(held) == os.path.realpath(folder)


def _refuse_held(run: dict[str, Any], rid: str, imp: ImportedTriplets) -> WorkstationError:
    """The one-line refusal of an import under a run id the project already holds otherwise."""
    from ...util.textio import quote

    got = run.get("params")
    params: dict[str, Any] = got if isinstance(got, dict) else {}
    held = params.get("folder")
    if run.get("source") == "protobias_import" and isinstance(held, str):
        if _same_folder(held, imp.folder):
            return WorkstationError(f"run {rid!r} already exists in the project: it holds an earlier import of this "
                                    f"folder, {quote(held, 110)}, whose index or images differ now; choose another "
                                    "--run-id")
        return WorkstationError(f"run {rid!r} already exists in the project: it holds the import of {quote(held, 110)}, "
                                f"not of {quote(str(imp.folder), 110)}; choose another --run-id")
    return WorkstationError(f"run {rid!r} already exists in the project; choose another --run-id")


def import_folder(project: Any, folder: str | Path, *, index: str | Path | None = None, run_id: str | None = None,
                  imported: ImportedTriplets | None = None, **limits: int) -> ImportSummary:
    """Validate ``folder`` (and its index), then add its triplets to ``project`` (module doc).
    ``imported``: the folder already validated by `read_triplet_index` (not validated again).

    An import that was killed can be run again: the files a dead import left in the run's image
    folder (named by no sample: the run is not in the project) are cleared first, and the same
    import found complete in the project is reported as done (``ImportSummary.already``)."""
    from ...jobs.spec import safe_name, sample_id_for
    from ...util.paths import UnsafePath, target_file

    imp = imported if imported is not None else read_triplet_index(folder, index, **limits)
    rid, seeds = plan_import(imp, run_id)
    if project.read_only:
        raise WorkstationError(f"project {project.folder} is open read-only")
    hashes = iter(_hashes(imp))  # corr, adv of each triplet: the order of ROLES
    provenance = {"index_sha256": hashlib.sha256(imp.index_path.read_bytes()).hexdigest(),
                  "images": {sample_id_for(rid, image_target_id(str(imp.triplet_id[i]), role), seeds[i]): next(hashes)
                             for i in range(len(imp)) for role in ROLES}}
    run = _held_import(project, rid)
    if run is not None:
        if _same_import(run, imp, provenance, 2 * len(imp)):
            return ImportSummary(rid, len(imp), 2 * len(imp), str(imp.index_path), str(imp.folder), already=True)
        raise _refuse_held(run, rid, imp)
    suite = f"protobias-import:{imp.index_path.name}@{default_run_id(imp).rsplit('-', 1)[1]}"
    prompts = _prompts(imp, suite)
    existing = dict(project.con.execute(
        "SELECT prompt_id, text FROM prompts WHERE prompt_id IN (SELECT unnest(?))",
        [prompts.prompt_id.tolist()]).fetchall())
    for pid, text in zip(prompts.prompt_id.tolist(), prompts.text.tolist()):
        if pid in existing and existing[pid] != text:
            i = list(imp.triplet_id).index(pid.rpartition(":")[0])
            raise InputError(imp.index_path, f"triplet {pid.rpartition(':')[0]!r} is already in the project with "
                                             f"another text ({existing[pid][:60]!r})", int(imp.line[i]))
    rel_dir = f"images/{rid}"
    try:
        target_file(project.folder, f"{rel_dir}/x")  # nothing is written through a link
    except UnsafePath as e:
        raise WorkstationError(f"cannot import into {project.folder}: {e}") from None
    images_root = Path(project.folder) / "images"
    images_dir = images_root / rid
    images_root.mkdir(parents=True, exist_ok=True)
    project.clear_import_leftovers()  # a killed import's staging folder (also done on every open)
    for p in _leftovers(project, images_dir, rel_dir):
        p.unlink(missing_ok=True)  # a killed import's copies (and half-written files), of versions before staging
    if images_dir.is_dir() and not images_dir.is_symlink() and not any(images_dir.iterdir()):
        images_dir.rmdir()
    if os.path.lexists(images_dir):
        raise WorkstationError(f"{images_dir} already holds files of another import; the project names none of "
                               "them: move them away or choose another --run-id")
    sids, pids, paths, widths, heights, seed_col, names = [], [], [], [], [], [], []
    # the copies go into a hidden staging folder, renamed to images/<run_id> in the transaction
    # that adds the run: a kill at any point leaves no file that a sample does not name
    staging = stage(images_root, rid, rid)
    try:
        for i in range(len(imp)):
            for role in ROLES:
                rel_src = str(imp.image_corr[i] if role == "corr" else imp.image_adv[i])
                sha = str(imp.sha256_corr[i] if role == "corr" else imp.sha256_adv[i])
                data, ext = _read_again(imp.source_path(rel_src), sha, str(imp.index_path), int(imp.line[i]))
                pid = image_target_id(str(imp.triplet_id[i]), role)
                name = f"{safe_name(pid)}_s{seeds[i]}{ext}"
                if name in names:
                    raise WorkstationError(f"two images of the import would be {rel_dir}/{name}")
                atomic_write_bytes(staging.dir / name, data, fsync=False)
                names.append(name)
                sids.append(sample_id_for(rid, pid, seeds[i]))
                pids.append(pid)
                paths.append(f"{rel_dir}/{name}")
                widths.append(float(imp.width_corr[i] if role == "corr" else imp.width_adv[i]))
                heights.append(float(imp.height_corr[i] if role == "corr" else imp.height_adv[i]))
                seed_col.append(seeds[i])
        n = len(sids)
        samples = Samples.build(sids, rid, pids, seed=seed_col, width=widths, height=heights, image_path=paths)
        ds = Dataset(samples, Detections.empty(), prompts)
        with project.transaction():
            project.samples.add_run(rid, method="protobias_import", model=None,
                                    params={"folder": str(imp.folder), "index": imp.index_path.name, "triplets": len(imp)},
                                    provenance=provenance, source="protobias_import")
            project.samples.add_dataset(ds)
            staging.place(names)  # the last step before the commit
    except BaseException:
        staging.discard()
        raise
    staging.settle()
    return ImportSummary(rid, len(imp), n, str(imp.index_path), str(imp.folder))


def _hashes(imp: ImportedTriplets) -> list[str]:
    out: list[str] = []
    for a, b in zip(imp.sha256_corr, imp.sha256_adv):
        out += [str(a), str(b)]
    return out


__all__ = ["ImportSummary", "default_run_id", "import_folder", "plan_import"]

