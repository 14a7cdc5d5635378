"""SimSwap from its authors' release (``backend: official``): their generator and identity
encoder, their alignment and their paste-back (FairFD §3.4's SimSwap [22]).

Release (neuralchen/SimSwap, ``docs/guidance/preparation.md``; :data:`RELEASE`):

- ``generator_path``: the generator's state dict, ``checkpoints/people/latest_net_G.pth``
  from ``checkpoints.zip`` (release 1.0) for ``crop_size: 224``, or
  ``checkpoints/512/550000_net_G.pth`` from ``512.zip`` (release 512_beta) for
  ``crop_size: 512``; read as published.
- ``arcface_path``: the identity encoder, ``arcface_model/arcface_checkpoint.tar`` (release
  1.0), a whole pickled model: convert it once to a state dict with
  ``python -m fairforge convert-release simswap-arcface arcface_checkpoint.tar arcface.pth``
  (:func:`fairforge.forgery.nets.arcface.convert_release`; no SimSwap code needed), or, where
  SimSwap's code is importable, ``torch.save(torch.load(IN).state_dict(), OUT)``.

What runs is SimSwap's whole-image inference (``test_wholeimage_swapsingle.py``) on the
crops fairforge gives, with the source as the identity image and the target as the image
kept:

1. alignment (``insightface_func``'s ``Face_detect_crop.get`` and ``estimate_norm``): a
   similarity from the face's five points to SimSwap's template, warped with black borders to
   ``crop_size``; at 224 the best fitting of the five yaw templates of its ``newarc`` set
   (:data:`NEWARC_112`), at 512 the FFHQ template (:data:`FFHQ_512`);
2. identity: the source's aligned crop in [0, 1], normalised by ImageNet's mean and std,
   sampled to 112 px (nearest, as ``F.interpolate``'s default), through ArcFace, then
   L2-normalised;
3. the generator on the target's aligned crop in [0, 1] and that identity;
4. paste-back (``util/reverse2original.py``, ``reverse2wholeimage`` without ``use_mask``):
   the swapped face warped back by the authors' inverse of the alignment, blended through
   the aligned square warped back, thresholded at 20, eroded by a 40×40 square and blurred
   by a 41×41 Gaussian (``paste_erode``, ``paste_blur``), in float64, truncated to uint8.

Differences from the authors' run, and why:

- the five points are the crop's 68 landmarks' (eye centres, nose tip, mouth corners: those
  every fairforge method aligns on), not the keypoints of insightface's SCRFD detector
  (``antelope``'s ``scrfd_10g_bnkps.onnx``), which SimSwap detects in the whole photo;
- the "whole image" is fairforge's aligned crop, so the paste-back's fixed 40-px erosion
  and 41-px blur (the authors' constants, in pixels of the photo) take a larger share of a
  face in a small crop: the 224 template's square spans about 95 px of a 128-px crop of
  scikit-image's astronaut, the erosion leaves 55 and the blur a fully swapped centre of
  18 px (at 256 px: 189, 149 and 113 px); ``faces.crop_size`` 256 or more keeps the
  authors' proportions, ``paste_erode`` and ``paste_blur`` rescale them;
- ``use_mask`` (the face-parsing mask of ``79999_iter.pth``, BiSeNet) is left out: the
  paste-back is the authors' square blend, their behaviour without ``--use_mask``;
- no watermark (``--no_simswaplogo``).

The manifest's mask is the blend's support (every pixel whose weight is above 0); outside it
the target's pixels are kept bit for bit. ``tests/unit/test_simswap_official.py`` shows the
networks equal to a re-statement of the authors' modules (``tests/helpers/simswap_reference.py``) to
1e-5, and the whole path equal to their inference path on a photograph, both on random
weights saved in the release's layout.
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
    five_points,
)
from .releases import ReleaseFile

RELEASE = "github.com/neuralchen/SimSwap, docs/guidance/preparation.md"
RELEASES = {
    224: "https://github.com/neuralchen/SimSwap/releases/download/1.0/checkpoints.zip",
    512: "https://github.com/neuralchen/SimSwap/releases/download/512_beta/512.zip",
}
ARCFACE_RELEASE = (
    "https://github.com/neuralchen/SimSwap/releases/download/1.0/arcface_checkpoint.tar"
)

# SimSwap's alignment templates (insightface_func/utils/face_align_ffhqandnewarc.py): five
# templates for 112 px from a left profile to a right one (float32, as the authors keep
# them), used by the 224 model; FFHQ's at 512 px, used by the 512 model.
NEWARC_112 = np.array(
    [
        [[51.642, 50.115], [57.617, 49.990], [35.740, 69.007], [51.157, 89.050], [57.025, 89.702]],
        [[45.031, 50.118], [65.568, 50.872], [39.677, 68.111], [45.177, 86.190], [64.246, 86.758]],
        [[39.730, 51.138], [72.270, 51.138], [56.000, 68.493], [42.463, 87.010], [69.537, 87.010]],
        [[46.845, 50.872], [67.382, 50.118], [72.737, 68.111], [48.167, 86.758], [67.236, 86.190]],
        [[54.796, 49.990], [60.771, 50.115], [76.673, 69.007], [55.388, 89.702], [61.257, 89.050]],
    ],
    np.float32,
)
FFHQ_512 = np.array(
    [
        [192.98138, 239.94708],
        [318.90277, 240.1936],
        [256.63416, 314.01935],
        [201.26117, 371.41043],
        [313.08905, 371.15118],
    ]
)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
ARCFACE_SIZE = 112


def templates(crop_size: int) -> np.ndarray:
    """SimSwap's candidate templates for a ``crop_size`` crop, ``(T, 5, 2)``."""
    if crop_size == 512:
        return FFHQ_512[None] * crop_size / 512
    return NEWARC_112 * crop_size / 112


def estimate_norm(points: np.ndarray, crop_size: int) -> np.ndarray:
    """SimSwap's alignment: the 2×3 similarity of the five points onto the template (of
    :func:`templates`) it fits with the least summed point distance (the first on a tie).

    The similarity is scikit-image's Umeyama fit, as the authors estimate it, on the same
    float32 points and templates: its precision is theirs, so the crop is theirs pixel for
    pixel (a float64 fit moves the matrix by about 1e-5)."""
    from skimage.transform import SimilarityTransform  # the planner does not load skimage

    points = np.asarray(points, np.float32)
    homogeneous = np.insert(points, 2, values=np.ones(5), axis=1)
    best, best_error = None, float("inf")
    for template in templates(crop_size):
        fit = SimilarityTransform.from_estimate(points, template)
        if not fit:
            raise ForgeryError(f"simswap: no similarity fits the five points ({fit})")
        mat = fit.params[0:2, :]
        error = np.sum(np.sqrt(np.sum((homogeneous @ mat.T - template) ** 2, axis=1)))
        if error < best_error:
            best, best_error = mat, error
    return best


def invert_alignment(mat: np.ndarray) -> np.ndarray:
    """The inverse of a 2×3 affine as ``reverse2wholeimage`` computes it (term for term, so
    the warp back is the authors' to the last bit)."""
    (a, b, c), (d, e, f) = np.asarray(mat, np.float64)
    div1 = a * e - b * d
    div2 = b * d - a * e
    return np.array(
        [
            [e / div1, -b / div1, -(c * e - b * f) / div1],
            [d / div2, -a / div2, -(c * d - a * f) / div2],
        ]
    )


def paste_back(
    swapped: np.ndarray, mat: np.ndarray, kept: np.ndarray, erode: int = 40, blur: int = 20
) -> tuple[np.ndarray, np.ndarray]:
    """``reverse2wholeimage`` without the parsing mask: the swapped face (``(S, S, 3)``
    float32 RGB in [0, 1]) warped back into ``kept`` (uint8 RGB) through the eroded and
    blurred aligned square; returns the uint8 image and the blend weight (float64, H×W)."""
    size = swapped.shape[0]
    h, w = kept.shape[:2]
    inverse = invert_alignment(mat)
    face = cv2.warpAffine(np.ascontiguousarray(swapped), inverse, (w, h))
    weight = cv2.warpAffine(np.full((size, size), 255, dtype=float), inverse, (w, h))
    weight[weight > 20] = 255
    if erode > 0:
        weight = cv2.erode(weight, np.ones((erode, erode), np.uint8), iterations=1)
    if blur > 0:
        weight = cv2.GaussianBlur(weight, (2 * blur + 1, 2 * blur + 1), 0)
    weight = (weight / 255)[..., None]
    blended = weight * (np.array(face, dtype=float) * 255) + (1 - weight) * np.array(
        kept, dtype=float
    )
    return blended.astype(np.uint8), weight[..., 0]


@FORGERY_METHODS.register("simswap/official")
class SimSwapOfficial(ForgeryMethod):
    """SimSwap's released generator and ArcFace with its alignment and paste-back (module
    docstring: the files, the conversion of the ArcFace file, the differences)."""

    kept = "target"
    needs_target = True
    release_files = (
        ReleaseFile(
            "generator_path",
            "latest_net_G.pth (checkpoints/people/, crop_size 224) or 550000_net_G.pth "
            "(checkpoints/512/, crop_size 512)",
            f"{RELEASES[224]} or {RELEASES[512]} ({RELEASE})",
            "SimSwap's generator",
        ),
        ReleaseFile(
            "arcface_path",
            "arcface_checkpoint.tar converted to a state dict (python -m fairforge "
            "convert-release simswap-arcface IN OUT)",
            f"{ARCFACE_RELEASE} ({RELEASE})",
            "SimSwap's ArcFace identity encoder",
        ),
    )
    defaults = {
        "generator_path": None,  # latest_net_G.pth (224) or 550000_net_G.pth (512)
        "arcface_path": None,  # arcface_checkpoint.tar as a state dict
        "crop_size": 224,  # the release: 224 (people) or 512 (512 beta)
        "device": "cpu",  # or "cuda"
        "threads": 1,  # torch threads on the CPU (a job's share of the cores)
        "batch": 8,  # faces per forward pass in forge_batch
        "paste_erode": 40,  # side of the paste-back's square erosion, pixels (authors': 40)
        "paste_blur": 20,  # the paste-back's Gaussian is 2 * this + 1 wide (authors': 20)
    }

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, str]:
        size = options.get("crop_size", cls.defaults["crop_size"])
        if size not in RELEASES:
            raise ValueError(
                f"simswap backend 'official': crop_size {size!r}; SimSwap is released at "
                f"{sorted(RELEASES)} px"
            )
        return super().check_options(options)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        files = self.check_options(self.options)
        import torch

        from fairforge.checkpoints import load_exact, read_state_dict

        from .nets.arcface import SimSwapArcFace
        from .nets.simswap import SimSwapGenerator

        self.size = int(self.options["crop_size"])
        self.device = torch.device(self.options["device"])
        if self.device.type == "cpu" and self.options["threads"]:
            torch.set_num_threads(int(self.options["threads"]))
        what = f"simswap generator ({files['generator_path']})"
        state = read_state_dict(files["generator_path"], what)
        top = state.get("first_layer.1.weight")
        if top is not None and top.shape[0] != (64 if self.size == 224 else 32):
            other = 512 if self.size == 224 else 224
            raise ValueError(
                f"{what} is the {other} px release's generator; set "
                f"forgery.options.simswap.crop_size: {other}"
            )
        self.generator = SimSwapGenerator.for_state(state, self.size)
        load_exact(self.generator, state, what)
        what = f"simswap ArcFace ({files['arcface_path']})"
        state = read_state_dict(files["arcface_path"], what)
        self.arcface = SimSwapArcFace.for_state(state)
        load_exact(self.arcface, state, what)
        self.generator.eval().to(self.device)
        self.arcface.eval().to(self.device)
        self._torch = torch
        self._mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
        self._std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def align(self, img: np.ndarray, lm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The face's SimSwap crop (uint8 RGB, ``crop_size``) and its 2×3 alignment."""
        mat = estimate_norm(five_points(lm), self.size)
        return cv2.warpAffine(img, mat, (self.size, self.size), borderValue=0.0), mat

    def _tensor(self, crop: np.ndarray):
        return self._torch.from_numpy(np.ascontiguousarray(crop)).permute(2, 0, 1).float().div(255)

    def swap(self, sources: list[np.ndarray], targets: list[np.ndarray]) -> np.ndarray:
        """Aligned source and target crops → the swapped faces, ``(N, S, S, 3)`` float32 RGB
        in [0, 1]: identity, then generator, ``batch`` faces per pass."""
        torch, out = self._torch, []
        step = max(int(self.options["batch"]), 1)
        with torch.inference_mode():
            for i in range(0, len(targets), step):
                ids = torch.stack(
                    [(self._tensor(s) - self._mean) / self._std for s in sources[i : i + step]]
                )
                ids = torch.nn.functional.interpolate(ids, size=(ARCFACE_SIZE, ARCFACE_SIZE))
                latent = torch.nn.functional.normalize(
                    self.arcface(ids.to(self.device)), p=2, dim=1
                )
                att = torch.stack([self._tensor(t) for t in targets[i : i + step]]).to(self.device)
                out.append(self.generator(att, latent).permute(0, 2, 3, 1).float().cpu().numpy())
        return np.concatenate(out)

    def forge_batch(self, items) -> list[ForgeryResult]:
        """Forge ``(source_img, source_lm, target_img, target_lm)`` items with one network pass
        per ``batch`` faces (the benchmark's batch-wise path; a job forges one at a time, so a
        fake does not depend on which faces share its batch)."""
        aligned = [(self.align(s, sl)[0], *self.align(t, tl)) for s, sl, t, tl in items]
        swapped = self.swap([a[0] for a in aligned], [a[1] for a in aligned])
        return [
            self._result(face, mat, item[2])
            for face, (_, _, mat), item in zip(swapped, aligned, items)
        ]

    def _result(self, face: np.ndarray, mat: np.ndarray, target_img: np.ndarray) -> ForgeryResult:
        image, weight = paste_back(
            face, mat, target_img, int(self.options["paste_erode"]), int(self.options["paste_blur"])
        )
        if not (weight > 0).any():
            raise ForgeryError("simswap: the pasted face falls outside the crop")
        return ForgeryResult(image, (weight > 0).astype(np.uint8) * 255, {})

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        return self.forge_batch([(source_img, source_lm, target_img, target_lm)])[0]
