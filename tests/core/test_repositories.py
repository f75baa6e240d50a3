"""The project's repositories (`workstation.store`): each part of a project is an object of its
own, reached through the project (``project.labels``, ``project.audit``, ...), sharing its
connection, transactions and read-only state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.store import (AuditRepo, EvaluationsRepo, JobsRepo, LabelsRepo, PlansRepo, Project, ProjectError,
                               SamplesRepo, ScoresRepo)

TASK = "metalogic.pair"


@pytest.fixture
def project(tmp_path: Path) -> Any:
    with Project.create(tmp_path / "p") as p:
        yield p


def test_a_project_holds_one_repository_of_each_kind(project: Project) -> None:
    kinds = {"samples": SamplesRepo, "labels": LabelsRepo, "evaluations": EvaluationsRepo, "audit": AuditRepo,
             "plans": PlansRepo, "scores": ScoresRepo, "jobs": JobsRepo}
    for name, kind in kinds.items():
        assert type(getattr(project, name)) is kind, name
    assert project.labels.con is project.con and project.samples.folder == project.folder


def test_the_label_log_keeps_every_event_and_the_latest_counts(project: Project) -> None:
    labels = project.labels
    first = labels.add(TASK, "pair", "pair-1", "ann", "aligned")
    labels.add(TASK, "pair", "pair-1", "ann", "misaligned", notes="second look")
    labels.add(TASK, "pair", "pair-2", "bob", "aligned")
    assert [e.value for e in labels.events(task=TASK, target_id="pair-1")] == ["aligned", "misaligned"]
    assert {(e.target_id, e.value) for e in labels.latest(TASK)} == {("pair-1", "misaligned"), ("pair-2", "aligned")}
    assert labels.annotators(TASK) == ["ann", "bob"] and labels.tasks() == {TASK: 3}
    assert list(labels.table(TASK)["event_id"]) == [first, first + 1, first + 2]
    n = labels.add_bulk(TASK, "pair", {"target_id": ["pair-3"], "annotator": ["cy"], "value": ["aligned"]})
    assert n == 1 and [e.annotator for e in labels.standing(TASK)] == ["ann", "bob", "cy"]


def test_a_write_rolled_back_by_another_repository_is_not_seen_in_the_kept_events(project: Project) -> None:
    """The label log keeps the events it read until the next write: it sees a label written in a
    transaction, and once another repository's failure rolls the transaction back, it no
    longer sees it."""
    project.labels.add(TASK, "pair", "pair-1", "ann", "aligned")
    assert len(project.labels.events_of(TASK, ["pair-1"])["pair-1"]) == 1  # read, now kept
    with pytest.raises(ProjectError), project.transaction():
        project.labels.add_bulk(TASK, "pair", {"target_id": ["pair-1"], "annotator": ["bob"], "value": ["x"]})
        assert [e.annotator for e in project.labels.events_of(TASK, ["pair-1"])["pair-1"]] == ["ann", "bob"]
        project.audit.create_set("queue", TASK, ["pair-1"], {})
        project.evaluations.get(12345)  # no such version: the whole transaction goes
    assert [e.annotator for e in project.labels.events_of(TASK, ["pair-1"])["pair-1"]] == ["ann"]
    assert project.audit.sets() == []


def test_evaluations_are_numbered_versions_with_one_active_per_method(project: Project) -> None:
    ev = project.evaluations
    a = ev.save("metalogic", {"axis_margin": 0.2}, "h1", note="first")
    b = ev.save("metalogic", {"axis_margin": 0.3}, "h2", parent_id=a)
    assert [e["eval_id"] for e in ev.all("metalogic")] == [a, b] and ev.all("spatial") == []
    assert ev.get(b)["config"] == {"axis_margin": 0.3}
    ev.set_active("metalogic", a)
    assert ev.active_id("metalogic") == a
    with pytest.raises(ProjectError):
        ev.set_active("metalogic", 999)
    assert ev.active_id("metalogic") == a


def test_audit_sets_keep_their_queue_and_rechecks_and_filters_by_name(project: Project) -> None:
    audit = project.audit
    aid = audit.create_set("first", TASK, ["pair-1", "pair-2"], {"seed": 1}, rechecks=[(2, "pair-1")])
    audit.append_items(aid, [("pair-3", False)])
    assert audit.items(aid) == [("pair-1", False), ("pair-2", False), ("pair-1", True), ("pair-3", False)]
    assert [s["name"] for s in audit.sets(TASK)] == ["first"] and audit.sets("spatial.verdict") == []
    audit.save_filter("left only", {"relations": ["left_of"]})
    assert audit.saved_filters() == {"left only": {"relations": ["left_of"]}}


def test_a_plan_draws_into_an_audit_set_of_its_own(project: Project) -> None:
    items = {"item_id": ["a", "b"], "cluster": ["a", "b"], "outcome": [1.0, 0.0], "confidence": [0.9, 0.4],
             "targets": [["pair-1"], ["pair-2"]]}
    pid, aid = project.plans.create("rate", "metalogic", TASK, {"kind": "rate"}, {"strata": 1}, {}, items)
    assert [p["plan_id"] for p in project.plans.all("metalogic")] == [pid]
    assert project.plans.get(pid)["audit_set_id"] == aid and [s["audit_set_id"] for s in project.audit.sets()] == [aid]
    project.plans.add_draws(pid, [("b", False, ["pair-2"])])
    assert project.plans.draws(pid) == [("b", False)]
    assert project.audit.items(aid) == [("pair-2", False)]  # the plan's queue is its audit set's
    assert list(project.plans.items(pid)["item_id"]) == ["a", "b"]


def test_jobs_and_scores_are_recorded_and_read_back(project: Project) -> None:
    project.jobs.record("job-1", "detect", {"kind": "detect"}, status="queued")
    project.jobs.record("job-1", "detect", {"kind": "detect"}, status="done", done=3, total=3)
    assert [(j["job_id"], j["status"]) for j in project.jobs.all()] == [("job-1", "done")]
    assert project.scores.add({"sample_id": [], "scorer": [], "text": [], "score": []}) == 0
    assert project.scores.scorers() == [] and len(project.scores.table()["score"]) == 0


def test_a_read_only_project_refuses_every_repository_s_writes(project: Project) -> None:
    folder = project.folder
    project.close()
    with Project.open_snapshot(folder) as ro:
        writes = [lambda: ro.labels.add(TASK, "pair", "pair-1", "ann", "aligned"),
                  lambda: ro.evaluations.save("metalogic", {}, "h"),
                  lambda: ro.audit.create_set("q", TASK, ["pair-1"], {}),
                  lambda: ro.jobs.record("job-1", "detect", {}),
                  lambda: ro.samples.add_run("run-1"),
                  lambda: ro.scores.add({"sample_id": ["s"], "scorer": ["x"], "text": ["t"], "score": [np.float64(1)]})]
        for write in writes:
            with pytest.raises(ProjectError, match="read-only"):
                write()
