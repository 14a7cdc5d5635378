"""Blended images: SBI (Shiohara & Yamasaki, CVPR 2022) and Face X-ray (Li et al., CVPR 2020).

Both paste a face into a real image through a soft mask M built from the image's landmark
hull, ``out = fg * M + bg * (1 - M)``; they differ in where the pasted face comes from, as
their papers do:

- ``sbi`` (self-blended image): the face is the image itself. One of the two copies (the
  pasted one or the background, each with probability 1/2) gets SBI's *source transforms*:
  RGB shift of up to ±20 per channel (probability 0.3), brightness and contrast ±10%, then
  either a down-and-up rescale by 2 or 4 (nearest down, bilinear up) or a sharpening
  (alpha 0.2-0.5, lightness 0.5-1). (The reference's hue/saturation/value shift of ±0.3 is a
  no-op on 8-bit images and is left out.) The pasted copy is shifted (±3% across, ±1.5%
  down) and scaled (0.95-1/0.95); the mask is one of :data:`HULLS`, elastically deformed
  (alpha 50, sigma 7 pixels at the reference's scale), blurred the reference's way (resized to
  a random 192-256 px, blurred, cut to its full-weight core, blurred again, normalised,
  resized back) and multiplied by a ratio from {0.25, 0.5, 0.75, 1, 1, 1}.
  :func:`self_blend` is one such draw returning (real, fake, mask) as the paper's training
  loop uses them (the real is the background, augmented when it was the augmented copy);
  :func:`online_blend` draws a fresh one per training epoch. The ``sbi`` forgery method
  writes a fixed draw for the test set: the background stays the unaugmented image bit
  for bit and the fake carries the blend's difference, ``image + (fake - real)``.
- ``xray`` (Face X-ray): the face is another identity's, the *target* of the pair chosen by
  landmark distance (``target_choice = "nearest"``: among the ``neighbours`` faces of other
  subjects in the same group and split whose landmarks are closest to the source's, one at
  random; see :func:`nearest_targets`). It is aligned to the source by a similarity on the 68
  landmarks, colour-corrected to the source inside the mask (Reinhard, LAB mean and std);
  the mask is the source's landmark hull deformed by a random piecewise-affine warp of a
  4x4 grid and Gaussian-blurred. No blend ratio: the X-ray map ``B = 4 M (1 - M)`` (the
  ``xray`` extra, uint8, 255 = 1) is then the blending boundary and zero inside the face.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..seeding import rng_for
from .base import (
    FORGERY_METHODS,
    ONLINE_FORGERIES,
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    clean_alpha,
    colour_transfer_lab,
    composite,
    interocular,
    polygon_mask,
    similarity_transform,
)
from .parsing import forehead_points
from .warp import identity_grid, piecewise_affine_maps


def hull_mask(lm: np.ndarray, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """0/255 hull of a landmark subset: ``full`` (68 points), ``forehead`` (with the brows
    lifted), ``inner`` (brows, eyes, nose, mouth: no jaw line), ``lower`` (nose and below)."""
    lm = np.asarray(lm, np.float64)
    if kind == "full":
        pts = lm
    elif kind == "forehead":
        pts = np.concatenate([lm, forehead_points(lm, 0.35)], 0)
    elif kind == "inner":
        pts = lm[17:]
    elif kind == "lower":
        pts = np.concatenate([lm[2:15], lm[28:36], lm[48:]], 0)
    else:
        raise ValueError(f"unknown hull kind {kind!r}")
    return polygon_mask(pts, shape)


def odd_kernel(n: float) -> int:
    """The odd kernel width nearest ``n`` (at least 1)."""
    n = max(int(round(n)), 1)
    return n if n % 2 else n + 1


def grid_deform(mask: np.ndarray, rng: np.random.Generator, lm: np.ndarray) -> np.ndarray:
    """Face X-ray's deformation: a piecewise-affine warp moving 16 points on a 4x4 grid over
    the face box by random offsets (the corners of the crop stay fixed)."""
    h, w = mask.shape[:2]
    iod = interocular(lm)
    x0, y0 = lm.min(0)
    x1, y1 = lm.max(0)
    gx, gy = np.meshgrid(np.linspace(x0, x1, 4), np.linspace(y0, y1, 4))
    grid = np.stack([gx.ravel(), gy.ravel()], 1)
    moved = grid + rng.uniform(-0.12, 0.12, grid.shape) * iod
    corners = np.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]], np.float64)
    src = np.concatenate([grid, corners], 0)
    dst = np.concatenate([moved, corners], 0)
    dst[:, 0] = dst[:, 0].clip(0, w - 1)
    dst[:, 1] = dst[:, 1].clip(0, h - 1)
    map_x, map_y, inside = piecewise_affine_maps(src, dst, mask.shape)
    out = cv2.remap(
        mask, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
    )
    out[~inside] = 0
    return out


HULLS = ("full", "forehead", "inner", "lower")
SBI_RATIOS = (0.25, 0.5, 0.75, 1.0, 1.0, 1.0)
REFERENCE_SIZE = 256  # px: the crop size SBI's pixel constants are given at


def sbi_source_transform(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """SBI's source transforms: colour (RGB shift with probability 0.3, brightness and
    contrast ±10%), then one of a 2x/4x down-up rescale or a sharpening."""
    out = img.astype(np.float32)
    if rng.random() < 0.3:
        out = out + rng.uniform(-20, 20, 3).astype(np.float32)
    out = np.clip(out, 0, 255)
    contrast = 1.0 + rng.uniform(-0.1, 0.1)
    brightness = rng.uniform(-0.1, 0.1) * 255.0
    out = np.clip(out * contrast + brightness, 0, 255)
    out = np.clip(out + 0.5, 0, 255).astype(np.uint8)
    h, w = out.shape[:2]
    if rng.random() < 0.5:
        r = (2, 4)[int(rng.integers(2))]
        small = cv2.resize(out, (max(w // r, 1), max(h // r, 1)), interpolation=cv2.INTER_NEAREST)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    alpha, lightness = rng.uniform(0.2, 0.5), rng.uniform(0.5, 1.0)
    effect = np.full((3, 3), -1.0, np.float32)
    effect[1, 1] = 8.0 + lightness
    kernel = (1 - alpha) * np.pad([[1.0]], 1).astype(np.float32) + alpha * effect
    return cv2.filter2D(out, -1, kernel, borderType=cv2.BORDER_REFLECT)


def sbi_affine(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """SBI's random affine of the pasted copy: shift ±3% across, ±1.5% down, scale 0.95-1/0.95
    about the crop centre."""
    h, w = img.shape[:2]
    s = rng.uniform(0.95, 1 / 0.95)
    tx, ty = rng.uniform(-0.03, 0.03) * w, rng.uniform(-0.015, 0.015) * h
    cx, cy = (w - 1) / 2, (h - 1) / 2
    mat = np.array([[s, 0, (1 - s) * cx + tx], [0, s, (1 - s) * cy + ty]])
    return cv2.warpAffine(img, mat, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def sbi_elastic(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An elastic deformation (random field, Gaussian-smoothed by sigma 7, scaled by alpha
    50, at the reference's 256-px scale) of a float mask."""
    h, w = mask.shape[:2]
    k = min(h, w) / REFERENCE_SIZE
    sigma, alpha = 7.0 * k, 50.0 * k
    field = rng.uniform(-1, 1, (h, w, 2)).astype(np.float32)
    field = cv2.GaussianBlur(field, (0, 0), sigma) * alpha
    xs, ys = identity_grid(mask.shape)
    return cv2.remap(mask, xs + field[..., 0], ys + field[..., 1], cv2.INTER_LINEAR, borderValue=0)


def sbi_blend_mask(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """SBI's mask softening: at a random 192-256 px size, blur (kernel 5-25), keep the
    full-weight core, blur again (kernel 5-25, sigma 5-45), normalise; back to size."""
    h, w = mask.shape[:2]
    k = min(h, w) / REFERENCE_SIZE
    size_h, size_w = (max(int(round(v * k)), 8) for v in rng.integers(192, 257, 2))
    m = cv2.resize(mask.astype(np.float32), (size_w, size_h))
    k1 = int(rng.integers(0, 11)) * 2 + 5
    k2 = int(rng.integers(0, 11)) * 2 + 5
    m = cv2.GaussianBlur(m, (k1, k1), 0)
    if m.max() <= 0:
        raise ForgeryError("blending mask vanished")
    m = m / m.max()
    m[m < 1] = 0
    m = cv2.GaussianBlur(m, (k2, k2), float(rng.integers(5, 46)))
    if m.max() <= 0:
        raise ForgeryError("blending mask vanished")
    return cv2.resize(m / m.max(), (w, h))


def self_blend(
    img: np.ndarray, lm: np.ndarray, rng: np.random.Generator, hulls=HULLS, ratios=SBI_RATIOS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """One SBI draw: (real, fake, soft mask M, parameters).

    ``real`` is the background copy (augmented when the draw augmented it), ``fake`` the
    pasted copy blended into it; a training loop labels them 0 and 1 (the paper's pairs).
    """
    img = np.asarray(img)
    lm = np.asarray(lm, np.float64)
    kind = hulls[int(rng.integers(len(hulls)))]
    hard = (hull_mask(lm, img.shape, kind) > 0).astype(np.float32)
    source, target = img.copy(), img.copy()
    augmented = "source" if rng.random() < 0.5 else "target"
    if augmented == "source":
        source = sbi_source_transform(source, rng)
    else:
        target = sbi_source_transform(target, rng)
    source = sbi_affine(source, rng)
    mask = sbi_blend_mask(sbi_elastic(hard, rng), rng)
    ratio = float(ratios[int(rng.integers(len(ratios)))])
    weight = clean_alpha(mask * ratio)
    fake = source.astype(np.float32) * weight[..., None] + target.astype(np.float32) * (
        1 - weight[..., None]
    )
    fake = np.clip(fake + 0.5, 0, 255).astype(np.uint8)
    return target, fake, weight, {"hull": kind, "augmented": augmented, "blend_ratio": ratio}


def xray_map(weight: np.ndarray) -> np.ndarray:
    """Face X-ray's boundary map ``4 M (1 - M)`` as uint8 (255 = 1)."""
    w = np.clip(np.asarray(weight, np.float32), 0, 1)
    return np.clip(4.0 * w * (1.0 - w) * 255 + 0.5, 0, 255).astype(np.uint8)


def xray_blend(
    background: np.ndarray,
    bg_lm: np.ndarray,
    foreground: np.ndarray,
    fg_lm: np.ndarray,
    rng: np.random.Generator,
    hulls=("full", "inner"),
    blur: tuple[float, float] = (0.15, 0.45),
) -> tuple[np.ndarray, np.ndarray, dict]:
    """One Face X-ray draw: (fake, soft mask M, parameters); the real is ``background``.

    ``foreground`` is another identity's face; it is aligned to the background by a
    similarity on the 68 landmarks and colour-corrected to it inside the deformed hull.
    """
    shape = background.shape
    h, w = shape[:2]
    bg_lm = np.asarray(bg_lm, np.float64)
    iod = interocular(bg_lm)
    kind = hulls[int(rng.integers(len(hulls)))]
    hard = grid_deform(hull_mask(bg_lm, shape, kind), rng, bg_lm)
    if not hard.any():
        raise ForgeryError("deformed blending mask is empty")
    mat = similarity_transform(fg_lm, bg_lm)
    fg = cv2.warpAffine(
        foreground, mat, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
    )
    fg = colour_transfer_lab(fg, background, hard)
    k = odd_kernel(rng.uniform(*blur) * iod)
    soft = cv2.GaussianBlur((hard > 0).astype(np.float32), (k, k), 0)
    weight = clean_alpha(soft)
    fake = fg.astype(np.float32) * weight[..., None] + background.astype(np.float32) * (
        1 - weight[..., None]
    )
    fake = np.clip(fake + 0.5, 0, 255).astype(np.uint8)
    return fake, weight, {"hull": kind}


def online_blend(
    method: str,
    img: np.ndarray,
    lm: np.ndarray,
    seed: int,
    key: str,
    epoch: int,
    partner: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fresh blend of one training face for one epoch: (real, fake, X-ray map).

    For a training loop that makes its fakes on the fly, as SBI and Face X-ray do: every
    (``seed``, ``key`` (the image id), ``epoch``) gives its own deterministic draw.
    ``method`` names a member of :data:`~fairforge.forgery.base.ONLINE_FORGERIES` (``sbi``,
    ``xray``, ``fwa``); ``xray`` needs ``partner``, (image, landmarks) of another identity's
    face (see :func:`nearest_targets` for choosing it).
    """
    make = ONLINE_FORGERIES.get(method)
    return make(img, lm, rng_for(seed, "online", method, key, epoch), partner)


@ONLINE_FORGERIES.register("sbi")
def _online_sbi(img, lm, rng, partner=None):
    """SBI: the real of the pair is its (possibly augmented) background copy."""
    real, fake, weight, _ = self_blend(img, lm, rng)
    return real, fake, xray_map(weight)


@ONLINE_FORGERIES.register("xray")
def _online_xray(img, lm, rng, partner=None):
    if partner is None:
        raise ValueError("online xray blending needs a partner face of another identity")
    fake, weight, _ = xray_blend(img, lm, partner[0], partner[1], rng)
    return np.asarray(img), fake, xray_map(weight)


@FORGERY_METHODS.register("sbi/classical")
class SelfBlended(ForgeryMethod):
    kept = "source"
    purpose = "training"
    needs_target = False
    random = True
    defaults = {"hulls": HULLS, "ratios": SBI_RATIOS}

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        real, fake, weight, info = self_blend(
            source_img,
            source_lm,
            rng,
            tuple(self.options["hulls"]),
            tuple(self.options["ratios"]),
        )
        # The blend's difference on the unaugmented image: outside M it is the source.
        diff = fake.astype(np.float32) - real.astype(np.float32)
        out = np.clip(source_img.astype(np.float32) + diff + 0.5, 0, 255).astype(np.uint8)
        image, mask = composite(out, source_img, (weight > 0).astype(np.float32))
        return ForgeryResult(image, mask, {"xray": xray_map(weight), **info})


@FORGERY_METHODS.register("xray/classical")
class XRayBlended(ForgeryMethod):
    kept = "source"
    purpose = "training"
    needs_target = True
    target_choice = "nearest"
    random = True
    defaults = {
        "hulls": ("full", "inner"),
        "blur": (0.15, 0.45),  # Gaussian kernel width range of the mask blur, IOD units
    }

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        fake, weight, info = xray_blend(
            source_img,
            source_lm,
            target_img,
            target_lm,
            rng,
            tuple(self.options["hulls"]),
            tuple(self.options["blur"]),
        )
        image, mask = composite(fake, source_img, (weight > 0).astype(np.float32))
        return ForgeryResult(image, mask, {"xray": xray_map(weight), **info})
