"""Near-to-far degradation, classical chain (Exposure paper; docs/perturbations.md section 5).

A face seen from further away: optical blur (an anisotropic Gaussian with random axes and
orientation, growing with distance), sampling on fewer pixels (the face ends 64/32/24/16/12
px wide), sensor noise at that low resolution (Poisson shot noise and Gaussian read noise),
JPEG, and finally the upsampling an encoder does to its input size (112 px by default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from fairforge.perturb.base import (
    OPERATIONS,
    InvalidLevel,
    Operation,
    OperationUnavailable,
    check_image,
)
from fairforge.perturb.ops import WEIGHTS_DIR, jpeg_roundtrip, to_uint8


@dataclass(frozen=True)
class FarStep:
    face_px: int  # face width after downsampling
    blur_sigma: float  # mean optical blur, in low-resolution pixels
    noise_sigma: float  # Gaussian read noise, grey levels at low resolution
    photons: float  # Poisson shot noise: expected photon count at white (mid-grey
    # std = 255 * sqrt(0.5 / photons): 2.9 .. 9 grey levels)
    jpeg_quality: int


FAR_SCHEDULE: dict[int, FarStep] = {
    1: FarStep(64, 0.3, 2.0, 4000.0, 90),
    2: FarStep(32, 0.4, 6.0, 2000.0, 75),
    3: FarStep(24, 0.5, 10.0, 1200.0, 60),
    4: FarStep(16, 0.6, 15.0, 700.0, 50),
    5: FarStep(12, 0.7, 20.0, 400.0, 40),
}
ANISOTROPY = (0.7, 1.3)  # each blur axis is the mean sigma times a factor in this range
WORK_OVERSAMPLING = 4  # blur at 4x the final low resolution: cheap and still smooth


def anisotropic_gaussian_kernel(sigma_x: float, sigma_y: float, theta: float) -> np.ndarray:
    """Normalised 2-D Gaussian with axis sigmas ``sigma_x, sigma_y`` rotated by ``theta``."""
    radius = max(1, math.ceil(3.0 * max(sigma_x, sigma_y)))
    coords = np.arange(-radius, radius + 1, dtype=np.float32)
    xx, yy = np.meshgrid(coords, coords)
    u = math.cos(theta) * xx + math.sin(theta) * yy
    v = -math.sin(theta) * xx + math.cos(theta) * yy
    kernel = np.exp(-0.5 * ((u / sigma_x) ** 2 + (v / sigma_y) ** 2))
    return kernel / kernel.sum()


def _size_for(width: int, height: int, target_width: int) -> tuple[int, int]:
    return target_width, max(1, round(target_width * height / width))


def far_degrade(
    image: np.ndarray,
    distance: int,
    rng: np.random.Generator,
    out_size: int | tuple[int, int] | None = 112,
    face_fraction: float = 1.0,
) -> np.ndarray:
    """Degrade a face crop as if seen at ``distance`` (1 near .. 5 far).

    ``face_fraction`` is the share of the crop width the face spans (aligned crops carry a
    margin), so the face itself, not the crop, ends ``face_px`` wide. ``out_size``: an int
    gives that width (height keeps the aspect ratio), a (width, height) pair is exact, and
    ``None`` keeps the input size.
    """
    check_image(image, "far_degrade input")
    if distance not in FAR_SCHEDULE:
        raise InvalidLevel(f"far: distance {distance!r} is not one of {list(FAR_SCHEDULE)}")
    if not 0.0 < face_fraction <= 1.0:
        raise ValueError(f"far: face_fraction must be in (0, 1], got {face_fraction}")
    step = FAR_SCHEDULE[distance]
    h, w = image.shape[:2]
    low_w = max(2, round(step.face_px / face_fraction))
    low_size = _size_for(w, h, low_w)

    work = image
    work_w = min(w, WORK_OVERSAMPLING * low_w)
    if work_w < w:
        work = cv2.resize(image, _size_for(w, h, work_w), interpolation=cv2.INTER_AREA)
    sigma = step.blur_sigma * work_w / low_w
    sigma_x, sigma_y = sigma * rng.uniform(*ANISOTROPY, size=2)
    kernel = anisotropic_gaussian_kernel(sigma_x, sigma_y, rng.uniform(0.0, math.pi))
    work = cv2.filter2D(work, cv2.CV_32F, kernel, borderType=cv2.BORDER_REFLECT_101)
    low = cv2.resize(work, low_size, interpolation=cv2.INTER_AREA)

    signal = np.clip(low, 0, 255) / 255.0
    shot = rng.poisson(signal * step.photons).astype(np.float32) / np.float32(step.photons)
    read = rng.standard_normal(low.shape, dtype=np.float32) * np.float32(step.noise_sigma)
    low = jpeg_roundtrip(to_uint8(shot * 255.0 + read), step.jpeg_quality)

    if out_size is None:
        size = (w, h)
    elif isinstance(out_size, int):
        size = _size_for(w, h, out_size)
    else:
        size = (int(out_size[0]), int(out_size[1]))
    return cv2.resize(low, size, interpolation=cv2.INTER_CUBIC)


@OPERATIONS.register("far")
class Far(Operation):
    """``far@d``: :func:`far_degrade` at distance d, returned at the input's size."""

    category = "distance"

    def __init__(self, level: int, face_fraction: float = 1.0):
        super().__init__(level)
        self.face_fraction = float(face_fraction)

    def apply(self, image, rng):
        return far_degrade(image, self.level, rng, out_size=None, face_fraction=self.face_fraction)


@OPERATIONS.register("far_learned")
class FarLearned(Operation):
    """``far_learned@1``: the trained high-to-low generator (learned_degradation.py), its
    16x16 output upsampled back to the input size. Unavailable until a checkpoint exists."""

    category = "distance"
    levels = (1,)

    def __init__(self, level: int, weights: str | Path | None = None, device: str = "cpu"):
        super().__init__(level)
        self.weights = Path(weights) if weights else WEIGHTS_DIR / "high_to_low" / "generator.pt"
        self.device = device

    def check_available(self) -> None:
        if not self.weights.is_file():
            raise OperationUnavailable(
                f"far_learned is unavailable: high-to-low generator checkpoint not found at "
                f"{self.weights} (train it, or set perturb options far_learned.weights)",
                self.weights,
            )

    def apply(self, image, rng):
        # Imported on first use: torch (see ops.LearnedCompression.apply).
        from fairforge.perturb.learned_degradation import apply_generator, cached_generator

        self.check_available()
        h, w = image.shape[:2]
        return apply_generator(
            cached_generator(self.weights, self.device), image, rng, out_size=(w, h)
        )
