"""Attribute manipulation by editing parsed facial parts (a learning-free MaskGAN stand-in).

MaskGAN edits a face by editing its semantic parsing map and re-rendering. Here the parsing
comes from the 68 landmarks (skin, nose, eyes, brows, upper lip, lower lip, mouth); a random
non-empty subset of parts is edited:
- geometric parts are scaled about their centroid by U(0.7, 1.3) (both eyes or both brows
  share one factor, so a face stays symmetric); the area a shrunken part vacates is filled
  with skin by inpainting;
- ``skin`` is edited in appearance: its texture contrast is scaled by the factor and its
  tone shifted with it (lighter when > 1), as a MaskGAN skin-label edit re-renders skin.
The edited regions are feathered back into the source; the mask is their union.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import (
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    composite,
    dilate,
    feather,
    interocular,
    polygon_mask,
    register_method,
)
from .parsing import PARTS, parse_parts, part_components

MIN_PART_AREA = 12  # pixels; a closed mouth has no interior to edit


@register_method("maskgan")
class MaskGAN(ForgeryMethod):
    backend = "classical"
    kept = "source"
    needs_target = False
    defaults = {
        "parts": PARTS,  # candidate parts
        "scale_range": (0.7, 1.3),
        "margin": 0.06,  # context carried with a part, inter-ocular units
        "feather": 0.06,  # inter-ocular units
    }

    def __init__(self, **options):
        super().__init__(**options)
        unknown = sorted(set(self.options["parts"]) - set(PARTS))
        if unknown:
            raise ValueError(f"maskgan parts {unknown} unknown; parts: {list(PARTS)}")

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = source_img.shape
        iod = interocular(source_lm)
        masks = parse_parts(source_lm, shape)
        candidates = [p for p in self.options["parts"] if (masks[p] > 0).sum() >= MIN_PART_AREA]
        if not candidates:
            raise ForgeryError("no face part large enough to edit")
        chosen = [p for p in candidates if rng.random() < 0.5]
        if not chosen:
            chosen = [candidates[int(rng.integers(len(candidates)))]]
        lo, hi = self.options["scale_range"]
        factors = {p: float(rng.uniform(lo, hi)) for p in chosen}

        margin = max(int(round(self.options["margin"] * iod)), 1)
        geometric = [p for p in chosen if p != "skin"]
        vacated = np.zeros(shape[:2], np.uint8)
        for p in geometric:
            vacated |= dilate(masks[p], margin)
        canvas = source_img
        if vacated.any():
            canvas = cv2.inpaint(source_img, vacated, max(margin, 3), cv2.INPAINT_TELEA)
        canvas = canvas.astype(np.float32)
        edited = vacated.copy()
        components = part_components(source_lm)
        for p in geometric:
            s = factors[p]
            for poly in components[p]:
                region = dilate(polygon_mask(poly, shape, convex=False), margin)
                if not region.any():
                    continue
                cx, cy = np.asarray(poly, np.float64).mean(0)
                mat = np.array([[s, 0, (1 - s) * cx], [0, s, (1 - s) * cy]], np.float64)
                size = (shape[1], shape[0])
                moved = cv2.warpAffine(
                    source_img, mat, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
                )
                moved_region = cv2.warpAffine(region, mat, size, flags=cv2.INTER_NEAREST)
                a = feather(moved_region, max(margin // 2, 1))[..., None]
                canvas = moved.astype(np.float32) * a + canvas * (1 - a)
                edited |= moved_region
        if "skin" in chosen:
            # The nose is skin too; leaving it out would leave a nose-shaped patch of old tone.
            skin = masks["skin"] | masks["nose"]
            canvas = _edit_skin(canvas, skin, factors["skin"], iod)
            edited |= skin
        radius = max(int(round(self.options["feather"] * iod)), 1)
        alpha = feather(edited, radius, inside=False)
        image, mask = composite(np.clip(canvas + 0.5, 0, 255).astype(np.uint8), source_img, alpha)
        return ForgeryResult(
            image,
            mask,
            {"parts": sorted(chosen), "factors": {p: round(f, 4) for p, f in factors.items()}},
        )


def _edit_skin(canvas: np.ndarray, skin: np.ndarray, factor: float, iod: float) -> np.ndarray:
    """Scale skin texture contrast by ``factor`` and shift its lightness with it."""
    sigma = max(0.08 * iod, 1.0)
    base = cv2.GaussianBlur(canvas, (0, 0), sigma)
    detail = canvas - base
    tone = base * (1.0 + 0.5 * (factor - 1.0))
    edited = np.clip(tone + factor * detail, 0, 255)
    a = (skin > 0).astype(np.float32)[..., None]
    return edited * a + canvas * (1 - a)
