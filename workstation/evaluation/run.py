"""Evaluate a method over a project and store the result set as an evaluation version."""

from __future__ import annotations

from typing import Any


def config_of(project: Any, method: Any, eval_id: int | None) -> tuple[int | None, Any]:
    """(version, config) of ``eval_id``, or of the method's active version, or (None, default)."""
    if eval_id is None:
        eval_id = project.evaluations.active_id(method.name)
    if eval_id is None:
        return None, method.default_config()
    return eval_id, method.config_from_dict(project.evaluations.get(eval_id, method.name)["config"])


def evaluate_and_store(project: Any, method: Any, eval_id: int | None = None, *, cfg: Any = None,
                       note: str = "", data: Any = None) -> tuple[int, Any]:
    """Results of ``method`` for the whole project under version ``eval_id`` (the active one when
    None; a new version of ``cfg`` when given), stored with that version in one transaction.
    Returns (version, results)."""
    if data is None:
        data = method.load(project)
    if cfg is not None:
        eval_id = project.evaluations.save(method.name, cfg.to_dict(), cfg.content_hash(),
                                           name=getattr(cfg, "name", "") or "", note=note, parent_id=eval_id)
    else:
        eval_id, cfg = config_of(project, method, eval_id)
        if eval_id is None:
            eval_id = project.evaluations.save(method.name, cfg.to_dict(), cfg.content_hash(),
                                               name=getattr(cfg, "name", "") or "", note=note or "default config")
    results = method.evaluate(data, cfg)
    with project.transaction():
        method.save_results(project, eval_id, data, results)
    return eval_id, results
