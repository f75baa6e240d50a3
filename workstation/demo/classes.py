"""The thirty object classes the procedural demo draws and its scene detector finds: COCO names,
each drawn as one (shape, colour) combination (see `scenes.STYLES`)."""

from __future__ import annotations

DEMO_OBJECTS: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "bus", "truck",
    "bench", "bird", "cat", "dog", "horse", "sheep",
    "cow", "elephant", "bear", "giraffe", "umbrella", "suitcase",
    "bottle", "cup", "bowl", "banana", "apple", "chair",
    "couch", "potted plant", "bed", "laptop", "clock", "vase",
)
