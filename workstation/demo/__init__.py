"""The built-in demo: procedural scenes, classical scene detectors, and the demo builder.

Nothing here needs model weights: scenes are drawn from the prompts with a seeded error model
and known ground truth, and the detectors find the drawn shapes from the pixels.

- `scenes.render(prompt_row, seed, size=512) -> (image, truth)` — deterministic per (prompt, seed)
- `detector.SceneDetector` (primary) and `detector.TemplateSceneDetector` (secondary)
- `build.build_demo_dataset(folder, n_seeds=4, ...) -> (Dataset, truth rows)`
- `build.build_demo_project(folder, n_seeds=4, ...) -> summary` (store, checker, truth agreement)

Submodules are imported on use; OpenCV loads only when a scene is drawn or detected.
"""

from __future__ import annotations
