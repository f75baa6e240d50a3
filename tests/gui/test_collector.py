"""The window's process collects cyclic garbage on the GUI thread only: a worker that allocates
never runs a collection (which could free Qt objects off the GUI thread), and the garbage is
still collected, by the GUI thread's timer."""

from __future__ import annotations

import gc
import threading
import weakref

from workstation.util import collection


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_collections_run_on_the_gui_thread_only_and_still_free_cycles(qtbot) -> None:
    from ui.collector import GuiThreadCollector

    threads: list[str] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            threads.append(threading.current_thread().name)

    gc.collect()
    c = GuiThreadCollector(interval_ms=20)
    gc.callbacks.append(seen)
    try:
        assert not gc.isenabled()
        with collection.paused():  # a load's pause ends without turning automatic collection on
            pass
        assert not gc.isenabled()
        freed = threading.Event()
        node = _Node()
        weakref.finalize(node, freed.set)
        del node

        def allocate() -> None:  # far past the automatic collector's threshold
            keep = [[i] for i in range(200_000)]
            del keep

        worker = threading.Thread(target=allocate, name="allocating-worker")
        worker.start()
        worker.join()
        assert not freed.is_set() and "allocating-worker" not in threads
        more = [[i] for i in range(2 * gc.get_threshold()[0])]  # the count now past the threshold
        qtbot.waitUntil(freed.is_set, timeout=5000)
        del more
        assert threads and set(threads) == {threading.main_thread().name}
    finally:
        gc.callbacks.remove(seen)
        c.stop()
    assert gc.isenabled() and not collection.pinned()
