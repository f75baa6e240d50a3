"""Keyboard judgements over any method's label scheme: a controller and the bar that shows it.

`JudgeController` walks a queue of targets (pairs, triplet images, test images, ...) and writes
one label event per key into the project's label log (task and target kind from the
`LabelScheme`), committed before the key press returns. An event carries the whole (value,
notes) state of the target for the annotator, so the latest event is the truth: saving notes
repeats the current value, and undo appends a compensating event (events are never deleted).
Targets marked as consistency re-checks are written with source "recheck" and show nothing of
the earlier answer. A write that fails (a full disk, a read-only project) says so and keeps the
item; no acknowledged label is lost.

`JudgeBar` is the bar a method page puts under its view: one button per value with its key,
a multi-line notes box, "item i of n" with a progress bar, undo / redo, auto-advance, and an
export of the task's labels. `install_shortcuts(page)` binds the scheme's keys, ←/→ and
Ctrl+Z / Ctrl+Shift+Z on a page.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workstation.evaluation.base import LabelScheme

LabelState = tuple[str | None, str | None]  # (value, notes)


@dataclass
class _Change:
    pos: int
    target: str
    before: LabelState
    after: LabelState
    source: str


def csv_cell(value: Any) -> str:
    """A cell as spreadsheets should read it: text starting with = + - @ or a control character is
    prefixed with ' so it is shown, not evaluated."""
    s = "" if value is None else str(value)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


class JudgeController(QObject):
    committed = Signal(int, str)  # labels committed this session, target id
    changed = Signal()  # position, current label, undo availability or progress changed
    moved = Signal(int)  # the queue position changed
    finished_queue = Signal()

    def __init__(self, scheme: LabelScheme, state: Any, ask_annotator: Callable[[], str | None] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.scheme = scheme
        self.state = state  # AppState: project, annotator, set_annotator, message
        self.ask_annotator = ask_annotator
        self.queue: list[str] = []
        self.recheck: list[bool] = []
        self.pos = -1
        self.auto_advance = True
        self.undo_stack: list[_Change] = []
        self.redo_stack: list[_Change] = []
        self.n_committed = 0
        self.current_state: LabelState = (None, None)
        self._done: dict[str, bool] = {}
        self._key_count: dict[str, int] | None = None  # queue key -> how often it is queued (progress)
        self._n_done: int | None = None  # cached progress count, kept in step with each label
        self.on_leave: list[Callable[[], None]] = []  # called before the position changes (save notes)

    # ---- queue ---------------------------------------------------------------------------------
    def set_queue(self, targets: Sequence[str], start: int = 0, recheck: Sequence[bool] | None = None) -> None:
        self._leave()
        self.queue = [str(t) for t in targets]
        self.recheck = list(recheck) if recheck is not None else [False] * len(self.queue)
        self._key_count = None
        self.undo_stack.clear()
        self.redo_stack.clear()
        self.reload()
        self.pos = -1
        if self.queue:
            self._set_pos(min(max(start, 0), len(self.queue) - 1))
        else:
            self.current_state = (None, None)
            self.moved.emit(-1)
            self.changed.emit()

    @property
    def current(self) -> str | None:
        return self.queue[self.pos] if 0 <= self.pos < len(self.queue) else None

    def is_recheck(self) -> bool:
        return 0 <= self.pos < len(self.recheck) and bool(self.recheck[self.pos])

    def _set_pos(self, pos: int) -> None:
        self.pos = pos
        self.current_state = self.latest(self.queue[pos], recheck=self.is_recheck())
        self.moved.emit(pos)
        self.changed.emit()

    def go(self, pos: int) -> None:
        if not self.queue:
            return
        pos = min(max(pos, 0), len(self.queue) - 1)
        if pos != self.pos:
            self._leave()
            self._set_pos(pos)

    def next(self) -> None:
        if self.pos + 1 >= len(self.queue):
            self._leave()
            if self.queue:
                self.finished_queue.emit()
                self._message("end of the queue")
            return
        self.go(self.pos + 1)

    def prev(self) -> None:
        self.go(self.pos - 1)

    def _leave(self) -> None:
        for cb in self.on_leave:
            cb()

    # ---- reading ---------------------------------------------------------------------------------
    def reload(self) -> None:
        """Re-read which queue targets carry a value of this annotator (progress)."""
        self._done = {}
        self._n_done = None
        p, who = self.state.project, self.state.annotator
        if p is None or not who:
            return
        for e in p.latest_label_events(self.scheme.task, who):
            key = f"{e.target_id}|{'r' if (e.source or '') == 'recheck' else ''}"
            self._done[key] = e.value is not None

    def latest(self, target: str, recheck: bool = False) -> LabelState:
        """The annotator's latest (value, notes) of a target (of its re-check pass, for a re-check)."""
        p, who = self.state.project, self.state.annotator
        if p is None or not who:
            return (None, None)
        out: LabelState = (None, None)
        for e in p.label_events(task=self.scheme.task, target_id=target):
            if e.annotator == who and ((e.source or "") == "recheck") == recheck:
                out = (e.value, e.notes)
        return out

    def _queue_keys(self) -> dict[str, int]:
        if self._key_count is None:
            counts: dict[str, int] = {}
            for i, t in enumerate(self.queue):
                key = f"{t}|{'r' if i < len(self.recheck) and self.recheck[i] else ''}"
                counts[key] = counts.get(key, 0) + 1
            self._key_count = counts
            self._n_done = None
        return self._key_count

    def progress(self) -> tuple[int, int]:
        """(targets of the queue with a value of this annotator, queue length): counted once per
        queue or reload, then kept in step with each label (not a loop over the queue per call)."""
        keys = self._queue_keys()
        if self._n_done is None:
            self._n_done = sum(n for k, n in keys.items() if self._done.get(k))
        return self._n_done, len(self.queue)

    def _mark_done(self, key: str, done: bool) -> None:
        was = bool(self._done.get(key))
        self._done[key] = done
        if self._n_done is not None and self._key_count is not None and was != done:
            self._n_done += (1 if done else -1) * self._key_count.get(key, 0)

    # ---- writing ---------------------------------------------------------------------------------
    def _message(self, text: str) -> None:
        msg = getattr(self.state, "message", None)
        if msg is not None:
            msg.emit(text)

    def _writable(self) -> bool:
        p = self.state.project
        if p is None or self.current is None:
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
            self.reload()
        return True

    def _write(self, target: str, new: LabelState, source: str) -> bool:
        try:
            self.state.project.add_label_event(self.scheme.task, self.scheme.target, target, self.state.annotator,
                                               new[0], notes=new[1], source=source)
        except Exception as e:  # noqa: BLE001 - a failed write must not take the window down or lose the item
            text = str(e)
            full = "No space left" in text or "disk is full" in text.lower() or "ENOSPC" in text
            self._message(("disk full — the label was not saved; free some space and press the key again"
                           if full else f"the label was not saved: {text}"))
            return False
        self._mark_done(f"{target}|{'r' if source == 'recheck' else ''}", new[0] is not None)
        if target == self.current:
            self.current_state = new
        return True

    def record(self, value: str, notes: str | None = None) -> bool:
        """Commit ``value`` (with the notes typed) for the current target; go on when auto-advancing."""
        value = self.scheme.validate(value)
        if not self._writable():
            return False
        target = self.current
        assert target is not None
        notes = (notes if notes is not None else self.current_state[1]) or None
        before = self.current_state
        source = "recheck" if self.is_recheck() else "ui"
        if not self._write(target, (value, notes), source):
            return False
        self.undo_stack.append(_Change(self.pos, target, before, (value, notes), source))
        self.redo_stack.clear()
        self.n_committed += 1
        self.committed.emit(self.n_committed, target)
        if os.environ.get("WORKSTATION_ACK"):
            print(f"ACK {self.n_committed} {self.scheme.task} {target}", flush=True)
        self.changed.emit()
        if self.auto_advance:
            self.next()
        return True

    def save_notes(self, text: str) -> bool:
        """Save the current target's notes if they changed (with its current value)."""
        text = text.strip() or None
        if self.current is None or text == (self.current_state[1] or None) or not self._writable():
            return False
        before = self.current_state
        source = "recheck" if self.is_recheck() else "ui"
        if not self._write(self.current, (before[0], text), source):
            return False
        self.undo_stack.append(_Change(self.pos, self.current, before, (before[0], text), source))
        self.redo_stack.clear()
        self.changed.emit()
        return True

    def undo(self) -> bool:
        return self._step(self.undo_stack, self.redo_stack, back=True)

    def redo(self) -> bool:
        return self._step(self.redo_stack, self.undo_stack, back=False)

    def _step(self, src: list[_Change], dst: list[_Change], back: bool) -> bool:
        if not src or self.state.project is None or self.state.project.read_only:
            return False
        ch = src[-1]
        if 0 <= ch.pos < len(self.queue) and self.queue[ch.pos] == ch.target and ch.pos != self.pos:
            self._leave()
            self._set_pos(ch.pos)
        target_state = ch.before if back else ch.after
        if not self._write(ch.target, target_state, ch.source):
            return False
        src.pop()
        dst.append(ch)
        self._message(f"{'undone' if back else 'redone'}: {ch.target} is "
                      f"{self.scheme.title_of(target_state[0]) if target_state[0] else 'unlabelled'}")
        self.changed.emit()
        return True

    # ---- export ------------------------------------------------------------------------------------
    def export_csv(self, path: str | Path) -> int:
        """Write every annotator's latest label of this task as CSV (spreadsheet-safe cells)."""
        from workstation.util.atomic import atomic_path

        p = self.state.project
        rows = p.latest_label_events(self.scheme.task) if p is not None else []
        with atomic_path(path) as tmp:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(["task", "target_kind", "target_id", "annotator", "value", "notes", "created_at",
                            "source"])
                for e in rows:
                    w.writerow([csv_cell(x) for x in (e.task, e.target_kind, e.target_id, e.annotator, e.value,
                                                      e.notes, e.created_at, e.source)])
        return len(rows)


class JudgeBar(QWidget):
    """The bar under a method's view: value buttons, notes, position, progress, undo / redo."""

    def __init__(self, controller: JudgeController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.c = controller
        s = controller.scheme
        self.setObjectName("judgeBar")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        row = QHBoxLayout()
        self.question = QLabel(s.title or s.task)
        self.question.setObjectName("dim")
        row.addWidget(self.question)
        self.buttons: dict[str, QPushButton] = {}
        for value, key in zip(s.values, s.keys):
            b = QPushButton(f"{s.title_of(value)}  [{key}]")
            b.setCheckable(True)
            b.setObjectName(f"judge_{value}")
            b.clicked.connect(lambda _=False, v=value: self._record(v))
            row.addWidget(b)
            self.buttons[value] = b
        row.addStretch(1)
        self.undo_button = QPushButton("Undo")
        self.undo_button.clicked.connect(controller.undo)
        self.redo_button = QPushButton("Redo")
        self.redo_button.clicked.connect(controller.redo)
        self.auto = QCheckBox("auto-advance")
        self.auto.setChecked(controller.auto_advance)
        self.auto.setToolTip("Go to the next item after a key; turn off to write the note after the key")
        self.auto.toggled.connect(lambda on: setattr(controller, "auto_advance", bool(on)))
        self.export_button = QPushButton("Export labels…")
        self.export_button.clicked.connect(self.export)
        for w in (self.undo_button, self.redo_button, self.auto, self.export_button):
            row.addWidget(w)
        lay.addLayout(row)
        row2 = QHBoxLayout()
        self.notes = QPlainTextEdit()
        self.notes.setPlaceholderText("notes (saved when you move on, or with Ctrl+Enter)")
        self.notes.setFixedHeight(54)
        row2.addWidget(self.notes, 1)
        side = QVBoxLayout()
        self.position = QLabel("")
        self.position.setObjectName("judgePosition")
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.bar.setFormat("%v / %m labelled")
        side.addWidget(self.position)
        side.addWidget(self.bar)
        row2.addLayout(side)
        lay.addLayout(row2)
        save = QShortcut(QKeySequence("Ctrl+Return"), self.notes)
        save.activated.connect(self.save_notes)
        controller.on_leave.append(self.save_notes)
        controller.changed.connect(self.refresh)
        self.refresh()

    def _record(self, value: str) -> None:
        self.c.record(value, notes=self.notes.toPlainText())

    def save_notes(self) -> None:
        if self.c.current is not None:
            self.c.save_notes(self.notes.toPlainText())

    def refresh(self) -> None:
        c = self.c
        value, notes = c.current_state
        for v, b in self.buttons.items():
            b.setChecked(v == value)
            b.setEnabled(c.current is not None)
        if not self.notes.hasFocus():
            self.notes.setPlainText(notes or "")
        self.undo_button.setEnabled(bool(c.undo_stack))
        self.redo_button.setEnabled(bool(c.redo_stack))
        done, total = c.progress()
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        recheck = "  (re-check)" if c.is_recheck() else ""
        self.position.setText(f"item {c.pos + 1} of {total}{recheck}" if total else "no items")

    def export(self, path: str | None = None) -> int:
        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Export labels", f"{self.c.scheme.task}.csv", "CSV (*.csv)")
        if not path:
            return 0
        try:
            n = self.c.export_csv(path)
        except OSError as e:
            self.c._message(f"cannot write {path}: {e.strerror or e}")
            return 0
        self.c._message(f"exported {n} label(s) to {path}")
        return n


def install_shortcuts(page: QWidget, controller: JudgeController, bar: JudgeBar) -> list[QShortcut]:
    """Bind the scheme's keys (record), ← / → (previous / next) and Ctrl+Z / Ctrl+Shift+Z on a page.
    The keys work while focus is anywhere in the page except the notes box."""
    out: list[QShortcut] = []

    def add(seq: str, fn: Callable[[], Any]) -> None:
        sc = QShortcut(QKeySequence(seq), page)
        sc.setContext(Qt.WidgetWithChildrenShortcut)
        sc.activated.connect(lambda: None if bar.notes.hasFocus() else fn())
        out.append(sc)

    for value, key in zip(controller.scheme.values, controller.scheme.keys):
        add(key, lambda v=value: bar._record(v))
    add("Right", controller.next)
    add("Left", controller.prev)
    add("Ctrl+Z", controller.undo)
    add("Ctrl+Shift+Z", controller.redo)
    return out
