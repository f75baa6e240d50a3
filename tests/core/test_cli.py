"""The command line end to end on the SpatialBench-UC fixture: import, report, evaluate, audit,
calibrate, demo — checked the way a user would check them (files written, numbers shown)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.cli import main
from workstation.store import Project
from workstation.methods.spatial.store import SpatialStore

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [["import-sbuc"], ["evaluate"], ["export-sbuc"], ["report"], ["labels"], ["labels", "import"],
            ["labels", "export"], ["audit-sample"], ["audit-metrics"], ["calibrate"], ["demo"]]


def png_bytes(width: int = 512, height: int = 512, shade: int = 0) -> bytes:
    """A real RGB PNG of the manifest's size (import checks every image)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((height, width, 3), shade, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))




def verdict_counts(folder: Path) -> tuple[int | None, dict[str, int]]:
    with Project.open(folder, read_only=True) as p:
        cid = SpatialStore(p).active_config_id()
        rows = p.con.execute("SELECT verdict, count(*) FROM spatial_verdicts WHERE eval_id=? GROUP BY verdict",
                             [cid]).fetchall()
    return cid, dict(rows)


# ---------------------------------------------------------------------------------------------
# help
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_has_help(cmd: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([*cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and len(out.splitlines()) > 3


def test_top_level_help_lists_the_commands() -> None:
    r = subprocess.run([sys.executable, "main.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    for name in ("import-sbuc", "evaluate", "export-sbuc", "report", "labels", "audit-sample", "audit-metrics",
                 "calibrate", "demo"):
        assert name in r.stdout


# ---------------------------------------------------------------------------------------------
# import and report
# ---------------------------------------------------------------------------------------------


def test_import_shows_the_published_verdicts(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "new" / "project"  # created, parents included
    assert main(["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project", str(folder),
                 "--run-id", "boxdiff_a"]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1
    assert "800 samples" in out and "200 prompts" in out and "323 PASS, 17 FAIL, 460 UNDECIDABLE" in out
    cid, counts = verdict_counts(folder)
    assert cid == 1 and counts == {"PASS": 323, "FAIL": 17, "UNDECIDABLE": 460}
    with Project.open(folder, read_only=True) as p:
        run = p.samples.runs()[0]
        cfg = SpatialStore(p).get_config(cid)
        dets = dict(p.con.execute("SELECT source, min(detector) FROM detections GROUP BY source").fetchall())
    assert run["run_id"] == "boxdiff_a" and run["method"] == "sd15_boxdiff" and run["samples"] == 800
    assert run["params"]["width"] == 512 and run["params"]["num_inference_steps"] == 30
    assert run["model"]["model_id"] == "runwayml/stable-diffusion-v1-5"
    assert run["provenance"]["provenance"]["git_commit"].startswith("586dbf59")
    assert (cfg.margin, cfg.t_det, cfg.primary_threshold, cfg.secondary_threshold) == (0.1, 0.2, 0.5, 0.35)
    assert dets == {0: "fasterrcnn", 1: "grounding_dino"}


def test_a_second_run_lands_beside_the_first(project: Path, sbuc_run_dir: Path, sbuc_prompts: Path, tmp_path: Path) -> None:
    # the same run under another id clashes on sample ids: refused, project unchanged
    assert main(["import-sbuc", str(sbuc_run_dir), "--prompts", str(sbuc_prompts), "--project", str(project),
                 "--run-id", "other"]) != 0
    with Project.open(project, read_only=True) as p:
        assert p.samples.run_ids() == ["sd15_boxdiff"]


def test_import_copies_the_run_images_into_the_project(tmp_path: Path, sbuc_run_dir: Path, sbuc_prompts: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(sbuc_run_dir, run)
    (run / "images").mkdir()
    names = ["sd15_boxdiff_v1_000000_seed0000.png", "sd15_boxdiff_v1_000003_seed0002.png"]
    for k, n in enumerate(names):
        (run / "images" / n).write_bytes(png_bytes(shade=10 + k))
    folder = tmp_path / "project"
    assert main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(folder)]) == 0
    assert "2 images" in capsys.readouterr().out
    with Project.open(folder, read_only=True) as p:
        paths = dict(p.con.execute("SELECT sample_id, image_path FROM samples").fetchall())
    for n in names:
        rel = paths[n[:-4]]
        assert rel == f"images/sd15_boxdiff/{n}"
        assert (folder / rel).read_bytes() == (run / "images" / n).read_bytes()
    # a sample whose image is not in the run folder keeps its (project-relative) path
    assert paths["sd15_boxdiff_v1_000001_seed0000"] == "images/sd15_boxdiff/sd15_boxdiff_v1_000001_seed0000.png"


def test_a_failed_import_removes_the_images_it_copied(imported: Path, tmp_path: Path, sbuc_run_dir: Path,
                                                      sbuc_prompts: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(imported, project)
    run = tmp_path / "run"
    shutil.copytree(sbuc_run_dir, run)
    (run / "images").mkdir()
    (run / "images" / "sd15_boxdiff_v1_000000_seed0000.png").write_bytes(png_bytes())
    files_before = sorted(project.rglob("*"))
    # the samples are already in the project: the import fails after copying
    assert main(["import-sbuc", str(run), "--prompts", str(sbuc_prompts), "--project", str(project),
                 "--run-id", "again"]) != 0
    assert sorted(project.rglob("*")) == files_before
    assert not (project / "images" / "again").exists()


def test_report_gives_the_published_values(imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["report", "--project", str(imported), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "pass_rate 0.4037" in printed
    t = out / "spatial" / "tables"
    main_r = read_csv(t / "main_results.csv")
    assert main_r == [{"run": "sd15_boxdiff", "samples": "800", "pass_rate": "0.4037", "coverage": "0.4250",
                       "pass_rate_cond": "0.9500", "prompt_pass_rate": "0.7600", "mean_conf": "0.3948"}]
    rel = read_csv(t / "by_relation.csv")[0]
    assert (rel["above_pass_rate"], rel["below_pass_rate"], rel["left_of_pass_rate"], rel["right_of_pass_rate"]) == \
        ("0.4200", "0.3850", "0.4000", "0.4100")
    cf = read_csv(t / "counterfactual.csv")[0]
    assert (cf["pairs"], cf["both_pass_rate"], cf["one_sided_rate"], cf["both_fail_rate"], cf["undecidable_rate"],
            cf["undecidable_count"]) == ("100", "0.6600", "0.0000", "0.0000", "0.3400", "34")
    pm = read_csv(t / "prompt_metrics.csv")[0]
    assert (pm["total_prompts"], pm["best_of_k_pass_rate"], pm["all_of_k_pass_rate"]) == ("200", "0.7600", "0.0850")
    assert (out / "index.html").is_file()
    # an existing report is not overwritten without --overwrite
    assert main(["report", "--project", str(imported), "--out", str(out)]) != 0
    assert "already exists" in capsys.readouterr().err
    assert main(["report", "--project", str(imported), "--out", str(out), "--overwrite"]) == 0


def test_commands_on_a_folder_without_a_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--project", str(tmp_path / "none"), "--out", str(tmp_path / "r")]) != 0
    err = capsys.readouterr().err
    assert "no project in" in err and "import-sbuc" in err
    assert not (tmp_path / "none").exists()


# ---------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------


def test_evaluate_reproduces_the_published_verdicts(project: Path, sbuc_run_dir: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with Project.open(project, read_only=True) as p:
        before = p.con.execute("SELECT * FROM spatial_verdicts ORDER BY sample_id").fetchall()
    assert main(["evaluate", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "323 PASS, 17 FAIL, 460 UNDECIDABLE" in out and "config v1" in out
    assert "pass_rate 0.4037" in out and "mean_conf 0.3948" in out
    # SpatialBench-UC's own nested checker_config.yaml is the same config: still version 1
    assert main(["evaluate", "--project", str(project), "--config", str(sbuc_run_dir / "eval" / "checker_config.yaml")]) == 0
    cid, counts = verdict_counts(project)
    assert cid == 1 and counts == {"PASS": 323, "FAIL": 17, "UNDECIDABLE": 460}
    with Project.open(project, read_only=True) as p:
        after = p.con.execute("SELECT verdict, reason, conf FROM spatial_verdicts ORDER BY sample_id").fetchall()
    assert [(r[2], r[3]) for r in before] == [(r[0], r[1]) for r in after]
    assert np.allclose([r[5] for r in before], [r[2] for r in after], rtol=0, atol=1e-12)


def test_evaluate_with_a_flat_config_adds_a_version(project: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "narrow.yaml"
    cfg.write_text("name: narrow\nmargin: 0.03\nprimary_threshold: 0.5\nsecondary_threshold: 0.35\n")
    assert main(["evaluate", "--project", str(project), "--config", str(cfg)]) == 0
    cid, counts = verdict_counts(project)
    assert cid == 2
    assert counts["UNDECIDABLE"] < 460 and sum(counts.values()) == 800  # a smaller margin abstains less
    with Project.open(project, read_only=True) as p:
        assert [c["verdicts"] for c in SpatialStore(p).configs()] == [800, 800]
        assert SpatialStore(p).get_config(2).name == "narrow" and SpatialStore(p).get_config(2).margin == 0.03
    out = tmp_path / "report"
    assert main(["report", "--project", str(project), "--out", str(out)]) == 0
    assert read_csv(out / "spatial" / "tables" / "main_results.csv")[0]["pass_rate"] != "0.4037"


# ---------------------------------------------------------------------------------------------
# audit and calibration
# ---------------------------------------------------------------------------------------------


def _draw(project: Path, tmp_path: Path, seed: int, name: str, *extra: str) -> list[dict[str, str]]:
    out = tmp_path / name
    assert main(["audit-sample", "--project", str(project), "--size", "200", "--seed", str(seed), "--out", str(out),
                 *extra]) == 0
    return read_csv(out)


def test_audit_sample_is_stratified_seeded_and_stored(project: Path, tmp_path: Path) -> None:
    rows = _draw(project, tmp_path, 7, "a.csv")
    assert len(rows) == 200 and len({r["sample_id"] for r in rows}) == 200
    assert {"sample_id", "run", "prompt", "relation", "checker_verdict", "confidence"} <= set(rows[0])
    assert {r["checker_verdict"] for r in rows} == {"PASS", "FAIL", "UNDECIDABLE"}
    assert {r["relation"] for r in rows} == {"left_of", "right_of", "above", "below"}
    fails = [r for r in rows if r["checker_verdict"] == "FAIL"]
    assert len(fails) >= 4  # the 17 FAILs (2 %) are a stratum of their own, not drowned out
    assert [r["sample_id"] for r in _draw(project, tmp_path, 7, "b.csv", "--no-store")] == [r["sample_id"] for r in rows]
    assert [r["sample_id"] for r in _draw(project, tmp_path, 8, "c.csv", "--no-store")] != [r["sample_id"] for r in rows]
    with Project.open(project, read_only=True) as p:
        sets = p.audit.sets()
        assert len(sets) == 1 and sets[0]["size"] == 200 and sets[0]["params"]["seed"] == 7
        assert [s for s, _ in p.audit.items(sets[0]["audit_set_id"])] == [r["sample_id"] for r in rows]


def _label_sheet(rows: list[dict[str, str]], path: Path, flips: dict[int, str]) -> None:
    """Fill the audit sheet: the checker's verdict, except at the given row numbers."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for i, r in enumerate(rows):
            w.writerow(dict(r, human_verdict=flips.get(i, r["checker_verdict"])))


def _kappa(a: list[str], b: list[str]) -> float:
    cats = sorted(set(a) | set(b))
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in cats)
    return (po - pe) / (1 - pe)


def test_audit_metrics_from_filled_sheets(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _draw(project, tmp_path, 3, "sheet.csv")
    passes = [i for i, r in enumerate(rows) if r["checker_verdict"] == "PASS"]
    fails = [i for i, r in enumerate(rows) if r["checker_verdict"] == "FAIL"]
    unds = [i for i, r in enumerate(rows) if r["checker_verdict"] == "UNDECIDABLE"]
    flips = {passes[0]: "FAIL", passes[1]: "UNDECIDABLE", fails[0]: "PASS", unds[0]: "PASS", unds[1]: "FAIL"}
    alice = tmp_path / "alice.csv"
    _label_sheet(rows, alice, flips)
    assert main(["labels", "import", str(alice), "--project", str(project), "--annotator", "alice"]) == 0
    bob_flips = {i: "UNDECIDABLE" for i in passes[2:12]}
    bob = tmp_path / "bob.csv"
    _label_sheet(rows[:100], bob, {**{k: v for k, v in flips.items() if k < 100}, **{k: v for k, v in bob_flips.items() if k < 100}})
    assert main(["labels", "import", str(bob), "--project", str(project), "--annotator", "bob"]) == 0
    out = tmp_path / "audit.json"
    assert main(["audit-metrics", "--project", str(project), "--out", str(out), "--annotator", "alice"]) == 0
    res = json.loads(out.read_text())
    c = res["confusion"]
    n_pass, n_fail, n_und = len(passes), len(fails), len(unds)
    assert res["audited"] == 200 and res["tau"] == 0.0
    assert c["matrix"] == [[n_pass - 2, 1, 1], [1, n_fail - 1, 0], [1, 1, n_und - 2]]
    assert (c["tp"], c["fp"], c["fn"], c["tn"]) == (n_pass - 2, 1, 1, n_fail - 1)
    assert c["undecidable_checker"] == n_und and c["decided_2x2"] == [[n_pass - 2, 1], [1, n_fail - 1]]
    # risk–coverage: every unique confidence, and the τ grid 0, 0.05, ..., 1
    grid = res["risk_coverage"]["grid"]
    assert [g["tau"] for g in grid] == [round(0.05 * i, 2) for i in range(21)]
    assert grid[0]["coverage"] == pytest.approx((n_pass + n_fail) / 200)
    assert grid[0]["risk"] == pytest.approx(2 / (n_pass - 1 + n_fail))  # 2 wrong of those humans decided
    assert all(a["coverage"] >= b["coverage"] for a, b in zip(grid, grid[1:]))
    assert len(res["risk_coverage"]["unique"]) > 21
    # agreement between alice and bob over the 100 samples both labelled
    pair = res["agreement"]["between_annotators"]
    assert len(pair) == 1 and pair[0]["n"] == 100
    a_lab = [flips.get(i, rows[i]["checker_verdict"]) for i in range(100)]
    b_lab = [bob_flips.get(i, a_lab[i]) for i in range(100)]
    assert pair[0]["percent_agreement"] == pytest.approx(sum(x == y for x, y in zip(a_lab, b_lab)) / 100)
    assert pair[0]["kappa"] == pytest.approx(_kappa(a_lab, b_lab))
    assert pair[0]["kappa_lo"] < pair[0]["kappa"] < pair[0]["kappa_hi"] and not pair[0]["small"]
    assert pair[0]["units"] <= 100  # the samples' prompts are resampled
    # the operating point with its intervals, the same risk as the τ grid's first row
    op = res["operating_point"]
    assert op["risk"]["value"] == pytest.approx(grid[0]["risk"]) and op["risk"]["lo"] < op["risk"]["value"]
    assert op["coverage"]["n"] == 200 and op["risk"]["method"] == "cluster bootstrap"
    assert "alice vs bob" in capsys.readouterr().out


def test_audit_metrics_without_labels_says_what_to_do(project: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit-metrics", "--project", str(project), "--out", str(tmp_path / "a.json")]) != 0
    assert "no human labels" in capsys.readouterr().err
    assert not (tmp_path / "a.json").exists()


def test_calibrate_ranks_the_grid_and_applies_the_best(project: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rows = _draw(project, tmp_path, 11, "sheet.csv")
    passes = [i for i, r in enumerate(rows) if r["checker_verdict"] == "PASS"]
    low = sorted(passes, key=lambda i: float(rows[i]["confidence"]))[:6]
    sheet = tmp_path / "labels.csv"
    _label_sheet(rows, sheet, {i: "FAIL" for i in low})  # humans reject the least confident PASSes
    assert main(["labels", "import", str(sheet), "--project", str(project), "--annotator", "alice"]) == 0
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--project", str(project), "--grid", "margin=0.03,0.05,0.07,0.10",
                 "--grid", "t_det=0.2,0.3,0.4", "--grid", "tau=0.3,0.5,0.7", "--weights", "10,2,0.5",
                 "--out", str(out), "--apply"]) == 0
    res = json.loads(out.read_text())
    table = res["table"]
    assert len(table) == 36 and [r["rank"] for r in table] == list(range(1, 37))
    for r in table:
        assert r["j"] == pytest.approx(10 * r["fpr_pass"] + 2 * r["risk"] + 0.5 * (1 - r["coverage"]))
    assert all(a["j"] <= b["j"] + 1e-12 for a, b in zip(table, table[1:]))
    best = res["best"]
    assert best["params"] == {k: table[0][k] for k in ("margin", "t_det", "tau")}
    assert best["J"] == pytest.approx(table[0]["j"]) and res["audited"] == 200
    assert {"J", "FPR_PASS", "risk", "coverage"} <= set(best)
    # the least confident PASSes are wrong: the best threshold leaves at least some of them out
    assert best["params"]["tau"] > 0.3 or best["FPR_PASS"] < 6 / len(passes)
    cid, counts = verdict_counts(project)
    assert cid == res["applied_config_version"] == 2 and sum(counts.values()) == 800
    with Project.open(project, read_only=True) as p:
        cfg = SpatialStore(p).get_config(cid)
    assert (cfg.margin, cfg.t_det, cfg.tau) == (best["params"]["margin"], best["params"]["t_det"], best["params"]["tau"])
    printed = capsys.readouterr().out
    assert "applied as checker config v2" in printed
    # the audit now reads the calibrated operating point
    am = tmp_path / "am.json"
    assert main(["audit-metrics", "--project", str(project), "--out", str(am)]) == 0
    assert json.loads(am.read_text())["tau"] == best["params"]["tau"]


def test_calibrate_refuses_bad_grids(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--project", str(project), "--grid", "margin", "--out", str(tmp_path / "c.json")]) != 0
    assert "NAME=V1,V2" in capsys.readouterr().err
    assert main(["calibrate", "--project", str(project), "--grid", "wobble=1,2", "--out", str(tmp_path / "c.json")]) != 0
    err = capsys.readouterr().err
    assert "unknown calibration parameter" in err and "wobble" in err
    assert main(["calibrate", "--project", str(project), "--weights", "1,2", "--out", str(tmp_path / "c.json")]) != 0
    assert "three numbers" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------------


def test_demo_builds_once_then_reuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "demo"
    assert main(["demo", "--project", str(folder), "--no-gui", "--pairs", "2", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "demo project built" in out and "16 samples" in out and "vs known truth" in out
    assert "accuracy on decided" in out
    assert not any(p.name.endswith(".building") for p in tmp_path.iterdir())
    with Project.open(folder, read_only=True) as p:
        assert p.samples.load_dataset(method="spatial").n == 16 and SpatialStore(p).active_config_id() == 1
    assert main(["demo", "--project", str(folder), "--no-gui"]) == 0
    out2 = capsys.readouterr().out
    assert "demo project reused" in out2 and "16 samples" in out2
    # the same summary numbers, recomputed from the stored project
    def line(text: str, start: str) -> str:
        return next(x for x in text.splitlines() if x.startswith(start))

    assert "building the demo project" in out  # it says what it builds before it starts
    assert line(out, "  checker") == line(out2, "  checker") and line(out, "  vs known") == line(out2, "  vs known")
    # the multi-rater audit: three raters, gold items, an adjudicator
    assert line(out, "  raters: blind audit set #1") == line(out2, "  raters: blind audit set #1")
    assert "3 raters on each" in line(out, "  raters")


def test_demo_refuses_a_non_empty_foreign_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    assert main(["demo", "--project", str(tmp_path / "x"), "--no-gui"]) != 0
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "x" / "notes.txt").read_text() == "mine"


def test_default_demo_folder_is_per_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from workstation.commands.demo import default_demo_dir

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert default_demo_dir() == tmp_path / "t2i-workstation" / "demo"


# ---------------------------------------------------------------------------------------------
# progress helper
# ---------------------------------------------------------------------------------------------


def test_progress_drive_returns_the_generator_result() -> None:
    from workstation.progress import TerminalProgress, drive

    def work() -> Any:
        for i in range(5):
            yield i + 1, 5
        return "done"

    assert drive(work(), "x", show=False) == "done"
    seen: list[tuple[int, int]] = []
    with TerminalProgress("y", show=False) as bar:
        for i in range(3):
            bar(i + 1, 3)
            seen.append((bar.done, bar.total))
    assert seen == [(1, 3), (2, 3), (3, 3)]
