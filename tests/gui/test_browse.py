"""Browse: the sample table pages its query, filters, sorts, saves filters and follows the live
verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QLineEdit

from workstation.methods.spatial.types import REASONS, VERDICTS

from .conftest import add_label, on_next_modal
from workstation.methods.spatial.data import spatial_columns

pytestmark = pytest.mark.gui


def _count(w) -> str:
    return w.browser.count_label.text()


def _pick(qtbot, combo, text: str) -> None:
    """Choose the entry starting with `text` in a combo box with the keyboard (Home, then Down)."""
    texts = [combo.itemText(i) for i in range(combo.count())]
    target = texts.index(text) if text in texts else next(i for i, t in enumerate(texts) if t.startswith(text))
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key_Home)
    for _ in range(target):
        qtbot.keyClick(combo, Qt.Key_Down)
    assert combo.currentText().startswith(text), combo.currentText()


def _column(model, c: int) -> list[str]:
    return [model.data(model.index(i, c)) for i in range(model.rowCount())]


def test_table_pages_its_rows(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    m = w.browser.model
    assert _count(w) == "800 of 800 samples"
    assert m.rowCount() == m.PAGE < 800  # not every row is loaded
    assert m.canFetchMore()
    # scrolling to the end loads the next pages
    t = w.browser.table
    t.setFocus()
    for _ in range(4):
        qtbot.keyClick(t, Qt.Key_End, Qt.ControlModifier)
        QApplication.processEvents()
    assert m.rowCount() == 800
    assert not m.canFetchMore()
    ds = w.spatial.dataset
    assert _column(m, 0) == ds.samples.sample_id.tolist()  # project order


def test_the_table_queries_the_loaders_text_columns_without_converting_them(qtbot, open_window,
                                                                          sbuc_project: Path) -> None:
    from ui.methods.spatial.sample_table import sample_columns

    w = open_window(sbuc_project)
    ds = w.spatial.dataset
    cols = sample_columns(ds)
    assert cols["sample_id"] is ds.kept_arrow("sample_id") and cols["image_path"] is ds.kept_arrow("image_path")
    assert cols["sample_id"].to_pylist() == ds.samples.sample_id.tolist()
    sid = str(ds.samples.sample_id[7])
    w.browser.filters.text.setText(sid)  # a text filter reads them through DuckDB
    qtbot.waitUntil(lambda: w.browser.model.total == 1, timeout=5000)
    assert w.browser.model.data(w.browser.model.index(0, 0), Qt.UserRole + 1) == 7


def test_columns_show_checker_and_prompt(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    m = w.browser.model
    v = w.spatial.verdicts
    ds = w.spatial.dataset
    assert [m.headerData(c, Qt.Horizontal) for c in range(m.columnCount())] == [
        "Sample", "Run", "Prompt", "Relation", "Seed", "Checker", "Reason", "Conf", "Human", "Agreement",
        "Notes"]
    for i in range(10):
        assert m.data(m.index(i, 5)) == VERDICTS[int(v.verdict[i])]
        assert m.data(m.index(i, 7)) == f"{v.conf[i]:.3f}"
        assert m.data(m.index(i, 6)) == REASONS[int(v.reason[i])]
        assert m.data(m.index(i, 4)) == str(int(ds.samples.seed[i]))
    assert m.data(m.index(0, 2)) == "A photo of a cake to the left of a bed."


def test_filters_by_combo_text_and_confidence(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    f = w.browser.filters
    m = w.browser.model
    v = w.spatial.verdicts
    ds = w.spatial.dataset
    n_fail = int(np.sum(v.verdict == 1))
    _pick(qtbot, f.verdict, "FAIL")
    assert _count(w) == f"{n_fail} of 800 samples"
    assert set(_column(m, 5)) == {"FAIL"}
    _pick(qtbot, f.verdict, "any")
    _pick(qtbot, f.relation, "above")
    assert set(_column(m, 3)) == {"above"}
    _pick(qtbot, f.reason, "missing")
    n = int(np.sum((spatial_columns(ds).relation == 2) & (v.reason == REASONS.index("missing"))))
    assert _count(w) == f"{n} of 800 samples"
    qtbot.mouseClick(f.reset_button, Qt.LeftButton)
    assert _count(w) == "800 of 800 samples"
    # free text on the prompt
    f.text.setFocus()
    qtbot.keyClicks(f.text, "giraffe")
    qtbot.keyClick(f.text, Qt.Key_Return)
    texts = dict(zip(ds.prompts.prompt_id.tolist(), ds.prompts.text.tolist()))
    n_giraffe = sum("giraffe" in texts[p] for p in ds.samples.prompt_id.tolist())
    assert _count(w) == f"{n_giraffe} of 800 samples"
    assert all("giraffe" in t for t in _column(m, 2))
    qtbot.mouseClick(f.reset_button, Qt.LeftButton)
    # confidence range
    f.conf_min.setFocus()
    f.conf_min.selectAll()
    qtbot.keyClicks(f.conf_min, "0.9")
    qtbot.keyClick(f.conf_min, Qt.Key_Return)
    qtbot.waitUntil(lambda: _count(w) == f"{int(np.sum(v.conf >= 0.9))} of 800 samples", timeout=2000)
    assert all(float(x) >= 0.9 for x in _column(m, 7))


def test_sort_by_clicking_a_header(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    t = w.browser.table
    m = w.browser.model
    header = t.horizontalHeader()
    x = header.sectionViewportPosition(7) + header.sectionSize(7) // 2
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(x, header.height() // 2))
    first = [float(c) for c in _column(m, 7)]
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(x, header.height() // 2))
    second = [float(c) for c in _column(m, 7)]
    assert {tuple(first), tuple(second)} == {tuple(sorted(first)), tuple(sorted(second, reverse=True))}
    assert max(first + second) == pytest.approx(float(np.max(w.spatial.verdicts.conf)), abs=1e-3)


def test_labelled_and_checker_vs_human_filters(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    st = w.spatial
    st.set_annotator("alice")
    v = st.verdicts
    # label three samples: two agree with the checker, one does not
    add_label(st, 0, VERDICTS[int(v.verdict[0])])
    add_label(st, 1, VERDICTS[int(v.verdict[1])])
    other = VERDICTS[(int(v.verdict[2]) + 1) % 3]
    add_label(st, 2, other)
    f = w.browser.filters
    _pick(qtbot, f.labelled, "labelled")
    assert _count(w) == "3 of 800 samples"
    assert _column(w.browser.model, 9) == ["agrees", "agrees", "differs"]
    qtbot.mouseClick(f.differs, Qt.LeftButton, pos=QPoint(6, f.differs.height() // 2))
    assert _count(w) == "1 of 800 samples"
    assert _column(w.browser.model, 8) == [f"alice: {other}"]
    _pick(qtbot, f.labelled, "unlabelled")
    assert _count(w) == "0 of 800 samples"


def test_saved_filters(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    f = w.browser.filters
    _pick(qtbot, f.relation, "below")
    _pick(qtbot, f.verdict, "PASS")
    expected = _count(w)

    def name_it(dlg) -> None:
        edit = dlg.findChild(QLineEdit)
        qtbot.keyClicks(edit, "below passes")
        qtbot.keyClick(edit, Qt.Key_Return)

    seen = on_next_modal(qtbot, name_it)
    qtbot.mouseClick(f.save_button, Qt.LeftButton)
    assert seen
    assert w.spatial.project.audit.saved_filters()["below passes"]["relations"] == ["below"]
    qtbot.mouseClick(f.reset_button, Qt.LeftButton)
    assert _count(w) == "800 of 800 samples"
    _pick(qtbot, f.saved, "below")  # arrow keys on a closed combo box activate the entry
    assert f.relation.currentText() == "below" and f.verdict.currentText() == "PASS"
    assert _count(w) == expected


def test_live_verdicts_follow_the_config(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    f = w.browser.filters
    _pick(qtbot, f.reason, "near")
    before = _count(w)
    st = w.spatial
    st.set_config(st.config.replace(margin=0.3))
    n_near = int(np.sum(st.verdicts.reason == REASONS.index("near_boundary")))
    assert _count(w) == f"{n_near} of 800 samples" != before
    assert set(_column(w.browser.model, 6)) == {"near_boundary"}


def test_double_click_reviews_the_filtered_rows(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    f = w.browser.filters
    _pick(qtbot, f.relation, "left")
    t = w.browser.table
    rect = t.visualRect(w.browser.model.index(2, 0))
    qtbot.mouseClick(t.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(t.viewport(), Qt.LeftButton, pos=rect.center())
    assert w.tabs.currentWidget() is w.review
    st = w.spatial
    assert len(st.queue) == 200
    assert st.queue_pos == 2
    assert all(spatial_columns(st.dataset).relation[r] == 0 for r in st.queue)


def test_live_verdicts_update_loaded_rows_in_place(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    m = w.browser.model
    t = w.browser.table
    for sort in (-1, 2):  # project order (numpy) and prompt text (SQL, registered before the move)
        if sort >= 0:
            t.sortByColumn(sort, Qt.AscendingOrder)
        t.setFocus()
        qtbot.keyClick(t, Qt.Key_PageDown)
        first_rows = [m.data(m.index(i, 0), Qt.UserRole + 1) for i in range(m.rowCount())]
        st = w.spatial
        st.set_config(st.config.replace(margin=0.35 if sort < 0 else 0.05))
        v = st.verdicts
        assert [m.data(m.index(i, 0), Qt.UserRole + 1) for i in range(m.rowCount())] == first_rows  # same rows
        assert _column(m, 5) == [VERDICTS[int(v.verdict[r])] for r in first_rows]
        assert _column(m, 7) == [f"{v.conf[r]:.3f}" for r in first_rows]
        assert m.q._pending is not None  # the step queried nothing, so it registered nothing yet
        # and the next pages, fetched by numpy or by SQL, agree with the arrays too
        for _ in range(4):
            qtbot.keyClick(t, Qt.Key_End, Qt.ControlModifier)
        rows = [m.data(m.index(i, 0), Qt.UserRole + 1) for i in range(m.rowCount())]
        assert sorted(rows) == list(range(800)) and (rows == list(range(800))) == (sort < 0)
        assert _column(m, 5) == [VERDICTS[int(v.verdict[r])] for r in rows]
        assert _column(m, 7) == [f"{v.conf[r]:.3f}" for r in rows]
    assert m.q._pending is None  # the SQL pages registered the new verdicts


@pytest.mark.parametrize(("typed", "expected"), [
    ("50%", ["s_50pct"]),  # not "500 cats"
    ("s_2", ["s_2"]),  # not "sx2"
    ("a\\b", ["back\\slash"]),
    ("%", ["s_50pct"]),
    ("_", ["s_2", "s_50pct"]),
    ("cat", ["s_50pct", "sx2"]),
])
def test_text_filter_matches_percent_underscore_and_backslash_literally(typed: str, expected: list[str]) -> None:
    """The Browse filter's LIKE needs an ESCAPE clause, or '50%' and 's_2' find nothing."""
    import duckdb

    from ui.methods.spatial.sample_table import FilterSpec

    con = duckdb.connect()
    con.execute("CREATE TABLE v (sample_id VARCHAR, text VARCHAR)")
    con.executemany("INSERT INTO v VALUES (?, ?)", [
        ["s_50pct", "a cat 50% to the left of a dog"], ["sx2", "500 cats above a dog"], ["s_2", "a bus"],
        ["back\\slash", "path a\\b"]])
    where, params = FilterSpec(text=typed).where()
    got = sorted(r[0] for r in con.execute(f"SELECT sample_id FROM v {where}", params).fetchall())
    assert got == sorted(expected)


def test_first_screen_says_what_to_do_next(qtbot, open_window, sbuc_project: Path) -> None:
    """The first screen tells a new user how to go on, and so does Browse once a project is open."""
    w = open_window()
    start = w.start_page.hint
    assert start.isVisible() and w.tabs.currentWidget() is w.start_page
    assert "open a project (Ctrl+O)" in start.text() and "python main.py demo" in start.text()
    assert w.open_project(sbuc_project)
    assert w.tabs.currentWidget() is w.browser and not w.start_page.isVisible()
    hint = w.browser.hint
    text = hint.text()
    assert "double-click a sample (or Enter) to review it" in text
    assert "“Review these ▶”" in text and w.browser.review_button.text() == "Review these ▶"
    assert "Ctrl+2 shows Review" in text and "F1" in text
    # the keys it names do what it says
    from PySide6.QtWidgets import QApplication

    qtbot.keyClick(QApplication.focusWidget() or w, Qt.Key_2, Qt.ControlModifier)
    assert w.tabs.currentWidget() is w.review
    # filters that match nothing: the hint says so
    w.tabs.setCurrentWidget(w.browser)
    w.browser.filters.text.setText("no prompt says this")
    qtbot.waitUntil(lambda: w.browser.model.total == 0)
    assert hint.text() == "No sample matches the filters: clear some of them above."


def test_numpy_filter_and_sort_give_the_rows_sql_gives(qtbot, open_window, sbuc_project: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The table filters and sorts in numpy (no query per slider move); for every sortable
    column, both directions and filters of every kind, its rows, their order and their cell
    values are those of the SQL query it replaces."""
    from ui.methods.spatial import sample_table
    from ui.methods.spatial.sample_table import FilterSpec

    w = open_window(sbuc_project)
    st = w.spatial
    st.set_annotator("alice")
    v = st.verdicts
    for r in (0, 1, 5):
        add_label(st, r, VERDICTS[int(v.verdict[r])])
    add_label(st, 2, VERDICTS[(int(v.verdict[2]) + 1) % 3])
    st.set_annotator("bob")
    add_label(st, 5, VERDICTS[(int(v.verdict[5]) + 1) % 3])  # alice and bob differ on row 5
    m = w.browser.model
    rel = spatial_columns(st.dataset).relation
    specs = [FilterSpec(), FilterSpec(verdicts=["UNDECIDABLE"]), FilterSpec(reasons=["decided"]),
             FilterSpec(conf_min=0.3, conf_max=0.8), FilterSpec(labelled="labelled"),
             FilterSpec(labelled="unlabelled", verdicts=["PASS"]), FilterSpec(checker_vs_human=True),
             FilterSpec(annotators_disagree=True), FilterSpec(relations=["above"], reasons=["near_boundary"]),
             FilterSpec(text="dog", conf_min=0.1)]
    assert len(set(rel.tolist())) > 1
    checked = 0
    for spec in specs:
        for col in (-1, 3, 4, 5, 6, 7, 8, 9):
            for order in (Qt.AscendingOrder, Qt.DescendingOrder):
                m.spec, m.sort_column, m.sort_order = spec, col, order
                m.reload()
                fast_rows, fast_count, fast_all = list(m.rows), m.total, m.all_rows()
                assert m._numpy_order() is not None
                with monkeypatch.context() as mp:
                    mp.setattr(sample_table, "SORTABLE", frozenset())
                    mp.setattr(type(m), "_numpy_order", lambda self: None)
                    m.reload()
                    assert m.total == fast_count, (spec, col)
                    assert m.all_rows() == fast_all, (spec, col, order)
                    assert [tuple(r) for r in m.rows] == fast_rows, (spec, col, order)
                checked += fast_count
    assert checked > 1000  # the filters kept rows to compare
    # the agreement column and the label filters saw the labels
    m.spec, m.sort_column = FilterSpec(annotators_disagree=True), -1
    m.reload()
    assert [r[0] for r in m.rows] == [5] and m.rows[0][11] == "annotators differ"
