"""The checker's preparation kept beside the loader's detection cache entry.

At a million samples `checker.prepare` takes 2 s of every open: it reads the 13M detections
once and sorts each sample's boxes. Its result depends on the detections, the samples' order
and variants (what the detection cache entry's key covers), on each sample's objects A / B,
relation and image size, and on the code that computes it. When a dataset's detections come
from a cache entry (`detection_cache.EntryRef`), the prepared arrays (≈0.3 GB at 1M) are
written, on a thread of their own after the preparation, to a folder inside that entry named by
a digest of all of that; later opens memory-map them instead of preparing again, and the open
that wrote them switches to the written files once they are whole (`save_in_background`'s
`then`), its arrays in memory handed back.

Like the entry itself it is an optimisation only: a folder that cannot be written costs the
next open its preparation, nothing else; a missing, damaged or inconsistent one is removed
(with a one-line warning naming it and the reason, also in the dataset's
`detection_cache.rebuilt_notes`) and the preparation runs as it would without it. Its files are
written, flushed and synced into a temporary folder, with a manifest that holds every file's size
and keyed digest (`store.cache_files`), which is renamed into place; on load the manifest is
read strictly, every file's bytes must give its digest (a file zeroed behind its header, negated,
mirrored, another preparation's or truncated is refused; what the digest does not guard against
is said in `store.cache_files`), its dtype and shape must be the ones this dataset gives, and the
offsets and rows used as indices are range-checked. An entry removed or replaced by another load
takes its folder with it.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...dataset import Dataset
from ...store import cache_files
from ...store.cache_files import MANIFEST, Fields, Unusable
from ...store.detection_cache import EntryRef, make_room, older_than, remove_path
from ...util.memory import trim_heap

log = logging.getLogger(__name__)

FORMAT = 2  # 2: every file's size and keyed digest in the manifest, checked on load
PREFIX = "checker-prepared-"
_TMP = f".tmp-{PREFIX}"
MANIFEST_MAX_BYTES = 1 << 20
# the modules (a package: all of its modules) whose code decides the prepared arrays: any change of
# their source is another key
_CODE_MODULES = ("workstation.methods.spatial.checker", "workstation.methods.spatial.data",
                 "workstation.methods.spatial.types", "workstation.dataset", "workstation.types",
                 "workstation.util.grouping")

_writers: list[threading.Thread] = []
_writers_lock = threading.Lock()
WRITE_AT_EXIT_S = 60.0  # how long a leaving process waits for a write still under way


@functools.cache
def code_digest() -> str:
    """A digest of the source of the modules that compute the preparation and of numpy's
    version; in a frozen build (no sources), of the application's version and executable."""
    import numpy

    from ... import __version__

    h = hashlib.sha256(f"checker-prepared/{FORMAT}/numpy {numpy.__version__}".encode())
    try:
        for name in _CODE_MODULES:
            __import__(name)
            source = Path(sys.modules[name].__file__ or "")
            # a package: every module of it, in name order
            for path in (sorted(source.parent.glob("*.py")) if source.name == "__init__.py" else [source]):
                h.update(path.name.encode())
                h.update(path.read_bytes())
    except (OSError, ImportError, AttributeError):
        info = os.stat(sys.executable)
        h.update(f"{__version__}/{sys.executable}/{info.st_size}/{info.st_mtime_ns}".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Slot:
    """Where one dataset's preparation is (or will be) kept."""

    entry: Path  # the detection cache entry
    folder: Path  # entry / PREFIX + digest
    entry_digest: str = ""  # the entry's key (`detection_cache.CacheKey.digest`): its files' digests' key

    def key(self, name: str = "") -> bytes:
        """The digest key of the kept file `name` (the manifest's: ""): the entry's key, this
        folder's name (a digest of everything the preparation depends on) and the file's."""
        return cache_files.digest_key("checker-prepared", self.entry_digest, self.folder.name, name)


def slot(ds: Dataset, n_slots: int, inputs: tuple[np.ndarray, ...]) -> Slot | None:
    """The place of `ds`'s preparation, or None when its detections are not a cache entry's.
    `inputs`: every per-sample array the preparation reads besides the entry's (objects A / B
    as codes, relations, widths, heights)."""
    ref = EntryRef.of(ds)
    if ref is None:
        return None
    h = hashlib.sha256(code_digest().encode())
    h.update(ref.digest.encode())
    h.update(json.dumps([ds.n, len(ds.detections), n_slots, list(ds.variant_names)]).encode())
    for a in inputs:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
    return Slot(ref.folder, ref.folder / (PREFIX + h.hexdigest()[:40]), ref.digest)


def is_kept(where: Slot) -> bool:
    """Whether a preparation is kept at `where` (a whole one: its manifest is written last)."""
    return where.folder.is_dir() and not where.folder.is_symlink() and (where.folder / MANIFEST).is_file()


Expected = dict[str, tuple[tuple[int, ...], set[str]]]


def load(where: Slot, expect: Expected, n_detections: int, *, check: bool = True,
         notes: list[str] | None = None) -> dict[str, np.ndarray] | None:
    """The kept arrays, memory-mapped read-only, or None (none kept, or a folder that does not
    check out: removed, with a line saying which and why logged and added to `notes`).
    `expect`: each array's shape (-1: any length) and allowed dtype names; the offsets and rows
    must be in range (`_check_indices`). `check=False` (files just written, whose values the
    caller compares itself) skips the digests."""
    folder = where.folder
    if not folder.is_dir() or folder.is_symlink():
        if os.path.lexists(folder):  # a link or a file in its place: never followed, gone
            line = (f"the checker's kept preparation {folder} is unusable (a link or a file, not a folder): "
                    "prepared again")
            log.warning("%s", line)
            if notes is not None:
                notes.append(line)
            remove_path(folder)
        return None
    try:
        out = _read(where, expect, check)
        _check_indices(out, n_detections)
    except Exception as e:  # noqa: BLE001 - whatever is read back is a file from outside: prepared again
        line = f"the checker's kept preparation {folder} is unusable ({cache_files.reason(e)}): prepared again"
        log.warning("%s", line)
        log.debug("the unusable preparation", exc_info=True)
        if notes is not None:
            notes.append(line)
        remove_path(folder)
        return None
    return out


def _read(where: Slot, expect: Expected, check: bool = True) -> dict[str, np.ndarray]:
    folder = where.folder
    meta = cache_files.read_manifest(folder / MANIFEST, MANIFEST_MAX_BYTES)
    f = Fields(meta)
    if f.get("format", int) != FORMAT:  # another folder's manifest fails its digest, keyed by the name
        raise Unusable("its manifest is of another format")
    algorithm = cache_files.check_manifest(meta, where.key())
    present = f.strings("arrays")
    files = f.files()
    if sorted(present) != sorted(expect) or sorted(files) != sorted(f"{k}.npy" for k in expect):
        raise Unusable("its manifest names other arrays")
    out: dict[str, np.ndarray] = {}
    for name, (shape, dtypes) in expect.items():
        fname = f"{name}.npy"
        arr = cache_files.open_array(folder, fname, files[fname], where.key(fname), algorithm, check)
        same_shape = len(arr.shape) == len(shape) and all(w in (-1, a) for a, w in zip(arr.shape, shape))
        if not same_shape or not any(arr.dtype == np.dtype(t) for t in dtypes):
            raise Unusable(f"{fname}: {arr.dtype} {arr.shape} where {sorted(dtypes)} {shape} was expected")
        out[name] = np.asarray(arr)  # a plain read-only view; the mapping stays with its base
    return out


def _check_indices(arrays: dict[str, np.ndarray], n_detections: int) -> None:
    """Raise ValueError unless the offsets and rows that index other arrays are in range."""
    start, count, order = arrays["sample_start"], arrays["seg_count"], arrays["order"]
    if len(start) and (int(start[0]) != 0 or int(start[-1]) != len(order) or bool((np.diff(start) < 0).any())):
        raise Unusable("segment offsets are not ascending from 0 to the rows' count")
    if not np.array_equal(count.sum(axis=1, dtype=np.int64), np.diff(start.astype(np.int64))):
        raise Unusable("segment counts do not add up to the offsets")
    for name in ("row0", "vrow0"):
        row0 = arrays[name]
        if row0.size and (int(row0.min()) < -1 or int(row0.max()) >= n_detections):
            raise Unusable("first rows out of range")
    base = arrays.get("order_base")
    if base is not None:
        if len(base) and (int(base.min()) < 0 or int(base.max()) > n_detections):
            raise Unusable("sample rows out of range")
    elif len(order) and (int(order.min()) < 0 or int(order.max()) >= n_detections):
        raise Unusable("rows out of range")


def save_in_background(where: Slot, arrays: dict[str, np.ndarray],
                       then: Callable[[], None] | None = None) -> threading.Thread:
    """Write `arrays` to `where` on a thread of its own; returns the thread. Once they are in
    place, `then()` runs on that thread (its errors are logged). A process that leaves waits for
    it (up to `WRITE_AT_EXIT_S`, at exit: Python's own wait at exit skips a thread started from a
    thread it did not start, such as the window's worker pool's)."""
    # handed over in a list that `_save` empties: the thread's own arguments do not keep them
    t = threading.Thread(target=_save, args=(where, [dict(arrays)], then), name="checker-prepared-save")
    with _writers_lock:
        _writers[:] = [w for w in _writers if w.is_alive()]
        _writers.append(t)
    t.start()
    return t


def wait_for_writes(timeout: float | None = None) -> bool:
    """Wait for the writes started so far, up to `timeout` seconds in all; whether they ended."""
    end = None if timeout is None else time.monotonic() + timeout
    with _writers_lock:
        pending = list(_writers)
    for t in pending:
        t.join(None if end is None else max(0.0, end - time.monotonic()))
    return not any(t.is_alive() for t in pending)


def _wait_at_exit() -> None:
    if not wait_for_writes(WRITE_AT_EXIT_S):
        log.warning("the checker's preparation was still being kept at exit: not kept")


atexit.register(_wait_at_exit)


def _save(where: Slot, handed: list[dict[str, np.ndarray]], then: Callable[[], None] | None = None) -> None:
    arrays = handed.pop()
    entry = where.entry
    tmp = entry / f"{_TMP}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    try:
        make_room(entry, sum(np.asarray(a).nbytes for a in arrays.values()))  # under the cache's size cap
        tmp.mkdir(mode=0o700)  # fails when the entry is gone (evicted, rebuilt): nothing to keep it in
        cache_files.write_arrays(tmp, arrays)
        files = {f"{k}.npy": cache_files.described(tmp / f"{k}.npy", where.key(f"{k}.npy")) for k in arrays}
        cache_files.write_manifest(tmp, {"format": FORMAT, "arrays": sorted(arrays)}, where.key(), files)
        for old in entry.iterdir():  # one preparation per entry: an older one's inputs changed
            if old.name.startswith(PREFIX) and old != where.folder:
                remove_path(old)
            elif old.name.startswith(_TMP) and old != tmp and older_than(old, 3600):  # a killed writer's
                remove_path(old)
        if os.path.lexists(where.folder):
            remove_path(where.folder)  # one that did not check out, or a link in its place
        cache_files.publish(tmp, where.folder)
    except (OSError, ValueError) as e:
        remove_path(tmp)
        log.info("the checker's preparation was not kept in %s (%s): the next open prepares again", entry, e)
        return
    del arrays
    if then is not None:
        try:
            then()
        except Exception:  # noqa: BLE001 - an optimisation: the arrays in memory stay in use
            log.warning("after keeping the checker's preparation in %s", where.folder, exc_info=True)
        trim_heap()  # what `then` let go of
