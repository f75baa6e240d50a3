"""Loaded detection columns kept as memory-mapped files in the user's cache folder.

At a million samples a project holds ≈13M detections: 0.3 GB of columns that the checker reads
whole once (its preparation) and afterwards only where the area filter or a shown pair needs a
box. Read from DuckDB they live in the process heap for as long as the project is open, and
the scan costs 1–2 s of every open. Here the columns, as the loader built them, are written
once to the user's cache folder and memory-mapped on later opens: the open skips the scan, and
after the checker's preparation the mapped pages are handed back (`Dataset.drop_mapped_pages`),
so they stay in the system's page cache (reclaimable, shared) instead of the process's heap.

An entry is found by a key over everything the loader's result depends on: the loaded samples
(their ids' two hashes, in order), every row of the detections table (its count and two
aggregates, exclusive or and sum, of a hash of each row's columns and row id), the recorded
image variants and this format's version. Any change of the project's detections or samples
gives another key; the project's older entries are removed when a new one is written, and the
folder is kept under a size cap, least recently used first.

The aggregates take a pass over the whole table (≈1 s of an open at 13M detections). An entry's
folder is named by its key's family first (everything but the aggregates: `key_family`), so a
load whose family has no entry (`may_hold`: a first open, or one after detections or samples
were added or removed) knows it will scan without that pass, and its scan gives the aggregates
of the very rows it read; only a load that may hit reads them first.

The cache is an optimisation only, and may only make a load faster, never change what it gives.
Whatever is read back is treated as a file from outside (`cache_files`): the manifest read
strictly (size, depth, numbers, field types), no link or pipe opened, files mapped from the
descriptor that was checked, never unpickled; every file's size and keyed digest (keyed with the
entry's key: another entry's file never checks out) compared over every byte at every open,
the manifest's own digest too; shapes and dtypes must match the manifest, and codes and offsets
are range-checked before use. An entry that does not check out — missing, unreadable, damaged in
any byte, another project's — is removed and rebuilt from the project, with one line naming it
and the reason (the log, and `rebuilt_notes` of the dataset for the window's status bar); a
folder of the cache whose manifest does not read as an entry's goes when room is made. A folder
that cannot be written (read-only, full disk) leaves the columns in memory, as before. Entries
are written to a temporary folder, every file flushed and synced (those the scan filled through
their mappings too), the manifest last, the folder synced, then renamed into place and the
parent synced: a killed process or a crash leaves no entry or a whole one.

Environment: `WORKSTATION_CACHE_DIR` (the folder; default: the platform's user cache folder),
`WORKSTATION_DETECTION_CACHE_MIN` (detections from which the cache is used; default 1,000,000;
`off` disables it), `WORKSTATION_CACHE_MAX_GB` (size cap, default 8).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..dataset import CodedLabels, Dataset, Detections, SampleRuns
from . import cache_files
from .cache_files import MANIFEST, Fields, Unusable
from ..util.paths import user_cache_dir
from ..util.refs import weak

log = logging.getLogger(__name__)

FORMAT = 2  # 2: every file's size and keyed digest in the manifest, checked on load
DEFAULT_MIN_DETECTIONS = 1_000_000
DEFAULT_MAX_GB = 8.0
MANIFEST_MAX_BYTES = 64 << 20
FLOAT_COLUMNS = ("score", "x1", "y1", "x2", "y2")  # a detection's score and box
_COLUMNS = ("source", "variant", "label", *FLOAT_COLUMNS, "sample")
_DTYPES = {"source": {"int8"}, "variant": {"int8", "int16"}, "label": {"int16", "int32"},
           "score": {"float32", "float64"}, "x1": {"float32", "float64"}, "y1": {"float32", "float64"},
           "x2": {"float32", "float64"}, "y2": {"float32", "float64"}, "sample": {"int32", "int64"}}
_KNOWN_DTYPES = {s: np.dtype(s) for s in set().union(*_DTYPES.values())}


def _dtype_name(dt: np.dtype[Any]) -> str | None:
    """The name of `dt` among the cache's dtypes (native byte order), or None. Compared rather
    than read from `dt.name`, which keeps a few objects alive on every call for a dtype read
    from a file (each open would pin some of the memory freed at its close)."""
    return next((s for s, want in _KNOWN_DTYPES.items() if dt == want), None)


def cache_root() -> Path:
    env = os.environ.get("WORKSTATION_CACHE_DIR", "").strip()
    return (Path(env).expanduser() if env else user_cache_dir()) / "detections"


def min_detections() -> int | None:
    """Detections from which loads go through the cache; None when it is turned off."""
    env = os.environ.get("WORKSTATION_DETECTION_CACHE_MIN", "").strip().lower()
    if env in ("off", "no", "none", "false", "disabled"):
        return None
    if env:
        try:
            return max(0, int(env.replace("_", "")))
        except ValueError:
            log.warning("WORKSTATION_DETECTION_CACHE_MIN=%r is not a number: using %d", env, DEFAULT_MIN_DETECTIONS)
    return DEFAULT_MIN_DETECTIONS


def max_bytes() -> int:
    env = os.environ.get("WORKSTATION_CACHE_MAX_GB", "").strip()
    try:
        gb = float(env) if env else DEFAULT_MAX_GB
    except ValueError:
        gb = DEFAULT_MAX_GB
    return int(max(gb, 0.0) * (1 << 30))


@dataclass(frozen=True)
class CacheKey:
    digest: str  # hex
    project: str  # the project's folder, resolved (for removing its older entries)
    n_samples: int
    scope: str = ""  # which of its samples the load asked for (a method's, some runs'): one entry each
    family: str = ""  # hex: everything the digest covers but the table's aggregates (`key_family`)


FAMILY_CHARS = 16  # of the family's hex digest, leading an entry's folder name


def key_family(h1: np.ndarray, h2: np.ndarray, recorded_variants: list[str], n_detections: int) -> str:
    """What a load's key covers besides the detections table's row aggregates: the format, the
    table's row count, the recorded variants and the loaded samples' id hashes in order. Known
    before the detections are read; entries are named by it first (see `may_hold`)."""
    h = hashlib.sha256()
    h.update(f"detections-cache/{FORMAT}".encode())
    h.update(json.dumps([int(n_detections), sorted(recorded_variants)]).encode())
    h.update(np.ascontiguousarray(h1, np.uint64).tobytes())
    h.update(np.ascontiguousarray(h2, np.uint64).tobytes())
    return h.hexdigest()


def make_key(project_folder: Path, family: str, table_fingerprint: tuple[Any, ...], n_samples: int,
             scope: str = "") -> CacheKey:
    """The entry's key: its `family` (`key_family`) and the detections table's fingerprint
    (count and row-hash aggregates). `scope` names the load's selection of samples (a
    method's, some runs'): a project keeps one entry per scope, so the window's views of two
    methods do not evict each other's."""
    h = hashlib.sha256()
    h.update(family.encode())
    h.update(json.dumps([str(x) for x in table_fingerprint]).encode())
    return CacheKey(h.hexdigest(), str(Path(project_folder).resolve()), int(n_samples), scope, family)


def _entry(root: Path, key: CacheKey) -> Path:
    return root / f"{key.family[:FAMILY_CHARS]}-{key.digest[:40]}"


def may_hold(family: str, root: Path | None = None) -> bool:
    """Whether the cache keeps any entry of `family` (`key_family`). When it does not, no key of
    that family can hit, whatever the detections table's aggregates: the load scans at once."""
    root = cache_root() if root is None else root
    if not family or any(c not in "0123456789abcdef" for c in family[:FAMILY_CHARS]):
        return True  # not a family's digest: the full key decides
    try:
        return any(_plain_dir(p) for p in root.glob(f"{family[:FAMILY_CHARS]}-*"))
    except OSError:
        return True  # cannot tell: the full key decides


@dataclass(frozen=True)
class EntryRef:
    """The entry a dataset's detections were read from, for what is derived from them alone
    and kept beside them (the checker's preparation: `methods.spatial.prepared_cache`). It
    names the dataset's detections only while they are still the arrays the entry gave
    (weak references: a replaced column, or samples, never match)."""

    folder: Path
    digest: str
    refs: tuple[Callable[[], Any], ...]

    DATASET_KEY: ClassVar[str] = "detection_cache.entry"

    @staticmethod
    def _arrays(ds: Dataset) -> tuple[Any, ...]:
        d = ds.detections
        return (ds.samples.sample_id, d.sample_identity(), d.label_identity(), d.score, d.x1, d.y1, d.x2, d.y2,
                d.source, d.variant)

    @classmethod
    def attach(cls, ds: Dataset, key: CacheKey, root: Path | None = None) -> None:
        root = cache_root() if root is None else root
        ds.cache[cls.DATASET_KEY] = cls(_entry(root, key), key.digest, tuple(weak(a) for a in cls._arrays(ds)))

    @classmethod
    def of(cls, ds: Dataset) -> "EntryRef | None":
        """The entry `ds`'s detections came from, while they are still its arrays; else None."""
        ref = ds.cache.get(cls.DATASET_KEY)
        if not isinstance(ref, cls):
            return None
        now = cls._arrays(ds)
        same = len(now) == len(ref.refs) and all(r() is a for r, a in zip(ref.refs, now))
        return ref if same else None


def _plain_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def file_key(digest: str, name: str = "") -> bytes:
    """The digest key of an entry's file `name` (its manifest's: ""): the entry's key with it."""
    return cache_files.digest_key("detections", digest, name)


NOTES_KEY = "cache.rebuilt"  # a dataset's `cache`: the one-line notes of cache entries rebuilt by its load


def rebuilt_notes(ds: Dataset) -> list[str]:
    """What the load of `ds` (and its checker's preparation) found unusable in the cache and
    rebuilt, one line each, for the window's status bar."""
    notes = ds.cache.get(NOTES_KEY)
    return [str(x) for x in notes] if isinstance(notes, list) else []


def note_rebuilt(ds: Dataset, line: str) -> None:
    ds.cache.setdefault(NOTES_KEY, []).append(line)


def older_than(p: Path, seconds: float) -> bool:
    """Whether `p` was last changed more than `seconds` ago (False when it cannot be read)."""
    try:
        return time.time() - p.lstat().st_mtime > seconds
    except OSError:
        return False


def load(key: CacheKey, root: Path | None = None, *, check: bool = True,
         notes: list[str] | None = None) -> tuple[Detections, list[str]] | None:
    """The cached columns of `key`, memory-mapped (read-only), or None (no entry, or one that
    does not check out: it is removed, and a line saying which and why is logged and added to
    `notes`). `check=False` (the entry just written from checked columns) skips the digests and
    the range checks of the codes and offsets; the manifest, sizes, shapes and dtypes are always
    checked."""
    root = cache_root() if root is None else root
    entry = _entry(root, key)
    if not _plain_dir(entry):
        if os.path.lexists(entry):  # a link or a file in an entry's place: never followed, gone
            line = (f"detection cache entry {entry} is unusable (a link or a file, not a folder): "
                    "rebuilt from the project")
            log.warning("%s", line)
            if notes is not None:
                notes.append(line)
            remove_path(entry)
        return None
    try:
        out = _read(entry, key, check)
    except Exception as e:  # noqa: BLE001 - whatever is read back is a file from outside: rebuilt
        line = f"detection cache entry {entry} is unusable ({cache_files.reason(e)}): rebuilt from the project"
        log.warning("%s", line)
        log.debug("the unusable entry", exc_info=True)
        if notes is not None:
            notes.append(line)
        remove_path(entry)
        return None
    try:
        os.utime(entry / MANIFEST, follow_symlinks=False)  # recently used: kept longest under the size cap
    except (OSError, NotImplementedError):
        pass
    return out


def _read(entry: Path, key: CacheKey, check: bool = True) -> tuple[Detections, list[str]]:
    meta = cache_files.read_manifest(entry / MANIFEST, MANIFEST_MAX_BYTES)
    f = Fields(meta)
    if f.get("format", int) != FORMAT or f.get("key", int) != _number(key.digest):
        raise Unusable("its manifest is of another format or key")
    algorithm = cache_files.check_manifest(meta, file_key(key.digest))
    n, m = f.whole("n_samples"), f.whole("n_detections")
    if n != key.n_samples:
        raise Unusable("its manifest's sizes do not match the project")
    variant_names = f.strings("variant_names")
    label_names = f.strings("label_names")
    runs = f.get("sample_runs", bool)
    dtypes = f.get("dtypes", dict)
    files = f.files()
    if sorted(files) != sorted(f"{c}.npy" for c in _COLUMNS):
        raise Unusable("its manifest names other files")
    cols: dict[str, np.ndarray] = {}
    for name in _COLUMNS:
        fname = f"{name}.npy"
        arr = cache_files.open_array(entry, fname, files[fname], file_key(key.digest, fname), algorithm, check)
        want = n + 1 if (name == "sample" and runs) else m
        kind = _dtype_name(arr.dtype)
        if arr.ndim != 1 or len(arr) != want or kind not in _DTYPES[name] or kind != dtypes.get(name):
            raise Unusable(f"{fname}: {arr.dtype} {arr.shape} is not what the manifest says")
        cols[name] = np.asarray(arr)  # a plain read-only view; the mapping stays with its base
    # codes and offsets in range before anything indexes with them
    if m and check:
        if len(label_names) == 0 or int(cols["label"].min()) < 0 or int(cols["label"].max()) >= len(label_names):
            raise Unusable("label codes out of range")
        if int(cols["variant"].min()) < 0 or int(cols["variant"].max()) >= len(variant_names):
            raise Unusable("variant codes out of range")
        # min and max, not np.isin: that takes ~100x longer on 13M codes
        if int(cols["source"].min()) < 0 or int(cols["source"].max()) > 1:
            raise Unusable("source codes out of range")
    sample = cols.pop("sample")
    sample_idx: Any = sample
    if runs:
        runs_dtype = f.get("runs_dtype", str)
        if runs_dtype not in ("int32", "int64"):
            raise Unusable(f"sample rows of dtype {runs_dtype[:20]!r}")
        if check and (sample[0] != 0 or sample[-1] != m or bool((np.diff(sample) < 0).any())):
            raise Unusable("sample offsets are not ascending from 0 to the detections' count")
        sample_idx = SampleRuns(np.asarray(sample, np.int64), np.dtype(runs_dtype))
    elif m and check and (int(sample.min()) < 0 or int(sample.max()) >= n):
        raise Unusable("sample rows out of range")
    label = CodedLabels(cols.pop("label"), np.array(label_names, dtype=object))
    dets = Detections(sample_idx=sample_idx, label=label, **cols)  # type: ignore[arg-type]
    return dets, variant_names


class PendingEntry:
    """An entry being written while the loader scans: its columns are memory-mapped files in a
    temporary folder of the cache (`array`), which the scan fills in place and `store` renames
    into place. The columns are then written once, straight into the page cache that later
    opens map, instead of filled in the heap and copied into files (≈0.4 GB at 13M detections:
    about a second of a first open). Each file's blocks are reserved when it is made, so a
    full disk fails there (the column is then filled in the heap), never as a fault when the
    scan writes a page."""

    def __init__(self, root: Path, folder: Path) -> None:
        self.root = root
        self.folder = folder
        self._maps: dict[str, np.ndarray] = {}
        self._full = False

    @classmethod
    def start(cls, key: CacheKey, incoming: int, root: Path | None = None) -> "PendingEntry | None":
        """A pending entry of `key` of about `incoming` bytes (room made for them under the size
        cap: see `entry_bytes`), or None when the cache folder cannot be written."""
        root = cache_root() if root is None else root
        tmp = root / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            _evict(root, key, incoming=incoming)
            tmp.mkdir(mode=0o700)
        except OSError as e:
            remove_path(tmp)
            log.warning("detection cache not written to %s (%s): the detections stay in memory", root, e)
            return None
        return cls(root, tmp)

    def array(self, name: str, dtype: Any, n: int) -> np.ndarray | None:
        """A writable column `name` of `n` values of `dtype`, mapped from its file in the
        folder (replacing the column's earlier file, whose mapping stays valid); None when
        the file cannot be made (the caller fills the column in memory)."""
        if self._full or name not in _DTYPES or _dtype_name(np.dtype(dtype)) not in _DTYPES[name]:
            return None
        part = self.folder / f".{name}-{uuid.uuid4().hex[:8]}.npy"
        try:
            arr = np.lib.format.open_memmap(part, mode="w+", dtype=np.dtype(dtype), shape=(n,))
            fd = os.open(part, os.O_RDWR)
            try:
                os.posix_fallocate(fd, 0, part.stat().st_size)
            finally:
                os.close(fd)
            os.replace(part, self.folder / f"{name}.npy")
        except (OSError, ValueError) as e:
            remove_path(part)
            self._full = True  # the columns after it are not tried: one warning
            log.warning("detection cache column %s not mapped in %s (%s): it and the columns after it are "
                        "filled in memory", name, self.folder, e)
            return None
        self._maps[name] = arr
        return arr

    def holds(self, name: str, arr: np.ndarray) -> bool:
        """Whether `arr` is column `name` as mapped here, whole (then its file is written)."""
        m = self._maps.get(name)
        return (m is not None and isinstance(arr, np.ndarray) and arr.dtype == m.dtype and arr.shape == m.shape
                and arr.__array_interface__["data"][0] == m.__array_interface__["data"][0])

    def sync(self, name: str) -> None:
        """Write column `name`'s pages, filled through its mapping, to the disk."""
        m = self._maps.get(name)
        if m is not None and isinstance(m, np.memmap):
            m.flush()
        cache_files.sync_file(self.folder / f"{name}.npy")

    def abandon(self) -> None:
        """The scan did not end in an entry: its files go (mapped columns stay readable)."""
        self._maps.clear()
        remove_path(self.folder)


def store(key: CacheKey, dets: Detections, variant_names: list[str],
          root: Path | None = None, pending: PendingEntry | None = None) -> tuple[Detections, list[str]] | None:
    """Write `dets` (as the loader built them) as the entry of `key` and return them read back
    memory-mapped; None (the columns stay as given) when the folder cannot be written.
    `pending`: the entry the scan filled its columns in (those it holds are written already)."""
    coded = dets.label_codes()
    if coded is None:
        if pending is not None:
            pending.abandon()
        return None  # only the loader's coded labels are cached
    if pending is None:
        pending = PendingEntry.start(key, _nbytes(dets), root)
        if pending is None:
            return None
    codes, names = coded
    offsets = dets.sample_offsets()
    runs = dets.__dict__.get("_runs")
    root, tmp = pending.root, pending.folder
    entry = _entry(root, key)
    try:
        cols: dict[str, np.ndarray] = {
            "source": dets.source, "variant": dets.variant, "label": codes,
            **{k: getattr(dets, k) for k in FLOAT_COLUMNS},
            "sample": offsets if offsets is not None else dets.sample_idx}
        meta = {
            "format": FORMAT, "key": _number(key.digest), "project": key.project, "scope": _number(key.scope),
            "created": int(time.time()),  # whole seconds: see `_number`
            "n_samples": key.n_samples, "n_detections": len(dets), "sample_runs": offsets is not None,
            "runs_dtype": str(runs.dtype) if runs is not None else None,
            "variant_names": list(variant_names), "label_names": [str(x) for x in names.tolist()],
            "dtypes": {k: np.asarray(a).dtype.name for k, a in cols.items()},
        }
        written = list(cols)
        for k in [k for k, a in cols.items() if pending.holds(k, a)]:
            del cols[k]  # filled in its file by the scan: its pages go to the disk
            pending.sync(k)
        for k in cols:  # a file the scan began, replaced: unlinked first, its mapping stays valid
            remove_path(tmp / f"{k}.npy")
        cache_files.write_arrays(tmp, cols)
        files = {f"{k}.npy": cache_files.described(tmp / f"{k}.npy", file_key(key.digest, f"{k}.npy"))
                 for k in written}
        cache_files.write_manifest(tmp, meta, file_key(key.digest), files)
        if _plain_dir(entry) or os.path.lexists(entry):
            remove_path(entry)  # an older entry of the same key that did not check out, or a link in its place
        cache_files.publish(tmp, entry)
    except (OSError, ValueError) as e:
        remove_path(tmp)
        log.warning("detection cache not written to %s (%s): the detections stay in memory", root, e)
        return None
    return load(key, root, check=False)


def entry_bytes(n_detections: int, n_samples: int) -> int:
    """About the bytes of an entry of `n_detections` as the loader scans them (codes of 1 and 2
    bytes, float32 scores and boxes) and its `n_samples` + 1 offsets."""
    return n_detections * (1 + 1 + 2 + 4 * len(FLOAT_COLUMNS)) + 8 * (n_samples + 1)


def _nbytes(dets: Detections) -> int:
    return sum(np.asarray(getattr(dets, k)).nbytes for k in (*FLOAT_COLUMNS, "source", "variant")) + 2 * len(dets)


def _entry_size(p: Path, depth: int = 1) -> int:
    """Bytes of an entry's files, with those of its folders (what is kept beside the columns)."""
    total = 0
    for f in p.iterdir():
        try:
            total += _entry_size(f, depth - 1) if depth > 0 and _plain_dir(f) else f.lstat().st_size
        except OSError:
            pass
    return total


def make_room(entry: Path, incoming: int) -> None:
    """Remove the least recently used entries other than `entry` until `incoming` more bytes,
    beside what `entry` holds, fit under the cap (for what is kept inside an entry later)."""
    try:
        _evict(entry.parent, None, incoming + _entry_size(entry), keep=entry)
    except OSError:
        pass


def _evict(root: Path, key: CacheKey | None, incoming: int, keep: Path | None = None) -> None:
    """Remove the project's other entries of the same scope as `key` (made stale by an edit),
    then the least recently used until `incoming` more bytes fit under the cap; leftovers of
    killed writers go too. The entry of `key` (or `keep`) is left alone."""
    keep = _entry(root, key) if key is not None else keep
    entries: list[tuple[float, int, Path]] = []
    for p in root.iterdir():
        if p.name.startswith(".tmp-"):
            if older_than(p, 3600):  # a writer killed mid-way
                remove_path(p)
            continue
        if not _plain_dir(p) or p == keep:
            continue
        owner = _owner(p)
        if owner is None:  # no manifest that reads as one (damaged, or not an entry): stale
            remove_path(p)
            continue
        used, project, scope = owner
        if key is not None and project == key.project and scope in (key.scope, None):  # None: before scopes
            remove_path(p)
            continue
        entries.append((used, _entry_size(p), p))
    cap = max_bytes()
    total = sum(size for _, size, _ in entries) + incoming
    for _, size, p in sorted(entries):
        if total <= cap:
            break
        remove_path(p)
        total -= size


def _number(hex_digest: str) -> int:
    """A key's hex digest in a manifest: the whole number of its first 128 bits (-1 for none).
    Whole numbers, not hex text or floats: a manifest without text that looks like a number's
    exponent (``e123``) is read by `loads_strict`'s quick path alone (its exact scan, run on every
    open, left a few objects alive each time)."""
    try:
        return int(hex_digest[:32], 16) if hex_digest else -1
    except ValueError:
        return -2


def _owner(p: Path) -> tuple[float, str | None, str | None] | None:
    """When the entry `p` was last used, and the project and scope its manifest names (scope None
    when it has none: an entry from before scopes); None when it has no manifest that reads
    strictly as an object naming a project (damaged, or not an entry)."""
    mf = p / MANIFEST
    try:
        used = mf.lstat().st_mtime
        meta = cache_files.read_manifest(mf, MANIFEST_MAX_BYTES)
    except Exception:  # noqa: BLE001 - a manifest is a file from outside: anything may be wrong with it
        return None
    project, scope = meta.get("project"), meta.get("scope")
    if not isinstance(project, str):  # no project's entry
        return None
    if isinstance(scope, int) and not isinstance(scope, bool):  # this format's
        scope = f"{scope:016x}" if scope >= 0 else ""
    return used, project, scope if isinstance(scope, str) else None


def remove_path(p: Path) -> None:
    """Remove a file, link or folder (with what it holds), quietly: a cache's leftovers."""
    try:
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.exists():
            shutil.rmtree(p, ignore_errors=True)
    except OSError:
        pass
