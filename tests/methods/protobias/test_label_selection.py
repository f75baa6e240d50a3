"""ProtoBias's human tables take the task's label selection (the mean rating per image by
default, a named annotator's alone, a majority that disputes ties); the agreement table between
annotators takes the selection's annotators, audit sets and re-checks but not its rule; the
report records which labels; a config's annotators count only while no selection is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.methods.protobias.test_protobias_project import make_project, row
from workstation.evaluation.run import evaluate_and_store
from workstation.evaluation.selection import LabelSelection, save_selection
from workstation.methods import get_method
from workstation.methods.protobias.config import ProtoBiasConfig
from workstation.methods.protobias.data import selected_ratings
from workstation.methods.protobias.tables import audit_tables
from workstation.store import Project

M = get_method("protobias")
TASK = "protobias.fidelity"


@pytest.fixture
def project(tmp_path: Path) -> Any:
    p = make_project(tmp_path / "p")
    yield p
    p.close()


def _tables(p: Project, sel: LabelSelection | None = None, cfg: ProtoBiasConfig | None = None) -> Any:
    d = M.load(p)
    res = M.evaluate(d, cfg or ProtoBiasConfig(n_boot=0))
    return audit_tables(d, res, None if sel is None else selected_ratings(d, sel))


def test_a_second_annotator_changes_the_ratings_under_mean_not_under_one_annotator(project: Project) -> None:
    alice = LabelSelection(rule="annotator:alice")
    pa_alice = np.mean([1, 2, 1]) / 3  # alice's I_adv ratings 2, 3, 2 (her later 2 of s3a)
    assert row(_tables(project, alice)["human"], domain="all")["pa"] == pytest.approx(pa_alice)
    # the default: first passes, the mean rating of every annotator per image (bob's count)
    t = _tables(project)
    assert row(t["human"], domain="all")["pa"] == pytest.approx(np.mean([1.0, 2.0, 0.5]) / 3)
    assert t["summary"][0]["labels"] == ("labels: every audit set and free labelling, every annotator, first "
                                        "passes, mean rating — 6 items")
    # carol's later ratings: they move the mean, not alice's table
    project.labels.add(TASK, "image", "s1a", "carol", "4")
    project.labels.add(TASK, "image", "s1c", "carol", "1")
    mean = row(_tables(project)["human"], domain="all")
    assert mean["pa"] == pytest.approx(np.mean([(2 + 2 + 4) / 3 - 1, 2.0, 0.5]) / 3)
    assert row(_tables(project, alice)["human"], domain="all")["pa"] == pytest.approx(pa_alice)
    # majority: s1c (4, 3, 1), s2c (3, 4) and s3a (2, 1) are disputed: no triplet has two rated images
    t = _tables(project, LabelSelection(rule="majority", rechecks=False))
    assert row(t["human"], domain="all")["n"] == 0 and t["summary"][0]["disputed_images"] == 3
    assert t["summary"][0]["labels"].endswith("majority (ties disputed) — 3 items, 3 disputed")


def test_the_agreement_table_takes_the_selections_sets_not_its_rule(project: Project) -> None:
    all_pairs = {(k["annotator_a"], k["annotator_b"]): k["n"] for k in _tables(project)["annotator_kappa"]}
    assert all_pairs == {("alice", "bob"): 5}
    # the rule is a consensus: a named annotator's rule does not narrow the agreement table
    named = _tables(project, LabelSelection(rule="annotator:alice"))
    assert [(k["annotator_a"], k["annotator_b"], k["n"]) for k in named["annotator_kappa"]] == [("alice", "bob", 5)]
    # an audit set of two images, rated by both in the set
    aid = project.audit.create_set("blind", TASK, ["s1c", "s3c"], {"size": 2, "seed": 0})
    for who, r in (("alice", "4"), ("bob", "3")):
        for s in ("s1c", "s3c"):
            project.labels.add(TASK, "image", s, who, r, audit_set_id=aid)
    t = _tables(project, LabelSelection(sets=(aid,), free=False, rule="mean"))
    (k,) = t["annotator_kappa"]
    assert (k["annotator_a"], k["annotator_b"], k["n"], k["percent_agreement"]) == ("alice", "bob", 2, 0.0)
    assert t["summary"][0]["agreement_labels"] == f"labels: audit set #{aid} (blind), every annotator — 2 items"
    # the selection's annotators do narrow it
    assert _tables(project, LabelSelection(annotators=("alice",)))["annotator_kappa"] == []


def test_the_report_records_the_labels_and_a_config_annotators_only_while_none_is_kept(project: Project,
                                                                                      tmp_path: Path) -> None:
    evaluate_and_store(project, M, cfg=ProtoBiasConfig(n_boot=0, annotators=("alice",)))
    sec = M.report_section(project, tmp_path / "r1")
    labels = sec.meta["provenance"]["labels"]
    assert labels["selection"]["annotators"] == ["alice"] and labels["config_annotators"] == ["alice"]
    assert labels["line"].startswith("labels: every audit set and free labelling, alice, first passes, mean rating")
    assert labels["line"] in (tmp_path / "r1" / "index.html").read_text(encoding="utf-8")
    assert "annotator_filter" not in sec.tables["summary"][0]
    # a kept selection alone decides
    save_selection(project, TASK, LabelSelection(annotators=("bob",), rule="mean"))
    sec = M.report_section(project, tmp_path / "r2")
    assert sec.meta["provenance"]["labels"]["selection"]["annotators"] == ["bob"]
    # report --annotator NAME: the rule annotator:NAME
    sec = M.report_section(project, tmp_path / "r3", annotator="alice")
    assert sec.meta["provenance"]["labels"]["selection"]["rule"] == "annotator:alice"
