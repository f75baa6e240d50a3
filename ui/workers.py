"""Run a core generator on Qt's thread pool and hand its progress back to the GUI thread.

Long work in `workstation/` is written as a plain generator that yields progress and returns
its result (e.g. `calibration.iter_grid_search`). `GeneratorWorker` runs one on a pool thread:

    worker = GeneratorWorker(iter_grid_search, ds, cfg, human, grids)
    worker.yielded.connect(on_progress)     # each yielded value, on the GUI thread
    worker.returned.connect(on_result)      # the generator's return value
    worker.errored.connect(on_error)        # an exception raised by the generator
    worker.aborted.connect(on_cancelled)    # quit() was honoured at a yield
    worker.finished.connect(on_done)        # always last, whatever happened
    worker.start()
    ...
    worker.quit()                           # stop at the next yield (the generator is closed)

Signals are emitted from the pool thread; the signal object lives on the GUI thread, so Qt
queues them there. A plain function (not a generator) runs too: it returns once, no yields.
The worker keeps itself alive until `finished` has been delivered.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Generator
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger(__name__)

_LIVE: set["GeneratorWorker"] = set()  # running workers (keeps their Python objects alive)


class GeneratorWorker(QObject):
    started = Signal()
    yielded = Signal(object)
    returned = Signal(object)
    errored = Signal(object)  # the exception
    aborted = Signal()
    finished = Signal()

    def __init__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self._func = func
        self._args = args
        self._kwargs = kwargs
        self._abort = threading.Event()
        self._running = False
        self._done = False
        self.finished.connect(self._release)

    # ---- control ----------------------------------------------------------------------------
    def start(self, pool: QThreadPool | None = None) -> None:
        if self._running or self._done:
            raise RuntimeError("a worker runs once")
        self._running = True
        _LIVE.add(self)
        runnable = _Runnable(self)
        (pool or QThreadPool.globalInstance()).start(runnable)

    def quit(self) -> None:
        """Ask the work to stop at its next yield."""
        self._abort.set()

    @property
    def abort_requested(self) -> bool:
        return self._abort.is_set()

    @property
    def is_running(self) -> bool:
        return self._running and not self._done

    # ---- pool thread ------------------------------------------------------------------------
    def _work(self) -> None:
        self.started.emit()
        try:
            result = self._func(*self._args, **self._kwargs)
            if inspect.isgenerator(result):
                result = self._drive(result)
                if result is _ABORTED:
                    self.aborted.emit()
                    return
            self.returned.emit(result)
        except Exception as e:  # noqa: BLE001 - handed to the GUI thread
            log.debug("worker %s raised %r", getattr(self._func, "__name__", self._func), e)
            self.errored.emit(e)
        finally:
            self._done = True
            self.finished.emit()

    def _drive(self, gen: Generator[Any, Any, Any]) -> Any:
        try:
            while True:
                if self._abort.is_set():
                    gen.close()
                    return _ABORTED
                value = next(gen)
                self.yielded.emit(value)
        except StopIteration as stop:
            return stop.value

    def _release(self) -> None:
        self._running = False
        _LIVE.discard(self)


_ABORTED = object()


class _Runnable(QRunnable):
    def __init__(self, worker: GeneratorWorker) -> None:
        super().__init__()
        self._worker = worker
        self.setAutoDelete(True)

    def run(self) -> None:
        self._worker._work()


def run_in_thread(func: Callable[..., Any], *args: Any, connect: dict[str, Callable[..., Any]] | None = None,
                  **kwargs: Any) -> GeneratorWorker:
    """Create a worker, connect `{signal name: slot}` and start it."""
    w = GeneratorWorker(func, *args, **kwargs)
    for name, slot in (connect or {}).items():
        getattr(w, name).connect(slot)
    w.start()
    return w
