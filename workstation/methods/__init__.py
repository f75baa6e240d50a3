"""Evaluation methods, registered by name and imported only when used.

Each method is a package ``workstation.methods.<name>`` whose ``METHOD`` object satisfies
`workstation.evaluation.Method`. Adding a method is a folder and one line here. Methods never
import each other (an import-linter contract in pyproject.toml).
"""

from __future__ import annotations

from typing import Any

from ..registry import Registry

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
