"""MetaLogic's human figures take the task's label selection: a second annotator's later
judgements change the human rate under "latest", not under "a1's label only", and show as
disputed under "majority" (counted in no rate); the report says which labels in its line and
records them in its provenance, the ``annotator=`` option meaning the rule annotator:NAME."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.methods.metalogic.test_project import build_hand_project
from workstation.evaluation.run import evaluate_and_store
from workstation.evaluation.selection import LabelSelection, save_selection
from workstation.methods import get_method
from workstation.methods.metalogic.config import MetaLogicConfig
from workstation.methods.metalogic.metrics import human_rates
from workstation.methods.metalogic.report import report_section
from workstation.methods.metalogic.store import human_selected

METHOD = get_method("metalogic")
TASK = "metalogic.pair"


def _rate(p: object, data: object, sel: LabelSelection | None = None) -> tuple[float, int, int]:
    chosen = human_selected(p, data, sel)
    r = human_rates(chosen.codes, chosen.disputed)
    return r["misaligned_rate"], r["judged"], r["disputed"]


def test_a_second_annotator_changes_the_human_rate_under_latest_only(tmp_path: Path) -> None:
    p, _ = build_hand_project(tmp_path / "p")
    try:
        data = METHOD.load(p)
        ids = data.pair_id.tolist()
        assert len(ids) == 4
        for pid, v in zip(ids, ("MISALIGNED", "ALIGNED", "ALIGNED", "ALIGNED")):
            p.labels.add(TASK, "pair", pid, "a1", v)
        assert _rate(p, data) == (0.25, 4, 0)
        for pid in ids[1:3]:  # a2's later judgements of two pairs, the other way
            p.labels.add(TASK, "pair", pid, "a2", "MISALIGNED")
        assert _rate(p, data) == (0.75, 4, 0)  # the most recent label of anyone wins
        assert _rate(p, data, LabelSelection(rule="annotator:a1")) == (0.25, 4, 0)
        rate, judged, disputed = _rate(p, data, LabelSelection(rule="majority"))
        assert (rate, judged, disputed) == (0.5, 2, 2)  # the two disputed pairs count in no rate
        chosen = human_selected(p, data, LabelSelection(rule="majority"))
        assert chosen.disputed.tolist() == [False, True, True, False]
        assert chosen.line(p) == ("labels: every audit set and free labelling, every annotator, majority (ties "
                                  "disputed) — 2 items, 2 disputed")
    finally:
        p.close()


def test_the_report_takes_the_kept_selection_and_records_it(tmp_path: Path) -> None:
    p, _ = build_hand_project(tmp_path / "p")
    try:
        data = METHOD.load(p)
        evaluate_and_store(p, METHOD, cfg=MetaLogicConfig(), data=data)
        ids = data.pair_id.tolist()
        for pid, v in zip(ids, ("MISALIGNED", "ALIGNED", "ALIGNED", "ALIGNED")):
            p.labels.add(TASK, "pair", pid, "a1", v)
        for pid in ids[1:3]:
            p.labels.add(TASK, "pair", pid, "a2", "MISALIGNED")
        save_selection(p, TASK, LabelSelection(rule="majority"))
        sec = report_section(p, tmp_path / "r1")
        labels = sec.meta["provenance"]["labels"]
        assert "human_labels" not in sec.meta["provenance"]
        assert labels["selection"]["rule"] == "majority" and labels["items"] == 2 and labels["disputed"] == 2
        assert labels["design"] == "free" and labels["line"].endswith("— 2 items, 2 disputed")
        human = sec.tables["human"][0]
        assert (human["misaligned"], human["aligned"], human["disputed"]) == (1, 1, 2)
        assert labels["line"] in (tmp_path / "r1" / "index.html").read_text(encoding="utf-8")
        confusion = sum(v for r in sec.tables["agreement"] for k, v in r.items() if k.startswith("human_"))
        assert confusion == 2
        # the annotator= option (`report --annotator a2`): the rule annotator:a2 over the kept selection
        sec2 = report_section(p, tmp_path / "r2", annotator="a2")
        lab2 = sec2.meta["provenance"]["labels"]
        assert lab2["selection"]["rule"] == "annotator:a2" and lab2["items"] == 2 and lab2["disputed"] == 0
        assert sec2.tables["human"][0]["misaligned_rate"] == 1.0
        assert np.isclose(report_section(p, tmp_path / "r3", annotator="a1").tables["human"][0]["misaligned_rate"],
                          0.25)
    finally:
        p.close()
