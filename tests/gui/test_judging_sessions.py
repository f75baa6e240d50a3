"""Judging across the window: the leaks a blind spatial audit had (the first answer on a
re-check, a label given before the audit, Browse's verdict filter, the grid's badges), another
annotator taking over every method's queue, another project resetting every method, ProtoBias
showing the rating already given, DyEval's "Judge the images" going to the images that wait,
and status messages in the auditor's words."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ui import menus
from ui.methods import view_names
from ui.methods.spatial.sample_table import HUMAN_ROLE, VERDICT_ROLE, FilterSpec
from workstation.methods import get_method
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.runner import DyEvalRunner
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project

pytestmark = pytest.mark.gui


def _key(qtbot: Any, w: Any, key: Any, modifier: Any = Qt.NoModifier) -> None:
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, key, modifier)


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in view_names():
        folder = tmp_path_factory.mktemp(f"demo_{name}") / "p"
        with Project.create(folder) as p:
            get_method(name).build_demo(p, small=True, workers=0)
        out[name] = folder
    return out


def _copy(demos: dict[str, Path], name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(demos[name], dst)
    return dst


# ---- the four leaks of a blind spatial audit ------------------------------------------------------

def test_a_blind_spatial_audit_shows_no_earlier_answer_and_filters_nothing_it_hides(
        qtbot: Any, open_window: Any, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project, annotator="alice")
    s = w.spatial
    s.set_annotator("alice")  # the annotator of this project, labelling before and in the audit
    store = SpatialStore(s.project)
    ids = [str(x) for x in s.dataset.samples.sample_id[:30].tolist()]
    x = ids[0]
    store.add_label(x, "alice", "UNDECIDABLE", notes="alice before the audit")  # before the set was drawn
    store.add_label(x, "bob", "FAIL", notes="bob's view")
    s.reload_labels()
    aid = s.project.audit.create_set("a", "spatial.verdict", ids, {}, blind=True, rechecks=[(30, x)])
    menus.start_audit_set(w, aid)
    bar = w.labeling
    # leak 2: the label alice gave before the audit neither shows nor counts as done
    assert s.controller.current == x and s.queue_pos == 0
    assert bar.bar.text() == "0 / 31 labelled" and bar.yours.text() == "your label: —"
    assert "UNDECIDABLE" not in w.viewer.left.labels.text() and "alice" not in w.viewer.left.labels.text()
    assert "FAIL" not in w.viewer.left.labels.text() and "bob" not in w.viewer.left.labels.text()
    assert w.progress_label.text() == f"labelled 0 / 31 in audit set #{aid}"
    # the first answer in the audit
    _key(qtbot, w, Qt.Key_P)
    # an export made during the blind audit holds only alice's labels of this audit
    from workstation.methods.spatial.labels_io import read_labels

    out = w.state.project.folder / "exports" / "during_audit.csv"
    assert bar.export(str(out)) == 1
    t = read_labels(out)
    assert list(zip(t.sample_id, t.annotator, t.verdict)) == [(x, "alice", "PASS")]
    # leak 1: its re-check shows neither the first answer nor anybody's label
    s.controller.go(30)
    assert s.controller.is_recheck() and s.controller.current == x
    labels = w.viewer.left.labels.text()
    assert "PASS" not in labels and "alice" not in labels and "bob" not in labels and "hidden" in labels
    assert "annotator" not in labels  # not even how many other annotators labelled it
    assert bar.yours.text() == "your label: —" and bar.position.text() == "item 31 of 31  (re-check)"
    # leak 3: Browse's verdict filter is disabled, and a saved filter on verdicts selects nothing
    w.show_page(w.browser)
    f = w.browser.filters
    assert not f.verdict.isEnabled() and not f.reason.isEnabled() and not f.conf_min.isEnabled()
    assert not f.labelled.isEnabled() and not f.differs.isEnabled() and not f.disagree.isEnabled()
    m = w.browser.model
    m.set_filter(FilterSpec(verdicts=["PASS"], labelled="labelled", conf_min=0.5))
    assert m.total == s.dataset.n  # the hidden conditions are dropped, not applied
    m.sort(5, Qt.DescendingOrder)
    assert m.sort_column == -1  # nor sorted by the hidden verdicts
    # leak 4: the grid's badges (the checker's and the annotators') are gone with the columns
    w.browser.view_buttons.button(1).click()
    assert all(m.data(m.index(i, 0), VERDICT_ROLE) == -1 and m.data(m.index(i, 0), HUMAN_ROLE) == -1
               for i in range(m.rowCount()))
    assert all(w.browser.table.isColumnHidden(c) for c in (5, 6, 7, 8, 9, 10))
    # and the status bar counts nothing of the checker
    assert w.counts_label.text() == ""
    # leaving the audit brings everything back (and a full export again)
    menus.leave_audit(w)
    after = out.with_name("after_audit.csv")
    assert bar.export(str(after)) == 2 and sorted(read_labels(after).annotator) == ["alice", "bob"]
    assert f.verdict.isEnabled() and not w.browser.table.isColumnHidden(5)
    assert m.data(m.index(0, 0), HUMAN_ROLE) >= 0
    assert w.counts_label.text().startswith("PASS ")


# ---- another annotator, another project ------------------------------------------------------------

@pytest.mark.parametrize("name", view_names())
def test_another_annotator_gets_their_own_queue_and_labels(qtbot: Any, open_window: Any, demos: dict[str, Path],
                                                           tmp_path: Path, name: str, monkeypatch: Any) -> None:
    w = open_window(_copy(demos, name, tmp_path), annotator="alice")
    qtbot.waitUntil(lambda: name in w.method_views, timeout=20000)
    views = w.method_views[name]
    views.show_judging(w)
    c = views.controller(w)
    bar = views.bar(w)
    bar.auto.setChecked(False)
    target = c.current
    n0 = c.progress()[0]
    _key(qtbot, w, c.scheme.keys[0])
    assert c.progress()[0] == n0 + 1 and bar.yours.text() != "your label: —"
    # Audit → Annotator…: bob
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: "bob")
    menus.change_annotator(w)
    assert w.state.annotator == "bob" and w.annotator_label.text() == "annotator: bob"
    bob0 = c.progress()[0]
    assert c.current == target and bar.yours.text() == "your label: —"  # alice's label is not bob's
    _key(qtbot, w, c.scheme.keys[-1])
    assert c.progress()[0] == bob0 + 1
    ev = w.state.project.labels.events(task=c.scheme.task, target_id=target)[-1]
    assert (ev.annotator, ev.value) == ("bob", c.scheme.values[-1])
    # back to alice: her label again, her count
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: "alice")
    menus.change_annotator(w)
    assert c.progress()[0] == n0 + 1
    assert bar.yours.text() == f"your label: {c.scheme.values[0]}"
    if name == "protobias":  # the rating page's own counter follows too
        assert f"{n0 + 1} of {c.progress()[1]} images rated by alice" in w.protobias_page.rating.position.text()


def test_another_project_resets_every_method_and_shows_only_its_tabs(qtbot: Any, open_window: Any,
                                                                    demos: dict[str, Path], tmp_path: Path,
                                                                    sbuc_project: Path, png_project: Path) -> None:
    def shown(w: Any) -> set[str]:
        return {w.tabs.tabText(i) for i in range(w.tabs.count()) if w.tabs.isTabVisible(i)}

    w = open_window(sbuc_project, annotator="alice")
    s = w.spatial
    ids = [str(x) for x in s.dataset.samples.sample_id[:10].tolist()]
    aid = s.project.audit.create_set("a", "spatial.verdict", ids, {}, blind=True)
    menus.start_audit_set(w, aid)
    w.browser.filters.text.setText("dog")
    assert w.browser.table.isColumnHidden(5)
    # another spatial project: no audit, no hidden columns, no filter, its own samples
    assert w.open_project(png_project)
    assert s.controller.audit is None and s.dataset.n == 6
    assert not any(w.browser.table.isColumnHidden(c) for c in range(11))
    assert w.browser.filters.text.text() == "" and w.browser.model.total == 6
    assert shown(w) == {"Browse", "Review", "Calibration"}
    # a project of another method: only its tab
    ml = _copy(demos, "metalogic", tmp_path)
    assert w.open_project(ml)
    qtbot.waitUntil(lambda: "metalogic" in w.method_views, timeout=20000)
    assert shown(w) == {"MetaLogic"}
    assert w.tabs.currentWidget() is w.metalogic_tabs
    # the first project again: its audit set is where the auditor left it
    assert w.open_project(sbuc_project)
    assert shown(w) == {"Browse", "Review", "Calibration"}
    assert s.controller.audit is not None and s.controller.audit.audit_set_id == aid
    assert w.browser.table.isColumnHidden(5)


# ---- ProtoBias and DyEval ---------------------------------------------------------------------------

def test_protobias_shows_the_rating_already_given_when_the_auditor_comes_back(
        qtbot: Any, open_window: Any, demos: dict[str, Path], tmp_path: Path) -> None:
    w = open_window(_copy(demos, "protobias", tmp_path), annotator="alice")
    qtbot.waitUntil(lambda: "protobias" in w.method_views, timeout=20000)
    views = w.method_views["protobias"]
    views.show_judging(w)
    r = w.protobias_page.rating
    first = r.controller.current
    _key(qtbot, w, Qt.Key_3)  # rates and goes on
    assert r.controller.current != first
    _key(qtbot, w, Qt.Key_Left)
    assert r.controller.current == first
    assert r.bar.yours.text().startswith("your label: 3") and r.bar.buttons["3"].isChecked()


def test_dyeval_judge_the_images_goes_to_the_images_that_wait(qtbot: Any, open_window: Any, tmp_path: Path) -> None:
    folder = tmp_path / "judge"
    with Project.create(folder) as p:
        r = DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=2), tree_id="j", topics=["Animals"])
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=64)
    w = open_window(folder, annotator="ann")
    w.show_tab("DyEval")
    page = w.dyeval_page
    page.tree_view.select("node", "n1")
    c = page.images.controller
    ids = c.queue
    assert len(ids) == 4 and c.pos == 0
    # two images judged meanwhile (another annotator's import): the node is shown as it was
    runner = page.session.runner
    for iid in ids[:2]:
        runner.label(iid, "PASS", "carol")
    page.session.after_label()
    assert page.next_button.text() == "Judge the images (P / F)"
    page.next_button.click()
    assert c.current == ids[2], "the judging starts at the first image that waits"


def test_status_messages_say_prompt_and_seed_not_ids(qtbot: Any, open_window: Any, demos: dict[str, Path],
                                                   tmp_path: Path) -> None:
    w = open_window(_copy(demos, "metalogic", tmp_path), annotator="alice")
    qtbot.waitUntil(lambda: "metalogic" in w.method_views, timeout=20000)
    views = w.method_views["metalogic"]
    views.show_judging(w)
    c = views.controller(w)
    target = c.current
    messages: list[str] = []
    w.state.message.connect(messages.append)
    _key(qtbot, w, c.scheme.keys[0])
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier)
    said = messages[-1]
    d = w.metalogic_page.session.data
    i = c.index_of(target)
    assert said.startswith("undone: “") and str(d.text_a[i]) in said and f"seed {int(d.pairs.seed[i])}" in said
    assert target not in said and "|" not in said
