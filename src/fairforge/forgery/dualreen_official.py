"""DualReen with the authors' released networks (``forgery.backends.dualreen: official``).

FairFD §3.4 makes its "DualReen" fakes with reference [24], which the paper's reference list
(AAAI 2025 version of arXiv 2407.14367) gives as: Gee-Sern Hsu, Chun-Hung Tsai and Hung-Yi
Wu, "Dual-generator face reenactment", CVPR 2022, pages 642-650. Its release is
github.com/AvLab-CV/Dual_Generator_Face_Reenactment; its README ("Download Inference models")
publishes

- the main model, a zip on Google Drive (file id ``1gHK7NObVP1c1fVsVGdZe6t21CmmtarVS``)
  holding ``expr/checkpoints/501500_nets_ema.ckpt`` (the Reenacted Face Generator: a dict of
  the ``generator`` and ``style_encoder`` state dicts) and
  ``expr_lm/checkpoints/30000_nets_ema.ckpt`` (the ID-preserving Shape Generator: the
  ``linear_decoder`` and ``lm_linear_encoder`` state dicts, beside the ``linear_discriminator``
  and ``linear_classfier`` it also saves and fairforge does not use);
- the VGG-Face model ``vgg_face_dag.pth`` (Google Drive file id
  ``16b_84dT9wq-CEZrKeR5cvN39zGCC7np9``), a state dict in Albanie's layer names.

All three are plain state dicts, read with ``torch.load(weights_only=True)``; no conversion.
The options ``rfg_path``, ``idsg_path`` and ``vgg_path`` give their paths.

The pipeline is the release's ``demo.py``, per source-driver pair:

1. both crops are aligned the release's way (``get_arcface``): a similarity (scikit-image's
   ``SimilarityTransform``, as the release) of five points from the 68 landmarks (the
   midpoints of the eye corners 36/39 and 42/45, the nose tip 30, the mouth corners 48 and
   54) onto insightface's 112 px ArcFace template doubled and shifted right by 31.9721 px,
   warped to 256x256 with a black border;
2. the IDSG turns the driver's aligned landmarks (divided by 256) and the source's VGG-Face
   code (fc7 of the aligned source in [0, 1], normalised with the ImageNet mean and
   standard deviation, as the release does) into the target landmarks; the upper eyelid
   points 37, 38, 43, 44 are then set from the lower ones by the driver's lid vectors,
   scaled by the ratio of the left eyes' widths (``turn_eye``);
3. the target landmarks are drawn as white 2 px lines on black (``show_map``: a left or
   right profile drawing when the eye corners are within 30 px and the nose tip is beyond
   an eye, the whole face otherwise), in [0, 1];
4. the RFG generates the face from that drawing and the style code of the aligned source;
   its output in (0, 1) is truncated to 8 bits (``tensor_to_np``).

What fairforge adds, since the release stops at the aligned 256 px face: the face is warped
back into the source crop by the inverse similarity and composited through a feathered
region, the convex hull of the source's and the generated face's landmarks grown by
``margin`` inter-ocular distances; the crop outside it is unchanged.

Differences from the release, as far as the crop allows:

- landmarks: the release runs face-alignment's 2D FAN (``flip_input=True``) on the driver's
  frame; fairforge passes its configured 68 landmarks of the aligned crops. They are the
  same 68-point scheme; with ``faces.landmarks: fan`` they are the same network, without
  the flip averaging. The release never detects landmarks on the source (its demo sources
  are already cropped); fairforge aligns the source with the same transform as the driver;
- images are fairforge's aligned crops, not the original frames, so the 256 px alignment
  is taken from the crop and any part of the face outside the crop comes in black;
- ``demo.py`` casts the landmark drawing to bytes and back (``mul(255).byte()``,
  ``/255``); on the CUDA device it runs on the cast saturates, so the generator receives
  lines of 1.0 on 0, which is what fairforge feeds (and what the training loader reads).
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
    dilate,
    feather,
    interocular,
    polygon_mask,
)
from .releases import ReleaseFile

RELEASE = "github.com/AvLab-CV/Dual_Generator_Face_Reenactment (README, Download Inference models)"
SIZE = 256  # the release's image size

# insightface's 112 px ArcFace template, doubled and shifted right (demo.py, get_arcface)
TEMPLATE = np.array(
    [
        [30.2946 * 2, 51.6963 * 2],
        [65.5318 * 2, 51.5014 * 2],
        [48.0252 * 2, 71.7366 * 2],
        [33.5493 * 2, 92.3655 * 2],
        [62.7299 * 2, 92.2041 * 2],
    ],
    dtype=np.float32,
)
TEMPLATE[:, 0] += 31.9721


def _chain(first: int, last: int) -> list[tuple[int, int]]:
    """Segments first-(first+1), ..., (last-1)-last."""
    return [(n, n + 1) for n in range(first, last)]


# The line drawings of show_map, segments in the release's order and direction.
DRAW_RIGHT = (
    _chain(0, 12)
    + _chain(17, 21)
    + _chain(27, 30)
    + _chain(31, 33)
    + _chain(36, 41)
    + [(36, 41)]
    + _chain(48, 51)
    + [(51, 62)]
    + _chain(60, 62)
    + [(60, 67), (66, 67), (57, 66)]
    + _chain(57, 59)
    + [(48, 59)]
)
DRAW_LEFT = (
    _chain(4, 16)
    + _chain(22, 26)
    + _chain(27, 30)
    + _chain(33, 35)
    + _chain(42, 47)
    + [(42, 47)]
    + _chain(51, 57)
    + [(51, 62)]
    + _chain(62, 66)
    + [(66, 57)]
)
DRAW_FULL = (
    _chain(0, 16)
    + _chain(17, 21)
    + _chain(22, 26)
    + _chain(27, 30)
    + _chain(31, 35)
    + _chain(36, 41)
    + [(36, 41)]
    + _chain(42, 47)
    + [(42, 47)]
    + _chain(48, 59)
    + [(48, 59)]
    + _chain(60, 67)
    + [(60, 67)]
)


def release_points(lm: np.ndarray) -> np.ndarray:
    """The five alignment points the release derives from 68 landmarks (float32)."""
    lm = np.asarray(lm, np.float32)
    return np.stack([(lm[36] + lm[39]) / 2, (lm[42] + lm[45]) / 2, lm[30], lm[48], lm[54]]).astype(
        np.float32
    )


def align(img: np.ndarray, lm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(256 px aligned crop, 2x3 float64 matrix, landmarks in the crop as float32)."""
    from skimage.transform import SimilarityTransform

    tform = SimilarityTransform.from_estimate(release_points(lm), TEMPLATE)
    if not tform:
        raise ForgeryError("dualreen: the five alignment points are degenerate")
    mat = tform.params[:2]
    crop = cv2.warpAffine(img, mat, (SIZE, SIZE), borderValue=0.0)
    points = np.hstack([np.asarray(lm, np.float32), np.ones((len(lm), 1))])
    return crop, mat, (points @ mat.T).astype(np.float32)


def draw_landmarks(values: np.ndarray) -> np.ndarray:
    """show_map: 136 values in [0, 1] (float32) -> (256, 256) uint8 drawing, lines 255."""
    xy = np.asarray(values, np.float32).reshape(68, 2) * np.float32(SIZE)
    pts = np.trunc(xy).astype(np.int64)  # the release's int(float(...))
    x = pts[:, 0]
    if x[42] - x[36] <= 30 and x[30] > x[42]:
        edges = DRAW_RIGHT
    elif x[45] - x[39] <= 30 and x[30] < x[42]:
        edges = DRAW_LEFT
    else:
        edges = DRAW_FULL
    canvas = np.zeros((SIZE, SIZE), np.uint8)
    for a, b in edges:
        cv2.line(canvas, (int(pts[a, 0]), int(pts[a, 1])), (int(pts[b, 0]), int(pts[b, 1])), 255, 2)
    return canvas


def keep_driver_eyelids(fake, driver):
    """turn_eye: the upper lid points 37, 38, 43, 44 of ``fake`` (N, 136 torch) placed above
    the lower ones by the driver's lid vectors, scaled by the left eyes' width ratio."""

    def coord(t, point, axis):
        return t[:, 2 * point + axis : 2 * point + axis + 1]

    def width(t):
        dx = coord(t, 36, 0) - coord(t, 39, 0)
        dy = coord(t, 36, 1) - coord(t, 39, 1)
        return (dx**2 + dy**2) ** 0.5

    ratio = width(fake).abs() / width(driver).abs()
    out = fake.clone()
    for upper, lower in ((37, 41), (38, 40), (43, 47), (44, 46)):
        for axis in (0, 1):
            lid = coord(driver, upper, axis) - coord(driver, lower, axis)
            out[:, 2 * upper + axis] = (coord(fake, lower, axis) + lid * ratio)[:, 0]
    return out


@FORGERY_METHODS.register("dualreen/official")
class DualReenactmentOfficial(ForgeryMethod):
    """The Dual-Generator release (Hsu et al., CVPR 2022); see the module docstring."""

    kept = "source"
    needs_target = True
    release_files = (
        ReleaseFile(
            "rfg_path",
            "501500_nets_ema.ckpt",
            RELEASE,
            "the Reenacted Face Generator (expr/checkpoints in the main model zip)",
        ),
        ReleaseFile(
            "idsg_path",
            "30000_nets_ema.ckpt",
            RELEASE,
            "the ID-preserving Shape Generator (expr_lm/checkpoints in the main model zip)",
        ),
        ReleaseFile("vgg_path", "vgg_face_dag.pth", RELEASE, "the VGG-Face model"),
    )
    defaults = {
        "rfg_path": None,
        "idsg_path": None,
        "vgg_path": None,
        "device": "cpu",  # or "cuda"
        "margin": 0.15,  # growth of the pasted face region, inter-ocular distances
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        paths = self.check_options(self.options)
        import torch

        from fairforge.checkpoints import (
            CheckpointMismatch,
            listing,
            read_state_dict,
            unwrap_state,
        )

        from .nets import load_released
        from .nets.dual_generator import Generator, LandmarkEncoder, ShapeDecoder, StyleEncoder
        from .nets.vgg_face import VGGFace

        self.torch = torch
        self.device = torch.device(self.options["device"])
        device = self.options["device"]
        released = {f.option: f.filename for f in self.release_files}

        def read(option: str) -> dict:
            return read_state_dict(
                paths[option], f"dualreen {option} ({released[option]})", containers=()
            )

        def part(option: str, file: dict, entry: str, build):
            what = f"dualreen: '{entry}' of {option} ({paths[option]})"
            if not isinstance(file.get(entry), dict):
                raise CheckpointMismatch(
                    f"{what}: the file has no '{entry}' state dict (its entries: "
                    f"{listing(file, 6)}); expected the release's {released[option]}"
                )
            return load_released(build, unwrap_state(file[entry], ()), what, device)

        # smallest file first, so that a wrong one stops the build early
        idsg = read("idsg_path")
        self.landmark_encoder = part("idsg_path", idsg, "lm_linear_encoder", LandmarkEncoder)
        self.shape_decoder = part("idsg_path", idsg, "linear_decoder", ShapeDecoder)
        rfg = read("rfg_path")
        self.generator = part("rfg_path", rfg, "generator", Generator)
        self.style_encoder = part("rfg_path", rfg, "style_encoder", StyleEncoder)
        del rfg
        what = f"dualreen: VGG-Face of vgg_path ({paths['vgg_path']})"
        self.vgg = load_released(VGGFace, read("vgg_path"), what, device)
        self.imagenet = (
            torch.tensor([0.485, 0.456, 0.406], device=self.device).view(1, 3, 1, 1),
            torch.tensor([0.229, 0.224, 0.225], device=self.device).view(1, 3, 1, 1),
        )

    def _tensor(self, img: np.ndarray):
        """uint8 HxWx3 RGB -> (1, 3, H, W) float in [0, 1] (the release's toTensor)."""
        t = self.torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))
        return t.float().div(255).unsqueeze(0).to(self.device)

    def generate(self, source_img, source_lm, target_img, target_lm) -> dict:
        """The release's networks on one pair: the aligned source, the matrix that aligned
        it, the target landmarks (136 values), their drawing and the generated face
        ((1, 3, 256, 256) in (0, 1))."""
        torch = self.torch
        source_crop, source_mat, _ = align(source_img, source_lm)
        _, _, driver_lm = align(target_img, target_lm)
        driver = torch.from_numpy(driver_lm.reshape(1, -1) / np.float32(SIZE)).to(self.device)
        source = self._tensor(source_crop)
        with torch.no_grad():
            mean, std = self.imagenet
            id_code = self.vgg((source - mean) / std)
            shape = self.shape_decoder(self.landmark_encoder(driver), id_code)
            shape = keep_driver_eyelids(shape, driver)
            values = shape[0].cpu().numpy()
            if not np.isfinite(values).all():
                raise ForgeryError("dualreen: the shape generator gave non-finite landmarks")
            drawing = draw_landmarks(values)
            lines = torch.from_numpy(np.repeat(drawing[None], 3, 0)).float().div(255)
            face = self.generator(lines[None].to(self.device), self.style_encoder(source))
        if not torch.isfinite(face).all():
            raise ForgeryError("dualreen: the face generator gave non-finite pixels")
        return {
            "source_crop": source_crop,
            "matrix": source_mat,
            "landmarks": values,
            "drawing": drawing,
            "face": face,
        }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        out = self.generate(source_img, source_lm, target_img, target_lm)
        face = out["face"][0].mul(255).byte().permute(1, 2, 0).cpu().numpy()  # truncating
        h, w = source_img.shape[:2]
        inv = cv2.invertAffineTransform(out["matrix"])
        back = cv2.warpAffine(face, inv, (w, h), borderValue=0.0)
        inside = cv2.warpAffine(np.full((SIZE, SIZE), 255, np.uint8), inv, (w, h)) == 255
        made = out["landmarks"].reshape(68, 2).astype(np.float64) * SIZE
        made = made @ inv[:, :2].T + inv[:, 2]
        region = polygon_mask(np.concatenate([made, source_lm]), source_img.shape)
        grow = max(int(round(float(self.options["margin"]) * interocular(source_lm))), 1)
        alpha = feather(dilate(region, grow), grow)
        alpha[~cv2.erode(inside.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)] = 0
        if not (alpha > 0).any():
            raise ForgeryError("dualreen: the generated face falls outside the crop")
        image, mask = composite(back, source_img, alpha)
        return ForgeryResult(image, mask)
