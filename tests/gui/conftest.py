"""GUI test set-up: offscreen Qt, isolated settings, projects built from the shared fixture.

- every test gets its own settings file (`WORKSTATION_SETTINGS`), so recent projects and the
  theme never leak between tests or into the user's settings;
- `sbuc_project`: a fresh copy of a project imported from ../shared/fixtures/spatialbench_uc
  (800 samples, no images: the neutral-canvas path, where only UNDECIDABLE can be recorded);
- `sbuc_images_project`: the same with a small image file for every sample (for tests that label
  PASS and FAIL);
- `png_project`: a small project with real 512×512 PNGs, one corrupt PNG and one missing file;
- `open_window(folder)`: a shown, active main window on a project (closed at teardown);
- `on_next_modal(qtbot, fn)`: run `fn(dialog)` on the next modal dialog (real key / mouse
  events are sent to it by `fn`).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from workstation.methods.spatial.store import SpatialStore
from workstation.methods.spatial.store import add_dataset as add_spatial_dataset

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytestmark = pytest.mark.gui


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "settings.ini"
    monkeypatch.setenv("WORKSTATION_SETTINGS", str(path))
    return path


@pytest.fixture(autouse=True)
def no_unasked_pause_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """The question "Pause the blind audit to show this?" is modal: a test that meets it without
    answering it (`ui.widgets.audit_pause.ask` patched) fails at once instead of waiting on it."""
    from ui.widgets import audit_pause

    def unexpected(_parent: Any, what: str, aid: int, _who: str) -> bool:
        raise AssertionError(f"unexpected question: pause blind audit set #{aid} to show {what}?")

    monkeypatch.setattr(audit_pause, "ask", unexpected)


def build_sbuc_project(folder: Path, parsed: Any) -> Path:
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.store import Project

    p = Project.create(folder)
    try:
        with p.transaction():
            p.samples.add_run(parsed.run_id, method=parsed.run_id, source="spatialbench_uc")
            add_spatial_dataset(p, parsed.dataset)
            SpatialStore(p).save_config(parsed.config or CheckerConfig())
    finally:
        p.close()
    return folder


@pytest.fixture(scope="session")
def sbuc_template(tmp_path_factory: pytest.TempPathFactory, sbuc_parsed: Any) -> Path:
    return build_sbuc_project(tmp_path_factory.mktemp("sbuc_template") / "project", sbuc_parsed)


@pytest.fixture
def sbuc_project(tmp_path: Path, sbuc_template: Path) -> Path:
    dst = tmp_path / "sbuc_project"
    shutil.copytree(sbuc_template, dst)
    return dst


@pytest.fixture(scope="session")
def sbuc_images_template(tmp_path_factory: pytest.TempPathFactory, sbuc_template: Path, sbuc_parsed: Any) -> Path:
    """The imported run with an image for every sample: a flat 16×16 PNG (the viewer stretches it
    onto the sample's 512×512; the published run ships no images)."""
    import io

    from PIL import Image

    dst = tmp_path_factory.mktemp("sbuc_images_template") / "project"
    shutil.copytree(sbuc_template, dst)
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (150, 160, 170)).save(buf, format="PNG")
    for rel in {str(x) for x in sbuc_parsed.dataset.samples.image_path.tolist()}:
        path = dst / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(buf.getvalue())
    return dst


@pytest.fixture
def sbuc_images_project(tmp_path: Path, sbuc_images_template: Path) -> Path:
    dst = tmp_path / "sbuc_project"
    shutil.copytree(sbuc_images_template, dst)
    return dst


def write_scene_png(path: Path, boxes: list[tuple[float, float, float, float, str]], size: int = 512) -> None:
    """A flat picture with coloured rectangles where the boxes are (a stand-in for a generation)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (size, size), (205, 215, 225))
    d = ImageDraw.Draw(img)
    for x1, y1, x2, y2, color in boxes:
        d.rectangle([x1, y1, x2, y2], fill=color)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def build_png_project(folder: Path) -> Path:
    """Two twin prompts × 3 seeds; images for all but one (missing), one of them corrupt."""
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.dataset import Dataset, Detections, Samples
    from workstation.methods.spatial.data import spatial_prompts
    from workstation.store import Project

    prompts = spatial_prompts(["p0", "p1"], ["a cat to the left of a dog", "a dog to the right of a cat"],
                              ["left_of", "right_of"], ["cat", "dog"], ["dog", "cat"],
                              counterfactual_id=["p1", "p0"], pair_id=["pair0", "pair0"], suite="test")
    sids, pids, seeds, paths = [], [], [], []
    det_rows: list[tuple[int, int, str, float, float, float, float, float]] = []
    for pi, pid in enumerate(("p0", "p1")):
        for seed in range(3):
            i = len(sids)
            sids.append(f"s_{pid}_seed{seed}")
            pids.append(pid)
            seeds.append(seed)
            paths.append(f"images/{sids[-1]}.png")
            cat = (60 + 20 * seed, 200, 180 + 20 * seed, 320)
            dog = (330 - 40 * seed, 190, 450 - 40 * seed, 330)
            det_rows.append((i, 0, "cat", 0.9, *cat))
            det_rows.append((i, 0, "dog", 0.85, *dog))
            det_rows.append((i, 0, "person", 0.3, 10, 10, 40, 60))
            det_rows.append((i, 1, "cat", 0.8, cat[0] + 4, cat[1] + 2, cat[2] - 2, cat[3]))
            det_rows.append((i, 1, "dog", 0.7, dog[0] - 3, dog[1], dog[2], dog[3] + 3))
    n = len(sids)
    samples = Samples(np.array(sids, dtype=object), np.array(["run1"] * n, dtype=object),
                      np.array(pids, dtype=object), np.array(seeds, np.int64),
                      np.full(n, 512.0), np.full(n, 512.0), np.array(paths, dtype=object),
                      np.ones(n, bool), np.zeros(n, bool))
    d = list(zip(*det_rows))
    dets = Detections(np.array(d[0], np.int64), np.array(d[1], np.int8), np.zeros(len(det_rows), np.int16),
                      np.array(d[2], dtype=object), np.array(d[3], np.float64), np.array(d[4], np.float64),
                      np.array(d[5], np.float64), np.array(d[6], np.float64), np.array(d[7], np.float64))
    ds = Dataset(samples, dets, prompts)
    p = Project.create(folder)
    try:
        with p.transaction():
            p.samples.add_run("run1", method="test")
            p.samples.add_dataset(ds)
            SpatialStore(p).save_config(CheckerConfig(stability_enabled=False))
    finally:
        p.close()
    for i in range(n):
        if sids[i] == "s_p1_seed2":
            continue  # missing file
        boxes = [(*r[4:8], "#c0504d" if r[2] == "cat" else "#4f81bd") for r in det_rows if r[0] == i and r[1] == 0
                 and r[2] != "person"]
        write_scene_png(folder / paths[i], boxes)
    (folder / paths[sids.index("s_p1_seed1")]).write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really a png" * 10)
    return folder


def build_labelled_project(folder: Path, parsed: Any, n_labels: int = 200, seed: int = 7) -> Any:
    """The fixture run imported, with `n_labels` seeded human labels (15 % disagree with the
    recorded verdicts); returns the open Project."""
    import numpy as np

    from workstation.store import Project
    from workstation.methods.spatial.types import VERDICTS

    p = Project.create(folder)
    p.samples.add_run(parsed.run_id, method="sd15_boxdiff")
    add_spatial_dataset(p, parsed.dataset)
    SpatialStore(p).save_config(parsed.config, note="imported")
    if n_labels:
        rng = np.random.default_rng(seed)
        rows = rng.choice(parsed.dataset.n, n_labels, replace=False)
        rec = parsed.recorded.verdict[rows].astype(int)
        flip = rng.random(n_labels) < 0.15
        human = np.where(flip, rng.integers(0, 3, n_labels), rec)
        SpatialStore(p).add_labels_bulk({"sample_id": parsed.dataset.samples.sample_id[rows].tolist(),
                           "annotator": ["alice"] * n_labels,
                           "verdict": [VERDICTS[h] for h in human]})
    return p


@pytest.fixture
def labelled_state(qtbot: Any, tmp_path: Path, sbuc_parsed: Any) -> Any:
    """A spatial session on the labelled fixture project."""
    from ui.methods.spatial.session import SpatialSession

    st = SpatialSession()
    st.set_project(build_labelled_project(tmp_path / "proj", sbuc_parsed))
    yield st
    st.close_project()


@pytest.fixture
def png_project(tmp_path: Path) -> Path:
    return build_png_project(tmp_path / "png_project")


@pytest.fixture
def open_window(qtbot: Any) -> Callable[..., Any]:
    from ui.main_window import MainWindow

    windows: list[Any] = []

    def make(folder: Path | None = None, annotator: str | None = "alice", **kw: Any) -> Any:
        w = MainWindow(ask_annotator=(lambda: annotator))
        qtbot.addWidget(w)
        w.resize(1400, 900)
        w.show()
        qtbot.waitExposed(w)
        w.activateWindow()
        qtbot.waitUntil(lambda: w.isActiveWindow(), timeout=3000)
        if folder is not None:
            assert w.open_project(folder, **kw)
        windows.append(w)
        return w

    yield make
    for w in windows:
        w.close()


def on_next_modal(qtbot: Any, fn: Callable[[Any], None], timeout_ms: int = 5000) -> list[Any]:
    """Call fn(dialog) on the next modal dialog once it shows; returns a list that gets the dialog."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    seen: list[Any] = []
    waited = [0]

    def poll() -> None:
        w = QApplication.activeModalWidget()
        if w is not None and w.isVisible():
            seen.append(w)
            fn(w)
            return
        waited[0] += 20
        if waited[0] < timeout_ms:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(20, poll)
    return seen


def add_label(session: Any, row: int, verdict: str | None, notes: str | None = None, source: str = "ui") -> int:
    """Test set-up: one P / F / U label event of the session's annotator for the sample at `row`,
    written to the store as a labelling session would, and taken in by the session's views."""
    sid = str(session.dataset.samples.sample_id[row])
    eid = SpatialStore(session.project).add_label(sid, session.annotator, verdict, notes=notes, source=source)
    session.controller.reload()
    session._label_written(row)
    return eid


def blind_queue(session: Any, rows: list[int], blind: bool = True) -> int:
    """Test set-up: the samples at `rows` become a stored audit set (blind or not) and the queue,
    as Audit → Open audit set makes it; returns its id."""
    ids = [str(session.dataset.samples.sample_id[r]) for r in rows]
    aid = session.project.audit.create_set("test", session.controller.scheme.task, ids, {}, blind=blind)
    session.controller.open_audit(aid)
    return int(aid)


def choose_rule(owner: Any, line: Any, rule: str) -> None:
    """Choose the consensus rule ``rule`` in the Labels… dialog of the labels line ``line`` (a
    child of ``owner``): the button clicked, the dialog answered when it shows."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ui.widgets.label_selection import LabelSelectionDialog

    def pick() -> None:
        dlg = QApplication.activeModalWidget()
        if not isinstance(dlg, LabelSelectionDialog):
            dlg = owner.findChild(LabelSelectionDialog)
        if dlg is None or not dlg.isVisible():
            QTimer.singleShot(50, pick)
            return
        dlg.rule.setCurrentIndex(dlg.rule.findData(rule))
        dlg.findChild(object, "label_selection_ok").click()

    QTimer.singleShot(50, pick)
    line.button.click()
