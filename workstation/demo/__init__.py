"""The built-in demo's backends: procedural scenes (a generator) and classical scene detectors.

Nothing here needs model weights: scenes are drawn from the prompts with a seeded error model
and known ground truth, and the detectors find the drawn shapes from the pixels.

- `scenes.render(prompt_row, seed, size=512) -> (image, truth)` — deterministic per (prompt, seed)
- `detector.SceneDetector` (primary) and `detector.TemplateSceneDetector` (secondary)
- `classes.DEMO_OBJECTS` — the thirty classes they draw and find

Each method builds its part of the demo project from these (e.g. `methods.spatial.demo`).

Submodules are imported on use; OpenCV loads only when a scene is drawn or detected.
"""

from __future__ import annotations
