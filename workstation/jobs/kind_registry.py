"""The job kinds by name: each a ``module:KIND`` imported only when a job of its kind is created,
described or run (`kinds.JobKind` says what a kind is). A new kind is one module and one line here.
Nothing of ``jobs`` is imported here, so every module of the folder may look a kind up."""

from __future__ import annotations

from typing import Any

from ..registry import Registry

KINDS: Registry[Any] = Registry("job kind")
KINDS.register("generate", "workstation.jobs.kind_generate:KIND", description="make images with a generator")
KINDS.register("detect", "workstation.jobs.kind_detect:KIND",
               description="run detectors on images and their perturbed copies")
KINDS.register("score", "workstation.jobs.kind_score:KIND", description="score images against texts with a metric")
KINDS.register("evaluate", "workstation.methods.evaluate_job:KIND",
               description="compute a method's results for the whole project")


def kind_object(name: str) -> Any:
    """The registered kind ``name`` (its module is imported now); `kinds.job_kind` types it."""
    return KINDS.get(name)
