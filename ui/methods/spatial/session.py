"""The spatial method's live session: its dataset, the live checker config and its verdicts, the
human labels, and its judging queue (P / F / U through the shared `JudgeController`).

Views subscribe to the signals and never hold the truth; the session never calls a widget. The
truth lives in the project; the session holds what is loaded from it plus the live (unsaved)
checker config that the calibration sliders edit, and the verdicts it gives. It follows the
application's `project_changed` (the project's samples are read again, or taken from a load made
off the GUI thread, `adopt`), so opening another project resets it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from PySide6.QtCore import QObject, Signal

from workstation.dataset import Dataset
from workstation.evaluation.judging import Visibility
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.method import LABELS
from workstation.methods.spatial.store import TASK, SpatialStore
from workstation.methods.spatial.store import load_dataset as load_spatial_dataset
from workstation.methods.spatial.types import VERDICT_CODE, VERDICTS
from workstation.store import Project
from workstation.util.jsonsafe import dumps

from ...forwarding import Forwarded
from ...idle_trim import IdleTrim
from ...state import AppState
from ...widgets.judge import JudgeController
from ...widgets.kept_selection import KeptSelection
from .loading import SpatialLoaded
from .pair_index import PairIndex

DRAFT_KEY = "ui.spatial.calibration_draft"  # project setting: the unapplied live config (JSON)

log = logging.getLogger(__name__)


class RowQueue(Sequence[int]):
    """Dataset rows in review order, held in one integer array (4 bytes a row while rows fit):
    reviewing all of a million samples keeps 4 MB, not a 36 MB list of Python ints. Reads as
    a sequence of ints; ``in`` and ``index`` are vectorised; a slice is a list."""

    __slots__ = ("rows",)

    def __init__(self, rows: Iterable[int] | np.ndarray = ()) -> None:
        arr = np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64).reshape(-1)
        small = not len(arr) or (int(arr.max()) < 2**31 and int(arr.min()) >= -(2**31))
        self.rows: np.ndarray = arr.astype(np.int32) if small else arr
        self.rows.flags.writeable = False

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return len(self.rows) > 0

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...  # type: ignore[override]

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return self.rows[i].tolist()
        return int(self.rows[i])

    def __iter__(self) -> Iterator[int]:
        for lo in range(0, len(self.rows), 65536):
            yield from self.rows[lo:lo + 65536].tolist()

    def __contains__(self, row: object) -> bool:
        return isinstance(row, (int, np.integer)) and bool((self.rows == row).any())

    def index(self, row: Any, start: int = 0, stop: int | None = None) -> int:
        hits: np.ndarray | list[int] = (np.flatnonzero(self.rows[start:stop] == row)
                                        if isinstance(row, (int, np.integer)) else [])
        if not len(hits):
            raise ValueError(f"row {row!r} is not in the queue")
        return start + int(hits[0])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowQueue):
            return bool(np.array_equal(self.rows, other.rows))
        if isinstance(other, (list, tuple, np.ndarray)):
            return len(other) == len(self.rows) and bool(np.array_equal(self.rows, np.asarray(other)))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.rows if dtype is None else self.rows.astype(dtype)

    def __repr__(self) -> str:
        return f"RowQueue({len(self.rows)} rows)"


@dataclass(frozen=True, eq=False)
class AppliedVerdicts:
    """The applied config's verdicts while a different live config is on screen: only the
    columns the Calibration tab's "applied" figures read (``checker.VerdictColumns``), 10 bytes
    a sample where a whole verdict set holds about 75 (75 MB at a million samples). The whole
    set comes back when the live config returns to the applied one (evaluated again)."""

    verdict: np.ndarray
    reason: np.ndarray
    conf: np.ndarray
    config: CheckerConfig

    @staticmethod
    def of(v: Any) -> AppliedVerdicts:
        cols = [np.array(getattr(v, k), copy=True) for k in ("verdict", "reason", "conf")]
        for a in cols:
            a.flags.writeable = False
        return AppliedVerdicts(cols[0], cols[1], cols[2], config=v.config)

    def __len__(self) -> int:
        return len(self.verdict)


class SpatialSession(QObject):
    dataset_changed = Signal()  # samples / detections reloaded
    config_changed = Signal()  # the live checker config changed
    verdicts_changed = Signal()  # live verdicts recomputed
    labels_changed = Signal(str)  # a label was written for this sample id ("" = many)
    current_changed = Signal(int)  # the sample row under review changed
    queue_changed = Signal()  # the labelling queue changed
    policy_changed = Signal()  # what views of every sample may show changed (ask `view_visibility`)
    judges_stale = Signal()  # a stored judge changed (a config applied with its verdicts)
    _previewed = Signal(object, object, object)  # (dataset, config, verdicts or the error) from the preview thread

    def __init__(self, app: AppState | None = None, ask_annotator: Callable[[], str | None] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app = app if app is not None else AppState()
        self.dataset: Dataset | None = None
        self.config: CheckerConfig = CheckerConfig()
        self.config_id: int | None = None  # the stored version the live config derives from
        self.verdicts: Any = None  # checker.VerdictArrays for the live config
        # the stored active config's verdicts: checker.VerdictArrays (the live `verdicts` while
        # the live config is the applied one), else AppliedVerdicts
        self.baseline: Any = None
        self.human: np.ndarray = np.zeros(0, np.int8)  # latest human verdict per row (anyone), -1 if none
        # every judge of the loaded samples, for Browse: (dataset, [JudgeColumn]) once computed
        # (`browse_judges.BrowseJudges`, off the GUI thread), None before
        self.judge_columns: tuple[Any, list[Any]] | None = None
        self.draft_restored = False  # the live config is a draft kept at the last close
        # a project folder the window closes and opens again itself (Write report's evaluate
        # step): the draft it kept comes back as the window's own, not one left by an earlier run
        self.reopening = ""
        # the project was adopted before its verdicts: the checker evaluates the active config
        # on a worker thread and `verdicts_ready` takes them
        self.checking = False
        # a load made off the GUI thread (its project and what spatial read of it), for the next open
        self._pending: tuple[Project, SpatialLoaded] | None = None
        self.idle_trim = IdleTrim(self)  # the heap trimmed once the checker's passes have rested
        # live configs evaluated off the GUI thread (`preview_config`): the one asked for last,
        # and the thread evaluating one now
        self._preview_wanted: CheckerConfig | None = None
        self._preview_thread: threading.Thread | None = None
        # what the last preview thread evaluated: (dataset, config, verdicts or the exception)
        self._preview_done: tuple[Any, CheckerConfig, Any] | None = None
        self._previewed.connect(self._on_previewed)
        self.controller = JudgeController(LABELS, self.app, ask_annotator=ask_annotator, parent=self)
        self.controller.describe = self.describe_row
        self.controller.moved.connect(self.current_changed)
        self.controller.queue_changed.connect(self.queue_changed)
        self.controller.policy_changed.connect(self.policy_changed)
        self.controller.written.connect(self._label_written)
        self._kept = KeptSelection(TASK, lambda: self.app.project, self.message.emit)
        self._selected: Any = None
        self.labels_changed.connect(self._labels_moved)
        self.app.project_changed.connect(self._on_project)
        self.app.about_to_close.connect(self._closing)
        self.app.annotator_changed.connect(self._on_annotator)
        self.app.data_changed.connect(self.reload_all)
        if self.app.project is not None:  # made while a project is open: read it now
            self._on_project()

    # ---- the application's state -----------------------------------------------------------
    project = Forwarded[Any]("app")
    annotator = Forwarded[str]("app")
    message = Forwarded[Any]("app")
    project_changed = Forwarded[Any]("app")
    about_to_close = Forwarded[Any]("app")

    def set_annotator(self, name: str) -> None:
        self.app.set_annotator(name)

    def open_project(self, folder: Any, read_only: bool = False, snapshot: bool = False) -> None:
        self.app.open_project(folder, read_only=read_only, snapshot=snapshot)

    def set_project(self, project: Any) -> None:
        self.app.set_project(project)

    def close_project(self) -> None:
        self.app.close_project()
        self.app.project_changed.emit()

    # ---- the judging queue -----------------------------------------------------------------
    @property
    def current(self) -> int:
        """The dataset row under review (-1 none)."""
        return self.controller.current_index

    def set_current(self, row: int) -> None:
        self.controller.go_target(int(row))

    @property
    def queue(self) -> RowQueue:
        return RowQueue(self.controller.queue_indices) if not self.controller.core.plain else RowQueue()

    @property
    def queue_pos(self) -> int:
        return self.controller.pos

    @property
    def audit_set_id(self) -> int | None:
        a = self.controller.audit
        return a.audit_set_id if a is not None else None

    def visibility(self) -> Visibility:
        """What may be shown about the sample under review (the core's policy)."""
        return self.controller.visibility()

    def queue_visibility(self) -> Visibility:
        """What the queue's policy lets views of every sample show."""
        return self.controller.queue_visibility()

    def view_visibility(self) -> Visibility:
        """What the views of every sample (table, grid, filters, counts, the twin) may show now:
        the queue's policy narrowed by the sample under review's (`JudgeController.view_visibility`)."""
        return self.controller.view_visibility()

    def describe_row(self, row: int) -> str:
        """A sample in the auditor's words: its prompt and seed."""
        ds = self.dataset
        if ds is None or not 0 <= row < ds.n:
            return "this sample"
        text = PairIndex.of(ds).prompt_text(row)
        return f"“{text}” (seed {int(ds.samples.seed[row])})"

    def _label_written(self, row: int) -> None:
        ds = self.dataset
        if ds is None or not 0 <= row < ds.n:
            return
        sid = str(ds.samples.sample_id[row])
        self.human[row] = self.human_verdict_of(sid)
        self.labels_changed.emit(sid)

    def _on_annotator(self) -> None:
        self.labels_changed.emit("")  # the controller reads the new annotator's labels itself

    # ---- project ---------------------------------------------------------------------------
    def expect(self, project: Project, loaded: SpatialLoaded) -> None:
        """The next project to open was loaded off the GUI thread: take it instead of reading."""
        self._pending = (project, loaded)

    def _on_project(self) -> None:
        p = self.app.project
        self._kept.forget()
        self._selected = None
        pending, self._pending = self._pending, None
        if p is None:
            self._clear()
        elif pending is not None and pending[0] is p:
            self._adopt(pending[1])
        else:
            self.reload()
        self._announce_new_data()

    # ---- which labels count ------------------------------------------------------
    @property
    def label_selection(self) -> Any:
        """The label selection the Calibration tab's figures use, kept with the project."""
        return self._kept.selection

    def set_label_selection(self, selection: Any) -> None:
        """Use (and keep with a writable project) another label selection."""
        self._kept.set(selection)
        self._selected = None
        self.labels_changed.emit("")

    @property
    def selected(self) -> Any:
        """The human verdicts of the label selection (`SpatialStore.human_selected`), read when
        first asked for after a label was written."""
        if self._selected is None:
            from workstation.methods.spatial.store import SelectedHuman

            p, ds = self.app.project, self.dataset
            if p is None or ds is None:
                from workstation.evaluation.selection import resolve

                empty: dict[str, list[Any]] = {"event_id": [], "target_id": [], "annotator": [], "value": [],
                                               "rating": [], "audit_set_id": [], "source": []}
                return SelectedHuman(np.zeros(0, np.int8), np.zeros(0), np.zeros(0, bool),
                                     resolve(empty, self.label_selection))
            self._selected = SpatialStore(p).human_selected(ds, self.label_selection)
        return self._selected

    @property
    def calib_human(self) -> np.ndarray:
        """Per row: the human verdict code the label selection gives (-1: none, or disputed)."""
        return self.selected.codes  # type: ignore[no-any-return]

    def _labels_moved(self, *_a: Any) -> None:
        self._selected = None

    def _announce_new_data(self, keep: str | None = None) -> None:
        """The samples were (re)read: the queue starts over (quietly, so that no view meets a
        current row of the old samples), the views take the new data, then the queue is told
        (at the sample ``keep`` when it is still there)."""
        c = self.controller
        ds = self.dataset
        c.core.set_targets(ds.samples.sample_id if ds is not None else np.zeros(0, dtype=object),
                           index=ds.sample_index if ds is not None else None)
        if keep is not None:
            i = c.core.index_of(keep)
            if i >= 0:
                c.core.go_target(i)
        self.dataset_changed.emit()
        self.config_changed.emit()
        self.verdicts_changed.emit()
        self.labels_changed.emit("")
        c._announce_queue()

    def _adopt(self, part: SpatialLoaded) -> None:
        self._preview_wanted = None
        self.dataset = part.dataset
        self.config_id, self.config = part.config_id, part.config
        self.baseline = self.verdicts = part.verdicts
        self.checking = part.checking
        self.draft_restored = False
        if not self.checking:
            self._restore_draft()
        self.human = part.human

    def verdicts_ready(self, dataset: Dataset, cfg: CheckerConfig, verdicts: object) -> bool:
        """Take the verdicts of the active config `cfg` evaluated off the GUI thread for the
        project adopted without them; False (nothing changes) when that project or dataset is
        no longer the one open."""
        if not self.checking or dataset is not self.dataset:
            return False
        self.checking = False
        self.baseline = verdicts
        if self.verdicts is None and cfg == self.config:  # no slider moved meanwhile
            self.verdicts = verdicts
            self._restore_draft()
        self._slim_baseline()
        self.idle_trim.poke()
        self.config_changed.emit()
        self.verdicts_changed.emit()
        return True

    def _closing(self) -> None:
        self.keep_draft()

    def _clear(self) -> None:
        self._preview_wanted = None
        self.dataset = None
        self.verdicts = None
        self.baseline = None
        self.config, self.config_id = CheckerConfig(), None
        self.human = np.zeros(0, np.int8)
        self.draft_restored = False
        self.checking = False
        self.idle_trim.poke()

    def reload(self) -> None:
        """Read samples, detections, the active config, its verdicts and the labels again."""
        from workstation.methods.spatial.checker import evaluate
        from workstation.methods.spatial.data import spatial_columns

        p = self.app.project
        self._preview_wanted = None
        if p is None:
            self._clear()
            return
        self.dataset = load_spatial_dataset(p, meanwhile=spatial_columns)
        self.config_id, self.config = SpatialStore(p).active_config()
        self.baseline = evaluate(self.dataset, self.config) if self.dataset.n else None
        self.verdicts = self.baseline
        self.checking = False
        self.draft_restored = False
        self._restore_draft()
        self.human = SpatialStore(p).human_verdicts(self.dataset)

    def reload_all(self) -> None:
        """Read the project's samples again and tell every view (a job added or removed
        samples): the queue starts over, at the sample under review if it is still there."""
        cur = self.controller.current
        self.reload()
        self._announce_new_data(keep=cur)

    # ---- unapplied calibration: kept as a draft in the project, restored at the next open ---------
    def has_unapplied_config(self) -> bool:
        """The live checker config differs from the stored active version (not applied)."""
        if self.project is None or self.dataset is None:
            return False
        try:
            _cid, stored = SpatialStore(self.project).active_config()
        except Exception:  # noqa: BLE001 - a project without spatial tables has nothing to apply
            return False
        return self.config != stored

    def keep_draft(self) -> bool:
        """Store the unapplied live config as the project's draft (or clear a stale draft);
        True when a draft was kept. Called when the project closes (quitting included), so
        calibration changes are never lost silently."""
        p = self.project
        if p is None or p.read_only:
            return False
        try:
            if self.has_unapplied_config():
                p.set_setting(DRAFT_KEY, dumps(self.config.to_dict(), sort_keys=True))
                return True
            if p.get_setting(DRAFT_KEY):
                p.set_setting(DRAFT_KEY, "")
        except Exception:  # noqa: BLE001 - closing must not fail
            log.exception("keeping the calibration draft")
        return False

    def _restore_draft(self) -> None:
        """Take the draft left at the last close as the live config (applied: still not); a draft
        the window kept while it closed and opened the project itself (`reopening`) comes back
        as its own, not as one left at an earlier close."""
        if self.project is None or self.dataset is None:
            return
        same = bool(self.reopening) and Path(self.reopening) == Path(self.project.folder)
        self.reopening = ""
        raw = self.project.get_setting(DRAFT_KEY, "") or ""
        if not raw:
            return
        try:
            cfg = CheckerConfig.from_dict(json.loads(raw))
        except Exception:  # noqa: BLE001 - a damaged draft is dropped, not fatal
            log.warning("the stored calibration draft is unreadable; ignored")
            return
        if cfg == self.config:
            return
        from workstation.methods.spatial.checker import evaluate

        self.config = cfg
        self.verdicts = evaluate(self.dataset, cfg) if self.dataset.n else None
        self._slim_baseline()
        self.draft_restored = not same
        if not same:
            self.message.emit("restored the unapplied calibration changes from last time "
                              "(Calibration: Apply to keep them, Reset to drop them)")

    def reload_labels(self) -> None:
        if self.project is None or self.dataset is None:
            return
        self.human = SpatialStore(self.project).human_verdicts(self.dataset)
        self.controller.reload()
        self.labels_changed.emit("")

    # ---- live checker config ---------------------------------------------------------------
    def set_config(self, cfg: CheckerConfig) -> None:
        """Re-evaluate every verdict under `cfg` (not saved until `apply_config`). A preview under
        way is waited for: when it evaluated `cfg` (a handle let go where it stopped), its verdicts
        are shown as they are; else what it brings is dropped."""
        from workstation.methods.spatial.checker import evaluate

        self._preview_wanted = None
        if cfg == self.config and self.verdicts is not None:
            return
        under_way = self._preview_thread
        if under_way is not None:  # its result (often this config's, or one a step from it) first:
            under_way.join(timeout=30.0)  # two evaluations at once would share the cores
            done = self._preview_done
            if (not under_way.is_alive() and done is not None and done[0] is self.dataset
                    and done[1] == cfg and not isinstance(done[2], Exception)):
                self._show_config(cfg, done[2])  # the value let go was the one under way: shown now
                return
        verdicts = evaluate(self.dataset, cfg) if self.dataset is not None and self.dataset.n else None
        self._show_config(cfg, verdicts)

    def _show_config(self, cfg: CheckerConfig, verdicts: Any) -> None:
        """`cfg` with its verdicts (None without samples) becomes the live config."""
        self.config = cfg
        if verdicts is not None:
            self.verdicts = verdicts
            if self.baseline is not None and cfg == self.baseline.config:
                self.baseline = self.verdicts  # back to the applied config: its whole set again
            self._slim_baseline()
            self.idle_trim.poke()
        self.config_changed.emit()
        self.verdicts_changed.emit()

    @property
    def previewing(self) -> bool:
        """A config asked for by `preview_config` is still to be shown."""
        return self._preview_wanted is not None

    def preview_config(self, cfg: CheckerConfig) -> None:
        """Show `cfg`'s verdicts once the checker has evaluated them on a thread of its own, the
        window free meanwhile (a slider dragged on a busy machine). One evaluation at a time:
        configs asked for while one runs are skipped but the last, evaluated next; what the
        thread brings is shown if it is still wanted (`set_config`, a close or a reload drop
        it)."""
        from workstation.methods.spatial.checker import evaluate  # imported here, on the GUI thread

        if self.dataset is None or not self.dataset.n:
            self.set_config(cfg)
            return
        if cfg == self.config and self._preview_thread is None:
            self._preview_wanted = None  # shown already
            return
        self._preview_wanted = cfg
        if self._preview_thread is not None:
            return
        dataset = self.dataset

        def run() -> None:
            try:
                result: Any = evaluate(dataset, cfg)
            except Exception as e:  # noqa: BLE001 - reported on the GUI thread
                result = e
            self._preview_done = (dataset, cfg, result)
            try:
                self._previewed.emit(dataset, cfg, result)
            except RuntimeError:  # the session is gone
                pass

        self._preview_done = None
        self._preview_thread = threading.Thread(target=run, name="checker-preview", daemon=True)
        self._preview_thread.start()

    def _on_previewed(self, dataset: Dataset, cfg: CheckerConfig, result: Any) -> None:
        self._preview_thread = None
        wanted = self._preview_wanted
        if wanted is None:
            return
        if dataset is not self.dataset:  # of samples read before: the one wanted now, next
            self.preview_config(wanted)
            return
        if isinstance(result, Exception):
            self._preview_wanted = None
            log.error("the checker failed on a live config: %s", result)
            self.message.emit(f"the checker failed: {result}")
            return
        if cfg == wanted:
            self._preview_wanted = None
        self._show_config(cfg, result)
        if self._preview_wanted is not None:  # asked for meanwhile: the latest, next
            self.preview_config(self._preview_wanted)

    def _slim_baseline(self) -> None:
        """Keep only the applied verdicts' summary columns while the live ones differ."""
        if self.baseline is not None and self.baseline is not self.verdicts \
                and not isinstance(self.baseline, AppliedVerdicts):
            self.baseline = AppliedVerdicts.of(self.baseline)

    def apply_config(self, note: str = "") -> int:
        """Save the live config as a new version with its verdict set and make it active."""
        assert self.project is not None and self.dataset is not None
        if self.verdicts is None and self.dataset.n:  # applied before the background check ended
            from workstation.methods.spatial.checker import evaluate

            self.verdicts = evaluate(self.dataset, self.config)
        self.checking = False  # what the background check brings is stale now
        with self.project.transaction():
            cid = SpatialStore(self.project).save_config(self.config, note=note, parent_id=self.config_id)
            if self.verdicts is not None:
                SpatialStore(self.project).save_verdicts(cid, self.dataset, self.verdicts)
        self.config_id = cid
        self.baseline = self.verdicts
        self.message.emit(f"saved checker config v{cid} ({self.config.content_hash()})")
        self.config_changed.emit()
        self.judges_stale.emit()  # the config's stored verdicts are a judge of their own
        return cid

    # ---- labels ----------------------------------------------------------------------------
    def human_verdict_of(self, sample_id: str) -> int:
        """The latest human verdict code of anyone for one sample (-1 if none), as
        `SpatialStore.human_verdicts` counts it."""
        assert self.project is not None
        latest: dict[str, tuple[int, str | None]] = {}
        for r in SpatialStore(self.project).label_events(sample_id):
            latest[r.annotator] = (r.event_id, r.verdict)
        best = (-1, -1)
        for eid, v in latest.values():
            if v in VERDICT_CODE and eid > best[0]:
                best = (eid, VERDICT_CODE[v])
        return best[1]

    def verdict_title(self, code: int) -> str:
        return VERDICTS[code] if 0 <= code < len(VERDICTS) else "—"
