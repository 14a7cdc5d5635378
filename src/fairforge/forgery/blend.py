"""Blended images from one face: SBI (Shiohara & Yamasaki, CVPR 2022) and Face X-ray (Li et al.,
CVPR 2020) style, both built from the source alone.

Each pairs the source (the "target" that is kept) with an augmented copy of itself (the
"source" pasted in) and blends the copy inside a deformed, blurred landmark-hull mask M with
a random ratio r: ``out = copy * (r M) + source * (1 - r M)``. They differ as their papers do:

- ``sbi``: the copy gets colour (RGB shift, hue/saturation, brightness/contrast) and
  frequency (downscale-upscale blur or sharpening) augmentation and a small random
  translation and scaling; the mask is one of several hull variants, deformed by a smooth
  random elastic field and blurred; r is drawn from {0.25, 0.5, 0.75, 1, 1, 1}.
- ``xray``: the copy gets colour jitter and blur and is then colour-corrected back to the
  source inside the mask (Face X-ray's colour correction), so the blending boundary, not a
  colour shift, is what gives it away; the mask hull is deformed by a random piecewise-affine
  warp of a 4x4 control grid and blurred; r ~ U(0.6, 1).

The X-ray map B = 4 M' (1 - M'), with M' = r M the effective blend weight, is returned as the
``xray`` extra (uint8, 255 = 1), the boundary of the blend that Face X-ray learns to predict.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import (
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    clean_alpha,
    colour_transfer_lab,
    composite,
    interocular,
    polygon_mask,
    register_method,
)
from .parsing import forehead_points
from .warp import identity_grid, piecewise_affine_maps


def hull_mask(lm: np.ndarray, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """0/255 hull of a landmark subset: ``full`` (68 points), ``forehead`` (with the brows
    lifted), ``inner`` (brows, eyes, nose, mouth: no jaw line), ``lower`` (nose and below)."""
    lm = np.asarray(lm, np.float64)
    if kind == "full":
        pts = lm
    elif kind == "forehead":
        pts = np.concatenate([lm, forehead_points(lm, 0.35)], 0)
    elif kind == "inner":
        pts = lm[17:]
    elif kind == "lower":
        pts = np.concatenate([lm[2:15], lm[28:36], lm[48:]], 0)
    else:
        raise ValueError(f"unknown hull kind {kind!r}")
    return polygon_mask(pts, shape)


def _odd(n: float) -> int:
    n = max(int(round(n)), 1)
    return n if n % 2 else n + 1


def blur_mask(mask: np.ndarray, rng: np.random.Generator, iod: float) -> np.ndarray:
    """Float [0, 1] mask blurred twice with random kernels (SBI's mask smoothing); the first
    blur is erased outside the hard mask so the soft edge lies inside, the second softens it."""
    m = (mask > 0).astype(np.float32)
    k1 = _odd(rng.uniform(0.15, 0.45) * iod)
    soft = cv2.GaussianBlur(m, (k1, k1), 0)
    soft[m == 0] = 0
    k2 = _odd(rng.uniform(0.1, 0.3) * iod)
    return cv2.GaussianBlur(soft, (k2, k2), 0)


def elastic_deform(mask: np.ndarray, rng: np.random.Generator, iod: float) -> np.ndarray:
    """Warp a mask with a smooth random displacement field (a few cells across the face)."""
    h, w = mask.shape[:2]
    cells = 6
    field = rng.normal(0.0, 0.06 * iod, (cells, cells, 2)).astype(np.float32)
    field = cv2.resize(field, (w, h), interpolation=cv2.INTER_CUBIC)
    xs, ys = identity_grid(mask.shape)
    return cv2.remap(
        mask,
        xs + field[..., 0],
        ys + field[..., 1],
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=0,
    )


def grid_deform(mask: np.ndarray, rng: np.random.Generator, lm: np.ndarray) -> np.ndarray:
    """Face X-ray's deformation: a piecewise-affine warp moving 16 points on a 4x4 grid over
    the face box by random offsets (the corners of the crop stay fixed)."""
    h, w = mask.shape[:2]
    iod = interocular(lm)
    x0, y0 = lm.min(0)
    x1, y1 = lm.max(0)
    gx, gy = np.meshgrid(np.linspace(x0, x1, 4), np.linspace(y0, y1, 4))
    grid = np.stack([gx.ravel(), gy.ravel()], 1)
    moved = grid + rng.uniform(-0.12, 0.12, grid.shape) * iod
    corners = np.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]], np.float64)
    src = np.concatenate([grid, corners], 0)
    dst = np.concatenate([moved, corners], 0)
    dst[:, 0] = dst[:, 0].clip(0, w - 1)
    dst[:, 1] = dst[:, 1].clip(0, h - 1)
    map_x, map_y, inside = piecewise_affine_maps(src, dst, mask.shape)
    out = cv2.remap(
        mask, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
    )
    out[~inside] = 0
    return out


def colour_augment(img: np.ndarray, rng: np.random.Generator, strength: float = 1.0) -> np.ndarray:
    """RGB shift, hue/saturation/value shift, brightness/contrast (albumentations-like)."""
    out = img.astype(np.float32)
    out += rng.uniform(-20, 20, 3).astype(np.float32) * strength
    out = np.clip(out, 0, 255).astype(np.uint8)
    hsv = cv2.cvtColor(out, cv2.COLOR_RGB2HSV).astype(np.float32)
    hsv[..., 0] = (hsv[..., 0] + rng.uniform(-0.3, 0.3) * 10 * strength) % 180
    hsv[..., 1] = np.clip(hsv[..., 1] + rng.uniform(-30, 30) * strength, 0, 255)
    hsv[..., 2] = np.clip(hsv[..., 2] + rng.uniform(-20, 20) * strength, 0, 255)
    out = cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB).astype(np.float32)
    contrast = 1 + rng.uniform(-0.1, 0.1) * strength
    brightness = rng.uniform(-0.1, 0.1) * 255 * strength
    out = (out - 128) * contrast + 128 + brightness
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def frequency_augment(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Downscale then upscale (lose detail) or unsharp-mask (add it), at random."""
    h, w = img.shape[:2]
    if rng.random() < 0.5:
        f = rng.uniform(0.3, 0.6)
        small = cv2.resize(
            img, (max(int(w * f), 1), max(int(h * f), 1)), interpolation=cv2.INTER_AREA
        )
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    blur = cv2.GaussianBlur(img, (0, 0), 1.5).astype(np.float32)
    amount = rng.uniform(0.5, 1.5)
    return np.clip(img + amount * (img - blur) + 0.5, 0, 255).astype(np.uint8)


def _blend(copy: np.ndarray, source: np.ndarray, soft: np.ndarray, ratio: float) -> ForgeryResult:
    weight = clean_alpha(soft * ratio)
    if not (weight > 0).any():
        raise ForgeryError("blending mask vanished")
    image, mask = composite(copy, source, weight)
    xray = np.clip(4.0 * weight * (1.0 - weight) * 255 + 0.5, 0, 255).astype(np.uint8)
    return ForgeryResult(image, mask, {"xray": xray, "blend_ratio": round(float(ratio), 4)})


@register_method("sbi")
class SelfBlended(ForgeryMethod):
    backend = "classical"
    kept = "source"
    needs_target = False
    random = True
    defaults = {
        "hulls": ("full", "forehead", "inner", "lower"),
        "ratios": (0.25, 0.5, 0.75, 1.0, 1.0, 1.0),
        "shift": 0.03,  # max translation, fraction of the crop side
        "scale": 0.05,  # max relative scale change
    }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = source_img.shape
        h, w = shape[:2]
        iod = interocular(source_lm)
        copy = colour_augment(source_img, rng)
        copy = frequency_augment(copy, rng)
        s = 1 + rng.uniform(-1, 1) * float(self.options["scale"])
        tx, ty = rng.uniform(-1, 1, 2) * float(self.options["shift"]) * np.array([w, h])
        cx, cy = source_lm.mean(0)
        mat = np.array([[s, 0, (1 - s) * cx + tx], [0, s, (1 - s) * cy + ty]])
        copy = cv2.warpAffine(
            copy, mat, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
        hulls = list(self.options["hulls"])
        kind = hulls[int(rng.integers(len(hulls)))]
        hard = elastic_deform(hull_mask(source_lm, shape, kind), rng, iod)
        soft = blur_mask(hard, rng, iod)
        ratios = list(self.options["ratios"])
        result = _blend(copy, source_img, soft, ratios[int(rng.integers(len(ratios)))])
        result.extra["hull"] = kind
        return result


@register_method("xray")
class XRayBlended(ForgeryMethod):
    backend = "classical"
    kept = "source"
    needs_target = False
    random = True
    defaults = {
        "hulls": ("full", "inner"),
        "ratio_range": (0.6, 1.0),
    }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = source_img.shape
        iod = interocular(source_lm)
        hulls = list(self.options["hulls"])
        kind = hulls[int(rng.integers(len(hulls)))]
        hard = grid_deform(hull_mask(source_lm, shape, kind), rng, source_lm)
        if not hard.any():
            raise ForgeryError("deformed blending mask is empty")
        copy = colour_augment(source_img, rng, strength=1.5)
        sigma = rng.uniform(0.5, 1.5)
        copy = cv2.GaussianBlur(copy, (0, 0), sigma)
        copy = colour_transfer_lab(copy, source_img, hard)
        soft = blur_mask(hard, rng, iod)
        lo, hi = self.options["ratio_range"]
        result = _blend(copy, source_img, soft, float(rng.uniform(lo, hi)))
        result.extra["hull"] = kind
        return result
