"""Resolve a job spec's generator / detector to a backend object (inside the worker only).

Generators come from ``workstation.generation``'s registry and detectors from
``workstation.detection``'s, both by name with lazy imports. The built-in demo backends are
added to those registries here if their package has not registered them itself:

* ``procedural`` — the demo's scene renderer (``workstation.demo.scenes.render``): draws each
  prompt's objects with a seeded error model, returns the ground truth with every image, needs
  no weights;
* ``scene`` — the demo's OpenCV scene detector (``workstation.demo.detector.SceneDetector``).

Backends that take the prompt rows themselves (the procedural one) expose
``generate_rows(rows, seeds, params) -> (images, truths)``; all others take prompt texts.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import WorkstationError

PROCEDURAL = "procedural"  # the built-in generator that needs no weights
SCENE = "scene"  # the built-in detector for procedural scenes


class ProceduralGenerator:
    """The demo's procedural scenes behind the generator interface (square images only)."""

    name = PROCEDURAL
    takes_rows = True

    def __init__(self, **_: Any) -> None:
        pass

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.name, "method": "demo_procedural", "model_id": "procedural",
                "renderer": "workstation.demo.scenes.render", "weights_fingerprint": "none"}

    @staticmethod
    def _size(params: Any) -> int:
        w, h = int(params.width), int(params.height)
        if w != h:
            raise WorkstationError(f"the procedural generator draws square images; got {w}×{h} "
                                   "(give the same --width and --height)")
        return w

    def generate_rows(self, rows: Sequence[dict[str, Any]], seeds: Sequence[int],
                      params: Any) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
        from ..demo import method_renderer
        from ..demo.scenes import render

        size = self._size(params)
        images, truths = [], []
        for row, seed in zip(rows, seeds):
            method = str(row.get("method") or "") if isinstance(row, dict) else ""
            if method and method != "spatial" and "relation" not in (row.get("attrs") or {}):
                img, truth = method_renderer(method)(row, int(seed), size=size)
            else:
                img, truth = render(row, int(seed), size=size)
            images.append(img)
            truths.append(truth)
        return images, truths

    def generate(self, request: Any, params: Any, progress: Any = None) -> list[np.ndarray]:
        raise WorkstationError("the procedural generator draws from prompt rows (relation and objects), "
                               "not from free text; run it through a job")


def _ensure_builtins() -> None:
    from ..generation import GENERATORS

    if PROCEDURAL not in GENERATORS:
        GENERATORS.register(PROCEDURAL, ProceduralGenerator,
                            description="the demo's procedural scenes with ground truth (no weights)")
    reg = detector_registry()
    if reg is not None and SCENE not in reg:
        reg.register(SCENE, "workstation.demo.detector:SceneDetector",
                     description="the demo's OpenCV scene detector for procedural images (no weights)")


def detector_registry() -> Any:
    """The detection package's registry object, or None while it has none."""
    try:
        mod = importlib.import_module("workstation.detection")
    except ImportError:  # pragma: no cover
        return None
    for attr in ("DETECTORS", "REGISTRY"):
        reg = getattr(mod, attr, None)
        if reg is not None:
            return reg
    try:
        reg_mod = importlib.import_module("workstation.detection.registry")
    except ImportError:  # pragma: no cover
        return None
    return getattr(reg_mod, "DETECTORS", None)


def generator_names() -> list[str]:
    from ..generation import GENERATORS

    _ensure_builtins()
    return GENERATORS.names()


def detector_names() -> list[str]:
    _ensure_builtins()
    reg = detector_registry()
    names = set(reg.names()) if reg is not None else set()
    names.add(SCENE)
    return sorted(names)


def make_generator(gspec: dict[str, Any]) -> Any:
    """Build the generator of a job spec. Model folders are checked here (clear errors)."""
    from ..generation import GENERATORS

    _ensure_builtins()
    name = str(gspec.get("name") or PROCEDURAL)
    model = gspec.get("model")
    kwargs: dict[str, Any] = dict(gspec.get("options") or {})
    if name != PROCEDURAL:
        if not model:
            raise WorkstationError(f"generator {name!r} needs a model: a local folder or a Hugging Face id")
        kwargs["model"] = model
    return GENERATORS.create(name, **kwargs)


def make_detector(dspec: dict[str, Any]) -> Any:
    """Build a detector of a job spec (``{"name", "model", "options"}``)."""
    _ensure_builtins()
    name = str(dspec.get("name") or "")
    if not name:
        raise WorkstationError("a detection job needs a detector name")
    model = dspec.get("model")
    kwargs: dict[str, Any] = dict(dspec.get("options") or {})
    if model:
        kwargs["model"] = model
    reg = detector_registry()
    if reg is None:
        if name.lower() != SCENE:
            raise WorkstationError(f"unknown detector {name!r}; available: {SCENE}")
        from ..demo.detector import SceneDetector

        return SceneDetector(**kwargs)
    return reg.create(name, **kwargs)


def generation_params(gspec: dict[str, Any], batch_size: int) -> Any:
    from ..generation import GenerationParams

    d = dict(gspec.get("params") or {})
    d["batch_size"] = int(batch_size)
    return GenerationParams.from_dict(d)


def is_out_of_memory(e: BaseException) -> bool:
    """The backends' OutOfMemory, or a raw CUDA / MPS out-of-memory error."""
    try:
        from ..generation import OutOfMemory

        if isinstance(e, OutOfMemory):
            return True
    except ImportError:  # pragma: no cover
        pass
    if type(e).__name__ in ("OutOfMemory", "OutOfMemoryError"):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e).lower()
