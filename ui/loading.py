"""Reading a project for the window, on any thread and without Qt.

`load_project` gathers what the window's state adopts (`AppState.adopt`); `evaluate_active`
runs the checker over it. `EarlyLoad` starts `load_project` before Qt is even imported
(`main.py gui --project DIR`): at a million samples the load takes seconds, and the
interpreter's import of Qt and the window's construction (most of a second) run beside it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workstation.dataset import Dataset
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project, release_freed_memory


@dataclass
class LoadedProject:
    """Everything `AppState.open_project` reads, gathered by `load_project` (any thread)."""

    project: Project
    dataset: Dataset
    config_id: int | None
    config: CheckerConfig
    verdicts: object
    human: np.ndarray
    annotator: str


#: DuckDB's Python package is imported by the project's load and by the methods' warm-up, each on
#: a thread of its own; two first imports at once can meet a partly initialised module (an
#: ImportError from `duckdb._sources`), so the first import is made under this lock
_DUCKDB_IMPORT = threading.Lock()


def import_duckdb() -> None:
    with _DUCKDB_IMPORT:
        import duckdb  # noqa: F401


def load_project(folder: str | Path, read_only: bool = False, snapshot: bool = False,
                 with_verdicts: bool = True) -> LoadedProject:
    """Open a project and load its samples, active config, verdicts and labels. No Qt objects
    are touched, so a worker thread can run it while the window stays responsive; the
    connection is then used by the GUI thread alone. Raises what `Project.open` raises.
    Without `with_verdicts` the checker is left to `evaluate_active` (verdicts None)."""
    import_duckdb()
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.data import spatial_columns

    project = Project.open_snapshot(folder) if snapshot else Project.open(folder, read_only=read_only)
    try:
        # the samples' relations and objects, which the views and the checker both read first,
        # are worked out while the detections are read
        ds = project.samples.load_dataset(method="spatial", meanwhile=spatial_columns)
        cid, cfg = SpatialStore(project).active_config()
        verdicts = evaluate(ds, cfg) if ds.n and with_verdicts else None
        human = SpatialStore(project).human_verdicts(ds)
        annotator = project.get_setting("annotator", "") or ""
        release_freed_memory()  # the checker's one-off preparation leaves freed temporaries
    except BaseException:
        project.close()
        raise
    return LoadedProject(project, ds, cid, cfg, verdicts, human, annotator)


def evaluate_active(dataset: Dataset, cfg: CheckerConfig) -> tuple[Dataset, CheckerConfig, object]:
    """The checker's verdicts of `dataset` under `cfg` (any thread), for `AppState.verdicts_ready`."""
    from workstation.methods.spatial.checker import evaluate

    verdicts = evaluate(dataset, cfg)
    release_freed_memory()  # the checker's one-off preparation leaves freed temporaries
    return dataset, cfg, verdicts


class EarlyLoad:
    """`load_project(folder, read_only)` (verdicts left to `evaluate_active`) on a thread started
    at once. `then(deliver)` hands the result, or the exception it raised, to
    `deliver(result, ok)`: at once on the caller's thread when the load has ended, else on the
    load's thread when it ends. Only the first `then` is served."""

    def __init__(self, folder: str | Path, read_only: bool = False) -> None:
        self.folder = Path(folder)
        self.read_only = read_only
        self._lock = threading.Lock()
        self._outcome: tuple[Any, bool] | None = None
        self._deliver: Callable[[Any, bool], None] | None = None
        self._served = False
        self.thread = threading.Thread(target=self._run, name="project-load")
        self.thread.start()

    def _run(self) -> None:
        try:
            outcome: tuple[Any, bool] = (load_project(self.folder, self.read_only, False, False), True)
        except Exception as e:  # noqa: BLE001 - handed to `deliver`, which reports it
            outcome = (e, False)
        with self._lock:
            self._outcome = outcome
            deliver, self._deliver = self._deliver, None
        if deliver is not None:
            deliver(*outcome)

    def then(self, deliver: Callable[[Any, bool], None]) -> None:
        with self._lock:
            if self._served:
                raise RuntimeError("an early load is handed over once")
            self._served = True
            outcome = self._outcome
            if outcome is None:
                self._deliver = deliver
                return
        deliver(*outcome)

    def discard(self) -> None:
        """Nobody will take the load: its project is closed once the load ends."""
        def close(result: Any, ok: bool) -> None:
            if ok:
                result.project.close()

        try:
            self.then(close)
        except RuntimeError:  # already handed over: its taker owns it
            pass
