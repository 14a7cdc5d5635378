"""Dense warps from point correspondences: piecewise affine (Delaunay) and thin-plate spline.

Both build *backward* maps for ``cv2.remap``: for every output pixel, where to sample the
input. Inputs are point sets in pixel coordinates (x, y).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cv2
import numpy as np

from .base import ForgeryError

if TYPE_CHECKING:
    from scipy.spatial import Delaunay


def triangle_areas(corners: np.ndarray) -> np.ndarray:
    """Areas of (k, 3, 2) triangles."""
    u, v = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    return 0.5 * np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])


def triangulate(points: np.ndarray, min_area: float = 1e-3) -> Delaunay:
    """Delaunay triangulation, or :class:`ForgeryError` when the points are degenerate."""
    # scipy.spatial is imported here: every job that imports the forgery registry (each
    # prediction job does) would otherwise pay for it at start-up
    from scipy.spatial import Delaunay, QhullError

    pts = np.asarray(points, np.float64)
    try:
        tri = Delaunay(pts)
    except (QhullError, ValueError) as err:
        raise ForgeryError("degenerate landmark triangulation") from err
    areas = triangle_areas(pts[tri.simplices])
    if len(areas) == 0 or areas.sum() < min_area * 100:
        raise ForgeryError("degenerate landmark triangulation")
    return tri


def piecewise_affine_maps(
    src_pts: np.ndarray, dst_pts: np.ndarray, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maps that move ``src_pts`` onto ``dst_pts``, triangle by triangle.

    The triangulation is built on ``dst_pts`` (the output geometry). Returns ``map_x``,
    ``map_y`` (float32, -1 outside) and ``inside`` (bool: pixels covered by a triangle).
    """
    h, w = shape[:2]
    src_pts = np.asarray(src_pts, np.float64)
    dst_pts = np.asarray(dst_pts, np.float64)
    tri = triangulate(dst_pts)
    dst_tri = dst_pts[tri.simplices]  # (k, 3, 2)
    usable = triangle_areas(dst_tri) > 1e-6
    # Per triangle, the affine A with [x, y, 1] @ A = source point.
    homog = np.concatenate([dst_tri, np.ones(dst_tri.shape[:2] + (1,))], 2)
    affine = np.zeros((len(dst_tri), 3, 2))
    affine[usable] = np.linalg.solve(homog[usable], src_pts[tri.simplices[usable]])
    # Rasterise triangle ids (1-based; 0 = outside): much faster than a point-location query
    # per pixel.
    label = np.zeros((h, w), np.uint16)
    shift = 4
    corners_fp = np.round(dst_tri * (1 << shift)).astype(np.int32)
    for k in np.flatnonzero(usable):
        cv2.fillConvexPoly(label, corners_fp[k], int(k) + 1, cv2.LINE_8, shift)
    iy, ix = np.nonzero(label)
    simplex = label[iy, ix].astype(np.int64) - 1
    pix = np.stack([ix, iy, np.ones_like(ix)], 1).astype(np.float64)
    mapped = np.einsum("ni,nij->nj", pix, affine[simplex])
    map_x = np.full((h, w), -1.0, np.float32)
    map_y = np.full((h, w), -1.0, np.float32)
    map_x[iy, ix] = mapped[:, 0]
    map_y[iy, ix] = mapped[:, 1]
    return map_x, map_y, label > 0


def _tps_kernel(r2: np.ndarray) -> np.ndarray:
    """U = r^2 log r^2, with U(0) = 0 (in place on ``r2``)."""
    log = np.log(np.maximum(r2, 1e-300))
    r2 *= log
    return r2


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(d2, 0.0, out=d2)


class ThinPlateSpline:
    """2-D thin-plate spline interpolating vector values at control points.

    Coordinates are normalised by ``scale`` so the linear system stays well conditioned;
    ``smoothing`` > 0 relaxes exact interpolation (useful when points nearly coincide).
    """

    def __init__(
        self, ctrl: np.ndarray, values: np.ndarray, scale: float, smoothing: float = 1e-6
    ) -> None:
        c = np.asarray(ctrl, np.float64) / scale
        v = np.asarray(values, np.float64)
        n = len(c)
        kmat = _tps_kernel(_sq_dist(c, c)) + smoothing * np.eye(n)
        p = np.concatenate([np.ones((n, 1)), c], 1)
        a = np.zeros((n + 3, n + 3))
        a[:n, :n], a[:n, n:], a[n:, :n] = kmat, p, p.T
        rhs = np.zeros((n + 3, v.shape[1]))
        rhs[:n] = v
        try:
            sol = np.linalg.solve(a, rhs)
        except np.linalg.LinAlgError as err:
            raise ForgeryError("degenerate thin-plate spline control points") from err
        if not np.isfinite(sol).all():
            raise ForgeryError("degenerate thin-plate spline control points")
        self.ctrl, self.scale = c, scale
        self.weights, self.affine = sol[:n], sol[n:]

    def __call__(self, pts: np.ndarray) -> np.ndarray:
        q = np.asarray(pts, np.float64) / self.scale
        out = np.concatenate([np.ones((len(q), 1)), q], 1) @ self.affine
        # Chunked to bound memory: (chunk x n_ctrl) kernel blocks.
        for start in range(0, len(q), 16384):
            blk = q[start : start + 16384]
            out[start : start + 16384] += _tps_kernel(_sq_dist(blk, self.ctrl)) @ self.weights
        return out


def tps_displacement(
    moved: np.ndarray,
    original: np.ndarray,
    anchors: np.ndarray,
    shape: tuple[int, ...],
    step: int = 1,
) -> np.ndarray:
    """Backward displacement field (HxWx2, float32) that carries ``original`` to ``moved``.

    For an output pixel p, ``p + field[p]`` is where to sample the input. ``anchors`` are
    fixed points (zero displacement). ``step`` > 1 evaluates the spline on a coarse grid and
    interpolates, which is much faster and visually the same for smooth fields.
    """
    h, w = shape[:2]
    moved = np.asarray(moved, np.float64)
    ctrl = np.concatenate([moved, anchors], 0)
    values = np.concatenate(
        [np.asarray(original, np.float64) - moved, np.zeros((len(anchors), 2))], 0
    )
    # Coincident control points make the system singular: keep the first of each.
    _, keep = np.unique(np.round(ctrl, 3), axis=0, return_index=True)
    keep = np.sort(keep)
    spline = ThinPlateSpline(ctrl[keep], values[keep], scale=float(max(h, w)))
    step = max(int(step), 1)
    gy = np.arange(0, h + step - 1, step, dtype=np.float64)
    gx = np.arange(0, w + step - 1, step, dtype=np.float64)
    xs, ys = np.meshgrid(gx, gy)
    disp = spline(np.stack([xs.ravel(), ys.ravel()], 1)).reshape(len(gy), len(gx), 2)
    disp = disp.astype(np.float32)
    if step > 1:
        # Corner-aligned bilinear upsampling: output pixel x samples coarse index x / step.
        xs, ys = np.meshgrid(
            np.arange(w, dtype=np.float32) / step, np.arange(h, dtype=np.float32) / step
        )
        disp = cv2.remap(disp, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return disp


def border_anchors(shape: tuple[int, ...], per_side: int = 8) -> np.ndarray:
    h, w = shape[:2]
    t = np.linspace(0.0, 1.0, per_side + 1)[:-1]
    top = np.stack([t * (w - 1), np.zeros_like(t)], 1)
    right = np.stack([np.full_like(t, w - 1), t * (h - 1)], 1)
    bottom = np.stack([(1 - t) * (w - 1), np.full_like(t, h - 1)], 1)
    left = np.stack([np.zeros_like(t), (1 - t) * (h - 1)], 1)
    return np.concatenate([top, right, bottom, left], 0)


def ring_anchors(lm: np.ndarray, scale: float, shape: tuple[int, ...]) -> np.ndarray:
    """Points on the landmark hull blown up by ``scale`` about its centroid, inside the crop."""
    hull = cv2.convexHull(np.asarray(lm, np.float32)).reshape(-1, 2).astype(np.float64)
    centre = hull.mean(0)
    ring = centre + (hull - centre) * scale
    h, w = shape[:2]
    ring[:, 0] = ring[:, 0].clip(0, w - 1)
    ring[:, 1] = ring[:, 1].clip(0, h - 1)
    return ring


def remap(
    img: np.ndarray, map_x: np.ndarray, map_y: np.ndarray, border: int = cv2.BORDER_REFLECT
) -> np.ndarray:
    return cv2.remap(
        img, map_x.astype(np.float32), map_y.astype(np.float32), cv2.INTER_LINEAR, borderMode=border
    )


def identity_grid(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    h, w = shape[:2]
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return xs, ys
