"""The local-LM writer with a tiny random-weight Llama saved to a folder (safetensors) and a word
tokenizer built here. The random model writes garbage, so these tests check that the pipeline
runs offline, records provenance, and falls back to the templates with the reason when its output
does not parse — and, with a scripted completion, that a well-formed answer is used as is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workstation.methods.dyeval import (
    ReflectionContext,
    TemplateLM,
    TestRecord,
    TopicContext,
    transformers_lm,
)
from workstation.methods.dyeval.lm import reflection_instruction
from workstation.types import WorkstationError

pytest.importorskip("torch")
pytest.importorskip("transformers")

# no ":" and no "{" in the vocabulary: the random model can never write "Test Input:" or JSON
WORDS = ["a", "the", "red", "blue", "big", "small", "cat", "dog", "moon", "cloud", "kimono", "lantern", "on", "in", "with", "within", "next", "to", "and", "fails", "passes", "model", "image", "test", "topic", "input", "records", "score", "because", "of", "is", "are", ".", ","]
SPECIAL = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]


def build_tiny_lm(out: Path, *, chat_template: bool) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]",
                                  eos_token="[EOS]")
    if chat_template:
        tok.chat_template = ("{% for m in messages %}[BOS] {{ m['content'] }} [EOS] {% endfor %}"
                             "{% if add_generation_prompt %}model :{% endif %}")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
                      pad_token_id=0, bos_token_id=2, eos_token_id=3)
    model = LlamaForCausalLM(cfg)
    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny-llama", chat_template=False)


@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny-chat", chat_template=True)


def test_garbage_output_falls_back_to_templates_with_the_reason_and_provenance(tiny: Path) -> None:
    from workstation.methods.dyeval.lm_hf import folder_fingerprint

    lm = transformers_lm(str(tiny), max_new_tokens=8, seed=5)
    ctx = TopicContext("Culture", depth=1)
    got = lm.write_prompts(ctx, 3)  # type: ignore[attr-defined]
    prov = got.provenance
    assert prov.source == "templates"
    assert prov.fallback_reason == "expected 3 'Test Input:' lines, found 0 usable"
    assert (prov.model, prov.model_hash) == ("tiny-llama", folder_fingerprint(tiny))
    assert set(prov.settings) == {"max_new_tokens", "temperature", "top_p", "do_sample", "seed", "chat_template",
                                  "device"}
    assert prov.settings["chat_template"] is False and prov.settings["max_new_tokens"] == 8
    assert isinstance(prov.raw, str) and prov.raw.strip()  # the model did write something
    assert set(prov.raw.split()) <= set(WORDS)
    # the fallback is exactly the template writer with the same seed
    assert [w.text for w in got.value] == [w.text for w in TemplateLM(5).write_prompts(ctx, 3).value]
    # the same question gives the same answer (seeded per question)
    assert lm.write_prompts(ctx, 3).provenance.raw == prov.raw  # type: ignore[attr-defined]

    topics = lm.propose_topics(ctx, 3)  # type: ignore[attr-defined]
    assert topics.provenance.fallback_reason == "expected 3 'Next Test Topic:' lines, found 0 usable"
    assert topics.value == TemplateLM(5).propose_topics(ctx, 3).value

    g = lm.parse_scene_graph("A tiny black crescent moon within a big white cloud.")  # type: ignore[attr-defined]
    assert g.provenance.fallback_reason == "no JSON object in the output"
    assert g.value.render() == "A tiny black crescent moon within a big white cloud."


def test_reflection_accepts_free_text_from_the_model(tiny: Path) -> None:
    lm = transformers_lm(str(tiny), max_new_tokens=8, seed=5)
    ctx = ReflectionContext("Culture", (TestRecord("Culture", "A red kimono.", 0),), tests=4, passes=0, bugs=1)
    r = lm.reflect(ctx)  # type: ignore[attr-defined]
    # a reflection is free text: the random model's words parse (≥ 3 words) and are used as is
    assert r.provenance.source == "lm" and r.provenance.fallback_reason == ""
    assert r.value == r.provenance.raw.strip() and len(r.value.split()) >= 3
    assert r.provenance.settings["seed"] == lm._call_seed(reflection_instruction(ctx))  # type: ignore[attr-defined]


def test_a_well_formed_answer_is_used_with_lm_provenance(tiny: Path) -> None:
    lm = transformers_lm(str(tiny), max_new_tokens=8, seed=1)
    answers = {
        "Test Input": "Test Input: A red lantern at night.\nTest Input: Two cats on a blue rug.",
        "JSON": '{"context": ["at night"], "entities": {"lantern": {"attributes": ["red"]}}, "relations": []}',
    }

    def fake_complete(instruction: str) -> tuple[str, int]:
        if instruction.endswith("JSON:"):
            return answers["JSON"], 11
        return answers["Test Input"], 7

    lm.complete = fake_complete  # type: ignore[attr-defined]
    got = lm.write_prompts(TopicContext("Culture"), 2)  # type: ignore[attr-defined]
    assert got.provenance.source == "lm" and got.provenance.settings["seed"] == 7
    assert got.provenance.raw == answers["Test Input"]
    assert [w.text for w in got.value] == ["A red lantern at night.", "Two cats on a blue rug."]
    # each prompt's graph came from the LM's JSON answer (here the same scripted JSON)
    assert all(w.graph_provenance.source == "lm" for w in got.value)
    assert got.value[0].graph.render() == "A red lantern at night."


def test_chat_template_is_used_and_recorded(tiny_chat: Path) -> None:
    lm = transformers_lm(str(tiny_chat), max_new_tokens=4, seed=0)
    r = lm.propose_topics(TopicContext("Style"), 2)  # type: ignore[attr-defined]
    assert r.provenance.settings["chat_template"] is True
    assert r.provenance.model == "tiny-chat"


def test_an_instruction_too_long_for_the_model_falls_back(tiny: Path) -> None:
    lm = transformers_lm(str(tiny), max_new_tokens=5000)
    got = lm.write_prompts(TopicContext("Culture"), 2)  # type: ignore[attr-defined]
    assert got.provenance.source == "templates"
    assert got.provenance.fallback_reason.endswith("exceed the model's context of 2048")
    assert got.provenance.raw == "" and got.provenance.settings == {"seed": None}


def test_bad_folders_are_refused_and_the_fingerprint_follows_the_files(tiny: Path, tmp_path: Path) -> None:
    from workstation.methods.dyeval.lm_hf import folder_fingerprint

    with pytest.raises(WorkstationError, match="no config.json"):
        transformers_lm(str(tmp_path / "nothing"))
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(tiny / "config.json", pickled / "config.json")
    (pickled / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(WorkstationError, match="no .safetensors"):
        transformers_lm(str(pickled))
    copy = tmp_path / "copy"
    shutil.copytree(tiny, copy)
    assert folder_fingerprint(copy) == folder_fingerprint(tiny)
    (copy / "config.json").write_text((copy / "config.json").read_text().replace('"hidden_size": 16', '"hidden_size": 17'))
    assert folder_fingerprint(copy) != folder_fingerprint(tiny)
