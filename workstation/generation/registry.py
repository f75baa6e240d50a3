"""The generator registry: method name → import string, loaded only when a job starts."""

from __future__ import annotations

from typing import Any

from ..registry import Registry
from .base import Generator

GENERATORS: Registry[Generator] = Registry("generator")

GENERATORS.register(
    "diffusers", "workstation.generation.diffusers_backend:DiffusersGenerator",
    description="prompt-only text-to-image with a local diffusers pipeline (SD 1.x/2.x, SDXL, SD3, FLUX)",
    requires=("torch", "diffusers", "transformers"), aliases=("text2image", "sd"),
)
GENERATORS.register(
    "gligen", "workstation.generation.diffusers_backend:GligenGenerator",
    description="grounded generation with StableDiffusionGLIGENPipeline, boxes laid out from the relation",
    requires=("torch", "diffusers", "transformers"),
)
GENERATORS.register(
    "fake", "workstation.generation.fake:FakeGenerator",
    description="deterministic placeholder images without a model (tests, demos)",
)


# create_generator: build the generator registered as a name (e.g. ``create_generator("diffusers", model=folder)``);
# available_generators: the registered generators whose optional packages are installed
create_generator = GENERATORS.create
available_generators = GENERATORS.available
