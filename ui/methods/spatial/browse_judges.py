"""Every judge of the loaded samples, for Browse's judge columns and its filter "judges disagree".

The judges (`workstation.methods.spatial.judges.judge_columns`: each stored checker config,
GenEval's position rule, the twin consistency, each scorer) are computed once per loaded dataset,
on a worker thread, over the dataset the window already holds (nothing is loaded again), and kept
on the session as ``judge_columns`` — (dataset, columns). They start once the window has been
idle for `IDLE_MS` with the samples' verdicts in: never during a first open's load and check,
never per slider move (a move, or a step to another sample, postpones a start that has not begun;
the columns themselves do not depend on the sliders). A new dataset (a job's results, another project) or an applied config
(its stored verdicts are a judge of their own) computes them again; what an older computation
brings is dropped. A slider dragged while they are computed pauses the worker at its next step
(between two judges, between two chunks of the detections) until the drag rests.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

log = logging.getLogger(__name__)

#: the window idle this long (no new data, no slider move, no step in the queue) before the judges
#: are computed
IDLE_MS = 2000


#: how long closing a project waits for a running worker to reach its next judge
CLOSE_WAIT_S = 10.0


#: a slider move (or a step in the queue) pauses a running worker for this long after it
BUSY_S = 0.6


def compute_columns(mine: Any, ds: Any, stop: threading.Event, done: threading.Event,
                    busy: Any = None) -> list[Any] | None:
    """The worker: every judge of ``ds`` through ``mine``, a reading copy of the project (its own
    DuckDB cursor, made on the GUI thread: the worker never touches the project's connection),
    closed here; None when stopped; ``done`` is set once it has let go of the copy. Between two
    steps it waits while ``busy()`` says the window is busy (a slider being dragged)."""
    from workstation.methods.spatial.judges import judge_columns

    def pause() -> None:
        while busy is not None and busy() and not stop.is_set():
            time.sleep(0.05)

    try:
        return judge_columns(mine, ds, stop=stop.is_set, pause=pause)
    finally:
        try:
            mine.con.raw.close()
        finally:
            done.set()


class BrowseJudges(QObject):
    """Computes the session's ``judge_columns`` when the window is idle; ``changed`` when they
    are in (or gone). ``computing`` while a worker runs; ``error`` the last failure's text."""

    changed = Signal()

    def __init__(self, state: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.computing = False
        self.error = ""
        self._generation = 0
        self._busy_until = 0.0  # time.monotonic() until which a running worker waits
        self._stop: threading.Event | None = None
        self._released: threading.Event | None = None  # set once the running worker let go of the project
        self._worker: Any = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(IDLE_MS)
        self._timer.timeout.connect(self._start)
        state.dataset_changed.connect(self.schedule)
        state.project_changed.connect(self.schedule)
        state.judges_stale.connect(partial(self.schedule, True))
        for busy in (state.verdicts_changed, state.config_changed, state.current_changed):
            busy.connect(self._postpone)
        state.about_to_close.connect(self.shutdown)
        self.schedule()

    @property
    def pending(self) -> bool:
        """The columns of the loaded samples are not in yet (waiting for idle, or computing)."""
        st = self.state
        got = st.judge_columns
        return st.dataset is not None and st.dataset.n > 0 and (got is None or got[0] is not st.dataset)

    def schedule(self, again: bool = False) -> None:
        """The columns of the loaded dataset, computed when the window is idle (at once where they
        are those of this dataset already and ``again`` is false)."""
        st = self.state
        ds = st.dataset
        if ds is None or st.project is None or ds.n == 0:
            self._drop()
            if st.judge_columns is not None:
                st.judge_columns = None
                self.changed.emit()
            return
        got = st.judge_columns
        if got is not None and got[0] is ds and not again:
            return
        if got is not None and got[0] is not ds:
            st.judge_columns = None  # another dataset's columns are never shown beside this one's
            self.changed.emit()
        self._drop()
        self._timer.start()

    def _postpone(self, *_: Any) -> None:
        """A slider moved (or the queue stepped): a start still waiting waits for the window to be
        idle again, and a running worker pauses at its next step for `BUSY_S`."""
        self._busy_until = time.monotonic() + BUSY_S
        if self._timer.isActive():
            self._timer.start()

    def busy(self) -> bool:
        """Whether the window moved a slider or stepped in the last `BUSY_S` (read by the worker)."""
        return time.monotonic() < self._busy_until

    def _drop(self) -> None:
        """Forget a waiting start and a running worker (what it brings is dropped)."""
        self._timer.stop()
        self._generation += 1
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        self._worker = None
        self.computing = False

    def _start(self) -> None:
        from superqt.utils import create_worker

        st = self.state
        ds, p = st.dataset, st.project
        if ds is None or p is None or ds.n == 0:
            return
        if st.checking or st.verdicts is None:  # a first open's check still runs: after it
            self._timer.start()
            return
        self._generation += 1
        gen = self._generation
        stop = self._stop = threading.Event()
        done = self._released = threading.Event()
        self.computing = True
        self.error = ""
        from ...reading_copy import reading_copy

        w = create_worker(compute_columns, reading_copy(p), ds, stop, done, self.busy, _start_thread=False,
                          _ignore_errors=True)
        w.returned.connect(partial(self._done, gen, ds))
        w.errored.connect(partial(self._failed, gen))
        self._worker = w
        self.changed.emit()
        w.start()

    def _done(self, gen: int, ds: Any, cols: Any) -> None:
        if gen != self._generation:
            return
        self.computing = False
        self._worker = None
        self._stop = None
        if cols is None or ds is not self.state.dataset:
            return
        self.state.judge_columns = (ds, list(cols))
        self.changed.emit()

    def _failed(self, gen: int, exc: BaseException) -> None:
        if gen != self._generation:
            return
        self.computing = False
        self._worker = None
        self._stop = None
        self.error = str(exc) or type(exc).__name__
        log.warning("the judges of Browse could not be computed: %s", self.error)
        self.changed.emit()

    def shutdown(self) -> None:
        """The project closes: a running worker stops at its next judge, and the project is closed
        only once the worker has let go of it (at most `CLOSE_WAIT_S`)."""
        done = self._released if self.computing else None
        self._drop()
        if done is not None and not done.wait(CLOSE_WAIT_S):
            log.warning("the judges of Browse still run while the project closes")
