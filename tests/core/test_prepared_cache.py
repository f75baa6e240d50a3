"""The checker's preparation kept beside the loader's detection cache entry: a later open maps
it instead of preparing again, and gives exactly the verdicts of a preparation from scratch;
any change of what it was computed from, and any damage, prepares again; a folder that cannot
take it costs only the next preparation."""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import os
import weakref
from pathlib import Path

import numpy as np
import pytest

from tests.core.conftest import is_mapped, load_spatial, resident_kb, scanned_spatial
from tests.fs_faults import FullDiskAt, writable_then_read_only
from workstation.dataset import Dataset
from workstation.methods.spatial import checker, prepared_cache
from workstation.methods.spatial.checker import evaluate, prepare
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project


def _kept(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob(f"*/{prepared_cache.PREFIX}*"))


def _prepared_here(ds: Dataset) -> bool:
    """Prepare `ds`; True when the preparation was computed, False when it was mapped."""
    computed = {"n": 0}
    real = checker.prepared._run_tasks

    def counting(*a, **k):
        computed["n"] += 1
        return real(*a, **k)

    checker.prepared._run_tasks = counting
    try:
        prepare(ds)
    finally:
        checker.prepared._run_tasks = real
    prepared_cache.wait_for_writes()
    return computed["n"] > 0


def _assert_same_verdicts(folder: Path, a: Dataset, b: Dataset) -> None:
    with Project.open(folder, read_only=True) as p:
        _, cfg = SpatialStore(p).active_config()
    for c in (cfg, cfg.replace(t_det=0.5, min_area_fraction=0.01, margin=0.08)):
        va, vb = evaluate(a, c), evaluate(b, c)
        for k in ("verdict", "reason", "reason_detail", "conf", "delta", "sel_a", "sel_b", "sel2_a", "sel2_b"):
            assert np.array_equal(getattr(va, k), getattr(vb, k), equal_nan=True), k


def test_a_later_open_maps_the_kept_preparation_and_gives_the_same_verdicts(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    assert _prepared_here(load_spatial(project))  # the first open prepares, and keeps it
    (kept,) = _kept(cache_dir)
    assert (kept / "manifest.json").exists() and not list(kept.parent.glob(".tmp-*"))
    again = load_spatial(project)
    assert not _prepared_here(again)  # mapped, not computed
    prep = prepare(again)
    assert is_mapped(prep.order) and is_mapped(prep.geom["d"]) and not prep.area0.flags.writeable
    _assert_same_verdicts(project, again, scanned)
    for name in ("order", "sample_start", "seg_count", "row0", "score0", "vscore", "s2"):  # as computed
        ref = getattr(prepare(scanned), name)
        assert getattr(prep, name).dtype == ref.dtype and np.array_equal(getattr(prep, name), ref), name


_ALL_ARRAYS = ("order", "order_base", "sample_start", "seg_count", "row0", "vrow0", "score0", "area0", "vscore", "varea", "s2")


def test_the_open_that_keeps_its_preparation_goes_on_with_the_kept_files(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once written, the first open's preparation is read from its files like a later open's,
    and the arrays it computed are let go (their memory is the process's until then)."""
    scanned = scanned_spatial(project, monkeypatch)
    computed: list[weakref.ref[np.ndarray]] = []
    real = prepared_cache.save_in_background

    def spy(where, arrays, then=None):
        computed.extend(weakref.ref(a) for a in arrays.values())
        return real(where, arrays, then)

    monkeypatch.setattr(prepared_cache, "save_in_background", spy)
    first = load_spatial(project)
    assert _prepared_here(first)  # computed, kept, and (the write over) switched to the files
    prep = prepare(first)
    assert len(computed) == len(_ALL_ARRAYS) + len(prep.geom)
    for name in _ALL_ARRAYS:
        assert is_mapped(getattr(prep, name)), name
    assert all(is_mapped(a) for a in prep.geom.values())
    gc.collect()
    assert [r for r in computed if r() is not None] == []  # the computed arrays are gone
    ref = prepare(scanned)
    for name in _ALL_ARRAYS:
        if getattr(ref, name) is not None:
            assert np.array_equal(getattr(prep, name), getattr(ref, name)), name
    _assert_same_verdicts(project, first, scanned)


def test_kept_files_that_differ_from_the_preparation_in_memory_are_not_used(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    real = prepared_cache.load

    def altered(*a, **k):  # what the files hold once written: one value off
        out = real(*a, **k)
        if out is not None:
            out = dict(out, geom_d=np.asarray(out["geom_d"]) + 1.0)
        return out

    monkeypatch.setattr(prepared_cache, "load", altered)
    caplog.set_level(logging.WARNING)
    first = load_spatial(project)
    assert _prepared_here(first)
    prep = prepare(first)
    assert not is_mapped(prep.geom["d"]) and not is_mapped(prep.order)  # still the computed ones
    assert "differs from the one in memory" in caplog.text
    _assert_same_verdicts(project, first, scanned)


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc/self/smaps")
def test_what_only_the_area_filter_reads_goes_back_to_the_page_cache_once_its_stage_is_built(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    _prepared_here(load_spatial(project))
    ds = load_spatial(project)
    assert not _prepared_here(ds)
    prep = prepare(ds)
    (kept,) = _kept(cache_dir)
    area_only = [k for k in ("order", "order_base", "sample_start", "seg_count", "area0", "varea", "vrow0")
                 if getattr(prep, k).size]  # (the run has no perturbed variants: no varea, vrow0)
    assert {"order", "seg_count", "area0"} <= set(area_only)
    for name in area_only:
        float(np.asarray(getattr(prep, name)).sum())  # read: resident
        assert resident_kb(kept / f"{name}.npy") > 0, name
    with Project.open(project, read_only=True) as p:
        _, cfg = SpatialStore(p).active_config()
    evaluate(ds, cfg)  # builds the area stage, then selects and decides
    for name in area_only:
        assert resident_kb(kept / f"{name}.npy") == 0, name
    for name in ("geom_d.npy", "row0.npy", "score0.npy"):  # what every pass reads stays
        assert resident_kb(kept / name) > 0, name
    _assert_same_verdicts(project, ds, scanned)  # another area filter reads them again


@pytest.mark.parametrize("edit", [
    "UPDATE prompts SET attrs = '{\"relation\": \"above\"}' WHERE prompt_id = (SELECT min(prompt_id) FROM prompts)",
    "UPDATE prompts SET entities = ['zebra', 'giraffe'] WHERE prompt_id = (SELECT max(prompt_id) FROM prompts)",
    "UPDATE samples SET width = width * 2 WHERE ord = 3",
    "UPDATE detections SET x1 = x1 + 3 WHERE rowid = 11",
])
def test_any_change_of_what_it_was_prepared_from_prepares_again(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    _prepared_here(load_spatial(project))
    before = _kept(cache_dir)
    with Project.open(project) as p:
        p.con.execute(edit)
    fresh = load_spatial(project)
    assert _prepared_here(fresh)
    after = _kept(cache_dir)
    assert len(after) == 1 and after != before  # the stale one is gone
    _assert_same_verdicts(project, fresh, scanned_spatial(project, monkeypatch))
    assert not _prepared_here(load_spatial(project))


def test_another_version_of_the_checker_prepares_again(project: Path, cache_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _prepared_here(load_spatial(project))
    monkeypatch.setattr(prepared_cache, "code_digest", lambda: "another checker")
    assert _prepared_here(load_spatial(project))
    assert len(_kept(cache_dir)) == 1


def test_a_change_to_any_module_of_the_checker_is_another_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept preparation's key reads the source of every module of the checker package: an
    upgrade that changes only one stage's module (here the decision pass's) prepares again."""
    real = Path.read_bytes
    changed = Path(checker.__file__).parent / "decision.py"

    def read_bytes(self: Path) -> bytes:
        data = real(self)
        return data + b"\n# changed\n" if edited and self == changed else data

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    edited = False
    prepared_cache.code_digest.cache_clear()
    try:
        before = prepared_cache.code_digest()
        prepared_cache.code_digest.cache_clear()
        edited = True
        after = prepared_cache.code_digest()
    finally:
        prepared_cache.code_digest.cache_clear()
    assert before != after


def test_replaced_columns_are_not_the_entrys_and_prepare_again(project: Path, cache_dir: Path) -> None:
    _prepared_here(load_spatial(project))
    ds = load_spatial(project)
    ds.detections = dataclasses.replace(ds.detections, x1=np.asarray(ds.detections.x1) + 1.0)
    assert _prepared_here(ds)


def test_a_damaged_kept_preparation_is_prepared_again_with_a_warning(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    _prepared_here(load_spatial(project))

    def rewrite(name: str, change) -> None:
        def damage(folder: Path) -> None:
            arr = np.load(folder / f"{name}.npy")
            np.save(folder / f"{name}.npy", change(arr))
        return damage

    def set_first(value: int):
        def change(a: np.ndarray) -> np.ndarray:
            a.reshape(-1)[0] = value
            return a
        return change

    damages = [
        lambda f: (f / "geom_d.npy").write_bytes((f / "geom_d.npy").read_bytes()[:100]),  # truncated
        lambda f: (f / "manifest.json").write_text("{not json", encoding="utf-8"),
        lambda f: (f / "row0.npy").unlink(),
        lambda f: ((f / "s2.npy").unlink(), os.mkfifo(f / "s2.npy")),  # a pipe: reading it would block
        rewrite("row0", set_first(-7)),  # a row that would index from the end
        rewrite("sample_start", set_first(5)),  # offsets that do not start at 0
        rewrite("seg_count", lambda a: a[::-1].copy()),  # counts that do not add up
        rewrite("area0", lambda a: a.astype(np.float32)),  # another dtype
        rewrite("vscore", lambda a: a[:, :-1].copy()),  # another shape
    ]
    for damage in damages:
        (kept,) = _kept(cache_dir)
        damage(kept)
        caplog.clear()
        ds = load_spatial(project)
        with caplog.at_level(logging.WARNING, logger="workstation.methods.spatial.prepared_cache"):
            assert _prepared_here(ds)
        assert "unusable" in caplog.text and str(kept) in caplog.text
        _assert_same_verdicts(project, ds, scanned)
        assert len(_kept(cache_dir)) == 1  # kept again, whole


def test_a_full_disk_mid_write_keeps_nothing_and_the_verdicts_are_right(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    save = FullDiskAt(5)  # the fifth array finds the disk full
    ds = load_spatial(project)  # the detections' entry written before the disk fills
    monkeypatch.setattr(prepared_cache.np, "save", save)
    with caplog.at_level(logging.INFO, logger="workstation.methods.spatial.prepared_cache"):
        assert _prepared_here(ds)
    assert "not kept" in caplog.text
    (entry,) = [p for p in cache_dir.iterdir()]
    assert not [p for p in entry.iterdir() if p.is_dir()]  # neither a kept folder nor a temporary one
    _assert_same_verdicts(project, ds, scanned)
    monkeypatch.setattr(prepared_cache.np, "save", save.real)
    assert _prepared_here(load_spatial(project)) and not _prepared_here(load_spatial(project))


def test_a_cache_folder_turned_read_only_costs_only_the_preparation(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with writable_then_read_only(tmp_path / "ro") as make_read_only:
        monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(tmp_path / "ro"))
        monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
        load_spatial(project)  # the detections' entry is written
        make_read_only()
        ds = load_spatial(project)  # read from the entry
        assert _prepared_here(ds)  # prepared; keeping it fails quietly
        assert not list((tmp_path / "ro" / "detections").glob(f"*/{prepared_cache.PREFIX}*"))
        _assert_same_verdicts(project, ds, scanned_spatial(project, monkeypatch))


def test_the_kept_preparation_counts_toward_the_cache_size_cap(project: Path, cache_dir: Path) -> None:
    from workstation.store import detection_cache

    load_spatial(project)
    (entry,) = [p for p in cache_dir.iterdir()]
    columns = detection_cache._entry_size(entry)
    _prepared_here(load_spatial(project))
    (kept,) = _kept(cache_dir)
    assert detection_cache._entry_size(entry) == columns + sum(f.stat().st_size for f in kept.iterdir())
    meta = json.loads((kept / "manifest.json").read_text())
    assert "order" in meta["arrays"] and set(meta["files"]) == {f"{k}.npy" for k in meta["arrays"]}


def test_keeping_a_preparation_makes_room_under_the_size_cap(
        project: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The preparation is written after its entry; the least recently used other entries go
    until it fits under the cap too (the entry it belongs to stays)."""
    import shutil

    from workstation.store import detection_cache

    other = tmp_path / "other"
    shutil.copytree(project, other)
    with Project.open(other) as p:  # its own detections: its own entry
        p.con.execute("UPDATE detections SET score = score * 0.9 WHERE rowid = 0")
    load_spatial(other)
    (other_entry,) = list(cache_dir.iterdir())
    ds = load_spatial(project)
    entries = sorted(cache_dir.iterdir())
    assert len(entries) == 2
    both = sum(detection_cache._entry_size(e) for e in entries)
    monkeypatch.setenv("WORKSTATION_CACHE_MAX_GB", str((both + 1000) / (1 << 30)))  # no room for more
    assert _prepared_here(ds)
    (kept,) = _kept(cache_dir)
    assert [e for e in cache_dir.iterdir()] == [kept.parent]  # the other project's entry made room
    assert kept.parent != other_entry
