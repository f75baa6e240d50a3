"""The demo's multi-rater audit: three simulated raters, gold items from the known truth, a
qualification rule, and a few adjudicated items.

`add_rater_audit` keeps ``GOLD_POOL`` of the demo's samples as gold answers (their known truth,
source ``demo: known truth``), draws a blind audit set of ``SIZE`` samples (stratified by run,
relation and checker verdict) with ``k = 3`` raters on every item and gold items seeded at
``GOLD_RATE``, and has the three raters of `RATERS` label their queues, re-checks included:

* ``r1`` — 5 % errors, about 25 s per item;
* ``r2`` — 10 % errors, about 18 s per item;
* ``r3`` — a speeder: 35 % errors, about 3 s per item; fails the gold.

Each rater gets exactly round(rate · n) wrong labels on their gold items and on their other items
(a wrong label is another verdict, drawn at random), so the gold accuracies are 1 - rate up to
rounding: on 24 gold items r1 23, r2 22 and r3 16 right. The project's qualification rule is
≥ 90 % on ≥ 20 gold items (r3 is left out of every estimate), ``lead`` is its adjudicator and
adjudicates ``N_ADJUDICATED`` of the items whose raters disagree with the known truth; the spatial
method's label selection is this set's first passes under the ``adjudicated`` rule.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np

RATERS: tuple[tuple[str, float, float], ...] = (("r1", 0.05, 25.0), ("r2", 0.10, 18.0), ("r3", 0.35, 3.0))
ADJUDICATOR = "lead"
GOLD_POOL = 48
SIZE = 96
GOLD_RATE = 0.2
SEED = 51
N_ADJUDICATED = 5
SET_NAME = "three raters with gold"


def _wrong(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """A mask of exactly round(rate · n) of n positions, drawn with ``rng``."""
    out = np.zeros(n, bool)
    out[rng.permutation(n)[:int(round(rate * n))]] = True
    return out


def add_rater_audit(project: Any, scheme: Any, *, seed: int = SEED, size: int = SIZE) -> dict[str, Any]:
    """Add the demo's multi-rater audit to a project holding the spatial demo (module docstring;
    ``scheme``: the spatial method's label scheme); returns what it added (empty when the demo is
    too small for one)."""
    from ...evaluation.audit_sets import AuditPopulation, draw_audit_set
    from ...evaluation.raters import (Qualification, adjudication_queue, record_adjudication, save_qualification,
                                      set_adjudicators)
    from ...evaluation.selection import LabelSelection, save_selection
    from .audit import stratum_codes
    from .commands.common import active_verdicts, load_samples
    from .types import VERDICTS

    ds = load_samples(project)
    _cid, _cfg, v = active_verdicts(project, ds)
    truth = project.samples.truth()
    ids = [str(s) for s in ds.samples.sample_id.tolist()]
    if len(ids) < 12 or not all(s in truth for s in ids):
        return {}
    expected = {s: str(truth[s]["expected"]) for s in ids}
    rng = np.random.default_rng(seed)
    pool = [ids[i] for i in sorted(rng.permutation(len(ids))[:min(GOLD_POOL, len(ids) // 4)].tolist())]
    project.audit.add_gold(scheme.task, [(s, expected[s], None) for s in pool], "demo: known truth")
    strata = {}
    for key in ("run", "relation", "verdict"):
        codes, names = stratum_codes(ds, v, (key,))
        strata[key] = (codes, [n[0] for n in names])
    pop = AuditPopulation(ids=ds.samples.sample_id, strata=strata, default_strata=("run", "relation", "verdict"),
                          conf=np.asarray(v.conf), noun="samples")
    raters = [r for r, _e, _s in RATERS]
    aid = draw_audit_set(project, scheme, pop, name=SET_NAME, size=min(size, len(ids) // 2), seed=seed,
                         blind=True, recheck_fraction=0.1, raters=raters, k=len(raters), gold_rate=GOLD_RATE)
    items = project.audit.items(aid)
    gold = {t for _a, t in project.audit.gold_items(aid)}
    mine = project.audit.assignments(aid)
    start = datetime.now().replace(microsecond=0) - timedelta(hours=3)
    cols: dict[str, list[Any]] = {k: [] for k in ("target_id", "annotator", "value", "created_at", "audit_set_id",
                                                  "source")}
    for n, (rater, rate, seconds) in enumerate(RATERS):
        r_rng = np.random.default_rng([seed, n])
        queue = [(t, rc) for t, rc in items if t in set(mine.get(rater, ()))]
        first = [t for t, rc in queue if not rc]
        on_gold = [t for t in first if t in gold]
        others = [t for t in first if t not in gold]
        wrong = set(np.asarray(on_gold, dtype=object)[_wrong(r_rng, len(on_gold), rate)].tolist())
        wrong |= set(np.asarray(others, dtype=object)[_wrong(r_rng, len(others), rate)].tolist())
        when = start + timedelta(minutes=40 * n)
        for t, rc in queue:
            miss = (r_rng.random() < rate) if rc else (t in wrong)
            value = expected[t]
            if miss:
                value = str(r_rng.choice([x for x in VERDICTS if x != value]))
            when += timedelta(seconds=float(seconds * r_rng.lognormal(0.0, 0.35)))
            for k, x in (("target_id", t), ("annotator", rater), ("value", value), ("created_at", when),
                         ("audit_set_id", aid), ("source", "recheck" if rc else "ui")):
                cols[k].append(x)
    project.labels.add_bulk(scheme.task, scheme.target, cols)
    save_qualification(project, Qualification(0.9, 20))
    set_adjudicators(project, [ADJUDICATOR])
    against_truth = [it for it in adjudication_queue(project, scheme.task)
                     if it.target_id not in gold and any(x != expected[it.target_id] for x in it.labels)]
    for it in against_truth[:N_ADJUDICATED]:
        record_adjudication(project, scheme, it.target_id, expected[it.target_id],
                            "demo: the lead's decision, looking at the image", ADJUDICATOR)
    save_selection(project, scheme.task, LabelSelection(sets=(aid,), free=False, rechecks=False, rule="adjudicated"))
    return rater_summary(project, scheme.task)


def rater_summary(project: Any, task: str) -> dict[str, Any]:
    """The demo's multi-rater audit as the `demo` command prints it (empty when there is none):
    its set, items, gold items, raters, their gold accuracy, who is left out, the adjudications."""
    from ...evaluation.raters import adjudicated, gold_accuracy, unqualified

    sets = [s for s in project.audit.sets(task) if s["name"] == SET_NAME and s["params"].get("raters")]
    if not sets:
        return {}
    s = sets[-1]
    aid = int(s["audit_set_id"])
    raters = [str(r) for r in s["params"]["raters"]]
    acc = gold_accuracy(project, task)
    items = project.audit.items(aid)
    n_gold = len(project.audit.gold_items(aid))
    return {"audit_set_id": aid, "items": len(items), "gold": n_gold, "drawn": sum(not rc for _t, rc in items) - n_gold,
            "rechecks": sum(rc for _t, rc in items), "raters": raters,
            "gold_accuracy": {r: (a.correct, a.n) for r, a in acc.items()},
            "left_out": unqualified(project, task, raters), "adjudicated": len(adjudicated(project, task))}
