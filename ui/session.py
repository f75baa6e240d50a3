"""One live session per method: its data, its live config (what the sliders edit), its results.

`MethodSession(method, app_state)` follows the open project: `reload()` reads the method's data
and its active evaluation version; `set_config(cfg)` re-evaluates in memory (nothing stored) and
emits `results_changed`; `apply(note)` stores the live config as a new version with its result
set (parent: the version it came from) and makes it active. Views subscribe to the signals and
never hold the truth; the session never calls a widget. The spatial method's session is
`ui.state.AppState` (it predates this class and carries the Browse / Review state too).
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QObject, Signal

log = logging.getLogger(__name__)


class MethodSession(QObject):
    data_changed = Signal()  # the method's data were (re)loaded, or the project closed
    config_changed = Signal()  # the live config changed
    results_changed = Signal()  # live results recomputed
    applied = Signal(int)  # a version was stored and made active

    def __init__(self, method: Any, app_state: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.method = method
        self.app = app_state  # ui.state.AppState: project, annotator, message, project_changed
        self.data: Any = None
        self.config: Any = method.default_config()
        self.eval_id: int | None = None  # the stored version the live config derives from
        self.results: Any = None
        self.error = ""

    @property
    def project(self) -> Any:
        return self.app.project

    def reload(self) -> None:
        """Read the method's data and active version from the open project (or clear)."""
        from workstation.evaluation.run import config_of

        p = self.project
        self.error = ""
        if p is None or not self.method.has_data(p):
            self.data, self.results, self.eval_id = None, None, None
            self.config = self.method.default_config()
        else:
            try:
                self.data = self.method.load(p)
                self.eval_id, self.config = config_of(p, self.method, None)
                self.results = self.method.evaluate(self.data, self.config)
            except Exception as e:  # noqa: BLE001 - shown on the page, the window stays up
                log.exception("loading %s", self.method.name)
                self.error = str(e)
                self.data, self.results = None, None
        self.data_changed.emit()
        self.config_changed.emit()
        self.results_changed.emit()

    def set_config(self, cfg: Any) -> None:
        """Re-evaluate under ``cfg`` (not stored until `apply`)."""
        if self.data is None:
            self.config = cfg
            self.config_changed.emit()
            return
        if cfg.content_hash() == self.config.content_hash() and self.results is not None:
            return
        self.config = cfg
        self.results = self.method.evaluate(self.data, cfg)
        self.config_changed.emit()
        self.results_changed.emit()

    def adopt(self, cfg: Any, results: Any) -> None:
        """Take ``results`` computed elsewhere (a worker thread) under ``cfg`` for the current data."""
        self.config, self.results = cfg, results
        self.config_changed.emit()
        self.results_changed.emit()

    @property
    def dirty(self) -> bool:
        """The live config differs from the stored version it came from."""
        p = self.project
        if p is None or self.data is None:
            return False
        if self.eval_id is None:
            return True
        return p.evaluations.get(self.eval_id)["content_hash"] != self.config.content_hash()

    def apply(self, note: str = "") -> int:
        """Store the live config as a version with its results, make it active; returns its id."""
        from workstation.evaluation.run import evaluate_and_store

        p = self.project
        if p is None or self.data is None:
            raise RuntimeError("no project with this method's data is open")
        eid, results = evaluate_and_store(p, self.method, self.eval_id, cfg=self.config, note=note, data=self.data)
        self.eval_id, self.results = eid, results
        msg = getattr(self.app, "message", None)
        if msg is not None:
            msg.emit(f"saved {self.method.name} config v{eid} ({self.config.content_hash()})")
        self.applied.emit(eid)
        self.results_changed.emit()
        return eid
