"""The built-in demo's backends: procedural scenes (a generator) and classical scene detectors.

Nothing here needs model weights: scenes are drawn from the prompts with a seeded error model
and known ground truth, and the detectors find the drawn shapes from the pixels.

- `scenes.render(prompt_row, seed, size=512) -> (image, truth)` — deterministic per (prompt, seed)
- `detector.SceneDetector` (primary) and `detector.TemplateSceneDetector` (secondary)
- `classes.DEMO_OBJECTS` — the thirty classes they draw and find

Each method builds its part of the demo project from these (e.g. `methods.spatial.demo`).

Submodules are imported on use; OpenCV loads only when a scene is drawn or detected.

The procedural generator draws the prompt rows of a method other than the spatial one with that
method's own renderer (``render_demo_row`` of its method object): the methods' registry sets the
lookup here when it is imported (`set_method_lookup`), so the kernel names no method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_method_lookup: Callable[[str], Any] | None = None


def set_method_lookup(lookup: Callable[[str], Any]) -> None:
    """The function that gives a method object by name (the methods' registry sets it)."""
    global _method_lookup
    _method_lookup = lookup


def method_renderer(method: str) -> Any:
    """The procedural renderer of a method's prompt rows: ``render_demo_row(row, seed, size=...) ->
    (RGB uint8 image, truth dict)`` of the method object registered as ``method``."""
    from ..types import WorkstationError

    if _method_lookup is None:
        raise WorkstationError(f"the procedural generator cannot draw prompts of method {method!r}: "
                               "no method is registered in this process")
    fn = getattr(_method_lookup(method), "render_demo_row", None)
    if fn is None:
        raise WorkstationError(f"the procedural generator cannot draw prompts of method {method!r}")
    return fn
