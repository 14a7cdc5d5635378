"""Learned identity swap (SimSwap in FairFD), with a learning-free stand-in.

``backend="onnx"`` runs a user-provided swapper with the ``inswapper_128`` signature: the
target face aligned to the ArcFace 5-point template at 128x128, as a 1x3x128x128 float RGB
tensor in [0, 1], plus a 1x512 identity vector computed from the source face by an ArcFace
ONNX model (112x112 input, (x - 127.5) / 127.5). As in insightface, the identity embedding
is normalised, multiplied by the swapper's latent map (the last initializer of the graph
when it is a square matrix of the embedding size) and normalised again. The swapped face is
pasted back with an eroded, blurred box mask.

``backend="classical"`` is a learning-free stand-in that differs from ``faceswap`` in
mechanism: the *whole inner face* (chin to lower forehead) of the source is carried onto
the target geometry by one smooth thin-plate-spline warp (not per-triangle affines), its
colour and texture are matched to the target band by band on a Laplacian pyramid (a
frequency-domain match: per-band contrast, and mean and contrast of the coarsest band, in
LAB), and it is Poisson-blended (cv2.seamlessClone) into the target. It does not learn an
identity representation; reports should call it a stand-in.
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
    five_points,
    interocular,
    poisson_clone,
    polygon_mask,
    register_method,
    similarity_transform,
)
from .parsing import face_region
from .warp import identity_grid, remap, tps_displacement

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


def laplacian_pyramid(img: np.ndarray, levels: int) -> list[np.ndarray]:
    bands, cur = [], img
    for _ in range(levels):
        down = cv2.pyrDown(cur)
        up = cv2.pyrUp(down, dstsize=(cur.shape[1], cur.shape[0]))
        bands.append(cur - up)
        cur = down
    bands.append(cur)
    return bands


def collapse_pyramid(bands: list[np.ndarray]) -> np.ndarray:
    cur = bands[-1]
    for band in reversed(bands[:-1]):
        cur = cv2.pyrUp(cur, dstsize=(band.shape[1], band.shape[0])) + band
    return cur


def match_bands(img: np.ndarray, ref: np.ndarray, mask: np.ndarray, levels: int = 4) -> np.ndarray:
    """Match ``img`` to ``ref`` inside ``mask``, band by band, in LAB (uint8 RGB in and out)."""
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB).astype(np.float32)
    ref_lab = cv2.cvtColor(ref, cv2.COLOR_RGB2LAB).astype(np.float32)
    bands, ref_bands = laplacian_pyramid(lab, levels), laplacian_pyramid(ref_lab, levels)
    m = (mask > 0).astype(np.float32)
    out = []
    for i, (b, rb) in enumerate(zip(bands, ref_bands)):
        sel = cv2.resize(m, (b.shape[1], b.shape[0]), interpolation=cv2.INTER_AREA) > 0.5
        if sel.sum() < 4:
            out.append(b)
            continue
        sd, rsd = b[sel].std(0) + 1e-3, rb[sel].std(0) + 1e-3
        gain = np.clip(rsd / sd, 0.5, 2.0)
        if i < levels:  # detail band: contrast only, it has zero mean
            out.append(b * gain)
        else:  # coarsest band: colour (mean) and contrast
            out.append((b - b[sel].mean(0)) * gain + rb[sel].mean(0))
    res = collapse_pyramid(out)
    return cv2.cvtColor(np.clip(res + 0.5, 0, 255).astype(np.uint8), cv2.COLOR_LAB2RGB)


@register_method("simswap")
class SimSwapClassical(ForgeryMethod):
    backend = "classical"
    kept = "target"
    needs_target = True
    defaults = {
        "forehead": 0.3,  # how far above the brows the inner face reaches, IOD units
        "shrink": 0.94,  # inner-face polygon scale about its centre (keeps off the jaw)
        "levels": 4,  # Laplacian pyramid levels for the colour/texture match
    }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = target_img.shape
        disp = tps_displacement(target_lm, source_lm, np.zeros((0, 2)), shape, step=4)
        xs, ys = identity_grid(shape)
        warped = remap(source_img, xs + disp[..., 0], ys + disp[..., 1])
        region = face_region(target_lm, shape, lift=float(self.options["forehead"]))
        pts = np.argwhere(region > 0)[:, ::-1].astype(np.float64)
        if len(pts) < 16:
            raise ForgeryError("inner face region is empty")
        cnt, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
        poly = max(cnt, key=cv2.contourArea).reshape(-1, 2).astype(np.float64)
        centre = pts.mean(0)
        region = polygon_mask(
            centre + (poly - centre) * float(self.options["shrink"]), shape, convex=False
        )
        inner = np.where((region > 0)[..., None], warped, target_img)
        matched = match_bands(inner, target_img, region, int(self.options["levels"]))
        region = erode(region, max(int(round(0.03 * interocular(target_lm))), 1))
        cloned = poisson_clone(matched, target_img, region)
        image, mask = composite(cloned, target_img, (region > 0).astype(np.float32))
        return ForgeryResult(image, mask, {})


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
