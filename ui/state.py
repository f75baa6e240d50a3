"""Application state shared by every view: an evented model over the core.

Views subscribe to the signals; the state never calls a widget. The truth lives in the
project store; the state holds what is loaded from it plus the live (unsaved) checker
config that the calibration sliders edit, and the verdicts it gives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from PySide6.QtCore import QObject, Signal

from workstation.dataset import Dataset
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.store import SpatialStore
from workstation.methods.spatial.types import VERDICT_CODE
from workstation.store import Project
from workstation.util.jsonsafe import dumps

from .idle_trim import IdleTrim
from .loading import LoadedProject, evaluate_active, load_project  # noqa: F401 - the window's names for them

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
        hits = np.flatnonzero(self.rows[start:stop] == row) if isinstance(row, (int, np.integer)) else []
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
        return AppliedVerdicts(*cols, config=v.config)

    def __len__(self) -> int:
        return len(self.verdict)


class AppState(QObject):
    project_changed = Signal()  # a project was opened or closed
    dataset_changed = Signal()  # samples / detections reloaded
    config_changed = Signal()  # the live checker config changed
    verdicts_changed = Signal()  # live verdicts recomputed
    labels_changed = Signal(str)  # a label was written for this sample id ("" = many)
    current_changed = Signal(int)  # the sample row under review changed
    queue_changed = Signal()  # the labelling queue changed
    message = Signal(str)  # a line for the status bar
    about_to_close = Signal()  # the open project is about to close (views keep their place)

    def __init__(self) -> None:
        super().__init__()
        self.project: Project | None = None
        self.dataset: Dataset | None = None
        self.config: CheckerConfig = CheckerConfig()
        self.config_id: int | None = None  # the stored version the live config derives from
        self.verdicts = None  # checker.VerdictArrays for the live config
        # the stored active config's verdicts: checker.VerdictArrays (the live `verdicts` while
        # the live config is the applied one), else AppliedVerdicts
        self.baseline: Any = None
        self.human: np.ndarray = np.zeros(0, np.int8)  # latest human verdict per row, -1 if none
        self.annotator: str = ""
        self.current: int = -1
        self.queue: RowQueue = RowQueue()  # sample rows to label, in order
        self.queue_pos: int = 0
        self.blind: bool = False
        self.item_blind: bool = False  # the item under review is a blind consistency re-check
        self.audit_set_id: int | None = None
        self.draft_restored: bool = False  # the live config is a draft kept at the last close
        # the project was adopted before its verdicts (open_project_in_background): the checker
        # evaluates the active config on a worker thread and `verdicts_ready` takes them
        self.checking: bool = False
        # the heap trimmed once the checker's passes (a drag, an open, a close) have rested
        self.idle_trim = IdleTrim(self)

    # ---- project ---------------------------------------------------------------------------
    def open_project(self, folder: str | Path, read_only: bool = False, snapshot: bool = False) -> None:
        self.close_project()
        self.project = Project.open_snapshot(folder) if snapshot else Project.open(folder, read_only=read_only)
        self.annotator = self.project.get_setting("annotator", "") or ""
        self.reload()
        self.project_changed.emit()

    def adopt(self, loaded: "LoadedProject") -> None:
        """Take a project loaded off the GUI thread (`load_project`) as `open_project` would."""
        self.close_project()
        self.project = loaded.project
        self.annotator = loaded.annotator
        self.dataset = loaded.dataset
        self.config_id, self.config = loaded.config_id, loaded.config
        self.baseline = self.verdicts = loaded.verdicts
        self.checking = loaded.verdicts is None and loaded.dataset.n > 0
        if not self.checking:
            self._restore_draft()
        self.human = loaded.human
        self.labels_changed.emit("")
        self.dataset_changed.emit()
        self.config_changed.emit()
        self.verdicts_changed.emit()
        self.project_changed.emit()

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

    def set_project(self, project: Project) -> None:
        self.close_project()
        self.project = project
        self.annotator = project.get_setting("annotator", "") or ""
        self.reload()
        self.project_changed.emit()

    def close_project(self) -> None:
        if self.project is not None:
            self.about_to_close.emit()
            self.keep_draft()
            self.project.close()
        self.project = None
        self.dataset = None
        self.verdicts = None
        self.baseline = None
        self.human = np.zeros(0, np.int8)
        self.current = -1
        self.queue = RowQueue()
        self.queue_pos = 0
        self.blind = False
        self.item_blind = False
        self.audit_set_id = None
        self.draft_restored = False
        self.checking = False
        self.idle_trim.poke()

    def reload(self) -> None:
        """Reload samples, detections, the active config, its verdicts and the labels."""
        from workstation.methods.spatial.checker import evaluate
        from workstation.methods.spatial.data import spatial_columns

        assert self.project is not None
        self.dataset = self.project.load_dataset(method="spatial", meanwhile=spatial_columns)
        self.config_id, self.config = SpatialStore(self.project).active_config()
        self.baseline = evaluate(self.dataset, self.config) if self.dataset.n else None
        self.verdicts = self.baseline
        self.checking = False
        self._restore_draft()
        self.reload_labels()
        if self.current >= self.dataset.n:
            self.current = -1
        self.dataset_changed.emit()
        self.config_changed.emit()
        self.verdicts_changed.emit()

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
        """Take the draft left at the last close as the live config (applied: still not)."""
        if self.project is None or self.dataset is None:
            return
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
        self.draft_restored = True
        self.message.emit("restored the unapplied calibration changes from last time "
                          "(Calibration: Apply to keep them, Reset to drop them)")

    def reload_labels(self) -> None:
        assert self.project is not None and self.dataset is not None
        self.human = SpatialStore(self.project).human_verdicts(self.dataset)
        self.labels_changed.emit("")

    # ---- live checker config ---------------------------------------------------------------
    def set_config(self, cfg: CheckerConfig) -> None:
        """Re-evaluate every verdict under `cfg` (not saved until `apply_config`)."""
        from workstation.methods.spatial.checker import evaluate

        if cfg == self.config and self.verdicts is not None:
            return
        self.config = cfg
        if self.dataset is not None and self.dataset.n:
            self.verdicts = evaluate(self.dataset, cfg)
            if self.baseline is not None and self.verdicts is not None and cfg == self.baseline.config:
                self.baseline = self.verdicts  # back to the applied config: its whole set again
            self._slim_baseline()
            self.idle_trim.poke()
        self.config_changed.emit()
        self.verdicts_changed.emit()

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
        return cid

    # ---- labels ----------------------------------------------------------------------------
    def set_annotator(self, name: str) -> None:
        assert self.project is not None
        self.annotator = name.strip()
        if not self.project.read_only:
            self.project.set_setting("annotator", self.annotator)

    def add_label(self, row: int, verdict: str | None, notes: str | None = None,
                  rating: int | None = None, source: str = "ui") -> int:
        """Write one label event for the sample at `row` (committed before returning).

        `source` tags the event ("ui", "recheck" for a consistency re-check, "undo"...).
        An event with no verdict replaces this annotator's verdict (undo back to unlabelled),
        so the row's human verdict is then re-read from the store.
        """
        assert self.project is not None and self.dataset is not None
        sid = str(self.dataset.samples.sample_id[row])
        eid = SpatialStore(self.project).add_label(sid, self.annotator, verdict, notes=notes, rating=rating,
                                     audit_set_id=self.audit_set_id, source=source)
        if verdict is not None:
            self.human[row] = VERDICT_CODE[verdict]
        else:
            self.human[row] = self.human_verdict_of(sid)
        self.labels_changed.emit(sid)
        return eid

    def human_verdict_of(self, sample_id: str) -> int:
        """The latest human verdict code of anyone for one sample (-1 if none), as
        `Project.human_verdicts` counts it."""
        assert self.project is not None
        latest: dict[str, tuple[int, str | None]] = {}
        for r in SpatialStore(self.project).label_events(sample_id):
            latest[r.annotator] = (r.event_id, r.verdict)
        best = (-1, -1)
        for eid, v in latest.values():
            if v in VERDICT_CODE and eid > best[0]:
                best = (eid, VERDICT_CODE[v])
        return best[1]

    # ---- navigation ------------------------------------------------------------------------
    def set_current(self, row: int) -> None:
        if row != self.current:
            self.current = row
            self.current_changed.emit(row)

    def set_queue(self, rows: Sequence[int] | np.ndarray, blind: bool = False, audit_set_id: int | None = None
                  ) -> None:
        self.queue = rows if isinstance(rows, RowQueue) else RowQueue(rows)
        self.queue_pos = 0
        self.blind = blind
        self.audit_set_id = audit_set_id
        self.queue_changed.emit()
        if self.queue:
            self.set_current(self.queue[0])


