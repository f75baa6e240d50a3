"""The live DyEval session of the window: the open project's trees, the tree on screen, its runner.

Views never hold the truth: they read `session.tree` and call the session, which calls the
core runner (`workstation.methods.dyeval.runner.DyEvalRunner`), stores every change as a tree
event, and emits `changed`. A failed call says why on the status bar and leaves the tree as
stored (the runner is reopened from the project after a failed write). Generation and scoring
jobs go to the window's job queue (the Jobs panel); when one of ours ends, its images or scores
are brought into the tree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal

from workstation.types import WorkstationError

log = logging.getLogger(__name__)


class DyEvalSession(QObject):
    trees_changed = Signal()  # the list of trees (or the project) changed
    changed = Signal()  # the tree on screen changed (any event)
    jobs_changed = Signal()  # our jobs started or ended

    def __init__(self, app_state: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app = app_state
        self.runner: Any = None
        self.tree_ids: list[str] = []
        self.error = ""
        self.live_jobs: set[str] = set()
        self.jobs_panel: Any = None  # the window's JobsPanel, when there is one
        self.generator: str | None = None  # None: procedural
        self.model: str | None = None
        self.size = 256
        self.lm_spec: str | None = None  # None: the tree's config
        self._label_selection: Any = None  # read from the project when first asked for
        self._selection_of: Any = None  # ... the project it was read from

    # --- the project -----------------------------------------------------------------------------------
    @property
    def project(self) -> Any:
        return self.app.project

    @property
    def tree(self) -> Any:
        return None if self.runner is None else self.runner.tree

    @property
    def writable(self) -> bool:
        return self.project is not None and not self.project.read_only

    def reload(self, tree_id: str | None = None) -> None:
        """Read the project's trees and open ``tree_id`` (the one on screen, or the newest)."""
        from workstation.methods.dyeval.runner import DyEvalRunner
        from workstation.methods.dyeval.store import TreeStore

        keep = tree_id or (self.runner.tree_id if self.runner is not None else None)
        self.runner, self.tree_ids, self.error = None, [], ""
        p = self.project
        if p is not self._selection_of:
            self._label_selection, self._selection_of = None, p
        if p is not None:
            try:
                store = TreeStore(p)
                self.tree_ids = store.tree_ids()
                if self.tree_ids:
                    tid = keep if keep in self.tree_ids else self.tree_ids[-1]
                    self.runner = DyEvalRunner(p, tid)
                    if self.lm_spec:
                        self.runner.set_lm(self.lm_spec)
                    self.sync()
            except Exception as e:  # noqa: BLE001 - shown on the page; the window stays up
                log.exception("opening the DyEval trees")
                self.error = str(e)
                self.runner = None
        self.trees_changed.emit()
        self.changed.emit()

    # --- which labels count --------------------------------------------------------------------------------
    @property
    def label_selection(self) -> Any:
        """The label selection the tree's results follow: the project's kept one (or, on a
        read-only project, the one chosen in this window)."""
        from workstation.evaluation.selection import default_selection, load_selection
        from workstation.methods.dyeval.store import TASK

        if self._label_selection is None:
            p = self.project
            try:
                self._label_selection = load_selection(p, TASK) if p is not None else default_selection(TASK)
            except WorkstationError as e:
                self.message(f"{e}; DyEval counts its default labels")
                self._label_selection = default_selection(TASK)
        return self._label_selection

    def resolved_labels(self) -> Any:
        """The judgements the label selection gives (`selection.resolve_project`), for the line."""
        from workstation.evaluation.selection import resolve_project
        from workstation.methods.dyeval.store import TASK

        return resolve_project(self.project, TASK, self.label_selection)

    def set_label_selection(self, selection: Any) -> None:
        """Count other labels: kept with a writable project, and the tree's judgements, APR, AFR
        and #Bugs recomputed from them (on a read-only project, in memory only)."""
        from workstation.evaluation.selection import save_selection
        from workstation.methods.dyeval.store import TASK

        p = self.project
        if p is not None and not p.read_only:
            save_selection(p, TASK, selection)
        self._label_selection = selection
        if self.runner is None:
            self.changed.emit()
            return
        try:
            self.sync()
        except Exception as e:  # noqa: BLE001 - the choice is kept; the tree catches up on reload
            log.exception("applying a label selection to the tree")
            self.message(f"the labels are chosen but the tree could not take them in: {e}")
            self._recover()
            return
        self.changed.emit()

    def sync(self) -> Any:
        """Bring the project's images, judgements (under the label selection) and pre-marks into
        the open tree."""
        from workstation.methods.dyeval.link import sync_tree

        return sync_tree(self.runner.project, self.runner.tree, selection=self.label_selection)

    def message(self, text: str) -> None:
        msg = getattr(self.app, "message", None)
        if msg is not None:
            msg.emit(text)

    def do(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run one change; on failure say why and reopen the stored tree. Emits `changed`."""
        if self.runner is None:
            self.message(f"{what}: no tree is open")
            return None
        if not self.writable:
            self.message(f"{what}: the project is open read-only")
            return None
        try:
            out = fn()
        except WorkstationError as e:
            self.message(f"{what}: {e}")
            self._recover()
            return None
        except Exception as e:  # noqa: BLE001 - a bug must not take the window down
            log.exception("%s failed", what)
            self.message(f"{what} failed: {e}")
            self._recover()
            return None
        self.changed.emit()
        return out

    def _recover(self) -> None:
        if self.runner is not None and self.runner.tree.on_event is None and self.writable:
            try:
                self.runner.reload()
            except Exception:  # noqa: BLE001
                log.exception("reopening the tree")
        self.changed.emit()

    # --- trees -----------------------------------------------------------------------------------------
    def new_tree(self, config: Any, *, tree_id: str | None = None, topics: Sequence[str] = (),
                 perspectives: Sequence[str] | None = None) -> str | None:
        from workstation.methods.dyeval.runner import DyEvalRunner

        if not self.writable:
            self.message("open a project for writing to make a tree")
            return None
        try:
            r = DyEvalRunner.create(self.project, config, tree_id=tree_id, topics=topics, perspectives=perspectives)
        except WorkstationError as e:
            self.message(f"new tree: {e}")
            return None
        self.reload(r.tree_id)
        self.message(f"made tree {r.tree_id}: {len(r.tree.nodes)} root topic(s); next: write their prompts")
        return str(r.tree_id)

    def open_tree(self, tree_id: str) -> None:
        if self.runner is None or self.runner.tree_id != tree_id:
            self.reload(tree_id)

    def set_lm(self, spec: str | None) -> None:
        self.lm_spec = spec
        if self.runner is not None and spec:
            try:
                self.runner.set_lm(spec)
            except WorkstationError as e:
                self.message(str(e))
                self.lm_spec = None

    # --- the automatic steps --------------------------------------------------------------------------------
    def run_automatic(self, kinds: Collection[str], *, confirm: bool = False) -> list[str]:
        done = self.do("automatic steps", lambda: self.runner.run_automatic(kinds, confirm=confirm)) or []
        self.message("; ".join(done) if done else "nothing to do automatically now")
        return list(done)

    def write_prompts(self, node_id: str) -> None:
        from workstation.methods.dyeval.engine import write_prompts

        def go() -> Any:
            rep = write_prompts(self.runner.tree, node_id, self.runner.lm)
            self.message(f"wrote {len(rep.prompt_ids)} prompt(s); review them, then confirm them for generation")

        self.do("write prompts", go)

    def start_locations(self, node_id: str) -> None:
        from workstation.methods.dyeval.engine import start_locations

        def go() -> Any:
            ids = start_locations(self.runner.tree, node_id, self.runner.lm)
            self.message(f"started {len(ids)} failure location(s): generate and judge their steps")

        self.do("failure location", go)

    def reflect(self, node_id: str) -> None:
        from workstation.methods.dyeval.engine import reflect

        self.do("reflection", lambda: reflect(self.runner.tree, node_id, self.runner.lm))

    def propose(self, node_id: str) -> None:
        from workstation.methods.dyeval.engine import propose_topics

        def go() -> Any:
            ids = propose_topics(self.runner.tree, node_id, self.runner.lm)
            self.message(f"proposed {len(ids)} child topic(s): accept, edit, reorder or reject them")

        self.do("propose topics", go)

    # --- images: jobs -----------------------------------------------------------------------------------------
    def generate(self) -> list[str]:
        """Queue generation jobs for every image the tree asks for (the Jobs panel runs them)."""
        if self.runner is None or not self.writable:
            return []
        if self.live_jobs:
            self.message("images are being generated already (see the Jobs panel)")
            return []

        def go() -> Any:
            return self.runner.create_generation_jobs(generator=self.generator, model=self.model, size=self.size,
                                                      live=self.live_jobs)

        specs = self.do("generate", go) or []
        ids = [s.job_id for s in specs]
        if ids:
            self._submit(ids)
        return ids

    def score(self) -> list[str]:
        sj = self.do("score for pre-marks", lambda: self.runner.score_job())
        if sj is None:
            self.message("no pre-mark scoring to do (set a CLIP folder and a threshold in the tree's config)")
            return []
        self._submit([sj.job_id])
        return [sj.job_id]

    def _submit(self, ids: list[str]) -> None:
        panel = self.jobs_panel
        if panel is None:
            self.message("the Jobs panel is not available: run `main.py jobs resume` for " + ", ".join(ids))
            return
        try:
            panel.submit(ids)
        except WorkstationError as e:
            self.message(str(e))
            return
        self.live_jobs.update(ids)
        self.jobs_changed.emit()
        self.message(f"queued {len(ids)} job(s); progress in the Jobs panel (Ctrl+J)")

    def on_job_finished(self, job_id: str, status: str, message: str) -> None:
        if job_id not in self.live_jobs:
            return
        self.live_jobs.discard(job_id)
        if self.runner is not None:
            self.do("bring in the job's results", self.sync)
        self.jobs_changed.emit()
        if status != "done":
            self.message(f"{job_id} {status}: {message.splitlines()[0] if message else ''}")

    # --- judgements --------------------------------------------------------------------------------------
    def after_label(self, image_id: str = "") -> None:
        """A label event may have been committed (a key, undo, redo): bring it into the tree."""
        if self.runner is None:
            return
        try:
            rep = self.sync()
        except Exception as e:  # noqa: BLE001 - the label is in the log; the tree catches up on reload
            log.exception("applying a judgement to the tree")
            self.message(f"the judgement is saved but the tree could not take it in: {e}")
            self._recover()
            return
        if rep.changed:
            self.changed.emit()

    def confirm_premarks(self, image_ids: Sequence[str], annotator: str) -> int:
        """Confirm CLIPScore pre-marks as human FAIL judgements (one label event each)."""
        def go() -> int:
            n = 0
            for iid in image_ids:
                img = self.runner.tree.images[iid]
                if img.premark_fail and img.label is None:
                    self.runner.label(iid, "FAIL", annotator, source="ui-premark")
                    n += 1
            return n

        n = self.do("confirm pre-marks", go) or 0
        self.message(f"confirmed {n} pre-mark(s) as FAIL")
        return int(n)
