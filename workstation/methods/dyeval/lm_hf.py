"""A local instruction-tuned causal LM (transformers) as DyEval's writer, with template fallback.

The model is loaded from a local folder only (``local_files_only=True``, safetensors weights,
``trust_remote_code=False``), on first use; torch and transformers are imported inside functions.
The instruction is wrapped in the tokenizer's chat template when it has one. Every answer is
parsed strictly (`lm.parse_labelled_lines`, `lm.parse_graph_json`, `lm.parse_reflection`); when
the output does not parse — or the instruction does not fit the model's context — the template
writer answers instead and the `Provenance` says so (``fallback_reason``) and keeps the raw output.

Provenance of an LM answer: source "lm", the model's name (its folder's name unless given), the
folder's fingerprint (`folder_fingerprint`) and the sampling settings with the seed used.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ...types import WorkstationError
from .lm import (
    Generated,
    ParseFailure,
    ReflectionContext,
    TopicContext,
    WrittenPrompt,
    graph_instruction,
    parse_graph_json,
    parse_labelled_lines,
    parse_reflection,
    prompt_instruction,
    reflection_instruction,
    topic_instruction,
)
from .provenance import LM, TEMPLATES, Provenance
from .scene_graph import SceneGraph
from .templates import TemplateLM

T = TypeVar("T")

_BIG = 64 * 1024 * 1024
_RAW_KEEP = 2000


def folder_fingerprint(folder: Path) -> str:
    """SHA-256 (first 16 hex digits) over the folder's files: relative path, size, and content —
    for ``*.safetensors`` the header (tensor names, dtypes, shapes, offsets) instead of the weights,
    and for other files over 64 MiB their first and last MiB. Fast on multi-GB models, and it
    changes whenever the architecture, tokenizer, config or any tensor's layout does."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = f.relative_to(folder).as_posix()
        if rel.startswith(".cache/"):
            continue
        size = f.stat().st_size
        h.update(f"{rel}\0{size}\0".encode())
        with f.open("rb") as fh:
            if f.suffix == ".safetensors" and size >= 8:
                n = struct.unpack("<Q", fh.read(8))[0]
                h.update(fh.read(min(n, size - 8)))
            elif size > _BIG:
                h.update(fh.read(1 << 20))
                fh.seek(size - (1 << 20))
                h.update(fh.read())
            else:
                h.update(fh.read())
    return h.hexdigest()[:16]


class _NoFit(Exception):
    pass


class TransformersLM:
    """A causal LM from ``folder`` (see the module docstring)."""

    def __init__(self, folder: str | Path, *, name: str | None = None, max_new_tokens: int = 256,
                 temperature: float = 0.7, top_p: float = 0.9, do_sample: bool = True, seed: int = 0,
                 device: str = "cpu", fallback: TemplateLM | None = None) -> None:
        self.folder = Path(folder)
        if not (self.folder / "config.json").is_file():
            raise WorkstationError(f"{self.folder}: not a model folder (no config.json)")
        if not any(self.folder.glob("*.safetensors")):
            raise WorkstationError(f"{self.folder}: no .safetensors weights (pickled weights are not loaded)")
        self.name = name or self.folder.name
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.do_sample = bool(do_sample)
        self.seed = int(seed)
        self.device = device
        self.fallback = fallback or TemplateLM(seed)
        self.model_hash = folder_fingerprint(self.folder)
        self._model: Any = None
        self._tok: Any = None

    # --- loading and generation -----------------------------------------------------------------------

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True, trust_remote_code=False)
            model = AutoModelForCausalLM.from_pretrained(str(self.folder), local_files_only=True,
                                                         trust_remote_code=False, use_safetensors=True)
        except (OSError, ValueError) as e:
            raise WorkstationError(f"{self.folder}: cannot load the language model ({e.__class__.__name__}: "
                                   f"{str(e).splitlines()[0] if str(e) else ''})") from None
        model.to(self.device)  # type: ignore[arg-type]
        model.eval()
        self._tok, self._model = tok, model

    @property
    def has_chat_template(self) -> bool:
        self._load()
        return bool(getattr(self._tok, "chat_template", None))

    def settings(self, seed: int) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "do_sample": self.do_sample, "seed": seed, "chat_template": self.has_chat_template,
                "device": self.device}

    def _call_seed(self, instruction: str) -> int:
        """A seed per (settings seed, instruction): reproducible, and different per question."""
        d = hashlib.sha256(f"{self.seed}\0{instruction}".encode()).digest()
        return int.from_bytes(d[:4], "little")

    def complete(self, instruction: str) -> tuple[str, int]:
        """The model's continuation of ``instruction`` (new text only) and the seed used."""
        import torch

        self._load()
        tok, model = self._tok, self._model
        if self.has_chat_template:
            text = tok.apply_chat_template([{"role": "user", "content": instruction}], tokenize=False,
                                           add_generation_prompt=True)
        else:
            text = instruction
        enc = tok(text, return_tensors="pt", add_special_tokens=not self.has_chat_template)
        n_in = int(enc["input_ids"].shape[1])
        limit = int(getattr(model.config, "max_position_embeddings", 0) or getattr(model.config, "n_positions", 0) or 0)
        if limit and n_in + self.max_new_tokens > limit:
            raise _NoFit(f"the instruction ({n_in} tokens) and {self.max_new_tokens} new tokens exceed the "
                         f"model's context of {limit}")
        seed = self._call_seed(instruction)
        torch.manual_seed(seed)
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": self.do_sample}
        if self.do_sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if pad is not None:
            kwargs["pad_token_id"] = pad
        with torch.no_grad():
            out = model.generate(**{k: v.to(self.device) for k, v in enc.items()}, **kwargs)
        new = out[0, n_in:]
        return str(tok.decode(new, skip_special_tokens=True)), seed

    # --- provenance helpers -------------------------------------------------------------------------------

    def _ok(self, raw: str, seed: int) -> Provenance:
        return Provenance(LM, self.name, self.model_hash, self.settings(seed), "", raw[:_RAW_KEEP])

    def _fallback(self, reason: str, raw: str, seed: int | None) -> Provenance:
        settings = self.settings(seed) if seed is not None else {"seed": None}
        return Provenance(TEMPLATES, self.name, self.model_hash, settings, reason, raw[:_RAW_KEEP])

    def _ask(self, instruction: str) -> tuple[str, int | None, str]:
        """(raw output, seed, reason it could not be asked — "" when it was)."""
        try:
            raw, seed = self.complete(instruction)
        except _NoFit as e:
            return "", None, str(e)
        return raw, seed, ""

    # --- the four tasks -------------------------------------------------------------------------------------

    def _answer(self, instruction: str, read: Callable[[str], T],
                fallback: Callable[[], Generated[T]]) -> Generated[T]:
        """The model's answer to ``instruction`` as ``read`` reads it; the fallback's, with the reason
        in its provenance, when the model cannot be asked or its answer cannot be read."""
        raw, seed, why = self._ask(instruction)
        if not why:
            try:
                return Generated(read(raw), self._ok(raw, seed or 0))
            except ParseFailure as e:
                why = str(e)
        fb = fallback()
        return Generated(fb.value, self._fallback(why, raw, seed), fb.notes)

    def propose_topics(self, ctx: TopicContext, n: int) -> Generated[list[str]]:
        return self._answer(topic_instruction(ctx, n), lambda raw: parse_labelled_lines(raw, "Next Test Topic", n),
                            lambda: self.fallback.propose_topics(ctx, n))

    def write_prompts(self, ctx: TopicContext, n: int, *, max_words: int = 77) -> Generated[list[WrittenPrompt]]:
        def read(raw: str) -> list[WrittenPrompt]:
            out = []
            for t in parse_labelled_lines(raw, "Test Input", n, max_words=max_words):
                g = self.parse_scene_graph(t)
                out.append(WrittenPrompt(t, g.value, g.provenance))
            return out

        return self._answer(prompt_instruction(ctx, n, max_words), read, lambda: self.fallback.write_prompts(ctx, n))

    def parse_scene_graph(self, text: str) -> Generated[SceneGraph]:
        return self._answer(graph_instruction(text), parse_graph_json, lambda: self.fallback.parse_scene_graph(text))

    def reflect(self, ctx: ReflectionContext) -> Generated[str]:
        return self._answer(reflection_instruction(ctx), parse_reflection, lambda: self.fallback.reflect(ctx))

    def describe(self) -> dict[str, Any]:
        """Name, folder, fingerprint and settings (loads the model to read its chat template)."""
        return {"name": self.name, "folder": str(self.folder), "model_hash": self.model_hash,
                "settings": self.settings(self.seed)}
