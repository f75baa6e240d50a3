"""The loader's detection cache: memory-mapped columns in the user's cache folder, used only
while they are exactly what a scan of the project would give, rebuilt when they are not, and
never in the way when the folder cannot be written."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.core.conftest import is_mapped, load_spatial, resident_kb, scanned_spatial
from tests.fs_faults import FullDiskAt, tiny_disk
from workstation.dataset import Dataset
from workstation.methods.spatial.checker import evaluate, prepare
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project, cache_files, detection_cache
from workstation.store.samples import SamplesRepo


def _assert_same_detections(a: Dataset, b: Dataset) -> None:
    da, db = a.detections, b.detections
    assert len(da) == len(db) and a.variant_names == b.variant_names
    for k in ("source", "variant", "score", "x1", "y1", "x2", "y2", "sample_idx"):
        x, y = np.asarray(getattr(da, k)), np.asarray(getattr(db, k))
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), k
    assert da.label.tolist() == db.label.tolist()


def _assert_same_verdicts(folder: Path, a: Dataset, b: Dataset) -> None:
    with Project.open(folder, read_only=True) as p:
        _, cfg = SpatialStore(p).active_config()
    va, vb = evaluate(a, cfg), evaluate(b, cfg)
    for k in ("verdict", "reason", "reason_detail", "conf", "delta", "sel_a", "sel_b", "sel2_a", "sel2_b"):
        assert np.array_equal(getattr(va, k), getattr(vb, k), equal_nan=True), k


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.iterdir() if not p.name.startswith(".")) if cache_dir.exists() else []


def test_the_second_open_maps_the_first_opens_columns_and_checks_the_same(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    first = load_spatial(project)  # scans, writes the entry, returns it mapped
    assert len(_entries(cache_dir)) == 1
    assert is_mapped(np.asarray(first.detections.x1))

    def no_scan(*_a, **_k):  # a second open must not read the detections table
        raise AssertionError("the detections were scanned although the cache holds them")

    monkeypatch.setattr(SamplesRepo, "_scan_detections", no_scan)
    second = load_spatial(project)
    assert is_mapped(np.asarray(second.detections.score))
    assert not np.asarray(second.detections.score).flags.writeable
    _assert_same_detections(second, scanned)
    _assert_same_verdicts(project, second, scanned)


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc/self/smaps")
def test_the_checker_hands_the_mapped_pages_back_and_reads_them_again(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_spatial(project)
    ds = load_spatial(project)
    (entry,) = _entries(cache_dir)
    scanned = scanned_spatial(project, monkeypatch)
    assert scanned.drop_mapped_pages() == 0  # columns in memory: nothing to hand back
    float(np.asarray(ds.detections.x1).sum())  # every page of the column read
    assert resident_kb(entry / "x1.npy") > 0
    prepare(ds)  # reads every column, then hands their pages back
    for name in ("x1", "y2", "score", "label", "source"):
        assert resident_kb(entry / f"{name}.npy") == 0, name
    _assert_same_detections(ds, scanned)  # read again from the page cache
    assert resident_kb(entry / "x1.npy") > 0
    _assert_same_verdicts(project, ds, scanned)


def test_opening_a_project_again_and_again_leaves_nothing_behind(project: Path, cache_dir: Path) -> None:
    """Each open and close of a project hands back every Python object it made: a few left
    alive by each open would sit among a large project's freed memory and keep it resident
    (a closed project's memory must not grow with every open)."""
    import gc
    import tracemalloc

    for _ in range(3):  # the entry written, then read back: whatever warms up, warms up here
        load_spatial(project)
    gc.collect()
    tracemalloc.start(8)
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(24):
            ds = load_spatial(project)
            assert is_mapped(np.asarray(ds.detections.x1))
            del ds
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    ours = [tracemalloc.Filter(True, "*/workstation/*", all_frames=True)]
    grown = [d for d in after.filter_traces(ours).compare_to(before.filter_traces(ours), "traceback")
             if d.count_diff > 0]
    assert sum(d.count_diff for d in grown) < 24, "\n".join(  # fewer than one object an open
        f"{d.count_diff} objects ({d.size_diff} B) from {d.traceback.format()[-6:]}" for d in grown[:5])


@pytest.mark.parametrize("edit", [
    "UPDATE detections SET score = score * 0.5 WHERE rowid = (SELECT min(rowid) FROM detections)",
    "UPDATE detections SET x1 = x1 + 1 WHERE rowid = (SELECT max(rowid) FROM detections)",
    "UPDATE detections SET label = 'zebra' WHERE rowid = 7",
    "DELETE FROM detections WHERE rowid = 3",
    "INSERT INTO detections SELECT * FROM detections WHERE rowid = 5",
])
def test_any_edit_of_the_detections_gives_a_new_entry_that_matches_a_scan(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    load_spatial(project)
    before = _entries(cache_dir)
    with Project.open(project) as p:
        p.con.execute(edit)
    fresh = load_spatial(project)
    after = _entries(cache_dir)
    assert len(after) == 1 and after != before  # the project's stale entry is gone
    scanned = scanned_spatial(project, monkeypatch)
    _assert_same_detections(fresh, scanned)
    _assert_same_verdicts(project, fresh, scanned)


def test_a_damaged_entry_is_rebuilt_with_a_warning(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    load_spatial(project)
    (entry,) = _entries(cache_dir)
    scanned = scanned_spatial(project, monkeypatch)

    def damage_codes() -> None:
        arr = np.load(entry / "label.npy")
        arr[0] = 30000  # a label code that names no label
        np.save(entry / "label.npy", arr)

    damages = [
        lambda: (entry / "x2.npy").write_bytes((entry / "x2.npy").read_bytes()[:200]),  # truncated
        lambda: (entry / "manifest.json").write_text("{not json", encoding="utf-8"),
        damage_codes,
        lambda: (entry / "score.npy").unlink(),
        lambda: ((entry / "y1.npy").unlink(), os.mkfifo(entry / "y1.npy")),  # a pipe: reading it would block
        lambda: np.save(entry / "sample.npy", np.arange(5, dtype=np.int64)),  # wrong length
    ]
    for damage in damages:
        damage()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
            ds = load_spatial(project)
        assert "unusable" in caplog.text and str(entry) in caplog.text
        _assert_same_detections(ds, scanned)
        (entry,) = _entries(cache_dir)  # written again, whole


def test_a_folder_that_cannot_be_written_leaves_the_detections_in_memory(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(blocker))
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
    scanned = scanned_spatial(project, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
        ds = load_spatial(project)
    assert "not written" in caplog.text
    assert not is_mapped(np.asarray(ds.detections.x1))
    _assert_same_detections(ds, scanned)


def test_the_scan_fills_the_entrys_columns_in_their_files(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    written: list[str] = []
    real = cache_files.write_arrays

    def write_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
        written.extend(arrays)
        real(folder, arrays)

    monkeypatch.setattr(cache_files, "write_arrays", write_arrays)
    ds = load_spatial(project)
    assert written == ["sample"]  # the samples' offsets; every column of detections was filled in place
    (entry,) = _entries(cache_dir)
    assert sorted(p.name for p in entry.iterdir()) == sorted(
        [f"{k}.npy" for k in ("source", "variant", "label", "score", "x1", "y1", "x2", "y2", "sample")]
        + [cache_files.MANIFEST])
    _assert_same_detections(ds, scanned)
    _assert_same_detections(load_spatial(project), scanned)  # read back from the files


def test_a_load_of_some_of_the_samples_writes_its_entry_after_the_scan(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan reads every detection of the table; only a load of all the samples keeps them
    all, so only then are the scan's columns the entry's own files."""
    with Project.open(project) as p:  # half of the samples moved to a second run
        p.con.execute("INSERT INTO runs SELECT 'second', method, model, params, provenance, source, created_at "
                      "FROM runs LIMIT 1")
        p.con.execute("UPDATE samples SET run_id = 'second' WHERE ord % 2 = 0")
    with monkeypatch.context() as m:
        m.setenv("WORKSTATION_DETECTION_CACHE_MIN", "off")
        with Project.open(project, read_only=True) as p:
            scanned = p.samples.load_dataset(runs=["second"])
    written: list[str] = []
    mapped: list[str] = []
    real, real_array = cache_files.write_arrays, detection_cache.PendingEntry.array

    def write_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
        written.extend(arrays)
        real(folder, arrays)

    def array(self: detection_cache.PendingEntry, name: str, dtype: object, n: int) -> object:
        mapped.append(name)
        return real_array(self, name, dtype, n)

    monkeypatch.setattr(cache_files, "write_arrays", write_arrays)
    monkeypatch.setattr(detection_cache.PendingEntry, "array", array)
    with Project.open(project, read_only=True) as p:
        ds = p.samples.load_dataset(runs=["second"])
    assert mapped == []  # no file the size of the whole table made for half of it
    assert sorted(written) == sorted(["source", "variant", "label", "score", "x1", "y1", "x2", "y2", "sample"])
    assert 0 < len(ds.detections) < len(load_spatial(project).detections)
    _assert_same_detections(ds, scanned)


def test_a_full_disk_mid_write_leaves_no_partial_entry(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    save = FullDiskAt(1)  # what the scan did not fill in place (the samples' offsets) finds the disk full
    monkeypatch.setattr(detection_cache.np, "save", save)
    ds = load_spatial(project)
    assert save.calls == 1
    assert list(cache_dir.iterdir()) == []  # neither an entry nor the temporary folder
    _assert_same_detections(ds, scanned)
    monkeypatch.setattr(detection_cache.np, "save", save.real)
    load_spatial(project)
    assert len(_entries(cache_dir)) == 1


def test_a_column_whose_blocks_cannot_be_reserved_is_filled_in_memory_and_written_after(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    calls: list[int] = []
    real = os.posix_fallocate

    def fallocate(fd: int, offset: int, length: int) -> None:
        calls.append(length)
        if len(calls) == 4:  # the fourth column finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, offset, length)

    monkeypatch.setattr(os, "posix_fallocate", fallocate)
    with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
        ds = load_spatial(project)
    assert len(calls) == 4  # the columns after it are not tried
    assert caplog.text.count("filled in memory") == 1
    (entry,) = _entries(cache_dir)
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no leftover
    assert not [p for p in entry.iterdir() if p.name.startswith(".")]
    _assert_same_detections(ds, scanned)
    again = load_spatial(project)
    assert is_mapped(np.asarray(again.detections.x1))
    _assert_same_detections(again, scanned)


def test_a_disk_too_small_for_the_entry_leaves_nothing_behind_and_the_detections_whole(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = scanned_spatial(project, monkeypatch)
    with tiny_disk(tmp_path / "small-disk", "64k") as small:
        monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(small))
        monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
        ds = load_spatial(project)  # a column the disk has no room for would fault when written: it is not
        assert list((small / "detections").iterdir()) == []
        _assert_same_detections(ds, scanned)
        _assert_same_detections(load_spatial(project), scanned)


def test_small_projects_and_a_turned_off_cache_write_nothing(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "1000000")  # the default: more than 800 samples hold
    load_spatial(project)
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "off")
    load_spatial(project)
    assert not cache_dir.exists()


def test_projects_share_the_folder_under_its_size_cap_least_recently_used_first(
        project: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    others = []
    for i in range(3):
        dst = tmp_path / f"copy{i}"
        shutil.copytree(project, dst)
        with Project.open(dst) as p:  # each copy's detections differ: its own entry
            p.con.execute(f"UPDATE detections SET score = score * 0.9 WHERE rowid = {i}")
        others.append(dst)
    for dst in others:
        load_spatial(dst)
    entries = _entries(cache_dir)
    assert len(entries) == 3
    size = sum(f.stat().st_size for f in entries[0].iterdir())
    monkeypatch.setenv("WORKSTATION_CACHE_MAX_GB", str(2.5 * size / (1 << 30)))
    load_spatial(others[0])  # a hit: now the most recently used
    load_spatial(project)  # a fourth entry: the least recently used ones go until two fit
    kept = {json.loads((e / "manifest.json").read_text())["project"] for e in _entries(cache_dir)}
    assert kept == {str(project.resolve()), str(others[0].resolve())}


def test_loads_of_different_samples_of_one_project_keep_an_entry_each(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window loads a project once per method view (the spatial method's samples, another
    method's): each load's entry stays, so neither view makes the other scan again; an edit
    still replaces each of them."""
    with Project.open(project) as p:  # half of the samples moved to a second run
        p.con.execute("INSERT INTO runs SELECT 'second', method, model, params, provenance, source, created_at "
                      "FROM runs LIMIT 1")
        p.con.execute("UPDATE samples SET run_id = 'second' WHERE ord % 2 = 0")

    def by_run() -> Dataset:
        with Project.open(project, read_only=True) as p:
            return p.samples.load_dataset(runs=["second"])

    load_spatial(project)
    by_run()
    assert len(_entries(cache_dir)) == 2

    def no_scan(*_a, **_k):
        raise AssertionError("the detections were scanned although the cache holds them")

    with monkeypatch.context() as m:
        m.setattr(SamplesRepo, "_scan_detections", no_scan)
        load_spatial(project)
        by_run()
    with Project.open(project) as p:
        p.con.execute("UPDATE detections SET score = score * 0.5 WHERE rowid = 1")
    before = _entries(cache_dir)
    fresh = load_spatial(project)
    fresh_by_run = by_run()
    after = _entries(cache_dir)
    assert len(after) == 2 and not set(after) & set(before)  # both stale entries replaced
    _assert_same_detections(fresh, scanned_spatial(project, monkeypatch))
    assert 0 < len(fresh_by_run.detections) < len(fresh.detections)


class _Counted:
    """Calls of `SamplesRepo`'s aggregate pass (`_detection_cache_key`) and scan."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = {"aggregates": 0, "scan": 0}
        for name, attr in (("aggregates", "_detection_cache_key"), ("scan", "_scan_detections")):
            real = getattr(SamplesRepo, attr)

            def counted(self_: SamplesRepo, *a: object, _real: object = real, _name: str = name,
                        **k: object) -> object:
                self.calls[_name] += 1
                return _real(self_, *a, **k)  # type: ignore[operator]

            monkeypatch.setattr(SamplesRepo, attr, counted)


@pytest.mark.parametrize("mapping", ["hashes", "join"])
def test_a_first_open_keys_its_entry_from_its_own_scan_and_the_next_open_finds_it(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, mapping: str) -> None:
    """With no entry of its key's family in the cache, a load knows it will scan and skips the
    pass that aggregates the table's rows: its scan aggregates the rows it reads, and the entry
    gets the key a later open reads from the table (a hit, no scan). The join (sample ids whose
    first hashes collide) reads only the loaded samples' rows, so it takes the table's pass."""
    scanned = scanned_spatial(project, monkeypatch)
    if mapping == "join":
        monkeypatch.setattr(SamplesRepo, "_sample_hashes", lambda self, st: None)
    count = _Counted(monkeypatch)
    first = load_spatial(project)
    assert count.calls == {"aggregates": 0 if mapping == "hashes" else 1, "scan": 1}
    (entry,) = _entries(cache_dir)
    with Project.open(project, read_only=True) as p:
        st = p.con.raw.sql("SELECT hash(s.sample_id) AS h1, hash(s.sample_id || chr(31)) AS h2 FROM samples s "
                           "JOIN prompts q USING (prompt_id) WHERE q.method = 'spatial' ORDER BY s.ord").to_arrow_table()
        fam, n = p.samples._detection_cache_family(st)  # type: ignore[attr-defined]  # as a load computes it
    assert fam is not None and n == len(first.detections)
    assert entry.name.startswith(fam[:detection_cache.FAMILY_CHARS] + "-")
    assert detection_cache.may_hold(fam) and not detection_cache.may_hold("0" * 64)
    second = load_spatial(project)
    assert count.calls == {"aggregates": 1 if mapping == "hashes" else 2, "scan": 1}  # found: no scan
    assert is_mapped(np.asarray(second.detections.x1))
    _assert_same_detections(first, scanned)
    _assert_same_detections(second, scanned)


def test_an_edit_that_keeps_the_count_is_caught_by_the_tables_aggregates(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit that leaves the family as it was (same rows count, same samples) takes the pass
    over the table's rows: its aggregates differ from the entry's key, so the load scans."""
    load_spatial(project)
    with Project.open(project) as p:
        p.con.execute("UPDATE detections SET y2 = y2 + 0.5 WHERE rowid = 11")
    count = _Counted(monkeypatch)
    fresh = load_spatial(project)
    assert count.calls == {"aggregates": 1, "scan": 1}
    _assert_same_detections(fresh, scanned_spatial(project, monkeypatch))
    load_spatial(project)
    assert count.calls["scan"] == 2  # only the reference scan above: the new entry was found


def test_rows_written_between_the_count_and_the_scan_key_the_entry_by_what_was_scanned(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load reads the table's row count (the family), then scans: a write in between must
    not give the entry a key of the table before the write. The scan's own count decides."""
    with Project.open(project) as p:
        real_start = detection_cache.PendingEntry.start

        def start(*a: object, **k: object) -> object:  # after the count, before the scan
            p.con.execute("INSERT INTO detections SELECT * FROM detections WHERE rowid = 5")
            return real_start(*a, **k)  # type: ignore[arg-type]

        with monkeypatch.context() as m:
            m.setattr(detection_cache.PendingEntry, "start", staticmethod(start))
            during = p.samples.load_dataset(method="spatial")
    count = _Counted(monkeypatch)
    after = load_spatial(project)
    assert count.calls == {"aggregates": 1, "scan": 0}  # the entry's key is the table's as it is now
    assert len(during.detections) == len(after.detections)
    _assert_same_detections(after, scanned_spatial(project, monkeypatch))


def test_a_scan_reports_its_progress_and_a_cancel_leaves_no_entry(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan of a first open says how many detections it has read, batch by batch; a
    progress callback that raises stops the load there: the error reaches the caller, no cache
    entry is left, and the next load scans and gives the same detections."""
    import workstation.store.samples as samples_mod

    scanned = scanned_spatial(project, monkeypatch)
    n = len(scanned.detections)
    monkeypatch.setattr(samples_mod, "SCAN_BATCH", 1000)
    seen: list[tuple[int, int]] = []
    with Project.open(project, read_only=True) as p:
        ds = p.samples.load_dataset(method="spatial", progress=lambda done, total: seen.append((done, total)))
        (total,) = p.con.execute("SELECT count(*) FROM detections").fetchone()
    _assert_same_detections(ds, scanned)
    assert {t for _, t in seen} == {total} and total >= n  # the table's count, read before the scan
    dones = [d for d, _ in seen]
    assert dones[0] == 0 and dones == sorted(dones) and dones[-1] == total  # every detection read
    assert len(seen) == 1 + -(-total // 1000)  # the start, then every batch of 1,000
    shutil.rmtree(cache_dir)

    class Stop(Exception):
        pass

    def stop_half_way(done: int, total: int) -> None:
        if done >= total // 2:
            raise Stop

    with Project.open(project, read_only=True) as p:
        with pytest.raises(Stop):
            p.samples.load_dataset(method="spatial", progress=stop_half_way)
        assert _entries(cache_dir) == []  # nothing half-written in the cache
        again = p.samples.load_dataset(method="spatial")  # the connection is usable at once
    _assert_same_detections(again, scanned)
    assert len(_entries(cache_dir)) == 1
