"""Chunks on up to two threads: the pool every stage's work runs on, and the chunk sizes of a pass.

Samples per chunk of a pass: at least `CHUNK`, and as many as leave about `CHUNKS_PER_PASS`
chunks (several per thread) up to `MAX_CHUNK`. `THREADS` (None: ``WORKSTATION_CHECKER_THREADS``,
else min(2, usable cores)) sets how many threads take chunks.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor



# Samples per chunk of a pass: at least CHUNK, and as many as leave about CHUNKS_PER_PASS chunks
# (several per thread) up to MAX_CHUNK. A pass makes a few dozen numpy calls per chunk on
# subsets of it, so fewer, larger chunks spend less time outside numpy's loops; at a million
# samples 1 << 17 measured faster than 1 << 15 on two threads, though a chunk's temporaries no
# longer fit in a core's cache.
CHUNK = 1 << 15
MAX_CHUNK = 1 << 17
CHUNKS_PER_PASS = 8
THREADS: int | None = None  # None: WORKSTATION_CHECKER_THREADS, else min(2, usable cores)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool when needed."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _threads() -> int:
    if THREADS is not None:
        return max(1, int(THREADS))
    env = os.environ.get("WORKSTATION_CHECKER_THREADS", "").strip()
    if env.isdigit():
        return max(1, int(env))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(2, cores))


def _run_tasks(n_tasks: int, fn: Callable[[int], None], min_tasks: int = 2) -> None:
    """fn(0), ..., fn(n_tasks - 1) on up to two threads (numpy releases the GIL in its loops):
    both take the next task as they finish one, the calling thread too, so a core busy with
    other work slows the whole down to one thread's speed, not below it."""
    global _pool
    nt = min(_threads(), n_tasks) if n_tasks >= min_tasks else 1
    if nt <= 1:
        for k in range(n_tasks):
            fn(k)
        return
    with _pool_lock:
        if _pool is None or _pool._max_workers < nt - 1:
            _pool = ThreadPoolExecutor(max_workers=nt - 1, thread_name_prefix="checker")
        pool = _pool
    counter = itertools.count()  # next() is atomic under the GIL
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            k = next(counter)
            if k >= n_tasks:
                return
            try:
                fn(k)
            except BaseException:
                stop.set()
                raise

    futures = [pool.submit(run) for _ in range(nt - 1)]
    try:
        run()
    finally:
        for fut in futures:
            fut.result()


def _chunk_size(n: int) -> int:
    return max(1, CHUNK, min(MAX_CHUNK, -(-n // CHUNKS_PER_PASS)))


def _run_chunks(n: int, fn: Callable[[int, int], None]) -> None:
    """fn(lo, hi) over [0, n) in chunks of `_chunk_size` samples (``_run_tasks``; one thread
    below four chunks)."""
    size = _chunk_size(n)
    _run_tasks(-(-n // size), lambda k: fn(k * size, min((k + 1) * size, n)), min_tasks=4)
