"""Sampler (scheduler) names → diffusers scheduler classes and settings.

Names are matched loosely: "DPM-Solver++ 2M", "dpmpp_2m" and "DPMSolverMultistepScheduler" are
the same. diffusers is imported only in ``make_scheduler``.
"""

from __future__ import annotations

import re
from typing import Any

from ..types import WorkstationError

DEFAULT_SCHEDULER = "dpmpp_2m"

# canonical name → (diffusers class, extra config, human label)
SCHEDULERS: dict[str, tuple[str, dict[str, Any], str]] = {
    "dpmpp_2m": ("DPMSolverMultistepScheduler", {"algorithm_type": "dpmsolver++", "solver_order": 2}, "DPM-Solver++ 2M"),
    "dpmpp_2m_karras": (
        "DPMSolverMultistepScheduler",
        {"algorithm_type": "dpmsolver++", "solver_order": 2, "use_karras_sigmas": True},
        "DPM-Solver++ 2M Karras",
    ),
    "unipc": ("UniPCMultistepScheduler", {}, "UniPC"),
    "euler": ("EulerDiscreteScheduler", {}, "Euler"),
    "euler_a": ("EulerAncestralDiscreteScheduler", {}, "Euler a"),
    "ddim": ("DDIMScheduler", {}, "DDIM"),
    "pndm": ("PNDMScheduler", {"skip_prk_steps": True}, "PNDM"),
    "default": ("", {}, "the pipeline's own scheduler"),
}

_ALIASES: dict[str, str] = {
    "dpmsolvermultistepscheduler": "dpmpp_2m",
    "dpmsolverpp2m": "dpmpp_2m",
    "dpmsolver2m": "dpmpp_2m",
    "dpmpp2m": "dpmpp_2m",
    "dpmpp2mkarras": "dpmpp_2m_karras",
    "unipcmultistepscheduler": "unipc",
    "unipcmultistep": "unipc",
    "eulerdiscretescheduler": "euler",
    "eulerdiscrete": "euler",
    "eulera": "euler_a",
    "eulerancestral": "euler_a",
    "eulerancestraldiscretescheduler": "euler_a",
    "ddimscheduler": "ddim",
    "pndmscheduler": "pndm",
    "pipeline": "default",
    "native": "default",
}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().replace("++", "pp"))


def canonical_scheduler(name: str) -> str:
    """'DPM-Solver++ 2M' → 'dpmpp_2m'; an unknown name raises an error listing the known ones."""
    k = _key(name)
    for canon in SCHEDULERS:
        if _key(canon) == k:
            return canon
    if k in _ALIASES:
        return _ALIASES[k]
    known = ", ".join(f"{n} ({label})" for n, (_, _, label) in SCHEDULERS.items())
    raise WorkstationError(f"unknown scheduler {name!r}; known: {known}")


def is_flow_matching(scheduler: Any) -> bool:
    return "FlowMatch" in type(scheduler).__name__


def make_scheduler(name: str, current: Any) -> tuple[Any, str]:
    """A scheduler for ``name`` built from the pipeline's current one's config → (scheduler, canonical name)."""
    canon = canonical_scheduler(name)
    if canon == "default":
        return current, canon
    if is_flow_matching(current):
        raise WorkstationError(
            f"this pipeline uses a flow-matching scheduler ({type(current).__name__}); scheduler "
            f"{name!r} does not apply — use 'default'"
        )
    import diffusers

    cls_name, extra, _ = SCHEDULERS[canon]
    cls = getattr(diffusers, cls_name)
    return cls.from_config(current.config, **extra), canon
