"""The DyEval method's judges (`workstation.evaluation.judges`) of the images of its test trees:
the trees' recorded pre-mark scores (``dyeval.premark``: each tree's ``premark_scorer``'s — CLIPScore,
or on the built-in demo the demo's own object finder "demo-objects") and each scorer with scores of
the images against their prompt's text (``dyeval.score:<scorer id>``), each PASSing an image whose
score is at or above its tree's ``premark_threshold`` and FAILing it below; an image without a
score, or of a tree without a threshold, is not judged."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.judges import Judge, MethodJudges, Targets
from .tree import FAIL, LABEL_SCHEME, PASS

TASK = LABEL_SCHEME.task
VALUES = (PASS, FAIL)


def _images(project: Any) -> list[tuple[str, str, float | None, str, float | None]]:
    """(image id, owner, recorded score, owner text, threshold) of every image of every tree."""
    from .store import TreeStore

    store = TreeStore(project)
    out: list[tuple[str, str, float | None, str, float | None]] = []
    if not store.ready:
        return out
    for tid in store.tree_ids():
        tree = store.load(tid, persist=False)
        th = tree.config.premark_threshold
        for iid in sorted(tree.images):
            img = tree.images[iid]
            out.append((str(iid), str(img.owner), img.clip_score, str(tree.step_owner_text(img.owner)), th))
    return out


def _targets(project: Any) -> Targets:
    rows = _images(project)
    return Targets(np.array([r[0] for r in rows], dtype=object), np.array([r[1] for r in rows], dtype=object),
                   {"images": rows})


def _human(project: Any, t: Targets) -> np.ndarray:
    from ...evaluation.selection import resolve_project

    got = resolve_project(project, TASK).as_dict()
    out = np.empty(len(t), dtype=object)
    out[:] = [v if v in VALUES else None for v in (got.get(str(i)) for i in t.ids.tolist())]
    return out


def _at_threshold(score: np.ndarray, th: np.ndarray) -> np.ndarray:
    ok = np.isfinite(score) & np.isfinite(th)
    out = np.empty(len(score), dtype=object)
    out[:] = None
    out[ok & (score >= th)] = PASS
    out[ok & (score < th)] = FAIL
    return out


def _recorded(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
    rows = t.cache["images"]
    s = np.array([np.nan if r[2] is None else float(r[2]) for r in rows], np.float64)
    th = np.array([np.nan if r[4] is None else float(r[4]) for r in rows], np.float64)
    return _at_threshold(s, th), s


def _scorer(scorer: str) -> Any:
    def compute(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
        rows = t.cache["images"]
        tab = project.scores.table(scorer, sample_ids=[r[0] for r in rows])
        by = {(str(a), str(b)): float(c) for a, b, c in zip(tab["sample_id"].tolist(), tab["text"].tolist(),
                                                           tab["score"].tolist())}
        s = np.array([by.get((r[0], r[3]), np.nan) for r in rows], np.float64)
        th = np.array([np.nan if r[4] is None else float(r[4]) for r in rows], np.float64)
        return _at_threshold(s, th), s
    return compute


def _premark_scorers(project: Any) -> list[str]:
    """The pre-mark scorers the project's trees name (sorted, without repeats), read from each
    tree's first event (its config; no tree is replayed)."""
    import json

    from .config import DyEvalConfig
    from .store import TreeStore

    if not TreeStore(project).ready:
        return []
    names = set()
    for (event,) in project.con.execute("SELECT event FROM dyeval_events WHERE seq = 1").fetchall():
        cfg = json.loads(event).get("config") or {}
        names.add(str(cfg.get("premark_scorer", DyEvalConfig.premark_scorer) or ""))
    return sorted(names - {""})


def dyeval_judges(project: Any) -> MethodJudges:
    named = ", ".join(_premark_scorers(project)) or "none named"
    judges = [Judge("dyeval.premark", f"the trees' recorded pre-mark scores ({named}) at each tree's threshold",
                    "recorded", TASK, VALUES, _recorded, score=f"the recorded pre-mark score ({named})")]
    sids = project.con.execute(
        "SELECT DISTINCT sc.scorer FROM scores sc JOIN samples s USING (sample_id) JOIN prompts p "
        "USING (prompt_id) WHERE p.method = 'dyeval' ORDER BY sc.scorer").fetchall()
    for (scorer,) in sids:
        judges.append(Judge(f"dyeval.score:{scorer}", f"the scorer {scorer} at each tree's threshold", str(scorer),
                            TASK, VALUES, _scorer(str(scorer)), score="its score against the image's prompt"))
    return MethodJudges("dyeval", TASK, VALUES, tuple(judges), _targets, _human, item="image", cluster="prompt")
