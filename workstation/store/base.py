"""The project folder and its DuckDB connection: opening, locking, transactions, settings.

A project folder holds `project.duckdb`, `images/` and `jobs/`. Image paths in the
database are relative to the folder and never escape it. Every write that belongs
together runs in one transaction: an import lands whole or not at all.

DuckDB lets one process hold a database file for writing. A second process gets
`ProjectLocked`, and may open a read-only snapshot instead (`ProjectBase.open_snapshot`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..util.memory import trim_heap
from ..util.project_files import DB_NAME
from . import schema
from .errors import ProjectError, ProjectLocked, ProjectReadOnly  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    import duckdb

P = TypeVar("P", bound="ProjectBase")


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _arrow(columns: dict[str, Any]):  # -> pyarrow.Table
    import pyarrow as pa

    return pa.table({k: (v.tolist() if isinstance(v, np.ndarray) and v.dtype == object else v)
                     for k, v in columns.items()})


def release_freed_memory() -> None:
    """Hand memory freed by a large load back to the system. glibc keeps freed heap pages (how
    many varies from run to run: 0 to 150 MB after 1.3M detections) until asked to trim."""
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - best effort
        pass
    trim_heap()


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


class ProjectBase:
    """The connection, schema and transactions of an open project (see `workstation.store.Project`)."""

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
    def create(cls: type[P], folder: str | Path, exist_ok: bool = False) -> P:
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
            from ..util.output import describe_os_error

            raise ProjectError(f"cannot create a project in {folder}: {describe_os_error(e)}") from None

    @classmethod
    def open(cls: type[P], folder: str | Path, read_only: bool = False) -> P:
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
            p._after_open_for_writing()
        elif p._schema_version() != schema.SCHEMA_VERSION:
            con.close()
            raise ProjectError(f"project {folder} has schema version {p._schema_version()}; "
                               f"open it once for writing to upgrade it to {schema.SCHEMA_VERSION}")
        return p

    @classmethod
    def open_snapshot(cls: type[P], folder: str | Path) -> P:
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

    def _after_open_for_writing(self) -> None:
        """What a project opened for writing does first (`workstation.store.Project`: clear what
        a killed import left)."""

    def _limit_cached_memory(self) -> None:
        """Have DuckDB hand freed memory back to the system at once: a workstation holds a
        project open for hours, and large scans (loading 1M detections) should not leave
        hundreds of MB cached in its allocator."""
        for setting in ("allocator_flush_threshold", "allocator_bulk_deallocation_flush_threshold"):
            try:
                self.con.execute(f"SET {setting} = '0MB'")
            except Exception:  # an older DuckDB without the setting
                pass

    def _written_back(self, table: str | None = None) -> None:
        """What the project's repositories keep of its tables may be stale now: ``table`` was
        written (None: any table, as by a rolled-back transaction); each is told
        (`Repo._written_back`)."""
        for repo in self._repos():
            repo._written_back(table)

    def _repos(self) -> "tuple[Repo, ...]":
        """The repositories over this connection (`workstation.store.Project` has them)."""
        return ()

    def close(self) -> None:
        with self._lock:
            self._written_back()
            try:
                self.con.close()
            finally:
                if self._snapshot_dir is not None:
                    shutil.rmtree(self._snapshot_dir, ignore_errors=True)

    def __enter__(self: P) -> P:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- schema ---------------------------------------------------------------------------
    def _schema_version(self) -> int:
        return schema.kernel_version(self.con)

    def _migrate(self) -> None:
        schema.migrate_kernel(self)

    @property
    def schema_version(self) -> int:
        return self._schema_version()

    def ensure_schema(self, component: str, migrations: list[list[Any]]) -> int:
        """Bring a component's own tables (a method's ``<name>_*`` tables) to the newest of
        ``migrations`` (one list of SQL statements or callables per version); returns the version.
        A read-only project whose component is behind raises ProjectError."""
        return schema.ensure_component(self, component, migrations)

    def component_version(self, component: str) -> int:
        return schema.component_version(self.con, component)

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
                self._written_back()
                raise
            self._in_tx = False
            self.con.execute("COMMIT")

    def insert_columns(self, table: str, columns: dict[str, Any]) -> None:
        """Bulk insert columns (numpy arrays or lists; names must match the table's) through Arrow."""
        t = _arrow(columns)
        if t.num_rows == 0:
            return
        self._written_back(table)
        name = f"_ins_{table}"
        self.con.register(name, t)
        try:
            cols = ", ".join(columns)
            self.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {name}")
        finally:
            self.con.unregister(name)

    _insert = insert_columns

    # ---- settings --------------------------------------------------------------------------------
    def get_setting(self, key: str, default: str | None = None) -> str | None:
        row = self.con.execute("SELECT value FROM settings WHERE key=?", [key]).fetchone()
        return row[0] if row else default

    def set_setting(self, key: str, value: str) -> None:
        self._check_writable()
        with self._lock:
            self.con.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", [key, value])


class Repo:
    """One repository of an open project (`workstation.store.Project`): its tables, read and
    written through the project's connection, lock and transactions."""

    def __init__(self, project: ProjectBase) -> None:
        self._project = project

    @property
    def con(self) -> _Connection:
        return self._project.con

    @property
    def folder(self) -> Path:
        return self._project.folder

    @property
    def read_only(self) -> bool:
        return self._project.read_only

    @property
    def _lock(self) -> threading.RLock:
        return self._project._lock

    def transaction(self) -> AbstractContextManager[None]:
        """`ProjectBase.transaction`: one all-or-nothing unit of writes."""
        return self._project.transaction()

    def _check_writable(self) -> None:
        self._project._check_writable()

    def insert_columns(self, table: str, columns: dict[str, Any]) -> None:
        self._project.insert_columns(table, columns)

    _insert = insert_columns

    def ensure_schema(self, component: str, migrations: list[list[Any]]) -> int:
        return self._project.ensure_schema(component, migrations)

    def component_version(self, component: str) -> int:
        return self._project.component_version(component)

    def get_setting(self, key: str, default: str | None = None) -> str | None:
        return self._project.get_setting(key, default)

    def set_setting(self, key: str, value: str) -> None:
        self._project.set_setting(key, value)

    def _written_back(self, table: str | None = None) -> None:
        """What this repository keeps of the project's tables may be stale now: ``table`` was
        written (None: any table, as by a rolled-back transaction). A repository that keeps
        something forgets it in its override (`ProjectBase._written_back` tells every one)."""

