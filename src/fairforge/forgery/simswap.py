"""Learned identity swap (SimSwap in FairFD), with a learning-free stand-in.

``backend="onnx"`` runs a user-provided swapper with the ``inswapper_128`` signature: the
target face aligned to the ArcFace 5-point template at 128x128, as a 1x3x128x128 float RGB
tensor in [0, 1], plus a 1x512 identity vector computed from the source face by an ArcFace
ONNX model (112x112 input, (x - 127.5) / 127.5). As in insightface, the identity embedding
is normalised, multiplied by the swapper's latent map (the last initializer of the graph
when it is a square matrix of the embedding size) and normalised again. The swapped face is
pasted back with an eroded, blurred box mask.

``backend="classical"`` is a learning-free stand-in for an identity-encoder swap (SimSwap's
identity injection), different in mechanism from ``faceswap``'s paste of the source face:
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
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    composite,
    erode,
    feather,
    five_points,
    interocular,
    polygon_mask,
    register_method,
    similarity_transform,
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


@register_method("simswap")
class SimSwapClassical(ForgeryMethod):
    backend = "classical"
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


def _session(path: str, providers, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    available = ort.get_available_providers()
    wanted = providers or ["CUDAExecutionProvider", "CPUExecutionProvider"]
    use = [p for p in wanted if p in available] or ["CPUExecutionProvider"]
    return ort.InferenceSession(path, sess_options=opts, providers=use)


def _latent_map(path: str, dim: int, setting) -> np.ndarray | None:
    """insightface's ``emap``: the swapper graph's last initializer when it is dim x dim."""
    if setting in (None, "none", False):
        return None
    if setting != "auto":
        emap = np.load(setting)
        if emap.shape != (dim, dim):
            raise ValueError(f"latent map {setting} has shape {emap.shape}, expected {(dim, dim)}")
        return emap.astype(np.float32)
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(path, load_external_data=False).graph
    if not graph.initializer:
        return None
    last = graph.initializer[-1]
    if tuple(last.dims) != (dim, dim):
        return None
    return numpy_helper.to_array(last).astype(np.float32)


def _model_path(options: dict, key: str, what: str) -> str:
    value = options.get(key)
    if not value:
        raise ValueError(f"simswap backend 'onnx' needs option '{key}' (path to the {what})")
    if not Path(value).is_file():
        raise FileNotFoundError(f"simswap backend 'onnx': {key} not found: {value}")
    return str(value)


@register_method("simswap")
class SimSwapOnnx(ForgeryMethod):
    backend = "onnx"
    kept = "target"
    needs_target = True
    defaults = {
        "swapper_path": None,  # inswapper_128-style model: (target image, identity)
        "arcface_path": None,  # ArcFace identity encoder, 112x112 input
        "arcface_mean": 127.5,
        "arcface_std": 127.5,
        "latent_map": "auto",  # "auto", "none", or a .npy path
        "providers": None,  # onnxruntime providers; default CUDA if present, else CPU
        "threads": 1,
    }

    def __init__(self, **options):
        super().__init__(**options)
        swapper = _model_path(self.options, "swapper_path", "inswapper_128-style swapper model")
        arcface = _model_path(self.options, "arcface_path", "ArcFace identity model")
        self.swapper = _session(swapper, self.options["providers"], self.options["threads"])
        self.arcface = _session(arcface, self.options["providers"], self.options["threads"])
        inputs = self.swapper.get_inputs()
        image_in = [i for i in inputs if len(i.shape) == 4]
        latent_in = [i for i in inputs if len(i.shape) == 2]
        if len(image_in) != 1 or len(latent_in) != 1:
            raise ValueError(
                f"swapper {swapper} must take one image (Nx3xHxW) and one latent "
                f"(NxD) input, has {[(i.name, i.shape) for i in inputs]}"
            )
        self.image_name, self.latent_name = image_in[0].name, latent_in[0].name
        self.size = _static(image_in[0].shape[2], 128)
        self.dim = _static(latent_in[0].shape[1], 512)
        self.arc_in = self.arcface.get_inputs()[0]
        self.arc_size = _static(self.arc_in.shape[2], 112)
        self.emap = _latent_map(swapper, self.dim, self.options["latent_map"])

    def identity(self, img: np.ndarray, lm: np.ndarray) -> np.ndarray:
        mat = similarity_transform(five_points(lm), arcface_template(self.arc_size))
        crop = cv2.warpAffine(
            img, mat, (self.arc_size, self.arc_size), borderMode=cv2.BORDER_REFLECT
        )
        blob = (crop.astype(np.float32) - self.options["arcface_mean"]) / self.options[
            "arcface_std"
        ]
        emb = self.arcface.run(None, {self.arc_in.name: blob.transpose(2, 0, 1)[None]})[0]
        emb = np.asarray(emb, np.float32).reshape(-1)
        if emb.size != self.dim:
            raise ValueError(f"ArcFace model gives {emb.size} values, swapper wants {self.dim}")
        emb /= max(float(np.linalg.norm(emb)), 1e-8)
        if self.emap is not None:
            emb = emb @ self.emap
            emb /= max(float(np.linalg.norm(emb)), 1e-8)
        return emb

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        h, w = target_img.shape[:2]
        latent = self.identity(source_img, source_lm)
        mat = similarity_transform(five_points(target_lm), arcface_template(self.size))
        aligned = cv2.warpAffine(
            target_img, mat, (self.size, self.size), borderMode=cv2.BORDER_REFLECT
        )
        blob = (aligned.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        out = self.swapper.run(
            None, {self.image_name: blob, self.latent_name: latent[None].astype(np.float32)}
        )[0]
        fake = (np.clip(np.asarray(out)[0].transpose(1, 2, 0), 0, 1) * 255 + 0.5).astype(np.uint8)
        inv = cv2.invertAffineTransform(mat)
        fake_full = cv2.warpAffine(fake, inv, (w, h), borderValue=0)
        alpha = paste_mask(inv, self.size, (h, w))
        if not (alpha > 0).any():
            raise ForgeryError("swapped face falls outside the crop")
        image, mask = composite(fake_full, target_img, alpha)
        return ForgeryResult(image, mask, {})


def _static(dim, default: int) -> int:
    return int(dim) if isinstance(dim, int) and dim > 0 else default


def paste_mask(inv: np.ndarray, size: int, shape: tuple[int, int]) -> np.ndarray:
    """insightface's paste-back weight: the aligned box warped back, eroded by a tenth of its
    size and blurred by a twentieth, so the swapped box edges never show."""
    h, w = shape
    white = cv2.warpAffine(np.full((size, size), 255, np.float32), inv, (w, h), borderValue=0.0)
    white[white > 20] = 255
    ys, xs = np.nonzero(white == 255)
    if len(ys) == 0:
        return np.zeros((h, w), np.float32)
    mask_size = int(np.sqrt((ys.max() - ys.min()) * (xs.max() - xs.min())))
    k = max(mask_size // 10, 3)
    white = cv2.erode(white, np.ones((k, k), np.uint8))
    k = max(mask_size // 20, 2)
    white = cv2.GaussianBlur(white, (2 * k + 1, 2 * k + 1), 0)
    return white / 255.0
