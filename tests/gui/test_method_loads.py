"""The window's load of a project (`ui.loading.load_project`, no Qt) knows no method: it reads
the project's part of each method registered in `ui.methods.LOADS`, which its views then take."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ui.loading import load_project
from ui.methods import LOADS


class LampLoad:
    """A method's load of the tests: how many samples the project holds, read with the open."""

    def read(self, project: Any, with_verdicts: bool, progress: Any) -> dict[str, Any]:
        n = project.con.execute("SELECT count(*) FROM samples").fetchone()[0]
        return {"samples": int(n), "with_verdicts": with_verdicts}

    def opened_text(self, part: dict[str, Any]) -> tuple[str, bool]:
        return f"{part['samples']} lamps", False


def test_the_load_reads_each_registered_method_s_part(sbuc_project: Path) -> None:
    LOADS.register("lamp", LampLoad(), description="a method's load of the tests")
    try:
        loaded = load_project(sbuc_project, with_verdicts=False)
    finally:
        LOADS._entries.pop("lamp", None)  # the registry keeps no way out: a test's own clean-up
    try:
        assert set(loaded.parts) == {"spatial", "lamp"}
        assert loaded.parts["lamp"] == {"samples": 800, "with_verdicts": False}
        spatial = loaded.parts["spatial"]
        assert spatial.dataset.n == 800 and spatial.verdicts is None and spatial.checking
    finally:
        loaded.project.close()
