"""The pieces that keep files from outside harmless: CSV formula escaping, the YAML loader, the
image check, capped provenance, the calibration grid limit and its cancel."""

from __future__ import annotations

import csv
import io
import json
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.core.conftest import assert_one_clear_error
from tests.proc import Lines
from workstation.cli import main
from workstation.store import Project
from workstation.types import InputError, WorkstationError
from workstation.methods.spatial.store import SpatialStore

# ---------------------------------------------------------------------------------------------
# CSV formula injection
# ---------------------------------------------------------------------------------------------

HOSTILE = ["=HYPERLINK(\"http://x\",\"click\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\tTAB", "\rCR",
           "'quoted", "''two", "plain note", "-", "=", "", "a=b"]


def test_escape_rule() -> None:
    from workstation.util.csvsafe import escape_cell, unescape_cell

    assert escape_cell("=1+2") == "'=1+2"
    assert escape_cell("+x") == "'+x" and escape_cell("-x") == "'-x" and escape_cell("@x") == "'@x"
    assert escape_cell("\tx") == "'\tx" and escape_cell("\rx") == "'\rx"
    assert escape_cell("'x") == "''x"  # so that the rule can be undone without guessing
    assert escape_cell("a=b") == "a=b" and escape_cell("") == ""
    assert escape_cell(-0.5) == -0.5 and escape_cell(3) == 3  # numbers stay numbers
    for v in HOSTILE:
        assert unescape_cell(escape_cell(v)) == v


@pytest.mark.parametrize("fmt", ["native", "sbuc"])
def test_label_export_escapes_formulas_and_import_gives_them_back(project: Path, tmp_path: Path, fmt: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with Project.open(project) as p:
        ids = [r[0] for r in p.con.execute("SELECT sample_id FROM samples ORDER BY ord LIMIT ?", [len(HOSTILE)])
               .fetchall()]
        for sid, note in zip(ids, HOSTILE):
            SpatialStore(p).add_label(sid, "=evil()" if fmt == "native" else "alice", "FAIL", notes=note or None)
    out = tmp_path / "labels.csv"
    assert main(["labels", "export", "--project", str(project), "--out", str(out), "--format", fmt]) == 0
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    notes = {r["sample_id"]: r["notes"] for r in rows}
    # as a spreadsheet reads the file: no cell starts with a formula character
    for r in rows:
        for cell in r.values():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (cell, r)
    assert notes[ids[0]] == "'=HYPERLINK(\"http://x\",\"click\")"
    assert notes[ids[2]] == "'-2+3" and notes[ids[6]] == "''quoted" and notes[ids[12]] == "a=b"
    if fmt == "native":
        assert {r["annotator"] for r in rows} == {"'=evil()"}
    # our own export imported into a fresh copy gives the original values back
    fresh = tmp_path / "fresh"
    import shutil

    shutil.copytree(project, fresh)
    with Project.open(fresh) as p:
        p.con.execute("DELETE FROM label_events")
    assert main(["labels", "import", str(out), "--project", str(fresh), "--annotator", "bob"]) == 0
    with Project.open(fresh, read_only=True) as p:
        got = {r.sample_id: (r.notes or "", r.annotator) for r in SpatialStore(p).latest_labels()}
    for sid, note in zip(ids, HOSTILE):
        assert got[sid][0] == note
        assert got[sid][1] == ("=evil()" if fmt == "native" else "bob")


def test_audit_sample_and_report_csvs_escape_text_cells(labelled_project: Path, tmp_path: Path) -> None:
    with Project.open(labelled_project) as p:
        p.con.execute("UPDATE runs SET run_id = '=cmd|calc' ")
        p.con.execute("UPDATE samples SET run_id = '=cmd|calc'")
    sheet = tmp_path / "audit.csv"
    assert main(["audit-sample", "--project", str(labelled_project), "--size", "10", "--seed", "1",
                 "--out", str(sheet)]) == 0
    with sheet.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["run"] for r in rows} == {"'=cmd|calc"}
    assert main(["report", "--project", str(labelled_project), "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "spatial" / "tables" / "main_results.csv").read_text()
    assert "\"'=cmd|calc\"" in text and ",\"=cmd" not in text


# ---------------------------------------------------------------------------------------------
# YAML
# ---------------------------------------------------------------------------------------------


def test_billion_laughs_is_refused_at_once(tmp_path: Path) -> None:
    from workstation.util.safeyaml import load_yaml

    text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
    f = tmp_path / "gen_config.yaml"
    f.write_text(text)
    t0 = time.perf_counter()
    with pytest.raises(InputError) as e:
        load_yaml(f)
    assert time.perf_counter() - t0 < 1.0
    assert e.value.line == 1 and "anchors" in str(e.value)


def test_yaml_mappings_know_their_lines_and_errors_are_one_line(tmp_path: Path) -> None:
    from workstation.util.safeyaml import line_of, loads_yaml

    d = loads_yaml("a: 1\nb:\n  c: 2\n  d: [1,\n     2]\n", "x.yaml")
    assert d == {"a": 1, "b": {"c": 2, "d": [1, 2]}}
    assert (line_of(d, "a"), line_of(d, "b"), line_of(d["b"], "c"), line_of(d["b"], "d")) == (1, 2, 3, 4)
    for bad in ("a: [1\n", "a: 'x\n", "a:\n\t- 1\n", "a: 1\n a: 2\n", "- a\nb: 1\n"):
        with pytest.raises(InputError) as e:
            loads_yaml(bad, "x.yaml")
        assert "\n" not in str(e.value) and e.value.line is not None, str(e.value)


def test_checker_config_errors_name_the_line(tmp_path: Path) -> None:
    from workstation.methods.spatial.config import load_config

    f = tmp_path / "c.yaml"
    f.write_text("name: x\nmargin: 0.05\n\nt_det: 'high'\n")
    with pytest.raises(InputError) as e:
        load_config(f)
    assert e.value.line == 4 and "t_det" in str(e.value)
    f.write_text("confidence:\n  weights:\n    detection: 0.4\n    geometry: 1e308\n")
    with pytest.raises(InputError) as e:
        load_config(f)
    assert e.value.line == 4 and "1.0e-3" in str(e.value)  # the hint on YAML's reading of 1e308
    f.write_text("use_secondary: no\n")  # YAML 1.1 reads a bare no as false: that is a boolean, accepted
    assert load_config(f).use_secondary is False


# ---------------------------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------------------------


def _png(w: int, h: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _header_only(w: int, h: int) -> bytes:
    def chunk(k: bytes, b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + k + b + struct.pack(">I", zlib.crc32(k + b) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))


def test_check_image(tmp_path: Path) -> None:
    from workstation.util.images import BadImage, check_image

    f = tmp_path / "x.png"
    f.write_bytes(_png(48, 32))
    assert check_image(f, max_side=64, max_pixels=4096) == (48, 32)
    noisy = io.BytesIO()
    from PIL import Image

    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), np.uint8)).save(noisy, format="PNG")
    for data, words in ((b"", "empty"), (b"hello", "not a PNG"), (noisy.getvalue()[:2000], "truncated"),
                        (_header_only(100000, 100000), "pixels"), (_header_only(20000, 20000), "pixels")):
        f.write_bytes(data)
        t0 = time.perf_counter()
        with pytest.raises(BadImage, match=words):
            check_image(f, max_side=16384, max_pixels=64 * 2**20)
        assert time.perf_counter() - t0 < 2.0  # refused from the header, never decoded
    f.write_bytes(_png(100, 10))
    with pytest.raises(BadImage, match="64 pixels a side"):
        check_image(f, max_side=64, max_pixels=10**6)
    with pytest.raises(BadImage, match="1,000 pixels; the limit is 999"):
        check_image(f, max_side=1000, max_pixels=999)


def test_import_refuses_a_link_out_of_the_run_folder(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's first finding: a symlinked image copied a file of the machine into the project."""
    import os
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sbuc_run_dir, run)
    (run / "images").mkdir()
    secret = tmp_path / "secret.png"
    secret.write_bytes(_png(512, 512))  # even a valid image is refused when the link leaves the folder
    os.symlink(secret, run / "images" / "sd15_boxdiff_v1_000000_seed0000.png")
    rc = main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 2
    assert_one_clear_error(err, "manifest.jsonl", 1, "link", "outside")
    assert not (tmp_path / "p").exists()
    # a link that stays inside the folder is followed, and the file (not the link) is copied
    inside = run / "originals" / "a.png"
    inside.parent.mkdir()
    inside.write_bytes(_png(512, 512))
    (run / "images" / "sd15_boxdiff_v1_000000_seed0000.png").unlink()
    os.symlink(inside, run / "images" / "sd15_boxdiff_v1_000000_seed0000.png")
    assert main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(tmp_path / "p")]) == 0
    copied = tmp_path / "p" / "images" / "sd15_boxdiff" / "sd15_boxdiff_v1_000000_seed0000.png"
    assert copied.is_file() and not copied.is_symlink() and copied.read_bytes() == inside.read_bytes()


# ---------------------------------------------------------------------------------------------
# provenance, a killed import, calibration limits and cancel
# ---------------------------------------------------------------------------------------------


def test_stored_provenance_is_capped(tmp_path: Path) -> None:
    from workstation.store import MAX_PROVENANCE_BYTES

    with Project.create(tmp_path / "p") as p:
        p.samples.add_run("r", method="m", params={"small": 1},
                          provenance={"huge": ["x" * 100] * 10000, "keep": {"a": 1}})
        prov = p.samples.runs()[0]["provenance"]
        raw = p.con.execute("SELECT length(provenance) FROM runs").fetchone()[0]
    assert raw <= MAX_PROVENANCE_BYTES
    assert prov["keep"] == {"a": 1}
    assert "over the 262,144-byte limit" in prov["huge"]["omitted"] and len(prov["huge"]["sha256"]) == 64


def test_a_big_gen_config_is_stored_capped(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(sbuc_run_dir, run)
    (run / "gen_config.yaml").write_text("notes:\n" + "".join(f"  - line {i} {'x' * 80}\n" for i in range(2000)))
    assert main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(tmp_path / "p")]) == 0
    with Project.open(tmp_path / "p", read_only=True) as p:
        g = p.samples.runs()[0]["provenance"]["gen_config"]
    assert set(g) == {"notes"} and set(g["notes"]) == {"omitted", "sha256"}
    assert "65,536-byte limit" in g["notes"]["omitted"]


def test_a_killed_import_into_a_new_folder_leaves_no_project(tmp_path: Path, sbuc_run_dir: Path,
                                                             sbuc_prompts: Path) -> None:
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    target = tmp_path / "new"
    proc = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "import workstation.methods.spatial.store as st\n"
        "real = st.SpatialStore.save_verdicts\n"
        "def slow(self, *a, **k):\n"
        "    print('WRITING', flush=True); time.sleep(60); return real(self, *a, **k)\n"
        "st.SpatialStore.save_verdicts = slow\n"
        "from workstation.cli import main\n"
        f"sys.exit(main(['import-sbuc', {str(sbuc_run_dir)!r}, '--prompts', {str(sbuc_prompts)!r}, "
        f"'--project', {str(target)!r}]))\n")], stdout=subprocess.PIPE, text=True, cwd=root,
        env={**__import__("os").environ, "PYTHONPATH": str(root)})
    with Lines(proc, timeout=120) as out:  # each read bounded by the deadline
        out.wait_for(lambda line: line.strip() == "WRITING")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert not target.exists(), "a killed import left a project behind"
    hidden = list(tmp_path.glob(".new.importing-*"))
    assert hidden, "the half-built project is in its hidden build folder"
    # the next import into the same place removes the dead import's build folder and succeeds
    assert main(["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project", str(target)]) == 0
    assert not list(tmp_path.glob(".new.importing-*"))
    with Project.open(target, read_only=True) as p:
        assert p.samples.count() == 800


def test_calibration_grid_limits_are_stated() -> None:
    from workstation.methods.spatial.calibration import MAX_GRID_EVALUATIONS, MAX_GRID_ROWS, _check_grids
    from workstation.methods.spatial.config import CheckerConfig

    ok = {"margin": [0.001 * i for i in range(1000)], "t_det": [0.01 * i for i in range(100)], "tau": [0.5]}
    _check_grids(CheckerConfig(), ok)  # 100,000 evaluations: at the limit
    with pytest.raises(WorkstationError, match=r"\(1000 margin × 101 t_det × 1 tau\) needs 101,000 checker "
                                                r"evaluations; the limit is 100,000"):
        _check_grids(CheckerConfig(), {**ok, "t_det": [0.01 * i for i in range(100)] + [1.0]})
    with pytest.raises(WorkstationError, match="limit is 500,000"):
        _check_grids(CheckerConfig(), {"margin": [0.1] * 1, "tau": [i / 600000 for i in range(600000)]})
    assert MAX_GRID_EVALUATIONS == 100_000 and MAX_GRID_ROWS == 500_000


def test_calibrate_cancelled_with_ctrl_c_writes_nothing(labelled_project: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import workstation.methods.spatial.calibration as cal
    from tests.core.conftest import dump_tables

    real = cal._default_evaluator
    calls = []

    def evaluator(sub):  # type: ignore[no-untyped-def]
        ev = real(sub)

        def counted(ds, cfg):  # type: ignore[no-untyped-def]
            calls.append(1)
            if len(calls) == 5:
                raise KeyboardInterrupt
            return ev(ds, cfg)
        return counted

    monkeypatch.setattr(cal, "_default_evaluator", evaluator)
    before = dump_tables(labelled_project)
    out = tmp_path / "cal.json"
    rc = main(["calibrate", "--project", str(labelled_project), "--grid", "margin=" + ",".join(
        f"{0.01 * i:.2f}" for i in range(20)), "--grid", "t_det=" + ",".join(f"{0.05 * i:.2f}" for i in range(10)),
        "--out", str(out), "--apply"])
    err = capsys.readouterr().err
    assert rc == 130
    assert "grid: 200 checker evaluation(s)" in err and "Ctrl-C cancels" in err
    assert "calibration cancelled after 4 of 200 checker evaluations; nothing was written" in err
    assert not out.exists() and not list(tmp_path.glob(".cal.json*"))
    assert dump_tables(labelled_project) == before


def test_json_outputs_are_strict_json(labelled_project: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    assert main(["audit-metrics", "--project", str(labelled_project), "--out", str(out)]) == 0
    json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in strict JSON"))
