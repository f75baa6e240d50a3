"""DyEval's parameters (seed 002 §5.1; METHODS.md §4), content-hashed like every method config."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ...types import InputError, WorkstationError
from ...util.textio import quote
from .dedup import DEFAULT_N, DEFAULT_THRESHOLD


#: the largest value of each count setting, and why: a tree asks a person to judge n_i × n_x
#: images per node and grows up to n_t children per node for d_max levels, so unbounded values
#: would make a step run (and ask for judgements) without end
LIMITS: dict[str, int] = {"n_i": 50, "n_x": 16, "n_t": 10, "d_max": 6, "dedup_n": 8, "max_prompt_words": 400}
LIMIT_REASONS: dict[str, str] = {
    "n_i": "prompts written per node, each judged by a person; the paper uses 5",
    "n_x": "images per prompt, each judged by a person; the paper uses 4",
    "n_t": "child topics proposed per node; the paper uses 3",
    "d_max": "levels of the tree: n_t ** d_max nodes; the paper uses 3",
    "dedup_n": "words per n-gram of the prompt de-duplication",
    "max_prompt_words": "words per prompt; the paper asks for at most 77",
}


@dataclass(frozen=True)
class DyEvalConfig:
    """Test-tree parameters.

    * ``n_i`` prompts per node (5), ``n_x`` images per prompt (4), ``n_t`` child topics proposed
      per node (3), ``d_max`` the deepest level (3; roots are depth 1, so a full tree has
      1 + 3 + 9 = 13 nodes, as in §5.2).
    * ``rho``: a prompt is a bug when its pass rate over its images is < rho. The paper's Fig. 3
      counts "test inputs with an average pass rate below 0.75" as bugs: 0.75.
    * ``expand_apr``: a judged node with APR ≥ expand_apr (and depth < d_max) gets child topics
      proposed. ``locate_apr``: a judged node with APR < locate_apr runs failure location on each
      of its bugs, then a reflection. Both default to 0.6, the boundary of Fig. 5's green nodes, so
      a node either expands or is located. The paper's own runs set the "topic stop extension pass
      rate" to 0 so that every node expanded: ``expand_apr=0`` reproduces that (with
      ``locate_apr`` > 0 a low node is then located first and expanded after).
    * ``premark_threshold``: images whose CLIPScore (0-100) is below it are pre-marked FAIL for
      the auditor to confirm (None: no pre-marks). ``premark_counts``: whether a pre-mark counts as
      a FAIL judgement until a human labels the image (the paper's filter: "automatically marked as
      a fail ... they can refine as needed"); off by default, so only human labels count.
    * ``dedup_n`` / ``dedup_threshold``: prompt de-duplication (`dedup.py`).
    * ``max_prompt_words``: the paper asks the LLM for inputs of at most 77 words.
    * ``premark_scorer`` / ``premark_model``: the scorer whose scores pre-mark images (its
      registry name; scores of any weights of that scorer count, the most complete set first)
      and the local model folder a score job loads for it ("" : no score job is started).
    * ``lm``: who writes topics, prompts, graphs and reflections — "templates" (the built-in
      writer) or a local instruction-tuned causal LM folder; ``lm_seed`` seeds either.
    """

    n_i: int = 5
    n_x: int = 4
    n_t: int = 3
    d_max: int = 3
    rho: float = 0.75
    expand_apr: float = 0.6
    locate_apr: float = 0.6
    premark_threshold: float | None = None
    premark_counts: bool = False
    dedup_n: int = DEFAULT_N
    dedup_threshold: float = DEFAULT_THRESHOLD
    max_prompt_words: int = 77
    premark_scorer: str = "clipscore"
    premark_model: str = ""
    lm: str = "templates"
    lm_seed: int = 0

    def validate(self) -> None:
        for name, hi in LIMITS.items():
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= hi:
                raise WorkstationError(f"DyEval config: {name} must be a whole number from 1 to {hi:,} "
                                       f"({LIMIT_REASONS[name]}), not {quote(v, 40)}")
        for name in ("rho", "expand_apr", "locate_apr", "dedup_threshold"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                raise WorkstationError(f"DyEval config: {name} must be between 0 and 1, not {quote(v, 40)}")
        pt = self.premark_threshold
        if pt is not None and (isinstance(pt, bool) or not isinstance(pt, (int, float)) or not 0.0 <= float(pt) <= 100.0):
            raise WorkstationError("DyEval config: premark_threshold is a CLIPScore between 0 and 100")
        if not isinstance(self.premark_counts, bool):
            raise WorkstationError(f"DyEval config: premark_counts must be true or false, not {quote(self.premark_counts, 40)}")
        for name in ("premark_scorer", "premark_model", "lm"):
            v = getattr(self, name)
            if not isinstance(v, str) or len(v) > 4096 or any(ord(c) < 32 for c in v):
                raise WorkstationError(f"DyEval config: {name} must be a one-line text, not {quote(v, 40)}")
        if not self.lm.strip():
            raise WorkstationError("DyEval config: lm is 'templates' or a local model folder")
        if not isinstance(self.lm_seed, int) or isinstance(self.lm_seed, bool) or not 0 <= self.lm_seed < 2**63:
            raise WorkstationError(f"DyEval config: lm_seed must be a whole number from 0 to 2**63-1, "
                                   f"not {quote(self.lm_seed, 40)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DyEvalConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in set(d) - known)
        if unknown:
            raise WorkstationError(f"DyEval config: unknown setting {quote(unknown[0], 40)}")
        cfg = cls(**{k: d[k] for k in d})
        cfg.validate()
        return cfg

    def content_hash(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_config(path: Path) -> DyEvalConfig:
    """A DyEval config from a YAML or JSON file of its settings, read with the project's one YAML
    loader (`util.safeyaml`: no anchors or aliases, size-capped); errors name the file and line."""
    from ...util.safeyaml import line_of, load_yaml_mapping

    p = Path(path)
    raw = load_yaml_mapping(p, "DyEval config", "expected a mapping of DyEval settings (n_i, n_x, rho, ...)")
    known = {f.name for f in fields(DyEvalConfig)}
    for k in raw:
        if k not in known:
            raise InputError(p, f"unknown setting {quote(k, 40)}; settings: {', '.join(sorted(known))}", line_of(raw, k))
    base = DyEvalConfig().to_dict()
    for k, v in raw.items():  # one setting at a time, so that the error names its line
        try:
            DyEvalConfig.from_dict({**base, k: v})
        except (WorkstationError, TypeError, ValueError) as e:
            raise InputError(p, str(e).removeprefix("DyEval config: ")[:200], line_of(raw, k)) from None
    try:
        return DyEvalConfig.from_dict(raw)
    except (WorkstationError, TypeError, ValueError) as e:
        raise InputError(p, str(e).removeprefix("DyEval config: ")[:200]) from None
