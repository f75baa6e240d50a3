"""Several raters on one protocol: overlap sets (each rater's queue holds their items and shows no
other rater's label), gold items seeded into a blind set (no draw of their own, no population
labels), gold accuracy and the qualification rule in the label selection, and adjudication."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.core.test_label_selection import _population
from workstation.cli import main
from workstation.evaluation.audit_sets import audit_info, draw_audit_set
from workstation.evaluation.draws import draws_of
from workstation.evaluation.judging import JudgingQueue
from workstation.evaluation.raters import (Qualification, adjudication_queue, assign_raters, gold_accuracy,
                                           gold_answers, import_gold_file, rater_progress, record_adjudication,
                                           save_qualification, set_adjudicators, unqualified)
from workstation.evaluation.selection import DISPUTED, LabelSelection, resolve_project
from workstation.methods.spatial.method import LABELS as SCHEME
from workstation.methods.spatial.store import TASK
from workstation.store import Project
from workstation.types import WorkstationError

RATERS = ("ann", "ben", "cal")


def _queue(p: Project, ids: list[str], who: str) -> tuple[JudgingQueue, Any]:
    ctx = SimpleNamespace(project=p, annotator=who)
    q = JudgingQueue(SCHEME, ctx)
    q.set_targets(ids)
    return q, ctx


def _open(q: JudgingQueue, p: Project, aid: int) -> None:
    """What the window's Audit → open does: the set's items as the queue, its audit info."""
    items = p.audit.items(aid)
    q.set_queue([q.index_of(t) for t, _rc in items], recheck=[rc for _t, rc in items], audit=audit_info(p, aid))


# ---- overlap ---------------------------------------------------------------------------------------

def test_k_raters_on_a_share_of_the_items_the_others_one_gold_to_everyone() -> None:
    ids = [f"t{i}" for i in range(40)]
    a = assign_raters(ids, RATERS, 3, seed=5)
    assert all(v == RATERS for v in a.values())
    b = assign_raters(ids, RATERS, 2, share=0.5, seed=5, everyone=["t0", "t1"])
    assert b == assign_raters(ids, RATERS, 2, share=0.5, seed=5, everyone=["t0", "t1"])  # seeded
    assert b["t0"] == b["t1"] == RATERS
    sizes = [len(b[t]) for t in ids[2:]]
    assert sizes.count(2) == 19 and sizes.count(1) == 19
    load = {r: sum(r in v for t, v in b.items() if t not in ("t0", "t1")) for r in RATERS}
    assert max(load.values()) - min(load.values()) <= 1
    with pytest.raises(WorkstationError, match="k = 4"):
        assign_raters(ids, RATERS, 4)


def test_a_raters_queue_holds_only_their_items_and_no_other_raters_label(project: Path) -> None:
    with Project.open(project) as p:
        ds, _v, pop = _population(p)
        ids = [str(s) for s in ds.samples.sample_id.tolist()]
        # not blind: only the overlap design hides the other raters
        aid = draw_audit_set(p, SCHEME, pop, name="overlap", size=18, seed=2, blind=False, recheck_fraction=0.2,
                             raters=RATERS, k=2)
        assigned = p.audit.assignments(aid)
        assert sorted(assigned) == list(RATERS) and sum(len(v) for v in assigned.values()) == 2 * 18
        q, ctx = _queue(p, ids, "ann")
        _open(q, p, aid)
        mine = [q.target_id(int(i)) for i in q.queue.tolist()]
        whole = [t for t, _rc in p.audit.items(aid)]
        assert set(mine) == set(assigned["ann"]) and mine == [t for t in whole if t in set(assigned["ann"])]
        assert q.progress() == (0, len(mine))
        shared = next(t for t in assigned["ann"] if t in assigned["ben"])
        q.go_target(q.index_of(shared))
        q.record("FAIL", "ann's reason")
        # ben takes over the window: his own part of the set, nothing of ann's
        ctx.annotator = "ben"
        q.follow_annotator()
        theirs = [q.target_id(int(i)) for i in q.queue.tolist()]
        assert set(theirs) == set(assigned["ben"])
        q.go_target(q.index_of(shared))
        assert q.on_queue() and q.current_state == (None, None)
        assert not q.visibility().others and not q.queue_visibility().others
        assert [s.annotator for s in q.shown_labels()] == []
        q.record("PASS")
        # someone who is not a rater of the set has nothing to label in it
        ctx.annotator = "dora"
        q.follow_annotator()
        assert len(q.queue) == 0 and q.current == -1
        prog = {r["rater"]: r for r in rater_progress(p, aid)}
        assert prog["ann"]["labelled"] == 1 and prog["ann"]["assigned"] == len(mine)
        assert prog["ben"]["labelled"] == 1 and prog["cal"]["labelled"] == 0
        assert prog["ben"]["assigned"] == len(theirs)


def test_a_set_without_raters_or_gold_keeps_its_draw_and_order(project: Path) -> None:
    with Project.open(project) as p:
        _ds, _v, pop = _population(p)
        a = draw_audit_set(p, SCHEME, pop, name="plain", size=15, seed=9)
        b = draw_audit_set(p, SCHEME, pop, name="raters", size=15, seed=9, raters=RATERS, k=1)
        assert p.audit.items(a) == p.audit.items(b)
        assert not audit_info(p, a).overlap and p.audit.assignments(a) == {}


# ---- gold ------------------------------------------------------------------------------------------

def _gold(p: Project, ids: list[str], n: int) -> list[str]:
    pool = ids[-n:]
    p.audit.add_gold(TASK, [(s, "PASS" if k % 3 else "FAIL", None) for k, s in enumerate(pool)], "test")
    return pool


def test_gold_items_are_seeded_at_the_rate_shuffled_in_and_carry_no_draw(project: Path) -> None:
    with Project.open(project) as p:
        ds, _v, pop = _population(p)
        ids = [str(s) for s in ds.samples.sample_id.tolist()]
        pool = _gold(p, ids, 12)
        aid = draw_audit_set(p, SCHEME, pop, name="gold", size=16, seed=4, gold_rate=0.2, raters=RATERS, k=1,
                             recheck_fraction=0.0)
        items = p.audit.items(aid)
        gold = {t for _a, t in p.audit.gold_items(aid)}
        assert len(gold) == 4 and gold <= set(pool)  # 0.2 of 20 first passes
        order = [t for t, _rc in items]
        spots = sorted(order.index(g) for g in gold)
        assert spots != list(range(len(order) - 4, len(order))), "gold items all at the end"
        # nothing a queue gets says gold: the same (target, re-check) entries as any item
        assert all(isinstance(e, tuple) and len(e) == 2 for e in items)
        assigned = p.audit.assignments(aid)
        assert all(gold <= set(v) for v in assigned.values())  # every rater is given the gold
        d = draws_of(p, TASK)[aid]
        assert d.gold == frozenset(gold) and not set(d.inclusion) & gold and d.known
        # labels of gold items are no population labels of the set
        for t in order:
            p.labels.add(TASK, "sample", t, "ann", "PASS", audit_set_id=aid)
        res = resolve_project(p, TASK, LabelSelection(sets=(aid,), free=False))
        assert set(res.target_ids.tolist()) == set(order) - gold and res.known_draw
        assert res.design in ("uniform", "stratified")
        with pytest.raises(WorkstationError, match="blind"):
            draw_audit_set(p, SCHEME, pop, name="x", size=4, seed=1, gold_rate=0.2, blind=False)


def test_gold_accuracy_and_the_qualification_leave_a_rater_out_of_every_estimate(project: Path) -> None:
    with Project.open(project) as p:
        ds, _v, pop = _population(p)
        ids = [str(s) for s in ds.samples.sample_id.tolist()]
        _gold(p, ids, 10)
        aid = draw_audit_set(p, SCHEME, pop, name="gold", size=20, seed=4, gold_rate=0.25, raters=RATERS, k=3,
                             recheck_fraction=0.0)
        answers = gold_answers(p, TASK)
        gold = sorted(t for _a, t in p.audit.gold_items(aid))
        assert len(gold) >= 5
        for t, _rc in p.audit.items(aid):
            right = answers.get(t, "PASS")
            p.labels.add(TASK, "sample", t, "ann", right, audit_set_id=aid)
            p.labels.add(TASK, "sample", t, "ben", right, audit_set_id=aid)
            # cal misses the gold items but one, and calls everything else FAIL
            p.labels.add(TASK, "sample", t, "cal", right if t == gold[0] else
                         ("UNDECIDABLE" if t in answers else "FAIL"), audit_set_id=aid)
        acc = gold_accuracy(p, TASK)
        n = len(gold)
        assert (acc["ann"].correct, acc["ann"].n) == (n, n) and (acc["cal"].correct, acc["cal"].n) == (1, n)
        assert 0 < acc["cal"].lo < 1 / n < acc["cal"].hi < 1
        sel = LabelSelection(sets=(aid,), free=False, rule="majority")
        before = resolve_project(p, TASK, sel)
        assert before.left_out == () and "cal" in before.annotators
        save_qualification(p, Qualification(0.9, n))
        assert unqualified(p, TASK) == {"cal": f"gold 1/{n} < 90 %"}
        after = resolve_project(p, TASK, sel)
        assert after.left_out == (("cal", f"gold 1/{n} < 90 %"),) and "cal" not in after.annotators
        assert f"cal left out: gold 1/{n} < 90 %" in after.describe()
        assert after.provenance()["left_out"] == [{"annotator": "cal", "why": f"gold 1/{n} < 90 %"}]
        assert len(p.labels.standing(TASK, "cal")) == len(p.audit.items(aid))  # kept in the log
        # a rule that asks for more gold than anyone has leaves everyone out
        save_qualification(p, Qualification(0.5, n + 1))
        assert set(unqualified(p, TASK)) == set(RATERS)
        # an adjudicator is never left out
        set_adjudicators(p, ["ann"])
        assert set(unqualified(p, TASK)) == {"ben", "cal"}


def test_a_gold_file_is_checked_whole_and_names_the_line(project: Path, tmp_path: Path) -> None:
    schemes = {SCHEME.task: SCHEME}
    with Project.open(project) as p:
        ids = [str(s) for s in p.samples.load_dataset(method="spatial").samples.sample_id.tolist()]
        bad = tmp_path / "gold.csv"
        bad.write_text(f"target,task,answer,note\n{ids[0]},{TASK},pass,sure\n{ids[1]},{TASK},MAYBE,\n",
                       encoding="utf-8")
        with pytest.raises(WorkstationError, match=r"gold.csv:3: .*MAYBE"):
            import_gold_file(p, bad, schemes)
        unknown = tmp_path / "gold2.csv"
        unknown.write_text(f"target,task,answer\n{ids[0]},{TASK},PASS\nnot-a-sample,{TASK},FAIL\n", encoding="utf-8")
        with pytest.raises(WorkstationError, match=r"gold2.csv:3: .*unknown sample"):
            import_gold_file(p, unknown, schemes)
        assert gold_answers(p, TASK) == {}  # nothing half-written
        good = tmp_path / "gold3.csv"
        good.write_text(f"target,task,answer\n{ids[0]},{TASK},pass\n{ids[1]},{TASK},FAIL\n", encoding="utf-8")
        assert import_gold_file(p, good, schemes) == {TASK: 2}
        assert gold_answers(p, TASK) == {ids[0]: "PASS", ids[1]: "FAIL"}


# ---- adjudication -----------------------------------------------------------------------------------

@pytest.fixture
def disputed(project: Path) -> Any:
    with Project.open(project) as p:
        ids = [str(s) for s in p.samples.load_dataset(method="spatial").samples.sample_id.tolist()]
        a, b, c, d = ids[:4]
        for t, votes in ((a, ("PASS", "FAIL", "FAIL")), (b, ("PASS", "PASS", "PASS")),
                         (c, ("PASS", "FAIL", "UNDECIDABLE")), (d, ("FAIL", "FAIL", "FAIL"))):
            for who, v in zip(RATERS, votes):
                p.labels.add(TASK, "sample", t, who, v)
        p.audit.add_gold(TASK, [(d, "PASS", None)], "test")
        yield p, (a, b, c, d)


def test_the_adjudication_queue_lists_disagreements_without_names(disputed: Any) -> None:
    p, (a, b, c, d) = disputed
    items = adjudication_queue(p, TASK)
    assert [(it.target_id, it.reason) for it in items] == [
        (a, "raters disagree"), (c, "raters disagree"), (d, "disagrees with gold")]
    assert items[0].labels == ("FAIL", "FAIL", "PASS") and items[2].gold == "PASS"
    text = json.dumps([it.as_dict() for it in items])
    assert not any(r in text for r in RATERS)


def test_only_an_adjudicator_records_and_the_adjudicated_rule_counts_it(disputed: Any) -> None:
    p, (a, b, c, d) = disputed
    with pytest.raises(WorkstationError, match="not an adjudicator"):
        record_adjudication(p, SCHEME, c, "PASS", "looked again", "ann")
    set_adjudicators(p, ["lead"])
    with pytest.raises(WorkstationError, match="needs a note"):
        record_adjudication(p, SCHEME, c, "PASS", "", "lead")
    record_adjudication(p, SCHEME, c, "pass", "the cup is on the left", "lead")
    ev = p.labels.events(task=TASK, target_id=c)[-1]
    assert (ev.annotator, ev.value, ev.source, ev.notes) == ("lead", "PASS", "adjudication", "the cup is on the left")
    assert [it.target_id for it in adjudication_queue(p, TASK)] == [a, d]
    assert adjudication_queue(p, TASK, include_done=True)[1].final == "PASS"
    assert gold_answers(p, TASK)[c] == "PASS"  # an adjudicated label is gold

    def values(rule: str) -> dict[str, Any]:
        r = resolve_project(p, TASK, LabelSelection(rule=rule))
        return dict(zip(r.target_ids.tolist(), r.values.tolist()))

    adj = values("adjudicated")
    assert adj[c] == "PASS" and adj[a] == "FAIL" and adj[b] == "PASS"  # else the majority
    assert values("majority")[c] == DISPUTED  # no other rule counts the adjudication
    assert values("latest")[c] == "UNDECIDABLE"
    res = resolve_project(p, TASK, LabelSelection(rule="adjudicated"))
    assert res.n_adjudicated == 1 and "adjudicated, else majority" in res.describe()
    assert "lead" not in res.annotators
    from workstation.evaluation.audit_sets import task_agreement

    rows, _differ = task_agreement(p, SCHEME)
    assert rows and "lead" not in json.dumps(rows, default=str)  # no adjudicator among the raters' agreement
    # taken back: the majority again
    record_adjudication(p, SCHEME, c, None, None, "lead")
    assert values("adjudicated")[c] == DISPUTED


# ---- the command line ----------------------------------------------------------------------------

def test_the_audit_commands(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Project.open(project) as p:
        ids = [str(s) for s in p.samples.load_dataset(method="spatial").samples.sample_id.tolist()]
    gold = tmp_path / "gold.csv"
    gold.write_text("target,task,answer\n" + "".join(f"{t},{TASK},{'PASS' if k % 2 else 'FAIL'}\n"
                                                     for k, t in enumerate(ids[-8:])), encoding="utf-8")
    assert main(["audit", "gold", "import", str(gold), "--project", str(project)]) == 0
    assert f"imported 8 gold answer(s) from {gold}: 8 {TASK}" in capsys.readouterr().out
    assert main(["audit", "draw", "--project", str(project), "--method", "spatial", "--size", "12", "--seed", "3",
                 "--raters", ",".join(RATERS), "--k", "3", "--gold-rate", "0.25"]) == 0
    out = capsys.readouterr().out
    assert "stored audit set #1" in out and "(4 of them gold)" in out and "ann: 0 / " in out
    with Project.open(project) as p:
        items = p.audit.items(1)
        answers = gold_answers(p, TASK)
        for t, rc in items:
            if rc:
                continue
            for who in RATERS:
                value = answers.get(t, "PASS") if who != "cal" else "UNDECIDABLE"
                p.labels.add(TASK, "sample", t, who, value, audit_set_id=1)
    assert main(["audit", "progress", "--project", str(project), "--set", "1"]) == 0
    assert "(16 / 16 first passes)" in capsys.readouterr().out
    assert main(["audit", "qualification", "--project", str(project), "--task", TASK, "--min-accuracy", "0.9",
                 "--min-items", "4"]) == 0
    out = capsys.readouterr().out
    assert "qualification: ≥ 90 % on ≥ 4 gold items" in out
    assert "ann: gold 4/4 = 100 %" in out and "cal: gold 0/4 = 0 %" in out and "left out: gold 0/4 < 90 %" in out
    assert main(["audit", "gold", "show", "--project", str(project), "--task", TASK]) == 0
    out = capsys.readouterr().out
    assert f"{TASK}: 8 gold answer(s)" in out and "ben: gold 4/4 = 100 % [51, 100] — qualified" in out
    assert main(["labels", "select", "--project", str(project), "--rule", "majority"]) == 0
    assert "cal left out: gold 0/4 < 90 %" in capsys.readouterr().out
    assert main(["audit", "qualification", "--project", str(project), "--min-accuracy", "90"]) == 2
    assert "a share in [0, 1]" in capsys.readouterr().err
    # adjudication: listed without names; a non-adjudicator is refused; the adjudicator records
    with Project.open(project) as p:
        p.labels.add(TASK, "sample", ids[0], "ann", "PASS")
        p.labels.add(TASK, "sample", ids[0], "ben", "FAIL")
    js = tmp_path / "adj.json"
    assert main(["audit", "adjudicate", "--project", str(project), "--task", TASK, "--list", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert f"{ids[0]}: FAIL ×1, PASS ×1 — raters disagree" in out and not any(r in out for r in RATERS)
    assert any(d["target_id"] == ids[0] for d in json.loads(js.read_text(encoding="utf-8")))
    rec = ["audit", "adjudicate", "--project", str(project), "--task", TASK, "--item", ids[0], "--value", "FAIL",
           "--note", "the dog is under the table"]
    assert main(rec + ["--as", "ann"]) == 2
    assert "ann is not an adjudicator" in capsys.readouterr().err
    assert main(["audit", "adjudicators", "--project", str(project), "--set", "lead"]) == 0
    assert "adjudicators: lead" in capsys.readouterr().out
    assert main(rec + ["--as", "lead"]) == 0
    assert "adjudicated FAIL by lead" in capsys.readouterr().out
    with Project.open(project, read_only=True) as p:
        res = resolve_project(p, TASK, LabelSelection(rule="adjudicated"))
        assert dict(zip(res.target_ids.tolist(), res.values.tolist()))[ids[0]] == "FAIL"
    assert main(["audit", "adjudicate", "--project", str(project), "--task", TASK, "--item", "nope", "--value",
                 "PASS", "--note", "x", "--as", "lead"]) == 2
    assert "not an item of spatial.verdict to adjudicate" in capsys.readouterr().err


@pytest.mark.parametrize("method,options", [("metalogic", []), ("protobias", []), ("dyeval", ["--set", "threshold=0.3"])])
def test_every_methods_targets_make_an_overlap_set_with_gold(method: str, options: list[str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.methods import get_method

    folder = tmp_path / "p"
    m = get_method(method)
    with Project.create(folder) as p:
        m.build_demo(p, small=True, workers=0)
    from workstation.commands.audit import population_of

    with Project.open(folder) as p:
        scheme, pop = population_of(p, method, {"threshold": 0.3} if method == "dyeval" else None)
        ids = [str(t) for t in pop.ids.tolist()]
        assert len(ids) >= 6, f"{method}: too few targets in the small demo"
        p.audit.add_gold(scheme.task, [(t, scheme.values[0], None) for t in ids[-2:]], "test")
    assert main(["audit", "draw", "--project", str(folder), "--method", method, "--size", "4", "--seed", "1",
                 "--raters", "a,b", "--k", "1", "--gold-rate", "0.2", *options]) == 0
    assert "(1 of them gold)" in capsys.readouterr().out
    with Project.open(folder) as p:
        assigned = p.audit.assignments(1)
        (g,) = [t for _a, t in p.audit.gold_items(1)]
        assert g in assigned["a"] and g in assigned["b"]  # gold to every rater; the others to one
        assert not (set(assigned["a"]) - {g}) & (set(assigned["b"]) - {g})
        assert len(assigned["a"]) == len(assigned["b"]) == 3
        q = JudgingQueue(scheme, SimpleNamespace(project=p, annotator="a"))
        q.set_targets(ids)
        items = p.audit.items(1)
        q.set_queue([q.index_of(t) for t, _rc in items], recheck=[rc for _t, rc in items], audit=audit_info(p, 1))
        assert {q.target_id(int(i)) for i in q.queue.tolist()} == set(assigned["a"])


def test_a_draw_that_took_every_gold_target_seeds_none(project: Path) -> None:
    with Project.open(project) as p:
        ds, _v, pop = _population(p)
        ids = [str(s) for s in ds.samples.sample_id.tolist()]
        _gold(p, ids, 2)
        aid = draw_audit_set(p, SCHEME, pop, name="all", size=len(ids), seed=1, gold_rate=0.2, recheck_fraction=0.0)
        assert p.audit.gold_items(aid) == set() and len(p.audit.items(aid)) == len(ids)
