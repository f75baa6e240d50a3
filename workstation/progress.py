"""Progress bars for the terminal (tqdm), fed by the core's progress reports.

The core reports progress in two ways: generators that yield `(done, total)` and return a
result (`calibration.iter_grid_search`), and callbacks `progress(done, total)` (importers,
`grid_search`, the demo builder). `drive` consumes the first, `TerminalProgress` is the second.
Bars go to stderr and are hidden when stderr is not a terminal (tests, pipes) unless forced;
where a bar is hidden, `TerminalProgress(..., lines_every_s=S)` prints a line every S seconds
instead (count, share and time left), so a long stage is never silent in a log or an IDE console.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Generator, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def _disabled(force: bool | None) -> bool:
    if force is not None:
        return not force
    try:
        return not sys.stderr.isatty()
    except (AttributeError, ValueError):
        return True


class TerminalProgress:
    """A `progress(done, total)` callback that draws one tqdm bar; use as a context manager.

    `done` is absolute (not an increment); a changing `total` resizes the bar. Extra positional
    or keyword arguments (e.g. a message) are shown as the bar's postfix when they are strings.
    With `lines_every_s`, a hidden bar becomes a line on stdout at most that often:
    ``  spatial: 320/800 images (40%), about 18 s left`` (`label` leads it, the description by
    default; `noun` names the items).
    """

    def __init__(self, desc: str, unit: str = "it", show: bool | None = None, *,
                 lines_every_s: float | None = None, label: str | None = None, noun: str | None = None,
                 clock: Any = time.monotonic) -> None:
        self.desc = desc
        self.unit = unit
        self._disable = _disabled(show)
        self._bar: Any = None
        self.done = 0
        self.total = 0
        self._lines_every = lines_every_s if self._disable else None
        self._noun = noun or unit
        self._label = label or desc
        self._clock = clock
        self._t0: float | None = None
        self._last_line = 0.0

    def __enter__(self) -> "TerminalProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure(self, total: int) -> Any:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total or None, desc=self.desc, unit=self.unit, disable=self._disable,
                             file=sys.stderr, dynamic_ncols=True, leave=False)
        return self._bar

    def __call__(self, done: int, total: int | None = None, *extra: Any, **kw: Any) -> None:
        total = int(total) if total is not None else self.total
        bar = self._ensure(total)
        if total and bar.total != total:
            bar.total = total
            bar.refresh()
        step = int(done) - self.done
        if step:
            bar.update(step)
        self.done, self.total = int(done), total
        msg = next((x for x in (*extra, *kw.values()) if isinstance(x, str)), None)
        if msg:
            bar.set_postfix_str(msg, refresh=False)
        if self._lines_every is not None:
            self._line()

    def _line(self) -> None:
        now = self._clock()
        if self._t0 is None:
            self._t0 = self._last_line = now
            return
        if now - self._last_line < float(self._lines_every or 0) or not self.total:
            return
        self._last_line = now
        print(f"  {self._label}: {progress_text(self.done, self.total, now - self._t0, self._noun)}", flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _duration(seconds: float) -> str:
    s = max(1, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def progress_text(done: int, total: int, elapsed_s: float, noun: str = "items") -> str:
    """``320/800 images (40%), about 18 s left``: the time left from the rate so far."""
    text = f"{done:,}/{total:,} {noun} ({100.0 * done / total:.0f}%)" if total else f"{done:,} {noun}"
    if 0 < done < total and elapsed_s > 0:
        text += f", about {_duration(elapsed_s / done * (total - done))} left"
    return text


def drive(gen: Generator[Any, Any, T], desc: str, unit: str = "it", show: bool | None = None) -> T:
    """Run a progress generator to the end with a bar; return the generator's return value.

    The generator yields `(done, total)` tuples (anything else just ticks the bar). Ctrl-C
    closes the generator (so it can clean up) and propagates.
    """
    with TerminalProgress(desc, unit, show) as bar:
        try:
            while True:
                item = next(gen)
                if isinstance(item, tuple) and len(item) >= 2:
                    bar(int(item[0]), int(item[1]), *item[2:])
                else:
                    bar(bar.done + 1)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except BaseException:
            gen.close()
            raise


def track(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it",
          show: bool | None = None) -> Iterator[T]:
    """Iterate with a bar (thin wrapper over tqdm that follows the terminal rule above)."""
    from tqdm import tqdm

    yield from tqdm(items, desc=desc, total=total, unit=unit, disable=_disabled(show), file=sys.stderr,
                    dynamic_ncols=True, leave=False)
