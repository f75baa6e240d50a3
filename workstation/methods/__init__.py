"""Evaluation methods, registered by name and imported only when used.

Each method is a package ``workstation.methods.<name>`` whose ``METHOD`` object satisfies
`workstation.evaluation.Method`. Adding a method is a folder and one line here. Methods never
import each other (an import-linter contract in pyproject.toml).
"""

from __future__ import annotations

from typing import Any

from ..demo import set_method_lookup
from ..registry import Registry
from ..types import WorkstationError

METHODS: Registry[Any] = Registry("method")
METHODS.register("spatial", "workstation.methods.spatial.method:METHOD",
                 description="SpatialBench-UC: an abstaining checker of two objects' spatial relation")
METHODS.register("metalogic", "workstation.methods.metalogic.method:METHOD",
                 description="MetaLogic: are two images of logically equivalent prompts the same scene?")
METHODS.register("protobias", "workstation.methods.protobias.method:METHOD",
                 description="ProtoBias: do image-text metrics prefer the prototypical image to the correct one?")
METHODS.register("dyeval", "workstation.methods.dyeval.method:METHOD",
                 description="DyEval: interactive test trees that grow where the model is strong and dig where it fails")


def get_method(name: str) -> Any:
    """The registered method object (its package is imported now)."""
    return METHODS.get(name)


def method_names() -> list[str]:
    return METHODS.names()


# the demo's procedural generator draws each method's prompt rows with the method's own renderer
set_method_lookup(get_method)


def after_samples_changed(project: Any) -> None:
    """After a command changed the project's samples or detections: every method's
    ``after_samples_changed`` hook, where it has one (spatial readies the window's next open)."""
    for name in METHODS.names():
        hook = getattr(get_method(name), "after_samples_changed", None)
        if hook is not None:
            hook(project)


def merge_samples(target: Any, source: Any, new_ids: list[str], same_ids: list[str]) -> list[tuple[str, str]]:
    """While `merge` brings a shard project's samples into ``target``: every method's
    ``merge_samples`` hook, where it has one (spatial copies the recorded stabilities of the new
    samples); the identical samples (``same_ids``) some method's own rows of differ, with what
    differs."""
    differ: list[tuple[str, str]] = []
    for name in METHODS.names():
        hook = getattr(get_method(name), "merge_samples", None)
        if hook is not None:
            differ += hook(target, source, new_ids, same_ids)
    return differ


def methods_with_data(project: Any, wanted: list[str] | None) -> list[Any]:
    """The ``wanted`` methods (a clear error for an unknown name), or every method with data in
    the project (an error when there is none)."""
    if wanted:
        for name in wanted:
            METHODS.entry(name)  # a clear error naming the registered methods
        return [get_method(n) for n in wanted]
    found = [get_method(n) for n in METHODS.names()]
    found = [m for m in found if m.has_data(project)]
    if not found:
        raise WorkstationError(f"the project {project.folder} has no samples of any method; import or "
                               "generate a run first")
    return found


def method_judges(project: Any, name: str) -> Any:
    """The judges of method ``name`` in a project (`workstation.evaluation.judges.MethodJudges`,
    listed, not computed) from its ``judges`` hook; None for a method without one or without data."""
    m = get_method(name)
    hook = getattr(get_method(name), "judges", None)
    if hook is None or not m.has_data(project):
        return None
    return hook(project)
