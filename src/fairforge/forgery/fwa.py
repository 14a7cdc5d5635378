"""Face-warping artefacts (Li & Lyu, "Exposing DeepFake Videos By Detecting Face Warping
Artifacts", CVPR workshops 2019): a fake made from one real face, with no synthesis at all.

DeepFake pipelines synthesise a face at a low fixed resolution and affine-warp it back onto
the frame, leaving a resolution mismatch between the face and its surroundings. FWA makes that
artefact directly from a real face: the face is shrunk to a random scale (the aligned face at
a lower resolution), blurred with a Gaussian kernel drawn from {3, 5, 7, 9}, and warped back
to the original geometry (the inverse affine, upsampling); the result replaces the face inside
a region that is either the rectangle spanned by the landmarks or their convex hull (the
paper's two region shapes), with a feathered edge.

:func:`warp_artefact` is the generator (an image and its landmarks in, a
:class:`~fairforge.forgery.base.ForgeryResult` out), so that a training loop can call it on
real faces on the fly; the registered method ``fwa`` runs it through the forgery stage like
any other method. The paper's additional colour jitter of the warped face (brightness,
contrast, sharpness) is left out: the resolution artefact is the one FWA is built to find.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import (
    FORGERY_METHODS,
    ONLINE_FORGERIES,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    clean_alpha,
    composite,
    feather,
    interocular,
    polygon_mask,
)
from .blend import xray_map

BLUR_KERNELS = (3, 5, 7, 9)
REGIONS = ("rectangle", "hull")


def face_region(lm: np.ndarray, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """0/255 face region: the landmarks' bounding ``rectangle`` or convex ``hull``."""
    lm = np.asarray(lm, np.float64)
    if kind == "hull":
        return polygon_mask(lm, shape)
    if kind == "rectangle":
        (x0, y0), (x1, y1) = lm.min(0), lm.max(0)
        corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
        return polygon_mask(corners, shape)
    raise ValueError(f"unknown FWA region {kind!r}; one of {REGIONS}")


def shrink_blur_restore(
    img: np.ndarray, centre: np.ndarray, scale: float, kernel: int
) -> np.ndarray:
    """``img`` shrunk by ``scale`` about ``centre``, blurred, and warped back to full size:
    the same geometry, with the detail a ``scale``-times smaller face would have."""
    h, w = img.shape[:2]
    cx, cy = (float(c) for c in centre)
    down = np.array([[scale, 0.0, (1 - scale) * cx], [0.0, scale, (1 - scale) * cy]])
    small = cv2.warpAffine(img, down, (w, h), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REFLECT)
    small = cv2.GaussianBlur(small, (kernel, kernel), 0)
    up = cv2.invertAffineTransform(down)
    return cv2.warpAffine(small, up, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def warp_artefact(
    img: np.ndarray,
    lm: np.ndarray,
    rng: np.random.Generator,
    scale_range: tuple[float, float] = (0.25, 0.6),
    kernels: tuple[int, ...] = BLUR_KERNELS,
    regions: tuple[str, ...] = REGIONS,
) -> ForgeryResult:
    """One FWA fake of the real face ``img`` (uint8 RGB) with 68 ``lm``; seeded by ``rng``."""
    image, weight, extra = fwa_blend(img, lm, rng, scale_range, kernels, regions)
    return ForgeryResult(image, (weight > 0).astype(np.uint8) * 255, extra)


def fwa_blend(
    img: np.ndarray,
    lm: np.ndarray,
    rng: np.random.Generator,
    scale_range: tuple[float, float] = (0.25, 0.6),
    kernels: tuple[int, ...] = BLUR_KERNELS,
    regions: tuple[str, ...] = REGIONS,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """:func:`warp_artefact` as (fake, soft blend weight M in [0, 1], parameters), for a
    training loop that wants the blending boundary too."""
    lo, hi = scale_range
    if not 0 < lo <= hi < 1:
        raise ValueError(f"FWA scale_range must lie in (0, 1), got {scale_range}")
    scale = float(rng.uniform(lo, hi))
    kernel = int(kernels[int(rng.integers(len(kernels)))])
    kind = regions[int(rng.integers(len(regions)))]
    region = face_region(lm, img.shape, kind)
    if not region.any():
        raise ForgeryError("FWA face region is empty")
    warped = shrink_blur_restore(img, np.asarray(lm, np.float64).mean(0), scale, kernel)
    radius = max(int(round(0.08 * interocular(lm))), 1)
    weight = clean_alpha(feather(region, radius))
    image, mask = composite(warped, img, weight)
    if not mask.any():
        raise ForgeryError("FWA region vanished after feathering")
    extra = {"scale": round(scale, 4), "blur_kernel": kernel, "region": kind}
    return image, weight, extra


@ONLINE_FORGERIES.register("fwa")
def _online_fwa(img, lm, rng, partner=None):
    """FWA's warp as a training fake; the map is the X-ray of its feathered region."""
    fake, weight, _ = fwa_blend(img, lm, rng)
    return np.asarray(img), fake, xray_map(weight)


@FORGERY_METHODS.register("fwa/classical")
class FaceWarpingArtefacts(ForgeryMethod):
    kept = "source"
    purpose = "training"
    needs_target = False
    # Scale, kernel and region are drawn: a face with little fine detail (an upscaled photo)
    # may show no artefact at one draw and a visible one at the next, as SBI's blends do.
    random = True
    defaults = {
        "scale_range": (0.25, 0.6),  # the face is shrunk to this fraction of its size
        "kernels": BLUR_KERNELS,  # Gaussian kernel sizes, pixels
        "regions": REGIONS,
    }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        return warp_artefact(
            source_img,
            source_lm,
            rng,
            scale_range=tuple(self.options["scale_range"]),
            kernels=tuple(self.options["kernels"]),
            regions=tuple(self.options["regions"]),
        )
