"""Image–text scorers: CLIPScore and PickScore equal their definitions computed directly with the
same local CLIP model; P("yes") equals the softmax the library's own generate gives; faithfulness
scores are the hand-counted fractions for models that always answer the same word; long texts are
truncated, not refused; scores do not depend on batching; provenance pins the weights; the mistakes
a user can make give one clear error. Tiny random-weight models are built from configs offline
(the real CLIP tokenizer from ../shared/models); the batch runner is tested with the fake scorer."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.scoring import (
    SCORERS,
    ScoreItem,
    ScoringOutOfMemory,
    create_scorer,
    iter_score_batches,
    score_items,
    weights_sha256,
)
from workstation.scoring.fake import FakeScorer
from workstation.types import WorkstationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models_tiny  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def images(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, (40 + 7 * (i % 5), 48 + 5 * (i % 3), 3), dtype=np.uint8) for i in range(n)]
    for i in range(0, n, 4):  # some flat colours too
        out[i] = np.full((36, 52, 3), (60 * i) % 256, np.uint8)
    return out


TEXTS = ["a photo of a cat", "two dogs and a cat", "a red cube to the left of a blue sphere", "a bird",
         "a wooden table", "three red apples above a green bowl", "a blue sphere", "black"]
LONG = "a photo of a cat sitting on a red chair next to a dog " * 8  # about 100 tokens


# ------------------------------------------------------------------------------------ registry, fake, runner


def test_registry_lists_the_scorers_without_importing_them() -> None:
    assert SCORERS.names() == ["clipscore", "fake", "pickscore", "vqa_faithfulness", "vqa_yes"]
    assert "clip_score" in SCORERS and "tifa" in SCORERS
    with pytest.raises(WorkstationError, match=r"unknown scorer 'clipscor'.*did you mean 'clipscore'"):
        create_scorer("clipscor")


def test_fake_scores_are_a_function_of_image_and_text() -> None:
    s = create_scorer("fake")
    ims = images(6)
    a = s.score(ims, TEXTS[:6])
    assert a.dtype == np.float64 and a.shape == (6,)
    assert np.all((a >= 0) & (a < 100))
    assert len(set(a.tolist())) == 6
    assert s.score(ims[::-1], TEXTS[:6][::-1]).tolist() == a[::-1].tolist()
    assert s.score([ims[0]], ["another text"])[0] != a[0]
    with pytest.raises(WorkstationError, match="3 images but 2 texts"):
        s.score(ims[:3], TEXTS[:2])
    with pytest.raises(WorkstationError, match=r"image 1 must be an H×W×3 RGB uint8 array, got float64"):
        s.score([ims[0], ims[1].astype(float)], TEXTS[:2])


def items(n: int) -> list[ScoreItem]:
    return [ScoreItem(f"s{i}", i, TEXTS[i % len(TEXTS)]) for i in range(n)]


def test_runner_scores_batch_by_batch_and_resumes_by_key() -> None:
    ims = images(11)
    load = ims.__getitem__
    full = score_items(FakeScorer(), items(11), 4, load_image=load)
    assert full.keys == [f"s{i}" for i in range(11)] and full.n_batches == 3 and not full.stopped
    assert full.scores.tolist() == FakeScorer().score(ims, [it.text for it in items(11)]).tolist()

    # a job writes one chunk per batch; stopped after the first two, then resumed skipping those keys
    chunks: list[dict[str, np.ndarray]] = []
    calls = iter(range(100))
    first = score_items(FakeScorer(), items(11), 4, load_image=load, on_batch=lambda b: chunks.append(b.columns()),
                        should_stop=lambda: next(calls) >= 2)
    assert first.stopped and first.n_batches == 2 and len(chunks) == 2
    done = {k for c in chunks for k in c["key"]}
    rest = score_items(FakeScorer(), items(11), 3, load_image=load, skip_keys=done,
                       on_batch=lambda b: chunks.append(b.columns()))
    assert rest.n_skipped == 8 and rest.keys == ["s8", "s9", "s10"]
    merged = {k: s for c in chunks for k, s in zip(c["key"], c["score"])}
    assert merged == full.by_key()
    assert chunks[0]["detail"].tolist() == [None] * 4


def test_runner_halves_the_batch_on_out_of_memory_and_says_so() -> None:
    ims = images(9)
    scorer = FakeScorer(batch_size=8, oom_above=3)
    batches = list(iter_score_batches(scorer, items(9), 8, load_image=ims.__getitem__))
    assert [len(b) for b in batches] == [8, 1]
    assert batches[0].notes == ["out of GPU memory at batch size 8 scoring with fake; going on with 4",
                                "out of GPU memory at batch size 4 scoring with fake; going on with 2"]
    assert batches[0].batch_size == 2 and batches[1].notes == []
    assert np.concatenate([b.scores for b in batches]).tolist() == \
        FakeScorer().score(ims, [it.text for it in items(9)]).tolist()
    with pytest.raises(ScoringOutOfMemory, match="out of GPU memory scoring a batch of 1"):
        FakeScorer(batch_size=2, oom_above=0).score(ims[:2], TEXTS[:2])


def test_runner_reports_unloadable_images_or_stops_on_them() -> None:
    ims = images(5)

    def load(i: int) -> np.ndarray:
        if i == 2:
            raise FileNotFoundError("samples/2.png")
        return ims[i]

    with pytest.raises(WorkstationError, match=r"cannot load the image of item 's2': samples/2.png"):
        score_items(FakeScorer(), items(5), load_image=load)
    run = score_items(FakeScorer(), items(5), load_image=load, image_errors="record")
    assert math.isnan(run.scores[2]) and run.details[2] == {"error": "FileNotFoundError: samples/2.png"}
    assert np.isfinite(np.delete(run.scores, 2)).all()
    assert run.notes == ["1 image(s) could not be loaded; their scores are missing"]
    with pytest.raises(WorkstationError, match=r"item 's0': image 0 must be an H×W×3 RGB uint8 array, got uint8 \(4, 4\)"):
        score_items(FakeScorer(), items(2), load_image=lambda i: np.zeros((4, 4), np.uint8))
    with pytest.raises(WorkstationError, match="'s1' occurs more than once"):
        score_items(FakeScorer(), items(3) + [ScoreItem("s1", 0, "x")], load_image=load)


def test_weights_hash_is_cached_per_file_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workstation.scoring import base

    f = tmp_path / "model.safetensors"
    f.write_bytes(b"abc" * 1000)
    (tmp_path / "pytorch_model.bin").write_bytes(b"not loaded, not hashed")
    expected = hashlib.sha256(b"model.safetensors\n" + b"abc" * 1000).hexdigest()
    assert weights_sha256(tmp_path) == expected
    calls: list[Path] = []
    real = base._hash_files
    monkeypatch.setattr(base, "_hash_files", lambda root, files: calls.append(root) or real(root, files))
    assert weights_sha256(tmp_path) == expected and calls == []  # cached
    st = f.stat()
    f.write_bytes(b"abd" * 1000)  # same size, new bytes; a rewrite gets a new mtime (set here, as clocks are coarse)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert weights_sha256(tmp_path) == hashlib.sha256(b"model.safetensors\n" + b"abd" * 1000).hexdigest()
    assert len(calls) == 1


# ------------------------------------------------------------------------------------ tiny models


@pytest.fixture(scope="module")
def torch_one_thread() -> Any:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer_dir(models_dir: Path) -> Path:
    d = models_dir / "clip_tokenizer"
    if not (d / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {d}")
    return d


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory, torch_one_thread: Any) -> Path:
    return tmp_path_factory.mktemp("scorers")


@pytest.fixture(scope="module")
def tiny_clip(model_dir: Path, tokenizer_dir: Path) -> Path:
    # seed 3: cosines of both signs on the test pairs, so the clamp at 0 is exercised
    return models_tiny.build_tiny_clip(model_dir / "clip", tokenizer_dir, seed=3)


@pytest.fixture(scope="module")
def vocab_dir(model_dir: Path) -> Path:
    return models_tiny.write_bert_vocab(model_dir / "bert-vocab").parent


@pytest.fixture(scope="module")
def tiny_blip(model_dir: Path, vocab_dir: Path) -> Path:
    return models_tiny.build_tiny_blip_vqa(model_dir / "blip", vocab_dir)


def direct_clip(folder: Path, ims: list[np.ndarray], texts: list[str], chunk: int,
                padding: bool | str = "max_length") -> tuple[np.ndarray, float]:
    """cos(E_I, E_T) per pair and exp(logit_scale), straight from transformers: processor →
    get_image_features / get_text_features → normalise → dot, ``chunk`` pairs at a time, texts
    padded to 77 tokens as the reference ``clip.tokenize`` pads them (or as long as the longest).

    (float32 matrix products of different shapes differ by about 1e-7 relative, 1e-5 on CLIPScore's
    0–100 scale; the scorer's forward size and padding make the comparison exact to 1e-5.)"""
    import torch
    from PIL import Image
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(str(folder), local_files_only=True).eval()
    proc = CLIPProcessor.from_pretrained(str(folder), local_files_only=True)
    cos = []
    for i in range(0, len(ims), chunk):
        inputs = proc(text=texts[i : i + chunk], images=[Image.fromarray(im) for im in ims[i : i + chunk]],
                      return_tensors="pt", padding=padding, truncation=True, max_length=77)
        with torch.inference_mode():
            fi = model.get_image_features(pixel_values=inputs["pixel_values"])
            ft = model.get_text_features(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
        fi = getattr(fi, "pooler_output", fi).double()
        ft = getattr(ft, "pooler_output", ft).double()
        fi = fi / fi.norm(dim=-1, keepdim=True)
        ft = ft / ft.norm(dim=-1, keepdim=True)
        cos.append((fi * ft).sum(-1).numpy())
    return np.concatenate(cos), float(model.logit_scale.detach().exp())


def test_clipscore_equals_its_definition(tiny_clip: Path) -> None:
    ims = images(8)
    scorer = create_scorer("clipscore", model=str(tiny_clip), batch_size=4)
    got = scorer.score(ims, TEXTS)
    cos, _ = direct_clip(tiny_clip, ims, TEXTS, 4)
    np.testing.assert_allclose(got, 100.0 * np.maximum(cos, 0.0), rtol=0, atol=1e-5)
    # and, all at once and padded to the longest text (as torchmetrics does), to float32 rounding
    at_once = direct_clip(tiny_clip, ims, TEXTS, 8, padding=True)[0]
    np.testing.assert_allclose(got, 100.0 * np.maximum(at_once, 0.0), atol=1e-4)
    assert (cos < 0).any() and (cos > 0).any(), "the test pairs must exercise both sides of the clamp"
    assert got.dtype == np.float64 and scorer.scale == (0.0, 100.0)
    assert ((got >= 0) & (got <= 100)).all()


def test_a_text_longer_than_77_tokens_is_truncated_not_refused(tiny_clip: Path) -> None:
    from transformers import CLIPTokenizer

    scorer = create_scorer("clipscore", model=str(tiny_clip), batch_size=4)
    tok = CLIPTokenizer.from_pretrained(str(tiny_clip), local_files_only=True)
    ids = tok(LONG)["input_ids"]
    assert len(ids) > 77
    ims = images(3)
    other_tail = tok.decode(ids[1:76]) + " and a completely different ending about zebras and boats"
    res = scorer.score_detailed(ims, [LONG, other_tail, tok.decode(ids[1:76])])
    # only <start> + the first 75 tokens + <end> count: the same score whatever comes after
    assert res.details[0] == {"truncated": True, "tokens": len(ids), "max_tokens": 77}
    assert res.details[2] is None
    one = scorer.score([ims[0]] * 3, [LONG, other_tail, tok.decode(ids[1:76])])
    assert one[0] == one[1] == one[2]
    # and that is the CLIP embedding of exactly those 77 tokens
    import torch
    from PIL import Image
    from transformers import CLIPModel

    model = CLIPModel.from_pretrained(str(tiny_clip), local_files_only=True).eval()
    with torch.inference_mode():
        t = model.get_text_features(input_ids=torch.tensor([ids[:76] + [tok.eos_token_id]]))
        v = model.get_image_features(**scorer._image_processor(images=[Image.fromarray(ims[0])], return_tensors="pt"))
    t = getattr(t, "pooler_output", t).double()[0]
    v = getattr(v, "pooler_output", v).double()[0]
    assert one[0] == pytest.approx(100 * max(float(t @ v / t.norm() / v.norm()), 0.0), abs=1e-5)


def count_text_rows(scorer: Any) -> list[int]:
    """Rows of every text-tower pass the scorer makes from now on."""
    scorer.load()
    real = scorer._model.get_text_features
    rows: list[int] = []
    scorer._model.get_text_features = lambda **kw: rows.append(len(kw["input_ids"])) or real(**kw)
    return rows


def test_each_distinct_text_is_embedded_once(tiny_clip: Path) -> None:
    """Several images of one prompt (DyEval's n_x images per prompt) cost one text embedding."""
    ims = images(8)
    texts = [TEXTS[0], TEXTS[1]] * 4
    cached = create_scorer("clipscore", model=str(tiny_clip), batch_size=4)
    uncached = create_scorer("clipscore", model=str(tiny_clip), batch_size=4, text_cache=0)
    rows, rows_uncached = count_text_rows(cached), count_text_rows(uncached)
    got = cached.score(ims, texts)
    assert got.tolist() == uncached.score(ims, texts).tolist()
    assert rows == [4] and rows_uncached == [4, 4]  # the second batch's two texts were already embedded


def test_pickscore_is_the_scaled_cosine(tiny_clip: Path, tmp_path: Path) -> None:
    ims = images(8)
    pick = create_scorer("pickscore", model=str(tiny_clip), batch_size=8)
    got = pick.score(ims, TEXTS)
    cos, scale = direct_clip(tiny_clip, ims, TEXTS, 8)  # the scorer's forward size
    np.testing.assert_allclose(got, scale * cos, rtol=1e-6, atol=1e-5)
    assert pick.scale is None and (got < 0).any()
    # PickScore's weights come without a processor: give the CLIP processor's folder separately
    bare = tmp_path / "pickscore-model"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_clip / name, bare / name)
    with pytest.raises(WorkstationError, match=r"pickscore-model has no tokenizer files .*processor="):
        create_scorer("pickscore", model=str(bare))
    split = create_scorer("pickscore", model=str(bare), processor=str(tiny_clip), batch_size=8)
    assert split.score(ims, TEXTS).tolist() == got.tolist()


def test_vqa_yes_is_the_softmax_of_the_first_answer_token(tiny_blip: Path) -> None:
    import torch
    from PIL import Image
    from transformers import BlipForQuestionAnswering, BlipProcessor

    ims = images(5)
    texts = ["a photo of a cat.", "two dogs and a cat", "a red cube to the left of a blue sphere", "a bird!", LONG]
    scorer = create_scorer("vqa_yes", model=str(tiny_blip), batch_size=4)
    got = scorer.score_detailed(ims, texts)
    assert got.details[0]["question"] == "Does this image show a photo of a cat?"
    model = BlipForQuestionAnswering.from_pretrained(str(tiny_blip), local_files_only=True).eval()
    proc = BlipProcessor.from_pretrained(str(tiny_blip), local_files_only=True)
    yes, no = proc.tokenizer.convert_tokens_to_ids(["yes", "no"])
    for i, (im, d) in enumerate(zip(ims[:4], got.details)):
        # the library's own generate, one unpadded question: logits of the first answer token
        inputs = proc(images=Image.fromarray(im), text=d["question"], return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=1, output_logits=True, return_dict_in_generate=True)
        p = torch.softmax(out.logits[0][0].double(), dim=-1)
        assert got.values[i] == pytest.approx(float(p[yes]), abs=1e-6)
        assert d["p_no"] == pytest.approx(float(p[no]), abs=1e-6)
    assert ((got.values > 0) & (got.values < 1)).all()
    assert got.details[4]["truncated"] is True  # a question over 64 tokens is cut, not refused
    yes_no = create_scorer("vqa_yes", model=str(tiny_blip), batch_size=4, mode="yes_no").score(ims, texts)
    expected = [d["p_yes"] / (d["p_yes"] + d["p_no"]) for d in got.details]
    np.testing.assert_allclose(yes_no, expected, rtol=1e-9)


def test_a_model_that_always_says_yes(model_dir: Path, vocab_dir: Path) -> None:
    folder = models_tiny.build_tiny_blip_vqa(model_dir / "blip-yes", vocab_dir, answer_bias={"yes": 50.0})
    assert create_scorer("vqa_yes", model=str(folder)).score(images(2), TEXTS[:2]).min() > 0.999
    faith = create_scorer("vqa_faithfulness", model=str(folder), batch_size=2)
    prompts = ["a red cube to the left of a blue sphere", "a kitchen without a cat", "two dogs and a cat",
               "either a cat or a dog", "a cat and a dog"]
    res = faith.score_detailed(images(5), prompts)
    # yes is right for presence and relation questions expecting yes, wrong for everything else
    np.testing.assert_array_equal(res.values[[0, 1, 2, 4]], [3 / 5, 1 / 2, 2 / 3, 1.0])
    assert math.isnan(res.values[3]) and res.details[3]["skipped"] == ["cat: disjunction", "dog: disjunction"]
    d = res.details[1]
    assert [(q["question"], q["expected"], q["answer"].split()[0], q["correct"]) for q in d["questions"]] == [
        ("Is there a kitchen?", ["yes"], "yes", True), ("Is there a cat?", ["no"], "yes", False)]
    assert d["n_questions"] == 2 and d["n_correct"] == 1 and d["questions"][0]["p_yes"] > 0.999


def test_a_model_that_always_says_red(model_dir: Path, vocab_dir: Path) -> None:
    folder = models_tiny.build_tiny_blip_vqa(model_dir / "blip-red", vocab_dir, answer_bias={"red": 50.0})
    faith = create_scorer("vqa_faithfulness", model=str(folder), batch_size=4)
    res = faith.score(images(3), ["a red cube to the left of a blue sphere", "two dogs and a cat",
                                  "three red apples above a green bowl"])
    np.testing.assert_array_equal(res, [1 / 5, 0.0, 1 / 6])


def test_faithfulness_answers_are_the_models_own(tiny_blip: Path) -> None:
    import torch
    from PIL import Image
    from transformers import BlipForQuestionAnswering, BlipProcessor

    ims = images(3)
    prompts = ["a red cube to the left of a blue sphere", "two dogs and a cat", "a bird above a table"]
    faith = create_scorer("vqa_faithfulness", model=str(tiny_blip), batch_size=2)
    res = faith.score_detailed(ims, prompts, entities=[(), ("dog",), ()])
    model = BlipForQuestionAnswering.from_pretrained(str(tiny_blip), local_files_only=True).eval()
    proc = BlipProcessor.from_pretrained(str(tiny_blip), local_files_only=True)
    n = 0
    for im, d, score in zip(ims, res.details, res.values):
        for q in d["questions"]:
            inputs = proc(images=Image.fromarray(im), text=q["question"], return_tensors="pt")
            with torch.inference_mode():
                out = model.generate(**inputs, max_new_tokens=8)
            assert q["answer"] == proc.decode(out[0][1:], skip_special_tokens=True).strip()
            n += 1
        assert score == sum(q["correct"] for q in d["questions"]) / len(d["questions"])
    assert [q["question"] for q in res.details[1]["questions"]] == ["Is there a dog?", "How many dogs are there?"]
    assert n == 5 + 2 + 3


def test_scores_do_not_depend_on_batching(tiny_clip: Path, tiny_blip: Path) -> None:
    ims = images(7)
    texts = TEXTS[:7]
    its = [ScoreItem(f"k{i}", i, t, ("cat",) if i == 1 else ()) for i, t in enumerate(texts)]
    for name, folder in (("clipscore", tiny_clip), ("vqa_yes", tiny_blip), ("vqa_faithfulness", tiny_blip)):
        scorer = create_scorer(name, model=str(folder), batch_size=3)
        runs = [score_items(scorer, its, bs, load_image=ims.__getitem__) for bs in (1, 2, 3, 7)]
        for r in runs[1:]:  # same forward batch size: bit for bit, however the runner groups items
            np.testing.assert_array_equal(r.scores, runs[0].scores)
            assert json.dumps(r.details) == json.dumps(runs[0].details)
        for bs in (1, 5):  # another forward batch size: equal to float rounding
            other = create_scorer(name, model=str(folder), batch_size=bs).score(ims, texts)
            np.testing.assert_allclose(other, runs[0].scores, rtol=1e-5, atol=1e-5)


def test_out_of_memory_halves_the_batch(tiny_clip: Path) -> None:
    import torch

    scorer = create_scorer("clipscore", model=str(tiny_clip), batch_size=8)
    scorer.load()
    real = scorer._model.get_image_features

    def limited(pixel_values: Any, **kw: Any) -> Any:
        if len(pixel_values) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(pixel_values=pixel_values, **kw)

    scorer._model.get_image_features = limited
    got = scorer.score(images(5), TEXTS[:5])
    assert scorer.batch_size == 2 and scorer.notes == [
        "out of GPU memory at batch size 8 scoring with clipscore; going on with 4",
        "out of GPU memory at batch size 4 scoring with clipscore; going on with 2"]
    plain = create_scorer("clipscore", model=str(tiny_clip), batch_size=2).score(images(5), TEXTS[:5])
    np.testing.assert_array_equal(got, plain)


def _edit_one_weight(src: Path, dst: Path) -> None:
    from safetensors.numpy import load_file, save_file

    shutil.copytree(src, dst)
    tensors = load_file(str(dst / "model.safetensors"))
    key = "text_projection.weight"
    tensors[key] = tensors[key].copy()
    tensors[key][0, 0] += 0.5
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})


def test_provenance_pins_the_weights(tiny_clip: Path, tmp_path: Path) -> None:
    scorer = create_scorer("clipscore", model=str(tiny_clip))
    prov = scorer.provenance()
    data = (tiny_clip / "model.safetensors").read_bytes()
    assert prov["weights_sha256"] == hashlib.sha256(b"model.safetensors\n" + data).hexdigest()
    assert prov["model_path"] == str(tiny_clip.resolve()) and prov["weights_files"] == ["model.safetensors"]
    assert prov["device"] == "cpu" and prov["dtype"] == "fp32" and prov["scale"] == [0.0, 100.0]
    assert prov["packages"]["transformers"] and prov["max_text_tokens"] == 77
    json.dumps(prov)  # storable as is
    edited = tmp_path / "clip-edited"
    _edit_one_weight(tiny_clip, edited)
    other = create_scorer("clipscore", model=str(edited))
    assert other.provenance()["weights_sha256"] != prov["weights_sha256"]
    assert other.provenance()["config_sha256"] == prov["config_sha256"]
    ims = images(8)
    assert not np.array_equal(other.score(ims, TEXTS), scorer.score(ims, TEXTS))


def test_loads_from_the_local_hf_cache(tiny_clip: Path, tmp_path: Path) -> None:
    commit = models_tiny.as_hf_cache_entry(tiny_clip, tmp_path / "hub", "org/tiny-clip")
    scorer = create_scorer("clipscore", model="org/tiny-clip", cache_dir=str(tmp_path / "hub"))
    prov = scorer.provenance()
    assert prov["source"] == "hf_cache" and prov["revision"] == commit and prov["model_id"] == "org/tiny-clip"
    ims = images(3)
    assert scorer.score(ims, TEXTS[:3]).tolist() == create_scorer("clipscore", model=str(tiny_clip)) \
        .score(ims, TEXTS[:3]).tolist()
    with pytest.raises(WorkstationError, match=r"'org/other' is neither a folder nor in the local Hugging Face cache"):
        create_scorer("clipscore", model="org/other", cache_dir=str(tmp_path / "hub"))


def test_clear_errors_for_bad_model_folders(tiny_clip: Path, tiny_blip: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkstationError, match=r"CLIP model folder not found: .*nowhere"):
        create_scorer("clipscore", model=str(tmp_path / "nowhere"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WorkstationError, match=r"empty is not a transformers model folder: config.json is missing"):
        create_scorer("vqa_yes", model=str(empty))
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    shutil.copy(tiny_clip / "config.json", no_weights / "config.json")
    with pytest.raises(WorkstationError, match=r"no-weights has no .safetensors weights file; only safetensors"):
        create_scorer("clipscore", model=str(no_weights))
    (no_weights / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(WorkstationError, match=r"found pytorch_model.bin; convert"):
        create_scorer("clipscore", model=str(no_weights))
    truncated = tmp_path / "truncated"
    shutil.copytree(tiny_clip, truncated)
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(WorkstationError, match=r"corrupt weights file .*truncated.*model.safetensors.*incomplete"):
        create_scorer("clipscore", model=str(truncated))
    garbage = tmp_path / "garbage"
    shutil.copytree(tiny_clip, garbage)
    (garbage / "model.safetensors").write_bytes(b"\xff" * 4096)
    with pytest.raises(WorkstationError, match=r"corrupt weights file .*unreadable safetensors header"):
        create_scorer("clipscore", model=str(garbage))
    with pytest.raises(WorkstationError, match=r"blip holds a 'blip' model; the CLIP model must be one of: clip"):
        create_scorer("clipscore", model=str(tiny_blip))
    with pytest.raises(WorkstationError, match=r"clip holds a 'clip' model; the BLIP VQA model must be one of: blip"):
        create_scorer("vqa_faithfulness", model=str(tiny_clip))
    captioner = tmp_path / "blip-caption"
    shutil.copytree(tiny_blip, captioner)
    cfg = json.loads((captioner / "config.json").read_text())
    cfg["architectures"] = ["BlipForConditionalGeneration"]
    (captioner / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(WorkstationError, match=r"holds a BlipForConditionalGeneration; .* BlipForQuestionAnswering"):
        create_scorer("vqa_yes", model=str(captioner))
    with pytest.raises(WorkstationError, match="unknown mode 'logit'"):
        create_scorer("vqa_yes", model=str(tiny_blip), mode="logit")


def test_weights_of_another_model_are_refused_at_load(tiny_clip: Path, tmp_path: Path) -> None:
    """A CLIP config over weights that lack the text tower: refused, not run with random weights."""
    from safetensors.numpy import load_file, save_file

    partial = tmp_path / "vision-only"
    shutil.copytree(tiny_clip, partial)
    tensors = {k: v for k, v in load_file(str(partial / "model.safetensors")).items() if not k.startswith("text")}
    save_file(tensors, str(partial / "model.safetensors"), metadata={"format": "pt"})
    scorer = create_scorer("clipscore", model=str(partial))
    with pytest.raises(WorkstationError, match=r"vision-only lacks \d+ weight\(s\) the CLIP model needs"):
        scorer.score(images(1), TEXTS[:1])
