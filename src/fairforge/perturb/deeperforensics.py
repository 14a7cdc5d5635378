"""The DeeperForensics-1.0 perturbation suite (docs/perturbations.md section 3), levels 1..5.

Each operation does what the DeeperForensics-1.0 reference perturbation code does to a video
frame, to within one grey level, at every level and on images of any size:

- colour work happens in floating point (no uint8 YCbCr in between) and the result is
  *truncated* to uint8, as the reference does (``rounding="round"`` rounds instead);
- ``df_noise`` adds its noise in the reference's YCbCr scaling, which stretches luma by
  255/219 and chroma by 255/224, so its noise is that much stronger than the nominal
  variance suggests (``ycbcr_scaling="unit"``: noise of the nominal variance on [0, 1]);
- ``df_block`` pastes fixed 8 px blocks, ``level count x (shorter side // 256)`` of them, so
  an image under 256 px gets none (``block_size="scaled"``: the block side scales with the
  image and the count is the level's, the covered fraction then does not depend on size);
- ``df_pixelate`` (the reference's "JPEG") resizes bilinearly down and back up, which blurs
  (``interpolation="area-nearest"``: area down, nearest up, which adds block edges).

The random operations draw explicitly (``draw``) and apply the draws (``apply_draws``), so a
test can feed the same draws to a re-statement of the reference.
``df_video_compression`` needs a video file: it is a video operation (video_ops.py).
"""

from __future__ import annotations

from typing import ClassVar

import cv2
import numpy as np

from fairforge.perturb.base import OPERATIONS, Operation, PerturbationError
from fairforge.perturb.ops import gaussian_blur, to_uint8

BLOCK_SIDE = 8  # the reference's block side, in pixels
BLOCK_REFERENCE_SIDE = 256  # one set of blocks per 256 px of the shorter side
BLOCK_GREY = 128
ROUNDINGS = ("truncate", "round")
# The reference's YCbCr maps luma to [16, 235] and chroma to [16, 240] (of 255) around the
# noise, so noise added there is scaled by 255/219 (luma) and 255/224 (chroma) on the way back.
YCBCR_NOISE_GAIN = (255.0 / 219.0, 255.0 / 224.0, 255.0 / 224.0)


def _choice(op: str, option: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise PerturbationError(f"{op}: {option} {value!r} is not one of {list(allowed)}")
    return value


def quantise(values: np.ndarray, rounding: str) -> np.ndarray:
    """Float pixels to uint8: clipped, then truncated (the reference) or rounded."""
    if rounding == "round":
        return to_uint8(values)
    return np.clip(values, 0, 255).astype(np.uint8)


def _to_ycrcb(image: np.ndarray) -> np.ndarray:
    """Float YCrCb of uint8 RGB, luma in grey levels, chroma centred on 0.5 (OpenCV float)."""
    return cv2.cvtColor(image.astype(np.float32), cv2.COLOR_RGB2YCrCb)


def _from_ycrcb(ycrcb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2RGB)


class _Rounded(Operation):
    roundings: ClassVar[tuple[str, ...]] = ROUNDINGS

    def __init__(self, level: int, rounding: str = "truncate"):
        super().__init__(level)
        self.rounding = _choice(self.name, "rounding", rounding, ROUNDINGS)


@OPERATIONS.register("df_saturation")
class DfSaturation(_Rounded):
    category = "deeperforensics"
    params = (0.4, 0.3, 0.2, 0.1, 0.0)  # chroma scale around its centre
    continuous = "float"

    def apply(self, image, rng):
        ycrcb = _to_ycrcb(image)
        ycrcb[..., 1:] = 0.5 + (ycrcb[..., 1:] - 0.5) * np.float32(self.param)
        return quantise(_from_ycrcb(ycrcb), self.rounding)


@OPERATIONS.register("df_contrast")
class DfContrast(_Rounded):
    category = "deeperforensics"
    params = (0.85, 0.725, 0.6, 0.475, 0.35)  # pixel values multiplied by this
    continuous = "float"

    def apply(self, image, rng):
        # A per-value table: the same float32 product as on the pixels, 256 times not H*W*3.
        table = np.arange(256, dtype=np.float32) * np.float32(self.param)
        return cv2.LUT(image, quantise(table, self.rounding))


def block_side(height: int, width: int) -> int:
    """The block side of ``block_size="scaled"``: 8 px per 256 px of the shorter side."""
    return max(2, round(BLOCK_SIDE * min(height, width) / BLOCK_REFERENCE_SIDE))


@OPERATIONS.register("df_block")
class DfBlock(Operation):
    category = "deeperforensics"
    params = (16, 32, 48, 64, 80)  # grey blocks per 256 px of the shorter side
    continuous = "int"
    block_sizes: ClassVar[tuple[str, ...]] = ("fixed", "scaled")

    def __init__(self, level: int, block_size: str = "fixed"):
        super().__init__(level)
        self.block_size = _choice(self.name, "block_size", block_size, self.block_sizes)

    def side_and_count(self, height: int, width: int) -> tuple[int, int]:
        if self.block_size == "fixed":
            return BLOCK_SIDE, (min(height, width) // BLOCK_REFERENCE_SIDE) * self.param
        return min(block_side(height, width), height, width), self.param

    def draw(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """``(count, 2)`` integer (top, left) corners.

        Fixed blocks: uniform over [0, side - 9] (the reference's range, which leaves out the
        last possible position); scaled blocks: over every position.
        """
        h, w = shape[:2]
        side, count = self.side_and_count(h, w)
        last = 1 if self.block_size == "fixed" else 0
        tops = rng.integers(0, h - side + 1 - last, size=count)
        lefts = rng.integers(0, w - side + 1 - last, size=count)
        return np.stack([tops, lefts], axis=1)

    def apply_draws(self, image: np.ndarray, corners: np.ndarray) -> np.ndarray:
        side, _ = self.side_and_count(*image.shape[:2])
        out = image.copy()
        for top, left in corners:
            out[top : top + side, left : left + side] = BLOCK_GREY
        return out

    def apply(self, image, rng):
        return self.apply_draws(image, self.draw(image.shape, rng))


@OPERATIONS.register("df_noise")
class DfNoise(_Rounded):
    category = "deeperforensics"
    params = (0.001, 0.002, 0.005, 0.01, 0.05)  # variance on normalised YCbCr
    continuous = "float"
    scalings: ClassVar[tuple[str, ...]] = ("reference", "unit")

    def __init__(self, level: int, rounding: str = "truncate", ycbcr_scaling: str = "reference"):
        super().__init__(level, rounding)
        self.ycbcr_scaling = _choice(self.name, "ycbcr_scaling", ycbcr_scaling, self.scalings)

    def sigmas(self) -> np.ndarray:
        """Noise std in grey levels for the (Y, Cr, Cb) channels."""
        gain = YCBCR_NOISE_GAIN if self.ycbcr_scaling == "reference" else (1.0, 1.0, 1.0)
        return (255.0 * np.sqrt(self.param) * np.asarray(gain)).astype(np.float32)

    def draw(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Standard normal draws, one per pixel and channel, channels in (Y, Cr, Cb) order."""
        return rng.standard_normal(shape, dtype=np.float32)

    def apply_draws(self, image: np.ndarray, noise: np.ndarray) -> np.ndarray:
        ycrcb = _to_ycrcb(image)
        ycrcb += noise * self.sigmas()
        return quantise(_from_ycrcb(ycrcb), self.rounding)

    def apply(self, image, rng):
        return self.apply_draws(image, self.draw(image.shape, rng))


@OPERATIONS.register("df_blur")
class DfBlur(Operation):
    category = "deeperforensics"
    params = (7, 9, 13, 17, 21)  # Gaussian kernel, sigma = k / 6
    continuous = "odd"

    def apply(self, image, rng):
        return gaussian_blur(image, self.param, self.param / 6.0)


@OPERATIONS.register("df_pixelate")
class DfPixelate(Operation):
    """Down by the factor and back up; DeeperForensics calls it "JPEG"."""

    category = "deeperforensics"
    params = (2, 3, 4, 5, 6)
    continuous = "int"
    interpolations: ClassVar[tuple[str, ...]] = ("linear", "area-nearest")

    def __init__(self, level: int, interpolation: str = "linear"):
        super().__init__(level)
        self.interpolation = _choice(self.name, "interpolation", interpolation, self.interpolations)

    def apply(self, image, rng):
        h, w = image.shape[:2]
        down, up = (
            (cv2.INTER_LINEAR, cv2.INTER_LINEAR)
            if self.interpolation == "linear"
            else (cv2.INTER_AREA, cv2.INTER_NEAREST)
        )
        small = cv2.resize(
            image, (max(1, w // self.param), max(1, h // self.param)), interpolation=down
        )
        return cv2.resize(small, (w, h), interpolation=up)
