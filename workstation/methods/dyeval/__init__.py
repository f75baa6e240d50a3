"""DyEval (seed 002): dynamic interactive test trees for text-to-image models — the pure core.

A tree of test topics grows where the model is strong (child topics proposed for high-pass nodes)
and digs where it fails (dynamic failure location and reflection for low-pass nodes). This package
holds the state and the rules, with no store, UI or jobs: the lead wires `TestTree` events to the
project, `generation_requests()` to the job system and `record_label` to label events
(`LABEL_SCHEME`: task "dyeval.image", PASS / FAIL, keys P / F).

Modules: `tree` (the tree, its events and queries), `metrics` (APR / AFR / #Bugs), `scene_graph`
(graphs, rendering, F_split, merge), `parse` (rule-based parser), `locate` (Algorithm 1 as a
resumable state machine), `lm` (the language-model interface and strict output parsing),
`templates` (the offline writer), `lm_hf` (a local transformers LM; torch / transformers are
imported only when it loads), `dedup`, `engine` (the automatic steps), `export`, `config`,
`perspectives`, `provenance`, `vocab`.
"""

from __future__ import annotations

from .config import DyEvalConfig
from .dedup import deduplicate, ngrams, overlap
from .engine import (
    add_perspective_roots,
    advance,
    propose_topics,
    reflect,
    reflection_context,
    start_locations,
    topic_context,
    write_prompts,
)
from .export import export_dict, export_json, import_tree, read_tree, write_tree
from .lm import (
    Generated,
    LanguageModel,
    ParseFailure,
    ReflectionContext,
    TestRecord,
    TopicContext,
    TriggerNote,
    WrittenPrompt,
    parse_graph_json,
    parse_labelled_lines,
    parse_reflection,
)
from .locate import FailureLocation, LocateStep, Trigger, location_bound, run_location
from .metrics import Outcome, Summary, outcome, summarize
from .parse import parse_text
from .perspectives import PERSPECTIVES, Perspective, SubTopic, perspective_of, subtopic_names
from .provenance import HUMAN, LM, TEMPLATES, Provenance
from .scene_graph import (
    GraphSplit,
    Relation,
    SceneGraph,
    SceneObject,
    merge_graphs,
    merge_keys,
    render_text,
    split_graph,
)
from .templates import TemplateLM
from .tree import (
    ACCEPTED,
    DONE,
    EDITED,
    EXPANDING,
    GENERATING,
    JUDGED,
    JUDGING,
    LABEL_SCHEME,
    LOCATING,
    NEW,
    NODE_STATES,
    PROMPTS_WRITTEN,
    PROPOSAL_STATES,
    PROPOSED,
    REJECTED,
    Action,
    GenerationRequest,
    ImageRecord,
    JudgeRequest,
    LocationRecord,
    Node,
    PromptRecord,
    TestTree,
    TopicProposal,
)

NAME = "dyeval"


def transformers_lm(folder: str, **settings: object) -> object:
    """A `lm_hf.TransformersLM` for a local model folder (imported on call; see its settings)."""
    from .lm_hf import TransformersLM

    return TransformersLM(folder, **settings)  # type: ignore[arg-type]


__all__ = [
    "ACCEPTED",
    "DONE",
    "EDITED",
    "EXPANDING",
    "GENERATING",
    "HUMAN",
    "JUDGED",
    "JUDGING",
    "LABEL_SCHEME",
    "LM",
    "LOCATING",
    "NAME",
    "NEW",
    "NODE_STATES",
    "PERSPECTIVES",
    "PROMPTS_WRITTEN",
    "PROPOSAL_STATES",
    "PROPOSED",
    "REJECTED",
    "TEMPLATES",
    "Action",
    "DyEvalConfig",
    "FailureLocation",
    "Generated",
    "GenerationRequest",
    "GraphSplit",
    "ImageRecord",
    "JudgeRequest",
    "LanguageModel",
    "LocateStep",
    "LocationRecord",
    "Node",
    "Outcome",
    "ParseFailure",
    "Perspective",
    "PromptRecord",
    "Provenance",
    "ReflectionContext",
    "Relation",
    "SceneGraph",
    "SceneObject",
    "SubTopic",
    "Summary",
    "TemplateLM",
    "TestRecord",
    "TestTree",
    "TopicContext",
    "TopicProposal",
    "Trigger",
    "TriggerNote",
    "WrittenPrompt",
    "add_perspective_roots",
    "advance",
    "deduplicate",
    "export_dict",
    "export_json",
    "import_tree",
    "location_bound",
    "merge_graphs",
    "merge_keys",
    "ngrams",
    "outcome",
    "overlap",
    "parse_graph_json",
    "parse_labelled_lines",
    "parse_reflection",
    "parse_text",
    "perspective_of",
    "propose_topics",
    "read_tree",
    "reflect",
    "reflection_context",
    "render_text",
    "run_location",
    "split_graph",
    "start_locations",
    "subtopic_names",
    "summarize",
    "topic_context",
    "transformers_lm",
    "write_prompts",
    "write_tree",
]
