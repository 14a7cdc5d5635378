"""Face parts and expression measures from the 68 dlib landmarks.

Indices follow the iBUG 300-W / dlib convention: jaw 0-16, brows 17-21 and 22-26, nose
27-35, eyes 36-41 and 42-47, outer lips 48-59, inner lips 60-67. "Left" and "right" are
image sides (the subject's right eye is at image left).
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import eye_centers, interocular, polygon_mask

JAW = np.arange(0, 17)
BROW_L, BROW_R = np.arange(17, 22), np.arange(22, 27)
NOSE = np.arange(27, 36)
EYE_L, EYE_R = np.arange(36, 42), np.arange(42, 48)
OUTER_LIP, INNER_LIP = np.arange(48, 60), np.arange(60, 68)
UPPER_LIP = np.array([48, 49, 50, 51, 52, 53, 54, 64, 63, 62, 61, 60])
LOWER_LIP = np.array([54, 55, 56, 57, 58, 59, 48, 60, 67, 66, 65, 64])

# How far each point follows the jaw when the mouth opens (lower lip fully, corners and the
# chin partly, tapering along the jaw line).
LOWER_MOUTH_WEIGHTS = {
    65: 1.0,
    66: 1.0,
    67: 1.0,
    55: 0.9,
    56: 1.0,
    57: 1.0,
    58: 1.0,
    59: 0.9,
    54: 0.4,
    48: 0.4,
    60: 0.4,
    64: 0.4,
    8: 1.0,
    7: 0.85,
    9: 0.85,
    6: 0.6,
    10: 0.6,
    5: 0.35,
    11: 0.35,
    4: 0.1,
    12: 0.1,
}

# The parts a parser yields, each as one or more connected components (index lists).
PARTS = ("skin", "nose", "eyes", "brows", "upper_lip", "lower_lip", "mouth")


def face_frame(lm: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Unit axes of the face (x: from image-left eye to image-right eye; y: down the face)
    and the inter-ocular distance."""
    left, right = eye_centers(lm)
    iod = interocular(lm)
    ax = (right - left) / max(iod, 1e-6)
    ay = np.array([-ax[1], ax[0]])
    return ax.astype(np.float64), ay.astype(np.float64), iod


def _band(points: np.ndarray, half_width: float) -> np.ndarray:
    """Polygon of a thick polyline: the points offset both ways along their normals."""
    pts = np.asarray(points, np.float64)
    tangent = np.gradient(pts, axis=0)
    norm = np.linalg.norm(tangent, axis=1, keepdims=True)
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], 1) / np.maximum(norm, 1e-6)
    return np.concatenate([pts + half_width * normal, (pts - half_width * normal)[::-1]], 0)


def forehead_points(lm: np.ndarray, lift: float = 0.5) -> np.ndarray:
    """The brow line lifted ``lift`` inter-ocular distances up the face."""
    _, ay, iod = face_frame(lm)
    return lm[17:27].astype(np.float64) - lift * iod * ay


def part_components(lm: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Polygons (pixel coordinates) for each part, one per connected component."""
    lm = np.asarray(lm, np.float64)
    ax, ay, iod = face_frame(lm)
    bridge = lm[27:31]
    nose = np.concatenate([bridge + 0.1 * iod * ax, lm[31:36][::-1], bridge[::-1] - 0.1 * iod * ax])
    return {
        "nose": [nose],
        "eyes": [lm[EYE_L], lm[EYE_R]],
        "brows": [_band(lm[BROW_L], 0.06 * iod), _band(lm[BROW_R], 0.06 * iod)],
        "upper_lip": [lm[UPPER_LIP]],
        "lower_lip": [lm[LOWER_LIP]],
        "mouth": [lm[INNER_LIP]],
    }


def face_region(lm: np.ndarray, shape: tuple[int, ...], lift: float = 0.5) -> np.ndarray:
    """0/255 mask of jaw line and forehead (brows lifted by ``lift`` IOD)."""
    lm = np.asarray(lm, np.float64)
    poly = np.concatenate([lm[JAW], forehead_points(lm, lift)[::-1]], 0)
    return polygon_mask(poly, shape, convex=False)


def parse_parts(lm: np.ndarray, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """0/255 masks for :data:`PARTS`; ``skin`` is the face region minus every other part."""
    masks: dict[str, np.ndarray] = {}
    for name, polys in part_components(lm).items():
        m = np.zeros(shape[:2], np.uint8)
        for poly in polys:
            m |= polygon_mask(poly, shape, convex=False)
        masks[name] = m
    skin = face_region(lm, shape)
    for m in masks.values():
        skin[m > 0] = 0
    masks["skin"] = skin
    return {name: masks[name] for name in PARTS}


EXPRESSION = ("mouth_open", "mouth_width", "eye_open_l", "eye_open_r", "brow_l", "brow_r")


def measure_expression(lm: np.ndarray) -> np.ndarray:
    """Expression measures in inter-ocular units, in the face's own frame.

    mouth opening (inner-lip gap), mouth width (corner to corner), each eye's lid opening,
    each brow's height above its eye centre.
    """
    lm = np.asarray(lm, np.float64)
    ax, ay, iod = face_frame(lm)
    left, right = eye_centers(lm)
    gap = ((lm[[67, 66, 65]] - lm[[61, 62, 63]]) @ ay).mean()
    width = (lm[54] - lm[48]) @ ax
    eye_l = ((lm[[41, 40]] - lm[[37, 38]]) @ ay).mean()
    eye_r = ((lm[[47, 46]] - lm[[43, 44]]) @ ay).mean()
    brow_l = ((left - lm[BROW_L]) @ ay).mean()
    brow_r = ((right - lm[BROW_R]) @ ay).mean()
    return np.array([gap, width, eye_l, eye_r, brow_l, brow_r]) / max(iod, 1e-6)


def occluders(img: np.ndarray, lm: np.ndarray, min_area: float = 0.03) -> np.ndarray:
    """0/255 mask of what covers the face's skin: glasses frames, hair strands, hands.

    A landmark parser sees no occluders, so they are found by colour: skin pixels (the face
    region minus the parts that may legitimately differ from the skin around them: eyes,
    brows, lips, mouth, nostrils) whose LAB colour is far from the local skin colour (a
    median filter a quarter of the inter-ocular distance wide, which follows the shading),
    kept where they form a component of at least ``min_area`` IOD^2 (a frame or a strand;
    a mole or skin grain is smaller), then grown a little to cover their antialiased edge.
    A stand-in for a learned face-parsing model's occlusion classes.
    """
    lm = np.asarray(lm, np.float64)
    iod = interocular(lm)
    parts = parse_parts(lm, img.shape)
    region = face_region(lm, img.shape, lift=0.35) > 0
    features = polygon_mask(lm[31:36], img.shape) | polygon_mask(lm[[31, 33, 35, 30]], img.shape)
    for name in ("eyes", "brows", "upper_lip", "lower_lip", "mouth"):
        features |= parts[name]
    grow = max(int(round(0.05 * iod)), 1)
    features = cv2.dilate(features, np.ones((3, 3), np.uint8), iterations=grow)
    # The face outline is an edge, not an occluder: keep off it.
    region = cv2.erode(region.astype(np.uint8), np.ones((3, 3), np.uint8), iterations=2 * grow)
    skin = (region > 0) & (features == 0)
    if skin.sum() < 32:
        return np.zeros(img.shape[:2], np.uint8)
    k = max(int(0.25 * iod) | 1, 3)
    local = cv2.medianBlur(img, min(k, 255))
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB).astype(np.float32)
    dist = np.linalg.norm(lab - cv2.cvtColor(local, cv2.COLOR_RGB2LAB).astype(np.float32), axis=2)
    spread = 1.4826 * np.median(dist[skin]) + 1e-3
    strong = skin & (dist > max(5.0 * spread, 12.0))
    # Hysteresis: a component of weaker outliers counts when it holds strong ones (a frame
    # fades where it crosses shading).
    weak = (skin & (dist > max(3.5 * spread, 9.0))).astype(np.uint8)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(weak, connectivity=8)
    seeded = np.bincount(labels[strong], minlength=len(stats)) > 0
    big = np.flatnonzero((stats[:, cv2.CC_STAT_AREA] >= min_area * iod**2) & seeded)
    out = np.isin(labels, big[big > 0]).astype(np.uint8) * 255
    return cv2.dilate(out, np.ones((3, 3), np.uint8), iterations=grow)
