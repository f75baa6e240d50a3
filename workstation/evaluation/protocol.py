"""A label task's protocol: the instructions its raters follow, with worked examples, kept with the
project (one setting per task), and what the report's protocol card reads of the raters' protocol.

The card follows the reporting recommendations of Otani et al. (CVPR 2023, "Toward verifiable and
reproducible human evaluation for text-to-image generation"): the task, the instructions with
their examples, the scale with its "unable to answer" option, the raters and their
qualification, the gold rate and the raters' accuracy on gold, the overlap (raters per item),
the agreement with its intervals, the adjudications and the consensus rule.

Gold answers, the qualification rule and adjudication belong to the raters' protocol
(`workstation.evaluation.raters`). `rater_protocol` reads them through that module (a project
without gold answers reads "not recorded"); it is the only place the monitor, the rater panel and
the report reach them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..types import WorkstationError

__all__ = ["PROTOCOL_SETTING", "ProtocolText", "RaterProtocol", "load_protocol", "save_protocol", "rater_protocol",
           "read_examples"]

#: the setting of a task's instructions: ``protocol:<task>``
PROTOCOL_SETTING = "protocol:"
MAX_TEXT = 100_000


@dataclass(frozen=True)
class ProtocolText:
    """The instructions of a task and its worked examples (one example a line)."""

    instructions: str = ""
    examples: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.instructions.strip() and not self.examples

    def to_dict(self) -> dict[str, Any]:
        return {"instructions": self.instructions, "examples": list(self.examples)}


def read_examples(text: str) -> tuple[str, ...]:
    """The examples of a text: one a non-empty line."""
    return tuple(x.strip() for x in text.splitlines() if x.strip())


def load_protocol(project: Any, task: str) -> ProtocolText:
    """The task's instructions and examples as kept with the project (empty when none)."""
    from ..util.jsonsafe import JSONInputError, loads_strict

    text = project.get_setting(PROTOCOL_SETTING + task) if project is not None else None
    if not text:
        return ProtocolText()
    try:
        d = loads_strict(str(text))
        if not isinstance(d, dict):
            raise WorkstationError("expected an object")
        ex = d.get("examples") or []
        if not isinstance(ex, list):
            raise WorkstationError("examples must be a list")
        return ProtocolText(str(d.get("instructions") or ""), tuple(str(x) for x in ex))
    except (JSONInputError, WorkstationError) as e:
        why = getattr(e, "message", None) or str(e)
        raise WorkstationError(f"the project's setting {PROTOCOL_SETTING}{task} cannot be read ({why})") from None


def save_protocol(project: Any, task: str, text: ProtocolText) -> None:
    """Keep the task's instructions and examples with the project (refused on a read-only one)."""
    from ..util.jsonsafe import dumps

    if len(text.instructions) > MAX_TEXT or sum(len(x) for x in text.examples) > MAX_TEXT:
        raise WorkstationError(f"the instructions of {task} are longer than {MAX_TEXT} characters")
    if getattr(project, "read_only", False):
        raise WorkstationError("this project is open read-only: the instructions cannot be kept")
    project.set_setting(PROTOCOL_SETTING + task, dumps(text.to_dict()))


@dataclass(frozen=True)
class RaterProtocol:
    """What the raters' protocol records of one task; None where this workstation records none."""

    gold: dict[str, str] | None = None  # target → gold answer
    gold_accuracy: dict[str, Any] | None = None  # rater → `raters.GoldAccuracy` (correct, n, lo, hi, text())
    qualification: str | None = None  # the rule's text ("none" when the project keeps none)
    unqualified: dict[str, str] | None = None  # rater → why their labels are left out
    adjudicated: int | None = None  # targets given a final label
    adjudication_open: int | None = None  # targets still open for adjudication
    adjudicators: tuple[str, ...] | None = None
    gold_seeded: int | None = None  # gold items seeded into the task's audit sets
    first_pass_items: int | None = None  # first-pass items of the task's audit sets (gold included)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def recorded(self) -> bool:
        return self.gold is not None


def rater_protocol(project: Any, task: str, annotators: Sequence[str] = ()) -> RaterProtocol:
    """Gold answers, accuracy on gold, the qualification rule and who fails it, and the
    adjudications of ``task`` (module docstring). ``annotators``: the task's raters (judged too
    under a strict qualification rule)."""
    # through the module table, so that a test may stand a raters' protocol of its own in for it
    mod = importlib.import_module(f"{__package__}.raters")
    if project is None:
        return RaterProtocol()
    rule = mod.load_qualification(project)
    audit = project.audit
    sets = {int(s["audit_set_id"]) for s in audit.sets(task)}
    seeded = sum(1 for aid, _t in audit.gold_items() if int(aid) in sets)
    first = sum(sum(1 for _t, rc in audit.items(aid) if not rc) for aid in sets)
    queue = mod.adjudication_queue(project, task, include_done=False)
    return RaterProtocol(
        gold=dict(mod.gold_answers(project, task)), gold_accuracy=dict(mod.gold_accuracy(project, task)),
        qualification=rule.text() if rule is not None else "none",
        unqualified=dict(mod.unqualified(project, task, list(annotators))),
        adjudicated=len(mod.adjudicated(project, task)), adjudication_open=len(queue),
        adjudicators=tuple(mod.adjudicators(project)), gold_seeded=seeded, first_pass_items=first)
