"""Screenshots of the audit-plan panel and of the calibration panel's guaranteed choice.

    .venv/bin/python packaging/screenshots_audit_plans.py [--out resources/screenshots] [--work DIR]

On the SpatialBench-UC fixture (../shared/fixtures/spatialbench_uc, 800 samples) with an
annotator simulated from the recorded verdicts (12 % of labels changed at random): the panel
with a plan for the checker's PASS precision to ±3 % at 95 % part-way
(``audit_plan_labelling.png``) and at its goal (``audit_plan_reached.png``), the same for the
true PASS rate labelling whole prompts (``audit_plan_prompts.png``), and the calibration panel's
box after a uniform audit of 300 samples with Learn then Test beside J's choice
(``calibration_guarantee_box.png``). Runs under Xvfb like `packaging/screenshots.py`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZE = (1700, 1300)


def ensure_display(argv: list[str]) -> None:
    """Re-run under Xvfb when there is no display (once); offscreen when Xvfb is missing."""
    if os.environ.get("DISPLAY") or os.environ.get("QT_QPA_PLATFORM") or os.environ.get("_SCREENSHOTS_CHILD"):
        return
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        print("no display and no xvfb-run: using the offscreen platform", file=sys.stderr)
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        return
    env = dict(os.environ, _SCREENSHOTS_CHILD="1")
    cmd = [xvfb, "-a", "-s", f"-screen 0 {SIZE[0]}x{SIZE[1]}x24", sys.executable, __file__, *argv]
    sys.exit(subprocess.call(cmd, env=env))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "resources" / "screenshots")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    ensure_display(sys.argv[1:])
    import numpy as np
    from PySide6.QtWidgets import QApplication

    from ui.theme import apply_theme
    from ui.widgets.audit_plan import AuditPlanPanel
    from workstation.evaluation.plan import Goal
    from workstation.methods.spatial.sbuc import parse_run
    from workstation.methods.spatial.store import SpatialStore, add_dataset
    from workstation.store import Project

    fixture = ROOT.parent / "shared" / "fixtures" / "spatialbench_uc"
    parsed = parse_run(fixture / "sd15_boxdiff", fixture / "v1.0.1" / "prompts.jsonl")
    work = args.work or Path(tempfile.mkdtemp(prefix="audit-plan-shots-"))
    folder = work / "sbuc"
    app = QApplication.instance() or QApplication(sys.argv)
    apply_theme(app, "light")
    args.out.mkdir(parents=True, exist_ok=True)
    ds = parsed.dataset
    rng = np.random.default_rng(11)
    rec = parsed.recorded.verdict.astype(int)
    truth = np.where(rng.random(ds.n) < 0.12, rng.integers(0, 3, ds.n), rec)
    names = ("PASS", "FAIL", "UNDECIDABLE")
    row = {s: i for i, s in enumerate(ds.samples.sample_id.tolist())}
    p = Project.create(folder)
    p.samples.add_run(parsed.run_id, method="sd15_boxdiff")
    add_dataset(p, ds)
    SpatialStore(p).save_config(parsed.config, note="imported")

    panel = AuditPlanPanel()
    panel.resize(1500, 950)
    panel.show()
    panel.set_project(p)

    def settle() -> None:
        for _ in range(5):
            app.processEvents()

    def label(targets: list) -> None:  # type: ignore[type-arg]
        for t in targets:
            for sid in t.targets:
                SpatialStore(p).add_label(sid, "alice", names[truth[row[sid]]], audit_set_id=panel.plan.audit_set_id,
                                          source="recheck" if t.recheck else "ui")

    def run_plan(goal: Goal, stop_after: int | None, shot: str) -> None:
        panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData(goal.quantity))
        panel.width_spin.setValue(100 * goal.half_width)
        panel.unit_combo.setCurrentIndex(panel.unit_combo.findData(goal.unit))
        panel.start_plan()
        rounds = 0
        while panel.status is not None and not panel.status.reached:
            if stop_after is not None and rounds >= stop_after:
                break
            label(panel.request_targets())
            panel.refresh()
            rounds += 1
        settle()
        panel.grab().save(str(args.out / f"{shot}.png"))
        print("wrote", args.out / f"{shot}.png", "—", panel.status.message if panel.status else "")

    panel.batch_spin.setValue(10)
    run_plan(Goal("precision", 0.03), 6, "audit_plan_labelling")
    label(panel.request_targets())
    while panel.status is not None and not panel.status.reached:
        label(panel.request_targets())
        panel.refresh()
    settle()
    panel.grab().save(str(args.out / "audit_plan_reached.png"))
    print("wrote", args.out / "audit_plan_reached.png", "—", panel.status.message if panel.status else "")
    panel.batch_spin.setValue(5)
    run_plan(Goal("rate", 0.05, 0.95, "cluster"), None, "audit_plan_prompts")
    panel.set_project(None)
    p.close()

    # the calibration panel: a uniform audit of 300 samples, then Learn then Test beside J
    from ui.methods.spatial.calibration.panel import CalibrationPanel
    from ui.methods.spatial.session import SpatialSession

    folder2 = work / "sbuc_calibration"
    p2 = Project.create(folder2)
    p2.samples.add_run(parsed.run_id, method="sd15_boxdiff")
    add_dataset(p2, ds)
    SpatialStore(p2).save_config(parsed.config, note="imported")
    audit = rng.choice(ds.n, 300, replace=False)
    SpatialStore(p2).add_labels_bulk({"sample_id": ds.samples.sample_id[audit].tolist(), "annotator": ["alice"] * 300,
                                      "verdict": [names[truth[i]] for i in audit]})
    st = SpatialSession()
    st.set_project(p2)
    cal = CalibrationPanel(st)
    cal.resize(1600, 1200)
    cal.show()
    settle()
    box = cal.guarantee_box
    box.alpha_spin.setValue(0.1)
    box.delta_spin.setValue(0.1)
    box.run()
    while box.worker is not None:
        app.processEvents()
    settle()
    box.grab().save(str(args.out / "calibration_guarantee_box.png"))
    print("wrote", args.out / "calibration_guarantee_box.png", "—", box.message.text())
    st.close_project()


if __name__ == "__main__":
    main()
