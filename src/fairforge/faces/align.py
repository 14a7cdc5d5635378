"""Similarity alignment of faces: 5 points from the 68, a canonical template, a warp.

The template is the ArcFace 112x112 five-point layout (eye centres, nose tip, mouth corners,
in image-left to image-right order) normalised to [0, 1]; ``margin`` pads it by that
fraction of the template box on every side, so ``margin=0`` gives a tight recognition crop and
larger margins keep the jaw, hair line and some background for forgery work.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from fairforge.faces.landmarks import five_from_68

TEMPLATE_5 = (
    np.array(
        [
            [38.2946, 51.6963],
            [73.5318, 51.5014],
            [56.0252, 71.7366],
            [41.5493, 92.3655],
            [70.7299, 92.2041],
        ],
        dtype=np.float64,
    )
    / 112.0
)

# The 5 points of 68 iBUG landmarks (the convention lives in fairforge.faces.landmarks).
five_points = five_from_68


def template_points(crop_size: int, margin: float) -> np.ndarray:
    """The 5-point template in pixels of a ``crop_size`` square crop padded by ``margin``."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    return (TEMPLATE_5 + margin) / (1.0 + 2.0 * margin) * float(crop_size)


def umeyama_similarity(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares similarity (rotation, uniform scale, translation) mapping src to dst, as a
    2x3 matrix (Umeyama 1991; no reflection)."""
    src = np.asarray(src, dtype=np.float64)
    dst = np.asarray(dst, dtype=np.float64)
    mu_s, mu_d = src.mean(0), dst.mean(0)
    s, d = src - mu_s, dst - mu_d
    var_s = float((s**2).sum()) / len(src)
    if var_s <= 1e-12:
        raise ValueError("degenerate points: all source points coincide")
    u, sigma, vt = np.linalg.svd(d.T @ s / len(src))
    sign = np.array([1.0, 1.0 if np.linalg.det(u) * np.linalg.det(vt) >= 0 else -1.0])
    rotation = u @ np.diag(sign) @ vt
    scale = float((sigma * sign).sum()) / var_s
    translation = mu_d - scale * rotation @ mu_s
    return np.hstack([scale * rotation, translation[:, None]])


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    pts = np.asarray(points, dtype=np.float64)
    return pts @ matrix[:, :2].T + matrix[:, 2]


# How a crop is framed and filled where its margin reaches past the photo: ``replicate``,
# ``reflect`` and ``constant`` keep the margin (every face at the same place and scale, however
# the photo was framed) and fill with the edge pixels repeated, the photo mirrored (without
# repeating its edge), or black; ``shrink`` lowers the margin toward what the photo holds,
# but never below the margin that keeps every landmark in the crop (:func:`landmark_margin`;
# the face is then larger in the crop the tighter its photo), and repeats the edge over the
# rest.
BORDERS = {
    "shrink": cv2.BORDER_REPLICATE,
    "replicate": cv2.BORDER_REPLICATE,
    "reflect": cv2.BORDER_REFLECT_101,
    "constant": cv2.BORDER_CONSTANT,
}
# One geometry for every photo, as DeepfakeBench's preprocessing (FairFD §5.1's training data)
# aligns every face to one template and scale and pads past the frame; shrinking made the
# face's scale, and whether its chin stayed in the crop, depend on the dataset's framing.
DEFAULT_BORDER = "replicate"
# Landmarks must lie this share of the crop side inside its edges: the forgery methods'
# masks grow and feather a few pixels around the face's outline.
LANDMARK_BAND = 0.02


def warp_crop(
    image_rgb: np.ndarray, matrix: np.ndarray, crop_size: int, border: str = DEFAULT_BORDER
) -> np.ndarray:
    """Warp ``image_rgb`` by ``matrix`` into a ``crop_size`` square; where the square reaches
    past the image it is filled as ``border`` says (:data:`BORDERS`; ``constant`` is black,
    ``shrink`` repeats the edge: its margin is fitted before, by :func:`crop_matrix`).

    When the crop shrinks the face by 2x or more, the image is first reduced with area
    averaging so that the bilinear warp does not alias.
    """
    if border not in BORDERS:
        raise ValueError(f"unknown border {border!r}; expected one of {sorted(BORDERS)}")
    scale = math.sqrt(abs(float(np.linalg.det(matrix[:, :2]))))
    img, m = image_rgb, np.asarray(matrix, dtype=np.float64)
    factor = int(1.0 / scale) if scale > 0 else 1
    if factor >= 2:
        h, w = img.shape[:2]
        new_w, new_h = max(1, round(w / factor)), max(1, round(h / factor))
        img = cv2.resize(img, (new_w, new_h), interpolation=cv2.INTER_AREA)
        # Pixel centres map as x_small = (x + 0.5) * new_w / w - 0.5.
        sx, sy = new_w / w, new_h / h
        to_small = np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1]])
        m = (np.vstack([m, [0, 0, 1]]) @ np.linalg.inv(to_small))[:2]
    return cv2.warpAffine(
        img,
        m,
        (int(crop_size), int(crop_size)),
        flags=cv2.INTER_LINEAR,
        borderMode=BORDERS[border],
        borderValue=(0, 0, 0),
    )


def outside_fraction(matrix: np.ndarray, image_shape: tuple[int, ...], crop_size: int) -> float:
    """The share of a ``crop_size`` crop (warped by ``matrix``, image -> crop pixels) whose
    pixel centres fall outside an image of ``image_shape``: what the border fill invented."""
    inverse = cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64))
    ys, xs = np.mgrid[0:crop_size, 0:crop_size].astype(np.float64)
    x = inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]
    y = inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]
    h, w = image_shape[:2]
    inside = (x >= -0.5) & (x <= w - 0.5) & (y >= -0.5) & (y <= h - 0.5)
    return float(1.0 - inside.mean())


def face_fraction(margin: float) -> float:
    """The share of a crop's width that the template box spans at ``margin``: what the far
    chain shrinks to a target face width."""
    return 1.0 / (1.0 + 2.0 * margin)


def alignment_matrix(landmarks68: np.ndarray, crop_size: int, margin: float) -> np.ndarray:
    """The 2x3 similarity taking image pixels to crop pixels."""
    return alignment_matrix_5(five_from_68(landmarks68), crop_size, margin)


def alignment_matrix_5(points5: np.ndarray, crop_size: int, margin: float) -> np.ndarray:
    """The 2x3 similarity taking the five alignment points onto the template."""
    points5 = np.asarray(points5, dtype=np.float64)
    if points5.shape != (5, 2) or not np.isfinite(points5).all():
        raise ValueError(f"expected 5 finite (x, y) points, got {points5.shape}")
    return umeyama_similarity(points5, template_points(crop_size, margin))


def crop_inside(matrix: np.ndarray, image_shape: tuple[int, ...], crop_size: int) -> bool:
    """Whether every pixel centre of the crop falls inside the image (``outside_fraction``
    0): the crop is a (rotated) square, so its four corner pixels decide."""
    inverse = cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64))
    last = float(crop_size - 1)
    corners = np.array([[0.0, 0.0], [last, 0.0], [0.0, last], [last, last]])
    x, y = (corners @ inverse[:, :2].T + inverse[:, 2]).T
    h, w = image_shape[:2]
    return bool(((x >= -0.5) & (x <= w - 0.5) & (y >= -0.5) & (y <= h - 0.5)).all())


def fitted_margin(
    points5: np.ndarray,
    image_shape: tuple[int, ...],
    crop_size: int,
    margin: float,
    steps: int = 16,
) -> float:
    """The largest margin in [0, ``margin``] (to ``margin / 2**steps``) whose crop lies inside
    the photo, or 0 when even the tight template box reaches past it. The crop's footprint on
    the photo grows with the margin (the template's points stay put), so bisection finds it."""

    def fits(m: float) -> bool:
        return crop_inside(alignment_matrix_5(points5, crop_size, m), image_shape, crop_size)

    if fits(margin):
        return float(margin)
    lo, hi = 0.0, float(margin)
    if not fits(lo):
        return lo
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def landmark_margin(
    landmarks: np.ndarray, points5: np.ndarray, crop_size: int, band: float = LANDMARK_BAND
) -> float:
    """The smallest margin (0 or more) at which every one of ``landmarks`` (image pixels)
    lies at least ``band`` times ``crop_size`` inside the edges of the crop aligned on
    ``points5``.

    A larger margin only scales the crop about its centre (the template's points move
    toward it), so a point at ``c0`` in the crop of margin 0 lies at
    ``(c0 + m S) / (1 + 2 m)`` at margin ``m`` (crop side ``S``): each bound solves for ``m``.
    """
    size = float(crop_size)
    lo = max(band * size, 0.5)
    hi = size - 1.0 - lo
    c0 = transform_points(landmarks, alignment_matrix_5(points5, crop_size, 0.0))
    need = np.concatenate([(lo - c0) / (size - 2.0 * lo), (c0 - hi) / (2.0 * hi - size)])
    return max(0.0, float(need.max()))


def crop_matrix(
    points5: np.ndarray,
    image_shape: tuple[int, ...],
    crop_size: int,
    margin: float,
    border: str = DEFAULT_BORDER,
    landmarks: np.ndarray | None = None,
) -> np.ndarray:
    """The alignment matrix of a crop framed as ``border`` says: the fill borders keep
    ``margin``; ``shrink`` fits it to the photo (:func:`fitted_margin`), and, given the face's
    68 ``landmarks`` (image pixels), no lower than the margin that keeps all of them in the
    crop (:func:`landmark_margin`; never above ``margin``): a forgery method needs the whole
    face, and a tight photo must not cut its chin."""
    if border not in BORDERS:
        raise ValueError(f"unknown border {border!r}; expected one of {sorted(BORDERS)}")
    if border == "shrink":
        fitted = fitted_margin(points5, image_shape, crop_size, margin)
        if landmarks is not None:
            fitted = max(fitted, landmark_margin(landmarks, points5, crop_size))
        margin = min(fitted, margin)
    return alignment_matrix_5(points5, crop_size, margin)
