"""Graphic face swap (the FaceSwap method of FaceForensics++, learning-free).

FairFD's FaceSwap [21] is this graphics method itself, so it is not a stand-in: no network
is released for it, and it has no ``official`` backend.

The source face is cut into Delaunay triangles over its 68 landmarks and each triangle is
mapped affinely onto the matching triangle of the target's landmarks; the warped face is
colour-corrected to the target (LAB mean and std inside the face hull) and blended into the
target image by feathering or Poisson cloning. The target's background, hair, pose and
lighting are kept; the face (brows to chin) is the source's, except where the target shows
something in front of or inside its face: its mouth opening (inner-lip hull) and its
occluders (glasses frames, strands; found by colour, :func:`~fairforge.forgery.parsing.occluders`)
stay the target's, and the source's occluders are left out.

A 3D-aware variant (fitting a 3D morphable model to handle large pose differences) is not
implemented: aligned crops of frontal-ish faces make the 2D warp adequate.
"""

from __future__ import annotations

import numpy as np

from .base import (
    FORGERY_METHODS,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    colour_transfer_lab,
    composite,
    dilate,
    erode,
    feather,
    interocular,
    poisson_clone,
    polygon_mask,
)
from .parsing import occluders
from .warp import piecewise_affine_maps, remap


def keep_target(target_img: np.ndarray, target_lm: np.ndarray, iod: float) -> np.ndarray:
    """0/255 pixels an identity swap leaves to the target: the inside of the inner-lip hull
    (grown by 0.06 IOD, so a closed mouth's lip line is kept too) and the target's
    occluders (:func:`~fairforge.forgery.parsing.occluders`)."""
    mouth = dilate(polygon_mask(target_lm[60:68], target_img.shape), int(round(0.06 * iod)))
    return mouth | occluders(target_img, target_lm)


@FORGERY_METHODS.register("faceswap/classical")
class FaceSwap(ForgeryMethod):
    kept = "target"
    needs_target = True
    defaults = {
        "blend": "feather",  # "feather" (alpha ramp) or "poisson" (cv2.seamlessClone)
        "erode": 0.04,  # mask erosion, inter-ocular units
        "feather": 0.12,  # feather radius, inter-ocular units
        "colour_correction": True,
    }

    def __init__(self, **options):
        super().__init__(**options)
        if self.options["blend"] not in ("feather", "poisson"):
            raise ValueError(
                f"faceswap blend must be 'feather' or 'poisson', got {self.options['blend']!r}"
            )

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = target_img.shape
        map_x, map_y, inside = piecewise_affine_maps(source_lm, target_lm, shape)
        warped = remap(source_img, map_x, map_y)
        iod = interocular(target_lm)
        region = polygon_mask(target_lm, shape)
        region[~inside] = 0
        region = erode(region, int(round(self.options["erode"] * iod)))
        # What the target shows in front of or inside its face stays the target's: the mouth
        # opening (a source mouth warped into it made a second, stretched mouth) and the
        # occluders (target glasses broke into ghost frames); the source's own occluders are
        # not carried over either.
        region[keep_target(target_img, target_lm, iod) > 0] = 0
        region[remap(occluders(source_img, source_lm), map_x, map_y) > 0] = 0
        if region.sum() == 0:
            raise ForgeryError("face region vanished after erosion")
        if self.options["colour_correction"]:
            warped = colour_transfer_lab(warped, target_img, region)
        radius = max(int(round(self.options["feather"] * iod)), 1)
        if self.options["blend"] == "poisson":
            cloned = poisson_clone(warped, target_img, region)
            alpha = (region > 0).astype(np.float32)
            image, mask = composite(cloned, target_img, alpha)
        else:
            image, mask = composite(warped, target_img, feather(region, radius))
        return ForgeryResult(image, mask, {"blend": self.options["blend"]})
