"""Removing a run: its samples, detections, verdicts and images go in one transaction; the other
run is untouched; the labels of the removed samples stay in the log and are reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.commands.pipeline import PipelineRequest, create_pipeline
from workstation.commands.runs import plan_run_removal, remove_run
from workstation.jobs.queue import JobQueue
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project

GEN = {"width": 64, "height": 64}


def _two_runs(folder: Path) -> None:
    p = Project.create(folder)
    try:
        for rid in ("keep", "drop"):
            specs = create_pipeline(p, PipelineRequest(pairs=1, seeds=2, params=GEN, perturbations=[], run_id=rid))
            q = JobQueue(p)
            for i, s in enumerate(specs):
                q.submit(s.job_id, after=[x.job_id for x in specs[:i]])
            assert all(r.status == "done" for r in q.run_all(poll=0.05))
        SpatialStore(p).add_label(_first_sample(p, "drop"), "alice", "PASS")
    finally:
        p.close()


def _first_sample(p: Project, rid: str) -> str:
    return p.con.execute("SELECT min(sample_id) FROM samples WHERE run_id = ?", [rid]).fetchone()[0]


def _counts(p: Project, rid: str) -> dict[str, int]:
    sub = "(SELECT sample_id FROM samples WHERE run_id = ?)"
    return {
        "samples": p.con.execute("SELECT count(*) FROM samples WHERE run_id = ?", [rid]).fetchone()[0],
        "detections": p.con.execute(f"SELECT count(*) FROM detections WHERE sample_id IN {sub}", [rid]).fetchone()[0],
        "verdicts": p.con.execute(f"SELECT count(*) FROM spatial_verdicts WHERE sample_id IN {sub}",
                                  [rid]).fetchone()[0],
    }


def test_runs_remove_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "p"
    _two_runs(folder)
    with Project.open(folder) as p:
        keep_before = _counts(p, "keep")
        drop_images = [folder / r[0] for r in p.con.execute(
            "SELECT image_path FROM samples WHERE run_id = 'drop'").fetchall()]
        keep_images = [folder / r[0] for r in p.con.execute(
            "SELECT image_path FROM samples WHERE run_id = 'keep'").fetchall()]
        labelled = _first_sample(p, "drop")
    assert keep_before["samples"] == 8 and keep_before["detections"] > 0 and keep_before["verdicts"] == 8
    assert all(f.is_file() for f in drop_images + keep_images)

    assert main(["runs", "list", "--project", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "keep" in out and "drop" in out and " 8 " in out
    # without --yes (and no terminal to ask on) nothing is removed
    assert main(["runs", "remove", "--project", str(folder), "drop"]) == 2
    assert "add --yes" in capsys.readouterr().err
    with Project.open(folder, read_only=True) as p:
        assert _counts(p, "drop")["samples"] == 8

    assert main(["runs", "remove", "--project", str(folder), "drop", "--yes"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("removed run 'drop': 8 sample(s)")
    assert "1 label event(s) of these samples stay in the label log" in out
    with Project.open(folder, read_only=True) as p:
        assert p.samples.run_ids() == ["keep"]
        assert _counts(p, "drop") == {"samples": 0, "detections": 0, "verdicts": 0}
        assert p.con.execute("SELECT count(*) FROM detections WHERE sample_id LIKE 'drop%'").fetchone()[0] == 0
        assert _counts(p, "keep") == keep_before
        assert [e.target_id for e in p.labels.events(task="spatial.verdict")] == [labelled]  # kept
        assert not any(j["job_id"].startswith("generate-drop") for j in p.jobs.all())
    assert not any(f.exists() for f in drop_images)
    assert all(f.is_file() for f in keep_images)
    assert main(["runs", "remove", "--project", str(folder), "drop", "--yes"]) == 2
    assert "run 'drop' is not in the project; runs: keep" in capsys.readouterr().err


def test_a_failure_inside_the_removal_changes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _two_runs(folder)
    p = Project.open(folder)
    try:
        before = {rid: _counts(p, rid) for rid in ("keep", "drop")}
        real = p.con

        class Failing:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def execute(self, sql: str, *a: Any) -> Any:
                if sql.startswith("DELETE FROM runs"):
                    raise OSError(28, "No space left on device")
                return real.execute(sql, *a)

        p.con = Failing()  # type: ignore[assignment]
        with pytest.raises(OSError):
            remove_run(p, "drop")
        p.con = real
        assert {rid: _counts(p, rid) for rid in ("keep", "drop")} == before
        assert p.samples.run_ids() == ["keep", "drop"] or sorted(p.samples.run_ids()) == ["drop", "keep"]
        plan = plan_run_removal(p, "drop")
        assert plan.samples == 8 and all((folder / i).is_file() for i in plan.images)
    finally:
        p.close()


def test_removing_a_run_removes_its_samples_recorded_stabilities(tmp_path: Path) -> None:
    import numpy as np

    from workstation.dataset import Samples
    from workstation.methods.spatial.data import recorded_stability, spatial_dataset
    from workstation.methods.spatial.store import add_dataset, load_dataset

    folder = tmp_path / "p"
    with Project.create(folder) as p:
        for run, ids, stab in (("keep", ["k1", "k2"], [0.5, 0.25]), ("drop", ["d1", "d2"], [0.75, 1.0])):
            ds = spatial_dataset(Samples.build(ids, run, [f"p_{s}" for s in ids]), ["left_of"] * 2, ["dog"] * 2,
                                 ["cat"] * 2, recorded_stability=stab)
            p.samples.add_run(run, method="m")
            p.samples.add_prompts(ds.prompts)
            add_dataset(p, ds)
        r = remove_run(p, "drop")
        assert r.rows.get("spatial_stability") == 2
        assert sorted(x[0] for x in p.con.execute("SELECT sample_id FROM spatial_stability").fetchall()) == \
            ["k1", "k2"]
        ds = load_dataset(p)
        assert ds.samples.sample_id.tolist() == ["k1", "k2"] and recorded_stability(ds).tolist() == [0.5, 0.25]
        # a sample of that id made again starts with no recorded stability
        again = spatial_dataset(Samples.build(["d1"], "keep", ["p_d1"]), ["left_of"], ["dog"], ["cat"])
        p.samples.add_dataset(again)
        assert np.isnan(recorded_stability(load_dataset(p))[-1])
