"""Image perturbations for the checker's stability term (METHODS.md §1 step 7).

`apply(img, p)` returns a perturbed copy of an RGB uint8 image of the same size:
- ``brightness`` ×factor, clipped to [0, 255] and rounded;
- ``gaussian_blur`` with σ = value (kernel 2·⌈3σ⌉+1, reflected border);
- ``resize`` ×scale and back to the original size (area down-sampling, bilinear up-sampling).
All are deterministic: the same image and perturbation give the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from .types import WorkstationError


@dataclass(frozen=True)
class Perturbation:
    """One perturbed copy of an image used for the stability term."""

    kind: str  # "brightness" | "gaussian_blur" | "resize"
    value: float  # factor, sigma or scale

    @property
    def name(self) -> str:
        """Stable variant name stored with detections, e.g. 'brightness_1.1'."""
        return f"{self.kind}_{self.value:g}"

    @staticmethod
    def from_name(name: str) -> "Perturbation":
        if not isinstance(name, str):
            raise ValueError(f"a perturbation is a name such as brightness_1.1, got {name!r}")
        kind, _, value = name.rpartition("_")
        if kind not in PERTURBATION_KINDS:
            raise ValueError(f"unknown perturbation {name!r}")
        try:
            v = float(value)
        except ValueError:
            raise ValueError(f"unknown perturbation {name!r}") from None
        p = Perturbation(kind, v)
        p.validate()
        return p

    def validate(self) -> None:
        """Values within `PERTURBATION_RANGES` (a resize of 1e6 would need terabytes)."""
        if self.kind not in PERTURBATION_KINDS:
            raise ValueError(f"unknown perturbation kind {self.kind!r}")
        lo, hi = PERTURBATION_RANGES[self.kind]
        v = self.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo < v <= hi:
            raise ValueError(f"perturbation {self.kind} needs a value in ({lo:g}, {hi:g}], got {v!r}")


PERTURBATION_KINDS = ("brightness", "gaussian_blur", "resize")
# allowed (low, high] value of each kind: brightness factor, blur sigma (pixels), resize scale
PERTURBATION_RANGES: dict[str, tuple[float, float]] = {
    "brightness": (0.0, 4.0), "gaussian_blur": (0.0, 20.0), "resize": (0.0, 2.0)}

DEFAULT_PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("brightness", 1.1),
    Perturbation("brightness", 0.9),
    Perturbation("gaussian_blur", 1.0),
    Perturbation("resize", 0.9),
)


def check_image(img: np.ndarray) -> None:
    if not isinstance(img, np.ndarray) or img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        got = f"{getattr(img, 'dtype', type(img).__name__)} array of shape {getattr(img, 'shape', '?')}"
        raise ValueError(f"expected an H×W×3 uint8 RGB image, got a {got}")
    if img.shape[0] < 1 or img.shape[1] < 1:
        raise ValueError("image is empty")


def blur_kernel_size(sigma: float) -> int:
    """Odd Gaussian kernel size covering ±3σ."""
    return 2 * int(math.ceil(3.0 * sigma)) + 1


def apply(img: np.ndarray, p: Perturbation) -> np.ndarray:
    """A perturbed copy of `img` (H×W×3 uint8 RGB) with the same shape and dtype."""
    import cv2

    check_image(img)
    v = float(p.value)
    if p.kind not in PERTURBATION_KINDS:
        raise WorkstationError(
            f"unknown perturbation kind {p.kind!r} (expected one of {', '.join(PERTURBATION_KINDS)})")
    if not math.isfinite(v):
        raise WorkstationError(f"perturbation {p.name}: value must be finite")
    img = np.ascontiguousarray(img)
    if p.kind == "brightness":
        if v < 0:
            raise WorkstationError(f"perturbation {p.name}: brightness factor must be >= 0")
        # clip(round(img · factor), 0, 255) in float64, applied as a 256-entry lookup table
        lut = np.clip(np.rint(np.arange(256, dtype=np.float64) * v), 0, 255).astype(np.uint8)
        return cv2.LUT(img, lut)
    if p.kind == "gaussian_blur":
        if v < 0:
            raise WorkstationError(f"perturbation {p.name}: blur sigma must be >= 0")
        if v == 0:
            return img.copy()
        k = blur_kernel_size(v)
        return cv2.GaussianBlur(img, (k, k), sigmaX=v, sigmaY=v, borderType=cv2.BORDER_REFLECT_101)
    # resize
    if v <= 0:
        raise WorkstationError(f"perturbation {p.name}: resize scale must be > 0")
    h, w = img.shape[:2]
    nw, nh = max(1, int(round(w * v))), max(1, int(round(h * v)))
    if (nw, nh) == (w, h):
        return img.copy()
    down = cv2.INTER_AREA if v < 1 else cv2.INTER_LINEAR
    small = cv2.resize(img, (nw, nh), interpolation=down)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def apply_all(img: np.ndarray, perturbations: Sequence[Perturbation]) -> list[np.ndarray]:
    """The perturbed copies of `img`, in the order of `perturbations`."""
    return [apply(img, p) for p in perturbations]
