"""Reading a project for the window, on any thread and without Qt.

`load_project` gathers what the window's state and the methods' views adopt: the project, and
each method's part read by its load (`ui.methods.LOADS`; spatial's samples, config and verdicts,
`ui.methods.spatial.loading`). `EarlyLoad` starts `load_project` before Qt is even imported
(`main.py gui --project DIR`): at a million samples the load takes seconds, and the
interpreter's import of Qt and the window's construction (most of a second) run beside it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workstation.store import Project, release_freed_memory


@dataclass
class LoadedProject:
    """Everything `AppState.open_project` reads, gathered by `load_project` (any thread):
    the project, its annotator and each method's part (`parts`, by the method's name), which its
    views take (``expect``)."""

    project: Project
    annotator: str
    parts: dict[str, Any]


#: DuckDB's Python package is imported by the project's load and by the methods' warm-up, each on
#: a thread of its own; two first imports at once can meet a partly initialised module (an
#: ImportError from `duckdb._sources`), so the first import is made under this lock
_DUCKDB_IMPORT = threading.Lock()


def import_duckdb() -> None:
    with _DUCKDB_IMPORT:
        import duckdb  # noqa: F401


class OpeningCancelled(Exception):
    """The user cancelled opening a project (`OpenProgress.cancel`)."""


class OpenProgress:
    """How far a project's load (`load_project`) has got, read from any thread, and the way to
    cancel it. Phases: "samples" (the samples and prompts), "detections" (scanned from the
    project's table: `done` of `total`, -1 where the total is not known; a load that reads
    them from the cache skips this phase), "labels" (the active config and the labels)."""

    def __init__(self) -> None:
        self.phase = "samples"
        self.done = 0
        self.total = -1
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Ask the load to stop: it raises `OpeningCancelled` at its next step."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        if self._cancel.is_set():
            raise OpeningCancelled("opening the project was cancelled")

    def enter(self, phase: str) -> None:
        self.check()
        self.phase = phase

    def detections(self, done: int, total: int) -> None:
        """`SamplesRepo.load_dataset`'s progress callback (the scanning thread)."""
        self.phase, self.done, self.total = "detections", done, total
        self.check()

    def note(self) -> str:
        """A word on the phase under way, for a page with room for it."""
        if self.phase == "detections" and not self.cancelled:
            return ("The detections are read from the project's database and kept in the cache: "
                    "the next open of this project reads them from there, in a fraction of the time.")
        return ""

    def describe(self) -> tuple[str, int]:
        """What the load is doing, in words, and how far it is in percent (-1: not known)."""
        if self.cancelled:
            return "cancelling…", -1
        if self.phase == "detections":
            if self.total > 0:
                pct = min(100, self.done * 100 // self.total)
                return f"reading detections: {pct} % ({self.done:,} of {self.total:,})", pct
            return f"reading detections: {self.done:,}", -1
        if self.phase == "labels":
            return "reading the labels…", -1
        return "reading the samples…", -1


def method_loads() -> dict[str, Any]:
    """Each method's load (`ui.methods.LOADS`), by name, its module imported now: the thread
    that starts a load calls it, so that the load's own thread makes no first import of a
    method's modules beside the GUI thread's imports of Qt."""
    from .methods import load_names, load_of

    return {name: load_of(name) for name in load_names()}


def load_project(folder: str | Path, read_only: bool = False, snapshot: bool = False,
                 with_verdicts: bool = True, progress: OpenProgress | None = None,
                 loads: dict[str, Any] | None = None) -> LoadedProject:
    """Open a project and read each method's part of it (`ui.methods.LOADS`: spatial's samples,
    active config, verdicts and labels). No Qt objects are touched, so a worker thread can run it
    while the window stays responsive; the connection is then used by the GUI thread alone.
    Raises what `Project.open` raises. Without `with_verdicts` the evaluation is left to the
    views (spatial: `ui.methods.spatial.loading.evaluate_active`, verdicts None).
    `progress` follows the load and can cancel it: `OpeningCancelled` is raised and the
    project is closed as it was. `loads`: the methods' loads (`method_loads()`, made where none
    is given)."""
    import_duckdb()
    if loads is None:
        loads = method_loads()

    if progress is not None:
        progress.enter("samples")
    project = Project.open_snapshot(folder) if snapshot else Project.open(folder, read_only=read_only)
    try:
        parts = {name: load.read(project, with_verdicts, progress) for name, load in loads.items()}
        annotator = project.get_setting("annotator", "") or ""
        release_freed_memory()  # the checker's one-off preparation leaves freed temporaries
    except BaseException:
        project.close()
        raise
    return LoadedProject(project, annotator, parts)


class EarlyLoad:
    """`load_project(folder, read_only)` (verdicts left to the views) on a thread started
    at once. `then(deliver)` hands the result, or the exception it raised, to
    `deliver(result, ok)`: at once on the caller's thread when the load has ended, else on the
    load's thread when it ends. Only the first `then` is served."""

    def __init__(self, folder: str | Path, read_only: bool = False) -> None:
        self.folder = Path(folder)
        self.read_only = read_only
        self.progress = OpenProgress()
        self._loads = method_loads()  # imported here, before the load's thread starts
        self._lock = threading.Lock()
        self._outcome: tuple[Any, bool] | None = None
        self._deliver: Callable[[Any, bool], None] | None = None
        self._served = False
        self.thread = threading.Thread(target=self._run, name="project-load")
        self.thread.start()

    def _run(self) -> None:
        try:
            outcome: tuple[Any, bool] = (load_project(self.folder, self.read_only, False, False, self.progress,
                                                      loads=self._loads),
                                         True)
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
        """Nobody will take the load: it is cancelled, and its project is closed once it ends."""
        self.progress.cancel()

        def close(result: Any, ok: bool) -> None:
            if ok:
                result.project.close()

        try:
            self.then(close)
        except RuntimeError:  # already handed over: its taker owns it
            pass
