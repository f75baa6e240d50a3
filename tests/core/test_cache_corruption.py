"""A cache may only make things faster: whatever happens to the files of the loader's detection
cache or of the checker's kept preparation (a column zeroed behind its header, as a crash leaves
a file renamed before its blocks reached the disk; negated; mirrored; swapped in from another
project's entry; truncated), the verdicts are those of a run without the cache, and the entry
that did not check out is rebuilt with one line naming it and the reason. A manifest that is
not one (deeply nested, a link, a pipe, a list, huge numbers), anywhere in the cache folder, is
a stale entry: rebuilt, never an error."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.core.conftest import load_spatial, scanned_spatial
from workstation.cli import main
from workstation.dataset import Dataset
from workstation.methods.spatial import prepared_cache
from workstation.methods.spatial.checker import evaluate, prepare
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project, cache_files, detection_cache

CORRUPTIONS = ("zeroed", "negated", "mirrored", "swapped", "truncated")
DETECTION_COLUMNS = ("source", "variant", "label", "score", "x1", "y1", "x2", "y2", "sample")
VERDICT_FIELDS = ("verdict", "reason", "reason_detail", "conf", "delta", "sel_a", "sel_b", "sel2_a", "sel2_b")


def _body(path: Path) -> tuple[int, np.dtype, tuple[int, ...]]:
    """Where an .npy file's values begin, their dtype and shape."""
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(fh)
        return fh.tell(), dtype, shape


def corrupt(path: Path, how: str, donor: Path) -> bool:
    """Damage the .npy file `path` the way `how` says, its header left as it was (`donor`: the
    same file of another project's entry, for "swapped"); whether its bytes changed."""
    before = path.read_bytes()
    offset, dtype, shape = _body(path)
    data = bytearray(before)
    values = np.frombuffer(before, dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)
    if how == "zeroed":  # what a crash leaves of a file renamed before its blocks were written
        data[offset:] = bytes(len(data) - offset)
    elif how == "negated":
        with np.errstate(over="ignore"):
            data[offset:] = np.negative(values).tobytes()
    elif how == "mirrored":
        data[offset:] = np.ascontiguousarray(values[..., ::-1]).tobytes()
    elif how == "swapped":
        data = bytearray(donor.read_bytes())
    elif how == "truncated":
        data = data[:offset + (len(data) - offset) // 2]
    else:
        raise AssertionError(how)
    path.write_bytes(bytes(data))
    return bytes(data) != before


def _configs(folder: Path) -> list:
    with Project.open(folder, read_only=True) as p:
        _, cfg = SpatialStore(p).active_config()
    # the second reaches the area filter, which reads the detections' boxes through the rows
    return [cfg, cfg.replace(t_det=0.5, min_area_fraction=0.01, margin=0.08)]


def _verdicts(ds: Dataset, configs: list) -> list[dict[str, np.ndarray]]:
    out = []
    for cfg in configs:
        v = evaluate(ds, cfg)
        out.append({k: np.asarray(getattr(v, k)) for k in VERDICT_FIELDS})
    prepared_cache.wait_for_writes()
    return out


def _assert_same(got: list[dict[str, np.ndarray]], want: list[dict[str, np.ndarray]], what: str) -> None:
    for g, w in zip(got, want):
        for k in VERDICT_FIELDS:
            assert np.array_equal(g[k], w[k], equal_nan=True), f"{what}: {k} differs from a run without the cache"


def _assert_same_columns(a: Dataset, b: Dataset, what: str) -> None:
    da, db = a.detections, b.detections
    assert len(da) == len(db), what
    for k in ("source", "variant", "score", "x1", "y1", "x2", "y2", "sample_idx"):
        assert np.array_equal(np.asarray(getattr(da, k)), np.asarray(getattr(db, k)), equal_nan=True), f"{what}: {k}"
    assert da.label.tolist() == db.label.tolist(), f"{what}: label"


def _entry_of(cache_dir: Path, folder: Path) -> Path:
    (entry,) = [e for e in cache_dir.iterdir() if not e.name.startswith(".")
                and json.loads((e / "manifest.json").read_text())["project"] == str(folder.resolve())]
    return entry


def _kept_of(cache_dir: Path, folder: Path) -> Path:
    (kept,) = _entry_of(cache_dir, folder).glob(f"{prepared_cache.PREFIX}*")
    return kept


@pytest.fixture
def donor(project: Path, tmp_path: Path) -> Path:
    """Another project of the same size (samples, detections): its entry's files have the same
    shapes, dtypes and lengths as the project's and other values."""
    other = tmp_path / "other-project"
    shutil.copytree(project, other)
    with Project.open(other) as p:
        p.con.execute("UPDATE detections SET score = 1 - score, x1 = x1 + 3, x2 = x2 + 3, y1 = y1 + 2, y2 = y2 + 2, "
                      "label = CASE WHEN rowid % 4 = 0 THEN 'zebra' ELSE label END, "
                      "source = CASE WHEN rowid % 7 = 0 THEN 1 - source ELSE source END")
    return other


def _one_line_naming(caplog: pytest.LogCaptureFixture, where: Path, ds: Dataset) -> str:
    lines = [r.getMessage() for r in caplog.records if "unusable" in r.getMessage()]
    assert len(lines) == 1, lines
    (line,) = lines
    assert "\n" not in line and str(where) in line and ("rebuilt" in line or "prepared again" in line), line
    assert detection_cache.rebuilt_notes(ds) == [line]  # what the window's status bar says
    return line


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_corrupted_detection_column_is_rebuilt_and_the_verdicts_are_a_run_without_cache(
        project: Path, donor: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, how: str) -> None:
    # the verdicts come from the columns as loaded (no kept preparation: as on the open after a
    # crash, before any preparation was kept)
    monkeypatch.setattr(prepared_cache, "slot", lambda *a, **k: None)
    configs = _configs(project)
    scanned = scanned_spatial(project, monkeypatch)
    want = _verdicts(scanned, configs)
    load_spatial(donor)
    load_spatial(project)
    damaged = 0
    for column in DETECTION_COLUMNS:
        entry = _entry_of(cache_dir, project)
        name = f"{column}.npy"
        changed = corrupt(entry / name, how, _entry_of(cache_dir, donor) / name)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
            ds = load_spatial(project)
        _assert_same_columns(ds, scanned, f"{column} {how}")
        _assert_same(_verdicts(ds, configs), want, f"{column} {how}")
        if changed:
            damaged += 1
            line = _one_line_naming(caplog, entry, ds)
            assert name in line, line
        else:  # the same bytes (a column of zeros zeroed, one variant mirrored): nothing to rebuild
            assert "unusable" not in caplog.text
        again = load_spatial(project)  # the entry written again whole: a plain hit
        assert detection_cache.rebuilt_notes(again) == []
    assert damaged >= 5  # the scores, boxes and labels at least


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_corrupted_kept_preparation_is_prepared_again_and_the_verdicts_are_a_run_without_cache(
        project: Path, donor: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, how: str) -> None:
    configs = _configs(project)
    want = _verdicts(scanned_spatial(project, monkeypatch), configs)
    _verdicts(load_spatial(donor), configs)
    _verdicts(load_spatial(project), configs)  # prepared and kept
    names = sorted(p.name for p in _kept_of(cache_dir, project).glob("*.npy"))
    assert {"order.npy", "row0.npy", "score0.npy", "area0.npy", "geom_d.npy", "geom_cd.npy"} <= set(names)
    damaged = 0
    for name in names:
        kept = _kept_of(cache_dir, project)
        changed = corrupt(kept / name, how, _kept_of(cache_dir, donor) / name)
        ds = load_spatial(project)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="workstation.methods.spatial.prepared_cache"):
            got = _verdicts(ds, configs)
        _assert_same(got, want, f"{name} {how}")
        if changed:
            damaged += 1
            line = _one_line_naming(caplog, kept, ds)
            assert name in line, line
        else:  # an empty array (no perturbed variants): nothing to damage
            assert "unusable" not in caplog.text
    assert damaged >= 12


def test_a_manifest_whose_fields_were_edited_is_refused(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The label names live in the manifest: two swapped there would relabel every detection."""
    monkeypatch.setattr(prepared_cache, "slot", lambda *a, **k: None)
    scanned = scanned_spatial(project, monkeypatch)
    load_spatial(project)
    entry = _entry_of(cache_dir, project)
    meta = json.loads((entry / "manifest.json").read_text())
    meta["label_names"][0], meta["label_names"][1] = meta["label_names"][1], meta["label_names"][0]
    (entry / "manifest.json").write_text(json.dumps(meta))
    with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
        ds = load_spatial(project)
    assert "manifest's digest" in _one_line_naming(caplog, entry, ds)
    _assert_same_columns(ds, scanned, "label names swapped")


def _stored(folder: Path) -> dict[str, np.ndarray]:
    with Project.open(folder, read_only=True) as p:
        store = SpatialStore(p)
        cid, _ = store.active_config()
        assert cid is not None
        table = store.load_verdict_table(cid)
    return {k: table[k] for k in ("sample_id", "verdict", "reason", "conf")}


def test_evaluate_with_the_kept_distances_negated_stores_the_verdicts_of_a_run_without_cache(
        project: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """`evaluate` run again on a project whose kept preparation had its distances negated once
    stored PASS and FAIL swapped as the active verdict set."""
    reference = tmp_path / "reference"
    shutil.copytree(project, reference)
    with monkeypatch.context() as m:
        m.setenv("WORKSTATION_DETECTION_CACHE_MIN", "off")
        assert main(["evaluate", "--project", str(reference)]) == 0
    want = _stored(reference)
    assert main(["evaluate", "--project", str(project)]) == 0  # the cache entry and the preparation kept
    prepared_cache.wait_for_writes()
    kept = _kept_of(cache_dir, project)
    for name in ("geom_d", "geom_cd", "geom_logcd", "geom_d2"):
        assert corrupt(kept / f"{name}.npy", "negated", kept / f"{name}.npy")
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the command's log: one line on stderr
        assert main(["evaluate", "--project", str(project)]) == 0
    said = "\n".join(r.getMessage() for r in caplog.records)
    got = _stored(project)
    assert np.array_equal(got["sample_id"], want["sample_id"])
    assert np.array_equal(got["verdict"], want["verdict"]), (np.bincount(got["verdict"]), np.bincount(want["verdict"]))
    assert np.array_equal(got["reason"], want["reason"]) and np.allclose(got["conf"], want["conf"])
    lines = [x for x in said.splitlines() if "unusable" in x]
    assert len(lines) == 1 and str(kept) in lines[0] and "prepared again" in lines[0], said


def _nested(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


HOSTILE_MANIFESTS: dict[str, Callable[[Path], None]] = {
    "nested": lambda mf: mf.write_text(_nested(), encoding="utf-8"),
    "nested object": lambda mf: mf.write_text('{"a":' * 50_000 + "1" + "}" * 50_000, encoding="utf-8"),
    "a list": lambda mf: mf.write_text("[1, 2, 3]", encoding="utf-8"),
    "NaN": lambda mf: mf.write_text('{"format": NaN, "project": "x"}', encoding="utf-8"),
    "huge number": lambda mf: mf.write_text('{"format": ' + "9" * 5000 + "}", encoding="utf-8"),
    "not UTF-8": lambda mf: mf.write_bytes(b'{"project": "\xff\xfe"}'),
    "wrong types": lambda mf: mf.write_text('{"format": 2, "key": "x", "files": [], "project": 7, "scope": []}',
                                            encoding="utf-8"),
}


def _plant(where: Path, damage: Callable[[Path], None]) -> None:
    where.mkdir(parents=True, exist_ok=True)
    mf = where / "manifest.json"
    if mf.exists() or mf.is_symlink():
        mf.unlink()
    damage(mf)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", sorted(HOSTILE_MANIFESTS))
def test_a_bad_manifest_anywhere_in_the_cache_is_a_stale_entry_and_evaluate_goes_on(
        project: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """One deeply nested manifest in the cache folder, another project's included, ended every
    `evaluate` in a RecursionError. Planted in another project's entry, in a folder that is no
    entry, in the project's own entry and in its kept preparation, each is a stale entry."""
    damage = HOSTILE_MANIFESTS[kind]
    reference = tmp_path / "reference"
    shutil.copytree(project, reference)
    with monkeypatch.context() as m:
        m.setenv("WORKSTATION_DETECTION_CACHE_MIN", "off")
        assert main(["evaluate", "--project", str(reference)]) == 0
    want = _stored(reference)["verdict"]
    other = tmp_path / "other"
    shutil.copytree(project, other)
    with Project.open(other) as p:
        p.con.execute("UPDATE detections SET score = score * 0.9 WHERE rowid = 0")
    assert main(["evaluate", "--project", str(other)]) == 0
    prepared_cache.wait_for_writes()
    _plant(_entry_of(cache_dir, other), damage)  # another project's entry
    _plant(cache_dir / "0123456789abcdef-0123456789abcdef0123456789abcdef01234567", damage)  # no entry at all
    for round_ in range(3):
        assert main(["evaluate", "--project", str(project)]) == 0, round_
        prepared_cache.wait_for_writes()
        assert np.array_equal(_stored(project)["verdict"], want), round_
        if round_ == 0:  # the project's own entry
            _plant(_entry_of(cache_dir, project), damage)
        elif round_ == 1:  # its kept preparation
            kept = _kept_of(cache_dir, project)
            _plant(kept, damage)
    assert len([e for e in cache_dir.iterdir() if not e.name.startswith(".")]) == 1  # the stale ones went


@pytest.mark.timeout(120)
def test_a_manifest_that_is_a_pipe_or_a_link_out_of_the_cache_is_never_followed(
        project: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe would block the read forever; a link leads to a file outside the cache folder,
    whose time stamp the load would touch."""
    scanned = scanned_spatial(project, monkeypatch)
    monkeypatch.setattr(prepared_cache, "slot", lambda *a, **k: None)
    load_spatial(project)
    entry = _entry_of(cache_dir, project)
    outside = tmp_path / "outside.json"
    outside.write_text((entry / "manifest.json").read_text(), encoding="utf-8")
    os.utime(outside, (1_000_000, 1_000_000))
    (entry / "manifest.json").unlink()
    (entry / "manifest.json").symlink_to(outside)
    _assert_same_columns(load_spatial(project), scanned, "manifest a link")
    assert outside.stat().st_mtime == 1_000_000
    entry = next(e for e in cache_dir.iterdir() if not e.name.startswith("."))
    (entry / "manifest.json").unlink()
    os.mkfifo(entry / "manifest.json")
    other = cache_dir / "fedcba9876543210-fedcba9876543210fedcba9876543210fedcba98"
    other.mkdir()
    os.mkfifo(other / "manifest.json")  # read while room is made for a new entry
    _assert_same_columns(load_spatial(project), scanned, "manifest a pipe")
    assert not other.exists()


def test_an_entry_is_synced_before_it_is_renamed_into_place(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file of an entry (those the scan filled through their mappings too) and of a kept
    preparation reaches the disk, then the folder, before the rename that makes it an entry."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("sync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(("rename", f"{src} -> {dst}"))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    ds = load_spatial(project)
    prepare(ds)
    prepared_cache.wait_for_writes()
    entry = _entry_of(cache_dir, project)
    kept = _kept_of(cache_dir, project)
    for folder in (entry, kept):
        (rename,) = [i for i, (what, arg) in enumerate(events) if what == "rename" and arg.endswith(f"-> {folder}")]
        tmp = events[rename][1].split(" -> ")[0]
        synced = {arg for what, arg in events[:rename] if what == "sync"}
        for f in folder.iterdir():
            if f.is_file():
                assert f"{tmp}/{f.name}" in synced, f"{f.name} of {folder.name} not synced before the rename"
        assert tmp in synced  # the folder itself
        assert str(folder.parent) in {arg for what, arg in events[rename:] if what == "sync"}  # the rename


def test_an_entry_written_with_a_digest_this_installation_lacks_is_rebuilt_with_the_one_it_has(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Without the `xxhash` package the digests are HMAC-SHA256: an entry written with XXH3 is
    rebuilt, and the rebuilt one catches a damaged column the same way."""
    monkeypatch.setattr(prepared_cache, "slot", lambda *a, **k: None)
    scanned = scanned_spatial(project, monkeypatch)
    load_spatial(project)
    written = json.loads((_entry_of(cache_dir, project) / "manifest.json").read_text())["digest_algorithm"]
    monkeypatch.setattr(cache_files, "_xxhash", None)
    monkeypatch.setattr(cache_files, "DIGEST", "hmac-sha256")
    with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
        ds = load_spatial(project)
    if written != "hmac-sha256":
        assert f"written with the {written!r} digest" in _one_line_naming(caplog, _entry_of(cache_dir, project), ds)
    _assert_same_columns(ds, scanned, "another digest")
    entry = _entry_of(cache_dir, project)
    assert json.loads((entry / "manifest.json").read_text())["digest_algorithm"] == "hmac-sha256"
    assert corrupt(entry / "x2.npy", "mirrored", entry / "x2.npy")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
        ds = load_spatial(project)
    assert "x2.npy" in _one_line_naming(caplog, entry, ds)
    _assert_same_columns(ds, scanned, "x2 mirrored, HMAC-SHA256")


def test_a_single_flipped_bit_anywhere_in_a_column_is_caught(
        project: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The check reads every byte: one bit of one score, in the middle of the column, is enough."""
    monkeypatch.setattr(prepared_cache, "slot", lambda *a, **k: None)
    scanned = scanned_spatial(project, monkeypatch)
    load_spatial(project)
    entry = _entry_of(cache_dir, project)
    data = bytearray((entry / "score.npy").read_bytes())
    data[len(data) // 2 + 1] ^= 0x01
    (entry / "score.npy").write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="workstation.store.detection_cache"):
        ds = load_spatial(project)
    assert "score.npy" in _one_line_naming(caplog, entry, ds)
    _assert_same_columns(ds, scanned, "one bit")


def test_a_link_in_place_of_an_entry_or_a_kept_preparation_is_removed_never_followed(
        project: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A link named as the project's entry (or its kept preparation) to a folder outside the
    cache: nothing outside is read, changed or removed, and the next open has an entry again."""
    configs = _configs(project)
    want = _verdicts(scanned_spatial(project, monkeypatch), configs)
    _verdicts(load_spatial(project), configs)
    entry = _entry_of(cache_dir, project)
    kept = _kept_of(cache_dir, project)
    outside = tmp_path / "outside"
    shutil.copytree(kept, outside)
    before = {f.name: f.read_bytes() for f in outside.iterdir()}
    shutil.rmtree(kept)
    kept.symlink_to(outside, target_is_directory=True)
    ds = load_spatial(project)
    with caplog.at_level(logging.WARNING, logger="workstation.methods.spatial.prepared_cache"):
        _assert_same(_verdicts(ds, configs), want, "kept preparation a link")
    assert "not a folder" in _one_line_naming(caplog, kept, ds)
    assert not kept.is_symlink() and (kept / "manifest.json").is_file()  # kept again, whole
    shutil.move(str(entry), str(tmp_path / "outside-entry"))
    entry.symlink_to(tmp_path / "outside-entry", target_is_directory=True)
    ds = load_spatial(project)  # no entry of its family is there: the scan's entry replaces the link
    _assert_same(_verdicts(ds, configs), want, "entry a link")
    assert not entry.is_symlink() and (entry / "manifest.json").is_file()
    assert {f.name: f.read_bytes() for f in outside.iterdir()} == before
    assert (tmp_path / "outside-entry" / "manifest.json").is_file()  # left where it was
