"""Runs, prompts, samples and detections of a project, and loading them as a `Dataset`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..dataset import Dataset, Detections, Prompts, Samples
from ..util import collection
from ..util.grouping import remember_codes
from ..util.jsonsafe import capped, dumps
from .base import ProjectError, Repo, _arrow, _now, release_freed_memory, safe_relpath
from .detection_scan import SampleRowMap, ScanColumns, add_to_fingerprint, assemble

log = logging.getLogger(__name__)


# Each of a run's model, params and provenance is stored as JSON of at most this many bytes; larger
# parts are replaced by their size and sha256 (`util.jsonsafe.capped`).
MAX_PROVENANCE_BYTES = 256 * 1024
SCAN_BATCH = 1 << 20  # detections per Arrow batch of the load scan
# DuckDB's memory limit while a statement streams the detections table past without keeping it
STREAM_MEMORY_LIMIT = "128MB"
# Distinct labels (or variants) up to which the load's scan reads them as DuckDB ENUM codes
MAX_ENUM_VALUES = 4096
MAX_ENUM_CHARS = 1 << 20  # ... and while they are this long together (the ENUM's SQL spells them)
# A detection row's hash for the detection cache's key: its row id and every column (`t`: the
# table's alias and a dot, or nothing). Aggregated by SQL over the table, or by a scan as it reads
ROW_HASH = ("hash({t}rowid, {t}sample_id, {t}source, {t}detector, {t}variant, {t}label, {t}score, "
            "{t}x1, {t}y1, {t}x2, {t}y2)")


_loader_pool: ThreadPoolExecutor | None = None
_loader_pool_lock = threading.Lock()


def _loaders() -> ThreadPoolExecutor:
    """The threads that read a load's detections beside it: kept for the process's life (a
    thread per load would start and end with every open), a new set in a forked child."""
    global _loader_pool
    with _loader_pool_lock:
        if _loader_pool is None:
            _loader_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="load-detections")
        return _loader_pool


def _forget_loaders() -> None:
    global _loader_pool, _loader_pool_lock
    _loader_pool, _loader_pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loaders)


def _enum_type(values: Sequence[str]) -> str:
    """DuckDB's ENUM type of `values` (distinct strings) as SQL."""
    return "ENUM(" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + ")"


def _prompt_hashes(p: Prompts) -> list[str]:
    out = []
    for i in range(len(p)):
        blob = "\x1f".join([str(p.text[i]), str(p.method[i]), json.dumps(list(p.entities[i])),
                            json.dumps(p.attrs[i] or {}, sort_keys=True, default=str)])
        out.append(hashlib.sha256(blob.encode()).hexdigest()[:16])
    return out


def _object_column(col: Any, shared: bool = True, pool: np.ndarray | None = None) -> np.ndarray:
    """An Arrow string column as a numpy object array; with `shared`, one Python string per
    distinct value (a run id or prompt id repeated by many samples is one object), and that
    string is `pool`'s where `pool` (an object array of distinct strings) has the value."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if shared and col.null_count == 0 and len(col):
        enc = col.dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False)
        names = enc.dictionary.to_numpy(zero_copy_only=False)
        if pool is not None and len(pool) and len(names):
            _take_from(names, enc.dictionary, pa.array(pool, pa.string()), pool)
        out = names[codes]
        remember_codes(out, codes, [str(x) for x in names])  # group codes later read from here
        return out
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)


def _take_from(out: np.ndarray, values: Any, value_set: Any, objects: np.ndarray) -> None:
    """Set each of `out` whose Arrow value (`values`, row for row) is in the Arrow `value_set` to
    the string of `objects` (`value_set` in numpy) at the same position, in place."""
    import pyarrow.compute as pc

    hit = pc.index_in(values, value_set=value_set).to_numpy(zero_copy_only=False)
    found = ~np.isnan(hit) if hit.dtype.kind == "f" else np.ones(len(hit), bool)
    rows = np.flatnonzero(found)
    out[rows] = objects[hit[rows].astype(np.int64)]


def _ids_of(col: Any, ids: Any, id_objects: np.ndarray) -> np.ndarray:
    """`col` (Arrow strings naming rows of `ids`, such as a prompt's twin) as a numpy object
    array whose values that are in `ids` are the same Python strings as `id_objects` (the
    numpy form of `ids`): no second string object per linked prompt. Others ("" for null)
    are new strings."""
    import pyarrow.compute as pc

    col = pc.fill_null(col, "")
    out = _object_column(col, shared=False)
    _take_from(out, col, ids.combine_chunks() if hasattr(ids, "combine_chunks") else ids, id_objects)
    return out


def _samples_from_arrow(st: Any, prompt_ids: np.ndarray | None, image_path: Any) -> Samples:
    """`Samples` from the samples query's Arrow table (extra columns are ignored). Run,
    prompt and path strings repeat: one Python string per distinct value, shared; a prompt
    id is the same string as in `prompt_ids` (the loaded prompts' ids) where that has it.
    `image_path`: the table's image paths, "" for none."""
    return Samples(
        sample_id=_object_column(st.column("sample_id"), shared=False),
        run_id=_object_column(st.column("run_id")),
        prompt_id=_object_column(st.column("prompt_id"), pool=prompt_ids),
        seed=st.column("seed").to_numpy().astype(np.int64),
        width=st.column("width").to_numpy().astype(np.float64),
        height=st.column("height").to_numpy().astype(np.float64),
        image_path=_object_column(image_path, shared=False),
        has_secondary=st.column("has_secondary").to_numpy().astype(bool),
        has_perturbed=st.column("has_perturbed").to_numpy().astype(bool),
    )


class SamplesRepo(Repo):
    """Runs, prompts, samples and cached detections."""

    def runs(self) -> list[dict[str, Any]]:
        rows = self.con.execute(
            "SELECT r.run_id, r.method, r.model, r.params, r.provenance, r.source, r.created_at, "
            "(SELECT count(*) FROM samples s WHERE s.run_id = r.run_id) AS n "
            "FROM runs r ORDER BY r.created_at, r.run_id").fetchall()
        out = []
        for rid, method, model, params, prov, source, created, n in rows:
            out.append({"run_id": rid, "method": method, "model": json.loads(model or "null"),
                        "params": json.loads(params or "{}"), "provenance": json.loads(prov or "{}"),
                        "source": source, "created_at": created, "samples": int(n)})
        return out

    def run_ids(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT run_id FROM runs ORDER BY created_at, run_id").fetchall()]

    def add_run(self, run_id: str, *, method: str = "", model: Any = None, params: Any = None,
                provenance: Any = None, source: str = "") -> None:
        self._check_writable()
        if not run_id:
            raise ProjectError("a run needs a non-empty id")
        with self.transaction():
            if self.con.execute("SELECT 1 FROM runs WHERE run_id=?", [run_id]).fetchone():
                raise ProjectError(f"run {run_id!r} already exists in the project; choose another --run-id")
            self.con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                [run_id, method, dumps(capped(model, MAX_PROVENANCE_BYTES)),
                 dumps(capped(params or {}, MAX_PROVENANCE_BYTES)),
                 dumps(capped(provenance or {}, MAX_PROVENANCE_BYTES)), source, _now()])

    def add_prompts(self, prompts: Prompts) -> int:
        """Insert prompts not yet present (same id and same text); a conflicting text is an error."""
        self._check_writable()
        if len(prompts) == 0:
            return 0
        with self.transaction():
            existing = dict(self.con.execute("SELECT prompt_id, text FROM prompts").fetchall())
            keep = []
            for i, (pid, text) in enumerate(zip(prompts.prompt_id.tolist(), prompts.text.tolist())):
                if pid in existing:
                    if existing[pid] != text:
                        raise ProjectError(
                            f"prompt {pid!r} is already in the project with a different text "
                            f"({existing[pid]!r} vs {text!r})")
                else:
                    keep.append(i)
            if not keep:
                return 0
            p = prompts.take(np.array(keep, np.int64))
            self._insert("prompts", {
                "prompt_id": p.prompt_id, "suite": p.suite, "method": p.method, "text": p.text,
                "entities": [list(e) for e in p.entities],
                "attrs": np.array([dumps(a or {}, sort_keys=True) for a in p.attrs], dtype=object),
                "twin_id": p.twin_id, "group_id": p.group_id,
                "content_hash": np.array(_prompt_hashes(p), dtype=object),
            })
            return len(keep)

    def add_dataset(self, ds: Dataset, *, detector_names: Sequence[str] = ("primary", "secondary"),
                    truth: Sequence[str | None] | None = None) -> None:
        """Insert the samples and detections of `ds` (its runs must exist). Transactional."""
        self._check_writable()
        s = ds.samples
        n = len(s)
        if n == 0:
            return
        ids = s.sample_id.tolist()
        if len(set(ids)) != n:
            seen: set[str] = set()
            dup = next(x for x in ids if x in seen or seen.add(x))  # type: ignore[func-returns-value]
            raise ProjectError(f"duplicate sample id {dup!r}")
        paths = [safe_relpath(self.folder, p) if p else "" for p in s.image_path.tolist()]
        with self.transaction():
            self.add_prompts(ds.prompts)
            known_runs = set(self.run_ids())
            for r in set(s.run_id.tolist()):
                if r not in known_runs:
                    raise ProjectError(f"run {r!r} does not exist; add it first")
            pids = set(r[0] for r in self.con.execute("SELECT prompt_id FROM prompts").fetchall())
            for i, pid in enumerate(s.prompt_id.tolist()):
                if pid not in pids:
                    raise ProjectError(f"sample {ids[i]!r} refers to unknown prompt {pid!r}")
            self.con.register("_new_ids", _arrow({"sample_id": s.sample_id}))
            try:
                clash = self.con.execute(
                    "SELECT n.sample_id FROM _new_ids n JOIN samples s USING (sample_id) LIMIT 1").fetchone()
            finally:
                self.con.unregister("_new_ids")
            if clash:
                raise ProjectError(f"sample {clash[0]!r} is already in the project")
            base_row = self.con.execute("SELECT coalesce(max(ord) + 1, 0) FROM samples").fetchone()
            assert base_row is not None
            base = base_row[0]
            self._insert("samples", {
                "sample_id": s.sample_id, "run_id": s.run_id, "prompt_id": s.prompt_id,
                "seed": s.seed, "image_path": np.array(paths, dtype=object), "width": s.width,
                "height": s.height,
                "has_secondary": s.has_secondary, "has_perturbed": s.has_perturbed,
                "truth": np.array(list(truth) if truth is not None else [None] * n, dtype=object),
                "ord": np.arange(base, base + n, dtype=np.int64),
            })
            self.add_detections(ds, detector_names=detector_names)

    def add_detections(self, ds: Dataset, *, detector_names: Sequence[str] = ("primary", "secondary"),
                       replace: bool = False) -> None:
        """Insert the detections of `ds` for its samples (already in the project)."""
        self._check_writable()
        d = ds.detections
        if len(d) == 0 and len(ds.variant_names) <= 1:
            return
        names = np.array(list(ds.variant_names), dtype=object)
        with self.transaction():
            self.record_variants(ds.variant_names)
            if replace:
                self.con.register("_ids", _arrow({"sample_id": ds.samples.sample_id}))
                try:
                    self.con.execute("DELETE FROM detections WHERE sample_id IN (SELECT sample_id FROM _ids)")
                finally:
                    self.con.unregister("_ids")
            self._insert("detections", {
                "sample_id": ds.samples.sample_id[d.sample_idx],
                "source": d.source,
                "detector": np.array(list(detector_names), dtype=object)[d.source.astype(np.int64)],
                "variant": names[d.variant.astype(np.int64)],
                "label": d.label, "score": d.score, "x1": d.x1, "y1": d.y1, "x2": d.x2, "y2": d.y2,
            })

    def record_variants(self, names: Sequence[str]) -> None:
        """Record image variants a detector ran on (even where it found nothing)."""
        self._check_writable()
        with self.transaction():
            for name in names:
                self.con.execute("INSERT OR IGNORE INTO image_variants VALUES (?)", [name])

    def present(self, sample_ids: Sequence[str], *, without_run: str | None = None) -> np.ndarray:
        """Which of ``sample_ids`` the project holds (bool per id); with ``without_run``, as if
        that run were removed too."""
        keys = [str(x) for x in sample_ids]
        if not keys:
            return np.zeros(0, bool)
        sql = "SELECT sample_id FROM samples WHERE sample_id IN (SELECT unnest(?))"
        params: list[Any] = [sorted(set(keys))]
        if without_run is not None:
            sql += " AND run_id <> ?"
            params.append(str(without_run))
        with self._lock:
            have = {r[0] for r in self.con.execute(sql, params).fetchall()}
        return np.fromiter((k in have for k in keys), bool, len(keys))

    def count(self) -> int:
        with self._lock:
            row = self.con.execute("SELECT count(*) FROM samples").fetchone()
        assert row is not None
        return int(row[0])

    def load_dataset(self, runs: Sequence[str] | None = None, method: str | None = None,
                     meanwhile: Callable[[Dataset], object] | None = None,
                     progress: Callable[[int, int], object] | None = None) -> Dataset:
        """All samples (or those of `runs`, or whose prompt belongs to `method`) with their
        detections, in project order. With `method`, only that method's prompts are loaded.
        `meanwhile(shell)` runs on the loading thread while the detections are read: `shell`
        holds the loaded samples and prompts and no detections, and what `meanwhile` puts in its
        `cache` is carried over to the dataset returned (so it must derive from the samples and
        prompts alone). An error it raises is left for the caller to meet again later: it is
        logged, and the load goes on.

        `progress(done, total)`, when the detections are scanned from the table (not when they
        are read from the cache), is called on the scanning thread after each batch: detections
        read so far and the table's count (-1 where the count is not known). An exception it
        raises ends the load (the way to cancel it): nothing is written to the cache, the
        project is as it was, and the exception reaches the caller."""
        ds = self._load_dataset(runs, method, meanwhile, progress)
        # The scan leaves the table's blocks in DuckDB's buffer pool (~50 MB per 1.3M detections)
        # and freed buffers in its allocator: a brief low memory limit evicts the blocks, the next
        # statement flushes the allocator; then the C heap and Arrow's pool are trimmed.
        with self._lock:
            try:
                self.con.execute("SET memory_limit = '16MB'")
                self.con.execute("SELECT 1").fetchall()
            finally:
                self.con.execute("RESET memory_limit")
        release_freed_memory()
        return ds

    def _load_dataset(self, runs: Sequence[str] | None, method: str | None = None,
                      meanwhile: Callable[[Dataset], object] | None = None,
                      progress: Callable[[int, int], object] | None = None) -> Dataset:
        import pyarrow.compute as pc

        conds: list[str] = []
        params: list[Any] = []
        if runs:
            conds.append("s.run_id IN (SELECT unnest(?))")
            params.append(list(runs))
        if method:
            conds.append("p.method = ?")
            params.append(method)
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        # a relation's Arrow output: a cursor's (`execute`) copies every row once more
        with self._lock:
            st = self.con.raw.sql(
                f"SELECT s.sample_id, s.run_id, s.prompt_id, s.seed, "
                f"s.width, s.height, s.image_path, s.has_secondary, s.has_perturbed, "
                f"hash(s.sample_id) AS h1, hash(s.sample_id || chr(31)) AS h2 "
                f"FROM samples s JOIN prompts p USING (prompt_id) {where} ORDER BY s.ord",
                params=params or None).to_arrow_table()
            prompt_table = self._prompt_table(method)
        # the detections (DuckDB's scan and numpy, mostly outside the GIL) on a second thread
        # while this one builds the prompts' and samples' Python strings; the connection is
        # that thread's until it ends
        future: Future[tuple[Detections, list[str], Any]] = Future()
        notes: list[str] = []  # cache entries found unusable and rebuilt (`detection_cache.rebuilt_notes`)
        # no automatic collection meanwhile: one triggered on the second thread could free a
        # closed window's Qt objects there (see util.collection)
        with collection.paused():
            if getattr(self._lock, "_is_owned", lambda: False)():
                # this thread holds the connection (a transaction): a second thread would wait
                # for it forever, so the detections are read here first
                try:
                    future.set_result(self._load_detections(st, where, params, progress, notes))
                except Exception as e:  # noqa: BLE001 - raised below, as from the second thread
                    future.set_exception(e)
            else:
                future = _loaders().submit(self._load_detections, st, where, params, progress, notes)
            try:
                prompts = self._prompts_of(prompt_table)
                del prompt_table
                paths = pc.fill_null(st.column("image_path"), "")
                samples = _samples_from_arrow(st, prompts.prompt_id, paths)  # a prompt id is one string in both
                carried: dict[str, Any] = {}  # the cache `meanwhile` filled
                if meanwhile is not None:
                    shell = Dataset(samples, Detections.empty(), prompts, ())
                    try:
                        meanwhile(shell)
                    except Exception:  # noqa: BLE001 - met again where its result is asked for
                        log.debug("work beside the detections' read failed", exc_info=True)
                    carried = shell.cache
                    del shell
            except BaseException:
                wait([future])  # nothing left using the connection when the error is raised
                raise
            wait([future])
        dets, names, key = future.result()
        del future
        sample_ids = st.column("sample_id")
        del st
        ds = Dataset(samples, dets, prompts, tuple(names))
        ds.cache.update(carried)
        if notes:
            from .detection_cache import NOTES_KEY

            ds.cache[NOTES_KEY] = notes
        # the Arrow forms of the columns a view queries as text, as read (see Dataset.keep_arrow)
        ds.keep_arrow("sample_id", sample_ids)
        ds.keep_arrow("image_path", paths)
        if key is not None:  # the checker keeps its preparation beside the entry
            from .detection_cache import EntryRef

            EntryRef.attach(ds, key)
        return ds

    def _load_detections(self, st: Any, where: str, params: list[Any],
                         progress: Callable[[int, int], object] | None = None,
                         notes: list[str] | None = None) -> tuple[Detections, list[str], Any]:
        """The detections of the samples in `st` (the samples query's Arrow table, with each
        sample id's two hashes), rows mapped to `st`'s rows, the variant names, and the cache
        key they were read from (None when they were not). From a million detections (see
        `detection_cache`) they are memory-mapped from the user's cache folder, written there
        by the first load after any change of the project; an entry that does not check out is
        rebuilt, and a line saying so is added to `notes`."""
        from . import detection_cache

        scope = hashlib.sha256(json.dumps([where, [str(p) for p in params]]).encode()).hexdigest()[:16]
        family, n_detections = self._detection_cache_family(st)
        if family is None:
            dets, names, _ = self._scan_detections(st, where, params, progress=progress)
            return dets, names, None
        key = None
        if detection_cache.may_hold(family):  # an entry may be this load's: the table's aggregates decide
            key = self._detection_cache_key(family, st, scope)
            hit = detection_cache.load(key, notes=notes)
            if hit is not None:
                return (*hit, key)
        # the scan fills the entry's columns in their files (see PendingEntry); until it has
        # read the rows, only the key's family is known (older entries of the scope go)
        incoming = detection_cache.entry_bytes(n_detections, st.num_rows)
        pending = detection_cache.PendingEntry.start(
            key or detection_cache.make_key(self.folder, family, (), st.num_rows, scope), incoming)
        try:
            dets, names, scanned = self._scan_detections(st, where, params, pending, aggregate=True,
                                                         progress=progress)
            if scanned is not None:  # the key of the rows the scan read
                if scanned[0] != n_detections:  # the table changed since its count was read
                    family, _ = self._detection_cache_family(st, scanned[0])
                key = (detection_cache.make_key(self.folder, family, scanned, st.num_rows, scope)
                       if family is not None else None)
            elif key is None:
                key = self._detection_cache_key(family, st, scope)
        except BaseException:
            if pending is not None:
                pending.abandon()
            raise
        if key is not None and len(dets):
            stored = detection_cache.store(key, dets, names, pending=pending)
            if stored is not None:
                return (*stored, key)
        elif pending is not None:
            pending.abandon()
        return dets, names, None

    def _detection_cache_family(self, st: Any, count: int | None = None) -> tuple[str | None, int]:
        """The family (`detection_cache.key_family`) of the cache keys of a load of `st`'s
        samples, or None when the cache is off or the project has fewer detections than its
        threshold; and the project's count of detections (`count`: as a scan counted them)."""
        from . import detection_cache

        least = detection_cache.min_detections()
        if least is None:
            return None, 0
        with self._lock:
            if count is None:
                count = int((self.con.execute("SELECT count(*) FROM detections").fetchone() or (0,))[0])
            if count == 0 or count < least:
                return None, count
            recorded = [str(r[0]) for r in self.con.execute("SELECT name FROM image_variants").fetchall()]
        h1 = np.asarray(st.column("h1").to_numpy(zero_copy_only=False), np.uint64)
        h2 = np.asarray(st.column("h2").to_numpy(zero_copy_only=False), np.uint64)
        return detection_cache.key_family(h1, h2, recorded, count), count

    def _detection_cache_key(self, family: str, st: Any, scope: str = "") -> Any:
        """The detection cache's key of `family` for a load of `st`'s samples (`scope`: the
        load's selection, see `detection_cache.make_key`), with the detections table's
        aggregates read by a pass over every row."""
        from . import detection_cache

        with self._lock:
            # every row, its position included: any insert, delete, edit or reordering changes it.
            # Aggregates need no working memory: a low limit keeps DuckDB from keeping the table's
            # blocks (≈0.5 GB at 13M detections) while they stream past
            self.con.execute(f"SET memory_limit = '{STREAM_MEMORY_LIMIT}'")
            try:
                row = self.con.execute(
                    f"SELECT count(*), bit_xor(h), sum(h::HUGEINT) FROM (SELECT {ROW_HASH.format(t='')} AS h "
                    "FROM detections)").fetchone()
            finally:
                self.con.execute("RESET memory_limit")
        return detection_cache.make_key(self.folder, family, tuple(row or ()), st.num_rows, scope)

    def _scan_detections(self, st: Any, where: str, params: list[Any], pending: Any = None,
                         aggregate: bool = False, progress: Callable[[int, int], object] | None = None,
                         ) -> tuple[Detections, list[str], tuple[int, int, int] | None]:
        """`_load_detections` read from the project's detections table; the columns a cache
        entry keeps are filled in `pending`'s files where it can map them. Third, with
        `aggregate`: the table's fingerprint for the cache's key (count, exclusive or and sum of
        `ROW_HASH`), aggregated from the rows read, when the scan read every row of the table;
        else None. `progress`: see `load_dataset`. The steps: `detection_scan`."""
        import pyarrow.compute as pc

        from . import detection_cache

        hashed = self._sample_hashes(st)
        floats = detection_cache.FLOAT_COLUMNS
        if hashed is not None:
            source = "SELECT hash(d.sample_id) AS h1, hash(d.sample_id || chr(31)) AS h2, {cols} FROM detections d"
            sql_params = None
            sample_rows = SampleRowMap(hashed)
        else:
            source = (f"WITH s AS (SELECT s.sample_id, (row_number() OVER (ORDER BY s.ord) - 1)::BIGINT AS row "
                      f"FROM samples s JOIN prompts p USING (prompt_id) {where}) "
                      "SELECT s.row, d.rowid AS rid, {cols} FROM detections d JOIN s USING (sample_id)")
            sql_params = params or None
        small = hashed is not None and st.num_rows < 2**31 - 1  # a sample row fits in 4 bytes
        dtypes = {"row": np.int32 if small else np.int64, "variant": np.int8, "label": np.int16, "source": np.int8,
                  **{k: np.float32 for k in floats}}
        if pending is not None and hashed is not None and st.num_rows != self.count():
            # some of the project's samples: the scan's columns (every detection of the table)
            # are not the entry's, which holds the loaded samples' only; written after instead
            pending = None
        columns = ScanColumns(dtypes, floats, pending, in_place=hashed is not None)
        aggregate = aggregate and hashed is not None  # the join reads the loaded samples' rows only
        fingerprint = [0, 0, 0]  # rows, exclusive or and sum of their ROW_HASH
        n_rid = 1
        with self._lock:
            plan = self._scan_plan()
            expected = plan["count"] if hashed is not None else -1  # detections the scan reads, if known
            if hashed is None:
                n_rid = int((self.con.execute("SELECT coalesce(max(rowid) + 1, 1) FROM detections").fetchone()
                             or (1,))[0])
            for attempt, cols in enumerate(self._scan_columns_sql(plan, columns.dicts, floats)):
                columns.start(expected)
                fingerprint[:] = [0, 0, 0]
                complete = True
                # a plain scan needs no working memory: a low limit keeps DuckDB from caching the
                # table's blocks while they stream past (and makes the scan faster)
                if hashed is not None:
                    self.con.execute(f"SET memory_limit = '{STREAM_MEMORY_LIMIT}'")
                try:
                    read = [cols] + ([f"{ROW_HASH.format(t='d.')} AS fp"] if aggregate else [])
                    if progress is not None:
                        progress(0, expected)
                    reader = self.con.raw.sql(source.format(cols=", ".join(read)),
                                              params=sql_params).to_arrow_reader(SCAN_BATCH)
                    try:
                        done = 0
                        for batch in reader:
                            if attempt == 0 and batch.num_rows and not pc.all(batch.column("exact")).as_py():
                                complete = False
                                break
                            if aggregate:
                                add_to_fingerprint(fingerprint, batch)
                            if hashed is not None:
                                row = sample_rows.rows(batch)
                            else:
                                row = (batch.column("row").to_numpy(zero_copy_only=False).astype(np.int64)
                                       * n_rid + batch.column("rid").to_numpy(zero_copy_only=False))
                            columns.add(batch, row)
                            del row
                            done += batch.num_rows
                            if progress is not None:
                                progress(done, expected)
                    finally:
                        reader.close()  # a scan given up (an error, a cancel) ends here
                    del reader
                finally:
                    if hashed is not None:
                        self.con.execute("RESET memory_limit")
                if complete:
                    break
            columns.finish()
            recorded = {r[0] for r in self.con.execute("SELECT name FROM image_variants").fetchall()}
        dets, names = assemble(columns, recorded, n_rid, st.num_rows)
        return dets, names, (tuple(fingerprint) if aggregate else None)  # type: ignore[return-value]

    @staticmethod
    def _scan_columns_sql(plan: dict[str, Any], dicts: dict[str, dict[str, int]],
                          floats: tuple[str, ...]) -> tuple[str, str]:
        """The scan's columns as SQL, for its first pass and for a second one. Labels and variants
        as DuckDB ENUMs of their distinct values where `plan` lists them (their values go into
        `dicts` in that order): Arrow hands their codes over, no string per detection. Scores and
        boxes as FLOAT in the first, with a flag that every one of a row is exactly that; the
        first batch with a row that is not starts the scan again, reading them as DOUBLE."""
        for k in ("variant", "label"):
            for x in plan[k] or ():
                dicts[k].setdefault(x, len(dicts[k]))
        text = ", ".join(f"coalesce(d.{k}, '')" + (f"::{_enum_type(plan[k])}" if plan[k] else "") + f" AS {k}"
                         for k in ("variant", "label"))
        exact = " AND ".join(f"coalesce(TRY_CAST(d.{k} AS FLOAT)::DOUBLE = d.{k}, d.{k} IS NULL)" for k in floats)
        narrow = ", ".join(f"TRY_CAST(d.{k} AS FLOAT) AS {k}" for k in floats) + f", {exact} AS exact"
        return (f"d.source, {text}, {narrow}", f"d.source, {text}, " + ", ".join(f"d.{k}" for k in floats))

    def _scan_plan(self) -> dict[str, Any]:
        """The detections table's row count ("count") and, for "variant" and "label", their
        distinct values sorted (null read as ""), or None when there are more than
        `MAX_ENUM_VALUES` or they are longer than `MAX_ENUM_CHARS` together (the caller holds
        the lock)."""
        v, l = ("list(DISTINCT coalesce({0}, '') ORDER BY coalesce({0}, ''))".format(k) for k in ("variant", "label"))
        row = self.con.execute(
            f"SELECT n, CASE WHEN len(v) <= {MAX_ENUM_VALUES} THEN v END, CASE WHEN len(l) <= {MAX_ENUM_VALUES} "
            f"THEN l END FROM (SELECT count(*) AS n, {v} AS v, {l} AS l FROM detections)").fetchone()
        n, variants, labels = row if row is not None else (0, None, None)

        def names(values: Any) -> list[str] | None:
            out = None if values is None else [str(x) for x in values]
            return out if out is not None and sum(map(len, out)) <= MAX_ENUM_CHARS else None

        return {"count": int(n), "variant": names(variants), "label": names(labels)}

    def _sample_hashes(self, st: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(sorted first hashes, their rows, first hash by row, second hash by row) of the loaded
        samples' ids (`st`'s h1 and h2), or None when the first hash is not unique over the
        project's samples (checked on the loaded ones when they are all of them)."""
        def distinct(sorted_h: np.ndarray) -> bool:
            return len(sorted_h) < 2 or bool((sorted_h[1:] != sorted_h[:-1]).all())

        h1 = np.asarray(st.column("h1").to_numpy(), np.uint64)
        h2 = np.asarray(st.column("h2").to_numpy(), np.uint64)
        o = np.argsort(h1)
        h_sorted = h1[o]
        if not distinct(h_sorted):
            return None
        with self._lock:
            n_all = int((self.con.execute("SELECT count(*) FROM samples").fetchone() or (0,))[0])
            allh = (self.con.execute("SELECT hash(sample_id) FROM samples").to_arrow_table().column(0)
                    if n_all != len(h1) else None)
        if allh is not None:
            if not distinct(np.sort(np.asarray(allh.to_numpy(), np.uint64))):
                return None
        return h_sorted, o.astype(np.int64), h1, h2

    def load_prompts(self, method: str | None = None) -> Prompts:
        """The project's prompts (of one method, when given), ordered by id.

        Read through Arrow: repeated values (suites, methods, entity lists, attrs JSON) are
        decoded once per distinct value, and prompts with the same attrs share one dict (as
        `Prompts.take` leaves them): nothing changes a prompt's attrs in place."""
        with self._lock:
            t = self._prompt_table(method)
        return self._prompts_of(t)

    def _prompt_table(self, method: str | None) -> Any:
        """The prompts query's Arrow table for `load_prompts` (the caller holds the lock)."""
        return self.con.raw.sql(  # a relation's Arrow output (see `_load_dataset`)
            "SELECT prompt_id, text, suite, method, to_json(entities)::VARCHAR AS ents, attrs, twin_id, "
            "group_id FROM prompts "
            + ("WHERE method = ? " if method else "") + "ORDER BY prompt_id",
            params=[method] if method else None).to_arrow_table()

    @staticmethod
    def _prompts_of(t: Any) -> Prompts:
        """`Prompts` of the prompts query's Arrow table (no query: any thread)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if t.num_rows == 0:
            return Prompts.empty()

        def strs(name: str, shared: bool) -> np.ndarray:
            return _object_column(pc.fill_null(t.column(name), ""), shared=shared)

        def decoded(name: str, decode: Any) -> np.ndarray:
            col = t.column(name)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            enc = pc.fill_null(col, "").dictionary_encode()
            values = [decode(v) for v in enc.dictionary.to_pylist()]
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out[enc.indices.to_numpy(zero_copy_only=False)]

        ents = decoded("ents", lambda v: tuple(str(x).lower() for x in (json.loads(v) or ())) if v else ())
        attrs = decoded("attrs", lambda v: dict(json.loads(v) or {}) if v else {})
        prompt_id = strs("prompt_id", False)
        return Prompts(prompt_id, strs("text", False), strs("suite", True),
                       strs("method", True), ents, attrs, _ids_of(t.column("twin_id"), t.column("prompt_id"), prompt_id),
                       strs("group_id", True))  # a pair's prompts share their group id

    def prompt_methods(self) -> dict[str, int]:
        """Number of prompts per method."""
        return {m: int(n) for m, n in self.con.execute(
            "SELECT method, count(*) FROM prompts GROUP BY method ORDER BY method").fetchall()}

    def truth(self) -> dict[str, Any]:
        """Ground truth recorded for procedural samples (demo), by sample id."""
        return {sid: json.loads(t) for sid, t in
                self.con.execute("SELECT sample_id, truth FROM samples WHERE truth IS NOT NULL").fetchall()}

    def image_file(self, rel_path: str) -> Path:
        return self.folder / rel_path
