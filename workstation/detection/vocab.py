"""Vocabulary mapping between a suite's object names and each detector's labels.

Closed-vocabulary detectors (YOLOX, DETR, Faster R-CNN) speak the 80 COCO class names; a suite
may say "television", "sofa" or "plant". :class:`LabelVocabulary` resolves a suite name to the
detector's class (exact name, listed synonym, spacing / plural variants) and reports detections
under the name the suite asked for, so the checker can select by ``label == object name``.
Open-vocabulary detectors take the suite's names as text queries (``query_text``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

# The standard 80-name COCO list in the order COCO-trained YOLO / YOLOX models output them.
COCO_CLASSES: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
    "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip

# torchvision's 91-entry COCO category list (index = model label id; "N/A" ids are unused).
TORCHVISION_COCO_CATEGORIES: tuple[str, ...] = (
    "__background__", "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck",
    "boat", "traffic light", "fire hydrant", "N/A", "stop sign", "parking meter", "bench", "bird",
    "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "N/A", "backpack",
    "umbrella", "N/A", "N/A", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard",
    "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "N/A", "wine glass", "cup", "fork", "knife", "spoon", "bowl",
    "banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut",
    "cake", "chair", "couch", "potted plant", "bed", "N/A", "dining table", "N/A", "N/A", "toilet",
    "N/A", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven",
    "toaster", "sink", "refrigerator", "N/A", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush",
)  # fmt: skip

# COCO class → other names a suite or another detector may use for it (lower case).
COCO_SYNONYMS: dict[str, tuple[str, ...]] = {
    "person": ("man", "woman", "people", "human", "child", "boy", "girl", "pedestrian"),
    "bicycle": ("bike",),
    "motorcycle": ("motorbike", "motor bike"),
    "airplane": ("aeroplane", "plane", "aircraft", "jet", "airliner"),
    "tv": ("television", "tv monitor", "tvmonitor", "television set", "monitor", "tv set"),
    "couch": ("sofa",),
    "potted plant": ("pottedplant", "plant", "houseplant", "house plant", "pot plant", "plant pot"),
    "dining table": ("diningtable", "table"),
    "cell phone": ("phone", "mobile phone", "cellphone", "smartphone", "mobile"),
    "laptop": ("laptop computer", "notebook computer"),
    "hair drier": ("hair dryer", "hairdryer", "blow dryer"),
    "sports ball": ("ball", "football", "soccer ball", "basketball"),
    "donut": ("doughnut",),
    "mouse": ("computer mouse",),
    "remote": ("remote control",),
    "keyboard": ("computer keyboard",),
    "refrigerator": ("fridge",),
    "cup": ("mug",),
    "fire hydrant": ("hydrant",),
    "teddy bear": ("teddy", "teddybear", "stuffed bear"),
    "hot dog": ("hotdog",),
    "wine glass": ("wineglass",),
    "stop sign": ("stopsign",),
    "traffic light": ("traffic signal", "stoplight"),
    "tennis racket": ("racket", "tennis racquet"),
    "baseball glove": ("baseball mitt",),
    "handbag": ("purse", "hand bag"),
    "suitcase": ("luggage",),
    "skis": ("ski",),
    "car": ("automobile",),
    "boat": ("ship",),
    "bus": ("coach bus",),
}

_ARTICLE = re.compile(r"^(a|an|the)\s+")
_SPACE = re.compile(r"[\s_\-]+")


def normalize(name: str) -> str:
    """Lower case, single spaces, no leading article or trailing full stop: 'A Fire_Hydrant.' → 'fire hydrant'."""
    s = _SPACE.sub(" ", name.strip().lower()).strip(" .")
    return _ARTICLE.sub("", s)


def _variants(name: str) -> list[str]:
    """Name plus its simple singular forms and its unspaced form."""
    out = [name, name.replace(" ", "")]
    if name.endswith("ies"):
        out.append(name[:-3] + "y")
    if name.endswith("es"):
        out.append(name[:-2])
    if name.endswith("s") and not name.endswith("ss"):
        out.append(name[:-1])
    return out


class LabelVocabulary:
    """A detector's class names plus synonyms; resolves suite names to classes and back."""

    def __init__(self, classes: Iterable[str], synonyms: Mapping[str, Sequence[str]] | None = None) -> None:
        self.classes: tuple[str, ...] = tuple(normalize(c) for c in classes)
        self._lookup: dict[str, str] = {}
        for c in self.classes:
            if c and c != "n/a":
                self._lookup.setdefault(c, c)
                self._lookup.setdefault(c.replace(" ", ""), c)
        for c, names in (synonyms or {}).items():
            c = normalize(c)
            if c not in self._lookup.values():
                continue
            for n in names:
                self._lookup.setdefault(normalize(n), c)

    def canonical(self, name: str) -> str | None:
        """The detector class a suite name stands for, or None if it has none."""
        n = normalize(name)
        for v in _variants(n):
            if v in self._lookup:
                return self._lookup[v]
        return None

    def covers(self, name: str) -> bool:
        return self.canonical(name) is not None

    def unsupported(self, names: Iterable[str]) -> list[str]:
        """The names this detector cannot find (no class of its vocabulary matches)."""
        return [n for n in names if not self.covers(n)]

    def query_map(self, queries: Sequence[str] | None) -> dict[str, list[str]]:
        """Detector class → the names to report it as. ``None`` queries: every class as itself."""
        if queries is None:
            return {c: [c] for c in self.classes if c and c != "n/a"}
        out: dict[str, list[str]] = {}
        for q in queries:
            c = self.canonical(q)
            if c is not None:
                label = normalize(q)
                if label not in out.setdefault(c, []):
                    out[c].append(label)
        return out


COCO = LabelVocabulary(COCO_CLASSES, COCO_SYNONYMS)

DEFAULT_QUERY_TEMPLATE = "a photo of a {}"


def query_text(name: str, template: str = DEFAULT_QUERY_TEMPLATE) -> str:
    """An open-vocabulary text query: 'apple' → 'a photo of an apple' with the default template."""
    n = normalize(name)
    text = template.format(n)
    if n[:1] in "aeiou" and " a {}" in f" {template}":
        text = text.replace(f"a {n}", f"an {n}", 1)
    return text
