"""Group codes the loader remembers are exactly what factorize computes, and never outlive
or mislabel their column."""

from __future__ import annotations

import gc

import numpy as np

from workstation.util import grouping
from workstation.util.grouping import factorize, remember_codes


def test_loaded_columns_give_the_codes_factorize_computes(tmp_path):
    from workstation.dataset import Dataset, Detections, Prompts, Samples
    from workstation.store import Project

    n = 50
    runs = [f"run{i % 3}" for i in range(n)][::-1]
    prompts = [f"p{(i * 7) % 11}" for i in range(n)]
    ds = Dataset(Samples.build([f"s{i}" for i in range(n)], runs, prompts),
                 Detections.empty(), Prompts.build(sorted(set(prompts)), sorted(set(prompts)), method="spatial"))
    with Project.create(tmp_path / "p") as p:
        for r in sorted(set(runs)):
            p.samples.add_run(r)
        p.samples.add_dataset(ds)
        back = p.samples.load_dataset()
    for col in ("run_id", "prompt_id"):
        values = getattr(back.samples, col)
        fresh = np.array(values.tolist(), dtype=object)  # the same values, not remembered
        assert grouping._remembered(values) is not None and grouping._remembered(fresh) is None
        codes, names = factorize(values, sort=False)
        want_codes, want_names = factorize(fresh, sort=False)
        assert names == want_names and np.array_equal(codes, want_codes)
        codes[:] = 0  # a caller's copy: the remembered codes stay right
        assert np.array_equal(factorize(values, sort=False)[0], want_codes)


def test_remembered_codes_go_with_their_array():
    values = np.array(["b", "a", "b"], dtype=object)
    remember_codes(values, np.array([0, 1, 0]), ["b", "a"])
    key = id(values)
    assert key in grouping._known
    del values
    gc.collect()
    assert key not in grouping._known
    other = np.array(["x", "y"], dtype=object)  # a new array: nothing remembered for it
    assert grouping._remembered(other) is None


def test_an_array_that_dies_on_the_thread_holding_the_lock_is_forgotten_without_a_hang():
    """A collection can free a remembered array inside `remember_codes`, on the thread that
    holds the table's lock: its entry's callback then runs on that thread and must not wait for
    the lock (a load that did froze there)."""
    import threading

    box = {"values": np.array(["b", "a", "b"], dtype=object)}
    remember_codes(box["values"], np.array([0, 1, 0]), ["b", "a"])
    key = id(box["values"])
    done = threading.Event()

    def free_it_holding_the_lock() -> None:
        with grouping._known_lock:
            box.pop("values")  # the last reference: its callback runs here, now
        done.set()

    t = threading.Thread(target=free_it_holding_the_lock, daemon=True)
    t.start()
    t.join(20)
    assert done.is_set(), "the callback waited for the lock its own thread holds"
    assert key not in grouping._known


def test_a_dead_arrays_callback_leaves_a_newer_arrays_entry_under_the_same_id():
    values = np.array(["b", "a"], dtype=object)
    remember_codes(values, np.array([0, 1]), ["b", "a"])
    key = id(values)
    old_ref = grouping._known[key][0]
    newer = np.array(["c"], dtype=object)
    grouping._known[key] = (grouping.weakref.ref(newer), np.array([0], np.int32), ["c"])  # as if the id were reused
    del values  # the old array's callback runs now
    gc.collect()
    assert grouping._known[key][0] is not old_ref and grouping._known[key][2] == ["c"]
    grouping._known.pop(key, None)
