"""The pair viewer: twin beside the sample, seed strip, overlays and their keys, linked zoom,
verdict card, missing / corrupt images, themes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QWheelEvent
from PySide6.QtWidgets import QApplication

from workstation.methods.spatial.types import VERDICTS
from .conftest import blind_queue

pytestmark = pytest.mark.gui


def _show(qtbot, w, sample_id: str) -> int:
    row = w.spatial.dataset.sample_index()[sample_id]
    w.method_views["spatial"].review_from_browse(w, row)
    assert w.tabs.currentWidget() is w.review
    assert w.spatial.current == row
    return row


def _key(qtbot, w, key, modifier=Qt.NoModifier) -> None:
    qtbot.keyClick(QApplication.focusWidget() or w, key, modifier)


def _pixel(view, scene_x: float, scene_y: float) -> QColor:
    img = view.viewport().grab().toImage()
    p = view.mapFromScene(QPointF(scene_x, scene_y))
    return img.pixelColor(p.x(), p.y())


def test_twin_and_seed_strip(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed1")
    v = w.viewer
    ids = w.spatial.dataset.samples.sample_id
    assert ids[v.left_row] == "s_p0_seed1"
    assert ids[v.right_row] == "s_p1_seed1"  # the counterfactual prompt, same seed, same run
    assert v.left.prompt.text() == "a cat to the left of a dog"
    assert v.right.prompt.text() == "a dog to the right of a cat"
    assert [ids[r] for r in v.strip.rows()] == ["s_p0_seed0", "s_p0_seed1", "s_p0_seed2"]
    # clicking a seed in the strip reviews it
    item = v.strip.item(2)
    rect = v.strip.visualItemRect(item)
    qtbot.mouseClick(v.strip.viewport(), Qt.LeftButton, pos=rect.center())
    assert ids[w.spatial.current] == "s_p0_seed2"
    assert ids[v.right_row] == "s_p1_seed2"
    # T swaps to the twin
    _key(qtbot, w, Qt.Key_T)
    assert ids[w.spatial.current] == "s_p1_seed2"
    assert ids[v.right_row] == "s_p0_seed2"


def test_real_image_with_overlays_and_layer_keys(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    view = w.viewer.left.view
    assert view.image_ok and view.message == ""
    # the picture is drawn: the cat's red rectangle at its box centre (120, 260)
    c = _pixel(view, 100, 300)
    assert c.red() > 150 and c.blue() < 120, c.name()
    kinds = view.overlay.visible_kinds()
    assert {"A", "B", "other", "secondary_A", "secondary_B", "margin_band", "centre"} <= kinds
    assert "perturbed" not in kinds
    # A in red, B in blue, labelled with label and score
    a = view.overlay.items_by_kind["A"][0]
    b = view.overlay.items_by_kind["B"][0]
    assert a.pen().color().name() == "#ff3b30" and b.pen().color().name() == "#1e88ff"
    assert [t.text for t in view.overlay.tags] == ["A: cat 0.90", "B: dog 0.85"]
    # the margin band: |d| <= m around B's centre on the x axis (left_of)
    band = view.overlay.items_by_kind["margin_band"][0].rect()
    cx_b = (330 + 450) / 2
    m = w.spatial.config.margin
    assert band.left() == pytest.approx(cx_b - m * 512) and band.right() == pytest.approx(cx_b + m * 512)
    assert band.height() == pytest.approx(512)
    # key 1 hides the other detections, its checkbox follows; a click brings them back
    _key(qtbot, w, Qt.Key_1)
    assert "other" not in view.overlay.visible_kinds()
    assert not w.viewer.layer_boxes["others"].isChecked()
    assert "other" not in w.viewer.right.view.overlay.visible_kinds()
    qtbot.mouseClick(w.viewer.layer_boxes["others"], Qt.LeftButton,
                     pos=QPoint(8, w.viewer.layer_boxes["others"].height() // 2))
    assert "other" in view.overlay.visible_kinds()
    _key(qtbot, w, Qt.Key_2)
    assert not ({"secondary_A", "secondary_B"} & view.overlay.visible_kinds())
    _key(qtbot, w, Qt.Key_4)
    assert "margin_band" not in view.overlay.visible_kinds()
    _key(qtbot, w, Qt.Key_5)
    assert not any(t.isVisible() for t in view.overlay.tags)
    # ] thickens the lines (cosmetic pens: the width is in screen pixels)
    w0 = view.overlay.items_by_kind["A"][0].pen().widthF()
    _key(qtbot, w, Qt.Key_BracketRight)
    assert view.overlay.items_by_kind["A"][0].pen().widthF() > w0
    assert w.viewer.width_spin.value() == 3
    assert view.overlay.items_by_kind["A"][0].pen().isCosmetic()


def test_labels_sit_outside_small_boxes(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    view = w.viewer.left.view
    for tag in view.overlay.tags:
        box = view.overlay.items_by_kind["A" if tag.text.startswith("A") else "B"][0]
        tag_rect = view.mapFromScene(tag.scenePos()).y() + tag.boundingRect().bottom()
        box_top = view.mapFromScene(box.rect().topLeft()).y()
        assert tag_rect <= box_top + 1  # drawn above the box, not over it


def test_linked_zoom_and_pan(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    left, right = w.viewer.left.view, w.viewer.right.view
    fit_scale = left.zoom_level
    vp = left.viewport()
    pos = QPointF(vp.width() / 2, vp.height() / 2)
    ev = QWheelEvent(pos, vp.mapToGlobal(pos), QPoint(0, 0), QPoint(0, 240), Qt.NoButton, Qt.NoModifier,
                     Qt.NoScrollPhase, False)
    QApplication.sendEvent(vp, ev)
    assert left.zoom_level == pytest.approx(fit_scale * 1.25 ** 2)
    assert right.zoom_level == pytest.approx(left.zoom_level)
    assert w.viewer.zoom_label.text().endswith("%")
    # drag to pan the left view: the right one follows (same centre, as a fraction of the image)
    qtbot.mousePress(vp, Qt.LeftButton, pos=QPoint(200, 200))
    qtbot.mouseMove(vp, QPoint(120, 150))
    qtbot.mouseRelease(vp, Qt.LeftButton, pos=QPoint(120, 150))
    lf, rf = left.center_fraction(), right.center_fraction()
    assert lf == pytest.approx(rf, abs=0.02)
    # 0 fits both again
    _key(qtbot, w, Qt.Key_0)
    assert left.fit_mode and right.fit_mode
    assert left.zoom_level == pytest.approx(fit_scale, rel=0.02)


def test_verdict_card_and_confidence_components(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    row = _show(qtbot, w, "s_p0_seed0")
    v = w.spatial.verdicts
    card = w.viewer.left.card
    assert card.chip.text() == VERDICTS[int(v.verdict[row])]
    assert card.bar.conf == pytest.approx(float(v.conf[row]))
    assert set(card.bar.values) == {"detection", "geometry", "stability", "agreement"}
    assert card.bar.values["detection"] == pytest.approx(float(v.c_detection[row]))
    # d in the relation's words: cat centre 120, dog centre 390, W 512
    assert "cat is 0.53 W left of dog (prompt: left of; margin 0.1 W)" in card.reason.text()
    assert "d = (centre x of A − centre x of B) / W = -0.527" in card.reason.toolTip()
    # the twin ("a dog to the right of a cat") says the same scene in its own terms
    assert "dog is 0.53 W right of cat (prompt: right of" in w.viewer.right.card.reason.text()
    # the card follows the live config
    w.spatial.set_config(w.spatial.config.replace(margin=0.6))
    assert card.chip.text() == VERDICTS[int(w.spatial.verdicts.verdict[row])] == "UNDECIDABLE"
    assert "near_boundary" in card.reason.text()
    band = w.viewer.left.view.overlay.items_by_kind["margin_band"][0].rect()
    assert band.width() == pytest.approx(2 * 0.6 * 512)
    # hidden behind another tab it waits, and shows the live verdict when it comes back
    w.show_tab("Browse")
    assert not w.viewer.isVisible()
    w.spatial.set_config(w.spatial.config.replace(margin=0.01))
    assert "near_boundary" in card.reason.text()  # not redrawn while hidden
    w.show_tab("Review")
    assert card.chip.text() == VERDICTS[int(w.spatial.verdicts.verdict[row])] != "UNDECIDABLE"
    assert "near_boundary" not in card.reason.text()


def test_missing_and_corrupt_images_show_a_neutral_canvas(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed2")  # its twin s_p1_seed2 has no file
    right = w.viewer.right.view
    assert not right.image_ok
    assert "image not found" in right.message and "512×512" in right.message
    assert right.sceneRect().width() == 512 and right.sceneRect().height() == 512
    assert {"A", "B"} <= right.overlay.visible_kinds()  # boxes still drawn
    _show(qtbot, w, "s_p0_seed1")  # its twin s_p1_seed1 is a corrupt PNG
    right = w.viewer.right.view
    assert not right.image_ok
    assert "cannot read image" in right.message
    assert {"A", "B"} <= right.overlay.visible_kinds()
    # and the viewer goes on working
    _key(qtbot, w, Qt.Key_T)
    assert w.spatial.dataset.samples.sample_id[w.spatial.current] == "s_p1_seed1"
    assert not w.viewer.left.view.image_ok


def test_fixture_without_images_uses_the_canvas(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    _show(qtbot, w, "sd15_boxdiff_v1_000000_seed0000")
    left = w.viewer.left.view
    assert not left.image_ok and "image not found" in left.message
    assert w.spatial.dataset.samples.sample_id[w.viewer.right_row] == "sd15_boxdiff_v1_000001_seed0000"
    assert len(w.viewer.strip.rows()) == 4


def test_dark_and_light_themes(qtbot, open_window, png_project: Path) -> None:
    from ui import theme

    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    dark_bg = w.palette().color(w.backgroundRole()).lightness()
    _key(qtbot, w, Qt.Key_T, Qt.ControlModifier | Qt.ShiftModifier)
    assert theme.current().name == "light"
    assert QApplication.instance().palette().color(w.backgroundRole()).lightness() > dark_bg
    _key(qtbot, w, Qt.Key_T, Qt.ControlModifier | Qt.ShiftModifier)
    assert theme.current().name == "dark"


def test_prefetch_decodes_the_next_items(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    w.images.wait(5000)
    queue = w.spatial.queue
    nxt = queue[w.spatial.queue_pos + 1]
    from ui.methods.spatial.pair_viewer import image_key

    assert w.images.peek(image_key(w.spatial, nxt)) is not None
    hits = w.images.hits
    _key(qtbot, w, Qt.Key_Right)
    assert w.spatial.current == nxt
    assert w.images.hits > hits  # shown from the cache, not decoded on the spot
    assert np.all(np.asarray(queue) >= 0)


def test_an_object_keeps_its_colour_in_the_twin(qtbot, open_window, png_project: Path) -> None:
    """The cat is A on the left and B in the twin; its box stays one colour."""
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")  # "a cat to the left of a dog"; twin "a dog to the right of a cat"
    left, right = w.viewer.left.view.overlay, w.viewer.right.view.overlay
    assert [t.text for t in left.tags] == ["A: cat 0.90", "B: dog 0.85"]
    assert sorted(t.text for t in right.tags) == ["A: dog 0.85", "B: cat 0.90"]
    cat_left = left.items_by_kind["A"][0].pen().color().name()
    cat_right = right.items_by_kind["B"][0].pen().color().name()
    dog_left = left.items_by_kind["B"][0].pen().color().name()
    dog_right = right.items_by_kind["A"][0].pen().color().name()
    assert cat_left == cat_right == "#ff3b30"
    assert dog_left == dog_right == "#1e88ff"
    # the tags carry the object's colour too
    assert {t.text: t.color.name() for t in right.tags}["B: cat 0.90"] == "#ff3b30"
    # the legend names the objects and says the colour follows the object
    legend = w.viewer.legend.text()
    assert "colour = object" in legend and "■ cat" in legend and "■ dog" in legend
    assert legend.index("#ff3b30") < legend.index("■ cat") < legend.index("#1e88ff") < legend.index("■ dog")


def test_competing_boxes_of_an_ambiguous_sample_carry_label_and_score(qtbot, open_window,
                                                                      sbuc_project: Path) -> None:
    """The boxes that made a sample "ambiguous" are tagged with label and score."""
    from workstation.methods.spatial.types import AMBIGUOUS

    w = open_window(sbuc_project)
    v = w.spatial.verdicts
    rows = np.flatnonzero(np.asarray(v.reason) == AMBIGUOUS)
    assert len(rows) > 0
    row = int(rows[0])
    name = v.reason_text(row).removeprefix("ambiguous: multiple ")
    w.method_views["spatial"].review_from_browse(w, row)
    ov = w.viewer.left.view.overlay
    ds = w.spatial.dataset
    d = ds.detections
    cut = max(v.config.t_det, v.config.primary_threshold)
    sel = {int(v.sel_a[row]), int(v.sel_b[row])}
    k = np.flatnonzero((d.sample_idx == row) & (d.source == 0) & (d.variant == 0) & (d.label == name)
                       & (d.score >= cut))
    others = sorted((float(d.score[i]) for i in k.tolist() if i not in sel), reverse=True)
    assert others, "an ambiguous sample has a second box of its object"
    tags = [t.text for t in ov.tags]
    for score in others:
        assert f"{name} {score:.2f} · competing" in tags, tags
    assert len(ov.items_by_kind["competing"]) >= len(others)
    # blind: no competing tags (they would give the reason away)
    blind_queue(w.spatial, [row])
    assert not any("competing" in t.text for t in w.viewer.left.view.overlay.tags)


def test_delta_in_the_relations_words() -> None:
    """A FAIL and a PASS both had "d = +0.1…": the words say which way A lies from B."""
    from ui.methods.spatial.pair_viewer import delta_text

    fail, tip = delta_text(0.112, "above", "giraffe", "bus", 0.1)
    assert fail == "giraffe is 0.11 H below bus (prompt: above; margin 0.1 H)"
    assert "d < 0: A is above B" in tip and "= +0.112" in tip
    ok, _ = delta_text(0.452, "right_of", "cup", "plate", 0.1)
    assert ok == "cup is 0.45 W right of plate (prompt: right of; margin 0.1 W)"
    assert delta_text(float("nan"), "left_of", "a", "b", 0.1) == ("", "")


def test_raw_image_beside_the_overlaid_one(qtbot, open_window, png_project: Path) -> None:
    """The right pane can show the same sample's plain image (no boxes, tags or band)."""
    w = open_window(png_project)
    row = _show(qtbot, w, "s_p0_seed0")
    v = w.viewer
    assert v.right.title.text() == "Counterfactual twin (same seed)"
    v.raw_box.click()
    assert v.raw_beside
    right = v.right.view
    assert v.right.title.text() == "Same sample, raw image (no overlays)"
    assert v.right.prompt.text() == v.left.prompt.text() == "a cat to the left of a dog"
    assert right.image_ok
    assert right.overlay.visible_kinds() == set() and right.overlay.tags == []
    assert not right.overlay.layers.get("geometry")
    # the same picture: the cat's red rectangle where the left pane has its box
    c = _pixel(right, 100, 300)
    assert c.red() > 150 and c.blue() < 120, c.name()
    # still linked: zooming the left zooms the raw image
    v.zoom(2.0)
    assert right.zoom_level == pytest.approx(v.left.view.zoom_level)
    # T still goes to the twin; unticking brings the twin back on the right
    _key(qtbot, w, Qt.Key_T)
    assert w.spatial.dataset.samples.sample_id[w.spatial.current] == "s_p1_seed0"
    assert v.right.prompt.text() == v.left.prompt.text() == "a dog to the right of a cat"
    v.raw_box.click()
    assert v.right.prompt.text() == "a cat to the left of a dog" and v.right.row == row
    assert "A" in v.right.view.overlay.visible_kinds()


def test_the_viewer_finds_each_samples_boxes_from_the_loaders_offsets(qtbot, open_window, sbuc_project: Path) -> None:
    """Boxes of a sample come from the loader's per-sample offsets; stepping through pairs and
    re-checking under a new config never builds the per-detection sample column."""
    from ui.methods.spatial.overlay import detection_rows

    w = open_window(sbuc_project)
    st = w.spatial
    dets = st.dataset.detections
    offsets = dets.sample_offsets()
    assert offsets is not None
    column = np.repeat(np.arange(st.dataset.n), np.diff(offsets))
    for row in range(0, st.dataset.n, 97):
        assert detection_rows(st.dataset, row).tolist() == np.flatnonzero(column == row).tolist()
    w.method_views["spatial"].review_from_browse(w, 0)
    for _ in range(3):
        w.spatial.controller.next()
    st.set_config(st.config.replace(margin=st.config.margin + 0.01))
    QApplication.processEvents()
    assert dets.__dict__["_sample_idx"] is None


def test_pair_index_finds_twins_and_seeds_by_run_prompt_and_seed() -> None:
    """Twins are the twin prompt's sample of the same run and seed; seeds are the same run and
    prompt's samples in seed order. Prompts without samples (listed before the others) and
    samples whose prompt is not loaded must not shift or merge the groups."""
    from ui.methods.spatial.pair_viewer import PairIndex
    from workstation.dataset import Dataset, Detections, Samples
    from workstation.methods.spatial.data import spatial_prompts

    prompts = spatial_prompts(
        ["p_unused", "p_left", "p_right", "p_lonely"], ["unused", "a cat left of a dog", "a dog right of a cat", "solo"],
        ["left_of", "left_of", "right_of", "above"], ["cat", "cat", "dog", "cup"], ["dog", "dog", "cat", "bowl"],
        counterfactual_id=["p_left", "p_right", "p_left", ""])
    rows = [  # sample id, run, prompt, seed
        ("r1-left-s2", "r1", "p_left", 2), ("r1-left-s1", "r1", "p_left", 1), ("r1-right-s1", "r1", "p_right", 1),
        ("r2-right-s2", "r2", "p_right", 2), ("r2-left-s2", "r2", "p_left", 2), ("r1-right-s2", "r1", "p_right", 2),
        ("r1-lonely", "r1", "p_lonely", 0), ("r1-gone-a", "r1", "p_gone", 0), ("r1-gone-b", "r1", "p_gone2", 0)]
    samples = Samples.build([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows])
    ds = Dataset(samples, Detections.empty(), prompts)
    idx = PairIndex(ds)
    at = {sid: i for i, sid in enumerate(samples.sample_id.tolist())}

    def twin(sid: str) -> str | None:
        t = idx.twin(at[sid])
        return None if t < 0 else str(samples.sample_id[t])

    assert twin("r1-left-s1") == "r1-right-s1" and twin("r1-left-s2") == "r1-right-s2"
    assert twin("r1-right-s2") == "r1-left-s2" and twin("r2-right-s2") == "r2-left-s2"
    assert twin("r2-left-s2") == "r2-right-s2"
    assert twin("r1-lonely") is None and twin("r1-gone-a") is None
    assert [str(samples.sample_id[r]) for r in idx.seed_rows(at["r1-left-s2"])] == ["r1-left-s1", "r1-left-s2"]
    assert [str(samples.sample_id[r]) for r in idx.seed_rows(at["r2-left-s2"])] == ["r2-left-s2"]
    # samples of two prompts that are not loaded stay apart
    assert [str(samples.sample_id[r]) for r in idx.seed_rows(at["r1-gone-a"])] == ["r1-gone-a"]
    assert idx.prompt_text(at["r1-right-s1"]) == "a dog right of a cat"
    assert idx.prompt_text(at["r1-gone-b"]) == "p_gone2"


def test_twin_and_seed_lookups_on_many_samples_copy_no_column() -> None:
    """Each step to the next pair looks up its twin and seeds several times: on a large project
    a lookup must search the sorted keys as they are, not a widened copy of them (numpy casts
    the whole column when the needle's type differs: ≈1 ms a lookup at 1M samples)."""
    import tracemalloc

    from ui.methods.spatial.pair_viewer import PairIndex
    from workstation.dataset import Dataset, Detections, Samples
    from workstation.methods.spatial.data import spatial_prompts

    n_prompts, seeds = 50_000, 4  # 100k twin pairs' prompts × 4 seeds = 200k samples
    pid = [f"p{i}" for i in range(n_prompts)]
    twin = [f"p{i ^ 1}" for i in range(n_prompts)]
    prompts = spatial_prompts(pid, [f"prompt {i}" for i in range(n_prompts)],
                              ["left_of" if i % 2 == 0 else "right_of" for i in range(n_prompts)],
                              ["cat"] * n_prompts, ["dog"] * n_prompts, counterfactual_id=twin)
    sp = np.repeat(np.arange(n_prompts), seeds)
    seed = np.tile(np.arange(seeds), n_prompts)
    samples = Samples.build([f"s{p}_{s}" for p, s in zip(sp, seed)], ["run"] * len(sp),
                            [pid[p] for p in sp], seed.tolist())
    idx = PairIndex(Dataset(samples, Detections.empty(), prompts))
    assert idx.sorted_key.dtype == np.int32
    rows = [0, 7, 123_457, len(sp) - 1]
    tracemalloc.start()
    try:
        found = [(idx.twin(r), idx.seed_rows(r)) for r in rows]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000, f"the lookups allocated {peak:,} bytes (a copy of the {len(sp):,}-row key column?)"
    for r, (t, seed_rows) in zip(rows, found):
        p, s = int(sp[r]), int(seed[r])
        assert (int(sp[t]), int(seed[t])) == (p ^ 1, s)
        assert seed_rows == [int(i) for i in np.flatnonzero(sp == p)]


def test_a_step_to_a_pair_whose_labels_were_read_ahead_asks_the_project_nothing(
        qtbot, open_window, png_project: Path) -> None:
    """The label events of the pairs ahead are read in one query while the auditor looks at a
    pair; the step to the next one then runs no query, and a label recorded meanwhile shows."""
    from ui.methods.spatial import pair_viewer

    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    p = w.spatial.project
    execute = p.con.execute
    reads: list[str] = []

    def counting(sql: str, params=None):
        if "label_events" in sql:
            reads.append(sql)
        return execute(sql, params)

    p.con.execute = counting
    try:
        qtbot.wait(pair_viewer.LABELS_AHEAD_MS + 200)
        assert len(reads) == 1  # the samples ahead and their twins, together
        reads.clear()
        _key(qtbot, w, Qt.Key_Right)
        ids = w.spatial.dataset.samples.sample_id
        assert ids[w.viewer.left_row] == "s_p0_seed1"
        assert reads == []
        assert w.viewer.left.labels.text() == "Labels: none yet"
        # a label written now is seen at once, here and after a step away and back
        w.spatial.controller.auto_advance = False
        _key(qtbot, w, Qt.Key_P)
        assert "<b>alice</b>: PASS" in w.viewer.left.labels.text()
        _key(qtbot, w, Qt.Key_Right)
        _key(qtbot, w, Qt.Key_Left)
        assert ids[w.viewer.left_row] == "s_p0_seed1"
        assert "<b>alice</b>: PASS" in w.viewer.left.labels.text()
        assert w.labeling.yours.text() == "your label: PASS"
    finally:
        p.con.execute = execute


def test_the_seed_strip_is_redrawn_in_place_within_a_prompt(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    _show(qtbot, w, "s_p0_seed0")
    v = w.viewer
    ids = w.spatial.dataset.samples.sample_id
    first = v.strip.item(0)
    assert [ids[r] for r in v.strip.rows()] == ["s_p0_seed0", "s_p0_seed1", "s_p0_seed2"]
    assert [s[2] for s in v.strip.shown] == [True, False, False]  # the current seed's border
    _key(qtbot, w, Qt.Key_Right)
    assert ids[w.spatial.current] == "s_p0_seed1"
    assert v.strip.item(0) is first  # the same items, their look updated
    assert [ids[r] for r in v.strip.rows()] == ["s_p0_seed0", "s_p0_seed1", "s_p0_seed2"]
    assert [s[2] for s in v.strip.shown] == [False, True, False]
    assert [v.strip.item(i).text() for i in range(3)] == ["seed 0", "seed 1", "seed 2"]
    _show(qtbot, w, "s_p1_seed1")  # another prompt: its seeds, its current one
    assert [ids[r] for r in v.strip.rows()] == ["s_p1_seed0", "s_p1_seed1", "s_p1_seed2"]
    assert [s[2] for s in v.strip.shown] == [False, True, False]
    assert [v.strip.item(i).toolTip().split(" — ")[0] for i in range(3)] == ["s_p1_seed0", "s_p1_seed1",
                                                                           "s_p1_seed2"]
    # clicking a seed still reviews the sample it now shows
    rect = v.strip.visualItemRect(v.strip.item(2))
    qtbot.mouseClick(v.strip.viewport(), Qt.LeftButton, pos=rect.center())
    assert ids[w.spatial.current] == "s_p1_seed2"


def test_the_verdict_card_keeps_its_height_from_one_reason_to_the_next(qtbot, open_window,
                                                                        png_project: Path) -> None:
    """A near-boundary reason says its |delta| and margin in the tooltip (the card's geometry text
    says them in the relation's words): the card, and the image under it, do not move when the
    next sample's reason is longer or shorter."""
    w = open_window(png_project)
    st = w.spatial
    st.set_config(st.config.replace(margin=0.5))  # seed 0 near the boundary (0.53 W apart ... )
    row = _show(qtbot, w, "s_p0_seed0")
    card = w.viewer.left.card
    QApplication.processEvents()
    heights = {(card.height(), w.viewer.left.view.height())}
    texts = set()
    for margin in (0.5, 0.56, 0.05):
        st.set_config(st.config.replace(margin=margin))
        QApplication.processEvents()
        texts.add(card.reason.text())
        heights.add((card.height(), w.viewer.left.view.height()))
        if int(st.verdicts.reason[row]) != 0:
            assert card.reason.text().startswith("near_boundary · ")
            assert card.reason.toolTip().startswith(st.verdicts.reason_text(row))
            assert "d = (centre x of A − centre x of B) / W" in card.reason.toolTip()
    assert len(texts) == 3 and any(t.startswith("decided") for t in texts)
    assert len(heights) == 1, heights
