"""Keyboard judgements over any method's label scheme: the controller, the bar, the keys.

`JudgeController` wraps the core's `workstation.evaluation.judging.JudgingQueue` (the queue, the
passes, the blindness policy, undo / redo) with signals: every method's judging page — the
spatial pair viewer, MetaLogic pairs, ProtoBias ratings, DyEval test images — walks its queue
and writes its labels through one of these, committed before the key press returns. A write
that fails (a full disk, a read-only project) says so where the auditor looks and keeps the
item; no acknowledged label is lost.

Another annotator (Audit → Annotator…) takes over with their own place on the queue, their own
labels and an empty undo history of their own (`JudgeController.follow_annotator`): an undo or
redo never touches another annotator's label.

`JudgeBar` is the bar a judging page puts under its view: one button per value with its key,
"your label", ◀ ▶, undo / redo, auto-advance, export, the notes box, "item i of n" with a
progress bar, *Next unlabelled* (and, at the end of a queue, how much is labelled and how many
are left), and a banner while something is hidden (a blind audit, a re-check). Where its page
shows no item (`set_unshown`: no audit set open, an image not found) the bar says what is
missing, and its keys and buttons record nothing but the values allowed there (the scheme's
abstaining UNDECIDABLE, pressed explicitly).
`install_shortcuts(page, controller, bar)` binds the scheme's keys, N (notes), ← / →, Shift+→
(next unlabelled) and Ctrl+Z / Ctrl+Shift+Z on a page: they act whenever the page is shown,
wherever the focus is (except while typing in a text field), so they work at once after a tab or
page switch.

Notes behave alike everywhere: N puts the cursor at the end of the note, Enter saves it (with
"notes saved" beside the box), Shift+Enter starts a new line, Esc leaves the box (saving what
was typed, as leaving it by the mouse does).
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics, QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.base import LabelScheme
from workstation.evaluation.judging import AuditInfo, JudgingQueue, LabelState, ShownLabel, Visibility
from workstation.util.csvsafe import escape_cell

from ..forwarding import Forwarded
from .forms import push_button

log = logging.getLogger(__name__)


def csv_cell(value: Any) -> str:
    """A cell as spreadsheets should read it (formula-like text is prefixed with ')."""
    return escape_cell("" if value is None else str(value))


def not_saved_message(e: BaseException) -> str:
    """What the annotator reads when a label could not be written."""
    from workstation.util.output import describe_os_error, is_disk_full

    if is_disk_full(e):
        return ("disk full — the label was not saved (every earlier label is safe); free some space and "
                "press the key again")
    text = str(e).lower()
    if "read-only" in text or "permission" in text:
        return "the project folder cannot be written — the label was not saved (earlier labels are safe)"
    return f"the label was not saved ({describe_os_error(e)}); earlier labels are safe"


NEXT_UNLABELLED = "Next unlabelled"
NEXT_UNLABELLED_KEY = "Shift+Right"
NEXT_UNLABELLED_KEY_TEXT = "Shift+→"


class JudgeController(QObject):
    committed = Signal(int, str)  # labels committed by this controller so far, the target id
    written = Signal(int)  # a label event was written for this target index (key, notes, undo, redo)
    changed = Signal()  # label state, progress or undo availability changed
    moved = Signal(int)  # the current target changed (its index; -1 none)
    queue_changed = Signal()  # a new queue
    policy_changed = Signal()  # what views of more than the current target may show changed (ask again);
    # emitted only when it did change: a new queue under the same policy emits `queue_changed` alone
    finished_queue = Signal()
    save_failed = Signal(str)  # a label was not written (the message says why)

    def __init__(self, scheme: LabelScheme, state: Any, ask_annotator: Callable[[], str | None] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state  # ui.state.AppState: project, annotator, set_annotator, message
        self.core = JudgingQueue(scheme, state)
        self.ask_annotator = ask_annotator
        self.auto_advance = True
        self.on_leave: list[Callable[[], None]] = []  # called before the current target changes
        self.describe: Callable[[int], str] = self.core.target_id  # a target in the auditor's words
        self._policy_seen = self.view_visibility()
        self.refuse_writes = ""  # why this page records nothing now ("": it records)
        annotator_changed = getattr(state, "annotator_changed", None)
        if annotator_changed is not None:  # another annotator: their own place, labels and history
            annotator_changed.connect(self.follow_annotator)

    # ---- the core's state -------------------------------------------------------------------------
    scheme = Forwarded[LabelScheme]("core")
    pos = Forwarded[int]("core")
    current_index = Forwarded[int]("core", "current")
    current_state = Forwarded[LabelState]("core")
    queue_indices = Forwarded[np.ndarray]("core", "queue")
    audit = Forwarded[AuditInfo | None]("core")
    undo_stack = Forwarded[list[Any]]("core")
    redo_stack = Forwarded[list[Any]]("core")
    last_error = Forwarded[str]("core")

    @property
    def current(self) -> str | None:
        """The current target's id (None: none)."""
        i = self.core.current
        return self.core.target_id(i) if i >= 0 else None

    @property
    def queue(self) -> list[str]:
        """The queue's target ids (a list: for short queues; `queue_indices` for long ones)."""
        return [self.core.target_id(i) for i in self.core.queue.tolist()]

    def is_recheck(self) -> bool:
        return self.core.is_recheck()

    def on_queue(self) -> bool:
        return self.core.on_queue()

    def progress(self) -> tuple[int, int]:
        return self.core.progress()

    def visibility(self) -> Visibility:
        return self.core.visibility()

    def queue_visibility(self) -> Visibility:
        return self.core.queue_visibility()

    def view_visibility(self) -> Visibility:
        """What views of more than the current target (tables, grids, filters, counts, other
        pages) may show: the queue's policy, narrowed by the current target's while it is shown
        (a re-check hides everything that would tell its first answer)."""
        return self.core.queue_visibility() & self.core.visibility()

    def _check_policy(self) -> None:
        vis = self.view_visibility()
        if vis != self._policy_seen:
            self._policy_seen = vis
            self.policy_changed.emit()

    def shown_labels(self, index: int | None = None) -> list[ShownLabel]:
        return self.core.shown_labels(index)

    def index_of(self, target_id: str) -> int:
        return self.core.index_of(target_id)

    # ---- targets and queues -----------------------------------------------------------------------
    def set_targets(self, ids: Sequence[str] | np.ndarray, index: Callable[[], dict[str, int]] | None = None) -> None:
        """Every target of the task (the queue becomes all of them)."""
        self._leave()
        self.core.set_targets(ids, index)
        self._announce_queue()

    def _indices(self, targets: Sequence[Any] | np.ndarray) -> np.ndarray:
        """Target indices of a queue given as indices (ints) or as target ids (text)."""
        arr = np.asarray(targets if isinstance(targets, np.ndarray) else (
            targets if hasattr(targets, "__array__") else list(targets)))
        if arr.dtype.kind in "iub" or (arr.dtype.kind == "f" and not len(arr)):
            return arr.astype(np.int64)
        ids = [str(t) for t in arr.tolist()]
        idx = np.fromiter((self.core.index_of(t) for t in ids), np.int64, len(ids))
        if len(idx) and (idx < 0).any():  # targets the controller did not know: they become its targets
            self.core.set_targets(np.asarray(list(dict.fromkeys(ids)), dtype=object))
            idx = np.fromiter((self.core.index_of(t) for t in ids), np.int64, len(ids))
        return idx

    def set_queue(self, targets: Sequence[Any] | np.ndarray | None, start: int = 0,
                  recheck: Sequence[bool] | np.ndarray | None = None, audit: AuditInfo | None = None) -> None:
        """Make ``targets`` (ids or target indices; None: every target) the queue and go to
        position ``start``."""
        self._leave()
        idx = None if targets is None else self._indices(targets)
        self.core.set_queue(idx, recheck=recheck, audit=audit, start=start)
        self._announce_queue()

    def _announce_queue(self) -> None:
        """A new queue: `queue_changed`, then `policy_changed` only if what the views may show
        changed (a view that re-queues when the policy changes does not start the same change
        again), then `moved` and `changed`."""
        self.queue_changed.emit()
        self._check_policy()
        self.moved.emit(self.core.current)
        self.changed.emit()

    def open_audit(self, audit_set_id: int) -> int:
        """Make a stored audit set the queue and go to its first item this pass has not
        labelled; returns the queue's length (of an overlap set: the annotator's part of it).
        Targets the project no longer holds are left out (the status bar says how many)."""
        from workstation.evaluation.audit_sets import audit_info

        p = self.state.project
        info = audit_info(p, audit_set_id)
        items = p.audit.items(audit_set_id)
        idx = np.fromiter((self.core.index_of(t) for t, _rc in items), np.int64, len(items))
        rc = np.fromiter((bool(r) for _t, r in items), bool, len(items))
        keep = idx >= 0
        self._leave()
        self.core.set_queue(idx[keep], recheck=rc[keep], audit=info)
        start = self.core.first_undone()
        if start:
            self.core.go(start)
        self._announce_queue()
        missing = int((~keep).sum())
        if missing:
            self._message(f"{missing} item(s) of audit set #{audit_set_id} are no longer in the project")
        return len(self.core.queue)

    def leave_audit(self) -> None:
        """Back to a plain queue of every target, at the current one."""
        cur = self.core.current
        self.set_queue(None)
        if cur >= 0:
            self.go_target(cur)

    def set_page_blind(self, on: bool) -> None:
        """The page's own blind switch (outside audit sets)."""
        if self.core.page_blind != bool(on):
            self.core.page_blind = bool(on)
            self._check_policy()
            self.queue_changed.emit()
            self.changed.emit()

    def reload(self) -> None:
        """Read the annotator's labels again (another annotator, an import)."""
        self.core.reload()
        self.changed.emit()

    def follow_annotator(self) -> None:
        """Another annotator (Audit → Annotator…): their own place on the queue (where they left
        it, else their first unlabelled item), their labels, their own undo history."""
        before, queue = self.core.current, self.core.queue
        self.core.follow_annotator()
        self.core.reload()
        if self.core.queue is not queue:  # an overlap set: the new rater's part of it
            self.queue_changed.emit()
            self._check_policy()
            self.moved.emit(self.core.current)
        elif self.core.current != before:
            self._check_policy()
            self.moved.emit(self.core.current)
        self.changed.emit()

    # ---- moving ---------------------------------------------------------------------------------
    def _leave(self) -> None:
        """Before the current target changes: the pages save what was typed for it (only into
        the project its targets are of: after another project opened there is nothing to save)."""
        if self.core.bound is not self.state.project or self.core.current < 0:
            return
        for cb in self.on_leave:
            cb()

    def go(self, pos: int) -> None:
        c = self.core
        if not len(c.queue):
            return
        pos = int(min(max(pos, 0), len(c.queue) - 1))
        if pos == c.pos and c.on_queue():
            return
        self._leave()
        c.go(pos)
        self._check_policy()
        self.moved.emit(c.current)
        self.changed.emit()

    def go_target(self, index: int) -> None:
        """Show target ``index`` (at its queue position when queued)."""
        c = self.core
        if index == c.current and (c.on_queue() or index < 0):
            return
        self._leave()
        c.go_target(int(index))
        self._check_policy()
        self.moved.emit(c.current)
        self.changed.emit()

    def go_to_id(self, target_id: str) -> bool:
        i = self.core.index_of(target_id)
        if i < 0:
            return False
        self.go_target(i)
        return True

    def next(self) -> None:
        c = self.core
        if not len(c.queue):
            return
        if not c.on_queue():
            # off the queue (a target picked elsewhere): go on from the target after it in order
            after = np.flatnonzero(c.queue > c.current) if c.plain else np.zeros(0, np.int64)
            self.go(int(after[0]) if len(after) else c.pos)
            return
        if c.at_end():
            self._leave()
            self._message(self.end_text())
            self.finished_queue.emit()  # after the message: what it shows (self-agreement) stays
            return
        self.go(c.step_pos(c.pos, 1))  # a re-check of an item this annotator has not labelled is passed

    def prev(self) -> None:
        c = self.core
        if not c.on_queue() and c.plain and len(c.queue):
            before = np.flatnonzero(c.queue < c.current)
            self.go(int(before[-1]) if len(before) else 0)
            return
        back = c.step_pos(c.pos, -1)
        self.go(back if back >= 0 else c.pos)

    def unlabelled_left(self) -> int:
        """Items of the queue this annotator has not labelled in the pass."""
        done, total = self.core.progress()
        return total - done

    def end_text(self) -> str:
        """What the end of the queue says: how much is labelled and the way back to the rest."""
        done, total = self.core.progress()
        if done >= total:
            return f"end of the queue: all {total:,} labelled"
        return (f"end of the queue: {done:,} of {total:,} labelled — {NEXT_UNLABELLED} "
                f"({NEXT_UNLABELLED_KEY_TEXT}) goes to the {total - done:,} left")

    def next_unlabelled(self) -> bool:
        """Go to the next item this annotator has not labelled (after the current one, then
        from the start); says so when every item is labelled."""
        c = self.core
        pos = c.next_unlabelled(c.pos if c.on_queue() else -1)
        if pos < 0:
            self._message("every item of this queue is labelled" if len(c.queue) else "no queue")
            return False
        self.go(pos)
        return True

    # ---- writing --------------------------------------------------------------------------------
    def _message(self, text: str) -> None:
        msg = getattr(self.state, "message", None)
        if msg is not None:
            msg.emit(text)

    def _writable(self) -> bool:
        p = self.state.project
        if p is None or self.core.current < 0:
            return False
        if self.refuse_writes:
            self._message(self.refuse_writes)
            return False
        if p.read_only:
            self._message("this project is open read-only: labels cannot be saved")
            return False
        if not self.state.annotator:
            name = self.ask_annotator() if self.ask_annotator else None
            if not name or not name.strip():
                self._message("an annotator name is needed before labelling")
                return False
            self.state.set_annotator(name)
            self.core.reload()
        return True

    def _failed(self, e: BaseException) -> bool:
        log.warning("a label was not saved: %s", e, exc_info=True)
        self.core.last_error = not_saved_message(e)
        self._message(self.core.last_error)
        self.save_failed.emit(self.core.last_error)
        self.changed.emit()
        return False

    def record(self, value: str, notes: str | None = None) -> bool:
        """Commit ``value`` (with the notes typed) for the current target; go on when
        auto-advancing. False (with a message, the item kept) when it was not saved."""
        value = self.scheme.validate(value)
        if not self._writable():
            return False
        index = self.core.current
        try:
            self.core.record(value, notes)
        except Exception as e:  # noqa: BLE001 - a failed write must not take the window down
            return self._failed(e)
        self.core.last_error = ""
        target = self.core.target_id(index)
        self.committed.emit(self.core.n_committed, target)
        self.written.emit(index)
        if os.environ.get("WORKSTATION_ACK"):
            print(f"ACK {self.core.n_committed} {self.scheme.task} {target}", flush=True)
        self.changed.emit()
        if self.auto_advance:
            self.next()
        return True

    def save_notes(self, text: str | None) -> bool:
        """Save the current target's notes if they changed (with its current value)."""
        c = self.core
        if c.current < 0 or ((text or "").strip() or None) == (c.current_state[1] or None):
            return False
        if not self._writable():
            return False
        index = c.current
        try:
            saved = c.save_notes(text)
        except Exception as e:  # noqa: BLE001
            return self._failed(e)
        if saved:
            c.last_error = ""
            self.written.emit(index)
            self.changed.emit()
        return saved

    def undo(self) -> bool:
        return self._step(back=True)

    def redo(self) -> bool:
        return self._step(back=False)

    def _step(self, back: bool) -> bool:
        c = self.core
        p = self.state.project
        if p is None or p.read_only:
            return False
        if self.refuse_writes:
            self._message(self.refuse_writes)
            return False
        if not c.can_step(back):
            who = self.state.annotator
            self._message(f"nothing to {'undo' if back else 'redo'}" + (
                f" — the history holds only {who}'s labels in this queue" if who else ""))
            return False
        before = c.current
        self._leave()
        try:
            ch = c.step(back)
        except Exception as e:  # noqa: BLE001
            return self._failed(e)
        if ch is None:
            return False
        if c.current != before:
            self._check_policy()
            self.moved.emit(c.current)
        self.written.emit(ch.index)
        value = c.state_of(ch.index, ch.recheck)[0]
        said = self.scheme.title_of(value) if value else "unlabelled"
        if ch.before[0] == ch.after[0] and ch.before[1] != ch.after[1]:  # only the note changed
            self._message(f"note {'undone' if back else 'redone'}: {self.describe(ch.index)} "
                          f"(its label stays {said})")
        else:
            self._message(f"{'undone' if back else 'redone'}: {self.describe(ch.index)} is {said}")
        self.changed.emit()
        return True

    # ---- export ---------------------------------------------------------------------------------
    def export_rows(self) -> list[Any]:
        """The label events an export may hold now: every annotator's standing label of the
        task; during an audit pass that hides other labels, only this annotator's labels of the
        pass (the policy decides)."""
        p = self.state.project
        if p is None:
            return []
        vis = self.view_visibility()
        rows = p.labels.latest(self.scheme.task)
        if vis.others and vis.own_earlier:
            return rows
        who, aid = self.state.annotator, self.core.audit_set_id
        return [e for e in rows if e.annotator == who and (vis.own_earlier or aid is None or e.audit_set_id == aid)]

    def export_csv(self, path: str | Path, overwrite: bool = False,
                   rename: Callable[[str], str] | None = None) -> int:
        """Write the labels `export_rows` gives as CSV (spreadsheet-safe cells), through the output
        policy (`workstation.util.output`): never into the project but its exports/ or reports/, an
        existing file replaced only with ``overwrite`` (the save dialog asked). ``rename``: the id
        written for a target id (a blind set's neutral ids)."""
        from workstation.util.output import output_file

        from ..project_dialogs import SAVE_DIALOG_HINT, output_projects

        rows = self.export_rows()
        with output_file(path, "label file", overwrite=overwrite, projects=output_projects(self.state.project),
                         overwrite_hint=SAVE_DIALOG_HINT) as tmp:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(["task", "target_kind", "target_id", "annotator", "value", "notes", "created_at",
                            "source", "audit_set_id"])
                for e in rows:
                    tid = rename(e.target_id) if rename is not None else e.target_id
                    w.writerow([csv_cell(x) for x in (e.task, e.target_kind, tid, e.annotator, e.value,
                                                      e.notes, e.created_at, e.source, e.audit_set_id)])
        return len(rows)


# ---------------------------------------------------------------------------------------------
# The bar
# ---------------------------------------------------------------------------------------------

class NotesEdit(QPlainTextEdit):
    """The multi-line notes box: Enter saves (`returnPressed`), Shift+Enter starts a new line,
    Esc leaves the box (`escape`); leaving it saves too (`editingFinished`). `text()` /
    `setText()` as a line edit's."""

    escape = Signal()
    returnPressed = Signal()
    editingFinished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)
        # a click or N puts the cursor here, never the window's first focus: single-letter keys
        # label, they are not typed into the note
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setFixedHeight(self.fontMetrics().lineSpacing() * 3 + 12)

    def text(self) -> str:
        return self.toPlainText()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's naming
        self.setPlainText(text)

    def focus_at_end(self) -> None:
        """The cursor at the end of the note (the note kept, nothing selected)."""
        self.setFocus(Qt.FocusReason.ShortcutFocusReason)
        cur = self.textCursor()
        cur.movePosition(QTextCursor.MoveOperation.End)
        self.setTextCursor(cur)

    def keyPressEvent(self, e: Any) -> None:  # noqa: N802
        if e.key() == Qt.Key.Key_Escape:
            self.escape.emit()
            e.accept()
            return
        if (e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and not (e.modifiers() & Qt.KeyboardModifier.ShiftModifier)):
            self.returnPressed.emit()
            e.accept()
            return
        super().keyPressEvent(e)

    def focusOutEvent(self, e: Any) -> None:  # noqa: N802
        super().focusOutEvent(e)
        self.editingFinished.emit()


def _remembered_auto_advance() -> bool:
    from ..project_dialogs import settings

    return str(settings().value("auto_advance", True)).lower() not in ("false", "0")


class JudgeBar(QWidget):
    """The bar under a judging page's view (see the module docstring). ``colors``: a colour per
    value for its button's frame and "your label"; ``exporter(path, overwrite) -> n`` replaces the
    plain CSV export (``overwrite``: the path was chosen in the save dialog, which asked before
    replacing a file); ``export_filter``: the file dialog's filter."""

    def __init__(self, controller: JudgeController, parent: QWidget | None = None, *,
                 colors: dict[str, str] | None = None, exporter: Callable[[str, bool], int] | None = None,
                 export_filter: str = "CSV (*.csv)", noun: str = "item") -> None:
        super().__init__(parent)
        self.c = controller
        self.colors = colors or {}
        self.exporter = exporter
        self.export_filter = export_filter
        self.noun = noun
        self.focus_target: QWidget | None = None  # where Enter / Esc in the notes box hand the keys back
        s = controller.scheme
        self.setObjectName("judgeBar")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 4, 6, 4)
        outer.setSpacing(4)
        # the keys' buttons and the queue's controls wrap onto a second line on a narrow page
        from .layout import FlowLayout

        row = FlowLayout(spacing=8)
        outer.addLayout(row)
        self.blind_banner = QLabel("BLIND AUDIT")
        self.blind_banner.setObjectName("blindBanner")
        self.blind_banner.setVisible(False)
        row.addWidget(self.blind_banner)
        self.question = QLabel(s.title or s.task)
        self.question.setObjectName("dim")
        # the question wraps rather than widen the bar: beside an image pane the bar may be narrow
        self.question.setWordWrap(True)
        self.question.setMinimumWidth(min(160, self.question.sizeHint().width()))
        row.addWidget(self.question)
        self.buttons: dict[str, QPushButton] = {}
        for value, key in zip(s.values, s.keys):
            b = QPushButton(f"{s.title_of(value) if s.ordinal else value}  [{key}]")
            b.setCheckable(True)
            b.setObjectName(f"judge_{value}")
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.setToolTip(f"Record {s.title_of(value)} (key {key}); with auto-advance on, go to the next {noun}")
            if value in self.colors:
                b.setStyleSheet(f"QPushButton#judge_{value} {{ border: 2px solid {self.colors[value]}; "
                                "border-radius: 4px; padding: 2px 8px; }")
            b.clicked.connect(lambda _=False, v=value: self._record(v))
            row.addWidget(b)
            self.buttons[value] = b
        self.yours = QLabel("your label: —")
        self.yours.setObjectName("yourLabel")
        bold = QFont(self.yours.font())
        bold.setBold(True)
        widest = max(s.values, key=len, default="")
        self.yours.setMinimumWidth(QFontMetrics(bold).horizontalAdvance(f"your label: {widest}") + 8)
        row.addWidget(self.yours)
        self.prev_button = push_button("◀", controller.prev, f"Previous {noun} (Left)")
        self.next_button = push_button("▶", controller.next, f"Next {noun} without labelling (Right)")
        self.undo_button = push_button("Undo", controller.undo, "Undo the last label (Ctrl+Z)")
        self.redo_button = push_button("Redo", controller.redo, "Redo (Ctrl+Shift+Z)")
        self.auto = QCheckBox("auto-advance")
        self.auto.setObjectName("autoAdvance")
        self.auto.setToolTip("Go to the next item after a key; turn off to stay (e.g. to write notes after the key)")
        self.auto.setChecked(_remembered_auto_advance())
        controller.auto_advance = self.auto.isChecked()
        self.auto.toggled.connect(self._auto_toggled)
        self.export_button = push_button(
            "Export labels…", lambda: self.export(),
            "Write the labels of this task (during a blind audit: only yours of this audit)", "exportLabels")
        for b in (self.prev_button, self.next_button):
            b.setMaximumWidth(b.fontMetrics().horizontalAdvance("◀") + 28)
        for w in (self.prev_button, self.next_button, self.undo_button, self.redo_button, self.auto):
            w.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            row.addWidget(w)
        from .instructions import InstructionsBox  # the task's instructions and examples, on demand

        self.instructions = InstructionsBox(controller, self)
        outer.addWidget(self.instructions)
        self.export_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.next_unlabelled_button = push_button(
            NEXT_UNLABELLED, controller.next_unlabelled,
            f"Go to the next {noun} you have not labelled in this queue, from the start again after its end "
            f"({NEXT_UNLABELLED_KEY_TEXT})", "nextUnlabelled")
        self.next_unlabelled_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        # no item shown (no audit set open, an image not found): what is missing and what may be recorded
        self.unshown_note = QLabel("")
        self.unshown_note.setObjectName("judgeUnshown")
        self.unshown_note.setVisible(False)
        outer.insertWidget(0, self.unshown_note, 0, Qt.AlignmentFlag.AlignLeft)
        # what the queue's blindness cannot hide (an audit plan of a precision: one outcome only)
        self.queue_note = QLabel("")
        self.queue_note.setObjectName("judgeQueueNote")
        self.queue_note.setWordWrap(True)
        self.queue_note.setVisible(False)
        outer.insertWidget(0, self.queue_note)
        self._unshown = ""
        self._unshown_allow: tuple[str, ...] = ()
        self._queue_shown = True  # False: the page shows no queue of the controller (no audit set open)
        row2 = QHBoxLayout()
        row2.setSpacing(8)
        outer.addLayout(row2)
        notes_col = QVBoxLayout()
        notes_col.setSpacing(0)
        head = QLabel("Notes (N):")
        notes_col.addWidget(head)
        self.notes_saved = QLabel("")
        self.notes_saved.setObjectName("notesSaved")
        notes_col.addWidget(self.notes_saved)
        notes_col.addWidget(self.instructions.toggle)  # beside the notes: the bar gets no higher
        notes_col.addStretch(1)
        row2.addLayout(notes_col)
        self.notes = NotesEdit(self)
        self.notes.setObjectName("notes")
        self.notes.setPlaceholderText("notes — N to write, Enter saves, Shift+Enter new line, Esc leaves")
        self.notes.setMinimumWidth(160)
        self.notes.editingFinished.connect(self.save_notes)
        self.notes.returnPressed.connect(self._notes_entered)
        self.notes.escape.connect(self._notes_escaped)
        row2.addWidget(self.notes, 1)
        side = QVBoxLayout()
        side.setSpacing(2)
        self.position = QLabel("")
        self.position.setObjectName("judgePosition")
        self.position.setMinimumWidth(170)
        side.addWidget(self.position)
        self.bar = QProgressBar()
        self.bar.setObjectName("judgeProgress")
        self.bar.setMinimumWidth(self.bar.fontMetrics().horizontalAdvance("00000 / 00000 labelled") + 24)
        self.bar.setMaximumWidth(self.bar.minimumWidth() + 40)
        self.bar.setTextVisible(True)
        side.addWidget(self.bar)
        # the end of the queue with items left: how many, and the way back to them
        self.end_note = QLabel("")
        self.end_note.setObjectName("queueEnd")
        self.end_note.setTextFormat(Qt.TextFormat.RichText)
        self.end_note.setWordWrap(True)
        self.end_note.setMaximumWidth(self.bar.maximumWidth() + 60)
        self.end_note.setVisible(False)
        side.addWidget(self.end_note)
        # side by side: the bar stays low enough for a small screen's image above it
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        buttons.addWidget(self.next_unlabelled_button)
        buttons.addWidget(self.export_button)
        side.addLayout(buttons)
        side.addStretch(1)
        row2.addLayout(side)
        self._saved_timer = QTimer(self)
        self._saved_timer.setSingleShot(True)
        self._saved_timer.setInterval(2500)
        self._saved_timer.timeout.connect(lambda: self.notes_saved.setText(""))
        self._error = ""
        self._ended = False
        controller.on_leave.append(self.save_notes)  # type: ignore[arg-type]  # its bool is not read
        controller.changed.connect(self.refresh)
        controller.moved.connect(self._load_notes)
        controller.queue_changed.connect(self.refresh)
        controller.save_failed.connect(self._save_failed)
        controller.finished_queue.connect(self._queue_ended)
        controller.moved.connect(self._not_ended)
        controller.queue_changed.connect(self._not_ended)
        self.refresh()

    # ---- notes ------------------------------------------------------------------------------------
    def _load_notes(self, _index: int = -1) -> None:
        self.notes.blockSignals(True)
        self.notes.setText(self.c.current_state[1] or "")
        self.notes.blockSignals(False)
        self.refresh()

    def save_notes(self) -> bool:
        """Save the notes typed here (a bar that is not shown has none typed: another page's bar
        over the same controller saves its own)."""
        if self.c.current_index < 0 or not (self.isVisible() or self.notes.hasFocus()):
            return False
        saved = self.c.save_notes(self.notes.text())
        if saved:
            self.notes_saved.setText("✓ saved")
            self.notes_saved.setToolTip("the notes are saved with this item's label")
            self._saved_timer.start()
            self._message("notes saved")
        return saved

    def focus_notes(self) -> None:
        """N: the cursor at the end of the note (a note is never selected, so typing adds to it)."""
        if self.notes.isEnabled():
            self.notes.focus_at_end()

    def _hand_back(self) -> None:
        target = self.focus_target or self.window()
        self.notes.blockSignals(True)  # saved already: leaving must not save twice
        target.setFocus(Qt.FocusReason.OtherFocusReason)
        self.notes.blockSignals(False)

    def _notes_entered(self) -> None:
        self.save_notes()
        self._hand_back()

    def _notes_escaped(self) -> None:
        self.save_notes()
        self._hand_back()

    def _message(self, text: str) -> None:
        self.c._message(text)

    # ---- keys and buttons -------------------------------------------------------------------------
    def _record(self, value: str) -> None:
        if self._unshown and value not in self._unshown_allow:
            self._message(self.unshown_text() + " — nothing was recorded")
            return
        self.c.record(value, notes=self.notes.text())

    def record_value(self, value: str) -> None:
        """Record ``value`` as its key does (the Label menu's entries): not where no item is shown."""
        self._record(value)

    # ---- no item shown ----------------------------------------------------------------------------
    def set_unshown(self, reason: str, allow: Sequence[str] = (), *, queue: bool = True) -> None:
        """The page shows no item to judge (``reason``: what is missing, e.g. "no image"; "":
        the item is shown). While it is set, the keys and buttons record nothing but the values
        in ``allow`` (a value the auditor may give without seeing the item, e.g. UNDECIDABLE),
        and the bar says so. ``queue`` False: the page shows none of the controller's queue
        either (an audit page with no set open): the bar hides its place and progress, and the
        page's keys neither move, undo nor redo."""
        allow = tuple(self.c.scheme.validate(v) for v in allow) if reason else ()
        queue = queue or not reason
        if (reason, allow, queue) == (self._unshown, self._unshown_allow, self._queue_shown):
            return
        self._unshown, self._unshown_allow, self._queue_shown = reason, allow, queue
        self.refresh()

    @property
    def queue_shown(self) -> bool:
        """The page shows the controller's queue (its keys move on it, undo and redo)."""
        return self._queue_shown

    def queue_key(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """A key that moves on the queue, undoes or redoes: only where the page shows the queue."""
        def act() -> Any:
            if self._queue_shown:
                return fn()
            self._message(self.unshown_text())
            return None
        return act

    @property
    def unshown(self) -> str:
        """What is missing ("" when the item is shown)."""
        return self._unshown

    def unshown_text(self) -> str:
        """One line: what is missing and what may still be recorded."""
        if not self._unshown:
            return ""
        s = self.c.scheme
        if not self._unshown_allow:
            return f"{self._unshown}: nothing can be recorded"
        keys = " or ".join(k for v, k in zip(s.values, s.keys) if v in self._unshown_allow)
        return f"{self._unshown}: only {keys} can be recorded"

    # ---- the end of the queue ---------------------------------------------------------------------
    def _queue_ended(self) -> None:
        self._ended = True
        self.refresh()

    def _not_ended(self, *_: Any) -> None:
        if self._ended:
            self._ended = False
            self.refresh()

    def _auto_toggled(self, on: bool) -> None:
        from ..project_dialogs import settings

        self.c.auto_advance = bool(on)
        settings().setValue("auto_advance", bool(on))

    def _save_failed(self, message: str) -> None:
        """Shown where the annotator looks until the next label is saved (the status bar fades)."""
        self._error = message
        self.refresh()

    def refresh(self) -> None:
        c = self.c
        value, notes = c.current_state
        if not self.notes.hasFocus() and self.notes.text() != (notes or ""):
            self.notes.blockSignals(True)
            self.notes.setText(notes or "")
            self.notes.blockSignals(False)
        if c.last_error:
            self.yours.setText("NOT SAVED — " + c.last_error.split(" (")[0].split(";")[0])
            self.yours.setToolTip(c.last_error)
            self.yours.setStyleSheet("color: #ff6b6b; font-weight: bold;")
        elif value is None:
            self.yours.setText("your label: —")
            self.yours.setToolTip("")
            self.yours.setStyleSheet("")
        else:
            self.yours.setText(f"your label: {value}")
            self.yours.setToolTip(c.scheme.title_of(value))
            color = self.colors.get(value)
            self.yours.setStyleSheet(f"color: {color}; font-weight: bold;" if color else "font-weight: bold;")
        p = c.state.project
        ro = p is None or p.read_only
        has = c.current_index >= 0
        for v, b in self.buttons.items():
            b.setChecked(v == value)
            b.setEnabled(has and not ro and (not self._unshown or v in self._unshown_allow))
        q = self._queue_shown
        self.notes.setEnabled(has and not ro and q)  # no note for an item the page does not show
        self.unshown_note.setText(self.unshown_text())
        self.unshown_note.setVisible(bool(self._unshown) and has)
        note = c.audit.note if c.audit is not None else ""
        self.queue_note.setText(note)
        self.queue_note.setVisible(bool(note) and q)
        self.undo_button.setEnabled(q and bool(c.undo_stack))
        self.redo_button.setEnabled(q and bool(c.redo_stack))
        self.prev_button.setEnabled(q and has)
        self.next_button.setEnabled(q and has)
        for w in (self.position, self.bar, self.next_unlabelled_button):
            w.setVisible(q)
        done, total = c.progress()
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        a = c.audit
        part = f" · {c.state.annotator or 'your'}'s part of {c.core.whole_size}" \
            if a is not None and a.overlap and c.state.annotator else ""
        self.bar.setFormat(f"{done} / {total} labelled{part}")  # an overlap set: the rater's part
        self.next_unlabelled_button.setEnabled(done < total)
        self.end_note.setVisible(self._ended and q)
        if self._ended:
            self.end_note.setText(f"<b>End of the queue:</b> {done:,} of {total:,} labelled" + (
                f" — {total - done:,} left: <b>{NEXT_UNLABELLED}</b> ({NEXT_UNLABELLED_KEY_TEXT})"
                if done < total else ""))
        self.position.setText(self._position_text(total))
        vis = c.visibility()
        rc = c.is_recheck()
        hidden = not (vis.outcome and vis.own_earlier and vis.others)
        self.blind_banner.setVisible(hidden)
        self.blind_banner.setText("RE-CHECK" if rc else "BLIND AUDIT" if c.audit is not None else "BLIND")
        self.blind_banner.setToolTip(("A consistency re-check: label it afresh. " if rc else "")
                                     + vis.describe().capitalize())

    def _position_text(self, total: int) -> str:
        c = self.c
        if not total:
            return "no items"
        if not c.on_queue():
            return f"not in the queue ({total:,} queued)" if c.current_index >= 0 else ""
        if c.core.plain:
            return f"{self.noun} {c.pos + 1:,} of {total:,}"
        rc = "  (re-check)" if c.is_recheck() else ""
        return f"item {c.pos + 1:,} of {total:,}{rc}"

    # ---- export -----------------------------------------------------------------------------------
    def export(self, path: str | None = None) -> int:
        asked = not path  # the save dialog asks before it lets an existing file be replaced
        if not path:
            from ..project_dialogs import exports_folder

            start = exports_folder(self.c.state.project) / f"{self.c.scheme.task}.csv"
            path, _ = QFileDialog.getSaveFileName(self, "Export labels", str(start), self.export_filter)
        if not path:
            return 0
        try:
            n = self.exporter(path, asked) if self.exporter is not None else self.c.export_csv(path, asked)
        except Exception as e:  # noqa: BLE001 - said in the status bar, the window stays up
            self._message(f"labels not exported: {e}")
            return 0
        self._message(f"exported {n} label(s) to {path}")
        return n


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------

class _Shown(QObject):
    """Enables a page's shortcuts while the page is shown (two pages' P never clash), and gives
    the page the keys as it is shown (a text field elsewhere, or one the window chose, keeps
    none: the keys label at once after a tab or page switch)."""

    def __init__(self, page: QWidget, shortcuts: list[QShortcut]) -> None:
        super().__init__(page)
        self.page = page
        self.shortcuts = shortcuts
        if page.focusPolicy() == Qt.FocusPolicy.NoFocus and page.focusProxy() is None:
            page.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        page.installEventFilter(self)
        self.sync()

    def sync(self) -> None:
        on = self.page.isVisible()
        for sc in self.shortcuts:
            sc.setEnabled(on)

    def eventFilter(self, obj: QObject, e: QEvent) -> bool:  # noqa: N802
        if obj is self.page and e.type() in (QEvent.Type.Show, QEvent.Type.Hide):
            self.sync()
            if e.type() == QEvent.Type.Show:
                from PySide6.QtWidgets import QApplication

                fw = QApplication.focusWidget()
                if fw is None or not self.page.isAncestorOf(fw) or _typing():
                    self.page.setFocus(Qt.FocusReason.OtherFocusReason)
        return False


def _typing() -> bool:
    """A text field has the keys (a note, a search, a spin box): single-letter keys are text."""
    from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox

    w = QApplication.focusWidget()
    if w is None or not w.isVisible():
        return False
    if isinstance(w, (QLineEdit, QPlainTextEdit, QAbstractSpinBox)):
        return True
    return isinstance(w, QComboBox) and w.isEditable()


def install_shortcuts(page: QWidget, controller: JudgeController, bar: JudgeBar,
                      extra: Sequence[tuple[str, Callable[[], Any], str]] = ()) -> list[QShortcut]:
    """Bind the scheme's keys (record), N (notes), ← / → (previous / next), Shift+→ (next
    unlabelled) and Ctrl+Z / Ctrl+Shift+Z on a page, plus ``extra`` (key, action, what it does).
    They act while the page is shown, whatever has the focus, except while typing in a text
    field; each is recorded for the F1 sheet and the Label menu (`ui.shortcuts.bind`)."""
    from ..shortcuts import bind

    out: list[QShortcut] = []
    method = controller.scheme.task.split(".")[0]

    def add(seq: str, fn: Callable[[], Any], help: str, group: str, text: str = "") -> None:
        out.append(bind(page, seq, fn, help, group, method, text, unless=_typing))

    s = controller.scheme
    for value, key in zip(s.values, s.keys):
        name = s.title_of(value) if s.ordinal else value  # as its button says
        # the lambda binds the value by default
        add(key, lambda v=value: bar._record(v),  # type: ignore[misc]
            f"Record {name} and go to the next", "Label", s.title_of(value))
    add("N", bar.focus_notes, "Put the cursor in the notes field (Enter saves them)", "Label", "Edit notes")
    add("Ctrl+Z", bar.queue_key(controller.undo), "Undo your last label (a compensating event is recorded)",
        "Label", "Undo label")
    add("Ctrl+Shift+Z;Ctrl+Y", bar.queue_key(controller.redo), "Redo the label you undid", "Label", "Redo label")
    add("Right", bar.queue_key(controller.next), "Next item of the queue (without labelling)", "Navigate", "Next")
    add("Left", bar.queue_key(controller.prev), "Previous item of the queue", "Navigate", "Previous")
    add(NEXT_UNLABELLED_KEY, bar.queue_key(controller.next_unlabelled),
        "The next item you have not labelled (after the end of the queue: from its start)", "Navigate",
        NEXT_UNLABELLED)
    for seq, fn, help in extra:
        add(seq, fn, help, "Navigate")
    page._judge_keys = _Shown(page, out)  # type: ignore[attr-defined]
    return out
