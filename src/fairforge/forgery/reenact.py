"""Reenactment: the kept face, identity kept, takes the driver's head pose and expression.

The pair's *source* is the kept face (its identity, texture, background) and the pair's
*target* is the driver. Both methods move the source's landmarks so that they show the
driver's yaw, pitch and expression, warp the source image densely so its landmarks land
there (the crop border and a ring around the face stay fixed), and fill a mouth opening that
grew from the driver's mouth. They differ in their motion model, as the learned methods FairFD
used do (sparse keypoints and a thin-plate spline for first-order-motion style models; a
fitted 3-D face model re-posed and re-projected for 3-D-aware ones):

- ``fastreen`` (stands in for FairFD's FastReen [23], Zakharov et al.'s "fast bi-layer"
  model, ECCV 2020, a sparse-keypoint model like FOMM; ``official``,
  :mod:`~fairforge.forgery.fastreen_official`, runs its release): the motion is carried by :data:`KEYPOINTS`, a sparse subset of the 68 landmarks.
  Relative motion: the driver's keypoints are taken in the driver's own face frame (its
  position, size and in-plane roll removed by a least-squares similarity onto the source's
  keypoints), so only their configuration (yaw and pitch foreshorten and shift the jaw, nose
  and eyes; expression opens the mouth and eyes and moves the brows) moves the source's
  keypoints, by ``strength`` of the difference. A thin-plate spline through the keypoints
  warps the image, rendered as two layers (a low-pass layer for colour and shading, a
  high-frequency layer for detail), each given the driver's mouth with its own blend width.
  Simplification: with one driver image there is no neutral driver frame to take motion
  relative to, so the keypoints also carry some of the driver's face shape.
- ``dualreen`` (stands in for FairFD's DualReen [24], Hsu et al.'s Dual-Generator, CVPR
  2022, which re-poses the face's landmarks before rendering; ``official``,
  :mod:`~fairforge.forgery.dualreen_official`, runs its release): a 3-D landmark model is
  fitted to the source: the generic mean 3-D face (:func:`~fairforge.forgery.pose.generic_face_3d`)
  under the source's rigid pose solved by ``cv2.solvePnP``, plus per-point offsets that
  carry the source's own shape and the driver's expression (the expression fitted with a
  small linear blendshape model, :data:`BLENDSHAPES`, on the expression measures of
  :func:`~fairforge.forgery.parsing.measure_expression`). The model is re-projected under the
  driver's yaw and pitch (the source's roll and position kept), and the image follows
  through a piecewise-affine warp of the Delaunay mesh over all 68 landmarks and the fixed
  ring. The driver's mouth is relit by the ratio of the lip colours around it.

Both are learning-free stand-ins: a warp cannot show what the source's image never saw (the
far cheek of a turned head is stretched, not synthesised), and the pose change is limited by
dualreen's ``max_turn`` degrees.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import (
    FORGERY_METHODS,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    apply_affine,
    clean_alpha,
    dilate,
    feather,
    interocular,
    polygon_mask,
    similarity_transform,
)
from .parsing import EXPRESSION, LOWER_MOUTH_WEIGHTS, face_frame, measure_expression
from .pose import (
    angles_from_rotation,
    camera_matrix,
    generic_face_3d,
    head_pose,
    rotation_from_angles,
)
from .warp import (
    ThinPlateSpline,
    border_anchors,
    identity_grid,
    piecewise_affine_maps,
    remap,
    ring_anchors,
    tps_displacement,
)

MOVE_THRESHOLD = 0.25  # pixels: displacements below this are left unwarped
CLOSED_MOUTH = 0.1  # inner-lip gap (IOD units) below which inner lips are not handles


def apply_expression_delta(lm: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Move landmarks so each :data:`EXPRESSION` measure changes by ``delta`` (IOD units)."""
    lm = np.asarray(lm, np.float64)
    ax, ay, iod = face_frame(lm)
    d_open, d_width, d_eye_l, d_eye_r, d_brow_l, d_brow_r = np.asarray(delta, np.float64) * iod
    out = lm.copy()
    centre = lm[48:68].mean(0)
    width = max((lm[54] - lm[48]) @ ax, 1e-6)
    rel = out[48:68] - centre
    out[48:68] += ((rel @ ax) * (d_width / width))[:, None] * ax
    for idx, wgt in LOWER_MOUTH_WEIGHTS.items():
        out[idx] += wgt * d_open * ay
    for upper, lower, d in (([37, 38], [41, 40], d_eye_l), ([43, 44], [47, 46], d_eye_r)):
        out[upper] -= 0.5 * d * ay
        out[lower] += 0.5 * d * ay
    out[17:22] -= d_brow_l * ay
    out[22:27] -= d_brow_r * ay
    return out


BLENDSHAPES = (
    "jaw_open",
    "lips_part",
    "smile",
    "pucker",
    "blink_l",
    "blink_r",
    "brow_raise_l",
    "brow_raise_r",
    "brow_furrow",
)


def blendshape_basis(lm: np.ndarray, unit: float = 0.1) -> np.ndarray:
    """(K, 68, 2) landmark displacements of each of :data:`BLENDSHAPES` at weight 1.

    Each is a smooth, anatomically motivated pattern in the face's own frame, ``unit``
    inter-ocular distances at its largest point. They overlap on purpose (a smile also
    widens the mouth and raises the lower lids; parting the lips also opens the mouth).
    """
    lm = np.asarray(lm, np.float64)
    ax, ay, iod = face_frame(lm)
    u = unit * iod
    basis = np.zeros((len(BLENDSHAPES), 68, 2))
    b = dict(zip(BLENDSHAPES, basis))
    for idx, wgt in LOWER_MOUTH_WEIGHTS.items():
        b["jaw_open"][idx] = wgt * u * ay
    for idx, wgt in {61: 1.0, 62: 1.0, 63: 1.0, 50: 0.5, 51: 0.5, 52: 0.5}.items():
        b["lips_part"][idx] = -wgt * u * ay
    centre = lm[48:68].mean(0)
    half = max(0.5 * (lm[54] - lm[48]) @ ax, 1e-6)
    side = np.clip(((lm[48:68] - centre) @ ax) / half, -1, 1)  # -1 left corner, +1 right
    b["smile"][48:68] = (side[:, None] * ax - 0.5 * np.abs(side)[:, None] * ay) * u
    for idx in (40, 41, 46, 47):
        b["smile"][idx] = -0.3 * u * ay
    b["pucker"][48:68] = -side[:, None] * ax * u
    for upper, lower, name in (([37, 38], [41, 40], "blink_l"), ([43, 44], [47, 46], "blink_r")):
        b[name][upper] = u * ay
        b[name][lower] = -0.3 * u * ay
    b["brow_raise_l"][17:22] = -u * ay
    b["brow_raise_r"][22:27] = -u * ay
    for idx, wgt, toward in (
        (21, 1.0, 1),
        (20, 0.6, 1),
        (19, 0.3, 1),
        (22, 1.0, -1),
        (23, 0.6, -1),
        (24, 0.3, -1),
    ):
        b["brow_furrow"][idx] = wgt * u * (0.6 * ay + 0.4 * toward * ax)
    return basis


def fit_blendshapes(
    lm: np.ndarray,
    goal: np.ndarray,
    ridge: float = 1e-3,
    bounds: tuple[float, float] = (-4.0, 6.0),
    iterations: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """Weights w so that ``measure_expression(lm + basis . w)`` is close to ``goal``.

    The measures are almost linear in the landmarks, so a couple of Gauss-Newton steps with a
    finite-difference Jacobian (one column per blendshape) converge. Returns (weights, moved
    landmarks).
    """
    lm = np.asarray(lm, np.float64)
    basis = blendshape_basis(lm)
    from scipy.optimize import lsq_linear  # here, not at start-up of every job using the registry

    k = len(basis)
    weights = np.zeros(k)
    reg = np.sqrt(ridge) * np.eye(k)
    for _ in range(iterations):
        current = lm + np.tensordot(weights, basis, 1)
        m0 = measure_expression(current)
        jac = np.stack([measure_expression(current + basis[j]) - m0 for j in range(k)], 1)
        a = np.concatenate([jac, reg], 0)
        rhs = np.concatenate([goal - m0, -np.sqrt(ridge) * weights], 0)
        lo, hi = bounds
        step = lsq_linear(a, rhs, bounds=(lo - weights, hi - weights)).x
        weights = weights + step
    return weights, lm + np.tensordot(weights, basis, 1)


def _mouth_affine(driver_lm: np.ndarray, moved_lm: np.ndarray) -> np.ndarray:
    """Least-squares affine (2x3) mapping the driver's lip points onto the moved lips."""
    src = np.asarray(driver_lm[48:68], np.float64)
    dst = np.asarray(moved_lm[48:68], np.float64)
    design = np.concatenate([src, np.ones((len(src), 1))], 1)
    sol, *_ = np.linalg.lstsq(design, dst, rcond=None)
    return sol.T


# The sparse keypoints that carry fastreen's motion: jaw (5), brows (2), eye corners and lids
# (8), nose bridge and tip (2), mouth corners, outer and inner lip centres (6).
KEYPOINTS = np.array(
    [2, 5, 8, 11, 14, 19, 24, 36, 38, 39, 40, 42, 44, 45, 46, 27, 30, 48, 54, 51, 57, 62, 66]
)


def _with_angles(rot: np.ndarray, yaw: float, pitch: float) -> np.ndarray:
    _, _, roll = angles_from_rotation(rot)
    return rotation_from_angles(yaw, pitch, roll)


def lift_landmarks(
    lm: np.ndarray, model: np.ndarray, rot: np.ndarray, tvec: np.ndarray, camera: np.ndarray
) -> np.ndarray:
    """(68, 3) model-space points that project exactly onto ``lm`` under (rot, tvec):
    each model point moved parallel to the image plane, at its own depth, onto its
    landmark's viewing ray (the per-point offsets of the fitted model)."""
    cam_pts = model @ rot.T + tvec
    depth = cam_pts[:, 2:3]
    f, c = np.array([camera[0, 0], camera[1, 1]]), camera[:2, 2]
    on_ray = np.concatenate([(np.asarray(lm, np.float64) - c) * depth / f, depth], 1)
    return (on_ray - tvec) @ rot


def project(points: np.ndarray, rot: np.ndarray, tvec: np.ndarray, camera: np.ndarray):
    cam_pts = points @ rot.T + tvec
    if (cam_pts[:, 2] <= 1e-6).any():
        raise ForgeryError("re-posed face model falls behind the camera")
    return cam_pts[:, :2] / cam_pts[:, 2:3] * np.diag(camera)[:2] + camera[:2, 2]


class _Reenactment(ForgeryMethod):
    backend = "classical"
    kept = "source"
    needs_target = True
    defaults = {
        "strength": 1.0,  # fraction of the pose and expression difference transferred
        "ring": 1.4,  # fixed ring around the face, hull scale about its centre
        "min_mouth_area": 0.01,  # IOD^2: a mouth opening grown less is warped, not filled
    }

    def retarget(self, source_lm, driver_lm, goal, shape) -> tuple[np.ndarray, dict]:
        """The source's landmarks moved to the driver's pose and expression, and extras."""
        raise NotImplementedError

    def displacement(self, source_lm, moved, anchors, shape, iod, handles) -> np.ndarray:
        """Backward displacement field (HxWx2) carrying ``source_lm`` to ``moved``."""
        raise NotImplementedError

    def render(self, source_img, disp, mouth_img, mouth_region, iod) -> np.ndarray:
        raise NotImplementedError

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = source_img.shape
        iod = interocular(source_lm)
        m_src = measure_expression(source_lm)
        m_drv = measure_expression(target_lm)
        goal = m_src + float(self.options["strength"]) * (m_drv - m_src)
        goal[[0, 2, 3]] = np.maximum(goal[[0, 2, 3]], 0.0)  # openings cannot go negative
        moved, info = self.retarget(
            np.asarray(source_lm, np.float64), np.asarray(target_lm, np.float64), goal, shape
        )
        if not np.isfinite(moved).all():
            raise ForgeryError("pose and expression retargeting diverged")

        # The fixed ring surrounds where the face is and where it goes (an opening jaw).
        ring = ring_anchors(np.concatenate([source_lm, moved]), float(self.options["ring"]), shape)
        anchors = np.concatenate([border_anchors(shape), ring], 0)
        # Inner-lip points of a (nearly) closed mouth almost coincide yet move apart; as warp
        # handles they fold the image. The outer lips drive the warp then, and the opening
        # is filled from the driver below.
        handles = np.arange(68)
        if m_src[0] < CLOSED_MOUTH:
            handles = np.setdiff1d(handles, np.arange(60, 68))
        disp = self.displacement(source_lm, moved, anchors, shape, iod, handles)
        # A warp can overshoot between close handles; no pixel moves further than a handle.
        reach = float(np.abs(moved - source_lm).max()) + 0.5
        np.clip(disp, -reach, reach, out=disp)
        # Confine the warp to the ring: beyond it the source stays exactly as it was.
        ring_mask = polygon_mask(ring, shape)
        disp *= feather(ring_mask, max(int(round(0.15 * iod)), 1))[..., None]
        moving = (np.linalg.norm(disp, axis=2) > MOVE_THRESHOLD).astype(np.uint8) * 255

        inner = moved[60:68]
        mouth_region = np.zeros(shape[:2], np.uint8)
        mouth_img = None
        # Fill only an opening that grew: a mouth that closes or stays is handled by the warp.
        grown = cv2.contourArea(inner.astype(np.float32)) - cv2.contourArea(
            source_lm[60:68].astype(np.float32)
        )
        if (
            grown > self.options["min_mouth_area"] * iod**2
            and cv2.contourArea(target_lm[60:68].astype(np.float32)) > 1.0
        ):
            mouth_region = polygon_mask(inner, shape, convex=False)
            mat = _mouth_affine(target_lm, moved)
            mouth_img = cv2.warpAffine(
                target_img,
                mat,
                (shape[1], shape[0]),
                flags=cv2.INTER_LINEAR,
                borderMode=cv2.BORDER_REFLECT,
            )
        rendered = self.render(source_img, disp, mouth_img, mouth_region, iod)

        changed = moving | dilate(mouth_region, int(round(0.1 * iod)) + 1)
        changed = cv2.morphologyEx(changed, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        if not changed.any():
            raise ForgeryError("source and driver pose and expression are identical")
        image = source_img.copy()
        sel = changed > 0
        image[sel] = rendered[sel]
        mask = sel.astype(np.uint8) * 255
        extra = {
            "expression": dict(zip(EXPRESSION, np.round(goal, 4).tolist())),
            "landmarks": np.round(moved, 2).tolist(),
            **info,
        }
        return ForgeryResult(image, mask, extra)


def _sample(img: np.ndarray, disp: np.ndarray) -> np.ndarray:
    xs, ys = identity_grid(img.shape)
    return remap(img, xs + disp[..., 0], ys + disp[..., 1])


@FORGERY_METHODS.register("fastreen/classical")
class FastReenactment(_Reenactment):
    defaults = {**_Reenactment.defaults, "low_sigma": 0.12}  # low-pass scale, IOD units

    def retarget(self, source_lm, driver_lm, goal, shape):
        strength = float(self.options["strength"])
        kp_src, kp_drv = source_lm[KEYPOINTS], driver_lm[KEYPOINTS]
        # The driver's keypoints in the source's frame: its similarity (position, size,
        # roll) removed, its configuration (pose, expression) kept.
        aligned = apply_affine(similarity_transform(kp_drv, kp_src), kp_drv).astype(np.float64)
        motion = strength * (aligned - kp_src)
        # The other landmarks follow a spline through the keypoints (they are reported, and
        # the mouth fill uses the inner lips).
        moved = source_lm.copy()
        moved[KEYPOINTS] = kp_src + motion
        spline = ThinPlateSpline(kp_src, motion, scale=float(max(shape[:2])))
        rest = np.setdiff1d(np.arange(68), KEYPOINTS)
        moved[rest] = source_lm[rest] + spline(source_lm[rest])
        return moved, {"keypoints": KEYPOINTS.tolist()}

    def displacement(self, source_lm, moved, anchors, shape, iod, handles):
        keep = np.intersect1d(KEYPOINTS, handles)
        return tps_displacement(
            moved[keep], source_lm[keep], anchors, shape, step=max(int(iod / 10), 1)
        )

    def render(self, source_img, disp, mouth_img, mouth_region, iod):
        sigma = max(float(self.options["low_sigma"]) * iod, 1.0)
        src = source_img.astype(np.float32)
        low = cv2.GaussianBlur(src, (0, 0), sigma)
        high = src - low
        low_w, high_w = _sample(low, disp), _sample(high, disp)
        if mouth_img is not None:
            drv = mouth_img.astype(np.float32)
            drv_low = cv2.GaussianBlur(drv, (0, 0), sigma)
            # Colour blends over a wide ramp, detail switches sharply at the lip line.
            a_low = feather(mouth_region, max(int(round(0.08 * iod)), 1), inside=False)[..., None]
            a_high = clean_alpha((mouth_region > 0).astype(np.float32))[..., None]
            low_w = drv_low * a_low + low_w * (1 - a_low)
            high_w = (drv - drv_low) * a_high + high_w * (1 - a_high)
        return np.clip(low_w + high_w + 0.5, 0, 255).astype(np.uint8)


@FORGERY_METHODS.register("dualreen/classical")
class DualReenactment(_Reenactment):
    defaults = {
        **_Reenactment.defaults,
        "ridge": 1e-3,
        "max_turn": 25.0,  # degrees: larger yaw/pitch changes are clipped to this
    }

    def _turn(self, source_lm, driver_lm, shape):
        """Source and driver rigid poses, and the (yaw, pitch) the fake should show."""
        camera = camera_matrix(shape[1])
        model = generic_face_3d()
        try:
            rot_s, t_s = head_pose(source_lm, model, camera)
            rot_d, _ = head_pose(driver_lm, model, camera)
        except (ValueError, cv2.error) as err:
            raise ForgeryError(f"head pose fit failed ({err})") from err
        yaw_s, pitch_s, _ = angles_from_rotation(rot_s)
        yaw_d, pitch_d, _ = angles_from_rotation(rot_d)
        limit = float(self.options["max_turn"])
        strength = float(self.options["strength"])
        d_yaw = float(np.clip(strength * (yaw_d - yaw_s), -limit, limit))
        d_pitch = float(np.clip(strength * (pitch_d - pitch_s), -limit, limit))
        pose = {
            "source_yaw": round(yaw_s, 2),
            "source_pitch": round(pitch_s, 2),
            "driver_yaw": round(yaw_d, 2),
            "driver_pitch": round(pitch_d, 2),
        }
        return camera, model, rot_s, t_s, yaw_s + d_yaw, pitch_s + d_pitch, pose

    def retarget(self, source_lm, driver_lm, goal, shape):
        weights, expressive = fit_blendshapes(source_lm, goal, ridge=float(self.options["ridge"]))
        camera, model, rot_s, t_s, yaw, pitch, pose = self._turn(source_lm, driver_lm, shape)
        # The fitted model: mean face under the source's pose, offsets carrying the source's
        # shape and the driver's expression; then re-posed to the driver's yaw and pitch.
        fitted = lift_landmarks(expressive, model, rot_s, t_s, camera)
        moved = project(fitted, _with_angles(rot_s, yaw, pitch), t_s, camera)
        info = {
            "blendshapes": dict(zip(BLENDSHAPES, np.round(weights, 4).tolist())),
            "yaw": round(yaw, 2),
            "pitch": round(pitch, 2),
            **pose,
        }
        return moved, info

    def displacement(self, source_lm, moved, anchors, shape, iod, handles):
        dst = np.concatenate([moved[handles], anchors], 0)
        src = np.concatenate([source_lm[handles], anchors], 0)
        map_x, map_y, inside = piecewise_affine_maps(src, dst, shape)
        xs, ys = identity_grid(shape)
        disp = np.stack([map_x - xs, map_y - ys], 2)
        disp[~inside] = 0.0
        return disp

    def render(self, source_img, disp, mouth_img, mouth_region, iod):
        warped = _sample(source_img, disp)
        if mouth_img is None:
            return warped
        # Relight the driver's mouth by the per-channel ratio of the two faces' lip colours
        # around it (albedo x light: a dark interior stays dark under brighter lips).
        rim = (dilate(mouth_region, max(int(round(0.08 * iod)), 1)) > 0) & (mouth_region == 0)
        drv = mouth_img.astype(np.float32)
        if rim.sum() >= 8:
            ratio = (warped[rim].astype(np.float32).mean(0) + 1.0) / (drv[rim].mean(0) + 1.0)
            drv = drv * np.clip(ratio, 0.5, 2.0)
        alpha = feather(mouth_region, 1, inside=False)[..., None]
        out = drv * alpha + warped.astype(np.float32) * (1 - alpha)
        return np.clip(out + 0.5, 0, 255).astype(np.uint8)
