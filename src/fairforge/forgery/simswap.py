"""Identity swap (SimSwap in FairFD): a learned swapper through insightface, and a stand-in.

``backend="onnx"`` runs a user-provided ``inswapper_128``-style model through insightface's
own loading (``insightface.model_zoo.get_model``) and swapper (``INSwapper.get``), with the
identity from an ArcFace ONNX model (``ArcFaceONNX.get``); see :class:`SimSwapOnnx`.

``backend="classical"`` is a learning-free stand-in for FairFD's SimSwap [22] (Chen et al.,
ACM MM 2020), an identity-encoder swap (SimSwap's identity injection; ``official``,
:mod:`~fairforge.forgery.simswap_official`, runs its release), different in mechanism from ``faceswap``'s paste of the source face:
the target image itself is changed, so its expression, pose, lighting, fine detail and
occluders stay. (1) Shape: the source's landmarks, given the target's expression measures
and lifted onto the generic 3-D face under the source's PnP pose, are re-projected under
the target's pose (:func:`identity_landmarks`): the source's face geometry normalised for
pose and expression; a thin-plate spline warps the target onto it. (2) Texture: the
source, warped onto that geometry, gives its *identity band* (the frequencies between
``detail_sigma`` and ``lighting_sigma`` inter-ocular distances: brows, lid and lip shapes
and colours, skin marks), which replaces the target's band on the face, except inside the
target's mouth opening, on the target's occluders and where the source has occluders. It
does not learn an identity representation (the identity is the landmark shape and a
texture band); reports should call it a stand-in.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from .base import (
    FORGERY_METHODS,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    erode,
    feather,
    five_points,
    interocular,
    polygon_mask,
)
from .faceswap import keep_target
from .parsing import face_region, measure_expression, occluders
from .pose import camera_matrix, generic_face_3d, head_pose
from .reenact import apply_expression_delta, lift_landmarks, project
from .warp import (
    border_anchors,
    identity_grid,
    piecewise_affine_maps,
    remap,
    ring_anchors,
    tps_displacement,
)

# insightface's ArcFace alignment template for 112x112 crops (eyes, nose tip, mouth corners).
ARCFACE_112 = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    np.float32,
)


def arcface_template(size: int) -> np.ndarray:
    """The template for a ``size`` crop, scaled the way insightface's ``estimate_norm`` does."""
    if size % 112 == 0:
        ratio, diff_x = size / 112.0, 0.0
    else:
        ratio, diff_x = size / 128.0, 8.0 * size / 128.0
    dst = ARCFACE_112 * ratio
    dst[:, 0] += diff_x
    return dst


# --------------------------------------------------------------------------- classical


def identity_landmarks(source_lm: np.ndarray, target_lm: np.ndarray, size: int) -> np.ndarray:
    """The source's face shape under the target's expression, head pose and position.

    The source's landmarks take the target's expression measures
    (:func:`~fairforge.forgery.reenact.apply_expression_delta`), are lifted onto the generic
    3-D face under the source's rigid pose (``cv2.solvePnP``) and re-projected under the
    target's rotation and translation: what is left of the source is its shape (jaw, nose,
    eye and mouth proportions), normalised for pose and expression.
    """
    source_lm = np.asarray(source_lm, np.float64)
    target_lm = np.asarray(target_lm, np.float64)
    neutral = apply_expression_delta(
        source_lm, measure_expression(target_lm) - measure_expression(source_lm)
    )
    camera, model = camera_matrix(size), generic_face_3d()
    try:
        rot_s, t_s = head_pose(source_lm, model, camera)
        rot_t, t_t = head_pose(target_lm, model, camera)
    except (ValueError, cv2.error) as err:
        raise ForgeryError(f"head pose fit failed ({err})") from err
    return project(lift_landmarks(neutral, model, rot_s, t_s, camera), rot_t, t_t, camera)


@FORGERY_METHODS.register("simswap/classical")
class SimSwapClassical(ForgeryMethod):
    kept = "target"
    needs_target = True
    defaults = {
        "forehead": 0.15,  # how far above the brows the identity texture reaches, IOD units
        "lighting_sigma": 0.2,  # IOD units: coarser than this is the target's lighting
        "detail_sigma": 0.03,  # IOD units: finer than this is the target's detail
        "ring": 1.3,  # fixed ring around the face for the shape warp, hull scale
    }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = target_img.shape
        iod = interocular(target_lm)
        moved = identity_landmarks(source_lm, target_lm, shape[1])
        if not np.isfinite(moved).all():
            raise ForgeryError("identity shape transfer diverged")
        # 1. Shape: the target image itself is warped onto the source's face shape, so its
        # expression, lighting, detail and occluders come along.
        ring = ring_anchors(np.concatenate([target_lm, moved]), float(self.options["ring"]), shape)
        anchors = np.concatenate([border_anchors(shape), ring], 0)
        disp = tps_displacement(moved, target_lm, anchors, shape, step=4)
        reach = float(np.abs(moved - target_lm).max()) + 0.5
        np.clip(disp, -reach, reach, out=disp)
        disp *= feather(polygon_mask(ring, shape), max(int(round(0.15 * iod)), 1))[..., None]
        xs, ys = identity_grid(shape)
        reshaped = remap(target_img, xs + disp[..., 0], ys + disp[..., 1])
        moving = np.linalg.norm(disp, axis=2) > 0.25
        # 2. Texture: the source's identity band (between the target's detail and lighting
        # scales: brows, eyes, lips, nose and skin marks) replaces the target's, on the face
        # minus what the target shows in front of or inside it.
        map_x, map_y, inside = piecewise_affine_maps(source_lm, moved, shape)
        src = remap(source_img, map_x, map_y)
        src[~inside] = reshaped[~inside]
        lo = max(float(self.options["lighting_sigma"]) * iod, 1.0)
        hi = max(float(self.options["detail_sigma"]) * iod, 0.5)

        def band(img):
            f = img.astype(np.float32)
            return cv2.GaussianBlur(f, (0, 0), hi) - cv2.GaussianBlur(f, (0, 0), lo)

        region = face_region(moved, shape, lift=float(self.options["forehead"]))
        region[~inside] = 0
        region[keep_target(reshaped, moved, iod) > 0] = 0
        # The source's occluders are not identity: their band is left out (no ghost frames).
        region[remap(occluders(source_img, source_lm), map_x, map_y) > 0] = 0
        weight = feather(erode(region, max(int(round(0.08 * iod)), 1)), max(int(0.1 * iod), 1))
        out = reshaped.astype(np.float32) + weight[..., None] * (band(src) - band(reshaped))
        out = np.clip(out + 0.5, 0, 255).astype(np.uint8)
        changed = moving | (weight > 0)
        if not changed.any():
            raise ForgeryError("source and target faces are identical")
        image = target_img.copy()
        image[changed] = out[changed]
        return ForgeryResult(
            image, changed.astype(np.uint8) * 255, {"landmarks": np.round(moved, 2).tolist()}
        )


# --------------------------------------------------------------------------- onnx


def model_path(method: str, options: dict, key: str, what: str) -> str:
    """The configured path ``options[key]``: a clear error when unset or missing."""
    value = options.get(key)
    if not value:
        raise ValueError(f"{method} backend 'onnx' needs option '{key}' (path to the {what})")
    if not Path(value).is_file():
        raise FileNotFoundError(f"{method} backend 'onnx': {key} not found: {value}")
    return str(value)


@FORGERY_METHODS.register("simswap/onnx")
class SimSwapOnnx(ForgeryMethod):
    """A learned swapper run through insightface's own model loading and swapper.

    ``swapper_path`` is an ``inswapper_128``-style ONNX model (inputs: the target face
    aligned to the ArcFace template, 1x3x128x128, and the identity latent, 1x512; output the
    swapped face, 1x3x128x128 in [0, 1]; its last initializer is the 512x512 latent map
    ``emap``), ``arcface_path`` an ArcFace recognition model (1x3x112x112 in, 1x512 out).
    Both are loaded by ``insightface.model_zoo.get_model`` (which routes them to
    ``INSwapper`` and ``ArcFaceONNX`` by their input shapes) and run by insightface: the
    source embedding by ``ArcFaceONNX.get``, the swap and its paste-back by
    ``INSwapper.get``, on the 5 points derived from the 68 landmarks. fairforge only converts
    RGB to insightface's BGR and back, and takes the pixels that changed as the mask.
    """

    kept = "target"
    needs_target = True
    defaults = {
        "swapper_path": None,  # inswapper_128-style model
        "arcface_path": None,  # ArcFace identity encoder, 112x112 input
        "providers": None,  # onnxruntime providers; default insightface's (CUDA if present)
    }

    def __init__(self, **options):
        super().__init__(**options)
        from insightface.model_zoo import get_model  # optional dependency

        swapper = model_path(self.name, self.options, "swapper_path", "inswapper_128 model")
        arcface = model_path(self.name, self.options, "arcface_path", "ArcFace model")
        providers = self.options["providers"]
        kw = {"providers": list(providers)} if providers else {}
        self.swapper = get_model(swapper, **kw)
        self.arcface = get_model(arcface, **kw)
        if type(self.swapper).__name__ != "INSwapper":
            raise ValueError(
                f"simswap backend 'onnx': insightface does not load {swapper} as a swapper "
                "(inputs must be a 1x3x128x128 image and a 1x512 latent)"
            )
        if type(self.arcface).__name__ != "ArcFaceONNX":
            raise ValueError(
                f"simswap backend 'onnx': insightface does not load {arcface} as ArcFace "
                "(input must be square, >= 112 and a multiple of 16)"
            )

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        from insightface.app.common import Face

        source_bgr = np.ascontiguousarray(source_img[..., ::-1])
        target_bgr = np.ascontiguousarray(target_img[..., ::-1])
        source_face = Face(kps=five_points(source_lm))
        self.arcface.get(source_bgr, source_face)
        target_face = Face(kps=five_points(target_lm))
        out = self.swapper.get(target_bgr, target_face, source_face, paste_back=True)
        image = np.ascontiguousarray(out[..., ::-1])
        changed = (image != target_img).any(2)
        if not changed.any():
            raise ForgeryError("swapper left the target unchanged")
        return ForgeryResult(image, changed.astype(np.uint8) * 255, {})
