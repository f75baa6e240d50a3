"""Result files of a job: PNG images and Parquet chunks, written atomically.

A worker writes each finished batch's images first (``images/<run_id>/…png``) and then one
chunk file (``jobs/<job_id>/chunks/<name>.parquet``) that lists the batch's rows and, in its
schema metadata, the keys of the items it finished. Every file is written to a temporary name
and renamed, so a reader (the ingesting process, a resumed worker) sees a whole file or none:
a worker killed mid-batch leaves at most stray temporary files, never a half chunk.

A full disk raises ``DiskFull`` with the file it was writing; the chunks already renamed stay.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..types import WorkstationError
from ..util.atomic import PARTIAL_SUFFIX, atomic_path, atomic_write_bytes
from .spec import JobPaths

META_ITEMS = b"workstation.items"
META_KIND = b"workstation.kind"
META_JOB = b"workstation.job"

_seq = itertools.count()


class DiskFull(WorkstationError):
    """No space left on the device while writing a result file."""


def _disk_error(path: Path, e: OSError) -> WorkstationError:
    if e.errno == errno.ENOSPC:
        return DiskFull(f"out of disk space writing {path}; free some space and resume the job — "
                        "every finished item is kept")
    return WorkstationError(f"cannot write {path}: {e.strerror or e}")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data, fsync=False)
    except OSError as e:
        raise _disk_error(path, e) from e


def encode_png(img: np.ndarray) -> bytes:
    """Lossless PNG bytes of an RGB uint8 image (the same pixels always give the same bytes)."""
    import cv2

    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise WorkstationError(f"a generator returned a {img.dtype} array of shape {img.shape}; "
                               "expected H×W×3 uint8 RGB")
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(img[:, :, ::-1]))
    if not ok:  # pragma: no cover - cv2 encodes any uint8 image
        raise WorkstationError("PNG encoding failed")
    return buf.tobytes()


def write_png(project_folder: Path, rel_path: str, img: np.ndarray) -> None:
    write_bytes_atomic(project_folder / rel_path, encode_png(img))


def read_image(path: Path) -> np.ndarray:
    """An image file as RGB uint8; a clear error when it is missing or unreadable."""
    import cv2

    if not path.is_file():
        raise WorkstationError(f"image file not found: {path}")
    data = np.fromfile(str(path), dtype=np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if img is None:
        raise WorkstationError(f"cannot read the image {path} (not an image, or a damaged file)")
    return np.ascontiguousarray(img[:, :, ::-1])


def write_chunk(paths: JobPaths, kind: str, columns: Mapping[str, Sequence[Any]], items: Sequence[str],
                types: dict[str, Any] | None = None) -> Path:
    """Write one finished batch as a chunk file; returns its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_seq):05d}.parquet"
    path = paths.chunks / name
    types = types or {}
    arrays = {k: pa.array(list(v), type=types.get(k)) for k, v in columns.items()}
    table = pa.table(arrays).replace_schema_metadata({
        META_ITEMS: json.dumps(list(items)).encode(),
        META_KIND: kind.encode(),
        META_JOB: paths.job_id.encode(),
    })
    try:
        paths.chunks.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
    except OSError as e:
        raise _disk_error(path, e) from e
    return path


def chunk_files(paths: JobPaths) -> list[Path]:
    """Finished chunk files, oldest first."""
    if not paths.chunks.is_dir():
        return []
    return sorted(p for p in paths.chunks.glob("*.parquet") if not p.name.startswith("."))


def chunk_items(path: Path) -> list[str]:
    """Item keys a chunk finished (read from the metadata only)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return [str(x) for x in json.loads(meta.get(META_ITEMS, b"[]"))]


def read_chunk(path: Path) -> tuple[dict[str, list[Any]], list[str], str]:
    """(columns, item keys, kind) of a chunk file."""
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    meta = t.schema.metadata or {}
    cols = {n: t.column(n).to_pylist() for n in t.column_names}
    return cols, [str(x) for x in json.loads(meta.get(META_ITEMS, b"[]"))], meta.get(META_KIND, b"").decode()


def finished_keys(paths: JobPaths) -> set[str]:
    """Items finished in chunk files of this job plus those the project already held at start."""
    keys: set[str] = set()
    for p in chunk_files(paths):
        keys.update(chunk_items(p))
    if paths.skip.is_file():
        keys.update(k for k in paths.skip.read_text(encoding="utf-8").splitlines() if k)
    return keys


def ingested_names(paths: JobPaths) -> set[str]:
    if not paths.ingested.is_file():
        return set()
    return {n for n in paths.ingested.read_text(encoding="utf-8").splitlines() if n}


def mark_ingested(paths: JobPaths, names: Sequence[str]) -> None:
    with paths.ingested.open("a", encoding="utf-8") as fh:
        for n in names:
            fh.write(n + "\n")


def pending_chunks(paths: JobPaths) -> list[Path]:
    """Finished chunks not yet ingested into the project, oldest first."""
    done = ingested_names(paths)
    return [p for p in chunk_files(paths) if p.name not in done]


def clean_temporary(paths: JobPaths) -> int:
    """Remove temporary files a killed worker left behind; returns how many."""
    n = 0
    for folder in (paths.chunks, paths.dir):
        if folder.is_dir():
            for p in [*folder.glob(".*.tmp"), *folder.glob(f".*{PARTIAL_SUFFIX}")]:
                try:
                    p.unlink()
                    n += 1
                except OSError:
                    pass
    return n
