"""Import a folder of triplet images (a JSONL / CSV index, `io.read_triplet_index`) into a project.

Everything is checked before anything is written: the index line by line and every image (path
inside the folder, regular file, format, size, full decode — `io`), the run id, and that no
triplet's prompts clash with prompts already in the project. Then the images are copied into
``images/<run_id>/`` (each read again without following links, its bytes checked against the hash
taken when it was validated and decoded once more, written atomically) and the run, the prompts
and the samples are added in one transaction. Any failure removes the copied images and leaves
the database as it was.

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
    v = imp.extra[i].get("seed", 0)
    try:
        s = int(v)
        if isinstance(v, bool) or s != float(v) or s < 0:
            raise ValueError
    except (TypeError, ValueError):
        raise InputError(imp.index_path, f"field 'seed' must be a whole number ≥ 0, got {v!r}", int(imp.line[i])) from None
    return s


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


def import_folder(project: Any, folder: str | Path, *, index: str | Path | None = None, run_id: str | None = None,
                  imported: ImportedTriplets | None = None, **limits: int) -> ImportSummary:
    """Validate ``folder`` (and its index), then add its triplets to ``project`` (module doc).
    ``imported``: the folder already validated by `read_triplet_index` (not validated again)."""
    from ...jobs.spec import check_run_id, safe_name, sample_id_for

    imp = imported if imported is not None else read_triplet_index(folder, index, **limits)
    rid = check_run_id(run_id) if run_id else default_run_id(imp)
    seeds = [_seed_of(imp, i) for i in range(len(imp))]
    if project.read_only:
        raise WorkstationError(f"project {project.folder} is open read-only")
    if rid in project.run_ids():
        raise WorkstationError(f"run {rid!r} already exists in the project; choose another --run-id")
    suite = f"protobias-import:{imp.index_path.name}@{default_run_id(imp).rsplit('-', 1)[1]}"
    prompts = _prompts(imp, suite)
    existing = dict(project.con.execute(
        "SELECT prompt_id, text FROM prompts WHERE prompt_id IN (SELECT unnest(?))",
        [prompts.prompt_id.tolist()]).fetchall())
    for pid, text in zip(prompts.prompt_id.tolist(), prompts.text.tolist()):
        if pid in existing and existing[pid] != text:
            i = list(imp.triplet_id).index(pid.rpartition(":")[0])
            raise InputError(imp.index_path, f"triplet {pid.rpartition(':')[0]!r} is already in the project with "
                                             f"another text ({existing[pid]!r})", int(imp.line[i]))
    images_dir = Path(project.folder) / "images" / rid
    sids, pids, paths, widths, heights, seed_col = [], [], [], [], [], []
    copied: list[Path] = []
    made_dir = not images_dir.exists()
    try:
        images_dir.mkdir(parents=True, exist_ok=True)
        for i in range(len(imp)):
            for role in ROLES:
                rel_src = str(imp.image_corr[i] if role == "corr" else imp.image_adv[i])
                sha = str(imp.sha256_corr[i] if role == "corr" else imp.sha256_adv[i])
                data, ext = _read_again(imp.source_path(rel_src), sha, str(imp.index_path), int(imp.line[i]))
                pid = image_target_id(str(imp.triplet_id[i]), role)
                dest = images_dir / f"{safe_name(pid)}_s{seeds[i]}{ext}"
                if dest.exists():
                    raise WorkstationError(f"{dest} already exists; the project holds files of another import")
                atomic_write_bytes(dest, data, fsync=False)
                copied.append(dest)
                sids.append(sample_id_for(rid, pid, seeds[i]))
                pids.append(pid)
                paths.append(dest.relative_to(project.folder).as_posix())
                widths.append(float(imp.width_corr[i] if role == "corr" else imp.width_adv[i]))
                heights.append(float(imp.height_corr[i] if role == "corr" else imp.height_adv[i]))
                seed_col.append(seeds[i])
        n = len(sids)
        samples = Samples.build(sids, rid, pids, seed=seed_col, width=widths, height=heights, image_path=paths)
        ds = Dataset(samples, Detections.empty(), prompts)
        with project.transaction():
            project.add_run(rid, method="protobias_import", model=None,
                            params={"folder": str(imp.folder), "index": imp.index_path.name, "triplets": len(imp)},
                            provenance={"index_sha256": hashlib.sha256(imp.index_path.read_bytes()).hexdigest(),
                                        "images": {s: h for s, h in zip(sids, _hashes(imp))}},
                            source="protobias_import")
            project.add_dataset(ds)
    except BaseException:
        for p in copied:
            p.unlink(missing_ok=True)
        if made_dir:
            try:
                images_dir.rmdir()
            except OSError:
                pass
        raise
    return ImportSummary(rid, len(imp), n, str(imp.index_path), str(imp.folder))


def _hashes(imp: ImportedTriplets) -> list[str]:
    out: list[str] = []
    for a, b in zip(imp.sha256_corr, imp.sha256_adv):
        out += [str(a), str(b)]
    return out


__all__ = ["ImportSummary", "default_run_id", "import_folder"]

