"""Runtime environment: provenance (package versions, GPU, driver, CUDA), model location and
fingerprints, device / dtype choice.

Nothing here imports torch at module import time; ``torch_info`` and ``pick_device`` import it
inside, and only job code calls them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .types import WorkstationError
from .util.jsonsafe import loads_strict

PACKAGES: tuple[str, ...] = (
    "numpy", "torch", "diffusers", "transformers", "safetensors", "accelerate", "tokenizers",
    "huggingface_hub", "opencv-python-headless", "opencv-python", "onnxruntime", "onnxruntime-gpu",
    "torchvision", "xformers", "duckdb", "pyarrow", "PySide6", "PySide6-Essentials", "pillow",
)  # fmt: skip


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that matter for reproducibility (absent ones left out)."""
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def nvidia_smi() -> list[dict[str, str]]:
    """GPUs as reported by ``nvidia-smi`` (name, driver, memory); empty without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        r = subprocess.run(
            [exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in r.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            gpus.append({"name": parts[0], "driver": parts[1], "memory": parts[2]})
    return gpus


def torch_info() -> dict[str, Any]:
    """torch's view of the accelerator: CUDA / cuDNN versions and device names. Imports torch."""
    try:
        import torch
    except ImportError:
        return {"torch": None}
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
        "mps_available": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
        "threads": torch.get_num_threads(),
    }
    if info["cuda_available"]:
        info["cudnn"] = torch.backends.cudnn.version()
        info["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        cap = torch.cuda.get_device_capability(0)
        info["capability"] = f"{cap[0]}.{cap[1]}"
    return info


def environment_info(include_torch: bool = False) -> dict[str, Any]:
    """Everything recorded with a run: Python, platform, packages, GPU name and driver, CUDA."""
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
        "gpus": nvidia_smi(),
        "hf_hub_offline": os.environ.get("HF_HUB_OFFLINE", ""),
    }
    if include_torch:
        info["torch"] = torch_info()
    return info


def gpu_name() -> str:
    """First GPU's name, or 'none'."""
    gpus = nvidia_smi()
    if gpus:
        return gpus[0]["name"]
    return "none"


# ---------------------------------------------------------------------------------------------
# devices and dtypes


def pick_device(device: str = "auto") -> str:
    """'auto' → 'cuda' when available, else 'mps', else 'cpu'; an explicit unavailable one → error."""
    import torch

    d = device.lower()
    if d == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if d.startswith("cuda") and not torch.cuda.is_available():
        raise WorkstationError(f"device {device!r} asked for, but torch sees no CUDA GPU")
    if d not in ("cpu", "mps") and not d.startswith("cuda"):
        raise WorkstationError(f"unknown device {device!r}; use auto, cpu, cuda, cuda:N or mps")
    return d


DTYPES = ("auto", "fp32", "fp16", "bf16")


def pick_dtype(dtype: str, device: str, accelerated_default: str = "fp16") -> Any:
    """'auto' → fp16 (or ``accelerated_default``) on CUDA / MPS, fp32 on CPU. Returns a torch dtype."""
    import torch

    d = dtype.lower()
    if d not in DTYPES:
        raise WorkstationError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    if d == "auto":
        d = "fp32" if device == "cpu" else accelerated_default
    if d == "bf16" and device.startswith("cuda") and not torch.cuda.is_bf16_supported():
        raise WorkstationError("bf16 asked for, but this GPU does not support bfloat16; use fp16")
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[d]


def dtype_name(dtype: Any) -> str:
    return {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}.get(str(dtype), str(dtype))


# ---------------------------------------------------------------------------------------------
# model location and weights fingerprints


@dataclass(frozen=True)
class ModelLocation:
    """Where a model's files are: a local folder, or a snapshot of the local Hugging Face cache."""

    path: Path  # folder holding the files
    model_id: str  # what the user gave: a folder path or a hub id such as "org/name"
    revision: str | None  # hub commit of the cache snapshot; None for a plain folder
    source: str  # "folder" | "hf_cache"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def is_hub_id(model: str) -> bool:
    """'org/name' (one slash, no path prefix) is taken for a Hugging Face id when no such folder exists."""
    return bool(_HUB_ID.match(model))


def resolve_model(
    model: str | os.PathLike[str], revision: str | None = None, what: str = "model", cache_dir: str | None = None
) -> ModelLocation:
    """A local folder, or a hub id found in the local HF cache (never downloads).

    ``cache_dir`` overrides the Hugging Face cache folder (default: HF_HUB_CACHE / HF_HOME).

    Raises WorkstationError naming the folder or the cache searched when nothing is there.
    """
    text = os.fspath(model)
    p = Path(text).expanduser()
    if p.exists():
        if not p.is_dir():
            raise WorkstationError(f"{what} path {p} is a file; give the folder that holds the model")
        rp = p.resolve()
        if rp.parent.name == "snapshots" and rp.parent.parent.name.startswith("models--"):
            # a snapshot folder of the HF cache given by path: its name is the commit
            repo = rp.parent.parent.name[len("models--") :].replace("--", "/")
            return ModelLocation(rp, repo, rp.name, "hf_cache")
        return ModelLocation(rp, text, None, "folder")
    if isinstance(model, Path) or not is_hub_id(text):
        raise WorkstationError(
            f"{what} folder not found: {p} (give an existing folder, or a Hugging Face id such as "
            f"'org/name' that is in the local cache)"
        )
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError as e:  # pragma: no cover - huggingface_hub comes with transformers/diffusers
        raise WorkstationError(f"{what} {text!r} is not a folder and huggingface_hub is not installed") from e
    try:
        snap = snapshot_download(text, revision=revision, local_files_only=True, cache_dir=cache_dir)
    except Exception as e:  # LocalEntryNotFoundError, RevisionNotFoundError, ...
        rev = f" at revision {revision}" if revision else ""
        raise WorkstationError(
            f"{what} {text!r}{rev} is neither a folder nor in the local Hugging Face cache ({cache_dir or HF_HUB_CACHE}); "
            f"downloads are off — copy the model into a folder and give its path"
        ) from e
    sp = Path(snap)
    return ModelLocation(sp, text, sp.name, "hf_cache")


def check_model_path(model: str, what: str = "model") -> None:
    """Before any work starts: a model given by path must exist (file or folder); 'org/name'
    that is no folder must be in the local Hugging Face cache. One line naming the path."""
    text = str(model).strip()
    p = Path(text).expanduser()
    if not text:
        raise WorkstationError(f"{what}: no path given")
    if p.exists():
        return
    if is_hub_id(text):
        resolve_model(text, what=what)
        return
    raise WorkstationError(f"{what} not found: {p}")


def check_safetensors(path: Path) -> None:
    """Raise WorkstationError if a .safetensors file is truncated or its header is unreadable.

    Reads only the header: 8-byte length, JSON, and the data offsets, which must end exactly at
    the file's end.
    """
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError("file shorter than its 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > size - 8 or n > 100_000_000:
                raise ValueError(f"header length {n} exceeds the file size {size}")
            header = loads_strict(f.read(n))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (ValueError, UnicodeDecodeError) as e:
        raise WorkstationError(f"corrupt weights file {path}: unreadable safetensors header "
                               f"({' '.join(str(e).split())[:100]})") from None
    end = 0
    for key, meta in header.items():
        if key == "__metadata__":
            continue
        try:
            end = max(end, int(meta["data_offsets"][1]))
        except (KeyError, TypeError, IndexError, ValueError, OverflowError):
            raise WorkstationError(f"corrupt weights file {path}: bad entry {key[:40]!r} in the header") from None
    have = size - 8 - n
    if have != end:
        raise WorkstationError(
            f"corrupt weights file {path}: the header describes {end} bytes of tensor data but the file "
            f"holds {have} (truncated or incomplete download?)"
        )


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".msgpack", ".h5")


def weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))


def check_weights(folder: Path) -> None:
    """Validate every safetensors file under ``folder`` (cheap: headers only)."""
    for p in weight_files(folder):
        if p.suffix == ".safetensors":
            check_safetensors(p)
        elif p.stat().st_size == 0:
            raise WorkstationError(f"corrupt weights file {p}: it is empty")


def _sample_blocks(f: Any, size: int, start: int, n: int = 16, block: int = 1 << 16) -> bytes:
    """``n`` blocks spread evenly over bytes [start, size) of an open file."""
    out = []
    span = max(size - start - block, 0)
    for k in range(n):
        f.seek(start + (span * k) // max(n - 1, 1))
        out.append(f.read(block))
    return b"".join(out)


def weights_fingerprint(folder: Path) -> str:
    """sha256 over the folder's config / index JSON files and, per weights file, its name, size,
    safetensors header (tensor names, dtypes, shapes, offsets) and 16 sampled 64 KiB blocks of its
    data. Cheap for multi-GB models (about 1 MiB read per file) and different for any two
    trainings of the same architecture; ``full_weights_sha256`` hashes every byte."""
    h = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for p in files:
        rel = p.relative_to(folder).as_posix()
        if p.suffix == ".json" and p.stat().st_size < 50_000_000:
            h.update(f"json:{rel}\n".encode())
            h.update(p.read_bytes())
        elif p.name.endswith(WEIGHT_SUFFIXES):
            size = p.stat().st_size
            h.update(f"weights:{rel}:{size}\n".encode())
            with p.open("rb") as f:
                start = 0
                if p.suffix == ".safetensors":
                    head = f.read(8)
                    if len(head) == 8:
                        (n,) = struct.unpack("<Q", head)
                        h.update(f.read(min(n, size)))
                        start = 8 + n
                h.update(_sample_blocks(f, size, start))
    return h.hexdigest()


def full_weights_sha256(folder: Path) -> str:
    """sha256 over every weights file's bytes (slow for large models; for archival provenance)."""
    h = hashlib.sha256()
    for p in weight_files(folder):
        h.update(f"{p.relative_to(folder).as_posix()}\n".encode())
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()
