"""The procedural renderer of photo-like faces: one :class:`SubjectParams` seen as one
:class:`ViewParams`.

Features are 3-D points on an ellipsoidal head, rotated by yaw/pitch and projected
orthographically, then rolled in the image plane: yaw slides the features sideways and
foreshortens the far side the way a real head does. Drawing is OpenCV polygons (anti-aliased,
sub-pixel) on a uint8 canvas; smooth quantities (shading, shadows, skin texture, beard
shadow, hair texture) are computed at low resolution inside a region of interest and
resized, which keeps a 400 px face at a few milliseconds.
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from fairforge.seeding import rng_for
from fairforge.sources.synthetic.defaults import DEFAULT_SIZE
from fairforge.sources.synthetic.identities import SubjectParams, ViewParams

_SHIFT = 4  # fixed-point bits for sub-pixel polygon vertices
_ONE = 1 << _SHIFT


# ---------------------------------------------------------------------------------------------
# Geometry


class _Head:
    """Head frame (px, x right, y down, z towards the camera) to image coordinates."""

    def __init__(self, subject: SubjectParams, view: ViewParams, size: int):
        s = size / 400.0
        self.a = subject.half_width * view.scale * s
        self.b = self.a * subject.aspect
        self.c = self.a * subject.depth
        self.cx = size / 2 + view.shift_x * s
        self.cy = size / 2 + 8 * s + view.shift_y * s
        yaw, pitch, roll = (math.radians(v) for v in (view.yaw, view.pitch, view.roll))
        self.cos_yaw, self.sin_yaw = math.cos(yaw), math.sin(yaw)
        self.cos_pitch, self.sin_pitch = math.cos(pitch), math.sin(pitch)
        self.cos_roll, self.sin_roll = math.cos(roll), math.sin(roll)
        # project() as one linear map of (x, y, z): yaw, then pitch, then roll.
        cy_, sy_, cp, sp = self.cos_yaw, self.sin_yaw, self.cos_pitch, self.sin_pitch
        unroll = np.array([[cy_, 0.0, sy_], [sy_ * sp, cp, -cy_ * sp]])
        rolled = np.array([[self.cos_roll, -self.sin_roll], [self.sin_roll, self.cos_roll]])
        self.matrix_t = (rolled @ unroll).T.copy()
        self.offset = np.array([self.cx, self.cy])

    def surface_z(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r2 = (x / self.a) ** 2 + (y / self.b) ** 2
        return self.c * np.sqrt(np.maximum(1.0 - r2, 0.0))

    def unrolled(self, x, y, z=None, dz=0.0):
        """Yaw and pitch, orthographic projection; coordinates before roll, about the centre."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if z is None:
            z = self.surface_z(x, y)
        z = z + dz
        x1 = x * self.cos_yaw + z * self.sin_yaw
        z1 = -x * self.sin_yaw + z * self.cos_yaw
        y1 = y * self.cos_pitch - z1 * self.sin_pitch
        return x1, y1

    def body(self, x, y) -> np.ndarray:
        """The shoulders and the base of the neck do not turn with the head."""
        return np.stack(
            [self.cx + np.asarray(x, dtype=np.float64), self.cy + np.asarray(y, dtype=np.float64)],
            axis=-1,
        )

    def project(self, x, y, z=None, dz=0.0) -> np.ndarray:
        """Image coordinates (..., 2) of head-frame points; z defaults to the head surface."""
        x = np.asarray(x, dtype=np.float64)
        xyz = np.empty(x.shape + (3,))
        xyz[..., 0] = x
        xyz[..., 1] = y
        xyz[..., 2] = (self.surface_z(x, y) if z is None else z) + dz
        return xyz @ self.matrix_t + self.offset

    def to_unrolled(self, px: np.ndarray, py: np.ndarray):
        dx, dy = px - self.cx, py - self.cy
        return dx * self.cos_roll + dy * self.sin_roll, -dx * self.sin_roll + dy * self.cos_roll


def _fill(img: np.ndarray, polys, colour) -> None:
    # One call per polygon: a single fillPoly call leaves overlaps of its polygons unfilled.
    col = _colour(colour, img)
    for p in polys:
        pts = np.round(np.asarray(p) * _ONE).astype(np.int32)
        cv2.fillPoly(img, [pts], col, cv2.LINE_AA, _SHIFT)


def _line(img: np.ndarray, pts, colour, thickness: float, closed: bool = False) -> None:
    thick = max(int(round(thickness)), 1)
    arr = np.round(np.asarray(pts) * _ONE).astype(np.int32)
    cv2.polylines(img, [arr], closed, _colour(colour, img), thick, cv2.LINE_AA, _SHIFT)


def _colour(colour, img: np.ndarray):
    if isinstance(colour, (int, float)):
        return int(colour)
    c = [int(round(min(max(v, 0.0), 255.0))) for v in np.asarray(colour, dtype=float).tolist()]
    return tuple(c) if img.ndim == 3 else c[0]


def _ellipse(
    cx: float,
    cy: float,
    rx: float,
    ry: float,
    n: int = 24,
    start: float = 0.0,
    stop: float = 2 * math.pi,
) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(start, stop, n, endpoint=False)
    return cx + rx * np.cos(t), cy + ry * np.sin(t)


def _face_outline(subject: SubjectParams, head: _Head, n: int = 36):
    """Face contour in the head frame (x, y, z), clockwise from the crown."""
    a, b = head.a, head.b
    theta = np.linspace(0.0, math.pi, n)
    yn = -np.cos(theta)
    upper = np.sqrt(np.clip(1 - yn**2, 0, None))
    ypos = np.clip(yn, 0, 1)
    lower = np.sqrt(np.clip(1 - ypos**subject.jaw_exponent, 0, None))
    lower = lower * (1 - (1 - subject.jaw_width) * ypos**1.5)
    xn = np.where(yn < 0, upper, lower)
    x = np.concatenate([a * xn, -a * xn[::-1][1:-1]])
    y = np.concatenate([b * yn, b * yn[::-1][1:-1]])
    # The chin is in front of the rotation centre; the sides are the silhouette.
    z = head.c * 0.8 * np.clip(y / b, 0, 1) ** 2
    return x, y, z


# ---------------------------------------------------------------------------------------------
# Cached textures (fixed seeds, so they are part of the renderer, not of any random draw)


@lru_cache(maxsize=4)
def _noise_tiles(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Camera noise as (positive, negative) uint8 parts, mixed luminance and chroma grain."""
    n = size + 128
    rng = rng_for("fairforge.synthetic", "camera-noise", n)
    luma = rng.standard_normal((n, n, 1), dtype=np.float32)
    chroma = rng.standard_normal((n, n, 3), dtype=np.float32)
    noise = 4.0 * (0.8 * luma + 0.45 * chroma)
    pos = np.clip(noise, 0, 255).astype(np.uint8)
    neg = np.clip(-noise, 0, 255).astype(np.uint8)
    return pos, neg


@lru_cache(maxsize=1)
def _hair_streaks() -> np.ndarray:
    """Vertical streaks in [-1, 1]: noise blurred much more along y than along x."""
    rng = rng_for("fairforge.synthetic", "hair-streaks")
    noise = rng.standard_normal((256, 256)).astype(np.float32)
    # Blur a 3x3 tiling and keep the middle, so the tile wraps without seams.
    streak = cv2.GaussianBlur(np.tile(noise, (3, 3)), (0, 0), sigmaX=0.7, sigmaY=9.0)
    streak = streak[256:512, 256:512].copy()
    streak /= float(np.abs(streak).max())
    return streak


@lru_cache(maxsize=256)
def _skin_texture(texture_seed: int) -> np.ndarray:
    """A subject's skin pattern on the face square [-1.3, 1.3]^2, around 1.0."""
    rng = np.random.default_rng(texture_seed)
    coarse = cv2.resize(
        rng.standard_normal((6, 6)).astype(np.float32), (64, 64), interpolation=cv2.INTER_CUBIC
    )
    fine = cv2.GaussianBlur(rng.standard_normal((64, 64)).astype(np.float32), (0, 0), 1.0)
    return 1.0 + 0.045 * coarse + 0.05 * fine


# ---------------------------------------------------------------------------------------------
# Rendering


def _background(view: ViewParams, size: int, gain: np.ndarray) -> np.ndarray:
    low = 24
    corners = np.array(view.background, dtype=np.float32).reshape(2, 2, 3)
    grad = cv2.resize(corners, (low, low), interpolation=cv2.INTER_LINEAR)
    rng = np.random.default_rng(view.background_seed)
    yy, xx = np.mgrid[0:low, 0:low].astype(np.float32)
    for _ in range(int(rng.integers(2, 6))):
        cx, cy = rng.uniform(-2, low + 2, size=2)
        r = rng.uniform(2.5, 8)
        weight = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))[..., None]
        colour = rng.uniform(10, 245, size=3)
        colour = (colour.mean() + (colour - colour.mean()) * rng.uniform(0.2, 0.8)).astype(
            np.float32
        )
        grad = grad * (1 - 0.7 * weight) + colour * 0.7 * weight
    if rng.random() < 0.5:
        # A soft vertical or horizontal edge, like a door frame or a shelf.
        pos = rng.uniform(0.1, 0.9) * low
        step = 1 / (1 + np.exp(-((xx if rng.random() < 0.5 else yy) - pos) * 2.0))
        grad = grad * (1 - 0.25 * step[..., None]) + 0.25 * step[..., None] * rng.uniform(
            10, 245, size=3
        ).astype(np.float32)
    low8 = np.clip(grad * gain + 0.5, 0, 255).astype(np.uint8)
    return cv2.resize(low8, (size, size), interpolation=cv2.INTER_CUBIC)


def _roi(points: np.ndarray, size: int, margin: int) -> tuple[int, int, int, int]:
    x0 = max(int(points[:, 0].min()) - margin, 0)
    y0 = max(int(points[:, 1].min()) - margin, 0)
    x1 = min(int(points[:, 0].max()) + margin + 1, size)
    y1 = min(int(points[:, 1].max()) + margin + 1, size)
    return x0, y0, x1, y1


def _blobs(u: np.ndarray, v: np.ndarray, blobs) -> np.ndarray:
    """Sum of weighted gaussians ``(weight, cu, cv, su, sv)`` on the un-rolled grid."""
    out = np.zeros(u.shape, dtype=np.float32)
    for weight, cu, cv_, su, sv in blobs:
        out += np.float32(weight) * np.exp(-(((u - cu) / su) ** 2 + ((v - cv_) / sv) ** 2) * 0.5)
    return out


class _Renderer:
    def __init__(self, subject: SubjectParams, view: ViewParams, size: int):
        self.s = subject
        self.v = view
        self.size = size
        self.h = _Head(subject, view, size)
        self.skin = np.array(subject.skin_rgb)
        light = np.array(
            [
                math.sin(math.radians(view.light_azimuth))
                * math.cos(math.radians(view.light_elevation)),
                -math.sin(math.radians(view.light_elevation)),
                math.cos(math.radians(view.light_azimuth))
                * math.cos(math.radians(view.light_elevation)),
            ]
        )
        self.light = light / np.linalg.norm(light)
        # Exposure and light colour; the background, shirt and glasses take it when drawn.
        self.gain = np.array(view.light_rgb, dtype=np.float32) * np.float32(view.exposure)

    # -- feature geometry in the head frame ------------------------------------------------
    def eye(self, side: int):
        s, h, v = self.s, self.h, self.v
        a = h.a
        ex = side * s.eye_spacing * a
        ey = s.eye_y * h.b
        w = s.eye_width * a
        eh = s.eye_height * a
        opening = 1.0 - 0.75 * v.eye_closure - 0.12 * v.smile
        t = np.linspace(-1, 1, 15)
        # Upper lid peaks towards the inner corner; the tilt lifts the outer corner.
        peak = (1 - t**2) ** 0.75 * (1 - 0.15 * t * side)
        upper_y = ey - eh * opening * peak
        lower_y = ey + eh * 0.5 * (1 - t**2) ** 0.9 * (1 - 0.25 * v.smile)
        x = ex + w * t
        tilt = -s.eye_tilt * side * t * w
        return x, upper_y + tilt, lower_y + tilt, ex, ey, w

    def draw(self) -> np.ndarray:
        s, v, h, size = self.s, self.v, self.h, self.size
        img = _background(v, size, self.gain)
        hair_mask = np.zeros((size, size), dtype=np.uint8)
        a, b = h.a, h.b

        self._shirt(img)
        back_hair = self._back_hair()
        if back_hair is not None:
            _fill(img, [back_hair], s.hair_rgb)
            _fill(hair_mask, [back_hair], 255)
        if s.hair_style == "bun":
            bun = h.project(*_ellipse(0.0, -b * 1.02, a * 0.42, a * 0.38), z=0.0, dz=-0.5 * h.c)
            _fill(img, [bun], s.hair_rgb)
            _fill(hair_mask, [bun], 255)

        neck_top = h.project(
            np.array([0.6, -0.6]) * a, np.array([0.4, 0.4]) * b, z=np.full(2, -0.2 * h.c)
        )
        neck_base = h.body(np.array([-0.64, 0.64]) * a, np.array([2.2, 2.2]) * b)
        neck = np.concatenate([neck_top, neck_base])
        ears = []
        # Long hair falls over the ears.
        for side in () if s.hair_style in ("long", "bob") else (-1, 1):
            ex, ey = _ellipse(
                side * a * 0.97, b * 0.1, a * 0.15 * s.ear_size, b * 0.23 * s.ear_size, n=20
            )
            ears.append(h.project(ex, ey, z=np.full_like(ex, -0.25 * h.c)))
        ox, oy, oz = _face_outline(s, h)
        face = h.project(ox, oy, z=oz)
        skin_polys = [neck, *ears, face]
        _fill(img, [neck], self.skin * 0.95)
        _fill(img, ears, self.skin * 0.96)
        for ear in ears:
            centre = ear.mean(axis=0)
            _fill(img, [centre + (ear - centre) * 0.55], self.skin * 0.72)
        _fill(img, [face], self.skin)
        _fill(hair_mask, skin_polys, 0)

        for side in (-1, 1):
            self._eye(img, side)
            self._brow(img, side)
        self._nose(img)
        self._mouth(img)
        for mx, my, mr in s.moles:
            pts = h.project(*_ellipse(mx * a, my * b, mr * a, mr * a, n=10))
            _fill(img, [pts], self.skin * 0.55)

        self._shade(img, skin_polys, face)

        front = self._front_hair()
        if front:
            colour = np.array(s.hair_rgb)
            if s.hair_style == "buzz":
                colour = colour * 0.6 + self.skin * 0.4
            _fill(img, front, colour)
            _fill(hair_mask, front, 255)
        self._hair_texture(img, hair_mask)
        if s.glasses:
            self._glasses(img)

        img = cv2.GaussianBlur(img, (0, 0), v.blur_sigma)
        pos, neg = _noise_tiles(size)
        oy0, ox0 = v.noise_offset
        p = pos[oy0 : oy0 + size, ox0 : ox0 + size]
        n = neg[oy0 : oy0 + size, ox0 : ox0 + size]
        if v.noise_level != 1.0:
            p = cv2.convertScaleAbs(p, alpha=v.noise_level)
            n = cv2.convertScaleAbs(n, alpha=v.noise_level)
        return cv2.subtract(cv2.add(img, p), n)

    # -- parts -----------------------------------------------------------------------------
    def _shirt(self, img: np.ndarray) -> None:
        h = self.h
        a, b = h.a, h.b
        xs = np.array([-0.62, -1.3, -2.3, -2.6, 2.6, 2.3, 1.3, 0.62, 0.0]) * a
        ys = np.array([1.22, 1.38, 1.7, 3.0, 3.0, 1.7, 1.38, 1.22, 1.6]) * b
        _fill(img, [h.body(xs, ys)], np.array(self.v.shirt_rgb) * self.gain)

    def _crown(self, phi: np.ndarray):
        """Outer hair silhouette at angle ``phi`` (0 at the top, +-pi/2 level with the ears)."""
        s, h = self.s, self.h
        vol = s.hair_volume
        p1 = (s.texture_seed % 997) / 997 * 2 * math.pi
        p2 = (s.texture_seed % 991) / 991 * 2 * math.pi
        wobble = 1 + 0.025 * np.sin(3 * phi + p1) + 0.015 * np.sin(7 * phi + p2)
        if s.hair_length <= 0:
            # Short hair hugs the head above the ears instead of bulging over them.
            vol = vol * (1 - 0.7 * np.clip((np.abs(phi) - 1.0) / 0.6, 0, 1))
        x = h.a * (1 + vol) * np.sin(phi) * wobble
        y = -h.b * (1 + 0.7 * vol) * np.cos(phi) * wobble - 0.02 * h.b
        return x, y

    def _back_hair(self):
        s, h = self.s, self.h
        if s.hair_length <= 0:
            return None
        a, b = h.a, h.b
        vol = s.hair_volume
        top_x, top_y = self._crown(np.linspace(-math.pi / 2, math.pi / 2, 25))
        bottom = s.hair_length * b
        flare = {"long": 0.12 + 0.1 * min(s.hair_length - 1.5, 1.0), "bob": 0.06}.get(
            s.hair_style, 0.0
        )
        side = a * (1 + vol)
        right_x = np.array([side * 1.02, side + flare * a])
        right_y = np.array([0.5 * bottom, bottom - 0.1 * b])
        t = np.linspace(1, -1, 13)
        bot_x = (side + flare * a) * np.sin(t * math.pi / 2) * 0.98
        if s.hair_style == "long":
            bot_y = bottom - 0.1 * b * np.abs(t) ** 2 + 0.05 * b * np.cos(t * 7 + s.hair_part)
        else:
            bot_y = bottom - 0.15 * b * np.abs(t) ** 3
        x = np.concatenate([top_x, right_x, bot_x, -right_x[::-1]])
        y = np.concatenate([top_y, right_y, bot_y, right_y[::-1]])
        return h.project(x, y, z=np.full(x.shape, -0.3 * h.c))

    def _front_hair(self):
        s, h = self.s, self.h
        a, b = h.a, h.b
        side_y = {
            "long": 0.25,
            "bob": 0.3,
            "bun": 0.02,
            "pixie": 0.08,
            "short": 0.04,
            "medium": 0.12,
            "buzz": 0.0,
        }[s.hair_style] * b
        # Outer silhouette over the crown, from the left sideburn to the right one.
        vol = s.hair_volume
        end = math.acos(min(max(-(side_y + 0.02 * b) / (b * (1 + 0.7 * vol)), -1.0), 1.0))
        out_x, out_y = self._crown(np.linspace(-end, end, 31))
        # Hairline framing the forehead, right to left: rounded corners at the temples, a
        # tilt towards the parting, and a fringe lower in the middle for some styles.
        psi = np.linspace(math.pi / 2, -math.pi / 2, 21)
        hl = -s.hairline * b
        rx = a * (0.86 if s.hair_style in ("long", "bob") else 0.9)
        in_x = rx * np.sin(psi)
        in_y = side_y - (side_y - hl) * np.abs(np.cos(psi)) ** 0.6
        in_y = in_y + 0.06 * b * s.hair_part * np.sin(psi) * np.cos(psi)
        if s.hair_style in ("pixie", "long", "bob") and s.hair_part > 0.2:
            fringe = 0.12 * b * (s.hair_part - 0.2) * np.cos(psi) ** 2
            in_y = in_y + fringe * (1 + 0.25 * np.sin(psi * 14 + s.hair_part * 5))
        # Hair never reaches the brows, even raised ones: the features stay visible.
        brow_top = (
            (s.eye_y - s.brow_gap - s.brow_arch - 0.07) * b - s.brow_thickness * a * 0.6 - 0.04 * b
        )
        in_y = np.where(np.abs(in_x) < a * 0.78, np.minimum(in_y, brow_top), in_y)
        in_z = h.surface_z(in_x, in_y)
        x = np.concatenate([out_x, in_x])
        y = np.concatenate([out_y, in_y])
        z = np.concatenate([np.zeros_like(out_x), in_z])
        return [h.project(x, y, z=z)]

    def _eye(self, img: np.ndarray, side: int) -> None:
        s, v, h = self.s, self.v, self.h
        x, upper, lower, ex, ey, w = self.eye(side)
        proj = h.project
        dz = -0.04 * h.a
        sclera_pts = proj(np.concatenate([x, x[::-1]]), np.concatenate([upper, lower[::-1]]), dz=dz)
        sclera = np.array([236, 230, 222]) * (0.9 + 0.06 * (1 - s.darkness))
        _fill(img, [sclera_pts], sclera)
        r_iris = 0.42 * w
        ix = ex + v.gaze_x * 0.35 * w
        iy = ey - 0.1 * s.eye_height * h.a + v.gaze_y * 0.15 * w
        iris_ring = proj(*_ellipse(ix, iy, r_iris, r_iris, n=20), dz=dz)
        _fill(img, [iris_ring], np.array(s.iris_rgb) * 0.6)
        _fill(img, [proj(*_ellipse(ix, iy, r_iris * 0.8, r_iris * 0.8, n=20), dz=dz)], s.iris_rgb)
        _fill(
            img, [proj(*_ellipse(ix, iy, r_iris * 0.42, r_iris * 0.42, n=14), dz=dz)], (12, 10, 10)
        )
        glint = proj(
            *_ellipse(ix + 0.25 * r_iris, iy - 0.3 * r_iris, r_iris * 0.14, r_iris * 0.14, n=8),
            dz=dz,
        )
        _fill(img, [glint], (245, 245, 245))
        # Lids in skin colour hide what the iris overlaps beyond the eye opening.
        lid_up_y = np.concatenate([upper, (upper - 2.2 * s.eye_height * h.a)[::-1]])
        lid_lo_y = np.concatenate([lower, (lower + 1.2 * s.eye_height * h.a)[::-1]])
        xx = np.concatenate([x, x[::-1]])
        _fill(img, [proj(xx, lid_up_y, dz=dz)], self.skin * 0.93)
        _fill(img, [proj(xx, lid_lo_y, dz=dz)], self.skin * 0.97)
        lash = np.array([18, 14, 14]) * 0.6 + np.array(s.brow_rgb) * 0.4
        _line(img, proj(x, upper, dz=dz), lash, max(0.028 * h.a, 1.5))
        outer = slice(9, 15) if side > 0 else slice(0, 6)
        _line(img, proj(x[outer], upper[outer] - 0.004 * h.a, dz=dz), lash, max(0.04 * h.a, 2))
        _line(img, proj(x[2:-2], lower[2:-2], dz=dz), self.skin * 0.62, max(0.012 * h.a, 1))
        crease = upper - (0.55 + 0.4 * v.eye_closure) * s.eye_height * h.a
        _line(img, proj(x[2:-2], crease[2:-2], dz=dz), self.skin * 0.78, max(0.014 * h.a, 1))

    def _brow(self, img: np.ndarray, side: int) -> None:
        s, v, h = self.s, self.v, self.h
        a = h.a
        inner = side * (s.eye_spacing - s.eye_width * 0.85) * a
        t = np.linspace(0, 1, 12)
        x = inner + side * t * s.brow_length * a * 1.55
        base_y = (s.eye_y - s.brow_gap) * h.b - v.brow_raise * 0.07 * h.b
        arch = np.sin(np.clip(t * 1.35, 0, math.pi) * 0.95) * s.brow_arch * h.b
        centre_y = base_y - arch + 0.02 * h.b * t * (1 - v.brow_raise)
        thick = s.brow_thickness * a * (1.15 - 0.75 * t**1.5)
        pts = h.project(
            np.concatenate([x, x[::-1]]),
            np.concatenate([centre_y - thick * 0.5, (centre_y + thick * 0.5)[::-1]]),
        )
        _fill(img, [pts], s.brow_rgb)

    def _nose(self, img: np.ndarray) -> None:
        s, h = self.s, self.h
        a, b = h.a, h.b
        tip_y = (s.eye_y + s.nose_length) * b
        wid = s.nose_width * a
        protrude = s.nose_protrusion * a
        base_z = float(h.surface_z(np.array(0.0), np.array(tip_y)))
        for side in (-1, 1):
            nx, ny = _ellipse(side * wid * 0.42, tip_y + 0.012 * b, wid * 0.2, wid * 0.11, n=14)
            nz = np.full(nx.shape, base_z + protrude * 0.55)
            _fill(img, [h.project(nx, ny, z=nz)], self.skin * 0.28 + np.array([8, 4, 4]))
            t = np.linspace(-0.9, 1.6, 10)
            wing_x = side * (wid * 0.42 + wid * 0.32 * np.cos(t))
            wing_y = tip_y - 0.01 * b - wid * 0.3 * np.sin(t)
            _line(
                img,
                h.project(wing_x, wing_y, z=np.full(t.shape, base_z + protrude * 0.4)),
                self.skin * 0.72,
                max(0.018 * a, 1.2),
            )

    def _mouth(self, img: np.ndarray) -> None:
        s, v, h = self.s, self.v, self.h
        a, b = h.a, h.b
        my = s.mouth_y * b
        half = s.mouth_width * a * (1 + 0.12 * v.smile - 0.1 * v.mouth_open)
        t = np.linspace(-1, 1, 21)
        x = half * t
        lift = v.smile * 0.11 * a * np.abs(t) ** 2
        gap = v.mouth_open * 0.2 * a
        seam = my - lift - 0.01 * a * v.smile * (1 - t**2)
        bow = 1 - 0.35 * np.exp(-((t / 0.18) ** 2))
        up_top = seam - s.lip_upper * a * 2.0 * (1 - np.abs(t) ** 1.6) * bow
        up_bot = seam
        lo_top = seam + gap * (1 - t**2) ** 0.6
        lo_bot = lo_top + s.lip_lower * a * 2.0 * (1 - np.abs(t) ** 1.8) * (1 - 0.3 * v.smile)
        z_out = 0.03 * a
        lip = np.array(s.lip_rgb)
        proj = h.project
        _fill(
            img,
            [proj(np.concatenate([x, x[::-1]]), np.concatenate([up_top, up_bot[::-1]]), dz=z_out)],
            lip * 0.9,
        )
        _fill(
            img,
            [proj(np.concatenate([x, x[::-1]]), np.concatenate([lo_top, lo_bot[::-1]]), dz=z_out)],
            lip,
        )
        if gap > 0.5:
            _fill(
                img,
                [
                    proj(
                        np.concatenate([x, x[::-1]]),
                        np.concatenate([up_bot, lo_top[::-1]]),
                        dz=z_out,
                    )
                ],
                (46, 20, 22),
            )
            teeth = np.minimum(up_bot + 0.09 * a * (1 - t**2) ** 0.5, lo_top)
            inner = slice(3, 18)
            _fill(
                img,
                [
                    proj(
                        np.concatenate([x[inner], x[inner][::-1]]),
                        np.concatenate([up_bot[inner], teeth[inner][::-1]]),
                        dz=z_out,
                    )
                ],
                (222, 214, 198),
            )
        _line(img, proj(x, seam + 0.3 * gap * (1 - t**2), dz=z_out), lip * 0.45, max(0.02 * a, 1.2))

    def _glasses(self, img: np.ndarray) -> None:
        s, h = self.s, self.h
        a = h.a
        thick = max(0.035 * a, 1.6)
        colour = np.array(s.glasses_rgb) * self.gain
        for side in (-1, 1):
            ex = side * s.eye_spacing * a
            ey = s.eye_y * h.b
            t = np.linspace(0, 2 * math.pi, 32, endpoint=False)
            p = s.glasses_shape
            c, sn = np.cos(t), np.sin(t)
            rx, ry = s.eye_width * a * 1.5, s.eye_width * a * 1.05
            x = ex + rx * np.sign(c) * np.abs(c) ** (2 / p)
            y = ey + 0.05 * a + ry * np.sign(sn) * np.abs(sn) ** (2 / p)
            z = h.surface_z(np.full_like(x, ex), np.full_like(y, ey)) + 0.12 * a
            rim = h.project(x, y, z=z)
            _line(img, rim, colour, thick, closed=True)
            temple = h.project(
                np.array([side * (abs(ex) + rx), side * a * 1.0]),
                np.array([ey, ey + 0.02 * h.b]),
                z=np.array([z[0], -0.1 * h.c]),
            )
            _line(img, temple, colour, thick)
        bridge_x = np.array(
            [
                -(s.eye_spacing * a - s.eye_width * a * 1.5),
                0.0,
                s.eye_spacing * a - s.eye_width * a * 1.5,
            ]
        )
        bridge_y = np.full(3, s.eye_y * h.b - 0.02 * a) - np.array([0, 0.03 * a, 0])
        bz = h.surface_z(bridge_x, bridge_y) + 0.14 * a
        _line(img, h.project(bridge_x, bridge_y, z=bz), colour, thick)

    # -- smooth passes -----------------------------------------------------------------------
    def _shade(self, img: np.ndarray, skin_polys, face: np.ndarray) -> None:
        """Lambert shading, socket/nose/lip shadows, texture, blush and beard on the skin."""
        s, v, h, size = self.s, self.v, self.h, self.size
        a, b = h.a, h.b
        pts = np.concatenate(skin_polys)
        x0, y0, x1, y1 = _roi(pts, size, 2)
        if x1 <= x0 or y1 <= y0:
            return
        rw, rh = x1 - x0, y1 - y0
        lw, lh = max(rw // 4, 4), max(rh // 4, 4)
        gx = x0 + (np.arange(lw, dtype=np.float32) + 0.5) * (rw / lw)
        gy = y0 + (np.arange(lh, dtype=np.float32) + 0.5) * (rh / lh)
        px, py = np.meshgrid(gx, gy)
        u, w = h.to_unrolled(px, py)
        u = u.astype(np.float32)
        w = w.astype(np.float32)

        # Normals of the head ellipsoid as seen (its outline barely moves with yaw).
        nx = u / (a * 1.02)
        ny = w / (b * 1.02)
        r2 = nx * nx + ny * ny
        inv = np.where(r2 > 1, 1 / np.sqrt(np.maximum(r2, 1e-6)), 1).astype(np.float32)
        nx, ny = nx * inv, ny * inv
        nz = np.sqrt(np.clip(1 - nx * nx - ny * ny, 0, None)) * 0.9 + 0.1
        lx, ly, lz = (np.float32(c) for c in self.light)
        lambert = np.clip(nx * lx + ny * ly + nz * lz, 0, 1)
        amb = np.float32(v.ambient)
        shade = amb + (1 - amb) * lambert
        shade = shade / np.float32(amb + (1 - amb) * lz)  # the face centre keeps its colour

        def at(x, y, dz=0.0):
            uu, vv = h.unrolled(np.array(x, dtype=np.float64), np.array(y, dtype=np.float64), dz=dz)
            return float(uu), float(vv)

        blobs = []
        ey = s.eye_y * b
        for side in (-1, 1):
            cu, cv_ = at(side * s.eye_spacing * a, ey - 0.02 * a)
            blobs.append((-0.2, cu, cv_, s.eye_width * a * 1.25, s.eye_height * a * 1.6))
            cu, cv_ = at(side * (s.eye_spacing - 0.05) * a, ey + 0.2 * a)
            blobs.append((-0.06, cu, cv_, s.eye_width * a * 1.1, 0.06 * a))
            # The side of the nose away from the light.
            cu, cv_ = at(side * s.nose_width * a * 0.5, (s.eye_y + s.nose_length * 0.55) * b)
            blobs.append(
                (
                    -0.13 * (1 - side * float(self.light[0]) * 1.5),
                    cu,
                    cv_,
                    0.05 * a,
                    s.nose_length * b * 0.38,
                )
            )
            # Cheek highlight.
            cu, cv_ = at(side * 0.5 * a, 0.28 * b)
            blobs.append((0.05, cu, cv_, 0.18 * a, 0.12 * b))
        tip_y = (s.eye_y + s.nose_length) * b
        cu, cv_ = at(0.0, tip_y + 0.06 * a)
        blobs.append((-0.22, cu, cv_, s.nose_width * a * 0.55, 0.05 * a))
        cu, cv_ = at(0.0, tip_y - 0.06 * b, dz=s.nose_protrusion * a)
        blobs.append((0.12, cu, cv_, 0.05 * a, 0.08 * b))
        cu, cv_ = at(0.0, (s.eye_y + s.nose_length * 0.45) * b, dz=s.nose_protrusion * a * 0.5)
        blobs.append((0.07, cu, cv_, 0.035 * a, s.nose_length * b * 0.3))
        lo_y = s.mouth_y * b + (s.lip_lower * 2.2 + 0.2 * v.mouth_open) * a
        cu, cv_ = at(0.0, lo_y + 0.04 * a)
        blobs.append((-0.16, cu, cv_, s.mouth_width * a * 0.6, 0.045 * a))
        cu, cv_ = at(0.0, -0.55 * b)
        blobs.append((0.06, cu, cv_, 0.3 * a, 0.15 * b))
        shade = shade + _blobs(u, w, blobs)

        # Under the chin the neck is in the head's shadow.
        low_face = np.zeros((lh, lw), dtype=np.uint8)
        scale = np.array([lw / rw, lh / rh])
        _fill(low_face, [(face - [x0, y0]) * scale], 255)
        low_face = cv2.GaussianBlur(low_face, (0, 0), max(0.04 * a * lw / rw, 0.5))
        below = (w > 0.4 * b).astype(np.float32)
        shade = shade * (1 - 0.3 * below * (1 - low_face.astype(np.float32) / 255))

        tex = _skin_texture(s.texture_seed)
        tu, tv = h.unrolled(np.array(0.0), np.array(0.0))
        map_x = ((u - np.float32(tu)) / np.float32(a * 2.6) + 0.5) * 63
        map_y = ((w - np.float32(tv)) / np.float32(b * 2.6) + 0.5) * 63
        shade = shade * cv2.remap(
            tex, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )

        colour = np.ones((lh, lw, 3), dtype=np.float32) * shade[..., None]
        blush_w = []
        for side in (-1, 1):
            cu, cv_ = at(side * 0.45 * a, 0.3 * b)
            blush_w.append((0.5 * s.blush + 0.25 * v.smile * s.blush, cu, cv_, 0.16 * a, 0.1 * b))
        blush = _blobs(u, w, blush_w)
        colour *= 1 + blush[..., None] * np.array([0.0, -0.12, -0.1], dtype=np.float32)
        if s.beard > 0:
            cu, cv_ = at(0.0, 0.75 * b)
            beard = _blobs(u, w, [(1.0, cu, cv_, 0.55 * a, 0.28 * b)])
            cu, cv_ = at(0.0, s.mouth_y * b)
            lips = _blobs(u, w, [(1.2, cu, cv_, s.mouth_width * a * 0.8, 0.07 * a)])
            # Stubble grows on the face, not down the neck.
            on_face = low_face.astype(np.float32) * np.float32(1 / 255)
            mask = np.clip(beard - lips, 0, 1) * on_face * np.float32(s.beard)
            grain = cv2.remap(
                tex, map_x * 1.9, map_y * 1.9, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
            )
            mask *= np.clip(1 + (grain - 1) * 6, 0.4, 1.5)
            ratio = (
                np.minimum(np.array(s.hair_rgb) / self.skin, 1.0).astype(np.float32) * 0.5 + 0.35
            )
            colour *= 1 - mask[..., None] * (1 - ratio)
        colour *= self.gain

        full = cv2.resize(colour, (rw, rh), interpolation=cv2.INTER_LINEAR)
        mask = np.zeros((rh, rw), dtype=np.uint8)
        for poly in skin_polys:
            cv2.fillPoly(
                mask, [np.round((poly - [x0, y0]) * _ONE).astype(np.int32)], 255, cv2.LINE_8, _SHIFT
            )
        roi = img[y0:y1, x0:x1]
        # A hard mask is enough: the edge pixels are smoothed by the final camera blur.
        cv2.copyTo(cv2.multiply(roi, full, dtype=cv2.CV_8U), mask, roi)

    def _hair_texture(self, img: np.ndarray, hair_mask: np.ndarray) -> None:
        s, h, size = self.s, self.h, self.size
        ys, xs = np.nonzero(hair_mask[::4, ::4])
        if len(xs) == 0:
            return
        pts = np.stack([xs * 4, ys * 4], axis=1)
        x0, y0, x1, y1 = _roi(pts, size, 4)
        rw, rh = x1 - x0, y1 - y0
        lw, lh = max(rw // 4, 4), max(rh // 4, 4)
        gx = x0 + (np.arange(lw, dtype=np.float32) + 0.5) * (rw / lw)
        gy = y0 + (np.arange(lh, dtype=np.float32) + 0.5) * (rh / lh)
        px, py = np.meshgrid(gx, gy)
        u, w = h.to_unrolled(px, py)
        nx = np.clip(u / (h.a * 1.4), -1, 1)
        ny = np.clip((w + 0.3 * h.b) / (h.b * 1.5), -1, 1)
        nz = np.sqrt(np.clip(1 - nx * nx - ny * ny, 0, None))
        lx, ly, lz = self.light
        lambert = np.clip(nx * lx + ny * ly + nz * lz, 0, 1).astype(np.float32)
        shade = 0.55 + 0.6 * lambert
        shade = cv2.resize(shade, (rw, rh), interpolation=cv2.INTER_LINEAR)
        streaks = _hair_streaks()
        # Streaks are in head coordinates, so a subject's strands stay put between images.
        sx = int(s.texture_seed % 128)
        reps_x = (rw // 256) + 2
        reps_y = (rh // 256) + 2
        tile = np.tile(streaks, (reps_y, reps_x))[sx // 2 : sx // 2 + rh, sx : sx + rw]
        bright = float(np.mean(s.hair_rgb)) / 255.0
        strength = 0.25 + 0.25 * bright
        factor = (shade * (1 + np.float32(strength) * tile))[..., None] * self.gain
        roi = img[y0:y1, x0:x1]
        cv2.copyTo(cv2.multiply(roi, factor, dtype=cv2.CV_8U), hair_mask[y0:y1, x0:x1], roi)


def render_face(subject: SubjectParams, view: ViewParams, size: int = DEFAULT_SIZE) -> np.ndarray:
    """Render one uint8 RGB ``size``×``size`` image of ``subject`` seen as ``view``."""
    return _Renderer(subject, view, int(size)).draw()
