"""The ``evaluate`` job kind: a method's results for the whole project, stored with its version.

It needs the database and is fast (vectorised), so it runs in the process that holds the
project. It lives with the methods because it looks them up by name."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from ..evaluation.run import evaluate_and_store
from ..jobs.kinds import JobKind
from ..jobs.progress import DONE, RUNNING, Progress
from . import METHODS, get_method

if TYPE_CHECKING:  # pragma: no cover
    from ..jobs.spec import JobSpec
    from ..store import Project


def method_of(spec: "JobSpec") -> str:
    return spec.method or "spatial"  # specs written before methods had names evaluated the spatial checker


class EvaluateKind(JobKind):
    name = "evaluate"
    inline = True
    unit = "item"

    def describe(self, spec: "JobSpec") -> str:
        return f"evaluate {method_of(spec)}" + (f" version v{spec.config_id}" if spec.config_id else " active version")

    def check(self, spec: "JobSpec") -> None:
        METHODS.entry(method_of(spec))

    def run_inline(self, project: "Project", spec: "JobSpec") -> Generator[Progress, None, None]:
        method = get_method(method_of(spec))
        yield Progress(0, 1, message=f"loading the {method.name} data", state=RUNNING)
        data = method.load(project)
        yield Progress(0, 1, message=f"evaluating {method.name}", state=RUNNING)
        eid, results = evaluate_and_store(project, method, spec.config_id, data=data)
        yield Progress(1, 1, message=f"{len(results)} {results.item_kind} result(s) of {method.name} under version "
                                     f"v{eid}", state=DONE)


KIND = EvaluateKind()
