"""Where a label's target was drawn from: each audit set's design and each target's inclusion
probability.

An audit set records the design of its draw (``uniform``, ``stratified``, ``plan``, or
``unknown`` for a set of an earlier version) and the number of targets it was drawn from; each
of its items its stratum, the stratum's size in units and the unit it belongs to. The inclusion
probability of a target is read from those: the number of units drawn from its stratum so far
over the stratum's size (every design draws a stratum's units without replacement in a random
order, so given how many were drawn each unit of the stratum was equally likely to be among
them). A plan keeps drawing; its probabilities are those of its draws so far, read each time.
Where nothing is recorded (an old set) the probability is unknown (NaN).

Gold items seeded into a set (`workstation.evaluation.raters`) were not drawn: they have no
inclusion probability and `Draw.gold` names them, so that their labels are left out of the set's.

Labels given outside any audit set ("free labelling") have no draw: their targets were chosen by
a person, and no estimator can undo that choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Draw", "KNOWN_DESIGNS", "draws_of"]

#: designs whose inclusion probabilities are recorded
KNOWN_DESIGNS = ("uniform", "stratified", "plan")


@dataclass(frozen=True)
class Draw:
    """One audit set's draw: its design, the number of targets it was drawn from and each drawn
    target's inclusion probability (NaN: not recorded)."""

    audit_set_id: int
    name: str
    design: str
    population: int | None
    inclusion: dict[str, float] = field(default_factory=dict)
    plan: bool = False
    gold: frozenset[str] = frozenset()  # seeded gold items: not drawn, no population labels of the set

    @property
    def known(self) -> bool:
        return self.design in KNOWN_DESIGNS and self.population is not None

    def pi(self, target_id: str) -> float:
        return self.inclusion.get(str(target_id), math.nan)


def draws_of(project: Any, task: str) -> dict[int, Draw]:
    """Every audit set of ``task`` with the inclusion probabilities of its first-pass targets."""
    sets = project.audit.sets(task)
    items = project.audit.draw_items(task)
    by_set: dict[int, list[tuple[str, bool, float | None, int | None, int | None, str | None]]] = {}
    for aid, target, recheck, incl, stratum, size, unit in items:
        by_set.setdefault(aid, []).append((target, recheck, incl, stratum, size, unit))
    gold: dict[int, set[str]] = {}
    for aid, target in project.audit.gold_items():
        gold.setdefault(aid, set()).add(target)
    out: dict[int, Draw] = {}
    for s in sets:
        aid = int(s["audit_set_id"])
        seeded = gold.get(aid, set())
        rows = [r for r in by_set.get(aid, []) if not r[1] and r[0] not in seeded]
        # units drawn so far per stratum
        units: dict[int, set[str]] = {}
        for target, _rc, _incl, stratum, _size, unit in rows:
            if stratum is not None:
                units.setdefault(stratum, set()).add(unit if unit is not None else target)
        pi: dict[str, float] = {}
        for target, _rc, incl, stratum, size, _unit in rows:
            if stratum is not None and size:
                pi[target] = min(1.0, len(units[stratum]) / float(size))
            elif incl is not None and incl > 0:
                pi[target] = float(incl)
            else:
                pi[target] = math.nan
        params = s.get("params") or {}
        out[aid] = Draw(aid, str(s.get("name") or ""), str(s.get("design") or "unknown"), s.get("population"), pi,
                        plan=isinstance(params, dict) and "plan" in params, gold=frozenset(seeded))
    return out
