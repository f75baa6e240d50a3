"""The detector registry: detection backends by name, imported only when used."""

from __future__ import annotations

from typing import Any

from ..registry import Entry, Registry

__all__ = ["DETECTORS", "Entry", "Registry", "available_detectors", "create_detector"]

DETECTORS: Registry[Any] = Registry("detector")

_HF = ("torch", "transformers")
DETECTORS.register(
    "yolox", "workstation.detection.yolox:YoloxDetector",
    description="YOLOX ONNX export (COCO 80 classes) on the CPU with OpenCV DNN", aliases=("yolox_nano",),
)
DETECTORS.register(
    "owlv2", "workstation.detection.owl:OwlDetector", requires=_HF, defaults={"name": "owlv2"},
    description="OWLv2 open-vocabulary detection, text queries 'a photo of a {name}'",
)
DETECTORS.register(
    "owlvit", "workstation.detection.owl:OwlDetector", requires=_HF, defaults={"name": "owlvit"},
    description="OWL-ViT open-vocabulary detection, text queries 'a photo of a {name}'", aliases=("owl-vit",),
)
DETECTORS.register(
    "grounding_dino", "workstation.detection.grounding_dino:GroundingDinoDetector", requires=_HF,
    description="Grounding DINO open-set detection, caption 'name. name.'", aliases=("groundingdino", "gdino"),
)
DETECTORS.register(
    "detr", "workstation.detection.detr:DetrDetector", requires=_HF,
    description="DETR-family closed-vocabulary detection (COCO labels)",
)
DETECTORS.register(
    "florence2", "workstation.detection.florence2:Florence2Detector", requires=_HF,
    description="Florence-2 object detection / phrase grounding (native transformers)", aliases=("florence-2",),
)
DETECTORS.register(
    "faster_rcnn", "workstation.detection.torchvision_frcnn:FasterRCNNDetector", requires=("torch", "torchvision"),
    description="torchvision Faster R-CNN (COCO); needs torchvision", aliases=("fasterrcnn", "frcnn"),
)
DETECTORS.register(
    "fake", "workstation.detection.fake:FakeDetector",
    description="deterministic boxes without a model (tests of the job layer)",
)


# create_detector: build the detector registered as a name (e.g. ``create_detector("yolox", model=path)``);
# available_detectors: the registered detectors whose optional packages are installed
create_detector = DETECTORS.create
available_detectors = DETECTORS.available
