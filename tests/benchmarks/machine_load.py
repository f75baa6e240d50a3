"""What the machine was doing while a benchmark ran, and a second process that keeps one core busy.

Every figure the benchmarks print depends on the machine's other work: `describe()` gives the
line to print beside them (cores, load averages), and `one_core_busy()` starts a process that
spins on one core for as long as its block runs (an auditor's lab machine running another job),
so that a figure can be taken with the load it names.

    with one_core_busy() as busy:
        ...  # the timed work
    print(busy.summary())  # the spinner's CPU seconds and the load averages seen
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

SPIN = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end:\n    pass\n"


def load() -> tuple[float, float, float]:
    return os.getloadavg()


def describe() -> str:
    """The machine's cores and load averages now, for the line beside a figure."""
    one, five, fifteen = load()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        usable = os.cpu_count() or 1
    return f"{os.cpu_count()} cores ({usable} usable), load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


@dataclass
class Busy:
    """The spinning process of `one_core_busy` and what was seen while it ran."""

    pid: int | None = None
    loads: list[float] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    cpu_s: float = 0.0

    def sample(self) -> None:
        """Record the 1-minute load average now (call it between timed runs)."""
        self.loads.append(load()[0])

    def summary(self) -> str:
        if self.pid is None:
            return "no second process"
        wall = max(self.ended - self.started, 1e-9)
        lo, hi = (min(self.loads), max(self.loads)) if self.loads else (float("nan"),) * 2
        return (f"a second process spun on one core for {wall:.0f} s (it got {self.cpu_s:.0f} s of CPU, "
                f"{100 * self.cpu_s / wall:.0f} % of a core); 1-minute load average {lo:.2f}-{hi:.2f} meanwhile")


@contextmanager
def one_core_busy(enabled: bool = True, limit_s: float = 7200.0) -> Iterator[Busy]:
    """A process spinning on one core while the block runs (none when not `enabled`). It ends
    itself after `limit_s` whatever happens to this one, and is ended when the block ends."""
    busy = Busy()
    if not enabled:
        yield busy
        return
    proc = subprocess.Popen([sys.executable, "-c", SPIN, str(limit_s)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    busy.pid = proc.pid
    busy.started = time.monotonic()
    time.sleep(1.0)  # running before the first timed step
    busy.sample()
    try:
        yield busy
    finally:
        busy.sample()
        busy.ended = time.monotonic()
        proc.terminate()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            busy.cpu_s = usage.ru_utime + usage.ru_stime
            proc.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # pragma: no cover - already reaped
            pass
