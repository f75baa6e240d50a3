"""An open that finds a cache entry unusable says so in the status bar, in one line naming the
entry and the reason, and shows the verdicts of a run without the cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workstation.methods.spatial import prepared_cache
from workstation.methods.spatial.checker import evaluate
from workstation.methods.spatial.store import SpatialStore, load_dataset
from workstation.store import Project

pytestmark = pytest.mark.gui


def _open(qtbot, w, folder: Path) -> None:
    with qtbot.waitSignal(w.load_finished, timeout=60000):
        w.open_project_in_background(folder)
    qtbot.waitUntil(lambda: not w.spatial.checking, timeout=60000)
    prepared_cache.wait_for_writes()


def _negate(path: Path) -> None:
    """The values of an .npy file negated behind its header."""
    with open(path, "rb") as fh:
        np.lib.format.read_magic(fh)
        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        offset = fh.tell()
    data = bytearray(path.read_bytes())
    values = np.frombuffer(bytes(data), dtype, count=int(np.prod(shape)), offset=offset)
    data[offset:] = np.negative(values).tobytes()
    path.write_bytes(bytes(data))


def test_an_open_that_rebuilds_a_cache_entry_says_which_and_why(qtbot, open_window, sbuc_project: Path,
                                                                tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "user-cache"
    monkeypatch.setenv("WORKSTATION_CACHE_DIR", str(cache))
    monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
    with Project.open(sbuc_project, read_only=True) as p:
        monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "off")
        ds = load_dataset(p)
        monkeypatch.setenv("WORKSTATION_DETECTION_CACHE_MIN", "0")
        _, cfg = SpatialStore(p).active_config()
    want = np.asarray(evaluate(ds, cfg).verdict)
    w = open_window(None)
    _open(qtbot, w, sbuc_project)  # writes the entry and the kept preparation
    (entry,) = (cache / "detections").iterdir()
    (kept,) = entry.glob(f"{prepared_cache.PREFIX}*")
    assert json.loads((entry / "manifest.json").read_text())["project"] == str(sbuc_project.resolve())
    w.close_project()

    _negate(kept / "geom_d.npy")  # the kept preparation: noticed by the check
    _open(qtbot, w, sbuc_project)
    said = w.statusBar().currentMessage()
    assert f"the checker's kept preparation {kept} is unusable (geom_d.npy's contents differ" in said, said
    assert "prepared again" in said and "\n" not in said
    assert np.array_equal(np.asarray(w.spatial.verdicts.verdict), want)
    w.close_project()

    _negate(entry / "score.npy")  # the detections' entry: noticed by the load
    _open(qtbot, w, sbuc_project)
    said = w.statusBar().currentMessage()
    assert f"detection cache entry {entry} is unusable (score.npy's contents differ" in said, said
    assert "rebuilt from the project" in said and "\n" not in said
    assert np.array_equal(np.asarray(w.spatial.verdicts.verdict), want)
    w.close_project()

    _open(qtbot, w, sbuc_project)  # rebuilt whole: nothing to say
    assert "unusable" not in w.statusBar().currentMessage()
