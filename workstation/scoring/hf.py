"""Shared loading for transformers scorers: a local folder or the local HF cache, offline, safetensors only.

The constructor resolves and checks the folders (config, weights, tokenizer and image-processor
files) and fails with one clear line naming the folder and what is missing; the model itself is
loaded on first use (``load``). torch and transformers are imported only there. Remote code is
never run: only the built-in transformers classes are used, and ``trust_remote_code`` is never set.
Images go through the image processor's PIL backend (PIL bicubic resizing, as the reference CLIP
preprocessing does), whatever torchvision is installed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import env
from ..detection.hf_common import _transformers_dtype_kwarg, onto_device
from ..types import WorkstationError
from .base import BatchedScorer, file_sha256, is_oom, pick_device, weight_files, weights_sha256

log = logging.getLogger(__name__)

TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "vocab.txt", "spiece.model", "tokenizer.model")
IMAGE_PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json")


MAX_CONFIG_BYTES = 4 * 1024 * 1024


def read_config_json(cfg_path: Path) -> dict[str, Any]:
    """A model folder's config.json, read as hostile JSON (size-capped, strict: `loads_strict`)."""
    from ..types import InputError
    from ..util.jsonsafe import JSONInputError, loads_strict
    from ..util.textio import read_bytes_capped

    data = read_bytes_capped(cfg_path, MAX_CONFIG_BYTES, "model config")
    try:
        config = loads_strict(data)
    except JSONInputError as e:
        raise InputError(cfg_path, f"not a readable model config ({e.message})", e.line) from None
    if not isinstance(config, dict):
        raise InputError(cfg_path, "the model config does not hold a JSON object")
    return config


def check_model_folder(folder: Path, model_types: Sequence[str], architectures: Sequence[str], what: str) -> dict[str, Any]:
    """config.json with an accepted model_type / architecture, and intact safetensors weights."""
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise WorkstationError(f"{folder} is not a transformers model folder: config.json is missing ({what})")
    config = read_config_json(cfg_path)
    mt = config.get("model_type")
    if model_types and mt not in model_types:
        raise WorkstationError(f"{folder} holds a {str(mt)[:40]!r} model; the {what} must be one of: "
                               f"{', '.join(model_types)}")
    arch = config.get("architectures") or []
    if not isinstance(arch, list) or not all(isinstance(a, str) for a in arch):
        raise WorkstationError(f"{cfg_path}: 'architectures' must be a list of names")
    if architectures and arch and not set(arch) & set(architectures):
        raise WorkstationError(
            f"{folder} holds a {', '.join(arch)[:80]}; the {what} must be a {' or '.join(architectures)}"
        )
    if config.get("auto_map"):
        log.info("%s: config has auto_map (remote code); only the built-in transformers classes are used", folder)
    files = env.weight_files(folder)
    if not any(p.suffix == ".safetensors" for p in files):
        found = f" (found {', '.join(p.name for p in files[:3])}; convert with save_pretrained(..., " \
                f"safe_serialization=True))" if files else ""
        raise WorkstationError(f"{folder} has no .safetensors weights file{found}; only safetensors are loaded")
    env.check_weights(folder)
    return config


def check_processor_folder(folder: Path) -> None:
    """Tokenizer files and an image-processor config must be there."""
    if not any((folder / n).is_file() for n in TOKENIZER_FILES):
        raise WorkstationError(
            f"{folder} has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}); give the folder that holds "
            f"the tokenizer and image processor with processor=…"
        )
    if not any((folder / n).is_file() for n in IMAGE_PROCESSOR_FILES):
        raise WorkstationError(
            f"{folder} has no image processor config ({' or '.join(IMAGE_PROCESSOR_FILES)}); give the folder "
            f"that holds it with processor=…"
        )


def load_image_processor(path: str) -> Any:
    """The folder's image processor with the PIL backend (transformers ≥ 5: backend="pil";
    older versions: the slow processor, which is PIL-based)."""
    from transformers import AutoImageProcessor

    try:
        return AutoImageProcessor.from_pretrained(path, local_files_only=True, backend="pil")
    except TypeError:  # pragma: no cover - transformers < 5
        return AutoImageProcessor.from_pretrained(path, local_files_only=True, use_fast=False)


class HFScorer(BatchedScorer):
    """Base for scorers backed by a transformers model folder (or an id in the local HF cache)."""

    what = "model"
    model_types: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()  # accepted config "architectures" (empty: any)
    metric = ""  # one line: what the score is (provenance)

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        processor: str | os.PathLike[str] | None = None,
        revision: str | None = None,
        cache_dir: str | None = None,
        device: str = "auto",
        dtype: str = "fp32",
        batch_size: int = 16,
        fixed_batch: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, fixed_batch=fixed_batch)
        if dtype.lower() not in env.DTYPES:
            raise WorkstationError(f"unknown dtype {dtype!r}; use one of {', '.join(env.DTYPES)}")
        if name:
            self.name = name
        self.location = env.resolve_model(model, revision, what=self.what, cache_dir=cache_dir)
        self.config = check_model_folder(self.location.path, self.model_types, self.architectures, self.what)
        if processor is None:
            self.processor_location = self.location
        else:
            self.processor_location = env.resolve_model(processor, None, what=f"{self.what} processor",
                                                        cache_dir=cache_dir)
        check_processor_folder(self.processor_location.path)
        self.device_request = device
        self.dtype_request = dtype
        self.device: str | None = None
        self.dtype: Any = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._image_processor: Any = None
        self._torch: Any = None

    # ------------------------------------------------------------------ loading

    def _model_class(self) -> Any:
        raise NotImplementedError

    def load(self) -> None:
        """Load model, tokenizer and image processor (first call only)."""
        if self._model is not None:
            return
        import torch
        from transformers import AutoTokenizer

        device = pick_device(self.device_request)
        dtype = env.pick_dtype(self.dtype_request, device, accelerated_default="fp32")
        path, ppath = str(self.location.path), str(self.processor_location.path)
        try:
            tokenizer = AutoTokenizer.from_pretrained(ppath, local_files_only=True)
            image_processor = load_image_processor(ppath)
        except Exception as e:
            raise WorkstationError(f"cannot load the tokenizer / image processor from {ppath}: "
                                   f"{type(e).__name__}: {e}") from e
        try:
            model, info = self._model_class().from_pretrained(
                path, local_files_only=True, use_safetensors=True, output_loading_info=True,
                **{_transformers_dtype_kwarg(): dtype},
            )
        except Exception as e:
            if is_oom(e):
                raise WorkstationError(f"out of memory loading the {self.what} from {path}") from e
            raise WorkstationError(f"cannot load the {self.what} from {path}: {type(e).__name__}: {e}") from e
        missing = sorted(info.get("missing_keys") or [])
        if missing:
            raise WorkstationError(
                f"{path} lacks {len(missing)} weight(s) the {self.what} needs (e.g. {missing[0]}); it holds a "
                f"different model or an incomplete download"
            )
        onto_device(model, device, f"the {self.what} onto {device}")
        self._model, self._tokenizer, self._image_processor = model, tokenizer, image_processor
        self.device, self.dtype, self._torch = device, dtype, torch
        try:
            self._after_load()
        except Exception:
            self.unload()
            raise

    def _after_load(self) -> None:
        """Subclass hook: token ids and the like, checked once the tokenizer is there."""

    def unload(self) -> None:
        self._model = self._tokenizer = self._image_processor = None

    # ------------------------------------------------------------------ helpers

    def pixel_values(self, images: Sequence[np.ndarray], rows: Sequence[int]) -> Any:
        """Preprocess each distinct image once, then gather ``rows`` (padding copies) on the device."""
        from PIL import Image

        pv = self._image_processor(images=[Image.fromarray(im) for im in images], return_tensors="pt")["pixel_values"]
        index = self._torch.as_tensor(list(rows), dtype=self._torch.long)
        return pv.index_select(0, index).to(self.device, self.dtype)

    def inference(self) -> Any:
        return self._torch.inference_mode()

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        folder = self.location.path
        d.update({
            "backend": "transformers",
            "metric": self.metric,
            "model_type": self.config.get("model_type"),
            "architectures": self.config.get("architectures"),
            "model_id": self.location.model_id,
            "model_path": str(folder),
            "revision": self.location.revision,
            "source": self.location.source,
            "processor_path": str(self.processor_location.path),
            "weights_files": [p.relative_to(folder).as_posix() for p in weight_files(folder)],
            "weights_sha256": weights_sha256(folder),
            "config_sha256": file_sha256(folder / "config.json"),
            "device": self.device or pick_device(self.device_request),
            "dtype": env.dtype_name(self.dtype) if self.dtype is not None else self.dtype_request.lower(),
            "packages": env.package_versions(("torch", "transformers", "tokenizers", "safetensors", "pillow")),
        })
        return d
