"""The paper's four testing perspectives and their sub-topics (seed 002, §5.1, "Initial topic
settings"): the built-in starting roots of a test tree. The paper explored the nine sub-topics
as nine initial topics (§5.2); each becomes a root node (depth 1) labelled with its perspective.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubTopic:
    name: str
    description: str


@dataclass(frozen=True)
class Perspective:
    name: str
    description: str
    subtopics: tuple[SubTopic, ...]


PERSPECTIVES: tuple[Perspective, ...] = (
    Perspective("Object", "the things an image shows", (
        SubTopic("Material objects", "tangible things of the physical world: animals, vehicles, furniture"),
        SubTopic("Abstract objects", "concepts without a physical form: emotions, ideas, philosophies"),
    )),
    Perspective("Relation", "how the things in an image relate", (
        SubTopic("Explicit relations", "relations one can see: spatial arrangements, interactions between objects"),
        SubTopic("Implicit relations", "relations that need context or knowledge: social ties, implied connections"),
    )),
    Perspective("Attribute", "properties of the things", (
        SubTopic("Static attributes", "lasting properties: shape, color, texture"),
        SubTopic("Dynamic attributes", "properties that change over time: movement, growth, transformation"),
    )),
    Perspective("Context", "the global setting that shapes how the image is read", (
        SubTopic("Style", "the artistic or visual style: impressionism, realism"),
        SubTopic("Culture", "cultural background: traditional symbols and practices"),
        SubTopic("Knowledge", "historical or situational knowledge the image relies on"),
    )),
)


def subtopic_names() -> list[str]:
    """The nine initial topics, in the paper's order."""
    return [s.name for p in PERSPECTIVES for s in p.subtopics]


def perspective_of(topic: str) -> str:
    """The perspective a sub-topic belongs to ("" when it is not one of the nine)."""
    t = topic.strip().lower()
    for p in PERSPECTIVES:
        if any(s.name.lower() == t for s in p.subtopics):
            return p.name
    return ""
