"""The DeeperForensics-1.0 perturbation suite (docs/perturbations.md section 3), levels 1..5.

Follows the reference implementation (colour work in YCbCr normalised to [0, 1]).
``df_video_compression`` needs a video file: it is a video operation (video_ops.py).
"""

from __future__ import annotations

import cv2
import numpy as np

from fairforge.perturb.base import Operation, register
from fairforge.perturb.ops import gaussian_blur, to_uint8

# df_block places 8x8 blocks on the reference side; other sizes scale the block side so that
# the covered fraction of the image does not depend on resolution.
BLOCK_REFERENCE_SIDE = 256
BLOCK_SIDE = 8
BLOCK_GREY = 128


def _to_ycrcb01(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2YCrCb).astype(np.float32) / 255.0


def _from_ycrcb01(ycrcb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(to_uint8(ycrcb * 255.0), cv2.COLOR_YCrCb2RGB)


@register
class DfSaturation(Operation):
    name = "df_saturation"
    category = "deeperforensics"
    params = (0.4, 0.3, 0.2, 0.1, 0.0)  # chroma scale around 0.5

    def apply(self, image, rng):
        ycrcb = _to_ycrcb01(image)
        ycrcb[..., 1:] = 0.5 + (ycrcb[..., 1:] - 0.5) * self.param
        return _from_ycrcb01(ycrcb)


@register
class DfContrast(Operation):
    name = "df_contrast"
    category = "deeperforensics"
    params = (0.85, 0.725, 0.6, 0.475, 0.35)  # pixel values multiplied by this

    def apply(self, image, rng):
        return to_uint8(image.astype(np.float32) * self.param)


def block_side(height: int, width: int) -> int:
    return max(2, round(BLOCK_SIDE * min(height, width) / BLOCK_REFERENCE_SIDE))


@register
class DfBlock(Operation):
    name = "df_block"
    category = "deeperforensics"
    params = (16, 32, 48, 64, 80)  # number of grey blocks

    def apply(self, image, rng):
        h, w = image.shape[:2]
        side = min(block_side(h, w), h, w)
        tops = rng.integers(0, h - side + 1, size=self.param)
        lefts = rng.integers(0, w - side + 1, size=self.param)
        out = image.copy()
        for top, left in zip(tops, lefts):
            out[top : top + side, left : left + side] = BLOCK_GREY
        return out


@register
class DfNoise(Operation):
    name = "df_noise"
    category = "deeperforensics"
    params = (0.001, 0.002, 0.005, 0.01, 0.05)  # variance in normalised YCbCr

    def apply(self, image, rng):
        ycrcb = _to_ycrcb01(image)
        noise = rng.standard_normal(ycrcb.shape, dtype=np.float32)
        return _from_ycrcb01(ycrcb + np.float32(np.sqrt(self.param)) * noise)


@register
class DfBlur(Operation):
    name = "df_blur"
    category = "deeperforensics"
    params = (7, 9, 13, 17, 21)  # Gaussian kernel, sigma = k / 6

    def apply(self, image, rng):
        return gaussian_blur(image, self.param, self.param / 6.0)


@register
class DfPixelate(Operation):
    """Down by the factor (area) and back up (nearest); DeeperForensics calls it "JPEG"."""

    name = "df_pixelate"
    category = "deeperforensics"
    params = (2, 3, 4, 5, 6)

    def apply(self, image, rng):
        h, w = image.shape[:2]
        small = cv2.resize(
            image, (max(1, w // self.param), max(1, h // self.param)), interpolation=cv2.INTER_AREA
        )
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)
