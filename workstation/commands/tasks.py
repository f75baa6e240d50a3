"""The registered methods' label tasks, by the names the commands' ``--task`` takes (no method
named: the window's rater panel reads them too)."""

from __future__ import annotations


def label_tasks() -> dict[str, str]:
    """Every registered method's label tasks: task -> method."""
    from ..methods import get_method, method_names

    out: dict[str, str] = {}
    for m in method_names():
        for scheme in getattr(get_method(m), "label_schemes", ()):
            out[scheme.task] = m
    return out


def resolve_tasks(choice: str) -> list[str]:
    """``--task``: a task, a method's name (its tasks) or ``all``; WorkstationError otherwise."""
    from ..types import WorkstationError

    tasks = label_tasks()
    if choice == "all":
        return list(tasks)
    if choice in tasks:
        return [choice]
    mine = [t for t, m in tasks.items() if m == choice]
    if mine:
        return mine
    raise WorkstationError(f"unknown label task {choice!r}; choose a task ({', '.join(tasks)}), a method "
                           f"({', '.join(dict.fromkeys(tasks.values()))}) or all")
