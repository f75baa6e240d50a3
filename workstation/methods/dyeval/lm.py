"""The language-model interface of DyEval: topic proposal, prompt writing, scene-graph parsing and
reflection (the paper's TopicGen, InputGen, text → scene graph and Reflect, seed 002 §4, App. F).

Two implementations: `templates.TemplateLM` (built-in vocabularies and rules; always works,
deterministic) and `lm_hf.TransformersLM` (a local instruction-tuned causal LM; its output is
parsed strictly here, and when it does not parse the template writer answers instead, with the
reason recorded in the `Provenance`). Every answer is a `Generated` value with its provenance.

The instructions given to a local LM follow the paper's Table VIII / IX prompts (the output
formats "Next Test Topic: ..." / "Test Input: ..." and the scene-graph JSON layout), reworded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ...types import WorkstationError
from .dedup import first_distinct
from .provenance import Provenance
from .scene_graph import SceneGraph

T = TypeVar("T")


@dataclass(frozen=True)
class TestRecord:
    """One line of the test record shown to the LM: topic, text input and score (1 pass, 0 fail,
    None not judged yet)."""

    __test__ = False  # not a pytest test class

    topic: str
    text: str
    score: int | None


@dataclass(frozen=True)
class TopicContext:
    """What a node tells the LM (InputGen(t_o, f) / TopicGen(t)): its topic, its ancestors' topics
    (root first), depth and perspective, the test records of the node and its ancestors, the
    latest reflection, and texts to avoid repeating (existing prompts or child topics)."""

    topic: str
    path: tuple[str, ...] = ()
    depth: int = 1
    perspective: str = ""
    records: tuple[TestRecord, ...] = ()
    reflection: str = ""
    existing: tuple[str, ...] = ()


@dataclass(frozen=True)
class TriggerNote:
    kind: str  # "element" or "attribute"
    cell_text: str
    context_text: str
    text: str
    elements: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReflectionContext:
    """Reflect(t): the node's topic, its test records, the failure-location steps (texts with
    their verdicts) and the triggers found, with the node's figures."""

    topic: str
    records: tuple[TestRecord, ...] = ()
    steps: tuple[TestRecord, ...] = ()
    triggers: tuple[TriggerNote, ...] = ()
    tests: int = 0
    passes: int = 0
    bugs: int = 0
    rho: float = 0.75


@dataclass(frozen=True)
class WrittenPrompt:
    text: str
    graph: SceneGraph
    graph_provenance: Provenance


@dataclass(frozen=True)
class Generated(Generic[T]):
    value: T
    provenance: Provenance
    notes: tuple[str, ...] = field(default=())


class LanguageModel(Protocol):
    """What DyEval asks of a language model."""

    name: str

    def propose_topics(self, ctx: TopicContext, n: int) -> Generated[list[str]]: ...

    def write_prompts(self, ctx: TopicContext, n: int) -> Generated[list[WrittenPrompt]]: ...

    def parse_scene_graph(self, text: str) -> Generated[SceneGraph]: ...

    def reflect(self, ctx: ReflectionContext) -> Generated[str]: ...


# --- instructions for a local LM ------------------------------------------------------------------


def _records_block(records: Sequence[TestRecord]) -> str:
    if not records:
        return "Test records: N/A"
    lines = ["Test records:"]
    for r in records:
        score = "N/A" if r.score is None else str(r.score)
        lines.append(f"Topic: {r.topic} | Text input: {r.text} | Score: {score}")
    return "\n".join(lines)


def topic_instruction(ctx: TopicContext, n: int) -> str:
    outs = "\n".join(f"Next Test Topic: <OUTPUT{i}>" for i in range(n))
    return (
        "You are a testing expert testing a text-to-image generation model. The current topic is "
        f"'{ctx.topic}'. Propose {n} next test topics that explore finer details of this topic, and "
        "combinations or relationships of the topic with other objects, chosen to uncover as many "
        "errors of the model as possible. In the test records, Score 1 means the test passed and 0 "
        "that it failed.\n"
        f"{_records_block(ctx.records)}\n"
        f"Reflection: {ctx.reflection or 'N/A'}\n"
        "Make every topic relevant and distinct. Keep exactly this format, one line each:\n"
        f"{outs}\n"
    )


def prompt_instruction(ctx: TopicContext, n: int, max_words: int = 77) -> str:
    outs = "\n".join(f"Test Input: <OUTPUT{i}>" for i in range(n))
    avoid = ("Do not repeat these existing inputs: " + " | ".join(ctx.existing) + "\n") if ctx.existing else ""
    return (
        "You are a testing expert testing a text-to-image generation model on the theme "
        f"'{ctx.topic}'. Write {n} test inputs (image descriptions) that fit the theme and explore its "
        "finer details, contexts, relations and actions, chosen to uncover as many errors of the model "
        "as possible. In the test records, Score 1 means passed and 0 failed.\n"
        f"{_records_block(ctx.records)}\n"
        f"Reflection: {ctx.reflection or 'N/A'}\n"
        f"{avoid}"
        f"Each input must be a picture one can draw, at most {max_words} words, and distinct from the "
        "others; make them progressively harder than the records. Keep exactly this format, one line each:\n"
        f"{outs}\n"
    )


GRAPH_EXAMPLE = ('{"context": ["in the park"], "entities": {"greyhound": {"attributes": ["two", "sleek"]}, '
                 '"body": {"attributes": ["slender"]}}, "relations": [{"with": {"entities": ["greyhound", "body"], '
                 '"attributes": []}}]}')


def graph_instruction(text: str) -> str:
    return (
        "Turn the text into a scene graph. Do not add nodes that the text does not state and do not "
        "lose any. Nodes are objects, their attributes, relations between objects, relation "
        "attributes and context. Answer with one JSON object in this layout:\n"
        f"{GRAPH_EXAMPLE}\n"
        f"Text: {text}\nJSON:"
    )


def reflection_instruction(ctx: ReflectionContext) -> str:
    steps = _records_block(ctx.steps).replace("Test records:", "Failure location records:")
    trig = "\n".join(f"- {t.text} ({t.kind})" for t in ctx.triggers) or "N/A"
    return (
        "You are an expert in testing text-to-image models and good at finding their error patterns. "
        f"Test topic: {ctx.topic}. Score 1 means the test passed and 0 that it failed. Analyse why some "
        "tests fail and others pass, and summarise the failure patterns where the model underperforms. "
        "List by points.\n"
        f"{_records_block(ctx.records)}\n{steps}\nFailure triggers:\n{trig}\n"
    )


# --- strict parsing --------------------------------------------------------------------------------


class ParseFailure(ValueError):
    """The LM's output is not in the asked format (the message is the recorded reason)."""


_PLACEHOLDER = re.compile(r"<\s*OUTPUT\s*\d*\s*>", re.IGNORECASE)


def parse_labelled_lines(text: str, label: str, n: int, *, max_words: int | None = None) -> list[str]:
    """The first ``n`` distinct values of lines ``<label>: value`` (an optional number or bullet
    before the label, an optional index after it). Fewer than ``n`` usable values is a failure."""
    pat = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*" + re.escape(label).replace(r"\ ", r"\s+")
                     + r"\s*\d*\s*[:：]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)

    def usable() -> Iterator[str]:
        for m in pat.finditer(text):
            v = m.group(1).strip().strip('"“”\'').strip()
            if not v or _PLACEHOLDER.search(v) or not re.search(r"[A-Za-z]{2,}", v):
                continue
            if max_words is None or len(v.split()) <= max_words:
                yield v

    vals = first_distinct(usable(), n)
    if len(vals) < n:
        raise ParseFailure(f"expected {n} '{label}:' lines, found {len(vals)} usable")
    return vals


def parse_graph_json(text: str) -> SceneGraph:
    """The first JSON object in ``text`` read as a scene graph in the paper's layout."""
    start = text.find("{")
    if start < 0:
        raise ParseFailure("no JSON object in the output")
    dec = json.JSONDecoder()
    try:
        obj, _ = dec.raw_decode(text[start:])
    except json.JSONDecodeError as e:
        raise ParseFailure(f"invalid JSON: {e.msg} at character {e.pos}") from None
    if not isinstance(obj, dict) or "entities" not in obj:
        raise ParseFailure("the JSON object has no 'entities'")
    try:
        g = SceneGraph.from_paper_dict(obj)
    except (WorkstationError, TypeError, AttributeError, ValueError) as e:  # odd but valid JSON
        raise ParseFailure(f"not a scene graph: {e}") from None
    if not g.objects and not g.context:
        raise ParseFailure("the scene graph is empty")
    return g


def parse_reflection(text: str, *, min_words: int = 3, max_chars: int = 8000) -> str:
    """A reflection: free text with at least ``min_words`` words of letters, trimmed."""
    t = text.strip()
    if len(re.findall(r"[A-Za-z]{2,}", t)) < min_words:
        raise ParseFailure(f"a reflection needs at least {min_words} words")
    return t[:max_chars]
