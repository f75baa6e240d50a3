"""Text-to-image generation with diffusers pipelines loaded offline from a folder or the HF cache.

``DiffusersGenerator`` runs any text-to-image pipeline (SD 1.x / 2.x, SDXL, SD3, FLUX — whatever
the installed diffusers supports); ``GligenGenerator`` runs StableDiffusionGLIGENPipeline with
one box per object, laid out from the prompt's relation. torch and diffusers are imported only
when a pipeline is loaded.
"""

from __future__ import annotations

import gc
import inspect
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import env
from ..types import WorkstationError
from .base import (GenerationParams, GenerationRequest, Grounding, OutOfMemory, ProgressFn, is_torch_oom,
                   to_uint8)
from .schedulers import DEFAULT_SCHEDULER, canonical_scheduler, is_flow_matching, make_scheduler

log = logging.getLogger(__name__)

_NON_TEXT2IMAGE = ("Img2Img", "Inpaint", "Upscale", "Depth2Img", "InstructPix2Pix")


def _free_accelerator_memory() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def _dtype_kwarg() -> str:
    """Newer diffusers take ``dtype=`` (``torch_dtype=`` is deprecated); older ones only ``torch_dtype=``."""
    try:
        from diffusers.utils import deprecation_utils

        return "dtype" if hasattr(deprecation_utils, "_resolve_dtype") else "torch_dtype"
    except ImportError:
        return "torch_dtype"


def check_pipeline_folder(folder: Path) -> dict[str, Any]:
    """Read model_index.json and validate the weights (headers only); clear errors otherwise."""
    index = folder / "model_index.json"
    if not index.is_file():
        raise WorkstationError(
            f"{folder} is not a diffusers pipeline folder: model_index.json is missing "
            f"(single-file checkpoints are not supported; save the pipeline with save_pretrained)"
        )
    from ..util.jsonsafe import read_json_object

    meta = read_json_object(index, "pipeline index")
    files = env.weight_files(folder)
    if files and not any(p.suffix == ".safetensors" for p in files):
        raise WorkstationError(
            f"{folder} has no .safetensors weights (found {files[0].name}); only safetensors are loaded — "
            f"convert the model, e.g. save_pretrained(..., safe_serialization=True)"
        )
    env.check_weights(folder)
    return meta


class DiffusersGenerator:
    """Prompt-only generation with a diffusers text-to-image pipeline."""

    name = "diffusers"

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        revision: str | None = None,
        pipeline_class: str | None = None,
        keep_safety_checker: bool = False,
        name: str | None = None,
        cache_dir: str | None = None,
    ) -> None:
        self.location = env.resolve_model(model, revision, what="generation model", cache_dir=cache_dir)
        self.model_index = check_pipeline_folder(self.location.path)
        self.pipeline_class = pipeline_class
        self.keep_safety_checker = keep_safety_checker
        if name:
            self.name = name
        self._pipe: Any = None
        self._base_scheduler: Any = None
        self._load_key: tuple[str, str, str] | None = None
        self._fingerprint: str | None = None
        self.last_run: dict[str, Any] = {}

    # ------------------------------------------------------------------ loading

    def _pipeline_cls(self) -> Any:
        import diffusers

        if self.pipeline_class:
            cls = getattr(diffusers, self.pipeline_class, None)
            if cls is None:
                raise WorkstationError(f"diffusers has no pipeline class {self.pipeline_class!r}")
            return cls
        return diffusers.DiffusionPipeline

    def load(self, params: GenerationParams) -> Any:
        """The pipeline on ``params.device`` in ``params.dtype`` with its attention mode (cached)."""
        device = env.pick_device(params.device)
        dtype = env.pick_dtype(params.dtype, device)
        key = (device, env.dtype_name(dtype), params.attention)
        if self._pipe is not None and self._load_key == key:
            return self._pipe
        self.unload()
        import torch

        kwargs: dict[str, Any] = {_dtype_kwarg(): dtype, "local_files_only": True, "use_safetensors": True}
        if "safety_checker" in self.model_index and not self.keep_safety_checker:
            kwargs["safety_checker"] = None
            kwargs["requires_safety_checker"] = False
        path = self.location.path
        try:
            pipe = self._pipeline_cls().from_pretrained(str(path), **kwargs)
        except WorkstationError:
            raise
        except Exception as e:
            if is_torch_oom(e):
                _free_accelerator_memory()
                raise OutOfMemory(0, f"loading the model: {e}") from e
            raise WorkstationError(f"cannot load the diffusers pipeline from {path}: {type(e).__name__}: {e}") from e
        if any(tag in type(pipe).__name__ for tag in _NON_TEXT2IMAGE):
            from diffusers import AutoPipelineForText2Image

            pipe = AutoPipelineForText2Image.from_pipe(pipe)
        if "prompt" not in inspect.signature(pipe.__call__).parameters:
            raise WorkstationError(f"{type(pipe).__name__} from {path} is not a text-to-image pipeline")
        if device.startswith("cuda"):
            torch.backends.cudnn.benchmark = False  # same kernels every run: reproducible pixels
        try:
            pipe = pipe.to(device)
        except Exception as e:
            if is_torch_oom(e):
                del pipe
                _free_accelerator_memory()
                raise OutOfMemory(0, f"moving the model to {device}: {e}") from e
            raise
        if params.attention == "slicing":
            pipe.enable_attention_slicing()
        elif params.attention == "xformers":
            import importlib.util

            if importlib.util.find_spec("xformers") is None:
                raise WorkstationError("attention mode 'xformers' asked for, but xformers is not installed; use sdpa")
            pipe.enable_xformers_memory_efficient_attention()
        pipe.set_progress_bar_config(disable=True)
        self._pipe, self._base_scheduler, self._load_key = pipe, pipe.scheduler, key
        return pipe

    def unload(self) -> None:
        if self._pipe is not None:
            self._pipe = None
            self._base_scheduler = None
            self._load_key = None
            _free_accelerator_memory()

    def resolve_scheduler(self, params: GenerationParams) -> str:
        """The canonical scheduler name a run with ``params`` uses (needs the pipeline loaded)."""
        if params.scheduler is None:
            return "default" if is_flow_matching(self._base_scheduler) else DEFAULT_SCHEDULER
        return canonical_scheduler(params.scheduler)

    # ------------------------------------------------------------------ provenance

    def provenance(self) -> dict[str, Any]:
        if self._fingerprint is None:
            self._fingerprint = env.weights_fingerprint(self.location.path)
        d: dict[str, Any] = {
            "generator": self.name,
            "pipeline": self.model_index.get("_class_name"),
            "model_id": self.location.model_id,
            "model_path": str(self.location.path),
            "revision": self.location.revision,
            "source": self.location.source,
            "weights_fingerprint": self._fingerprint,
            "packages": env.package_versions(("torch", "diffusers", "transformers", "safetensors", "accelerate")),
        }
        d.update(self.last_run)
        return d

    # ------------------------------------------------------------------ generation

    def _call_kwargs(self, pipe: Any, prompts: list[str], seeds: list[int], params: GenerationParams,
                     progress: ProgressFn | None) -> dict[str, Any]:
        import torch

        sig = inspect.signature(pipe.__call__).parameters
        kw: dict[str, Any] = {
            "prompt": prompts,
            "height": params.height,
            "width": params.width,
            "num_inference_steps": params.steps,
            # per-sample CPU generators: the initial noise of sample i depends on seeds[i] only
            "generator": [torch.Generator("cpu").manual_seed(int(s)) for s in seeds],
            "output_type": "np",
        }
        if "guidance_scale" in sig:
            kw["guidance_scale"] = params.guidance
        if params.negative_prompt is not None:
            if "negative_prompt" not in sig:
                raise WorkstationError(f"{type(pipe).__name__} does not take a negative prompt")
            kw["negative_prompt"] = [params.negative_prompt] * len(prompts)
        if progress is not None:
            total = params.steps
            if "callback_on_step_end" in sig:
                def on_step_end(_p: Any, step: int, _t: Any, cb_kwargs: dict[str, Any]) -> dict[str, Any]:
                    progress(step + 1, total)
                    return cb_kwargs

                kw["callback_on_step_end"] = on_step_end
            elif "callback" in sig:
                kw["callback"] = lambda step, _t, _lat: progress(step + 1, total)
                kw["callback_steps"] = 1
        return kw

    def _run(self, pipe: Any, kw: dict[str, Any], n: int) -> list[np.ndarray]:
        try:
            out = pipe(**kw)
        except WorkstationError:
            raise
        except Exception as e:
            if is_torch_oom(e):
                _free_accelerator_memory()
                raise OutOfMemory(len(kw["prompt"]), str(e)) from None
            raise
        return to_uint8(np.asarray(out.images)[:n])

    def _prepare(self, params: GenerationParams) -> Any:
        pipe = self.load(params)
        sched_name = self.resolve_scheduler(params)
        pipe.scheduler, canon = make_scheduler(sched_name, self._base_scheduler)
        self.last_run = {
            "pipeline_class": type(pipe).__name__,
            "scheduler": canon,
            "scheduler_class": type(pipe.scheduler).__name__,
            "device": self._load_key[0] if self._load_key else None,
            "dtype": self._load_key[1] if self._load_key else None,
            "attention": params.attention,
            "params": params.to_dict(),
        }
        if self.last_run["device"] == "cpu":
            import torch

            # on the CPU the number of threads changes how sums are split, hence the last bits
            self.last_run["cpu_threads"] = torch.get_num_threads()
        return pipe

    @staticmethod
    def _pad(items: list[Any], size: int, fixed: bool) -> list[Any]:
        if fixed and len(items) < size:
            return items + [items[-1]] * (size - len(items))
        return items

    def generate(self, request: GenerationRequest, params: GenerationParams,
                 progress: ProgressFn | None = None) -> list[np.ndarray]:
        prompts, seeds, groundings = request.prompts, request.seeds, request.groundings
        self._check_groundings(groundings)
        if not prompts:
            return []
        pipe = self._prepare(params)
        # the pipeline takes one grounding per call: batch the samples that share one
        groups: dict[Grounding | None, list[int]] = {}
        for i in range(len(prompts)):
            groups.setdefault(groundings[i] if groundings is not None else None, []).append(i)
        out: list[np.ndarray | None] = [None] * len(prompts)
        bs = params.batch_size
        for g, idx in groups.items():
            for start in range(0, len(idx), bs):
                part = idx[start : start + bs]
                p = self._pad([prompts[i] for i in part], bs, params.fixed_batch)
                s = self._pad([seeds[i] for i in part], bs, params.fixed_batch)
                kw = self._call_kwargs(pipe, p, s, params, progress)
                if g is not None:
                    kw.update(self._grounding_kwargs(g, params))
                for i, im in zip(part, self._run(pipe, kw, len(part))):
                    out[i] = im
        return [im for im in out if im is not None]

    def _check_groundings(self, groundings: list[Grounding] | None) -> None:
        if groundings is not None:
            raise WorkstationError(f"generator {self.name!r} does not take box groundings; use 'gligen'")

    def _grounding_kwargs(self, g: Grounding, params: GenerationParams) -> dict[str, Any]:
        """The pipeline's arguments for one grounding (phrases and boxes)."""
        raise NotImplementedError


class GligenGenerator(DiffusersGenerator):
    """Grounded generation: StableDiffusionGLIGENPipeline with one box per object phrase."""

    name = "gligen"

    def __init__(self, model: str | os.PathLike[str], **kwargs: Any) -> None:
        kwargs.setdefault("pipeline_class", "StableDiffusionGLIGENPipeline")
        super().__init__(model, **kwargs)
        cls = self.model_index.get("_class_name", "")
        if "GLIGEN" not in str(cls):
            raise WorkstationError(
                f"{self.location.path} holds a {cls}, not a GLIGEN pipeline (e.g. an SD 1.4 GLIGEN "
                f"text-box model saved with save_pretrained)"
            )

    def _check_groundings(self, groundings: list[Grounding] | None) -> None:
        if groundings is None:
            raise WorkstationError("GLIGEN generation needs a grounding (phrases and boxes) for every prompt")

    def _grounding_kwargs(self, g: Grounding, params: GenerationParams) -> dict[str, Any]:
        return {"gligen_phrases": list(g.phrases), "gligen_boxes": [list(b) for b in g.boxes],
                "gligen_scheduled_sampling_beta": params.gligen_beta}

