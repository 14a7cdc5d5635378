"""Head pose from the 68 landmarks: a generic 3-D face, a pinhole camera and a PnP fit.

Shared by the forgery quality card (yaw and pitch of a fake against its driver), the
reenactment methods (a rigid pose to transfer) and the head-pose detector
(:mod:`fairforge.detectors.headpose`), which sits above this module.

The generic face is the package's 68-point mean face
(:data:`fairforge.forgery.template.MEAN_FACE_68`) on an ellipsoidal head with a protruding
nose; the camera has focal length = image width and its principal point at the centre.
Angles follow the camera frame (x right, y down, z away from the camera): ``yaw`` turns the
face about the vertical axis (positive: towards image right), ``pitch`` about the horizontal
axis (positive: chin down), ``roll`` in the image plane.
"""

from __future__ import annotations

import cv2
import numpy as np

from .template import MEAN_FACE_68

# Relief of the generic face in units of the landmark box width (z grows away from the camera).
_NOSE_RELIEF = {
    27: -0.03,
    28: -0.06,
    29: -0.09,
    30: -0.12,
    31: -0.05,
    32: -0.06,
    33: -0.07,
    34: -0.06,
    35: -0.05,
}
_EYE_RELIEF = 0.02
_LIP_RELIEF = -0.02


def generic_face_3d(width_mm: float = 150.0) -> np.ndarray:
    """(68, 3) float64 model points in millimetres: x right, y down, z away from the camera.

    x, y are the mean 2-D face; z puts the points on an ellipsoidal head (half axes 0.47 and
    0.62 box widths, depth 0.5) with the nose standing out and the eyes set in.
    """
    xy = MEAN_FACE_68.astype(np.float64) - np.array([0.5, 0.55])
    r2 = (xy[:, 0] / 0.47) ** 2 + (xy[:, 1] / 0.62) ** 2
    z = -0.5 * np.sqrt(np.clip(1.0 - r2, 0.0, None))
    for idx, dz in _NOSE_RELIEF.items():
        z[idx] += dz
    z[36:48] += _EYE_RELIEF
    z[48:68] += _LIP_RELIEF
    return np.column_stack([xy, z]) * width_mm


def camera_matrix(image_size: float) -> np.ndarray:
    f = float(image_size)
    return np.array([[f, 0.0, f / 2], [0.0, f, f / 2], [0.0, 0.0, 1.0]])


def head_pose(
    points_2d: np.ndarray, model_3d: np.ndarray, camera: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rotation matrix (3, 3) and translation (3,) mapping model to camera coordinates."""
    obj = np.ascontiguousarray(model_3d, dtype=np.float64)
    img = np.ascontiguousarray(points_2d, dtype=np.float64)
    dist = np.zeros(4)
    # Start from a frontal face at the distance its image width implies (a weak-perspective
    # guess) so that Levenberg-Marquardt converges to the face in front of the camera.
    f, cx, cy = camera[0, 0], camera[0, 2], camera[1, 2]
    z0 = f * np.ptp(obj[:, 0]) / max(np.ptp(img[:, 0]), 1e-6)
    centre_obj, centre_img = obj.mean(axis=0), img.mean(axis=0)
    tvec = np.array(
        [
            [(centre_img[0] - cx) * z0 / f - centre_obj[0]],
            [(centre_img[1] - cy) * z0 / f - centre_obj[1]],
            [z0 - centre_obj[2]],
        ]
    )
    rvec = np.zeros((3, 1))
    ok, rvec, tvec = cv2.solvePnP(
        obj, img, camera, dist, rvec, tvec, useExtrinsicGuess=True, flags=cv2.SOLVEPNP_ITERATIVE
    )
    if not ok:
        raise ValueError("solvePnP failed")
    return cv2.Rodrigues(rvec)[0], tvec.ravel()


def rotation_from_angles(yaw: float, pitch: float, roll: float = 0.0) -> np.ndarray:
    """R = Rz(roll) · Ry(yaw) · Rx(pitch), angles in degrees (the inverse of
    :func:`angles_from_rotation`)."""
    y, p, r = np.deg2rad([yaw, pitch, roll])
    rx = np.array([[1, 0, 0], [0, np.cos(p), -np.sin(p)], [0, np.sin(p), np.cos(p)]])
    ry = np.array([[np.cos(y), 0, np.sin(y)], [0, 1, 0], [-np.sin(y), 0, np.cos(y)]])
    rz = np.array([[np.cos(r), -np.sin(r), 0], [np.sin(r), np.cos(r), 0], [0, 0, 1]])
    return rz @ ry @ rx


def angles_from_rotation(rot: np.ndarray) -> tuple[float, float, float]:
    """(yaw, pitch, roll) in degrees of R = Rz(roll) · Ry(yaw) · Rx(pitch)."""
    rot = np.asarray(rot, np.float64)
    yaw = np.arcsin(np.clip(-rot[2, 0], -1.0, 1.0))
    pitch = np.arctan2(rot[2, 1], rot[2, 2])
    roll = np.arctan2(rot[1, 0], rot[0, 0])
    return tuple(float(v) for v in np.rad2deg([yaw, pitch, roll]))


def face_pose(landmarks: np.ndarray, image_size: float) -> dict[str, float]:
    """Yaw, pitch and roll (degrees) of 68 landmarks in an image ``image_size`` pixels wide."""
    lm = np.asarray(landmarks, np.float64).reshape(68, 2)
    rot, _ = head_pose(lm, generic_face_3d(), camera_matrix(image_size))
    yaw, pitch, roll = angles_from_rotation(rot)
    return {"yaw": yaw, "pitch": pitch, "roll": roll}
