"""The built-in demo: procedural scenes, a classical scene detector, and the demo project builder.

Nothing here needs model weights: the scenes are drawn from the prompts (with a seeded error
model and known ground truth) and the detectors find the drawn shapes from the pixels.
Heavy modules (OpenCV) load when a function is called.
"""

from __future__ import annotations
