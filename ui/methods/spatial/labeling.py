"""Labelling: P / F / U record the auditor's verdict and move on (auto-advance, can be turned
off); multi-line notes; undo / redo; "item i of n" and progress; label export.

`LabelController` holds the logic (no widgets of its own): every label is one event written
through `AppState.add_label`, committed before the key press returns. An event carries the
whole state of (verdict, notes) for its sample and annotator, so the latest event is the
truth: saving notes repeats the current verdict, and undo appends a compensating event that
restores the previous (verdict, notes) — events are never deleted. Items of an audit set that
come back as consistency re-checks are written with source "recheck", so the first label and
the re-check label can be compared (`self_agreement`).

`LabelingPanel` is the bar under the pair viewer: verdict buttons, the multi-line notes box,
"item i of n" with a progress bar, undo / redo, auto-advance, Export labels… and the blind-mode
banner.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QCheckBox,
    QCompleter,
    QDialog,
    QDialogButtonBox,
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

from workstation.methods.spatial.store import LABELS_RELATION, SpatialStore
from workstation.methods.spatial.types import VERDICTS
from workstation.types import WorkstationError

from ... import theme
from ...state import AppState, RowQueue

LabelState = tuple[str | None, str | None]  # (verdict, notes)
log = logging.getLogger(__name__)


@dataclass
class Change:
    row: int
    before: LabelState
    after: LabelState
    source: str
    queue_pos: int


def not_saved_message(e: BaseException) -> str:
    """What the annotator reads when a label could not be written."""
    from workstation.util.output import describe_os_error, is_disk_full

    if is_disk_full(e):
        return "disk full — the label was not saved (every earlier label is safe); free some space and press the key again"
    text = str(e).lower()
    if "read-only" in text or "permission" in text:
        return "the project folder cannot be written — the label was not saved (earlier labels are safe)"
    return f"the label was not saved ({describe_os_error(e)}); earlier labels are safe"


class LabelController(QObject):
    committed = Signal(int, str)  # number of labels committed this session, sample id
    state_changed = Signal()  # current label state / progress / undo availability changed
    finished_queue = Signal()
    save_failed = Signal(str)  # a label could not be written (the message says why)

    def __init__(self, state: AppState, ask_annotator: Callable[[], str | None] | None = None) -> None:
        super().__init__()
        self.state = state
        self.ask_annotator = ask_annotator
        self.undo_stack: list[Change] = []
        self.redo_stack: list[Change] = []
        self.n_committed = 0
        self.last_error = ""  # why the last label was not saved ("" when it was)
        self.recheck: np.ndarray = np.zeros(0, bool)  # per queue position: a consistency re-check
        self.current_state: LabelState = (None, None)
        self.notes_provider: Callable[[], str] | None = None  # the notes field's text
        self.on_move: list[Callable[[], None]] = []  # called before leaving a sample (save notes)
        self.auto_advance = True  # P / F / U go on to the next item
        # per dataset row: the current annotator's latest first-pass / re-check label has a verdict
        self._done = np.zeros((2, 0), bool)
        self._done_version = 0  # bumped whenever _done changes (progress caches its count on it)
        self._progress: tuple[Any, int, tuple[int, int]] | None = None
        self._queue_arrays: tuple[Any, np.ndarray, np.ndarray] | None = None
        state.current_changed.connect(self._on_current)
        state.project_changed.connect(self._on_project)
        state.queue_changed.connect(self._on_queue)

    # ---- reading label state ----------------------------------------------------------------------
    def label_state(self, row: int, recheck: bool = False) -> LabelState:
        """Latest (verdict, notes) of the current annotator for the sample at `row`, of its
        first pass or (`recheck`) of its consistency re-check: a re-check shows nothing of the
        first answer, and the first pass is not changed by a re-check."""
        st = self.state
        if st.project is None or st.dataset is None or row < 0 or not st.annotator:
            return (None, None)
        sid = str(st.dataset.samples.sample_id[row])
        out: LabelState = (None, None)
        for r in SpatialStore(st.project).label_events(sid):
            if r.annotator != st.annotator or ((r.source or "") == "recheck") != recheck:
                continue
            out = (r.verdict, r.notes)
        return out

    def _on_project(self) -> None:
        self.undo_stack.clear()
        self.redo_stack.clear()
        self.recheck = np.zeros(0, bool)
        self._reload_done()
        self.state_changed.emit()

    def _on_queue(self) -> None:
        if len(self.recheck) != len(self.state.queue):
            self.recheck = np.zeros(len(self.state.queue), bool)
        self._queue_arrays = None
        self._reload_done()
        self.state_changed.emit()

    def _on_current(self, row: int) -> None:
        rc = bool(self.is_recheck())
        self.state.item_blind = rc  # re-checks come back blind
        self.current_state = self.label_state(row, recheck=rc)
        self.state_changed.emit()

    def _reload_done(self) -> None:
        """Whether each sample's latest first-pass / re-check label of the current annotator
        carries a verdict (progress counts these)."""
        st = self.state
        n = st.dataset.n if st.dataset is not None else 0
        self._done = np.zeros((2, n), bool)
        self._done_version += 1
        if st.project is None or st.dataset is None or not st.annotator:
            return
        q = ("SELECT sample_id, coalesce(source, '') = 'recheck' AS rc, arg_max_null(verdict, event_id) "
             f"FROM {LABELS_RELATION} WHERE annotator = ? GROUP BY ALL")
        found = st.project.con.execute(q, [st.annotator]).fetchall()
        idx = st.dataset.sample_index() if found else {}
        for sid, rc, v in found:
            r = idx.get(sid)
            if r is not None:
                self._done[int(bool(rc)), r] = v is not None

    def _is_done(self, row: int, recheck: bool) -> bool:
        return bool(self._done.shape[1] > row >= 0 and self._done[int(recheck), row])

    # ---- queue position ---------------------------------------------------------------------------
    @property
    def queue_pos(self) -> int:
        return self.state.queue_pos

    def is_recheck(self) -> bool:
        st = self.state
        return (0 <= st.queue_pos < len(self.recheck) and bool(self.recheck[st.queue_pos])
                and st.queue and st.queue[st.queue_pos] == st.current)

    def progress(self) -> tuple[int, int]:
        """(labelled, total) over the queue, or over all samples when there is no queue."""
        st = self.state
        if st.dataset is None:
            return (0, 0)
        if st.queue:
            qa = self._queue_arrays
            if qa is None or qa[0] is not st.queue:
                rows = st.queue.rows
                rc = np.zeros(len(rows), np.int8)
                k = min(len(self.recheck), len(rows))
                rc[:k] = self.recheck[:k]
                qa = self._queue_arrays = (st.queue, rows, rc)
            if self._done.shape[1] != st.dataset.n:
                self._reload_done()
            hit = self._progress
            if hit is not None and hit[0] is qa[1] and hit[1] == self._done_version:
                return hit[2]  # stepping through a long queue: the count is unchanged
            out = int(np.count_nonzero(self._done[qa[2], qa[1]])), len(st.queue)
            self._progress = (qa[1], self._done_version, out)
            return out
        return int(np.count_nonzero(st.human >= 0)), int(st.dataset.n)

    def go(self, pos: int) -> None:
        st = self.state
        if not st.queue:
            return
        pos = int(min(max(pos, 0), len(st.queue) - 1))
        self._leaving()
        st.queue_pos = pos
        if st.current == st.queue[pos]:
            st.current_changed.emit(st.current)  # same sample, another queue item (a re-check)
        else:
            st.set_current(st.queue[pos])

    def next(self) -> None:
        st = self.state
        if st.queue:
            if st.queue_pos + 1 >= len(st.queue):
                self._leaving()
                st.message.emit("end of the queue")
                self.finished_queue.emit()
                return
            self.go(st.queue_pos + 1)
        elif st.dataset is not None and st.current + 1 < st.dataset.n:
            self._leaving()
            st.set_current(st.current + 1)

    def prev(self) -> None:
        st = self.state
        if st.queue:
            self.go(st.queue_pos - 1)
        elif st.current > 0:
            self._leaving()
            st.set_current(st.current - 1)

    def goto_sample(self, sample_id: str) -> bool:
        """Jump to a sample id (or the only one starting with it); its queue position if queued."""
        st = self.state
        if st.dataset is None:
            return False
        sample_id = sample_id.strip()
        idx = st.dataset.sample_index()
        row = idx.get(sample_id, -1)
        if row < 0:
            matches = [i for s, i in idx.items() if s.startswith(sample_id)] if sample_id else []
            if len(matches) != 1:
                st.message.emit(f"no sample {sample_id!r}" if not matches else
                                f"{len(matches)} samples start with {sample_id!r}; type more of the id")
                return False
            row = matches[0]
        self._leaving()
        if row in st.queue:
            st.queue_pos = st.queue.index(row)
        st.set_current(row)
        return True

    def _leaving(self) -> None:
        for cb in self.on_move:
            cb()

    # ---- writing ---------------------------------------------------------------------------------
    def _writable(self) -> bool:
        st = self.state
        if st.project is None or st.dataset is None or st.current < 0:
            return False
        if st.project.read_only:
            st.message.emit("this project is open read-only: labels cannot be saved")
            return False
        if not st.annotator:
            name = self.ask_annotator() if self.ask_annotator else None
            if not name or not name.strip():
                st.message.emit("an annotator name is needed before labelling")
                return False
            st.set_annotator(name)
            self._reload_done()
        return True

    def _write(self, row: int, new: LabelState, source: str, record: bool = True) -> bool:
        """Commit one label event; False (with a message, nothing changed) when it was not saved."""
        st = self.state
        before = self.label_state(row, recheck=source == "recheck") if row != st.current else self.current_state
        try:
            st.add_label(row, new[0], notes=new[1], source=source)
        except Exception as e:
            log.warning("a label was not saved: %s", e, exc_info=True)
            self.last_error = not_saved_message(e)
            st.message.emit(self.last_error)
            self.save_failed.emit(self.last_error)
            return False
        self.last_error = ""
        if self._done.shape[1] == st.dataset.n:
            self._done[int(source == "recheck"), row] = new[0] is not None
            self._done_version += 1
        if row == st.current:
            self.current_state = new
        if record:
            self.undo_stack.append(Change(row, before, new, source, st.queue_pos))
            self.redo_stack.clear()
        self.state_changed.emit()
        return True

    def record(self, verdict: str) -> bool:
        """P / F / U: commit this verdict (with the notes typed) and, when auto-advancing, go to
        the next item."""
        if verdict not in VERDICTS or not self._writable():
            return False
        st = self.state
        notes = self.notes_provider() if self.notes_provider else self.current_state[1]
        notes = notes or None
        row = st.current
        if not self._write(row, (verdict, notes), "recheck" if self.is_recheck() else "ui"):
            return False  # not saved: stay on this item, the message says why
        self.n_committed += 1
        self.committed.emit(self.n_committed, str(st.dataset.samples.sample_id[row]))
        if self.auto_advance:
            self.next()
        return True

    def save_notes(self, text: str) -> bool:
        """Save the notes of the current sample if they changed (with its current verdict)."""
        st = self.state
        text = text.strip() or None
        if st.project is None or st.current < 0 or text == (self.current_state[1] or None):
            return False
        if not self._writable():
            return False
        if not self._write(st.current, (self.current_state[0], text), "recheck" if self.is_recheck() else "ui"):
            return False
        st.message.emit("notes saved")
        return True

    def undo(self) -> bool:
        if not self.undo_stack or self.state.project is None or self.state.project.read_only:
            return False
        ch = self.undo_stack.pop()
        if not self._apply(ch, ch.before):
            self.undo_stack.append(ch)
            return False
        self.redo_stack.append(ch)
        self.state_changed.emit()  # the stacks changed after the write: Redo becomes available
        self.state.message.emit(f"undone: {self.state.dataset.samples.sample_id[ch.row]} is back to "
                                f"{ch.before[0] or 'unlabelled'}")
        return True

    def redo(self) -> bool:
        if not self.redo_stack or self.state.project is None or self.state.project.read_only:
            return False
        ch = self.redo_stack.pop()
        if not self._apply(ch, ch.after):
            self.redo_stack.append(ch)
            return False
        self.undo_stack.append(ch)
        self.state_changed.emit()
        self.state.message.emit(f"redone: {self.state.dataset.samples.sample_id[ch.row]} is "
                                f"{ch.after[0] or 'unlabelled'}")
        return True

    def _apply(self, ch: Change, target: LabelState) -> bool:
        st = self.state
        # show the sample whose label changes, at its queue position
        if st.queue and 0 <= ch.queue_pos < len(st.queue) and st.queue[ch.queue_pos] == ch.row:
            st.queue_pos = ch.queue_pos
        if st.current != ch.row:
            st.set_current(ch.row)
        ok = self._write(ch.row, target, ch.source, record=False)
        self.state_changed.emit()
        return ok

    # ---- audit queues ----------------------------------------------------------------------------
    def start_audit_set(self, audit_set_id: int) -> int:
        """Make an audit set the queue (blind as stored); returns its length."""
        st = self.state
        assert st.project is not None and st.dataset is not None
        items = st.project.audit_items(audit_set_id)
        meta = next((a for a in st.project.audit_sets() if a["audit_set_id"] == audit_set_id), None)
        idx = st.dataset.sample_index()
        rows, flags = [], []
        for sid, rc in items:
            if sid in idx:
                rows.append(idx[sid])
                flags.append(rc)
        self.recheck = np.asarray(flags, bool)
        self._queue_arrays = None
        st.set_queue(rows, blind=bool(meta["blind"]) if meta else True, audit_set_id=audit_set_id)
        # start at the first item not yet labelled
        for pos, row in enumerate(rows):
            if not self._is_done(row, bool(flags[pos])):
                if pos:
                    self.go(pos)
                break
        return len(rows)

    def set_plain_queue(self, rows: Sequence[int] | np.ndarray, start_row: int | None = None) -> None:
        st = self.state
        queue = rows if isinstance(rows, RowQueue) else RowQueue(rows)
        self.recheck = np.zeros(len(queue), bool)
        self._queue_arrays = None
        st.set_queue(queue, blind=False, audit_set_id=None)
        if start_row is not None and start_row in queue:
            self.go(queue.index(start_row))


def _remembered_auto_advance() -> bool:
    from ...project_dialogs import settings

    return str(settings().value("auto_advance", True)).lower() not in ("false", "0")


class GotoDialog(QDialog):
    """Ctrl+G: type a sample id (completion over all ids)."""

    def __init__(self, ids: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Go to sample")
        self.setObjectName("gotoDialog")
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("Sample id (or the start of one):"))
        self.edit = QLineEdit(self)
        self.edit.setObjectName("gotoEdit")
        self.edit.setMinimumWidth(380)
        comp = QCompleter(ids, self)
        comp.setCaseSensitivity(Qt.CaseInsensitive)
        comp.setFilterMode(Qt.MatchContains)
        self.edit.setCompleter(comp)
        # one Enter goes: a highlighted completion is taken, typed text is taken as it is
        comp.activated.connect(self._take_completion)
        self.edit.returnPressed.connect(self.accept)
        lay.addWidget(self.edit)
        bb = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)

    def _take_completion(self, text: str) -> None:
        self.edit.setText(text)
        self.accept()

    def value(self) -> str:
        return self.edit.text().strip()


class NotesEdit(QPlainTextEdit):
    """The multi-line notes box: Enter saves and hands the keys back to the viewer, Shift+Enter
    starts a new line, Escape reverts; leaving the box saves too. `text()` / `setText()` as a
    line edit's."""

    escape = Signal()
    returnPressed = Signal()
    editingFinished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)
        self.setLineWrapMode(QPlainTextEdit.WidgetWidth)
        self.setFixedHeight(self.fontMetrics().lineSpacing() * 3 + 12)

    def text(self) -> str:
        return self.toPlainText()

    def setText(self, text: str) -> None:
        self.setPlainText(text)

    def keyPressEvent(self, e: Any) -> None:
        if e.key() == Qt.Key_Escape:
            self.escape.emit()
            e.accept()
            return
        if e.key() in (Qt.Key_Return, Qt.Key_Enter) and not (e.modifiers() & Qt.ShiftModifier):
            self.editingFinished.emit()
            self.returnPressed.emit()
            e.accept()
            return
        super().keyPressEvent(e)

    def focusOutEvent(self, e: Any) -> None:
        super().focusOutEvent(e)
        self.editingFinished.emit()


class LabelingPanel(QWidget):
    """Verdict buttons, your label, ◀ ▶, undo / redo, auto-advance and label export on the first
    row; the multi-line notes box, "item i of n" and the progress bar on the second."""

    def __init__(self, state: AppState, controller: LabelController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.ctl = controller
        self.setObjectName("labelingPanel")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 4, 6, 4)
        outer.setSpacing(4)
        lay = QHBoxLayout()
        lay.setSpacing(8)
        outer.addLayout(lay)
        self.blind_banner = QLabel("BLIND AUDIT")
        self.blind_banner.setObjectName("blindBanner")
        self.blind_banner.setToolTip("The checker's verdict, confidence and colours are hidden")
        lay.addWidget(self.blind_banner)
        self.buttons: dict[str, QPushButton] = {}
        for v, key in (("PASS", "P"), ("FAIL", "F"), ("UNDECIDABLE", "U")):
            b = QPushButton(f"{v}  ({key})")
            b.setObjectName("verdictButton")
            b.setFocusPolicy(Qt.NoFocus)
            code = VERDICTS.index(v)
            b.setStyleSheet(f"QPushButton#verdictButton {{ border: 2px solid {theme.VERDICT_COLORS[code]}; "
                            f"border-radius: 4px; }}")
            b.setToolTip(f"Record {v} (key {key}); with auto-advance on, go to the next sample")
            b.clicked.connect(lambda _=False, vv=v: self.ctl.record(vv))
            self.buttons[v] = b
            lay.addWidget(b)
        self.yours = QLabel("your label: —")
        bold = QFont(self.yours.font())
        bold.setBold(True)  # the label is bold once set
        self.yours.setMinimumWidth(QFontMetrics(bold).horizontalAdvance("your label: UNDECIDABLE") + 8)
        lay.addWidget(self.yours)
        lay.addStretch(1)
        self.prev_button = QPushButton("◀")
        self.prev_button.setToolTip("Previous sample (Left)")
        self.prev_button.setFocusPolicy(Qt.NoFocus)
        self.prev_button.clicked.connect(self.ctl.prev)
        self.next_button = QPushButton("▶")
        self.next_button.setToolTip("Next sample without labelling (Right)")
        self.next_button.setFocusPolicy(Qt.NoFocus)
        self.next_button.clicked.connect(self.ctl.next)
        lay.addWidget(self.prev_button)
        lay.addWidget(self.next_button)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setToolTip("Undo the last label (Ctrl+Z)")
        self.undo_button.setFocusPolicy(Qt.NoFocus)
        self.undo_button.clicked.connect(self.ctl.undo)
        self.redo_button = QPushButton("Redo")
        self.redo_button.setToolTip("Redo (Ctrl+Shift+Z)")
        self.redo_button.setFocusPolicy(Qt.NoFocus)
        self.redo_button.clicked.connect(self.ctl.redo)
        lay.addWidget(self.undo_button)
        lay.addWidget(self.redo_button)
        self.auto = QCheckBox("auto-advance")
        self.auto.setObjectName("autoAdvance")
        self.auto.setFocusPolicy(Qt.NoFocus)
        self.auto.setToolTip("Go to the next sample after P / F / U; turn off to stay (e.g. to write notes after the key)")
        self.auto.setChecked(_remembered_auto_advance())
        controller.auto_advance = self.auto.isChecked()
        self.auto.toggled.connect(self._auto_toggled)
        lay.addWidget(self.auto)
        self.export_button = QPushButton("Export labels…")
        self.export_button.setObjectName("exportLabels")
        self.export_button.setFocusPolicy(Qt.NoFocus)
        self.export_button.setToolTip("Write every annotator's latest labels (CSV, SpatialBench-UC JSON or Parquet)")
        self.export_button.clicked.connect(lambda: self.export_labels())
        lay.addWidget(self.export_button)

        row2 = QHBoxLayout()
        row2.setSpacing(8)
        outer.addLayout(row2)
        row2.addWidget(QLabel("Notes (N):"), 0, Qt.AlignTop)
        self.notes = NotesEdit(self)
        self.notes.setObjectName("notes")
        self.notes.setPlaceholderText("notes on this sample — Enter saves, Shift+Enter starts a new line")
        self.notes.setMinimumWidth(160)
        self.notes.editingFinished.connect(self._notes_done)
        self.notes.returnPressed.connect(self._return_focus)
        self.notes.escape.connect(self._revert_notes)
        row2.addWidget(self.notes, 1)
        side = QVBoxLayout()
        self.position = QLabel("")
        self.position.setObjectName("labelPosition")
        self.position.setMinimumWidth(170)
        side.addWidget(self.position)
        self.progress = QProgressBar()
        self.progress.setObjectName("labelProgress")
        # one line for "12345 / 12345 labelled", whatever the font
        self.progress.setMinimumWidth(self.progress.fontMetrics().horizontalAdvance("00000 / 00000 labelled") + 24)
        self.progress.setMaximumWidth(self.progress.minimumWidth() + 40)
        self.progress.setTextVisible(True)
        side.addWidget(self.progress)
        side.addStretch(1)
        row2.addLayout(side)
        self.focus_target: QWidget | None = None
        controller.notes_provider = lambda: self.notes.text()
        controller.on_move.append(self._save_notes_now)
        controller.state_changed.connect(self.refresh)
        controller.save_failed.connect(self._save_failed)
        state.current_changed.connect(self._load_notes)
        state.queue_changed.connect(self.refresh)
        self.refresh()

    def _auto_toggled(self, on: bool) -> None:
        from ...project_dialogs import settings

        self.ctl.auto_advance = bool(on)
        settings().setValue("auto_advance", bool(on))

    def export_labels(self, path: str | None = None) -> int:
        """Export labels from where the labelling happens (as File → Export labels…)."""
        from .annotators import export_label_file

        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Export labels", "labels.csv",
                                                  "CSV (*.csv);;SpatialBench-UC JSON (*.json);;Parquet (*.parquet)")
        if not path:
            return 0
        try:
            n = export_label_file(self.state, path)
        except (WorkstationError, ValueError, OSError) as e:
            self.state.message.emit(f"labels not exported: {e}")
            return 0
        self.state.message.emit(f"exported {n} label(s) to {path}")
        return n

    def _load_notes(self, row: int) -> None:
        self.notes.blockSignals(True)
        self.notes.setText(self.ctl.current_state[1] or "")
        self.notes.blockSignals(False)
        self.refresh()

    def _save_notes_now(self) -> None:
        if self.state.current >= 0:
            self.ctl.save_notes(self.notes.text())

    def _notes_done(self) -> None:
        self.ctl.save_notes(self.notes.text())

    def _return_focus(self) -> None:
        if self.focus_target is not None:
            self.focus_target.setFocus()

    def _revert_notes(self) -> None:
        self.notes.setText(self.ctl.current_state[1] or "")
        self._return_focus()

    def focus_notes(self) -> None:
        self.notes.setFocus()
        self.notes.selectAll()

    def _save_failed(self, message: str) -> None:
        """Shown where the annotator looks until the next label is saved (the status bar fades)."""
        self.yours.setText("NOT SAVED — " + message.split(" (")[0].split(";")[0])
        self.yours.setToolTip(message)
        self.yours.setStyleSheet("color: #ff6b6b; font-weight: bold;")

    def refresh(self) -> None:
        st = self.state
        v, notes = self.ctl.current_state
        if not self.notes.hasFocus() and self.notes.text() != (notes or ""):
            self.notes.blockSignals(True)
            self.notes.setText(notes or "")
            self.notes.blockSignals(False)
        if v is None:
            self.yours.setText("your label: —")
            self.yours.setStyleSheet("")
        else:
            self.yours.setText(f"your label: {v}")
            self.yours.setStyleSheet(f"color: {theme.VERDICT_COLORS[VERDICTS.index(v)]}; font-weight: bold;")
        done, total = self.ctl.progress()
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done} / {total} labelled")
        if st.queue:
            rc = "  (re-check)" if self.ctl.is_recheck() else ""
            self.position.setText(f"item {st.queue_pos + 1} of {len(st.queue)}{rc}")
        elif st.current >= 0:
            self.position.setText(f"sample {st.current + 1} of {st.dataset.n if st.dataset else 0}")
        else:
            self.position.setText("")
        self.blind_banner.setVisible(bool(st.blind or st.item_blind))
        self.undo_button.setEnabled(bool(self.ctl.undo_stack))
        self.redo_button.setEnabled(bool(self.ctl.redo_stack))
        ro = st.project is None or st.project.read_only
        for b in self.buttons.values():
            b.setEnabled(not ro and st.current >= 0)
        self.notes.setEnabled(not ro and st.current >= 0)
