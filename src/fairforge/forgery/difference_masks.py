"""Manipulation masks of the fakes a dataset ships, on their aligned crops.

A generated fake carries the mask its method composited through; a fake a dataset ships
(FaceForensics++, Celeb-DF, a csv of fakes) carries none, and a detector supervised by masks
(FFD's attention map, Face X-ray's blending boundary) needs one. Two ways to one, each on the
crop the detector sees, aligned by the same transform as the fake's crop:

- the **released mask**, where the dataset ships one (FaceForensics++'s
  ``manipulated_sequences/<method>/masks/videos``, one mask video per fake video, frame for
  frame): binarised as DeepfakeBench's preprocessing does, every pixel above grey level
  :data:`RELEASED_LEVEL` (``cv2.threshold(mask, 1, 255, THRESH_BINARY)`` in its
  ``preprocessing/preprocess.py``);
- the **difference mask** against the pristine frame the fake was made from, as FFD (Dang
  et al., CVPR 2020, its modification maps) and the Benchmark after it (App. A, FFD: "the
  absolute pixel-wise difference of RGB image pairs ... convert them to grayscale images and
  attain the binary masks by thresholding the normalized grayscale images") compute it: the
  absolute RGB difference, converted to grey, normalised to [0, 1] and thresholded at
  :data:`DIFFERENCE_THRESHOLD`, the 0.1 of FFD's paper.

Face X-ray's target (Benchmark App. A, Face X-ray: the binary difference mask, then "a
Gaussian blur followed by normalization", then ``4·M·(1−M)``) is :func:`mask_xray`: the
binary mask blurred by a
Gaussian :data:`XRAY_BLUR` interocular distances wide (the middle of the ``xray`` blends'
range, :class:`~fairforge.forgery.blend.XRayBlended`), divided by its maximum, and
``4 M (1 - M)`` of that (:func:`~fairforge.forgery.blend.xray_map`). Neither the Benchmark
nor DeepfakeBench gives a blur width; the FFD threshold is the paper's.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import ForgeryError, interocular
from .blend import odd_kernel, xray_map

#: FFD's threshold on the grey absolute difference, normalised to [0, 1].
DIFFERENCE_THRESHOLD = 0.1
#: DeepfakeBench keeps a released mask's pixels above this grey level.
RELEASED_LEVEL = 1
#: Width of the Gaussian that softens a mask into Face X-ray's M, in interocular distances.
XRAY_BLUR = 0.3
#: Where a fake's mask came from (the ``mask_source`` column of the masks manifest).
RELEASED, DIFFERENCE = "released", "difference"


def _grey(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise ForgeryError(f"expected a uint8 image, got {image.dtype}")
    if image.ndim == 2:
        return image
    if image.ndim == 3 and image.shape[2] == 3:
        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    raise ForgeryError(f"expected an HxW or HxWx3 image, got shape {image.shape}")


def difference_mask(
    fake: np.ndarray, source: np.ndarray, threshold: float = DIFFERENCE_THRESHOLD
) -> np.ndarray:
    """uint8 0/255: where the grey absolute difference of two aligned RGB crops, over 255,
    exceeds ``threshold``."""
    fake, source = np.asarray(fake), np.asarray(source)
    if fake.shape != source.shape or fake.ndim != 3:
        raise ForgeryError(f"fake {fake.shape} and source {source.shape} crops differ in shape")
    grey = _grey(cv2.absdiff(fake, source)).astype(np.float32) / 255.0
    return np.where(grey > threshold, 255, 0).astype(np.uint8)


def released_mask(mask: np.ndarray, level: int = RELEASED_LEVEL) -> np.ndarray:
    """uint8 0/255 of a released mask frame (RGB or grey, as decoded): its pixels above
    ``level``."""
    return np.where(_grey(mask) > level, 255, 0).astype(np.uint8)


def mask_xray(mask: np.ndarray, landmarks: np.ndarray, blur: float = XRAY_BLUR) -> np.ndarray:
    """Face X-ray's ``4 M (1 - M)`` (uint8, 255 = 1) of a binary mask: M is the mask blurred
    by a Gaussian ``blur`` interocular distances (of ``landmarks``, crop pixels) wide and
    divided by its maximum."""
    hard = (np.asarray(mask) > 0).astype(np.float32)
    if not hard.any():
        raise ForgeryError("empty manipulation mask: no X-ray")
    k = odd_kernel(blur * interocular(np.asarray(landmarks, np.float64)))
    soft = cv2.GaussianBlur(hard, (k, k), 0)
    return xray_map(soft / soft.max())
