"""Learned backends (``backend: onnx``) for faceswap, fastreen, dualreen and maskgan.

The generators FairFD used cannot be downloaded here; a user who has (or exports) one gives
its ONNX file as the method's ``model_path`` option (``forgery.backends.<method>: onnx``,
``forgery.options.<method>.model_path``). Every model follows one contract, checked when it
is loaded (names and shapes of its inputs), so a wrong model fails with a clear error:

- every image input and the output are 1x3xSxS float32 RGB in [0, 1], S the model's static
  input size, the face aligned to the ArcFace 5-point template scaled to S (as insightface
  aligns for its swapper: :func:`~fairforge.forgery.simswap.arcface_template`);
- the output is the fake face in the *kept* face's aligned frame; it is warped back into the
  kept crop and blended with insightface's paste-back weight (the aligned square eroded by
  a tenth and blurred by a twentieth of its size), so the crop outside it is unchanged.

Inputs per method (each class's ``inputs``, in order, and ``kept_input``):

- ``faceswap``: ``source`` (the identity) and ``target`` (the face whose image is kept);
  output: the target's image with the source's face;
- ``fastreen``, ``dualreen``: ``source`` (the kept identity) and ``driver`` (the face whose
  head pose and expression the output takes); output: the source re-posed;
- ``maskgan``: ``image`` (the face to edit) and ``parsing``, 1x1xSxS float32 part labels
  (0 background, then :data:`~fairforge.forgery.parsing.PARTS` from 1) after the edit: the
  parts of a random non-empty subset of nose, eyes, brows and lips each scaled about its
  centre by 1 ± U(0.15, 0.3); output: the face rendered with that layout.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from .base import (
    FORGERY_METHODS,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    composite,
    five_points,
    similarity_transform,
)
from .parsing import PARTS, face_region, part_components
from .simswap import arcface_template, model_path

EDITABLE = ("nose", "eyes", "brows", "upper_lip", "lower_lip")


def onnx_session(path: str, providers, threads: int):
    import onnxruntime as ort  # optional dependency

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    available = ort.get_available_providers()
    wanted = providers or ["CUDAExecutionProvider", "CPUExecutionProvider"]
    use = [p for p in wanted if p in available] or ["CPUExecutionProvider"]
    return ort.InferenceSession(path, sess_options=opts, providers=use)


def paste_weight(inv: np.ndarray, size: int, shape: tuple[int, int]) -> np.ndarray:
    """insightface's paste-back weight: the aligned square warped back, eroded by a tenth of
    its size and blurred by a twentieth, so the square's edges never show."""
    h, w = shape
    white = cv2.warpAffine(np.full((size, size), 255, np.float32), inv, (w, h), borderValue=0.0)
    white[white > 20] = 255
    ys, xs = np.nonzero(white == 255)
    if len(ys) == 0:
        return np.zeros((h, w), np.float32)
    side = int(np.sqrt((ys.max() - ys.min()) * (xs.max() - xs.min())))
    k = max(side // 10, 3)
    white = cv2.erode(white, np.ones((k, k), np.uint8))
    k = max(side // 20, 2)
    white = cv2.GaussianBlur(white, (2 * k + 1, 2 * k + 1), 0)
    return white / 255.0


def edited_parsing(lm: np.ndarray, mat: np.ndarray, size: int, rng) -> tuple[np.ndarray, list]:
    """The 1x1xSxS label map of the face's parts in the aligned frame after a random edit."""
    lm = np.asarray(lm, np.float64) @ mat[:, :2].T + mat[:, 2]
    labels = np.zeros((size, size), np.float32)
    region = face_region(lm, (size, size))
    labels[region > 0] = 1 + PARTS.index("skin")
    k = int(rng.integers(1, len(EDITABLE) + 1))
    edited = sorted(rng.choice(len(EDITABLE), size=k, replace=False).tolist())
    chosen = [EDITABLE[i] for i in edited]
    for name, polys in part_components(lm).items():
        factor = 1.0
        if name in chosen:
            factor = 1.0 + rng.choice([-1.0, 1.0]) * rng.uniform(0.15, 0.3)
        for poly in polys:
            centre = poly.mean(0)
            pts = np.round((centre + (poly - centre) * factor) * 16).astype(np.int32)
            m = np.zeros((size, size), np.uint8)
            cv2.fillPoly(m, [pts], 1, cv2.LINE_8, 4)
            labels[m > 0] = 1 + PARTS.index(name)
    return labels[None, None], chosen


class _OnnxMethod(ForgeryMethod):
    backend = "onnx"
    #: the model's input names, in order, and which of them is the face whose image is kept
    inputs: tuple[str, ...] = ()
    kept_input: str = ""
    defaults = {
        "model_path": None,  # the ONNX model (contract in fairforge.forgery.learned)
        "providers": None,  # onnxruntime providers; default CUDA if present, else CPU
        "threads": 1,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        path = model_path(self.name, self.options, "model_path", f"{self.name} ONNX model")
        self.session = onnx_session(path, self.options["providers"], self.options["threads"])
        names = self.inputs
        inputs = {i.name: i for i in self.session.get_inputs()}
        if set(inputs) != set(names) or len(self.session.get_outputs()) != 1:
            raise ValueError(
                f"{self.name} backend 'onnx': {path} must take inputs {list(names)} and give "
                f"one output; it takes {sorted(inputs)}"
            )
        size = inputs[names[0]].shape[2]
        if not isinstance(size, int) or size < 16:
            raise ValueError(f"{self.name} backend 'onnx': {path} needs a static input size")
        for name in names:
            want = [1, 1 if name == "parsing" else 3, size, size]
            if list(inputs[name].shape) != want:
                raise ValueError(
                    f"{self.name} backend 'onnx': input {name!r} of {path} has shape "
                    f"{inputs[name].shape}, expected {want}"
                )
        self.names, self.size = names, size

    def _align(self, img: np.ndarray, lm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mat = similarity_transform(five_points(lm), arcface_template(self.size))
        crop = cv2.warpAffine(img, mat, (self.size, self.size), borderMode=cv2.BORDER_REFLECT)
        return (crop.astype(np.float32) / 255.0).transpose(2, 0, 1)[None], mat

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        faces = {"source": (source_img, source_lm), "target": (target_img, target_lm)}
        faces["driver"], faces["image"] = faces["target"], faces["source"]
        kept_img, kept_lm = faces[self.kept_input]
        feeds, extra = {}, {}
        for name in self.names:
            if name == "parsing":
                _, mat = self._align(kept_img, kept_lm)
                feeds[name], extra["parts"] = edited_parsing(kept_lm, mat, self.size, rng)
            else:
                feeds[name], mat = self._align(*faces[name])
                if name == self.kept_input:
                    kept_mat = mat
        out = np.asarray(self.session.run(None, feeds)[0], np.float32)
        if out.shape != (1, 3, self.size, self.size):
            raise ForgeryError(f"{self.name} model gave shape {out.shape}")
        fake = (np.clip(out[0].transpose(1, 2, 0), 0, 1) * 255 + 0.5).astype(np.uint8)
        h, w = kept_img.shape[:2]
        inv = cv2.invertAffineTransform(kept_mat)
        full = cv2.warpAffine(fake, inv, (w, h), borderValue=0)
        alpha = paste_weight(inv, self.size, (h, w))
        if not (alpha > 0).any():
            raise ForgeryError("generated face falls outside the crop")
        image, mask = composite(full, kept_img, alpha)
        return ForgeryResult(image, mask, extra)


@FORGERY_METHODS.register("faceswap/onnx")
class FaceSwapOnnx(_OnnxMethod):
    kept = "target"
    inputs, kept_input = ("source", "target"), "target"
    needs_target = True


@FORGERY_METHODS.register("fastreen/onnx")
class FastReenactmentOnnx(_OnnxMethod):
    kept = "source"
    inputs, kept_input = ("source", "driver"), "source"
    needs_target = True


@FORGERY_METHODS.register("dualreen/onnx")
class DualReenactmentOnnx(_OnnxMethod):
    kept = "source"
    inputs, kept_input = ("source", "driver"), "source"
    needs_target = True


@FORGERY_METHODS.register("maskgan/onnx")
class MaskGANOnnx(_OnnxMethod):
    kept = "source"
    inputs, kept_input = ("image", "parsing"), "image"
    needs_target = False
    random = True
