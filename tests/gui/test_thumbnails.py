"""The thumbnail grid: the filtered samples as tiles with verdict badges, loaded lazily."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from ui.methods.spatial.sample_table import ROW_ROLE, VERDICT_ROLE
from .conftest import blind_queue

pytestmark = pytest.mark.gui


def _grid(qtbot, w):
    qtbot.mouseClick(w.browser.view_buttons.button(1), Qt.LeftButton)
    grid = w.browser.grid
    assert w.browser.stack.currentWidget() is grid
    qtbot.waitExposed(grid)
    return grid


def _tile_color(grid, i: int, dx: int, dy: int) -> QColor:
    rect = grid.visualRect(grid.model().index(i, 0))
    img = grid.viewport().grab().toImage()
    return img.pixelColor(rect.left() + 4 + dx, rect.top() + 4 + dy)


def test_grid_shows_thumbnails_and_badges(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    grid = _grid(qtbot, w)
    model = grid.model()
    assert model.rowCount() == 6
    qtbot.waitUntil(lambda: len(grid.thumbs) >= 6, timeout=5000)
    grid.viewport().repaint()
    ids = w.spatial.dataset.samples.sample_id
    row0 = [i for i in range(6) if ids[model.index(i, 0).data(ROW_ROLE)] == "s_p0_seed0"][0]
    # the picture is in the tile: the cat's red square sits left of the middle (tile 148 px for 512)
    c = _tile_color(grid, row0, int(120 * 148 / 512), int(260 * 148 / 512))
    assert c.red() > 150 and c.green() < 120, c.name()
    # the verdict badge's colour is the checker's verdict colour (top right corner)
    v = int(model.index(row0, 0).data(VERDICT_ROLE))
    from ui import theme

    badge = _tile_color(grid, row0, 147 - 25 + 4, 4 + 11)  # inside the circle, left of its letter
    expected = theme.verdict_color(v)
    assert abs(badge.red() - expected.red()) < 40 and abs(badge.green() - expected.green()) < 40
    # the corrupt and the missing image are reported, not fatal
    corrupt = str(w.spatial.project.samples.image_file("images/s_p1_seed1.png"))
    missing = str(w.spatial.project.samples.image_file("images/s_p1_seed2.png"))
    assert "cannot read image" in grid.thumbs.peek(corrupt).error
    assert "not found" in grid.thumbs.peek(missing).error


def test_grid_loads_lazily_and_pages(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    grid = _grid(qtbot, w)
    qtbot.wait(50)
    # only the tiles on screen asked for an image; not all 800 samples
    assert 0 < len(grid.requested) < 200
    assert grid.model().rowCount() < 800
    grid.setFocus()
    for _ in range(20):  # the user keeps pressing Ctrl+End: each time the next page arrives
        qtbot.keyClick(grid, Qt.Key_End, Qt.ControlModifier)
        qtbot.wait(20)
        if grid.model().rowCount() == 800:
            break
    assert grid.model().rowCount() == 800


def test_grid_follows_filters_and_opens_review(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    grid = _grid(qtbot, w)
    f = w.browser.filters
    f.text.setFocus()
    qtbot.keyClicks(f.text, "dog to the right")
    qtbot.keyClick(f.text, Qt.Key_Return)
    assert grid.model().rowCount() == 3
    qtbot.waitUntil(lambda: grid.visualRect(grid.model().index(1, 0)).isValid(), timeout=2000)
    rect = grid.visualRect(grid.model().index(1, 0))
    qtbot.mouseClick(grid.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(grid.viewport(), Qt.LeftButton, pos=rect.center())
    assert w.tabs.currentWidget() is w.review
    assert w.spatial.dataset.samples.sample_id[w.spatial.current] == "s_p1_seed1"
    assert len(w.spatial.queue) == 3


def test_blind_mode_hides_badges(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    grid = _grid(qtbot, w)
    blind_queue(w.spatial, list(range(6)))
    assert all(grid.model().index(i, 0).data(VERDICT_ROLE) == -1 for i in range(6))
