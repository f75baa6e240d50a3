"""Reading a process a test started, with a deadline that applies to every read.

A plain ``proc.stdout.readline()`` blocks until the child prints a line or exits, so a loop like
``while time.monotonic() < deadline: line = proc.stdout.readline()`` never reaches its deadline
check when the child hangs without printing. `Lines` reads the child's output on a thread of its
own into a queue; every read waits at most until the deadline and then raises `Timeout` with the
last lines the child printed, so that a hung child fails its test with what it said, in time.

    proc = subprocess.Popen([...], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with Lines(proc, timeout=120) as out:
        out.wait_for(lambda line: line.startswith("READY"))
        for line in out:          # every line until the child ends (or the deadline)
            ...
    # leaving the block kills a child that is still running and waits for it (bounded)
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType


class Timeout(AssertionError):
    """The child printed nothing that was waited for before the deadline."""


class Lines:
    """The output lines of ``proc`` (text mode, stdout piped), each read bounded by one deadline
    ``timeout`` seconds from now (`extend` moves it)."""

    def __init__(self, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
        if proc.stdout is None:
            raise ValueError("the process's stdout is not piped")
        self.proc = proc
        self.deadline = time.monotonic() + timeout
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, name=f"lines-of-{proc.pid}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self._queue.put(line)
        except (OSError, ValueError):  # the pipe closed under us
            pass
        finally:
            self._queue.put(None)

    def extend(self, seconds: float) -> None:
        """A new deadline ``seconds`` from now."""
        self.deadline = time.monotonic() + seconds

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.seen[-n:])

    def readline(self) -> str | None:
        """The next line (without its end), None once the child closed its output; `Timeout`
        when the deadline passes first."""
        left = self.deadline - time.monotonic()
        try:
            line = self._queue.get(timeout=max(left, 0.0))
        except queue.Empty:
            raise Timeout(f"process {self.proc.pid} printed nothing more before the deadline; its last "
                          f"lines:\n{self.tail()}") from None
        if line is None:
            self._queue.put(None)  # every later read sees the end too
            return None
        line = line.rstrip("\n")
        self.seen.append(line)
        return line

    def __iter__(self) -> Iterator[str]:
        while True:
            line = self.readline()
            if line is None:
                return
            yield line

    def wait_for(self, want: Callable[[str], bool]) -> str:
        """The first line for which ``want`` holds; an AssertionError when the child ends first."""
        for line in self:
            if want(line):
                return line
        raise AssertionError(f"process {self.proc.pid} ended (exit {self.proc.poll()}) before the line waited "
                             f"for; its last lines:\n{self.tail()}")

    def close(self, wait: float = 30.0) -> None:
        """Kill the child if it still runs and wait for it (at most ``wait`` seconds)."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:  # pragma: no cover - an unkillable child
            pass
        self._thread.join(timeout=wait)

    def __enter__(self) -> "Lines":
        return self

    def __exit__(self, tp: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


__all__ = ["Lines", "Timeout"]
