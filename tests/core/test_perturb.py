"""Image perturbations used by the stability term."""

from __future__ import annotations

import numpy as np
import pytest

from workstation.perturb import DEFAULT_PERTURBATIONS, Perturbation
from workstation.perturb import apply, apply_all, blur_kernel_size
from workstation.types import WorkstationError


def _image(seed: int = 0, h: int = 48, w: int = 64) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _smooth(h: int = 64, w: int = 80) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (w + h) + 60], axis=2)
    return np.rint(img).astype(np.uint8)


def test_every_default_perturbation_keeps_shape_and_type_and_is_deterministic() -> None:
    img = _image()
    before = img.copy()
    outs = apply_all(img, DEFAULT_PERTURBATIONS)
    assert len(outs) == len(DEFAULT_PERTURBATIONS)
    for p, out in zip(DEFAULT_PERTURBATIONS, outs):
        assert out.shape == img.shape and out.dtype == np.uint8, p.name
        assert np.array_equal(out, apply(img, p)), p.name
        assert not np.array_equal(out, img), p.name
    assert np.array_equal(img, before)  # input untouched


def test_brightness_multiplies_rounds_and_clips() -> None:
    img = _image(1)
    for f in (1.1, 0.9, 1.5):
        out = apply(img, Perturbation("brightness", f))
        assert np.array_equal(out, np.clip(np.rint(img.astype(np.float64) * f), 0, 255).astype(np.uint8))
    px = np.array([[[250, 100, 0]]], np.uint8)
    assert apply(px, Perturbation("brightness", 1.1)).tolist() == [[[255, 110, 0]]]
    assert apply(px, Perturbation("brightness", 0.9)).tolist() == [[[225, 90, 0]]]


def test_blur_smooths_noise_and_keeps_flat_images() -> None:
    assert blur_kernel_size(1.0) == 7
    flat = np.full((20, 30, 3), 77, np.uint8)
    assert np.array_equal(apply(flat, Perturbation("gaussian_blur", 1.0)), flat)
    noisy = _image(2, 64, 64)
    out = apply(noisy, Perturbation("gaussian_blur", 1.0))
    assert out.astype(float).std() < 0.6 * noisy.astype(float).std()
    assert np.array_equal(apply(noisy, Perturbation("gaussian_blur", 0.0)), noisy)


def test_resize_and_back_keeps_size_and_smooth_content() -> None:
    img = _smooth()
    out = apply(img, Perturbation("resize", 0.9))
    assert out.shape == img.shape
    assert np.abs(out.astype(int) - img.astype(int)).mean() < 2.0
    assert np.array_equal(apply(img, Perturbation("resize", 1.0)), img)
    big = apply(img, Perturbation("resize", 1.5))
    assert big.shape == img.shape


def test_bad_input_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="H×W×3 uint8"):
        apply(np.zeros((4, 4), np.uint8), DEFAULT_PERTURBATIONS[0])
    with pytest.raises(ValueError, match="H×W×3 uint8"):
        apply(np.zeros((4, 4, 3), np.float32), DEFAULT_PERTURBATIONS[0])
    img = _image()
    with pytest.raises(WorkstationError, match="unknown perturbation kind"):
        apply(img, Perturbation("jpeg", 80))
    with pytest.raises(WorkstationError, match="brightness factor"):
        apply(img, Perturbation("brightness", -1))
    with pytest.raises(WorkstationError, match="resize scale"):
        apply(img, Perturbation("resize", 0))
    with pytest.raises(WorkstationError, match="sigma"):
        apply(img, Perturbation("gaussian_blur", -2))
