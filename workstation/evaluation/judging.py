"""Judging: a queue of one label task's targets, the annotator's labels on it, and the one
policy that says what a judging view may show.

Every method judges the same way: a `LabelScheme` (values, keys), a queue of targets (samples,
pairs, images), one label event per key in the project's label log, notes, undo / redo through
compensating events, and an annotator. `JudgingQueue` is that machine without Qt; the window's
`ui.widgets.judge.JudgeController` wraps it with signals.

**Passes.** What "your label" means depends on the pass the annotator is in:

* outside an audit set: the annotator's latest first-pass label of the target (whenever made);
* in an audit set, first pass: only the labels the annotator gave *in this audit set* — a label
  given before the set was drawn neither shows nor counts as done;
* a consistency re-check: only the annotator's re-check labels (source ``recheck``) of this set.

Undoing the first label of a target in an audit set writes a compensating event with source
``undo-restore``: it carries the annotator's standing label from before the pass (so the label
log's "latest event counts" still gives that label), while the pass reads it as "not labelled".

**Annotators.** Undo / redo history belongs to an annotator and an audit set: another annotator
on the same queue starts with an empty history, and an undo or redo only ever writes the current
annotator's own change back (never another annotator's value under their name). Each annotator
has their own place on a queue (`follow_annotator`: the place they left, else their first
unlabelled item) and their own "next unlabelled" (`next_unlabelled`). A re-check is the
annotator's own: a queue position that re-checks a target is passed over until the annotator has
labelled that target in the pass (`recheck_due`), so nobody is asked to "re-check" an item they
never saw.

**What may be shown** (`visibility`): a blind audit set hides the automated outcome (verdicts,
reasons, scores, confidences, and every colour, badge, count, filter or sort that follows from
them), the annotator's own labels from outside the pass and every other annotator's labels; a
re-check hides the same, in any audit set; a page's own blind switch (outside an audit set)
hides the outcome and the other annotators; an overlap set (several raters, each given their
items) hides every other rater's labels and the rater's own from outside the pass. Every view
asks; none decides on its own.

**Raters.** In an overlap set (`AuditInfo.assignment`) the queue of an annotator holds only the
items assigned to them (their first passes and their re-checks, in the set's order): `queue` is
that annotator's part of the set, made again when the annotator changes (`follow_annotator`);
an annotator who is not one of its raters has an empty queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .base import LabelScheme

#: a compensating event that gives back the standing label from before the pass (see above)
RESTORE = "undo-restore"
RECHECK = "recheck"

LabelState = tuple[str | None, str | None]  # (value, notes)
EMPTY: LabelState = (None, None)


# ---------------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Visibility:
    """What a judging view may show (True: shown)."""

    outcome: bool = True  # the automated outcome: verdicts, reasons, scores, confidences, their colours
    own_earlier: bool = True  # the annotator's own labels from outside the current pass
    others: bool = True  # other annotators' labels and notes

    @property
    def human(self) -> bool:
        """Any annotator's labels as a column, badge, filter or sort (the current pass's own
        label is shown by the judgement bar, not by these)."""
        return self.own_earlier and self.others

    @property
    def blind(self) -> bool:
        return not self.outcome

    def __and__(self, other: "Visibility") -> "Visibility":
        return Visibility(self.outcome and other.outcome, self.own_earlier and other.own_earlier,
                          self.others and other.others)

    def describe(self) -> str:
        """One line for a banner or tooltip: what is hidden."""
        hidden = [w for w, on in (("the automated outcome", self.outcome), ("your earlier labels", self.own_earlier),
                                  ("other annotators' labels", self.others)) if not on]
        return "hidden: " + ", ".join(hidden) if hidden else "nothing hidden"


FULL = Visibility()
HIDDEN = Visibility(False, False, False)


@dataclass(frozen=True)
class AuditInfo:
    """The audit set a queue was made of."""

    audit_set_id: int
    name: str = ""
    blind: bool = True
    note: str = ""  # what the queue says of itself (a precision plan's: which outcome it cannot hide)
    #: an overlap set's raters and the targets assigned to each (empty: anyone labels every item)
    assignment: tuple[tuple[str, frozenset[str]], ...] = ()

    @property
    def overlap(self) -> bool:
        return bool(self.assignment)

    def assigned_to(self, annotator: str) -> frozenset[str] | None:
        """The targets of ``annotator``'s queue (None: every target; empty: not a rater of it)."""
        if not self.assignment:
            return None
        return next((ts for r, ts in self.assignment if r == annotator), frozenset())


def visibility(*, audit: AuditInfo | None = None, recheck: bool = False, page_blind: bool = False) -> Visibility:
    """The one policy: what may be shown about an item of a queue.

    ``audit``: the queue's audit set (None: a plain queue); ``recheck``: the item is a
    consistency re-check; ``page_blind``: the page's own blind switch (outside audit sets)."""
    if recheck or (audit is not None and audit.blind):
        return HIDDEN
    if audit is not None and audit.overlap:  # independent raters: none sees another's labels
        return Visibility(outcome=True, own_earlier=False, others=False)
    if page_blind:
        return Visibility(outcome=False, own_earlier=True, others=False)
    return FULL


def queue_visibility(*, audit: AuditInfo | None = None, has_rechecks: bool = False,
                     page_blind: bool = False) -> Visibility:
    """What views of the whole queue (tables, grids, filters, sorts) may show: an audit set's
    blindness, and no human labels where the queue re-checks items (their first answers)."""
    v = visibility(audit=audit, page_blind=page_blind)
    if has_rechecks:  # a re-checked item's earlier labels are in the queue's views too
        v = v & Visibility(outcome=True, own_earlier=False, others=False)
    return v


# ---------------------------------------------------------------------------------------------
# Passes over the label log
# ---------------------------------------------------------------------------------------------

def is_recheck_event(e: Any) -> bool:
    return (getattr(e, "source", None) or "") == RECHECK


def pass_state(events: Sequence[Any], annotator: str, audit_set_id: int | None = None,
               recheck: bool = False) -> LabelState:
    """The annotator's (value, notes) of one target in a pass (see the module docstring);
    ``events``: the target's label events in the order they were written."""
    state: LabelState = EMPTY
    for e in events:
        if e.annotator != annotator or is_recheck_event(e) != recheck:
            continue
        if audit_set_id is not None:
            if e.audit_set_id != audit_set_id:
                continue
            if (e.source or "") == RESTORE:
                state = EMPTY
                continue
        state = (e.value, e.notes)
    return state


def standing_state(events: Sequence[Any], annotator: str) -> LabelState:
    """The annotator's standing first-pass (value, notes) of a target: its latest first-pass event."""
    return pass_state(events, annotator, None, False)


@dataclass(frozen=True)
class ShownLabel:
    """One annotator's label of a target as a judging view may show it."""

    annotator: str
    value: str | None
    notes: str | None
    whose: str  # "you" (this pass), "you earlier" (outside this pass), "other"


def shown_labels(events: Sequence[Any], annotator: str, vis: Visibility, audit_set_id: int | None = None,
                 recheck: bool = False) -> list[ShownLabel]:
    """The labels of one target a view may show under ``vis``: the annotator's own label of the
    current pass always, the annotator's standing label from outside the pass and the other
    annotators' standing labels as ``vis`` allows (nothing says what it hides)."""
    in_pass = audit_set_id is not None or recheck
    out: list[ShownLabel] = []
    if annotator:
        v, n = pass_state(events, annotator, audit_set_id, recheck)
        if v is not None or (n or "").strip():
            out.append(ShownLabel(annotator, v, n, "you"))
    latest: dict[str, Any] = {}
    for e in events:
        if not is_recheck_event(e):
            latest[e.annotator] = e
    for name in sorted(latest):
        e = latest[name]
        if e.value is None and not (e.notes or "").strip():
            continue
        if name == annotator:
            this_pass = (not in_pass or (not recheck and e.audit_set_id == audit_set_id
                                         and (e.source or "") != RESTORE))
            if not this_pass and vis.own_earlier:
                out.append(ShownLabel(name, e.value, e.notes, "you earlier"))
        elif vis.others:
            out.append(ShownLabel(name, e.value, e.notes, "other"))
    return out


# ---------------------------------------------------------------------------------------------
# The queue
# ---------------------------------------------------------------------------------------------

class JudgingContext(Protocol):
    """Where a queue writes: the open project (or None) and the annotator's name."""

    project: Any
    annotator: str


@dataclass
class Change:
    """One undoable label change."""

    pos: int  # queue position when it was made (-1: off the queue)
    index: int  # target index
    recheck: bool
    before: LabelState
    after: LabelState
    before_source: str  # the source of the event that undoes it
    after_source: str


#: lookups of a target's index answered by scanning the targets before the id → index mapping is
#: made (at a million targets a scan costs about a twentieth of making the mapping)
SCANS_BEFORE_INDEX = 4


class JudgingQueue:
    """A queue of one label task's targets, walked and labelled by one annotator.

    Targets are indices into ``ids`` (every target of the task the method knows, e.g. a
    dataset's sample ids), so a queue of a million samples is one integer array. The current
    target may lie off the queue (a sample picked in a table while a queue is open). Labels are
    written to ``ctx.project`` as ``ctx.annotator``; each write is committed before it returns.
    """

    def __init__(self, scheme: LabelScheme, ctx: JudgingContext) -> None:
        self.scheme = scheme
        self.ctx = ctx
        self.ids: np.ndarray = np.zeros(0, dtype=object)
        self.bound: Any = None  # the project the targets are of (a queue never writes to another)
        self._index: dict[str, int] | None = None
        self._scans = 0  # lookups answered by a scan of ``ids`` since the targets were set
        self._index_fn: Callable[[], dict[str, int]] | None = None
        self.queue: np.ndarray = np.zeros(0, np.int32)
        self.recheck: np.ndarray = np.zeros(0, bool)
        self._whole: tuple[np.ndarray, np.ndarray] = (self.queue, self.recheck)  # an overlap set: every rater's
        self.plain = True  # the queue is every target in order (no queue chosen)
        self.pos = -1
        self.current = -1  # target index (may be off the queue)
        self.audit: AuditInfo | None = None
        self.page_blind = False
        self.current_state: LabelState = EMPTY
        # undo / redo per (annotator, audit set): another annotator's history is never theirs
        self._histories: dict[tuple[str, int | None], tuple[list[Change], list[Change]]] = {}
        # each annotator's place on this queue: (pos, current, on the queue); `_who` is the
        # annotator the queue last followed
        self._places: dict[str, tuple[int, int, bool]] = {}
        self._who = ""
        self.n_committed = 0
        self.last_error = ""
        self._done = np.zeros((2, 0), bool)  # [recheck, target]: the pass's label carries a value
        self._done_key: tuple[Any, ...] | None = None
        self._progress: tuple[int, int] | None = None  # counted once per queue / label change
        self._has_rechecks = False

    # ---- targets ------------------------------------------------------------------------------
    def set_targets(self, ids: Sequence[str] | np.ndarray, index: Callable[[], dict[str, int]] | None = None) -> None:
        """Every target of the task (``index``: a function giving id → index, e.g. a dataset's
        cached one). The queue becomes all of them, in order."""
        self.ids = ids if isinstance(ids, np.ndarray) else np.asarray(list(ids), dtype=object)
        self.bound = self.ctx.project  # the project these targets are of
        self._index = None
        self._scans = 0
        self._index_fn = index
        self._done_key = None
        self.set_queue(None)

    @property
    def n_targets(self) -> int:
        return len(self.ids)

    def index_of(self, target_id: str) -> int:
        """The index of a target id (-1 when it is not one). The first few lookups scan the ids
        (a place restored or a link followed on a million targets: milliseconds), later ones use
        the id → index mapping, made on the first of them."""
        if self._index is None:
            if self._scans < SCANS_BEFORE_INDEX and self.ids.dtype.kind in "OU":
                self._scans += 1
                hit = np.flatnonzero(self.ids == str(target_id))
                return int(hit[0]) if len(hit) else -1
            self._index = self._index_fn() if self._index_fn is not None else dict(
                zip(map(str, self.ids.tolist()), range(len(self.ids))))
        return self._index.get(str(target_id), -1)

    def target_id(self, index: int) -> str:
        return str(self.ids[index])

    # ---- queue --------------------------------------------------------------------------------
    def set_queue(self, indices: Sequence[int] | np.ndarray | None, recheck: Sequence[bool] | np.ndarray | None = None,
                  audit: AuditInfo | None = None, start: int = 0) -> None:
        """Make ``indices`` the queue (None: every target in order), ``recheck`` flags per
        position, ``audit`` the audit set it was made of; go to position ``start``."""
        if indices is None:
            q = np.arange(len(self.ids), dtype=np.int64)
            self.plain = True
        else:
            q = np.asarray(indices, dtype=np.int64).reshape(-1)
            self.plain = False
        self.queue = q.astype(np.int32) if len(q) == 0 or int(q.max()) < 2**31 else q
        rc = np.zeros(len(q), bool) if recheck is None else np.asarray(recheck, bool).reshape(-1)
        if len(rc) != len(q):
            raise ValueError(f"{len(rc)} re-check flags for a queue of {len(q)}")
        self._whole = (q, rc)
        self.audit = audit
        if audit is not None and audit.overlap:
            q, rc = self._rater_part(self.ctx.annotator or "")
            self.queue = q.astype(np.int32) if len(q) == 0 or int(q.max()) < 2**31 else q
        self.recheck = rc
        self._has_rechecks = bool(rc.any())
        self._progress = None
        self._done_key = None
        self._histories.clear()
        self._places.clear()
        self._who = self.ctx.annotator or ""
        self.pos = -1
        self.current = -1
        self.current_state = EMPTY
        if len(self.queue):
            self._set_pos(self._shown(min(max(int(start), 0), len(self.queue) - 1)))

    def _rater_part(self, annotator: str) -> tuple[np.ndarray, np.ndarray]:
        """The positions of the whole set's queue assigned to ``annotator`` (an overlap set)."""
        q, rc = self._whole
        mine = self.audit.assigned_to(annotator) if self.audit is not None else None
        if mine is None:
            return q, rc
        keep = np.fromiter((self.target_id(int(i)) in mine for i in q.tolist()), bool, len(q)) if len(q) \
            else np.zeros(0, bool)
        return q[keep], rc[keep]

    def _follow_rater(self, annotator: str) -> bool:
        """An overlap set's queue becomes ``annotator``'s part of it; True when it changed."""
        if self.audit is None or not self.audit.overlap:
            return False
        q, rc = self._rater_part(annotator)
        if len(q) == len(self.queue) and np.array_equal(q, self.queue) and np.array_equal(rc, self.recheck):
            return False
        self.queue = q.astype(np.int32) if len(q) == 0 or int(q.max()) < 2**31 else q
        self.recheck = rc
        self._has_rechecks = bool(rc.any())
        self._progress = None
        self._done_key = None
        self.pos = -1
        self.current = -1
        self.current_state = EMPTY
        return True

    @property
    def whole_size(self) -> int:
        """Positions of the whole queue set (an overlap set: every rater's part of it)."""
        return len(self._whole[0])

    @property
    def has_rechecks(self) -> bool:
        return self._has_rechecks

    @property
    def audit_set_id(self) -> int | None:
        return self.audit.audit_set_id if self.audit is not None else None

    def is_recheck(self) -> bool:
        """The current target is the queue's item at `pos` and a consistency re-check."""
        return (0 <= self.pos < len(self.queue) and int(self.queue[self.pos]) == self.current
                and bool(self.recheck[self.pos]))

    def on_queue(self) -> bool:
        return 0 <= self.pos < len(self.queue) and int(self.queue[self.pos]) == self.current

    def _set_pos(self, pos: int) -> None:
        self.pos = pos
        self.current = int(self.queue[pos])
        self.current_state = self.state_of(self.current, self.is_recheck())

    def go(self, pos: int) -> bool:
        """Go to queue position ``pos`` (clamped; a re-check not yet due: its target's first-pass
        position); False when there is no queue."""
        if not len(self.queue):
            return False
        self._set_pos(self._shown(int(min(max(pos, 0), len(self.queue) - 1))))
        return True

    def go_target(self, index: int) -> None:
        """Show target ``index``: at its queue position when it is queued (the current position
        when that is it, else its first), else off the queue."""
        if self.on_queue() and self.current == index:
            return
        hits: Any = np.flatnonzero(self.queue == index) if len(self.queue) else []
        if len(hits):
            self._set_pos(int(hits[0]))
            return
        self.current = int(index)
        self.current_state = self.state_of(self.current, False) if index >= 0 else EMPTY

    def at_end(self) -> bool:
        """No position after the current one is left for this annotator."""
        return self.step_pos(self.pos, 1) < 0

    def first_undone(self, start: int = 0) -> int:
        """The first queue position from ``start`` whose target the pass has not labelled (0
        when every one is); a re-check not yet due is not one."""
        if not len(self.queue):
            return 0
        left = np.flatnonzero(self._undone_mask()[start:])
        return int(start + left[0]) if len(left) else 0

    # ---- the annotator's own items ---------------------------------------------------------------
    def _due_mask(self) -> np.ndarray | None:
        """Per queue position: shown to this annotator (None: every position is). A re-check
        is due once the annotator has labelled its target in the pass (or when the queue holds
        no first-pass position of it)."""
        if not self._has_rechecks:
            return None
        self._ensure_done()
        q = self.queue
        first_done = self._done[0, q]
        has_first = np.isin(q, q[~self.recheck])
        return ~self.recheck | first_done | ~has_first

    def recheck_due(self, pos: int) -> bool:
        """Position ``pos`` is this annotator's to judge now (True for every item that is not a
        re-check; a re-check once its target has the annotator's first-pass label)."""
        due = self._due_mask()
        return due is None or not 0 <= pos < len(due) or bool(due[pos])

    def _shown(self, pos: int) -> int:
        """``pos``, or, for a re-check not yet due, its target's first-pass position."""
        if self.recheck_due(pos):
            return pos
        t = int(self.queue[pos])
        first = np.flatnonzero((self.queue == t) & ~self.recheck)
        return int(first[0]) if len(first) else pos

    def step_pos(self, pos: int, direction: int) -> int:
        """The next position after ``pos`` (``direction`` 1) or before it (-1) that is this
        annotator's to judge; -1 when there is none."""
        n = len(self.queue)
        due = self._due_mask()
        if due is None:
            nxt = pos + (1 if direction > 0 else -1)
            return nxt if 0 <= nxt < n else -1
        if direction > 0:
            hits = np.flatnonzero(due[max(pos + 1, 0):])
            return int(max(pos + 1, 0) + hits[0]) if len(hits) else -1
        hits = np.flatnonzero(due[:max(min(pos, n), 0)])
        return int(hits[-1]) if len(hits) else -1

    def _undone_mask(self) -> np.ndarray:
        """Per queue position: not labelled in this pass and this annotator's to judge."""
        self._ensure_done()
        left = ~self._done[self.recheck.astype(np.int64), self.queue]
        due = self._due_mask()
        return left if due is None else left & due

    def next_unlabelled(self, after: int) -> int:
        """The first position after ``after`` (wrapping round to the start, ``after`` itself
        last) that this annotator has not labelled in the pass; -1 when every one is."""
        n = len(self.queue)
        if not n:
            return -1
        left = self._undone_mask()
        start = min(max(after + 1, 0), n)
        hits = np.flatnonzero(left[start:])
        if len(hits):
            return int(start + hits[0])
        hits = np.flatnonzero(left[:start])
        return int(hits[0]) if len(hits) else -1

    def follow_annotator(self) -> bool:
        """The annotator may have changed: keep the previous annotator's place on this queue and
        go to the current one's (the place they left, else their first unlabelled item; someone
        naming themselves for the first time takes the place shown). The labels are read again.
        True when the position changed."""
        who = self.ctx.annotator or ""
        prev, self._who = self._who, who
        self._done_key = None
        if who == prev:
            return False
        old = (self.pos, self.current)
        if prev:
            self._places[prev] = (self.pos, self.current, self.on_queue())
        if self._follow_rater(who):  # another rater's part of an overlap set
            place = self._places.get(who)
            if len(self.queue):
                if place is not None and place[2] and 0 <= place[0] < len(self.queue) \
                        and int(self.queue[place[0]]) == place[1]:
                    self._set_pos(self._shown(place[0]))
                else:
                    self._set_pos(self._shown(self.first_undone()))
        elif prev and who and len(self.queue):
            place = self._places.get(who)
            if place is None:
                self._set_pos(self._shown(self.first_undone()))
            elif place[2] and 0 <= place[0] < len(self.queue) and int(self.queue[place[0]]) == place[1]:
                self._set_pos(self._shown(place[0]))
            else:
                self.go_target(place[1])
        if self.current >= 0:
            self.current_state = self.state_of(self.current, self.is_recheck())
        return (self.pos, self.current) != old

    def places(self) -> dict[str, tuple[int, int, bool]]:
        """Each annotator's place on this queue (pos, target index, on the queue), the current
        annotator's as it is now ("": nobody has given a name yet)."""
        out = dict(self._places)
        out[self.ctx.annotator or ""] = (self.pos, self.current, self.on_queue())
        return out

    def keep_places(self, places: dict[str, tuple[int, int, bool]]) -> None:
        """Other annotators' places on this queue (restored with the project): used when they
        take over (`follow_annotator`)."""
        who = self.ctx.annotator or ""
        self._places.update({k: v for k, v in places.items() if k and k != who})  # "" is nobody's

    # ---- policy -------------------------------------------------------------------------------
    def visibility(self) -> Visibility:
        """What may be shown about the current target."""
        return visibility(audit=self.audit, recheck=self.is_recheck(), page_blind=self.page_blind)

    def queue_visibility(self) -> Visibility:
        """What views of the whole queue may show."""
        return queue_visibility(audit=self.audit, has_rechecks=self.has_rechecks, page_blind=self.page_blind)

    # ---- reading ------------------------------------------------------------------------------
    def _events(self, index: int) -> list[Any]:
        p = self.ctx.project
        if p is None or index < 0:
            return []
        return p.labels.events(task=self.scheme.task, target_id=self.target_id(index))

    def state_of(self, index: int, recheck: bool = False) -> LabelState:
        """The annotator's (value, notes) of target ``index`` in the queue's pass."""
        who = self.ctx.annotator
        if not who or index < 0:
            return EMPTY
        return pass_state(self._events(index), who, self.audit_set_id, recheck)

    def shown_labels(self, index: int | None = None) -> list[ShownLabel]:
        """The labels of a target (the current one by default) the policy lets a view show."""
        index = self.current if index is None else index
        # another target than the current one (a twin beside it): where the queue re-checks it,
        # its re-check's pass is shown, never the first answer the re-check is not to see
        rc = self.is_recheck() if index == self.current else self._rechecked(index)
        vis = self.visibility() if index == self.current else self.queue_visibility()
        return shown_labels(self._events(index), self.ctx.annotator, vis, self.audit_set_id, rc)

    def _rechecked(self, index: int) -> bool:
        """The queue holds a consistency re-check of target ``index``."""
        return bool(self._has_rechecks and index >= 0 and (self.recheck & (self.queue == index)).any())

    def _ensure_done(self) -> None:
        p, who = self.ctx.project, self.ctx.annotator
        key = (p, who, self.audit_set_id, len(self.ids))
        if self._done_key == key:
            return
        self._done = np.zeros((2, len(self.ids)), bool)
        self._done_key = key
        self._progress = None
        if p is None or not who or not len(self.ids):
            return
        targets, rc, has = p.labels.pass_values(self.scheme.task, who, self.audit_set_id)
        if not len(targets):
            return
        idx = np.fromiter((self.index_of(t) for t in targets.tolist()), np.int64, len(targets))
        ok = idx >= 0
        self._done[rc[ok].astype(np.int64), idx[ok]] = has[ok]

    def reload(self) -> None:
        """Read the annotator's labels again (another annotator, an import, another window)."""
        self._done_key = None
        self._ensure_done()
        if self.current >= 0:
            self.current_state = self.state_of(self.current, self.is_recheck())

    def progress(self) -> tuple[int, int]:
        """(queue items the pass has labelled, queue length); counted once per change."""
        self._ensure_done()
        if self._progress is not None:
            return self._progress
        if not len(self.queue):
            out = (0, 0)
        elif self.plain and not self._has_rechecks:
            out = (int(np.count_nonzero(self._done[0])), len(self.queue))
        else:
            out = (int(np.count_nonzero(self._done[self.recheck.astype(np.int64), self.queue])), len(self.queue))
        self._progress = out
        return out

    def _mark(self, index: int, recheck: bool, done: bool) -> None:
        self._ensure_done()
        if 0 <= index < self._done.shape[1] and bool(self._done[int(recheck), index]) != done:
            self._done[int(recheck), index] = done
            self._progress = None

    # ---- writing ------------------------------------------------------------------------------
    def _write(self, index: int, recheck: bool, new: LabelState, source: str) -> None:
        """Commit one event (raises what the store raises; nothing changes then)."""
        if self.ctx.project is not self.bound:
            raise RuntimeError("the targets are of another project: nothing was written")
        self.ctx.project.labels.add(
            self.scheme.task, self.scheme.target, self.target_id(index), self.ctx.annotator, new[0], notes=new[1],
            audit_set_id=self.audit_set_id, source=source)
        shown = EMPTY if source == RESTORE else new
        self._mark(index, recheck, shown[0] is not None)
        if index == self.current:
            self.current_state = shown

    def _undo_for(self, index: int, recheck: bool, before: LabelState) -> tuple[LabelState, str]:
        """The event that takes a label of the pass back to ``before`` (read before the new label
        is written): in an audit set's first pass, back to nothing writes the standing label
        from before the pass (RESTORE)."""
        if recheck or self.audit is None or before != EMPTY:
            return before, RECHECK if recheck else "ui"
        who = self.ctx.annotator
        return (standing_state(self._events(index), who) if who else EMPTY), RESTORE

    def _change(self, new: LabelState) -> bool:
        """Write ``new`` for the current target and keep the change for undo."""
        index = self.current
        rc = self.is_recheck()
        before = self.current_state
        undo_state, undo_source = self._undo_for(index, rc, before)
        source = RECHECK if rc else "ui"
        self._write(index, rc, new, source)
        self.undo_stack.append(Change(self.pos if self.on_queue() else -1, index, rc, undo_state, new,
                                      undo_source, source))
        self.redo_stack.clear()
        return True

    def record(self, value: str, notes: str | None = None) -> bool:
        """Commit ``value`` (with ``notes``, or the notes kept) for the current target. Raises
        what the store raises (nothing is written then)."""
        value = self.scheme.validate(value)
        if self.current < 0:
            return False
        notes = (notes if notes is not None else self.current_state[1]) or None
        self._change((value, notes))
        self.n_committed += 1
        return True

    def save_notes(self, text: str | None) -> bool:
        """Save the current target's notes when they changed (with its current value)."""
        text = (text or "").strip() or None
        if self.current < 0 or text == (self.current_state[1] or None):
            return False
        return self._change((self.current_state[0], text))

    def _history(self) -> tuple[list[Change], list[Change]]:
        key = (self.ctx.annotator or "", self.audit_set_id)
        h = self._histories.get(key)
        if h is None:
            h = self._histories[key] = ([], [])
        return h

    @property
    def undo_stack(self) -> list[Change]:
        """The current annotator's changes on this queue (in this audit set) that undo takes back."""
        return self._history()[0]

    @property
    def redo_stack(self) -> list[Change]:
        """The current annotator's undone changes that redo writes again."""
        return self._history()[1]

    def can_step(self, back: bool) -> bool:
        return bool(self.undo_stack if back else self.redo_stack)

    def step(self, back: bool) -> Change | None:
        """Undo (``back``) or redo the last change: go to its item and write the compensating
        event. Returns the change, or None when there is nothing to do. Raises what the store
        raises (the stacks are unchanged then)."""
        src, dst = (self.undo_stack, self.redo_stack) if back else (self.redo_stack, self.undo_stack)
        if not src:
            return None
        ch = src[-1]
        if 0 <= ch.pos < len(self.queue) and int(self.queue[ch.pos]) == ch.index:
            if ch.pos != self.pos or self.current != ch.index:
                self._set_pos(ch.pos)
        elif self.current != ch.index:
            self.go_target(ch.index)
        state, source = (ch.before, ch.before_source) if back else (ch.after, ch.after_source)
        self._write(ch.index, ch.recheck, state, source)
        src.pop()
        dst.append(ch)
        return ch

    def describe(self, index: int) -> str:
        """A target in the auditor's words (the method's views may set a better one)."""
        return self.describer(index) if self.describer is not None else self.target_id(index)

    describer: Callable[[int], str] | None = None
