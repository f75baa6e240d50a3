"""MetaLogic pairs as the project's generic prompts, and back.

A suite pair becomes two prompts (`Prompts`, method ``metalogic``): ``<pair_id>.A`` and
``<pair_id>.B``, each the other's ``twin_id``, both with ``group_id`` = the pair id, the pair's
entities (slot order) and, in ``attrs``, the pair's law / modifier / dimension / axis, the
prompt's ``side`` ("A" / "B") and form, and what both images must show (``expected``: counts,
order, attributes). Both prompts of a pair are rendered with the same seed because a generation
job renders *every* prompt with the job's seed list: sample (run, ``<pair>.A``, s) and sample
(run, ``<pair>.B``, s) form one image pair; the pair's own ``seed`` in ``attrs`` is the seed
`demo.render_pair` uses by default.

`prompt_table(prompts)` reads those fields back for every prompt at once (one pass over the
prompts, not over image pairs), with one clear error for a prompt that lacks them;
`spec_from_row` rebuilds the `PairSpec` of one prompt row (what the procedural generator gives
`render_demo_row`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...dataset import Prompts
from ...types import WorkstationError
from .laws import (
    AXIS_CODE,
    DIMENSION_AXIS,
    DIMENSION_CODE,
    LAW_CODE,
    MODIFIER_CODE,
    canonical_dimension,
    canonical_law,
    canonical_modifier,
)
from .suite import MetaLogicSuite, PairSpec

__all__ = ["suite_prompts", "PromptTable", "prompt_table", "spec_from_row", "SIDE_CODE"]

SIDE_CODE = {"A": 0, "B": 1}


def suite_prompts(suite: MetaLogicSuite) -> Prompts:
    """The generic prompts of a suite: two per pair (A then B), ``suite`` = the suite's name."""
    cols = suite.prompt_columns()
    return Prompts.build(cols["prompt_id"], cols["text"], method="metalogic", suite=cols["suite"],
                         entities=cols["entities"], attrs=cols["attrs"], twin_id=cols["twin_id"],
                         group_id=cols["group_id"])


@dataclass
class PromptTable:
    """Per prompt (rows of the `Prompts` given), the fields the comparison needs, as codes.

    ``side`` int8 (0 A, 1 B); ``law`` / ``modifier`` / ``dimension`` / ``axis`` int8 codes;
    ``entity`` object (N, E) names ("" unused); ``count`` int16 (N, E) expected counts (-1
    unused); ``rank`` int8 (N, E) expected place on the axis (-1 none); ``group`` the pair id."""

    prompt_id: np.ndarray
    group: np.ndarray
    twin: np.ndarray
    text: np.ndarray
    side: np.ndarray
    law: np.ndarray
    modifier: np.ndarray
    dimension: np.ndarray
    axis: np.ndarray
    entity: np.ndarray
    count: np.ndarray
    rank: np.ndarray

    def __len__(self) -> int:
        return len(self.prompt_id)


def _bad(pid: str, what: str) -> WorkstationError:
    return WorkstationError(f"MetaLogic prompt {pid!r}: {what} (rebuild it with `suite --method metalogic` "
                            "or import the pair file again)")


def prompt_table(prompts: Prompts) -> PromptTable:
    """The comparison's fields of every prompt (see `PromptTable`); WorkstationError naming the
    first prompt whose fields are missing or inconsistent."""
    n = len(prompts)
    ents = [tuple(str(e) for e in (x or ())) for x in prompts.entities.tolist()]
    e_max = max((len(e) for e in ents), default=0)
    side = np.empty(n, np.int8)
    law = np.empty(n, np.int8)
    mod = np.empty(n, np.int8)
    dim = np.empty(n, np.int8)
    axis = np.empty(n, np.int8)
    entity = np.full((n, e_max), "", dtype=object)
    count = np.full((n, e_max), -1, np.int16)
    rank = np.full((n, e_max), -1, np.int8)
    for i, (pid, attrs, row) in enumerate(zip(prompts.prompt_id.tolist(), prompts.attrs.tolist(), ents)):
        a: Mapping[str, Any] = attrs if isinstance(attrs, Mapping) else {}
        s = SIDE_CODE.get(str(a.get("side", "")))
        if s is None:
            raise _bad(pid, "attrs has no side 'A' or 'B'")
        lw, md, dm = (canonical_law(str(a.get("law", ""))), canonical_modifier(str(a.get("modifier", ""))),
                      canonical_dimension(str(a.get("dimension", "")) if "dimension" in a else "?"))
        if lw is None or md is None or dm is None:
            raise _bad(pid, f"unknown law / modifier / dimension {a.get('law')!r} / {a.get('modifier')!r} / "
                            f"{a.get('dimension')!r}")
        if not row:
            raise _bad(pid, "no entities")
        if len(set(row)) != len(row):
            raise _bad(pid, "an entity is named twice")
        side[i], law[i], mod[i], dim[i] = s, LAW_CODE[lw], MODIFIER_CODE[md], DIMENSION_CODE[dm]
        axis[i] = AXIS_CODE[DIMENSION_AXIS[dm]]
        k = len(row)
        entity[i, :k] = row
        exp_raw = a.get("expected")
        exp: Mapping[str, Any] = exp_raw if isinstance(exp_raw, Mapping) else {}
        c = exp.get("counts")
        if c is None:
            c = [1] * k
        if not isinstance(c, (list, tuple)) or len(c) != k or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 100 for x in c):
            raise _bad(pid, f"expected counts {c!r} do not give one count (0-100) per entity")
        count[i, :k] = c
        order = exp.get("order")
        if order is None:
            order = [e for e, x in zip(row, c) if x > 0] if axis[i] else []
        if not isinstance(order, (list, tuple)) or any(e not in row for e in order) or len(set(order)) != len(order):
            raise _bad(pid, f"expected order {order!r} is not a list of its entities")
        if order and not axis[i]:
            raise _bad(pid, "a position-less prompt has an expected order")
        for r, e in enumerate(order):
            j = row.index(e)
            if c[j] < 1:
                raise _bad(pid, f"the ordered entity {e!r} is expected absent")
            rank[i, j] = r
    return PromptTable(prompt_id=prompts.prompt_id.astype(object), group=prompts.group_id.astype(object),
                       twin=prompts.twin_id.astype(object), text=prompts.text.astype(object), side=side, law=law,
                       modifier=mod, dimension=dim, axis=axis, entity=entity, count=count, rank=rank)


def spec_from_row(row: Mapping[str, Any]) -> PairSpec:
    """The `PairSpec` of one prompt row (``prompt_id``, ``entities``, ``attrs``, ``group_id``, ...):
    enough to draw the pair (its texts are not needed and stay empty)."""
    pid = str(row.get("prompt_id", ""))
    attrs = row.get("attrs") or {}
    if not isinstance(attrs, Mapping):
        raise _bad(pid, "attrs is not an object")
    pr = Prompts.build([pid], [str(row.get("text", ""))], method="metalogic", entities=[row.get("entities") or ()],
                       attrs=[attrs], twin_id=[row.get("twin_id", "")], group_id=[row.get("group_id", "")])
    t = prompt_table(pr)
    group = str(row.get("group_id") or "") or pid.rsplit(".", 1)[0]
    k = int((t.count[0] >= 0).sum())
    ents = tuple(str(e) for e in t.entity[0, :k])
    order = sorted((int(r), e) for r, e in zip(t.rank[0, :k], ents) if r >= 0)
    exp_raw = attrs.get("expected")
    exp: Mapping[str, Any] = exp_raw if isinstance(exp_raw, Mapping) else {}
    seed = attrs.get("seed", 0)
    return PairSpec(
        pair_id=group, variant=str(attrs.get("variant", "")), law=str(canonical_law(str(attrs["law"]))),
        modifier=str(canonical_modifier(str(attrs["modifier"]))),
        dimension=str(canonical_dimension(str(attrs["dimension"]))),
        axis=DIMENSION_AXIS[str(canonical_dimension(str(attrs["dimension"])))], template=str(attrs.get("template", "")),
        text_a="", text_b="", form_a=str(attrs.get("form", "")), form_b="", entities=ents,
        expected_count=tuple(int(x) for x in t.count[0, :k]), expected_order=tuple(e for _, e in order),
        attributes=tuple(str(x) for x in (exp.get("attributes") or ())),
        seed=int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else 0,
    )
