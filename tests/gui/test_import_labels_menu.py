"""File → Import labels… asks the views of the method shown for a file in its own layouts (their
``import_labels``), else the one views that read such files: the window names no method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import toy_method
from ui import menus
from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui


def test_import_labels_goes_to_the_views_of_the_tab_shown(qtbot: Any, open_window: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with toy_method.registered():
        folder = tmp_path / "p"
        with Project.create(folder) as p:
            get_method(toy_method.NAME).build_demo(p, small=True)
            get_method("spatial").build_demo(p, small=True, workers=0)
        w = open_window(folder)
        qtbot.waitUntil(lambda: {toy_method.NAME, "spatial"} <= set(w.method_views), timeout=20000)
        lamp, spatial = w.method_views[toy_method.NAME], w.method_views["spatial"]
        seen: list[tuple[str, str]] = []
        monkeypatch.setattr(lamp, "import_labels", lambda window, path: seen.append(("lamp", path)) or "lamps in",
                            raising=False)
        monkeypatch.setattr(spatial, "import_labels",
                            lambda window, path: seen.append(("spatial", path)) or "verdicts in")
        lamp.show_judging(w)
        menus.import_labels(w, str(tmp_path / "a.csv"))
        assert seen == [("lamp", str(tmp_path / "a.csv"))]
        assert w.statusBar().currentMessage() == "lamps in"
        w.show_tab("Browse")
        menus.import_labels(w, str(tmp_path / "b.csv"))
        assert seen[-1] == ("spatial", str(tmp_path / "b.csv"))
        # another method's tab (none of its own layouts): the one views that read label files
        monkeypatch.delattr(lamp, "import_labels")
        lamp.show_judging(w)
        menus.import_labels(w, str(tmp_path / "c.csv"))
        assert seen[-1] == ("spatial", str(tmp_path / "c.csv"))
        w.close()
