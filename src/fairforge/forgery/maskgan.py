"""Attribute manipulation as FairFD automates MaskGAN (FairFD §3.4), with a classical renderer.

MaskGAN edits a face by editing its semantic parsing map (CelebAMask-HQ's classes) and
rendering the edited map with a generator. FairFD automates the edit: "we randomly select a
subset from the nose, glasses, left eye, right eye, left eyebrow, right eyebrow, left ear,
right ear, mouth, upper lip, and lower lip. We then apply random dilate and erode operations
to the selected parts, enlarging or reducing the chosen regions. Missing parts are filled
with skin." :func:`fairfd_edit` is that edit, on a map in
:data:`~fairforge.forgery.parsing.CELEBAMASK_LABELS`; this module's method and the
``official`` backend (:mod:`fairforge.forgery.maskgan_official`, the authors' generator)
both call it, so the two differ only in the renderer.

The edit (the choices the paper leaves open are fixed here):

- candidates: the listed parts (:data:`FAIRFD_PARTS`, or the ``parts`` option) that the map
  holds with at least ``(0.1 IOD)²`` pixels (12 at least; IOD: the inter-ocular distance);
- subset: each candidate with probability 1/2, one drawn uniformly if none was;
- each chosen part is dilated or eroded (1/2 each) by a disk of radius
  ``U(radius) x IOD`` pixels (rounded, at least 1), drawn from the pair's seeded generator;
- the pixels an eroded part loses become skin (erosions are applied first); a dilated part
  then grows over the pixels of any class but the other edited parts (what an erosion gave
  to skin included) and hair, hat, earrings, neck and cloth; only the ears grow into the
  background.

The classical renderer (:func:`render_edit`) stands in for MaskGAN's generator (FairFD [25],
Lee et al., CVPR 2020): it turns the edited map into an image without a generator: every edited part's old and new region (:func:`edited_region`) is filled from
the pixels around it, mostly skin (OpenCV's Telea inpainting), and the part's own pixels are
stretched, about the centre of its bounding box, from its old bounding box onto its new one
and drawn over the new region. Pixels outside that region are the source's, bit for bit, so
the change stays inside the union of the chosen parts dilated by their radii. The map comes
from the 68 landmarks
(:func:`~fairforge.forgery.parsing.label_map`: nose, eyes, brows, mouth and lips; no
glasses or ears) or, with ``parser_path``, from the released BiSeNet face parser
(:mod:`fairforge.forgery.nets.bisenet`), run on the crop at its 512 x 512 and brought back to
the crop's size by nearest neighbour.

Simplifications: the renderer moves and inpaints the source's pixels where MaskGAN
synthesises them, so a part grows with its own texture stretched and a part eroded away
leaves smooth skin.
"""

from __future__ import annotations

from dataclasses import replace
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
    erode,
    feather,
    interocular,
)
from .parsing import CELEBAMASK_LABELS, label_map
from .releases import ReleaseFile

# FairFD §3.4's parts ("nose, glasses, left eye, right eye, left eyebrow, right eyebrow, left
# ear, right ear, mouth, upper lip, and lower lip"): CelebAMask-HQ's classes nose to l_lip
FAIRFD_PARTS = CELEBAMASK_LABELS[
    CELEBAMASK_LABELS.index("nose") : CELEBAMASK_LABELS.index("l_lip") + 1
]
RADIUS = (0.02, 0.08)  # dilate/erode radius, inter-ocular distances
# What a growing part never covers
KEEP = ("hair", "hat", "ear_r", "neck_l", "neck", "cloth")
GROW_INTO_BACKGROUND = ("l_ear", "r_ear")
SKIN = CELEBAMASK_LABELS.index("skin")
BACKGROUND = CELEBAMASK_LABELS.index("background")

FACE_PARSER = ReleaseFile(
    "parser_path",
    "79999_iter.pth",
    "https://github.com/zllrunning/face-parsing.PyTorch (README: 'our pre-trained model', "
    "https://drive.google.com/open?id=154JgKpzCPW82qINcVieuPH3fZ2e0P812)",
    "the BiSeNet face parser trained on CelebAMask-HQ",
)


def check_parts(parts, method: str) -> None:
    if "skin" in parts:
        raise ValueError(f"{method} never edits skin: skin tone defines the demo's groups")
    unknown = sorted(set(parts) - set(FAIRFD_PARTS))
    if unknown:
        raise ValueError(
            f"{method} parts {unknown} unknown; parts (FairFD §3.4): {list(FAIRFD_PARTS)}"
        )


def fairfd_edit(
    labels: np.ndarray,
    iod: float,
    rng: np.random.Generator,
    parts=FAIRFD_PARTS,
    radius=RADIUS,
) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """FairFD's automated MaskGAN edit of a CelebAMask-HQ label map (module docstring).

    ``iod``: the inter-ocular distance in the map's pixels. Returns the edited map and the
    edits, ``{part: {"op": "dilate" | "erode", "radius": pixels}}`` in :data:`FAIRFD_PARTS`
    order; raises :class:`ForgeryError` when the map holds no face or no part to edit.
    """
    labels = np.asarray(labels, np.uint8)
    if not (labels == SKIN).any():
        raise ForgeryError("the parsing map holds no skin: no face to edit")
    code = {p: CELEBAMASK_LABELS.index(p) for p in FAIRFD_PARTS}
    min_area = max(12.0, (0.1 * iod) ** 2)
    candidates = [p for p in FAIRFD_PARTS if p in parts and (labels == code[p]).sum() >= min_area]
    if not candidates:
        raise ForgeryError(f"no face part to edit among {sorted(parts)} in the parsing map")
    chosen = [p for p in candidates if rng.random() < 0.5]
    if not chosen:
        chosen = [candidates[int(rng.integers(len(candidates)))]]
    lo, hi = radius
    edits = {}
    for p in chosen:
        op = "dilate" if rng.random() < 0.5 else "erode"
        edits[p] = {"op": op, "radius": max(int(round(rng.uniform(lo, hi) * iod)), 1)}

    edited = labels.copy()
    for p, e in edits.items():  # erosions first: what a part loses becomes skin
        if e["op"] == "erode":
            part = (labels == code[p]).astype(np.uint8)
            edited[(part > 0) & (erode(part, e["radius"]) == 0)] = SKIN
    keep = np.isin(labels, [CELEBAMASK_LABELS.index(c) for c in KEEP])
    for p, e in edits.items():
        if e["op"] == "dilate":
            grown = dilate((labels == code[p]).astype(np.uint8), e["radius"]) > 0
            blocked = keep | np.isin(edited, [code[q] for q in edits if q != p])
            if p not in GROW_INTO_BACKGROUND:
                blocked |= labels == BACKGROUND
            edited[grown & ~blocked] = code[p]
    return edited, edits


def edited_region(labels: np.ndarray, edited: np.ndarray, edits, iod: float) -> np.ndarray:
    """bool HxW: where a renderer may change the image. Each edited part's old and new
    pixels, and the skin around its old pixels up to ``0.03 IOD`` (at least one pixel, at
    most its radius: the part's soft edge, which a parsing map leaves out), so the region
    stays inside the part dilated by its radius."""
    region = np.zeros(labels.shape, bool)
    skin_after = edited == SKIN
    for p, e in edits.items():
        code = CELEBAMASK_LABELS.index(p)
        old = labels == code
        edge = min(e["radius"], max(int(round(0.03 * iod)), 1))
        region |= old | (edited == code) | ((dilate(old.astype(np.uint8), edge) > 0) & skin_after)
    return region


def render_edit(
    img: np.ndarray, labels: np.ndarray, edited: np.ndarray, edits, iod: float
) -> tuple[np.ndarray, np.ndarray]:
    """The classical renderer (module docstring): the image of ``edited`` from ``img``
    parsed as ``labels``; returns the image and the 0/255 mask of the edited parts' region."""
    region = edited_region(labels, edited, edits, iod)
    hole = region.astype(np.uint8) * 255
    canvas = cv2.inpaint(img, hole, max(int(round(0.08 * iod)), 3), cv2.INPAINT_TELEA)
    canvas = canvas.astype(np.float32)
    size = (img.shape[1], img.shape[0])
    for p in edits:
        code = CELEBAMASK_LABELS.index(p)
        old = (labels == code).astype(np.uint8)
        new = (edited == code).astype(np.uint8)
        if not new.any():
            continue  # eroded away: skin only
        x0, y0, w0, h0 = cv2.boundingRect(old)
        x1, y1, w1, h1 = cv2.boundingRect(new)
        sx, sy = w1 / w0, h1 / h0
        cx0, cy0 = x0 + (w0 - 1) / 2, y0 + (h0 - 1) / 2
        cx1, cy1 = x1 + (w1 - 1) / 2, y1 + (h1 - 1) / 2
        mat = np.array([[sx, 0, cx1 - sx * cx0], [0, sy, cy1 - sy * cy0]], np.float64)
        moved = cv2.warpAffine(
            img, mat, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
        a = feather(new * 255, 1, inside=False)
        a[~region] = 0.0
        a = a[..., None]
        canvas = moved.astype(np.float32) * a + canvas * (1 - a)
    return composite(np.clip(canvas + 0.5, 0, 255).astype(np.uint8), img, region.astype(np.float32))


@FORGERY_METHODS.register("maskgan/classical")
class MaskGAN(ForgeryMethod):
    kept = "source"
    needs_target = False
    random = True
    release_files = (replace(FACE_PARSER, required=False),)  # the parser is optional here
    defaults = {
        "parts": FAIRFD_PARTS,  # candidate parts (FairFD §3.4)
        "radius": RADIUS,  # dilate/erode radius range, inter-ocular distances
        "parser_path": None,  # the released BiSeNet parser (79999_iter.pth); landmarks if unset
        "device": "cpu",  # the parser's torch device
        "threads": 1,  # the parser's torch threads on the CPU
    }

    def __init__(self, **options):
        super().__init__(**options)
        check_parts(self.options["parts"], self.name)
        self.parser = None
        if self.options["parser_path"]:
            import torch

            from .nets.bisenet import FaceParser

            if self.options["device"] == "cpu" and self.options["threads"]:
                torch.set_num_threads(int(self.options["threads"]))
            path = self.check_options(self.options)["parser_path"]
            self.parser = FaceParser(
                path, release_text(self, FACE_PARSER, path), self.options["device"]
            )

    def parse(self, img: np.ndarray, lm: np.ndarray) -> np.ndarray:
        """The crop's CelebAMask-HQ label map at the crop's size."""
        if self.parser is None:
            return label_map(lm, img.shape)
        return self.parser(img, (img.shape[1], img.shape[0]))

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        iod = interocular(source_lm)
        labels = self.parse(source_img, source_lm)
        edited, edits = fairfd_edit(labels, iod, rng, self.options["parts"], self.options["radius"])
        image, mask = render_edit(source_img, labels, edited, edits, iod)
        parser = "landmarks" if self.parser is None else "bisenet"
        return ForgeryResult(
            image, mask, {"parts": sorted(edits), "edits": edits, "parser": parser}
        )


def release_text(method: ForgeryMethod, spec: ReleaseFile, path: str) -> str:
    """How a loader names a release file in its errors: the method and backend, what the
    file is, its name as released, where it is published and where it was looked for."""
    return (
        f"{method.name} backend '{method.backend}': {spec.what} ({spec.filename}, released at "
        f"{spec.release}) at {path}"
    )
