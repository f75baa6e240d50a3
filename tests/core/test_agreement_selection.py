"""The agreement between annotators (the window's Agreement dialog and adjudication,
`audit_sets.task_agreement`) compares the labels of the task's label selection: restricted to
one audit set it counts that set's labels only, its line says so, and a consensus rule does not
narrow the annotators compared."""

from __future__ import annotations

from pathlib import Path

from workstation.evaluation.audit_sets import task_agreement
from workstation.evaluation.selection import LabelSelection, agreement_labels_project, save_selection, set_names
from workstation.methods.metalogic.results import LABEL_SCHEME
from workstation.store import Project

TASK = LABEL_SCHEME.task


def test_agreement_restricted_to_one_audit_set(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        free = [f"pair{i}|r|0" for i in range(6)]
        in_set = [f"pair{i}|r|0" for i in range(6, 10)]
        for t in free:  # free labelling: a1 and a2 always disagree
            p.labels.add(TASK, "pair", t, "a1", "ALIGNED")
            p.labels.add(TASK, "pair", t, "a2", "MISALIGNED")
        aid = p.audit.create_set("blind", TASK, in_set, {"size": 4, "seed": 0})
        for t in in_set:  # in the audit set they agree, and a3 labels two
            p.labels.add(TASK, "pair", t, "a1", "ALIGNED", audit_set_id=aid)
            p.labels.add(TASK, "pair", t, "a2", "ALIGNED", audit_set_id=aid)
        for t in in_set[:2]:
            p.labels.add(TASK, "pair", t, "a3", "MISALIGNED", audit_set_id=aid)
        p.labels.add(TASK, "pair", in_set[0], "a1", "MISALIGNED", audit_set_id=aid, source="recheck")

        rows, disagree = task_agreement(p, LABEL_SCHEME)
        a12 = next(r for r in rows if (r["annotator_a"], r["annotator_b"]) == ("a1", "a2"))
        assert a12["n"] == 10 and len(disagree) == 6 + 2  # every label; a1's re-check counts by default

        save_selection(p, TASK, LabelSelection(sets=(aid,), free=False, rechecks=False, rule="annotator:a3"))
        labels = agreement_labels_project(p, TASK)
        assert labels.describe(set_names(p, TASK)) == (f"labels: audit set #{aid} (blind), every annotator, first "
                                                       "passes — 4 items")
        rows, disagree = task_agreement(p, LABEL_SCHEME)
        pairs = {(r["annotator_a"], r["annotator_b"]): (r["n"], r["percent_agreement"]) for r in rows}
        assert pairs == {("a1", "a2"): (4, 1.0), ("a1", "a3"): (2, 0.0), ("a2", "a3"): (2, 0.0)}
        assert disagree == in_set[:2]

        save_selection(p, TASK, LabelSelection(annotators=("a1", "a2"), sets=(aid,), free=False, rechecks=False))
        rows, disagree = task_agreement(p, LABEL_SCHEME)
        assert [(r["annotator_a"], r["annotator_b"], r["n"], r["percent_agreement"]) for r in rows] == \
            [("a1", "a2", 4, 1.0)]
        assert disagree == []
