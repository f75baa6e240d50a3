"""Shared loading for transformers detectors: offline, safetensors only, no remote code.

torch and transformers are imported inside ``HFDetector.load`` (first use), never at import time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import env
from ..generation.base import is_torch_oom
from ..types import WorkstationError
from .base import DEFAULT_SCORE_FLOOR, Detection, check_images
from .vocab import COCO_CLASSES, normalize

log = logging.getLogger(__name__)


def _transformers_dtype_kwarg() -> str:
    """transformers ≥ 4.56 takes ``dtype=``; older versions ``torch_dtype=``."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def onto_device(model: Any, device: str, what: str) -> None:
    """`model` in evaluation mode on `device`; running out of GPU memory there is one
    `WorkstationError`, "out of GPU memory loading <what>"."""
    model.eval()
    try:
        model.to(device)
    except Exception as e:
        if is_torch_oom(e):
            raise WorkstationError(f"out of GPU memory loading {what}") from e
        raise


def unique_queries(queries: Sequence[str] | None, default: Sequence[str] = COCO_CLASSES) -> list[str]:
    """Normalised, de-duplicated query names in order; ``None`` → the default vocabulary."""
    out: list[str] = []
    for q in default if queries is None else queries:
        n = normalize(q)
        if n and n not in out:
            out.append(n)
    return out


class HFDetector:
    """Base for detectors backed by a transformers model folder (or HF cache id)."""

    name = "hf"
    model_types: tuple[str, ...] = ()  # config.json model_type values this adapter accepts
    default_threshold = 0.3

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        revision: str | None = None,
        name: str | None = None,
        device: str = "auto",
        dtype: str = "fp32",
        threshold: float | None = None,
        score_floor: float = DEFAULT_SCORE_FLOOR,
        batch_size: int = 8,
        cache_dir: str | None = None,
    ) -> None:
        self.location = env.resolve_model(model, revision, what=f"{self.name} model", cache_dir=cache_dir)
        self.config = self._check_folder(self.location.path)
        if name:
            self.name = name
        self.device_request = device
        self.dtype_request = dtype
        self.threshold = float(self.default_threshold if threshold is None else threshold)
        self.score_floor = float(score_floor)
        self.batch_size = int(batch_size)
        self._model: Any = None
        self._processor: Any = None
        self.device: str | None = None
        self._fingerprint: str | None = None

    # ------------------------------------------------------------------ loading

    def _check_folder(self, folder: Path) -> dict[str, Any]:
        cfg_path = folder / "config.json"
        if not cfg_path.is_file():
            raise WorkstationError(f"{folder} is not a transformers model folder: config.json is missing")
        from ..util.jsonsafe import read_json_object

        config = read_json_object(cfg_path, "model config")
        mt = config.get("model_type")
        if self.model_types and mt not in self.model_types:
            raise WorkstationError(
                f"{folder} holds a {mt!r} model; detector {self.name!r} needs one of {', '.join(self.model_types)}"
            )
        if config.get("auto_map"):
            log.info("%s: config has auto_map (remote code); only the built-in transformers classes are used", folder)
        files = env.weight_files(folder)
        if files and not any(p.suffix == ".safetensors" for p in files):
            raise WorkstationError(
                f"{folder} has no .safetensors weights (found {files[0].name}); only safetensors are loaded"
            )
        env.check_weights(folder)
        return config

    def _model_class(self) -> Any:
        raise NotImplementedError

    def _load_processor(self, path: str) -> Any:
        from transformers import AutoProcessor

        return AutoProcessor.from_pretrained(path, local_files_only=True)

    def load(self) -> None:
        """Load model and processor (first call only)."""
        if self._model is not None:
            return
        import torch

        device = env.pick_device(self.device_request)
        dtype = env.pick_dtype(self.dtype_request, device)
        path = str(self.location.path)
        try:
            model = self._model_class().from_pretrained(
                path, local_files_only=True, use_safetensors=True, **{_transformers_dtype_kwarg(): dtype}
            )
            processor = self._load_processor(path)
        except WorkstationError:
            raise
        except Exception as e:
            raise WorkstationError(f"cannot load the {self.name} model from {path}: {type(e).__name__}: {e}") from e
        onto_device(model, device, f"the {self.name} model")
        self._model, self._processor, self.device, self.dtype = model, processor, device, dtype
        self._torch = torch

    def unload(self) -> None:
        self._model = None
        self._processor = None

    def provenance(self) -> dict[str, Any]:
        if self._fingerprint is None:
            self._fingerprint = env.weights_fingerprint(self.location.path)
        return {
            "detector": self.name,
            "backend": "transformers",
            "model_type": self.config.get("model_type"),
            "architectures": self.config.get("architectures"),
            "model_id": self.location.model_id,
            "model_path": str(self.location.path),
            "revision": self.location.revision,
            "source": self.location.source,
            "weights_fingerprint": self._fingerprint,
            "threshold": self.threshold,
            "score_floor": self.score_floor,
            "device": self.device,
            "packages": env.package_versions(("torch", "transformers", "tokenizers")),
        }

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def to_pil(images: Sequence[np.ndarray]) -> list[Any]:
        from PIL import Image

        return [Image.fromarray(im) for im in images]

    def to_device(self, batch: Any) -> Any:
        """Move a processor output to the model's device; float tensors to its dtype."""
        out = {}
        for k, v in batch.items():
            if hasattr(v, "to"):
                v = v.to(self.device)
                if v.is_floating_point():
                    v = v.to(self.dtype)
            out[k] = v
        return out

    def run(self, fn: Any, n: int) -> Any:
        """Call ``fn()`` under inference mode, turning out-of-memory into a clear error."""
        try:
            with self._torch.inference_mode():
                return fn()
        except Exception as e:
            if is_torch_oom(e):
                if self._torch.cuda.is_available():
                    self._torch.cuda.empty_cache()
                from ..generation.base import OutOfMemory

                raise OutOfMemory(n, str(e)) from None
            raise

    def detect_batch(
        self, images: list[np.ndarray], queries: list[list[str]] | None = None
    ) -> list[list[Detection]]:
        check_images(images, queries)
        if not images:
            return []
        self.load()
        return self._detect(images, queries)

    def _detect(self, images: list[np.ndarray], queries: list[list[str]] | None) -> list[list[Detection]]:
        raise NotImplementedError
