"""Generation backends: a tiny random-weight Stable Diffusion pipeline saved to a folder and loaded
back through the workstation's loader; reproducibility a user can check (same prompt + seed gives
the same pixels, alone or in a batch); clear errors for the mistakes a user can make."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.generation import (
    GENERATORS,
    GenerationParams,
    GenerationRequest,
    Grounding,
    OutOfMemory,
    canonical_scheduler,
    create_generator,
    generate_iter,
    layout_boxes,
)
from workstation.types import WorkstationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models_tiny  # noqa: E402

pytest.importorskip("diffusers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PROMPTS = [f"A photo of a {a} to the left of a {b}." for a, b in [
    ("cat", "dog"), ("cake", "bed"), ("apple", "banana"), ("bus", "car"), ("cow", "horse"), ("tv", "couch"),
    ("bear", "zebra"), ("vase", "clock"), ("cup", "bottle"), ("bird", "boat"), ("pizza", "laptop"),
    ("truck", "bicycle"), ("giraffe", "elephant"), ("chair", "potted plant"), ("stop sign", "fire hydrant"),
    ("teddy bear", "airplane"),
]]
SMALL = GenerationParams(width=64, height=64, steps=2, batch_size=8)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Any:
    """Tiny models run fastest on one thread, and do not stall when other processes hold the cores.
    (On the CPU the thread count is part of what fixes the pixels, so every fixture here uses one.)"""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tokenizer_dir(models_dir: Path) -> Path:
    d = models_dir / "clip_tokenizer"
    if not (d / "vocab.json").is_file():
        pytest.skip(f"CLIP tokenizer not found at {d}")
    return d


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> Path:
    return models_tiny.build_tiny_sd(tmp_path_factory.mktemp("models") / "tiny-sd", tokenizer_dir)


@pytest.fixture(scope="module")
def generator(tiny_sd: Path, one_torch_thread: None) -> Any:
    return create_generator("diffusers", model=str(tiny_sd))


@pytest.fixture(scope="module")
def batch_images(generator: Any) -> list[np.ndarray]:
    prompts = PROMPTS * 2
    seeds = [0] * 16 + [1] * 16
    return generator.generate(GenerationRequest(prompts, seeds), SMALL)


def test_generates_16_prompts_by_2_seeds(batch_images: list[np.ndarray]) -> None:
    assert len(batch_images) == 32
    for im in batch_images:
        assert im.shape == (64, 64, 3) and im.dtype == np.uint8
    # different prompts and different seeds give different images
    assert not np.array_equal(batch_images[0], batch_images[1])
    assert not np.array_equal(batch_images[0], batch_images[16])


def test_regenerating_gives_bit_identical_images(generator: Any, batch_images: list[np.ndarray]) -> None:
    again = generator.generate(GenerationRequest(PROMPTS * 2, [0] * 16 + [1] * 16), SMALL)
    assert all(np.array_equal(a, b) for a, b in zip(batch_images, again))


def test_a_sample_made_alone_equals_the_same_sample_made_in_a_batch(
    generator: Any, batch_images: list[np.ndarray]
) -> None:
    alone = generator.generate(GenerationRequest([PROMPTS[5]], [1]), SMALL)[0]
    assert np.array_equal(alone, batch_images[16 + 5])
    # and in a batch of different company, at a different position
    mixed = generator.generate(GenerationRequest([PROMPTS[9], PROMPTS[3], PROMPTS[5]], [7, 0, 1]), SMALL)
    assert np.array_equal(mixed[1], batch_images[3])
    assert np.array_equal(mixed[2], batch_images[16 + 5])


def test_provenance_records_model_folder_fingerprint_and_scheduler(generator: Any, tiny_sd: Path) -> None:
    generator.generate(GenerationRequest([PROMPTS[0]], [0]), SMALL)
    prov = generator.provenance()
    assert prov["model_path"] == str(tiny_sd.resolve())
    assert prov["pipeline"] == "StableDiffusionPipeline"
    assert len(prov["weights_fingerprint"]) == 64
    assert prov["scheduler"] == "dpmpp_2m" and prov["scheduler_class"] == "DPMSolverMultistepScheduler"
    assert prov["dtype"] == "fp32" and prov["device"] == "cpu"
    assert "diffusers" in prov["packages"]


@pytest.mark.parametrize("name", ["UniPC", "Euler", "Euler a", "DDIM", "PNDM", "UniPCMultistepScheduler"])
def test_schedulers_by_name(generator: Any, name: str) -> None:
    p = SMALL.replace(scheduler=name, batch_size=2)
    a = generator.generate(GenerationRequest([PROMPTS[0], PROMPTS[1]], [3, 4]), p)
    b = generator.generate(GenerationRequest([PROMPTS[1]], [4]), p)
    assert np.array_equal(a[1], b[0])  # ancestral sampling too: its noise is seeded per sample
    assert generator.provenance()["scheduler"] == canonical_scheduler(name)


def test_negative_prompt_changes_the_image(generator: Any) -> None:
    p = SMALL.replace(batch_size=1)
    plain = generator.generate(GenerationRequest([PROMPTS[0]], [0]), p)[0]
    neg = generator.generate(GenerationRequest([PROMPTS[0]], [0]), p.replace(negative_prompt="blurry"))[0]
    assert not np.array_equal(neg, plain)


def test_progress_is_reported_per_step_and_batches_can_be_stopped(generator: Any) -> None:
    steps: list[tuple[int, int]] = []
    it = generate_iter(generator, GenerationRequest(PROMPTS[:6], list(range(6))), SMALL.replace(batch_size=2),
                       progress=lambda s, n: steps.append((s, n)))
    first_slice, first = next(it)
    it.close()  # cancel between batches
    assert first_slice == slice(0, 2) and len(first) == 2
    assert steps == [(1, 2), (2, 2)]


def test_unknown_scheduler_names_the_known_ones(generator: Any) -> None:
    with pytest.raises(WorkstationError, match=r"unknown scheduler 'heun2'.*dpmpp_2m.*unipc.*euler_a.*ddim.*pndm"):
        generator.generate(GenerationRequest([PROMPTS[0]], [0]), SMALL.replace(scheduler="heun2"))


def test_a_request_is_refused_when_its_lists_disagree_or_a_seed_is_out_of_range() -> None:
    cat = Grounding.for_relation("cat", "dog", "left_of")
    with pytest.raises(WorkstationError, match="^2 prompts but 1 seeds$"):
        GenerationRequest(PROMPTS[:2], [0])
    with pytest.raises(WorkstationError, match="^1 groundings for 2 prompts$"):
        GenerationRequest(PROMPTS[:2], [0, 1], [cat])
    with pytest.raises(WorkstationError, match="seed -1 is outside"):
        GenerationRequest(PROMPTS[:1], [-1])
    with pytest.raises(WorkstationError, match="is outside"):
        GenerationRequest(PROMPTS[:1], [2**63])


def test_generate_iter_hands_each_batch_its_part_of_the_request() -> None:
    from workstation.generation.fake import FakeGenerator

    fake = FakeGenerator()
    request = GenerationRequest(PROMPTS[:5], [4, 3, 2, 1, 0])
    batches = list(generate_iter(fake, request, SMALL.replace(batch_size=2)))
    assert [sl for sl, _ in batches] == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert fake.calls == 3
    whole = fake.generate(request, SMALL)
    assert all(np.array_equal(im, whole[i]) for sl, ims in batches
               for i, im in zip(range(sl.start, sl.stop), ims))


def test_missing_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkstationError, match="not found"):
        create_generator("diffusers", model=str(tmp_path / "no-such-model"))
    with pytest.raises(WorkstationError, match="neither a folder nor in the local Hugging Face cache"):
        create_generator("diffusers", model="someone/not-downloaded-model")


def test_folder_without_model_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkstationError, match="model_index.json is missing"):
        create_generator("diffusers", model=str(tmp_path))


def test_truncated_weights_file_is_named_in_the_error(tiny_sd: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(tiny_sd, broken)
    weights = broken / "unet" / "diffusion_pytorch_model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(WorkstationError, match=r"corrupt weights file .*diffusion_pytorch_model\.safetensors.*truncated"):
        create_generator("diffusers", model=str(broken))
    weights.write_bytes(b"\x00garbage")
    with pytest.raises(WorkstationError, match="corrupt weights file"):
        create_generator("diffusers", model=str(broken))


def test_out_of_memory_becomes_a_specific_error(generator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    pipe = generator.load(SMALL)

    def boom(*_: Any, **__: Any) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(type(pipe), "__call__", boom)
    with pytest.raises(OutOfMemory) as info:
        generator.generate(GenerationRequest(PROMPTS[:3], [0, 1, 2]), SMALL)
    assert info.value.batch_size == SMALL.batch_size
    assert isinstance(info.value, WorkstationError) and "smaller batch" in str(info.value)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(WorkstationError, match="multiples of 8"):
        GenerationParams(width=100)
    with pytest.raises(WorkstationError, match="unknown generation parameter"):
        GenerationParams.from_dict({"widht": 512})
    with pytest.raises(WorkstationError, match="attention"):
        GenerationParams(attention="flash")
    assert GenerationParams.from_dict(SMALL.to_dict()) == SMALL


def test_layout_boxes_put_a_and_b_in_the_relation() -> None:
    a, b = layout_boxes("left_of")
    assert a == (0.05, 0.25, 0.35, 0.75) and b == (0.65, 0.25, 0.95, 0.75)
    a, b = layout_boxes("right_of")
    assert (a[0] + a[2]) / 2 > (b[0] + b[2]) / 2
    a, b = layout_boxes("above")
    assert (a[1] + a[3]) / 2 < (b[1] + b[3]) / 2
    a, b = layout_boxes("below")
    assert (a[1] + a[3]) / 2 > (b[1] + b[3]) / 2
    with pytest.raises(WorkstationError, match="left_of"):
        layout_boxes("behind")


def test_unknown_generator_lists_the_registered_ones() -> None:
    with pytest.raises(WorkstationError, match=r"unknown generator 'difusers'.*diffusers.*gligen"):
        create_generator("difusers")
    assert {"diffusers", "gligen", "fake"} <= set(GENERATORS.names())


def test_fake_generator_is_deterministic() -> None:
    g = create_generator("fake")
    p = GenerationParams(width=64, height=32, steps=1)
    a = g.generate(GenerationRequest(["a cat above a dog"], [3]), p)
    assert a[0].shape == (32, 64, 3)
    assert np.array_equal(a[0], g.generate(GenerationRequest(["a cat above a dog"], [3]), p)[0])


def test_grounded_generation_with_gligen(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path,
                                         tiny_sd: Path) -> None:
    folder = models_tiny.build_tiny_sd(tmp_path_factory.mktemp("models") / "tiny-gligen", tokenizer_dir, gligen=True)
    g = create_generator("gligen", model=str(folder))
    grounding = [Grounding.for_relation("cat", "dog", "left_of"), Grounding.for_relation("cake", "bed", "above")]
    p = SMALL.replace(batch_size=2)
    a = g.generate(GenerationRequest(PROMPTS[:2], [0, 1], grounding), p)
    assert len(a) == 2 and a[0].shape == (64, 64, 3)
    assert np.array_equal(a[1], g.generate(GenerationRequest(PROMPTS[1:2], [1], grounding[1:]), p)[0])
    with pytest.raises(WorkstationError, match="needs a grounding"):
        g.generate(GenerationRequest(PROMPTS[:1], [0]), p)
    with pytest.raises(WorkstationError, match="not a GLIGEN pipeline"):
        create_generator("gligen", model=str(tiny_sd))
    plain = create_generator("diffusers", model=str(tiny_sd))
    with pytest.raises(WorkstationError, match="does not take box groundings"):
        plain.generate(GenerationRequest(PROMPTS[:1], [0], grounding[:1]), p)


def test_importing_the_model_layer_loads_no_ml_library() -> None:
    code = ("import sys, workstation.generation, workstation.detection, workstation.env;"
            "from workstation.detection import DETECTORS; DETECTORS.names();"
            "print(sorted(m for m in ('torch','diffusers','transformers') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "[]", r.stderr


def test_model_from_the_local_hf_cache_records_its_revision(tiny_sd: Path, tmp_path: Path) -> None:
    commit = models_tiny.as_hf_cache_entry(tiny_sd, tmp_path / "hub", "tiny-org/tiny-sd")
    g = create_generator("diffusers", model="tiny-org/tiny-sd", cache_dir=str(tmp_path / "hub"))
    prov = g.provenance()
    assert prov["model_id"] == "tiny-org/tiny-sd" and prov["revision"] == commit and prov["source"] == "hf_cache"
    with pytest.raises(WorkstationError, match="revision v9"):
        create_generator("diffusers", model="tiny-org/tiny-sd", revision="v9", cache_dir=str(tmp_path / "hub"))
    # a snapshot folder given by path is recognised too
    snapshot = tmp_path / "hub" / "models--tiny-org--tiny-sd" / "snapshots" / commit
    prov = create_generator("diffusers", model=str(snapshot)).provenance()
    assert prov["model_id"] == "tiny-org/tiny-sd" and prov["revision"] == commit


def test_weights_fingerprint_tells_trainings_apart(tiny_sd: Path, tmp_path: Path) -> None:
    from workstation.env import weights_fingerprint

    copy = tmp_path / "copy"
    shutil.copytree(tiny_sd, copy)
    assert weights_fingerprint(copy) == weights_fingerprint(tiny_sd)
    # same header (names, shapes, offsets), different values — as two fine-tunes would be
    w = copy / "unet" / "diffusion_pytorch_model.safetensors"
    data = bytearray(w.read_bytes())
    data[-10] ^= 0xFF  # inside the last sampled block
    w.write_bytes(bytes(data))
    assert weights_fingerprint(copy) != weights_fingerprint(tiny_sd)


def test_sdxl_pipeline_loads_and_reproduces(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path,
                                            one_torch_thread: None) -> None:
    folder = models_tiny.build_tiny_sdxl(tmp_path_factory.mktemp("models") / "tiny-sdxl", tokenizer_dir)
    g = create_generator("diffusers", model=str(folder))
    p = SMALL.replace(batch_size=2, negative_prompt="blurry")
    a = g.generate(GenerationRequest(PROMPTS[:2], [0, 1]), p)
    assert [im.shape for im in a] == [(64, 64, 3)] * 2
    assert np.array_equal(a[1], g.generate(GenerationRequest(PROMPTS[1:2], [1]), p)[0])
    assert g.provenance()["pipeline_class"] == "StableDiffusionXLPipeline"
