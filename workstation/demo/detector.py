"""Classical OpenCV detectors for the demo scenes: real boxes and scores from the pixels.

Neither detector sees the ground truth. Both segment saturated colour regions, measure each
region's shape and colour, and score every object class by how well the region matches that
class's (shape, colour) — so a look-alike (a hexagon for a circle, a hue between two classes)
yields lower-scoring, confusable detections, occluded objects lose score, and perturbations
(brightness, blur, resize) move boxes and scores a little.

- :class:`SceneDetector` (primary): HSV hue bins, contour shape descriptors (solidity,
  rectangularity, aspect ratio, circularity, holes) compared with prototypes measured on
  clean renders; box = the region's bounding rectangle at full resolution.
- :class:`TemplateSceneDetector` (secondary): a different method — Lab chroma angle on a
  half-resolution image, radial shape signatures (harmonics of the centroid-distance profile)
  matched against class templates, plus a hole test; boxes come from the half-resolution region.

Both follow :class:`workstation.detection.base.Detector` (``detect_batch``, ``provenance``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..detection.base import DEFAULT_SCORE_FLOOR, Detection, check_images, make_detections
from ..types import WorkstationError
from .scenes import COLOURS, SHAPES, STYLES, shape_mask

_PROTOTYPES: dict[str, np.ndarray] | None = None
_TEMPLATES: dict[str, tuple[np.ndarray, float]] | None = None  # shape -> (signature, hole ratio)

# feature order and the spread allowed around each prototype value
FEATURES = ("solidity", "extent", "aspect", "circularity", "holes")
FEATURE_SIGMA = np.array([0.07, 0.085, 0.1, 0.1, 0.06])


def _hue_diff(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    d = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) % 360.0
    return np.minimum(d, 360.0 - d)


def _circular_mean_deg(values_deg: np.ndarray) -> float:
    r = np.deg2rad(values_deg.astype(np.float64))
    return float(np.rad2deg(math.atan2(np.sin(r).mean(), np.cos(r).mean())) % 360.0)


_HUE_RAD = np.arange(256) * (2 * math.pi / 256.0)
_HUE_COS, _HUE_SIN = np.cos(_HUE_RAD), np.sin(_HUE_RAD)


def _circular_mean_hue(hue: np.ndarray, mask: np.ndarray) -> float:
    """Circular mean (degrees) of OpenCV full-range hues (0..255) where mask != 0."""
    import cv2

    hist = cv2.calcHist([hue], [0], mask, [256], [0, 256]).ravel().astype(np.float64)
    return float(math.degrees(math.atan2(hist @ _HUE_SIN, hist @ _HUE_COS)) % 360.0)


def contour_features(contour: np.ndarray, hole_area: float) -> np.ndarray:
    """Scale- and rotation-invariant shape descriptors of an outer contour."""
    import cv2

    area = float(cv2.contourArea(contour))
    if area <= 0:
        return np.zeros(len(FEATURES))
    peri = float(cv2.arcLength(contour, True))
    hull_area = float(cv2.contourArea(cv2.convexHull(contour)))
    (_, _), (w, h), _ = cv2.minAreaRect(contour)
    solidity = area / hull_area if hull_area > 0 else 0.0
    extent = area / (w * h) if w * h > 0 else 0.0
    aspect = min(w, h) / max(w, h) if max(w, h) > 0 else 0.0
    circularity = 4 * math.pi * area / (peri * peri) if peri > 0 else 0.0
    return np.array([solidity, extent, aspect, min(circularity, 1.2), hole_area / area])


def _regions(mask: np.ndarray, min_area: float) -> list[tuple[np.ndarray, float]]:
    """Outer contours of a binary mask with the area of their holes."""
    import cv2

    contours, hier = cv2.findContours(mask, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if hier is None:
        return []
    hier = hier[0]
    out = []
    for i, c in enumerate(contours):
        if hier[i][3] != -1:  # a hole
            continue
        area = cv2.contourArea(c)
        if area < min_area:
            continue
        holes = 0.0
        j = hier[i][2]
        while j != -1:
            holes += cv2.contourArea(contours[j])
            j = hier[j][0]
        out.append((c, holes))
    return out


def _clean_render(shape: str, radius: float, angle: float, hue: float = 215.0) -> np.ndarray:
    """A shape on a plain grey background (for prototypes and templates)."""
    import colorsys

    mask, _, _ = shape_mask(shape, radius, angle, pad=8)
    a = (mask.astype(np.float32) / 255.0)[:, :, None]
    col = np.array(colorsys.hsv_to_rgb(hue / 360.0, 0.85, 0.85), np.float32) * 255
    img = np.full(mask.shape + (3,), 128.0, np.float32) * (1 - a) + col * a
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def _check_options(classes: Mapping[str, tuple[str, str]], score_floor: float,
                   min_area_fraction: float) -> None:

    for label, style in classes.items():
        if not (isinstance(style, tuple) and len(style) == 2 and style[0] in SHAPES and style[1] in COLOURS):
            raise WorkstationError(
                f"scene detector class {label!r}: expected (shape, colour) with shape in {', '.join(SHAPES)} "
                f"and colour in {', '.join(COLOURS)}, got {style!r}")
    if not 0.0 <= score_floor <= 1.0:
        raise WorkstationError(f"scene detector score_floor must be in [0, 1], got {score_floor}")
    if not 0.0 <= min_area_fraction < 1.0:
        raise WorkstationError(f"scene detector min_area_fraction must be in [0, 1), got {min_area_fraction}")


class _SceneDetectorBase:
    """What both demo detectors share: the class table, the common options, the Detector
    protocol's `detect` / `detect_batch`; subclasses implement `_detect_one`."""

    name = ""
    batch_size = 16

    def __init__(self, classes: Mapping[str, tuple[str, str]] | None, score_floor: float,
                 threshold: float, min_area_fraction: float, max_labels_per_region: int) -> None:
        self.classes = dict(STYLES if classes is None else classes)
        _check_options(self.classes, float(score_floor), float(min_area_fraction))
        self.score_floor = float(score_floor)
        self.threshold = float(threshold)
        self.min_area_fraction = float(min_area_fraction)
        self.max_labels = int(max_labels_per_region)
        self._labels = list(self.classes)
        self._shape_idx = np.array([SHAPES.index(self.classes[k][0]) for k in self._labels])

    def detect(self, img: np.ndarray, queries: Sequence[str] | None = None) -> list[Detection]:
        """Detections of one RGB uint8 image, best first, down to the score floor."""
        return self.detect_batch([img], None if queries is None else [list(queries)])[0]

    def detect_batch(
        self, images: list[np.ndarray], queries: list[list[str]] | None = None
    ) -> list[list[Detection]]:
        check_images(images, queries)
        out = []
        for i, im in enumerate(images):
            dets = self._detect_one(im)
            if queries is not None:
                want = {q.strip().lower() for q in queries[i]}
                dets = [d for d in dets if d.label in want]
            out.append(dets)
        return out

    def _provenance(self, method: str, **options: Any) -> dict[str, Any]:
        return {"detector": self.name, "method": method, "threshold": self.threshold,
                "score_floor": self.score_floor, "min_area_fraction": self.min_area_fraction,
                **options, "classes": len(self.classes)}

    def _detect_one(self, img: np.ndarray) -> list[Detection]:
        raise NotImplementedError


class SceneDetector(_SceneDetectorBase):
    """Primary demo detector: HSV segmentation + contour shape descriptors."""

    name = "scene"

    def __init__(
        self,
        classes: Mapping[str, tuple[str, str]] | None = None,
        score_floor: float = DEFAULT_SCORE_FLOOR,
        threshold: float = 0.0,
        min_area_fraction: float = 0.0012,
        saturation_min: int = 80,
        value_min: int = 45,
        hue_sigma: float = 11.0,
        max_labels_per_region: int = 3,
    ) -> None:
        super().__init__(classes, score_floor, threshold, min_area_fraction, max_labels_per_region)
        self.saturation_min = int(saturation_min)
        self.value_min = int(value_min)
        self.hue_sigma = float(hue_sigma)
        self._colour_hue = np.array([COLOURS[self.classes[k][1]] for k in self._labels])
        centres = np.array(list(COLOURS.values()))
        # hue (OpenCV full range 0..255) -> nearest colour bin 1..5
        hue_deg = np.arange(256) * 360.0 / 256.0
        nearest = np.argmin(_hue_diff(hue_deg[:, None], centres[None, :]), axis=1)
        self._bin_lut = (nearest + 1).astype(np.uint8)
        self._n_bins = len(centres)
        self._proto = np.stack([prototypes()[s] for s in SHAPES])

    def provenance(self) -> dict[str, Any]:
        return self._provenance("hsv-segmentation+shape-descriptors", saturation_min=self.saturation_min,
                                value_min=self.value_min, hue_sigma=self.hue_sigma)

    # ---- internals -------------------------------------------------------------------------
    def _detect_one(self, img: np.ndarray) -> list[Detection]:
        import cv2

        h, w = img.shape[:2]
        hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL)
        hue = hsv[:, :, 0]
        colourful = cv2.inRange(hsv, (0, self.saturation_min, self.value_min), (255, 255, 255))
        binned = cv2.LUT(hue, self._bin_lut)
        bins = cv2.bitwise_and(binned, binned, mask=colourful)
        counts = cv2.calcHist([bins], [0], None, [self._n_bins + 1], [0, self._n_bins + 1]).ravel()
        min_area = self.min_area_fraction * w * h
        kernel = np.ones((3, 3), np.uint8)
        labels: list[str] = []
        scores: list[float] = []
        boxes: list[tuple[float, float, float, float]] = []
        for c in range(1, self._n_bins + 1):
            if counts[c] < min_area:
                continue
            # OpenCV takes a scalar src2; its stubs list only arrays
            full = cv2.compare(bins, c, cv2.CMP_EQ)  # type: ignore[call-overload]
            # work inside the colour's bounding rectangle (padded: same result as the full image)
            rx, ry, rw, rh = cv2.boundingRect(full)
            x0, y0 = max(rx - 3, 0), max(ry - 3, 0)
            x1, y1 = min(rx + rw + 3, w), min(ry + rh + 3, h)
            raw = full[y0:y1, x0:x1]
            # close first: re-joins a colour seen through a stippled (translucent) object
            mask = cv2.morphologyEx(raw, cv2.MORPH_CLOSE, kernel)
            mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)
            hue_roi = hue[y0:y1, x0:x1]
            for contour, holes in _regions(mask, min_area):
                x, y, bw, bh = cv2.boundingRect(contour)
                # colour from this bin's own pixels (not those re-joined by closing)
                sub = cv2.bitwise_and(mask[y:y + bh, x:x + bw], raw[y:y + bh, x:x + bw])
                mean_hue = _circular_mean_hue(hue_roi[y:y + bh, x:x + bw], sub)
                x, y = x + x0, y + y0
                feats = contour_features(contour, holes)
                z = (feats[None, :] - self._proto) / FEATURE_SIGMA[None, :]
                shape_score = np.exp(-0.5 * (z * z).sum(axis=1))  # per shape
                colour_score = np.exp(-0.5 * (_hue_diff(mean_hue, self._colour_hue) / self.hue_sigma) ** 2)
                area = float(cv2.contourArea(contour))
                size_q = min(1.0, area / (3.0 * min_area)) ** 0.5
                cls = 0.98 * size_q * shape_score[self._shape_idx] ** 0.6 * colour_score ** 0.4
                order = np.argsort(-cls)[: self.max_labels]
                for k in order:
                    if cls[k] < self.score_floor:
                        break
                    labels.append(self._labels[k])
                    scores.append(float(cls[k]))
                    boxes.append((float(x), float(y), float(x + bw), float(y + bh)))
        return make_detections(labels, scores, np.asarray(boxes, np.float64).reshape(-1, 4), w, h,
                               self.score_floor)


class TemplateSceneDetector(_SceneDetectorBase):
    """Secondary demo detector: Lab chroma angle on a half-size image + radial shape signatures.

    Each colour region's outline is turned into a centroid-distance profile over 64 angle bins;
    the magnitudes of its first harmonics (rotation-invariant) are compared with those of each
    class shape's template, and a hole test separates rings from discs.
    """

    name = "scene_template"

    def __init__(
        self,
        classes: Mapping[str, tuple[str, str]] | None = None,
        score_floor: float = DEFAULT_SCORE_FLOOR,
        threshold: float = 0.0,
        min_area_fraction: float = 0.0015,
        chroma_min: float = 24.0,
        angle_sigma: float = 14.0,
        signature_sigma: float = 0.03,
        hole_sigma: float = 0.08,
        max_labels_per_region: int = 3,
        downscale: int = 2,
    ) -> None:
        super().__init__(classes, score_floor, threshold, min_area_fraction, max_labels_per_region)
        self.chroma_min = float(chroma_min)
        self.angle_sigma = float(angle_sigma)
        self.signature_sigma = float(signature_sigma)
        self.hole_sigma = float(hole_sigma)
        self.downscale = max(1, int(downscale))
        angles = lab_angles()
        self._colour_angle = np.array([angles[self.classes[k][1]] for k in self._labels])
        centres = np.array(list(angles.values()))
        nearest = np.argmin(_hue_diff(np.arange(360)[:, None] + 0.5, centres[None, :]), axis=1)
        self._bin_lut = (nearest + 1).astype(np.uint8)
        self._n_bins = len(centres)
        tm = templates()
        self._sig = np.stack([tm[s][0] for s in SHAPES])
        self._holes = np.array([tm[s][1] for s in SHAPES])

    def provenance(self) -> dict[str, Any]:
        return self._provenance("lab-chroma+radial-shape-signature", chroma_min=self.chroma_min,
                                angle_sigma=self.angle_sigma, signature_sigma=self.signature_sigma,
                                downscale=self.downscale)

    def _detect_one(self, img: np.ndarray) -> list[Detection]:
        import cv2

        h, w = img.shape[:2]
        f = self.downscale
        small = img
        if f > 1:
            small = cv2.resize(img, (max(1, w // f), max(1, h // f)), interpolation=cv2.INTER_AREA)
        sx, sy = w / small.shape[1], h / small.shape[0]
        lab = cv2.cvtColor(small, cv2.COLOR_RGB2Lab)
        a = lab[:, :, 1].astype(np.float32) - 128.0
        b = lab[:, :, 2].astype(np.float32) - 128.0
        chroma, angle = cv2.cartToPolar(a, b, angleInDegrees=True)
        bins = self._bin_lut[np.minimum(angle.astype(np.int32), 359)]
        bins[chroma < self.chroma_min] = 0
        counts = np.bincount(bins.ravel(), minlength=self._n_bins + 1)
        min_area = self.min_area_fraction * small.shape[0] * small.shape[1]
        kernel = np.ones((3, 3), np.uint8)
        labels: list[str] = []
        scores: list[float] = []
        boxes: list[tuple[float, float, float, float]] = []
        for c in range(1, self._n_bins + 1):
            if counts[c] < min_area:
                continue
            mask = cv2.morphologyEx((bins == c).astype(np.uint8), cv2.MORPH_CLOSE, kernel)
            contours, hier = cv2.findContours(mask, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_NONE)
            if hier is None:
                continue
            hier = hier[0]
            for i, contour in enumerate(contours):
                if hier[i][3] != -1:
                    continue
                area = float(cv2.contourArea(contour))
                if area < min_area:
                    continue
                holes = 0.0
                j = hier[i][2]
                while j != -1:
                    holes += cv2.contourArea(contours[j])
                    j = hier[j][0]
                x, y, bw, bh = cv2.boundingRect(contour)
                sub = mask[y:y + bh, x:x + bw].astype(bool) & (bins[y:y + bh, x:x + bw] == c)
                if not sub.any():
                    continue
                mean_angle = _circular_mean_deg(angle[y:y + bh, x:x + bw][sub])
                sig = radial_signature(contour)
                dist = np.linalg.norm(self._sig - sig[None, :], axis=1)
                hole_z = (holes / area - self._holes) / self.hole_sigma
                shape_score = np.exp(-0.5 * ((dist / self.signature_sigma) ** 2 + hole_z ** 2))
                colour_z = _hue_diff(mean_angle, self._colour_angle) / self.angle_sigma
                colour_score = np.exp(-0.5 * colour_z ** 2)
                size_q = min(1.0, area / (3.0 * min_area)) ** 0.5
                cls = 0.97 * size_q * shape_score[self._shape_idx] ** 0.6 * colour_score ** 0.4
                for k in np.argsort(-cls)[: self.max_labels]:
                    if cls[k] < self.score_floor:
                        break
                    labels.append(self._labels[k])
                    scores.append(float(cls[k]))
                    boxes.append((x * sx, y * sy, (x + bw) * sx, (y + bh) * sy))
        return make_detections(labels, scores, np.asarray(boxes, np.float64).reshape(-1, 4), w, h,
                               self.score_floor)


SIGNATURE_BINS = 64
SIGNATURE_HARMONICS = 10


def radial_signature(contour: np.ndarray) -> np.ndarray:
    """Rotation- and scale-invariant outline descriptor: harmonic magnitudes of the
    centroid-distance profile (outermost point per angle bin, normalised to mean 1)."""
    import cv2

    pts = contour.reshape(-1, 2).astype(np.float64)
    m = cv2.moments(contour)
    if m["m00"] <= 0:
        return np.zeros(SIGNATURE_HARMONICS)
    dx = pts[:, 0] - m["m10"] / m["m00"]
    dy = pts[:, 1] - m["m01"] / m["m00"]
    nb = SIGNATURE_BINS
    b = ((np.arctan2(dy, dx) + math.pi) / (2 * math.pi) * nb).astype(np.int64) % nb
    prof = np.zeros(nb)
    np.maximum.at(prof, b, np.hypot(dx, dy))
    filled = np.nonzero(prof > 0)[0]
    if len(filled) < 3:
        return np.zeros(SIGNATURE_HARMONICS)
    if len(filled) < nb:
        prof = np.interp(np.arange(nb), filled, prof[filled], period=nb)
    prof /= prof.mean()
    return np.abs(np.fft.rfft(prof))[1:SIGNATURE_HARMONICS + 1] / nb


# ---- measured references ----------------------------------------------------------------------
def prototypes() -> dict[str, np.ndarray]:
    """Mean shape descriptors of each class shape, measured on clean renders (cached)."""
    global _PROTOTYPES
    if _PROTOTYPES is None:
        import cv2

        protos = {}
        for s in SHAPES:
            rows = []
            for radius in (22.0, 34.0, 50.0):
                for ang in (-10.0, 0.0, 7.0):
                    img = _clean_render(s, radius, ang)
                    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL)
                    mask = (hsv[:, :, 1] >= 80).astype(np.uint8)
                    regs = _regions(mask, 10.0)
                    c, holes = max(regs, key=lambda r: cv2.contourArea(r[0]))
                    rows.append(contour_features(c, holes))
            protos[s] = np.mean(rows, axis=0)
        _PROTOTYPES = protos
    return _PROTOTYPES


def templates() -> dict[str, tuple[np.ndarray, float]]:
    """Radial signature and hole ratio of each class shape, from clean masks (cached)."""
    global _TEMPLATES
    if _TEMPLATES is None:
        import cv2

        out = {}
        for s in SHAPES:
            sigs, hole_ratios = [], []
            for radius in (12.0, 20.0, 32.0):
                for ang in (-9.0, 0.0, 11.0):
                    mask, _, _ = shape_mask(s, radius, ang, pad=4)
                    contours, hier = cv2.findContours((mask >= 128).astype(np.uint8), cv2.RETR_CCOMP,
                                                      cv2.CHAIN_APPROX_NONE)
                    outer = [i for i in range(len(contours)) if hier[0][i][3] == -1]
                    i = max(outer, key=lambda k: cv2.contourArea(contours[k]))
                    area = cv2.contourArea(contours[i])
                    holes = sum(cv2.contourArea(contours[k]) for k in range(len(contours))
                                if hier[0][k][3] == i)
                    sigs.append(radial_signature(contours[i]))
                    hole_ratios.append(holes / area)
            out[s] = (np.mean(sigs, axis=0), float(np.mean(hole_ratios)))
        _TEMPLATES = out
    return _TEMPLATES


def lab_angles() -> dict[str, float]:
    """Chroma angle (degrees, Lab a*/b* plane) of each class colour."""
    import colorsys

    import cv2

    out = {}
    for name, hue in COLOURS.items():
        rgb = np.array(colorsys.hsv_to_rgb(hue / 360.0, 0.85, 0.85), np.float32) * 255
        px = np.clip(np.rint(rgb), 0, 255).astype(np.uint8).reshape(1, 1, 3)
        lab = cv2.cvtColor(px, cv2.COLOR_RGB2Lab).astype(np.float64)[0, 0]
        out[name] = float(math.degrees(math.atan2(lab[2] - 128.0, lab[1] - 128.0)) % 360.0)
    return out


def look_scores(img: np.ndarray, looks: Sequence[tuple[str, float]], *, saturation_min: int = 80,
                value_min: int = 45, hue_window: float = 30.0, hue_sigma: float = 11.0,
                min_area_fraction: float = 0.0012) -> np.ndarray:
    """How well an RGB uint8 image shows each look — a (shape of `SHAPES`, hue in degrees) pair,
    the way the demo draws an object — from its pixels: the best region of saturated pixels within
    ``hue_window`` degrees of the hue, scored as `SceneDetector` scores a class (its shape
    descriptors against the shape's prototype, its mean hue against the hue, its size); 0 where no
    such region is seen. One score in [0, 1] per look."""
    import cv2

    h, w = img.shape[:2]
    hsv = cv2.cvtColor(np.ascontiguousarray(img[:, :, :3]), cv2.COLOR_RGB2HSV_FULL)
    hue = hsv[:, :, 0]
    hue_deg = np.arange(256) * (360.0 / 256.0)  # OpenCV's full-range hue code -> degrees
    colourful = cv2.inRange(hsv, (0, saturation_min, value_min), (255, 255, 255)) > 0
    min_area = min_area_fraction * w * h
    kernel = np.ones((3, 3), np.uint8)
    protos = prototypes()
    out = np.zeros(len(looks))
    for i, (shape, want) in enumerate(looks):
        if shape not in protos:
            raise WorkstationError(f"look_scores: unknown shape {shape!r} (shapes: {', '.join(SHAPES)})")
        near = (_hue_diff(hue_deg, float(want)) <= hue_window)[hue]
        raw = (colourful & near).astype(np.uint8) * 255
        mask = cv2.morphologyEx(cv2.morphologyEx(raw, cv2.MORPH_CLOSE, kernel), cv2.MORPH_OPEN, kernel)
        best = 0.0
        for contour, holes in _regions(mask, min_area):
            x, y, bw, bh = cv2.boundingRect(contour)
            sub = cv2.bitwise_and(mask[y:y + bh, x:x + bw], raw[y:y + bh, x:x + bw])
            mean_hue = _circular_mean_hue(np.ascontiguousarray(hue[y:y + bh, x:x + bw]), sub)
            z = (contour_features(contour, holes) - protos[shape]) / FEATURE_SIGMA
            shape_score = float(np.exp(-0.5 * float(z @ z)))
            colour_score = float(np.exp(-0.5 * (float(_hue_diff(mean_hue, want)) / hue_sigma) ** 2))
            size_q = min(1.0, float(cv2.contourArea(contour)) / (3.0 * min_area)) ** 0.5
            best = max(best, 0.98 * size_q * shape_score ** 0.6 * colour_score ** 0.4)
        out[i] = best
    return out
