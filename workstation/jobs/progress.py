"""Progress of a job: what a worker yields, writes to ``progress.json`` and a watcher shows.

A ``Progress`` is a plain record (items done of total, items per second, ETA, a message and the
job's state). ``RateMeter`` measures the rate over the items made in this launch only, so items
skipped on resume do not inflate it. ``format_progress`` gives the one-line text the CLI and the
job panel show.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.atomic import atomic_write_text

# job states; "starting" and "running" are live, the others final
QUEUED = "queued"
STARTING = "starting"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
CANCELLED = "cancelled"
INTERRUPTED = "interrupted"  # recorded as running, but no process is working on it
LIVE_STATES = (STARTING, RUNNING)
FINAL_STATES = (DONE, FAILED, CANCELLED)


@dataclass
class Progress:
    """One progress report of a job."""

    done: int = 0
    total: int = 0
    rate: float = 0.0  # items per second in this launch
    eta: float | None = None  # seconds left, None while unknown
    message: str = ""
    state: str = RUNNING
    batch_size: int = 0
    error: str = ""  # the failure message, when state == failed
    pid: int = 0
    updated: float = 0.0  # time.time() of the report

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else (1.0 if self.state == DONE else 0.0)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Progress":
        names = {f.name for f in dataclasses.fields(Progress)}
        return Progress(**{k: v for k, v in d.items() if k in names})


def format_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "--:--"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def format_progress(p: Progress) -> str:
    """'12/32 (38%) · 3.1 items/s · ETA 00:07 · message'."""
    parts = [f"{p.done}/{p.total}" + (f" ({100.0 * p.fraction:.0f}%)" if p.total else "")]
    if p.rate > 0:
        parts.append(f"{p.rate:.2f} items/s" if p.rate < 10 else f"{p.rate:.0f} items/s")
    if p.state in (STARTING, RUNNING) and p.done < p.total:
        parts.append(f"ETA {format_seconds(p.eta)}")
    if p.message:
        parts.append(p.message)
    return " · ".join(parts)


class RateMeter:
    """Items per second and ETA over the items made since ``start`` (not those skipped)."""

    def __init__(self, total: int, already: int = 0) -> None:
        self.total = total
        self.done = already
        self._base = already
        self._t0: float | None = None

    def start(self) -> None:
        if self._t0 is None:
            self._t0 = time.monotonic()

    def add(self, n: int) -> None:
        self.start()
        self.done += n

    @property
    def rate(self) -> float:
        if self._t0 is None:
            return 0.0
        dt = time.monotonic() - self._t0
        made = self.done - self._base
        return made / dt if dt > 0 and made > 0 else 0.0

    @property
    def eta(self) -> float | None:
        r = self.rate
        if r <= 0:
            return None if self.done < self.total else 0.0
        return max(0.0, (self.total - self.done) / r)

    def progress(self, message: str = "", state: str = RUNNING, batch_size: int = 0) -> Progress:
        return Progress(self.done, self.total, self.rate, self.eta, message, state, batch_size,
                        updated=time.time())


def write_progress(path: Path, p: Progress) -> None:
    """Replace ``path`` atomically with ``p`` as JSON (a reader never sees half a file; the
    temporary file is made exclusively under an unpredictable name, `util.atomic`)."""
    try:
        atomic_write_text(path, json.dumps(p.to_dict()), fsync=False)
    except OSError:
        # progress is advisory: a full disk must not stop the job here (the result files report it)
        pass


def read_progress(path: Path) -> Progress | None:
    try:
        return Progress.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
