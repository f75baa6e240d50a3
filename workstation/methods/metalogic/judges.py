"""The MetaLogic method's judges (`workstation.evaluation.judges`) of its image pairs: the
comparison under each stored config with stored outcomes (``metalogic.compare:<config hash>``:
ALIGNED / MISALIGNED / UNDECIDABLE, its confidence as the score), and the paper's decision under
the active config (``metalogic.paper:<config hash>``: the same detections without the abstention
bands, ALIGNED / MISALIGNED, never abstaining). An image pair without a stored outcome under a
config is not judged by that config's judge. Listed from the store; computed when asked."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.judges import Judge, MethodJudges, Targets
from .results import LABEL_SCHEME, VERDICTS

TASK = LABEL_SCHEME.task


def _data(project: Any, t: Targets) -> Any:
    data = t.cache.get("data")
    if data is None:
        from .adapter import load_project

        data = t.cache["data"] = load_project(project)
    return data


def _targets(project: Any) -> Targets:
    from .adapter import load_project
    from .results import suite_pairs

    data = load_project(project)
    ids = np.asarray(data.pair_id, dtype=object)
    return Targets(ids, np.asarray(suite_pairs(ids), dtype=object), {"data": data})


def _human(project: Any, t: Targets) -> np.ndarray:
    from ...evaluation.selection import resolve_project

    got = resolve_project(project, TASK).as_dict()
    out = np.empty(len(t), dtype=object)
    out[:] = [v if v in VERDICTS else None for v in (got.get(str(i)) for i in t.ids.tolist())]
    return out


def _compare(eval_id: int) -> Any:
    def compute(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
        from .store import load_outcomes

        cols = load_outcomes(project, eval_id)
        got = {str(i): (str(v), float(c) if c is not None else np.nan)
               for i, v, c in zip(cols["image_pair"].tolist(), np.asarray(cols.get("verdict", [])).tolist(),
                                  np.asarray(cols.get("conf", [])).tolist())}
        hit = [got.get(str(i)) for i in t.ids.tolist()]
        return (np.array([h[0] if h is not None and h[0] in VERDICTS else None for h in hit], dtype=object),
                np.array([h[1] if h is not None else np.nan for h in hit], np.float64))
    return compute


def _paper(eval_id: int) -> Any:
    def compute(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
        from .compare import paper_outcomes
        from .config import MetaLogicConfig

        cfg = MetaLogicConfig.from_dict(project.evaluations.get(eval_id, "metalogic")["config"])
        data = _data(project, t)
        verdict = paper_outcomes(data.pairs, cfg)[0]
        row = data.row_of()
        out = np.empty(len(t), dtype=object)
        out[:] = [VERDICTS[int(verdict[row[str(i)]])] if str(i) in row else None for i in t.ids.tolist()]
        return out, np.full(len(t), np.nan)
    return compute


def metalogic_judges(project: Any) -> MethodJudges:
    from .store import has_outcomes

    judges: list[Judge] = []
    stored: set[int] = set()
    if has_outcomes(project):
        stored = {int(r[0]) for r in project.con.execute(
            "SELECT DISTINCT eval_id FROM metalogic_outcomes").fetchall()}
    for ev in project.evaluations.all("metalogic"):
        eid = int(ev["eval_id"])
        if eid in stored:
            h = str(ev["content_hash"])
            judges.append(Judge(f"metalogic.compare:{h}", f"the comparison under config v{eid}", h, TASK, VERDICTS,
                                _compare(eid), abstain="UNDECIDABLE", score="the comparison's confidence"))
    active = project.evaluations.active_id("metalogic")
    if active is not None:
        h = str(project.evaluations.get(active, "metalogic")["content_hash"])
        judges.append(Judge(f"metalogic.paper:{h}", f"the paper's decision under config v{active} (no abstention)",
                            h, TASK, ("ALIGNED", "MISALIGNED"), _paper(active)))
    return MethodJudges("metalogic", TASK, VERDICTS, tuple(judges), _targets, _human, abstain="UNDECIDABLE",
                        item="image pair", cluster="prompt pair")
