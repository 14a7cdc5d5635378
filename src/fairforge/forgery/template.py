"""A parametric face with exact 68-point landmarks, for tests, benchmarks and smoke runs.

``MEAN_FACE_68`` is dlib's 68-point shape predictor run on a blank image over the unit box:
with no image evidence its cascade returns (close to) the mean shape it was trained from, in
the coordinates of the detection rectangle (x right, y down, the box is [0, 1]^2).

:func:`template_face` draws a textured, photo-like enough face on those landmarks (skin,
brows, eyes with irises, nose, lips, mouth interior with teeth, hair, a textured background)
with controllable expression, so the forgery methods can be tested on faces whose landmarks
are known exactly, independently of any detector.
"""

from __future__ import annotations

import cv2
import numpy as np

from .parsing import LOWER_MOUTH_WEIGHTS

MEAN_FACE_68 = np.array(
    [
        (0.072, 0.369),
        (0.075, 0.480),
        (0.087, 0.588),
        (0.115, 0.697),
        (0.158, 0.802),
        (0.219, 0.898),
        (0.296, 0.975),
        (0.390, 1.020),
        (0.502, 1.028),
        (0.617, 1.023),
        (0.719, 0.977),
        (0.797, 0.897),
        (0.861, 0.799),
        (0.903, 0.690),
        (0.926, 0.578),
        (0.934, 0.465),
        (0.934, 0.352),
        (0.159, 0.238),
        (0.218, 0.200),
        (0.290, 0.193),
        (0.365, 0.202),
        (0.431, 0.232),
        (0.539, 0.232),
        (0.605, 0.200),
        (0.681, 0.189),
        (0.755, 0.195),
        (0.820, 0.228),
        (0.485, 0.309),
        (0.486, 0.385),
        (0.485, 0.459),
        (0.485, 0.536),
        (0.399, 0.593),
        (0.443, 0.610),
        (0.491, 0.622),
        (0.537, 0.609),
        (0.582, 0.593),
        (0.234, 0.322),
        (0.279, 0.293),
        (0.333, 0.290),
        (0.382, 0.320),
        (0.331, 0.334),
        (0.279, 0.336),
        (0.598, 0.318),
        (0.648, 0.288),
        (0.704, 0.291),
        (0.751, 0.318),
        (0.704, 0.334),
        (0.650, 0.333),
        (0.331, 0.764),
        (0.388, 0.735),
        (0.449, 0.723),
        (0.492, 0.731),
        (0.536, 0.720),
        (0.603, 0.732),
        (0.667, 0.762),
        (0.613, 0.804),
        (0.546, 0.825),
        (0.498, 0.829),
        (0.451, 0.827),
        (0.386, 0.806),
        (0.356, 0.763),
        (0.449, 0.756),
        (0.493, 0.760),
        (0.537, 0.756),
        (0.642, 0.761),
        (0.540, 0.768),
        (0.496, 0.774),
        (0.452, 0.769),
    ],
    dtype=np.float32,
)


def template_landmarks(
    size: int,
    scale: float = 0.6,
    centre: tuple[float, float] = (0.5, 0.5),
    angle_deg: float = 0.0,
    mouth_open: float = 0.0,
    eye_open: float = 1.0,
    brow_raise: float = 0.0,
    width: float = 1.0,
) -> np.ndarray:
    """68 landmarks in pixels of a ``size`` crop. Expression amounts are in inter-ocular units
    (``eye_open`` scales the lid opening, 0 = closed)."""
    pts = MEAN_FACE_68.astype(np.float64).copy()
    iod = np.linalg.norm(pts[42:48].mean(0) - pts[36:42].mean(0))
    for idx, wgt in LOWER_MOUTH_WEIGHTS.items():
        pts[idx, 1] += wgt * mouth_open * iod
    for upper, lower in (((37, 38), (41, 40)), ((43, 44), (47, 46))):
        for u, lo in zip(upper, lower):
            mid = 0.5 * (pts[u, 1] + pts[lo, 1])
            pts[u, 1] = mid + (pts[u, 1] - mid) * eye_open
            pts[lo, 1] = mid + (pts[lo, 1] - mid) * eye_open
    pts[17:27, 1] -= brow_raise * iod
    box_centre = np.array([0.5, 0.6])
    rel = (pts - box_centre) * np.array([width, 1.0])
    theta = np.deg2rad(angle_deg)
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    out = rel @ rot.T * (scale * size) + np.asarray(centre) * size
    return out.astype(np.float32)


def _noise(rng: np.random.Generator, shape: tuple[int, int], cell: int) -> np.ndarray:
    """Smooth value noise in [-1, 1] with features about ``cell`` pixels wide."""
    h, w = shape
    coarse = rng.uniform(-1, 1, (max(h // cell, 1) + 2, max(w // cell, 1) + 2)).astype(np.float32)
    return cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC)


def _poly(img: np.ndarray, pts: np.ndarray, colour, closed: bool = True, thickness: int = -1):
    shift = 4
    p = np.round(np.asarray(pts) * (1 << shift)).astype(np.int32)
    if thickness < 0:
        cv2.fillPoly(img, [p], colour, cv2.LINE_AA, shift)
    else:
        cv2.polylines(img, [p], closed, colour, thickness, cv2.LINE_AA, shift)


def template_face(
    size: int = 256, seed: int = 0, skin: tuple[int, int, int] | None = None, **shape: float
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a face; returns (uint8 RGB image, float32 (68, 2) landmarks).

    ``seed`` sets colours and textures; ``shape`` is passed to :func:`template_landmarks`.
    """
    rng = np.random.default_rng(seed)
    lm = template_landmarks(size, **shape).astype(np.float64)
    iod = float(np.linalg.norm(lm[42:48].mean(0) - lm[36:42].mean(0)))
    h = w = size
    if skin is None:
        # Between a dark and a light skin tone, with a little per-channel jitter.
        tone = rng.uniform(0, 1)
        base = np.array([75, 48, 36]) * (1 - tone) + np.array([238, 198, 172]) * tone
        skin = tuple(int(c) for c in np.clip(base + rng.normal(0, 6, 3), 0, 255))
    skin_arr = np.array(skin, np.float32)

    # Background: a two-colour gradient with blotches and grain.
    c0, c1 = rng.integers(20, 235, (2, 3)).astype(np.float32)
    t = np.linspace(0, 1, w, dtype=np.float32)[None, :, None]
    img = c0 * (1 - t) + c1 * t + np.zeros((h, 1, 1), np.float32)
    img += 30 * _noise(rng, (h, w), max(size // 8, 2))[..., None]

    # Hair behind the head, then the head.
    top = lm[17:27].copy()
    top[:, 1] -= 0.9 * iod
    hair = np.concatenate([lm[0:17], top[::-1]], 0)
    centre = hair.mean(0)
    hair = centre + (hair - centre) * 1.12
    canvas = img.copy()
    _poly(canvas, hair, tuple(float(v) for v in rng.integers(10, 90, 3)))
    forehead = lm[17:27].copy()
    forehead[:, 1] -= 0.55 * iod
    face_poly = np.concatenate([lm[0:17], forehead[::-1]], 0)
    face_mask = np.zeros((h, w), np.uint8)
    _poly(face_mask, face_poly, 255)
    dist = cv2.distanceTransform((face_mask > 0).astype(np.uint8), cv2.DIST_L2, 3)
    shade = 0.75 + 0.25 * np.clip(dist / (0.6 * iod), 0, 1)
    texture = 1 + 0.06 * _noise(rng, (h, w), max(size // 32, 2))
    skin_img = skin_arr * (shade * texture)[..., None]
    alpha = cv2.GaussianBlur(face_mask.astype(np.float32) / 255, (3, 3), 0)[..., None]
    canvas = canvas * (1 - alpha) + skin_img * alpha

    brow_col = tuple(float(v) for v in (skin_arr * 0.3))
    lw = max(int(round(0.09 * iod)), 1)
    _poly(canvas, lm[17:22], brow_col, closed=False, thickness=lw)
    _poly(canvas, lm[22:27], brow_col, closed=False, thickness=lw)

    iris = tuple(float(v) for v in rng.integers(20, 120, 3))
    for sl in (slice(36, 42), slice(42, 48)):
        eye = lm[sl]
        eye_mask = np.zeros((h, w), np.uint8)
        _poly(eye_mask, eye, 255)
        layer = canvas.copy()
        layer[:] = (235, 235, 230)
        cx, cy = eye.mean(0)
        cv2.circle(
            layer, (int(round(cx)), int(round(cy))), max(int(0.13 * iod), 1), iris, -1, cv2.LINE_AA
        )
        cv2.circle(
            layer,
            (int(round(cx)), int(round(cy))),
            max(int(0.05 * iod), 1),
            (10, 10, 10),
            -1,
            cv2.LINE_AA,
        )
        a = (eye_mask.astype(np.float32) / 255)[..., None]
        canvas = canvas * (1 - a) + layer * a
        _poly(canvas, eye, tuple(float(v) for v in skin_arr * 0.35), thickness=1)

    nose_col = tuple(float(v) for v in skin_arr * 0.7)
    _poly(canvas, lm[27:31], nose_col, closed=False, thickness=max(lw // 2, 1))
    _poly(canvas, lm[31:36], nose_col, closed=False, thickness=max(lw // 2, 1))
    for i in (32, 34):
        cv2.circle(
            canvas,
            (int(round(lm[i, 0])), int(round(lm[i, 1] - 0.02 * iod))),
            max(int(0.04 * iod), 1),
            tuple(float(v) for v in skin_arr * 0.35),
            -1,
            cv2.LINE_AA,
        )

    lip_col = tuple(float(v) for v in np.clip(skin_arr * np.array([1.0, 0.55, 0.6]), 0, 255))
    inner = lm[60:68]
    mouth = np.zeros((h, w), np.float32)
    _poly(mouth, inner, (40.0,))
    teeth = inner.copy()
    teeth[:, 1] = np.minimum(teeth[:, 1], inner[[1, 2, 3], 1].mean() + 0.08 * iod)
    _poly(canvas, inner, (45.0, 20.0, 25.0))
    _poly(canvas, teeth, (225.0, 220.0, 205.0))
    upper = np.concatenate([lm[48:55], lm[[64, 63, 62, 61, 60]]], 0)
    lower = np.concatenate([lm[54:60], lm[[48, 60, 67, 66, 65, 64]]], 0)
    _poly(canvas, upper, lip_col)
    _poly(canvas, lower, tuple(float(v) * 1.05 for v in lip_col))

    canvas += rng.normal(0, 3.0, canvas.shape).astype(np.float32)
    canvas = cv2.GaussianBlur(canvas, (3, 3), 0.6)
    return np.clip(canvas + 0.5, 0, 255).astype(np.uint8), lm.astype(np.float32)
