"""One landmark convention for the pipeline: 68 iBUG points plus the 5-point alignment set.

Every landmark backend returns the 68 iBUG points (x, y image pixels, the subject's right
side first as dlib orders them: jaw 0-16, brows 17-26, nose 27-35, eyes 36-47, mouth 48-67);
other markups are converted here:

- insightface ``2d106det`` (106 points) -> 68 by :data:`MAP_2D106_TO_68`, the index table
  that tools built on insightface use (jaw from the 33-point contour, brows, nose, the six
  eye-ring points per eye, the 20 mouth points);
- insightface ``1k3d68`` and face-alignment's 3D output (68 x 3) -> 68 by dropping depth,
  since both already follow the iBUG order.

The 5-point alignment set is eye centres (mean of each eye's six points), nose tip (30) and
mouth corners (48, 54), in image-left to image-right order, as ArcFace's template wants it.
Alignment always uses the five points (:mod:`fairforge.faces.align`): the detector's own when
it finds them (MTCNN, SCRFD), else the five derived from the 68.

Landmark backends are registered in :data:`LANDMARKERS` (config ``faces.landmarks``) as
functions ``(image_rgb, face: Detection, models: FaceModels) -> (68, 2) float32``.
"""

from __future__ import annotations

import numpy as np

from fairforge.faces.detect import Detection, FaceModels, predict_landmarks
from fairforge.registry import Registry

N_POINTS = 68
FIVE_POINT_NAMES = ("left_eye", "right_eye", "nose_tip", "mouth_left", "mouth_right")

# iBUG 68 indices: eyes 36-41 (image left) and 42-47, nose tip 30, mouth corners 48 and 54.
LEFT_EYE, RIGHT_EYE = slice(36, 42), slice(42, 48)
NOSE_TIP, MOUTH_LEFT, MOUTH_RIGHT = 30, 48, 54

# The 68 points by face part (first and last index), left and right as image sides (dlib's
# point 0 is at the image's left): what a message names when points leave a crop.
PARTS = (
    ("jaw left", 0, 5),
    ("chin", 6, 10),
    ("jaw right", 11, 16),
    ("brow left", 17, 21),
    ("brow right", 22, 26),
    ("nose", 27, 35),
    ("eye left", 36, 41),
    ("eye right", 42, 47),
    ("mouth", 48, 67),
)


def parts_of(indices) -> str:
    """The face parts that hold any of the 68-point ``indices``, each with its point range:
    ``[7, 8, 12]`` -> ``'chin (points 6-10), jaw right (points 11-16)'``."""
    chosen = {int(i) for i in np.asarray(indices).ravel()}
    return ", ".join(
        f"{name} (points {first}-{last})"
        for name, first, last in PARTS
        if chosen & set(range(first, last + 1))
    )


# insightface 2d106 index of each iBUG point, in iBUG order.
MAP_2D106_TO_68 = np.array(
    # jaw (17)
    [1, 10, 12, 14, 16, 3, 5, 7, 0, 23, 21, 19, 32, 30, 28, 26, 17]
    # brows (5 + 5)
    + [43, 48, 49, 51, 50, 102, 103, 104, 105, 101]
    # nose bridge and nostrils (9)
    + [72, 73, 74, 86, 78, 79, 80, 85, 84]
    # eyes (6 + 6)
    + [35, 41, 42, 39, 37, 36, 89, 95, 96, 93, 91, 90]
    # mouth, outer 12 then inner 8
    + [52, 64, 63, 71, 67, 68, 61, 58, 59, 53, 56, 55, 65, 66, 62, 70, 69, 57, 60, 54],
    dtype=np.int64,
)


def _checked(points: np.ndarray, n: int, dims: tuple[int, ...], what: str) -> np.ndarray:
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] != n or pts.shape[1] not in dims:
        raise ValueError(f"expected ({n}, {' or '.join(map(str, dims))}) {what}, got {pts.shape}")
    return pts


def five_from_68(landmarks68: np.ndarray) -> np.ndarray:
    """(5, 2) eye centres, nose tip and mouth corners from (68, 2) iBUG landmarks."""
    pts = _checked(landmarks68, N_POINTS, (2,), "landmarks")
    return np.stack(
        [
            pts[LEFT_EYE].mean(0),
            pts[RIGHT_EYE].mean(0),
            pts[NOSE_TIP],
            pts[MOUTH_LEFT],
            pts[MOUTH_RIGHT],
        ]
    )


def from_2d106(points106: np.ndarray) -> np.ndarray:
    """(68, 2) iBUG landmarks from insightface's (106, 2) ``2d106det`` output."""
    return _checked(points106, 106, (2,), "2d106 landmarks")[MAP_2D106_TO_68].copy()


def from_3d68(points: np.ndarray) -> np.ndarray:
    """(68, 2) image-plane landmarks from a (68, 3) 3D fit (insightface ``1k3d68``,
    face-alignment 3D): the iBUG order already, depth dropped."""
    return _checked(points, N_POINTS, (2, 3), "3D landmarks")[:, :2].copy()


def inter_ocular(points5: np.ndarray) -> float:
    """Distance between the two eye centres of a 5-point set (the normaliser of landmark
    errors)."""
    pts = np.asarray(points5, dtype=np.float64)
    return float(np.linalg.norm(pts[1] - pts[0]))


LANDMARKERS: Registry = Registry("landmark backend")


@LANDMARKERS.register("dlib68", manifest_name="dlib_shape_predictor_68")
def _dlib68(image_rgb: np.ndarray, face: Detection, models: FaceModels) -> np.ndarray:
    """dlib's 68-point shape predictor inside the detector's box."""
    return predict_landmarks(image_rgb, face, models.dlib_dir)


def find_landmarks(
    image_rgb: np.ndarray, face: Detection, landmarks: str, models: FaceModels
) -> np.ndarray:
    """The (68, 2) float32 landmarks of ``face`` by the backend registered as ``landmarks``;
    a ValueError if the backend returns anything but 68 finite points."""
    pts = np.asarray(LANDMARKERS.get(landmarks)(image_rgb, face, models), dtype=np.float32)
    if pts.shape != (N_POINTS, 2) or not np.isfinite(pts).all():
        raise ValueError(f"{landmarks}: expected 68 finite (x, y) landmarks, got {pts.shape}")
    return pts


def alignment_points(landmarks68: np.ndarray, face: Detection) -> np.ndarray:
    """The five points alignment uses: the detector's own if it found them, else the five
    of the 68."""
    if face.points5 is not None:
        return np.asarray(face.points5, dtype=np.float64).reshape(5, 2)
    return five_from_68(landmarks68)
