"""Detector backends behind one interface, registered by name, imported lazily.

Importing this package loads neither torch nor transformers (nor OpenCV's DNN models):
``create_detector(name, ...)`` imports the backend's module when a job asks for it.

Registered names: yolox (OpenCV DNN, ONNX), owlv2, owlvit, grounding_dino, detr, florence2
(transformers), faster_rcnn (torchvision, optional), fake (tests).
"""

from .base import (
    DEFAULT_SCORE_FLOOR,
    Detection,
    Detector,
    box_iou,
    detect_iter,
    detections_to_columns,
    nms,
)
from .registry import DETECTORS, Registry, available_detectors, create_detector
from .vocab import COCO, COCO_CLASSES, LabelVocabulary, normalize, query_text

__all__ = [
    "COCO", "COCO_CLASSES", "DEFAULT_SCORE_FLOOR", "DETECTORS", "Detection", "Detector", "LabelVocabulary",
    "Registry", "available_detectors", "box_iou", "create_detector", "detect_iter", "detections_to_columns",
    "nms", "normalize", "query_text",
]
