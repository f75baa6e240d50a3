"""Generator backends behind one interface, registered by name, imported lazily.

Importing this package loads neither torch nor diffusers; ``create_generator`` imports a
backend's module when a job asks for it.
"""

from .base import (
    Generator,
    GenerationParams,
    GenerationRequest,
    Grounding,
    OutOfMemory,
    ProgressFn,
    generate_iter,
    layout_boxes,
)
from .registry import GENERATORS, available_generators, create_generator
from .schedulers import DEFAULT_SCHEDULER, SCHEDULERS, canonical_scheduler

__all__ = [
    "DEFAULT_SCHEDULER", "GENERATORS", "SCHEDULERS", "GenerationParams", "GenerationRequest", "Generator",
    "Grounding", "OutOfMemory", "ProgressFn", "available_generators", "canonical_scheduler", "create_generator",
    "generate_iter", "layout_boxes",
]
