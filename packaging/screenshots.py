"""Screenshots of every main screen, on the demo project and on the SpatialBench-UC fixture.

    .venv/bin/python packaging/screenshots.py [--out resources/screenshots] [--work DIR] [--readme]

Runs the real window under Xvfb (re-executing itself with `xvfb-run` when there is no
display; offscreen if Xvfb is not installed) and saves one PNG per screen:
browse table and grid, the pair viewer (dark and light), a blind audit item, the audit-set
dialog, the calibration tab, the agreement dialog and the shortcut sheet; on the demo project also
ProtoBias's metric table, triplet view (and blind) and rating mode (``protobias_*.png``); MetaLogic's
heatmap with a cell's pairs, an omission pair marked on both images, and the page blind
(``metalogic_*.png``); DyEval's tree,
a node to judge, pre-marks, the split diagram, proposals, the scene-graph editor and the New tree
dialog (``dyeval_*.png``); the rater monitor (Audit → Raters…) and the report's protocol card,
rendered by headless Chromium, on a demo three simulated raters labelled (``raters_monitor.png``,
``report_protocol_card.png``); Browse with its judge columns and the filter "judges disagree", a
blind audit's Browse without them and the audit-plan panel with a second judge (``judges_*.png``); with
``--only small``, every tab (and each page of a tab's own tabs), the
jobs panel and the F1 sheet on each method's judging page at 1024 × 700 (``small_*.png``; it names
any screen where the window did not keep to that size). The demo project
is built with `python main.py demo --no-gui` when missing; the fixture project is imported
from ../shared/fixtures/spatialbench_uc (skipped when that is absent). Projects live under
--work (default: a temporary folder), never in the user's settings. Each window opens its project
as a first open does (`new_window`: the place an earlier window kept is forgotten, the Jobs panel
closed), so no set depends on the sets taken before it or on an earlier run on the same --work.
`--readme` also writes the README's screenshots (`README_SET`, taken at 1600 × 1000) to
docs/images as small PNGs (1100 px wide, 256 colours).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# after ROOT is on the path: this checkout's packages, never another installed copy
from workstation.methods.spatial.store import SpatialStore  # noqa: E402
SHARED = ROOT.parent / "shared" / "fixtures" / "spatialbench_uc"
SIZE = (1600, 1000)


def ensure_display(argv: list[str]) -> None:
    """Re-run under Xvfb when there is no display (once)."""
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


def build_demo(folder: Path) -> Path:
    from workstation.store import DB_NAME

    if not (folder / DB_NAME).is_file():
        subprocess.run([sys.executable, "main.py", "demo", "--no-gui", "--project", str(folder), "--pairs", "12"],
                       cwd=ROOT, check=True)
    return folder


def build_fixture(folder: Path) -> Path | None:
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.store import DB_NAME, Project

    if (folder / DB_NAME).is_file():
        return folder
    if not (SHARED / "sd15_boxdiff" / "eval" / "per_sample.jsonl").is_file():
        print(f"fixture not found at {SHARED}: its screenshots are skipped", file=sys.stderr)
        return None
    from workstation.methods.spatial.sbuc import parse_run
    from workstation.methods.spatial.store import add_dataset

    parsed = parse_run(SHARED / "sd15_boxdiff", SHARED / "v1.0.1" / "prompts.jsonl")
    p = Project.create(folder)
    try:
        with p.transaction():
            p.samples.add_run(parsed.run_id, method=parsed.run_id, source="spatialbench_uc")
            add_dataset(p, parsed.dataset)
            SpatialStore(p).save_config(parsed.config or CheckerConfig())
    finally:
        p.close()
    return folder


def new_window(folder: Path, size: tuple[int, int] = SIZE):
    """A main window on the project in ``folder`` as a first open shows it: at ``size``, on its
    first tab, the Jobs panel closed. The place an earlier window kept in the project (its tab,
    size and docks: `ui.place`) is forgotten first, so no set of screens depends on another
    having been taken before it, in this run or an earlier one on the same --work."""
    from ui.main_window import MainWindow
    from ui.place import PLACE_KEY
    from workstation.store import Project

    with Project.open(folder) as p:
        p.set_setting(PLACE_KEY, "")
    w = MainWindow(ask_annotator=lambda: "auditor")
    w.resize(*size)
    w.show()
    w.open_project(folder)
    dock = w.docks.get("Jobs")
    if dock is not None:
        dock.hide()
    w.resize(*size)
    return w


class Shooter:
    def __init__(self, app, out: Path) -> None:
        self.app = app
        self.out = out
        self.saved: list[Path] = []

    def settle(self, seconds: float = 0.3) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.app.processEvents()
            time.sleep(0.01)

    def save(self, widget, name: str) -> None:
        self.settle()
        path = self.out / f"{name}.png"
        widget.grab().save(str(path))
        self.saved.append(path)
        print(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def pick_pair(state, want: str = "PASS") -> int:
    """A sample whose checker verdict is `want` and that has a twin (for a telling pair)."""
    from ui.methods.spatial.pair_viewer import PairIndex
    from workstation.methods.spatial.types import VERDICTS

    v = state.verdicts
    idx = PairIndex.of(state.dataset)
    for r in range(state.dataset.n):
        if v is not None and VERDICTS[int(v.verdict[r])] == want and idx.twin(r) >= 0 \
                and int(v.verdict[idx.twin(r)]) != int(v.verdict[r]):
            return r
    return 0


def shoot_project(sh: Shooter, folder: Path, tag: str) -> None:
    from ui import menus, theme
    from ui.shortcuts import ShortcutSheet
    from ui.widgets.agreement import AgreementDialog
    from ui.widgets.audit_dialog import AuditSetDialog
    from workstation.evaluation.audit_sets import draw_audit_set

    theme.apply_theme(sh.app, "dark")
    w = new_window(folder)
    st = w.spatial
    sh.save(w, f"{tag}_browse_table")
    w.browser.view_buttons.button(1).click()
    sh.settle(1.0)
    sh.save(w, f"{tag}_browse_grid")
    w.browser.view_buttons.button(0).click()

    row = pick_pair(st, "PASS")
    w.method_views["spatial"].review_from_browse(w, row)
    w.viewer.fit()
    sh.save(w, f"{tag}_review_pair")
    # labels of two annotators on the same samples, so the table and the agreement dialog
    # have something to show
    if not st.project.read_only and not SpatialStore(st.project).latest_labels():
        start = st.queue_pos
        for name, verdicts in (("second", ("PASS", "PASS", "UNDECIDABLE", "FAIL")),
                               ("auditor", ("PASS", "FAIL", "UNDECIDABLE", "FAIL"))):
            st.set_annotator(name)
            w.spatial.controller.go(start)
            for verdict in verdicts:
                w.spatial.controller.record(verdict)
        w.spatial.controller.go(start)
        w._update_status()
    w.viewer.zoom(2.0)
    sh.save(w, f"{tag}_review_zoomed")
    w.viewer.fit()
    theme.apply_theme(sh.app, "light")
    sh.save(w, f"{tag}_review_light")
    w.show_tab("Browse")
    sh.save(w, f"{tag}_browse_light")
    theme.apply_theme(sh.app, "dark")

    ag = AgreementDialog(st.project, st.controller.scheme, noun="sample", parent=w)
    ag.show()
    sh.save(ag, f"{tag}_agreement")
    ag.close()

    # audit set dialog, then the blind queue and one of its re-checks
    views = w.method_views["spatial"]
    pop = views.audit_population(w)
    dlg = AuditSetDialog(st.project, st.controller.scheme, pop, parent=w)
    dlg.show()
    sh.save(dlg, f"{tag}_audit_dialog")
    dlg.close()
    if not st.project.read_only:
        aid = draw_audit_set(st.project, st.controller.scheme, pop, name="screenshot audit",
                             size=min(60, st.dataset.n), seed=1, recheck_fraction=0.1)
        menus.start_audit_set(w, aid)
        sh.save(w, f"{tag}_review_blind_audit")
        rc = next((k for k, flag in enumerate(st.controller.core.recheck.tolist()) if flag), None)
        if rc is not None:
            st.controller.go(rc)
            sh.save(w, f"{tag}_review_recheck")
        menus.leave_audit(w)
        w.statusBar().clearMessage()  # "left the audit set" says nothing on the screens after it

    w.show_tab("Calibration")
    sh.settle(1.0)
    sh.save(w, f"{tag}_calibration")

    sheet = ShortcutSheet(w)
    sheet.show()
    sh.save(sheet, f"{tag}_shortcuts")
    sheet.close()
    if getattr(w, "protobias_page", None) is not None:
        shoot_protobias(sh, w)
    if getattr(w, "metalogic_page", None) is not None:
        shoot_metalogic(sh, w)
    for name in ("metalogic", "protobias"):
        if name in w.method_views and not st.project.read_only:
            shoot_blind_audit(sh, w, name)
    w.close()
    sh.settle(0.1)


def shoot_judges(sh: Shooter, folder: Path) -> None:
    """Browse with a column per judge and the filter "judges disagree" (``judges_browse_columns``);
    a blind audit's Browse, where neither is (``judges_browse_blind_audit``); the audit-plan panel
    with a second judge, after a few rounds of labels (``judges_plan_second_judge``)."""
    from ui import menus, theme
    from workstation.evaluation.audit_sets import draw_audit_set
    from workstation.methods.spatial.judges import geneval_outcomes
    from workstation.methods.spatial.store import TASK

    theme.apply_theme(sh.app, "dark")
    w = new_window(folder)
    m = w.browser.model
    end = time.perf_counter() + 60
    while (not m.q.judges or m.judges.computing) and time.perf_counter() < end:
        sh.settle(0.1)
    w.browser.filters.pick_judges("checker", "spatial.geneval")
    sh.save(w, "judges_browse_columns")
    st = w.spatial
    views = w.method_views["spatial"]
    if not st.project.read_only:
        aid = draw_audit_set(st.project, st.controller.scheme, views.audit_population(w), name="judges audit",
                             size=min(40, st.dataset.n), seed=2)
        menus.start_audit_set(w, aid)
        w.show_tab("Browse")
        sh.save(w, "judges_browse_blind_audit")
        menus.leave_audit(w)
        w.statusBar().clearMessage()
        # a plan for the true PASS rate with GenEval's rule as its second judge; a few rounds labelled
        # (each target with the demo's known truth where the demo labelled it, else GenEval's outcome)
        menus.open_audit_plans(w)
        win = w.audit_plans_window
        panel = win.panel
        panel.method_combo.setCurrentIndex(panel.method_combo.findData("spatial"))
        names = [panel.judge_combo.itemData(i) for i in range(panel.judge_combo.count())]
        panel.judge_combo.setCurrentIndex(next(i for i, n in enumerate(names) if str(n).startswith("spatial.geneval")))
        panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData("rate"))
        plan = panel.start_plan()
        if plan is not None:
            ds = st.dataset
            passed, _ = geneval_outcomes(ds)
            by_id = {str(i): ("PASS" if g == 1 else "FAIL") for i, g in zip(ds.samples.sample_id.tolist(), passed)}
            known = {e.target_id: e.value for e in st.project.labels.events(task=TASK) if e.value}
            got: list[list] = []
            panel.targets_ready.connect(got.append)
            for _ in range(8):
                panel.batch_spin.setValue(8)
                panel.next_button.click()
                for t in (got[-1] if got else []):
                    for sid in t.targets:
                        st.project.labels.add(TASK, "sample", sid, "auditor", known.get(sid, by_id.get(sid, "PASS")),
                                              audit_set_id=plan.audit_set_id)
                panel.refresh()
            win.resize(1300, 900)
            sh.save(win, "judges_plan_second_judge")
        win.close()
    w.close()
    sh.settle(0.1)


def shoot_blind_audit(sh: Shooter, w, name: str) -> None:
    """A method's blind audit set on its judging page, and one of its re-checks."""
    from ui import menus
    from workstation.evaluation.audit_sets import draw_audit_set

    views = w.method_views[name]
    c = views.controller(w)
    pop = views.audit_population(w)
    if pop is None or len(pop) < 4:
        return
    aid = draw_audit_set(w.state.project, c.scheme, pop, name=f"{name} audit", size=min(20, len(pop)), seed=1,
                         recheck_fraction=0.2)
    menus.start_audit_set(w, aid)
    sh.save(w, f"{name}_blind_audit")
    rc = next((k for k, flag in enumerate(c.core.recheck.tolist()) if flag), None)
    if rc is not None:
        c.go(rc)
        sh.save(w, f"{name}_recheck")
    menus.leave_audit(w)
    w.statusBar().clearMessage()


def shoot_protobias(sh: Shooter, w) -> None:
    """ProtoBias: the metric table, a triplet where one metric fails and one does not (and the same
    triplet blind), and the blind rating mode."""
    pb = w.protobias_page
    w.show_tab("ProtoBias")
    pb.show_page("metrics")
    end = time.perf_counter() + 30
    while not pb.metrics.ready and time.perf_counter() < end:  # the tables come from a worker thread
        sh.settle(0.1)
    sh.settle(0.5)
    sh.save(w, "protobias_metrics")
    t = pb.triplets
    pb.show_page("triplets")
    r = pb.session.results
    if r is not None and len(r.metrics) >= 2:
        # a triplet the second metric fails and the first ranks correctly: both marks in one view
        both = r.failed[:, 1] & r.valid[:, 0] & ~r.failed[:, 0]
        t.metric.setCurrentIndex(1)
        if both.any():
            row = int(both.nonzero()[0][0])
            t.table.selectRow(max(t.model.view_row_of(row), 0))
    sh.settle(0.8)
    sh.save(w, "protobias_triplets")
    t.blind.setChecked(True)
    sh.settle(0.5)
    sh.save(w, "protobias_triplets_blind")
    t.blind.setChecked(False)
    pb.show_page("rating")
    pb.rating.panes["A"].view.setFocus()
    sh.settle(0.8)
    sh.save(w, "protobias_rating")


def shoot_metalogic(sh: Shooter, w) -> None:
    """MetaLogic: the heatmap with one cell's pairs listed, an omission pair marked on both images
    (after a few judgements, so the agreement shows), and the same page blind."""
    import numpy as np

    from workstation.methods.metalogic.laws import DIMENSIONS, LAWS
    from workstation.methods.metalogic.results import MISALIGNED, OMISSION

    page = w.metalogic_page
    w.show_tab("MetaLogic")
    r = page.session.results
    if r is None or not len(r):
        return
    if not w.state.annotator:
        w.state.set_annotator("demo")
    # a few judgements: the computed outcome, one disagreement
    page.controller.auto_advance = True
    for k in range(min(8, len(page.controller.queue))):
        page.controller.go(k)
        v = int(r.verdict[page.current_row()])
        page.controller.record(("ALIGNED", "MISALIGNED", "UNDECIDABLE")[v if k != 3 else (v + 1) % 2])
    # the busiest cell with misalignments, and an omission pair in it
    om = (r.verdict == MISALIGNED) & (r.kind == OMISSION)
    cells = np.zeros((len(LAWS), len(DIMENSIONS)), np.int64)
    np.add.at(cells, (r.law.astype(np.int64), r.dimension.astype(np.int64)), om.astype(np.int64))
    law, dim = np.unravel_index(int(np.argmax(cells)), cells.shape)
    page.show_cell(LAWS[int(law)], DIMENSIONS[int(dim)])
    hm = page.heat
    page.heat_view.setCurrentIndex(hm.index(int(law), hm.dims.index(DIMENSIONS[int(dim)])))
    rows = page.model.rows
    pick = [k for k, i in enumerate(rows.tolist()) if om[i]]
    page.controller.go(pick[0] if pick else 0)
    sh.settle(0.8)
    sh.save(w, "metalogic_heatmap")
    page.pair.pane_a.setFocus()
    sh.save(page.pair.parentWidget(), "metalogic_pair")
    page.set_blind(True)
    sh.settle(0.5)
    sh.save(w, "metalogic_blind")
    page.set_blind(False)


def prepare_dyeval(folder: Path) -> bool:
    """The demo's DyEval tree with one more child to judge, and a second tree whose images carry
    pre-marks (scores of the weight-free `fake` scorer stand in for CLIPScore here)."""
    from workstation.methods.dyeval.config import DyEvalConfig
    from workstation.methods.dyeval.runner import DyEvalRunner
    from workstation.methods.dyeval.store import TreeStore
    from workstation.store import Project

    with Project.open(folder) as p:
        st = TreeStore(p)
        if "demo" not in st.tree_ids():
            print("the demo has no DyEval tree: its screenshots are skipped", file=sys.stderr)
            return False
        r = DyEvalRunner(p, "demo")
        open_root = [x for x in r.tree.nodes["n1"].proposal_ids if r.tree.proposals[x].state == "proposed"]
        for pid in open_root:
            r.accept(pid)
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=256)
        if "premarks" not in st.tree_ids():
            cfg = DyEvalConfig(n_i=3, n_x=4, premark_threshold=45.0, premark_scorer="fake")
            q = DyEvalRunner.create(p, cfg, tree_id="premarks", topics=["Static attributes"])
            q.run_automatic(("write",), confirm=True)
            q.render_inline(size=256)
            ids = list(q.tree.images)
            from workstation.jobs.chunks import read_image
            from workstation.scoring.fake import FakeScorer

            texts = [q.tree.step_owner_text(q.tree.images[i].owner) for i in ids]
            scores = [100.0 * FakeScorer.unit(read_image(folder / q.tree.images[i].path), t) for i, t in zip(ids, texts)]
            p.scores.add({"sample_id": ids, "scorer": ["fake"] * len(ids), "text": texts, "score": scores})
            q.sync()
    return True


def shoot_dyeval(sh: Shooter, folder: Path) -> None:
    from ui import theme
    from ui.methods.dyeval.dialogs import NewTreeDialog

    if not prepare_dyeval(folder):
        return
    theme.apply_theme(sh.app, "dark")
    w = new_window(folder)
    w.open_method("dyeval")
    page = w.dyeval_page
    page.session.open_tree("demo")
    sh.settle(0.5)
    tree = page.session.tree
    page.tree_view.select("node", "n1")
    sh.save(w, "dyeval_tree")
    judging = next((n for n in tree.bfs_order() if tree.node_state(n) == "judging"), None)
    if judging is not None:
        page.tree_view.select("node", judging)
        page.images.controller.go(1)
        sh.save(w, "dyeval_node_judging")
    if tree.locations:
        lid = next(iter(tree.locations))
        page.tree_view.select("location", lid)
        sh.settle(0.3)
        page.location.diagram.fit()
        sh.save(w, "dyeval_split_diagram")
    expanding = next((n for n in tree.bfs_order() if any(tree.proposals[x].state == "proposed"
                                                         for x in tree.nodes[n].proposal_ids)), None)
    if expanding is not None:
        page.tree_view.select("node", expanding)
        page.tabs.setCurrentWidget(page.proposals)
        sh.save(w, "dyeval_proposals")
    located = next((n for n in tree.bfs_order() if tree.bugs(n)), None)
    if located is not None:
        page.tree_view.select("node", located)
        page.tabs.setCurrentWidget(page.graph)
        page.graph.show_node(located, tree.bugs(located)[-1])
        sh.save(w, "dyeval_scene_graph")
    page.session.open_tree("premarks")
    sh.settle(0.3)
    page.tree_view.select("node", "n1")
    page.tabs.setCurrentWidget(page.images)
    t2 = page.session.tree
    marked = [i for i in page.images.controller.queue if t2.images[i].premark_fail]
    if marked:
        page.images.controller.go(page.images.controller.queue.index(marked[0]))
    sh.save(w, "dyeval_premarks")
    shoot_blind_audit(sh, w, "dyeval")
    theme.apply_theme(sh.app, "light")
    page.session.open_tree("demo")
    page.tree_view.select("node", "n2")
    sh.save(w, "dyeval_tree_light")
    theme.apply_theme(sh.app, "dark")
    dlg = NewTreeDialog(w)
    dlg.topics.setPlainText("Animals playing in the snow")
    dlg.show()
    sh.save(dlg, "dyeval_new_tree")
    dlg.close()
    w.close()
    sh.settle(0.1)


SMALL = (1024, 700)  # a lab laptop's screen


def prepare_raters(folder: Path) -> Path:
    """A small spatial demo with the task's instructions and examples kept and the demo's
    multi-rater audit (`demo_raters`: three raters with overlap, gold items, a qualification rule
    the speeder fails, adjudications)."""
    from workstation.methods.spatial import demo_raters
    from workstation.methods.spatial.demo import add_demo
    from workstation.methods.spatial.method import LABELS
    from workstation.methods.spatial.suite import spatial_suite
    from workstation.store import Project

    if folder.exists():
        shutil.rmtree(folder)
    with Project.create(folder) as p:
        add_demo(p, n_seeds=4, prompts=spatial_suite(20), workers=0, size=128)
        if not demo_raters.add_rater_audit(p, LABELS):
            raise SystemExit("the demo's multi-rater audit could not be added to the screenshots' project")
        _keep_instructions(p)
    return folder


def _keep_instructions(p) -> None:
    from workstation.evaluation.protocol import ProtocolText, save_protocol

    save_protocol(p, "spatial.verdict", ProtocolText(
        "Read the prompt's spatial relation (left of, right of, above, below) and look at the image. "
        "PASS when both objects are there and the relation holds; FAIL when an object is missing or the "
        "relation does not hold; UNDECIDABLE when the image cannot be judged (an object cut off, two "
        "candidates, the image not shown).",
        ("“a cat left of a dog”: the cat's centre left of the dog's → PASS",
         "“a cup above a book”: the cup beside the book → FAIL",
         "“a car right of a tree”: only half a car at the border → UNDECIDABLE")))


def shoot_raters(sh: Shooter, folder: Path) -> None:
    """Audit → Raters… on the raters' project, and the report's protocol card in headless Chromium."""
    import html as html_mod

    from ui import menus
    from ui.main_window import MainWindow
    from workstation.commands.raters import report_section
    from workstation.evaluation.bundle import page_start
    from workstation.store import Project

    w = MainWindow(ask_annotator=lambda: "a1")
    w.resize(*SIZE)
    w.show()
    w.open_project(folder)
    sh.settle(0.5)
    # the judging page with the task's instructions open under the keys
    w.method_views["spatial"].show_judging(w)
    sh.settle(0.5)
    from ui.widgets.judge import JudgeBar

    bar = next((b for b in w.findChildren(JudgeBar) if b.isVisible()), None)
    if bar is not None:
        bar.instructions.toggle.setChecked(True)
        sh.save(w, "judging_instructions")
        bar.instructions.toggle.setChecked(False)
    menus.open_raters(w)
    win = w.raters_window
    win.resize(1320, 430)
    sh.save(win, "raters_monitor")
    win.close()
    w.close()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("  (no Chromium: the protocol card is not shot)")
        return
    out = folder.parent / "raters_report"
    with Project.open(folder, read_only=True) as p:
        sec = report_section(p, out)
    page = out / "card.html"
    page.write_text(page_start("Raters") + f"<h2>{html_mod.escape(sec.title)}</h2>" + sec.html + "</body></html>",
                    encoding="utf-8")
    png = sh.out / "report_protocol_card.png"
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", "--window-size=1200,1500", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    sh.saved.append(png)
    print(f"  {png}")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_") or "tab"


def shoot_small(sh: Shooter, folder: Path) -> list[str]:
    """Every tab (and every page of a tab's own tabs) at 1024 × 700, the jobs panel, and the F1
    sheet on each method's judging page (``small_*.png``). Returns the screens where the window
    did not keep to 1024 × 700 (a minimum size forced it larger)."""
    from PySide6.QtWidgets import QTabWidget

    from ui import theme
    from ui.shortcuts import ShortcutSheet

    prepare_dyeval(folder)
    theme.apply_theme(sh.app, "dark")
    w = new_window(folder, SMALL)
    for name in ("metalogic", "protobias", "dyeval"):
        w.open_method(name)
    if getattr(w, "dyeval_page", None) is not None:
        w.dyeval_page.session.open_tree("demo")
    dock = w.docks.get("Jobs")
    if dock is not None:
        dock.hide()
    bad: list[str] = []

    def shot(name: str, widget=None) -> None:
        w.resize(*SMALL)
        sh.settle(0.3)
        if (w.width(), w.height()) != SMALL:
            bad.append(f"{name}: {w.width()}×{w.height()}")
        sh.save(widget or w, name)

    n = 0
    for i in range(w.tabs.count()):
        if not w.tabs.isTabVisible(i) or not w.tabs.isTabEnabled(i):
            continue
        w.tabs.setCurrentIndex(i)
        page = w.tabs.widget(i)
        n += 1
        top = f"small_{n}_{_slug(w.tabs.tabText(i))}"
        shot(top)
        inner = [t for t in page.findChildren(QTabWidget) if t.window() is w and t.isVisible()]
        for t in inner[:1]:
            for j in range(1, t.count()):
                if t.isTabEnabled(j):
                    t.setCurrentIndex(j)
                    shot(f"{top}_{_slug(t.tabText(j))}")
            t.setCurrentIndex(0)
    for name, views in w.method_views.items():
        views.show_judging(w)
        sh.settle(0.2)
        sheet = ShortcutSheet(w)
        sheet.show()
        sh.save(sheet, f"small_keys_{name}")
        sheet.close()
    if dock is not None:
        w.tabs.setCurrentWidget(w.review)
        dock.show()
        shot("small_jobs_panel")
    w.close()
    for line in bad:
        print(f"  larger than {SMALL[0]}×{SMALL[1]}: {line}")
    return bad


#: the screens the README shows, one or two per method
README_SET = ("demo_browse_table", "demo_review_pair", "demo_review_blind_audit", "demo_calibration",
              "metalogic_heatmap", "protobias_metrics", "protobias_triplets", "dyeval_node_judging",
              "dyeval_split_diagram")
README_IMAGES = ROOT / "docs" / "images"
README_WIDTH = 1100


def small_copy(src: Path, dst: Path, width: int = README_WIDTH) -> None:
    """`src` scaled to `width` pixels wide and reduced to 256 colours: a small PNG for the README."""
    from PIL import Image

    with Image.open(src) as im:
        im = im.convert("RGB")
        if im.width > width:
            im = im.resize((width, round(im.height * width / im.width)), Image.Resampling.LANCZOS)
        im.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(dst, optimize=True)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "resources" / "screenshots")
    ap.add_argument("--work", type=Path, default=None, help="folder for the projects")
    ap.add_argument("--only", default="", metavar="SETS", help="comma-separated: demo, dyeval, fixture, small, raters, judges (default: all but raters; small: every tab "
                    "and the F1 sheet of each method at 1024 × 700; raters: the rater monitor and the report's "
                    "protocol card)")
    ap.add_argument("--readme", action="store_true", help=f"also write the README's screenshots to {README_IMAGES}")
    args = ap.parse_args(argv)
    only = {x.strip() for x in args.only.split(",") if x.strip()} or {"demo", "dyeval", "fixture", "small", "judges"}
    ensure_display(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="screenshots_"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["WORKSTATION_SETTINGS"] = str(work / "settings.ini")
    args.out.mkdir(parents=True, exist_ok=True)

    demo = build_demo(work / "demo") if only - {"fixture", "raters"} else work / "demo"
    raters = prepare_raters(work / "raters") if "raters" in only else None
    fixture = build_fixture(work / "fixture") if "fixture" in only else None

    from PySide6.QtWidgets import QApplication

    from ui.app import create_application

    app = create_application(["screenshots"])
    print(f"platform {QApplication.platformName()}, saving to {args.out}")
    sh = Shooter(app, args.out)
    if "demo" in only:
        shoot_project(sh, demo, "demo")
    if "dyeval" in only:
        shoot_dyeval(sh, demo)
    if "judges" in only:
        shoot_judges(sh, demo)
    if fixture is not None:
        shoot_project(sh, fixture, "fixture")
    if "small" in only:
        shoot_small(sh, demo)
    if raters is not None:
        shoot_raters(sh, raters)
    print(f"{len(sh.saved)} screenshots")
    if args.readme:
        README_IMAGES.mkdir(parents=True, exist_ok=True)
        for name in README_SET:
            src = args.out / f"{name}.png"
            if src.is_file():
                small_copy(src, README_IMAGES / f"{name}.png")
                print(f"  {(README_IMAGES / f'{name}.png').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
