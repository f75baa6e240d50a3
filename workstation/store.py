"""The project store: one folder with a DuckDB file and the project's images.

A project folder holds `project.duckdb`, `images/` and `jobs/`. Image paths in the
database are relative to the folder and never escape it. Every write that belongs
together runs in one transaction: an import lands whole or not at all. A label is
committed before `add_label` returns, so an acknowledged label survives a killed process.

DuckDB lets one process hold a database file for writing. A second process gets
`ProjectLocked`, and may open a read-only snapshot instead (`Project.open_snapshot`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import CheckerConfig
from .dataset import Dataset, Detections, Prompts, Samples
from .types import (
    ORIGINAL_NAME,
    REASONS,
    RELATION_CODE,
    RELATIONS,
    VERDICT_CODE,
    VERDICTS,
    WorkstationError,
)

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

    from .checker import StorableVerdicts

DB_NAME = "project.duckdb"
SCHEMA_VERSION = 2
# Each of a run's model, params and provenance is stored as JSON of at most this many bytes; larger
# parts are replaced by their size and sha256 (`util.jsonsafe.capped`).
MAX_PROVENANCE_BYTES = 256 * 1024


class ProjectError(WorkstationError):
    pass


class ProjectLocked(ProjectError):
    """Another process holds the project for writing."""


class ProjectReadOnly(ProjectError):
    """The project's folder or database file cannot be written (a read-only folder or medium)."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


# Schema versions: each entry migrates from version i to i+1.
_MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, method VARCHAR, model VARCHAR, params VARCHAR,
            provenance VARCHAR, source VARCHAR, created_at TIMESTAMP)""",
        """CREATE TABLE prompts (
            prompt_id VARCHAR PRIMARY KEY, suite VARCHAR, text VARCHAR, relation VARCHAR,
            object_a VARCHAR, object_b VARCHAR, counterfactual_id VARCHAR, pair_id VARCHAR,
            content_hash VARCHAR)""",
        """CREATE TABLE samples (
            sample_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, prompt_id VARCHAR NOT NULL,
            seed BIGINT, image_path VARCHAR, width DOUBLE, height DOUBLE,
            recorded_stability DOUBLE, has_secondary BOOLEAN, has_perturbed BOOLEAN,
            truth VARCHAR, ord BIGINT)""",
        """CREATE TABLE detections (
            sample_id VARCHAR NOT NULL, source TINYINT, detector VARCHAR, variant VARCHAR,
            label VARCHAR, score DOUBLE, x1 DOUBLE, y1 DOUBLE, x2 DOUBLE, y2 DOUBLE)""",
        """CREATE TABLE checker_configs (
            config_id INTEGER PRIMARY KEY, name VARCHAR, content_hash VARCHAR, params VARCHAR,
            note VARCHAR, parent_id INTEGER, created_at TIMESTAMP)""",
        """CREATE TABLE verdicts (
            config_id INTEGER NOT NULL, sample_id VARCHAR NOT NULL, verdict VARCHAR,
            reason VARCHAR, reason_text VARCHAR, conf DOUBLE, c_detection DOUBLE,
            c_geometry DOUBLE, c_stability DOUBLE, c_agreement DOUBLE, delta DOUBLE,
            iou_ab DOUBLE)""",
        """CREATE SEQUENCE label_event_seq START 1""",
        """CREATE TABLE label_events (
            event_id BIGINT PRIMARY KEY DEFAULT nextval('label_event_seq'),
            sample_id VARCHAR NOT NULL, annotator VARCHAR NOT NULL, verdict VARCHAR,
            rating TINYINT, notes VARCHAR, created_at TIMESTAMP, audit_set_id INTEGER,
            source VARCHAR)""",
        """CREATE TABLE audit_sets (
            audit_set_id INTEGER PRIMARY KEY, name VARCHAR, params VARCHAR, blind BOOLEAN,
            created_at TIMESTAMP)""",
        """CREATE TABLE audit_items (
            audit_set_id INTEGER, position INTEGER, sample_id VARCHAR, is_recheck BOOLEAN)""",
        """CREATE TABLE jobs (
            job_id VARCHAR PRIMARY KEY, kind VARCHAR, spec VARCHAR, status VARCHAR,
            created_at TIMESTAMP, updated_at TIMESTAMP, done BIGINT, total BIGINT,
            message VARCHAR)""",
        """CREATE TABLE saved_filters (name VARCHAR PRIMARY KEY, spec VARCHAR)""",
        """CREATE TABLE settings (key VARCHAR PRIMARY KEY, value VARCHAR)""",
        """CREATE INDEX det_sample ON detections(sample_id)""",
        """CREATE INDEX verdict_cfg ON verdicts(config_id, sample_id)""",
        """CREATE INDEX label_sample ON label_events(sample_id)""",
    ],
    # 1 -> 2: image variants a detector ran on are recorded even when it found nothing there,
    # so "no detections on the blurred copy" is not mistaken for "never detected".
    [
        """CREATE TABLE image_variants (name VARCHAR PRIMARY KEY)""",
        """INSERT INTO image_variants SELECT DISTINCT variant FROM detections WHERE variant IS NOT NULL""",
    ],
]


@dataclass
class LabelRow:
    sample_id: str
    annotator: str
    verdict: str | None
    rating: int | None
    notes: str | None
    created_at: datetime
    event_id: int


def _arrow(columns: dict[str, Any]):  # -> pyarrow.Table
    import pyarrow as pa

    return pa.table({k: (v.tolist() if isinstance(v, np.ndarray) and v.dtype == object else v)
                     for k, v in columns.items()})


def release_freed_memory() -> None:
    """Hand memory freed by a large load back to the system. glibc keeps freed heap pages (how
    many varies from run to run: 0 to 150 MB after 1.3M detections) until asked to trim."""
    import ctypes
    import sys

    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - best effort
        pass
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def _prompt_hashes(p: Prompts) -> list[str]:
    import hashlib

    out = []
    for i in range(len(p)):
        blob = "\x1f".join(str(x) for x in (p.text[i], RELATIONS[p.relation[i]], p.label_a[i], p.label_b[i]))
        out.append(hashlib.sha256(blob.encode()).hexdigest()[:16])
    return out


def safe_relpath(folder: Path, path: str) -> str:
    """Return `path` relative to `folder`; raise if it escapes the folder."""
    p = Path(path)
    full = (folder / p).resolve() if not p.is_absolute() else p.resolve()
    try:
        rel = full.relative_to(folder.resolve())
    except ValueError:
        raise ProjectError(f"image path {path!r} escapes the project folder {folder}") from None
    return rel.as_posix()


class _Result:
    """A query result read to the end, so the connection is free for the next statement."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._cur.fetchall()

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._cur.fetchall()
        return rows[0] if rows else None

    def to_arrow_table(self) -> Any:
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Arrow output on a DB-API result")
            return self._cur.to_arrow_table()

    def df(self) -> Any:
        return self._cur.df()


class _Connection:
    """DuckDB connection whose `execute` results never stay half-read."""

    def __init__(self, con: "duckdb.DuckDBPyConnection") -> None:
        self.raw = con

    def execute(self, sql: str, params: Any = None) -> _Result:
        return _Result(self.raw.execute(sql, params) if params is not None else self.raw.execute(sql))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


class Project:
    """An open project. Use `Project.create`, `Project.open` or `Project.open_snapshot`."""

    def __init__(self, folder: Path, con: "duckdb.DuckDBPyConnection", read_only: bool,
                 snapshot_dir: Path | None = None) -> None:
        self.folder = folder
        self.con = _Connection(con)
        self.read_only = read_only
        self._snapshot_dir = snapshot_dir
        self._lock = threading.RLock()
        self._in_tx = False

    # ---- opening ------------------------------------------------------------------------
    @classmethod
    def create(cls, folder: str | Path, exist_ok: bool = False) -> "Project":
        folder = Path(folder)
        db = folder / DB_NAME
        if db.exists():
            if not exist_ok:
                raise ProjectError(f"a project already exists in {folder}")
            return cls.open(folder)
        if folder.exists() and not folder.is_dir():
            raise ProjectError(f"{folder} is a file, not a folder")
        # a folder that cannot be written (read-only, permission, a full disk) gives one message
        # and leaves nothing behind: the database file and the folders made here are removed
        made = [p for p in reversed((folder, *folder.parents)) if not p.exists()]
        if not (folder / "images").exists():
            made.append(folder / "images")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "images").mkdir(exist_ok=True)
            return cls.open(folder)
        except (OSError, ProjectError) as e:
            for name in (DB_NAME, DB_NAME + ".wal"):  # there was no database before this call
                try:
                    (folder / name).unlink(missing_ok=True)
                except OSError:
                    pass
            for p in reversed(made):
                try:
                    p.rmdir()
                except OSError:
                    pass
            if isinstance(e, ProjectError):
                raise
            from .util.output import describe_os_error

            raise ProjectError(f"cannot create a project in {folder}: {describe_os_error(e)}") from None

    @classmethod
    def open(cls, folder: str | Path, read_only: bool = False) -> "Project":
        import duckdb

        folder = Path(folder)
        db = folder / DB_NAME
        if not folder.is_dir():
            raise ProjectError(f"project folder not found: {folder}")
        if read_only and not db.exists():
            raise ProjectError(f"no project in {folder} (missing {DB_NAME})")
        if not read_only and (not os.access(folder, os.W_OK | os.X_OK)
                              or (db.exists() and not os.access(db, os.W_OK))):
            raise ProjectReadOnly(f"the project {folder} is in a folder that cannot be written (read-only "
                                  "medium or no permission); open it read-only to browse it")
        try:
            con = duckdb.connect(str(db), read_only=read_only)
        except duckdb.IOException as e:
            msg = str(e)
            low = msg.lower()
            if not read_only and ("read-only file system" in low or "permission denied" in low):
                raise ProjectReadOnly(f"the project {folder} cannot be written ({msg.splitlines()[0]}); "
                                      "open it read-only to browse it") from None
            if "lock" in low:
                raise ProjectLocked(
                    f"the project {folder} is open in another process; close it there, "
                    "or open a read-only snapshot"
                ) from None
            raise ProjectError(f"cannot open project {folder}: {msg}") from None
        except duckdb.Error as e:
            raise ProjectError(f"cannot open project {folder}: {e}") from None
        p = cls(folder, con, read_only)
        p._limit_cached_memory()
        if not read_only:
            p._migrate()
        elif p._schema_version() != SCHEMA_VERSION:
            con.close()
            raise ProjectError(f"project {folder} has schema version {p._schema_version()}; "
                               f"open it once for writing to upgrade it to {SCHEMA_VERSION}")
        return p

    @classmethod
    def open_snapshot(cls, folder: str | Path) -> "Project":
        """A read-only copy of the project as last committed, for when another process holds it."""
        import duckdb

        folder = Path(folder)
        src = folder / DB_NAME
        if not src.exists():
            raise ProjectError(f"no project in {folder} (missing {DB_NAME})")
        tmp = Path(tempfile.mkdtemp(prefix="workstation-snapshot-"))
        shutil.copy2(src, tmp / DB_NAME)
        wal = folder / (DB_NAME + ".wal")
        if wal.exists():
            shutil.copy2(wal, tmp / (DB_NAME + ".wal"))
        try:
            con = duckdb.connect(str(tmp / DB_NAME), read_only=False)
        except duckdb.Error as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ProjectError(f"cannot read a snapshot of {folder}: {e}") from None
        p = cls(folder, con, True, snapshot_dir=tmp)
        p._limit_cached_memory()
        return p

    def _limit_cached_memory(self) -> None:
        """Have DuckDB hand freed memory back to the system at once: a workstation holds a
        project open for hours, and large scans (loading 1M detections) should not leave
        hundreds of MB cached in its allocator."""
        for setting in ("allocator_flush_threshold", "allocator_bulk_deallocation_flush_threshold"):
            try:
                self.con.execute(f"SET {setting} = '0MB'")
            except Exception:  # an older DuckDB without the setting
                pass

    def close(self) -> None:
        with self._lock:
            try:
                self.con.close()
            finally:
                if self._snapshot_dir is not None:
                    shutil.rmtree(self._snapshot_dir, ignore_errors=True)

    def __enter__(self) -> "Project":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- schema ---------------------------------------------------------------------------
    def _schema_version(self) -> int:
        try:
            row = self.con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except Exception:
            return 0
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        v = self._schema_version()
        if v > SCHEMA_VERSION:
            raise ProjectError(
                f"project {self.folder} was written by a newer version (schema {v} > {SCHEMA_VERSION})")
        for target in range(v, SCHEMA_VERSION):
            with self.transaction():
                for stmt in _MIGRATIONS[target]:
                    self.con.execute(stmt)
                self.con.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target + 1)])

    @property
    def schema_version(self) -> int:
        return self._schema_version()

    # ---- transactions ------------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise ProjectError(f"project {self.folder} is open read-only")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One all-or-nothing unit of writes (nested calls join the outer one)."""
        with self._lock:
            if self._in_tx:
                yield
                return
            self.con.execute("BEGIN TRANSACTION")
            self._in_tx = True
            try:
                yield
            except BaseException:
                self._in_tx = False
                self.con.execute("ROLLBACK")
                raise
            self._in_tx = False
            self.con.execute("COMMIT")

    def _insert(self, table: str, columns: dict[str, Any]) -> None:
        """Bulk insert columns (names must match the table's) through Arrow."""
        t = _arrow(columns)
        if t.num_rows == 0:
            return
        name = f"_ins_{table}"
        self.con.register(name, t)
        try:
            cols = ", ".join(columns)
            self.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {name}")
        finally:
            self.con.unregister(name)

    # ---- settings --------------------------------------------------------------------------------
    def get_setting(self, key: str, default: str | None = None) -> str | None:
        row = self.con.execute("SELECT value FROM settings WHERE key=?", [key]).fetchone()
        return row[0] if row else default

    def set_setting(self, key: str, value: str) -> None:
        self._check_writable()
        with self._lock:
            self.con.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [key, value])

    # ---- runs, prompts, samples, detections --------------------------------------------------------
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
            from .util.jsonsafe import capped, dumps

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
                "prompt_id": p.prompt_id, "suite": p.suite, "text": p.text,
                "relation": np.array([RELATIONS[r] for r in p.relation], dtype=object),
                "object_a": p.label_a, "object_b": p.label_b, "counterfactual_id": p.counterfactual_id,
                "pair_id": p.pair_id, "content_hash": np.array(_prompt_hashes(p), dtype=object),
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
                "height": s.height, "recorded_stability": s.recorded_stability,
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

    def sample_count(self) -> int:
        row = self.con.execute("SELECT count(*) FROM samples").fetchone()
        assert row is not None
        return int(row[0])

    def load_dataset(self, runs: Sequence[str] | None = None) -> Dataset:
        """All samples (or those of `runs`) with their detections, in project order."""
        ds = self._load_dataset(runs)
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

    def _load_dataset(self, runs: Sequence[str] | None) -> Dataset:
        where = ""
        params: list[Any] = []
        if runs:
            where = "WHERE s.run_id IN (SELECT unnest(?))"
            params = [list(runs)]
        st = self.con.execute(
            f"SELECT s.sample_id, s.run_id, s.prompt_id, s.seed, p.relation, p.object_a, p.object_b, "
            f"s.width, s.height, s.image_path, s.recorded_stability, s.has_secondary, s.has_perturbed "
            f"FROM samples s JOIN prompts p USING (prompt_id) {where} ORDER BY s.ord", params).to_arrow_table()
        cols = {k: st.column(k).to_numpy(zero_copy_only=False) for k in st.column_names}
        n = st.num_rows
        obj = lambda a: np.asarray(a, dtype=object)  # noqa: E731
        rel_code = np.array([RELATION_CODE[r] for r in cols["relation"]], np.int8) if n else np.array([], np.int8)
        samples = Samples(
            sample_id=obj(cols["sample_id"]), run_id=obj(cols["run_id"]), prompt_id=obj(cols["prompt_id"]),
            seed=cols["seed"].astype(np.int64), relation=rel_code,
            label_a=obj([str(x).lower() for x in cols["object_a"]]),
            label_b=obj([str(x).lower() for x in cols["object_b"]]),
            width=cols["width"].astype(np.float64), height=cols["height"].astype(np.float64),
            image_path=obj([x or "" for x in cols["image_path"]]),
            recorded_stability=np.asarray(cols["recorded_stability"], dtype=np.float64),
            has_secondary=cols["has_secondary"].astype(bool), has_perturbed=cols["has_perturbed"].astype(bool),
        )
        # Detections in insertion order (DuckDB preserves it for a plain scan), mapped to sample
        # rows in numpy and stably sorted by row: each sample keeps its detections' stored order
        # (the checker's tie-break depends on it). Strings are dictionary-encoded, so 1M
        # detections share a handful of label / variant string objects.
        import pyarrow.compute as pc

        where_d = "WHERE sample_id IN (SELECT sample_id FROM samples WHERE run_id IN (SELECT unnest(?)))" \
            if runs else ""
        sql = f"SELECT sample_id, source, variant, label, score, x1, y1, x2, y2 FROM detections {where_d}"
        idx = self.dataset_index_map(samples)
        dicts: dict[str, dict[str, int]] = {"variant": {}, "label": {}}
        det_cols: dict[str, list[np.ndarray]] = {
            k: [] for k in ("row", "source", "variant", "label", "score", "x1", "y1", "x2", "y2")}

        def codes(batch: Any, col: str, table: dict[str, int]) -> np.ndarray:
            enc = pc.dictionary_encode(batch.column(col))
            local = [table.setdefault(str(x), len(table)) for x in enc.dictionary.to_pylist()]
            return np.asarray(local, dtype=np.int64)[enc.indices.to_numpy(zero_copy_only=False)] \
                if local else np.zeros(0, np.int64)

        # streamed in batches: the whole result never sits in memory as one table
        with self._lock:
            reader = self.con.raw.sql(sql, params=params or None).to_arrow_reader(131072)
            for batch in reader:
                enc = pc.dictionary_encode(batch.column("sample_id"))
                row_of = np.array([idx.get(str(x), -1) for x in enc.dictionary.to_pylist()], dtype=np.int64)
                det_cols["row"].append(row_of[enc.indices.to_numpy(zero_copy_only=False)] if len(row_of)
                                       else np.zeros(0, np.int64))
                det_cols["variant"].append(codes(batch, "variant", dicts["variant"]))
                det_cols["label"].append(codes(batch, "label", dicts["label"]))
                for k in ("source", "score", "x1", "y1", "x2", "y2"):
                    det_cols[k].append(batch.column(k).to_numpy(zero_copy_only=False))
            del reader
        cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in det_cols.items()}
        rows = cat["row"].astype(np.int64)
        keep = rows >= 0
        order = np.nonzero(keep)[0][np.argsort(rows[keep], kind="stable")]
        var_dict = list(dicts["variant"])
        lab_dict = list(dicts["label"])
        recorded = {r[0] for r in self.con.execute("SELECT name FROM image_variants").fetchall()}
        names = [ORIGINAL_NAME] + sorted((set(var_dict) | recorded) - {ORIGINAL_NAME})
        vidx = np.array([names.index(v) for v in var_dict] or [0], dtype=np.int16)
        labels = np.array([x.lower() for x in lab_dict] or [""], dtype=object)
        var_code = cat["variant"].astype(np.int64)
        lab_code = cat["label"].astype(np.int64)

        def num(col: str, dtype: type) -> np.ndarray:
            return cat[col].astype(dtype)[order]

        dets = Detections(
            sample_idx=rows[order], source=num("source", np.int8),
            variant=vidx[var_code[order]], label=labels[lab_code[order]],
            score=num("score", np.float64), x1=num("x1", np.float64), y1=num("y1", np.float64),
            x2=num("x2", np.float64), y2=num("y2", np.float64),
        )
        return Dataset(samples, dets, self.load_prompts(), tuple(names))

    @staticmethod
    def dataset_index_map(samples: Samples) -> dict[str, int]:
        return {sid: i for i, sid in enumerate(samples.sample_id.tolist())}

    def load_prompts(self) -> Prompts:
        t = self.con.execute(
            "SELECT prompt_id, text, relation, object_a, object_b, counterfactual_id, pair_id, suite "
            "FROM prompts ORDER BY prompt_id").fetchall()
        if not t:
            return Prompts.empty()
        c = list(zip(*t))
        obj = lambda a: np.array([x if x is not None else "" for x in a], dtype=object)  # noqa: E731
        return Prompts(obj(c[0]), obj(c[1]), np.array([RELATION_CODE[r] for r in c[2]], np.int8),
                       obj([str(x).lower() for x in c[3]]), obj([str(x).lower() for x in c[4]]),
                       obj(c[5]), obj(c[6]), obj(c[7]))

    def sample_truth(self) -> dict[str, Any]:
        """Ground truth recorded for procedural samples (demo), by sample id."""
        return {sid: json.loads(t) for sid, t in
                self.con.execute("SELECT sample_id, truth FROM samples WHERE truth IS NOT NULL").fetchall()}

    def image_file(self, rel_path: str) -> Path:
        return self.folder / rel_path

    # ---- checker configs and verdicts -----------------------------------------------------------
    def save_config(self, cfg: CheckerConfig, note: str = "", parent_id: int | None = None,
                    activate: bool = True) -> int:
        """Store `cfg` as a new version (or return the id of an identical stored one)."""
        self._check_writable()
        h = cfg.content_hash()
        with self.transaction():
            row = self.con.execute(
                "SELECT config_id FROM checker_configs WHERE content_hash=? ORDER BY config_id DESC LIMIT 1",
                [h]).fetchone()
            if row:
                cid = int(row[0])
            else:
                next_row = self.con.execute(
                    "SELECT coalesce(max(config_id), 0) + 1 FROM checker_configs").fetchone()
                assert next_row is not None
                cid = int(next_row[0])
                self.con.execute("INSERT INTO checker_configs VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 [cid, cfg.name, h, json.dumps(cfg.to_dict()), note, parent_id, _now()])
            if activate:
                self.con.execute("INSERT OR REPLACE INTO settings VALUES ('active_config', ?)", [str(cid)])
        return cid

    def configs(self) -> list[dict[str, Any]]:
        rows = self.con.execute(
            "SELECT c.config_id, c.name, c.content_hash, c.note, c.parent_id, c.created_at, "
            "(SELECT count(*) FROM verdicts v WHERE v.config_id = c.config_id) "
            "FROM checker_configs c ORDER BY c.config_id").fetchall()
        return [{"config_id": r[0], "name": r[1], "content_hash": r[2], "note": r[3], "parent_id": r[4],
                 "created_at": r[5], "verdicts": int(r[6])} for r in rows]

    def get_config(self, config_id: int) -> CheckerConfig:
        row = self.con.execute("SELECT params FROM checker_configs WHERE config_id=?", [config_id]).fetchone()
        if not row:
            raise ProjectError(f"no checker config version {config_id} in the project")
        return CheckerConfig.from_dict(json.loads(row[0]))

    def active_config_id(self) -> int | None:
        v = self.get_setting("active_config")
        return int(v) if v else None

    def active_config(self) -> tuple[int | None, CheckerConfig]:
        cid = self.active_config_id()
        if cid is None:
            return None, CheckerConfig()
        return cid, self.get_config(cid)

    def set_active_config(self, config_id: int) -> None:
        self.get_config(config_id)
        self.set_setting("active_config", str(config_id))

    def save_verdicts(self, config_id: int, ds: Dataset, v: "StorableVerdicts") -> None:
        """Replace the verdict set of `config_id` for the samples of `ds`. Transactional."""
        self._check_writable()
        n = ds.n
        texts = np.array([v.reason_text(i) for i in range(n)], dtype=object)
        with self.transaction():
            self.con.register("_ids", _arrow({"sample_id": ds.samples.sample_id}))
            try:
                self.con.execute("DELETE FROM verdicts WHERE config_id=? AND sample_id IN "
                                 "(SELECT sample_id FROM _ids)", [config_id])
            finally:
                self.con.unregister("_ids")
            self._insert("verdicts", {
                "config_id": np.full(n, config_id, np.int32), "sample_id": ds.samples.sample_id,
                "verdict": np.array(VERDICTS, dtype=object)[v.verdict.astype(np.int64)],
                "reason": np.array(REASONS, dtype=object)[v.reason.astype(np.int64)],
                "reason_text": texts, "conf": v.conf, "c_detection": v.c_detection,
                "c_geometry": v.c_geometry, "c_stability": v.c_stability, "c_agreement": v.c_agreement,
                "delta": v.delta, "iou_ab": v.iou_ab,
            })

    def load_verdict_table(self, config_id: int) -> dict[str, np.ndarray]:
        """Stored verdicts of a config version as columns (sample_id, verdict code, reason code, ...)."""
        t = self.con.execute(
            "SELECT v.sample_id, v.verdict, v.reason, v.reason_text, v.conf, v.c_detection, v.c_geometry, "
            "v.c_stability, v.c_agreement, v.delta, v.iou_ab FROM verdicts v JOIN samples s USING (sample_id) "
            "WHERE v.config_id=? ORDER BY s.ord", [config_id]).to_arrow_table()
        cols = {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}
        cols["verdict"] = np.array([VERDICT_CODE[x] for x in cols["verdict"]], np.int8)
        rc = {r: i for i, r in enumerate(REASONS)}
        cols["reason"] = np.array([rc[x] for x in cols["reason"]], np.int8)
        return cols

    # ---- labels ---------------------------------------------------------------------------------------
    def add_label(self, sample_id: str, annotator: str, verdict: str | None, *, rating: int | None = None,
                  notes: str | None = None, audit_set_id: int | None = None, source: str = "ui",
                  created_at: datetime | None = None) -> int:
        """Append one label event; it is committed (durable) when this returns."""
        self._check_writable()
        if verdict is not None and verdict not in VERDICT_CODE:
            raise ProjectError(f"unknown verdict {verdict!r}; expected PASS, FAIL or UNDECIDABLE")
        if rating is not None and not (1 <= int(rating) <= 4):
            raise ProjectError(f"rating must be 1-4, got {rating}")
        if not annotator.strip():
            raise ProjectError("an annotator name is required")
        with self._lock:
            if not self.con.execute("SELECT 1 FROM samples WHERE sample_id=?", [sample_id]).fetchone():
                raise ProjectError(f"unknown sample {sample_id!r}")
            row = self.con.execute(
                "INSERT INTO label_events (sample_id, annotator, verdict, rating, notes, created_at, "
                "audit_set_id, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
                [sample_id, annotator.strip(), verdict, rating, notes, created_at or _now(), audit_set_id,
                 source]).fetchone()
            assert row is not None
            return int(row[0])

    def add_labels_bulk(self, rows: Mapping[str, Sequence[Any]], source: str = "import") -> int:
        """Append many label events in one transaction (columns: sample_id, annotator, verdict,
        and optionally rating, notes, created_at). Unknown samples are an error."""
        self._check_writable()
        n = len(rows["sample_id"])
        if n == 0:
            return 0
        cols = {
            "sample_id": np.array(rows["sample_id"], dtype=object),
            "annotator": np.array(rows["annotator"], dtype=object),
            "verdict": np.array(rows["verdict"], dtype=object),
            "rating": np.array([None if r is None or (isinstance(r, float) and math.isnan(r)) else int(r)
                                for r in rows.get("rating", [None] * n)], dtype=object),
            "notes": np.array(rows.get("notes", [None] * n), dtype=object),
            "created_at": np.array(rows.get("created_at", [_now()] * n), dtype=object),
            "audit_set_id": np.array([None] * n, dtype=object),
            "source": np.array([source] * n, dtype=object),
        }
        with self.transaction():
            self.con.register("_lab", _arrow({"sample_id": cols["sample_id"]}))
            try:
                bad = self.con.execute("SELECT l.sample_id FROM _lab l LEFT JOIN samples s USING (sample_id) "
                                       "WHERE s.sample_id IS NULL LIMIT 1").fetchone()
            finally:
                self.con.unregister("_lab")
            if bad:
                raise ProjectError(f"label for unknown sample {bad[0]!r}")
            self._insert("label_events", cols)
        return n

    def label_events(self, sample_id: str | None = None) -> list[LabelRow]:
        q = ("SELECT sample_id, annotator, verdict, rating, notes, created_at, event_id FROM label_events "
             + ("WHERE sample_id=? " if sample_id else "") + "ORDER BY event_id")
        return [LabelRow(*r) for r in self.con.execute(q, [sample_id] if sample_id else []).fetchall()]

    def latest_labels(self, annotator: str | None = None) -> list[LabelRow]:
        """The latest event per (sample, annotator) that carries a verdict or notes."""
        q = ("SELECT sample_id, annotator, verdict, rating, notes, created_at, event_id FROM ("
             " SELECT *, row_number() OVER (PARTITION BY sample_id, annotator ORDER BY event_id DESC) rn "
             " FROM label_events" + (" WHERE annotator=?" if annotator else "") + ") WHERE rn = 1 "
             "ORDER BY event_id")
        return [LabelRow(*r) for r in self.con.execute(q, [annotator] if annotator else []).fetchall()]

    def annotators(self) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT DISTINCT annotator FROM label_events ORDER BY annotator").fetchall()]

    def human_verdicts(self, ds: Dataset, annotator: str | None = None) -> np.ndarray:
        """Per sample of `ds`: the latest human verdict code (int8) or -1 where unlabelled.

        With several annotators and no `annotator` given, the most recent label of anyone counts.
        """
        out = np.full(ds.n, -1, np.int8)
        idx = ds.sample_index()
        for r in sorted(self.latest_labels(annotator), key=lambda r: r.event_id):
            i = idx.get(r.sample_id)
            if i is not None and r.verdict in VERDICT_CODE:
                out[i] = VERDICT_CODE[r.verdict]
        return out

    # ---- audit sets ---------------------------------------------------------------------------------
    def create_audit_set(self, name: str, sample_ids: Sequence[str], params: dict[str, Any],
                         blind: bool = True, rechecks: Sequence[tuple[int, str]] = ()) -> int:
        """Store an audit set: `sample_ids` in queue order; `rechecks` = (position, sample_id) inserted
        as blind consistency re-checks."""
        self._check_writable()
        with self.transaction():
            aid_row = self.con.execute("SELECT coalesce(max(audit_set_id), 0) + 1 FROM audit_sets").fetchone()
            assert aid_row is not None
            aid = int(aid_row[0])
            self.con.execute("INSERT INTO audit_sets VALUES (?, ?, ?, ?, ?)",
                             [aid, name, json.dumps(params, default=str), blind, _now()])
            items: list[tuple[str, bool]] = [(s, False) for s in sample_ids]
            for pos, sid in sorted(rechecks):
                items.insert(min(pos, len(items)), (sid, True))
            self._insert("audit_items", {
                "audit_set_id": np.full(len(items), aid, np.int32),
                "position": np.arange(len(items), dtype=np.int32),
                "sample_id": np.array([s for s, _ in items], dtype=object),
                "is_recheck": np.array([r for _, r in items], dtype=bool),
            })
        return aid

    def audit_sets(self) -> list[dict[str, Any]]:
        rows = self.con.execute(
            "SELECT a.audit_set_id, a.name, a.params, a.blind, a.created_at, "
            "(SELECT count(*) FROM audit_items i WHERE i.audit_set_id = a.audit_set_id) "
            "FROM audit_sets a ORDER BY a.audit_set_id").fetchall()
        return [{"audit_set_id": r[0], "name": r[1], "params": json.loads(r[2] or "{}"), "blind": r[3],
                 "created_at": r[4], "size": int(r[5])} for r in rows]

    def audit_items(self, audit_set_id: int) -> list[tuple[str, bool]]:
        return [(r[0], bool(r[1])) for r in self.con.execute(
            "SELECT sample_id, is_recheck FROM audit_items WHERE audit_set_id=? ORDER BY position",
            [audit_set_id]).fetchall()]

    # ---- saved filters --------------------------------------------------------------------------------
    def save_filter(self, name: str, spec: dict[str, Any]) -> None:
        self._check_writable()
        with self._lock:
            self.con.execute("INSERT OR REPLACE INTO saved_filters VALUES (?, ?)", [name, json.dumps(spec)])

    def saved_filters(self) -> dict[str, dict[str, Any]]:
        return {n: json.loads(s) for n, s in self.con.execute(
            "SELECT name, spec FROM saved_filters ORDER BY name").fetchall()}

    # ---- jobs ------------------------------------------------------------------------------------------
    def record_job(self, job_id: str, kind: str, spec: dict[str, Any], status: str = "queued",
                   done: int = 0, total: int = 0, message: str = "") -> None:
        self._check_writable()
        with self._lock:
            now = _now()
            exists = self.con.execute("SELECT 1 FROM jobs WHERE job_id=?", [job_id]).fetchone()
            if exists:
                self.con.execute("UPDATE jobs SET status=?, done=?, total=?, message=?, updated_at=? "
                                 "WHERE job_id=?", [status, done, total, message, now, job_id])
            else:
                self.con.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [job_id, kind, json.dumps(spec, default=str), status, now, now, done, total,
                                  message])

    def jobs(self) -> list[dict[str, Any]]:
        rows = self.con.execute("SELECT job_id, kind, spec, status, created_at, updated_at, done, total, message "
                                "FROM jobs ORDER BY created_at").fetchall()
        return [{"job_id": r[0], "kind": r[1], "spec": json.loads(r[2] or "{}"), "status": r[3],
                 "created_at": r[4], "updated_at": r[5], "done": r[6], "total": r[7], "message": r[8]}
                for r in rows]


def wait_for_unlock(folder: str | Path, timeout: float = 10.0) -> Project:
    """Open a project for writing, retrying while another process releases it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return Project.open(folder)
        except ProjectLocked:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
