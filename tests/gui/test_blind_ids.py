"""A label export during a blind ProtoBias audit names no image role: its
targets are neutral ids (the triplet and the side shown, ``…#A`` / ``…#B``), never the sample
ids whose ``…:corr`` / ``…:adv`` tell which image is the prototype; `labels unblind` maps them
back with the project; outside a blind audit the export keeps the sample ids. A file with a
target that is no neutral id of the project is refused in one line naming its file and line."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from ui import menus
from workstation.cli import main
from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui


@pytest.fixture
def protobias_project(tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    with Project.create(folder) as p:
        get_method("protobias").build_demo(p, small=True, workers=0)
    return folder


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_a_blind_export_names_no_image_role_and_unblind_maps_it_back(
        qtbot: Any, open_window: Any, protobias_project: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    w = open_window(protobias_project, annotator="alice")
    qtbot.waitUntil(lambda: "protobias" in w.method_views, timeout=20000)
    w.state.set_annotator("alice")
    views = w.method_views["protobias"]
    c = views.controller(w)
    targets = [c.core.target_id(i) for i in range(4)]
    assert any(":corr" in t for t in targets) and any(":adv" in t for t in targets)
    aid = w.state.project.audit.create_set("blind", c.scheme.task, targets, {}, blind=True)
    assert menus.start_audit_set(w, aid) == 4
    QApplication.processEvents()
    rated = {}
    for k in range(4):
        c.go(k)
        rated[c.current] = c.scheme.values[k % 4]
        c.record(c.scheme.values[k % 4])
    blind_file = tmp_path / "blind.csv"
    assert views.bar(w).export(str(blind_file)) == 4
    rows = _rows(blind_file)
    assert len(rows) == 4
    for r in rows:
        assert ":corr" not in r["target_id"] and ":adv" not in r["target_id"], r["target_id"]
        assert r["target_id"].endswith(("#A", "#B"))
    assert "corr" not in blind_file.read_text(encoding="utf-8")
    # outside a blind audit the export keeps the sample ids
    menus.leave_audit(w)
    plain = tmp_path / "plain.csv"
    views.bar(w).export(str(plain))
    assert {r["target_id"] for r in _rows(plain)} >= set(rated)
    w.close_project()  # the command line opens the project itself
    # labels unblind: the project's sample ids again, with the same values
    out = tmp_path / "unblinded.csv"
    assert main(["labels", "unblind", str(blind_file), "--project", str(protobias_project), "--out", str(out)]) == 0
    back = {r["target_id"]: r["value"] for r in _rows(out)}
    assert back == rated
    # a target that is no neutral id of the project: one line naming the file and the line
    bad = tmp_path / "bad.csv"
    bad.write_text(blind_file.read_text(encoding="utf-8").replace("#A", ":corr_seed0000", 1), encoding="utf-8")
    capsys.readouterr()
    rc = main(["labels", "unblind", str(bad), "--project", str(protobias_project), "--out",
               str(tmp_path / "bad_out.csv")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "bad.csv:2:" in err and "neutral" in err
    assert not (tmp_path / "bad_out.csv").exists()
