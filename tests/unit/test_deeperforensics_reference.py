"""The df_* operations against a re-statement of the DeeperForensics-1.0 reference arithmetic.

The ``ref_*`` functions below restate, step by step and in BGR as the reference works on
video frames, what the reference perturbation code computes: its float YCbCr scaling (luma
to [16, 235], chroma to [16, 240], of 255), truncation by ``astype(uint8)``, bilinear
resizes, fixed 8 px blocks. Random draws (block corners, normal noise) are passed in, so the
op and the re-statement see the same ones. Every level is compared on a face crop and on a
whole frame; they must agree to within one grey level.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from fairforge.perturb import PerturbationError, create_op, variants_of
from fairforge.perturb.deeperforensics import BLOCK_GREY
from fairforge.seeding import rng_for

LEVELS = (1, 2, 3, 4, 5)
SATURATION = (0.4, 0.3, 0.2, 0.1, 0.0)
CONTRAST = (0.85, 0.725, 0.6, 0.475, 0.35)
BLOCKS = (16, 32, 48, 64, 80)
NOISE_VARIANCE = (0.001, 0.002, 0.005, 0.01, 0.05)
BLUR_KERNEL = (7, 9, 13, 17, 21)
PIXELATE = (2, 3, 4, 5, 6)


# --- the reference, restated (BGR frames, float32 arithmetic as in the reference) ----------


def ref_to_ycbcr(bgr: np.ndarray) -> np.ndarray:
    # OpenCV's float conversion of 0..255 values, channels reordered to Y, Cb, Cr, then luma
    # mapped by (v * 219 + 16) / 255 and chroma by (v * 224 + 16) / 255.
    ycrcb = cv2.cvtColor(bgr.astype(np.float32), cv2.COLOR_BGR2YCrCb)
    out = np.empty_like(ycrcb)
    out[..., 0] = (ycrcb[..., 0] * 219 + 16) / 255.0
    out[..., 1] = (ycrcb[..., 2] * 224 + 16) / 255.0
    out[..., 2] = (ycrcb[..., 1] * 224 + 16) / 255.0
    return out


def ref_from_ycbcr(ycbcr: np.ndarray) -> np.ndarray:
    ycbcr = ycbcr.astype(np.float32)
    ycrcb = np.empty_like(ycbcr)
    ycrcb[..., 0] = (ycbcr[..., 0] * 255.0 - 16) / 219
    ycrcb[..., 1] = (ycbcr[..., 2] * 255.0 - 16) / 224
    ycrcb[..., 2] = (ycbcr[..., 1] * 255.0 - 16) / 224
    return cv2.cvtColor(ycrcb, cv2.COLOR_YCrCb2BGR)


def ref_saturation(bgr, factor):
    ycbcr = ref_to_ycbcr(bgr)
    ycbcr[..., 1:] = 0.5 + (ycbcr[..., 1:] - 0.5) * factor
    return ref_from_ycbcr(ycbcr).astype(np.uint8)


def ref_contrast(bgr, factor):
    return (bgr.astype(np.float32) * factor).astype(np.uint8)


def ref_block(bgr, blocks_per_256, corners):
    """``corners``: the (row, column) of each block, drawn in [0, side - 1 - 8]."""
    out = bgr.copy()
    count = min(bgr.shape[0], bgr.shape[1]) // 256 * blocks_per_256
    assert len(corners) == count
    for row, col in corners:
        assert 0 <= row <= bgr.shape[0] - 1 - 8 and 0 <= col <= bgr.shape[1] - 1 - 8
        out[row : row + 8, col : col + 8, :] = 128
    return out


def ref_noise(bgr, variance, normals_ycbcr):
    noisy = (ref_to_ycbcr(bgr) / 255 + np.sqrt(variance) * normals_ycbcr) * 255
    return np.clip(ref_from_ycbcr(noisy), 0, 255).astype(np.uint8)


def ref_blur(bgr, kernel):
    return cv2.GaussianBlur(bgr, (kernel, kernel), kernel / 6)


def ref_pixelate(bgr, factor):
    h, w = bgr.shape[:2]
    return cv2.resize(cv2.resize(bgr, (w // factor, h // factor)), (w, h))


# --- images --------------------------------------------------------------------------------


def colourful(height: int, width: int, seed: int) -> np.ndarray:
    """Saturated smooth colours over the full 0..255 range, edges and fine texture."""
    rng = np.random.default_rng(seed)
    coarse = rng.random((max(2, height // 16), max(2, width // 16), 3)).astype(np.float32)
    img = cv2.resize(coarse * 300 - 20, (width, height), interpolation=cv2.INTER_CUBIC)
    cv2.circle(img, (width // 2, height // 2), min(height, width) // 4, (250, 30, 10), -1)
    cv2.rectangle(img, (3, 3), (width // 5, height // 5), (0, 0, 0), -1)
    img += rng.normal(0, 10, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


CROP = colourful(128, 128, seed=0)  # a face crop: under 256 px
FRAME = colourful(540, 720, seed=1)  # a whole frame: two sets of blocks (540 // 256 = 2)
IMAGES = {"crop": CROP, "frame": FRAME}


def rgb(bgr: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def assert_within_one(ours_rgb: np.ndarray, reference_bgr: np.ndarray) -> None:
    diff = np.abs(ours_rgb.astype(int) - rgb(reference_bgr).astype(int))
    assert diff.max() <= 1, f"max difference {diff.max()} grey levels"
    assert (diff == 0).mean() > 0.97, f"only {(diff == 0).mean():.3f} of the values equal"


CASES = [(where, level) for where in IMAGES for level in LEVELS]


@pytest.mark.parametrize("where,level", CASES)
def test_saturation_matches_reference(where, level):
    bgr = IMAGES[where]
    out = create_op("df_saturation", level)(rgb(bgr), rng_for(0))
    assert_within_one(out, ref_saturation(bgr, SATURATION[level - 1]))


@pytest.mark.parametrize("where,level", CASES)
def test_contrast_matches_reference_exactly(where, level):
    bgr = IMAGES[where]
    out = create_op("df_contrast", level)(rgb(bgr), rng_for(0))
    np.testing.assert_array_equal(out, rgb(ref_contrast(bgr, CONTRAST[level - 1])))


@pytest.mark.parametrize("where,level", CASES)
def test_block_matches_reference(where, level):
    bgr = IMAGES[where]
    op = create_op("df_block", level)
    corners = op.draw(bgr.shape, rng_for(where, level))
    out = op.apply_draws(rgb(bgr), corners)
    np.testing.assert_array_equal(out, rgb(ref_block(bgr, BLOCKS[level - 1], corners)))
    # The call draws the same way.
    np.testing.assert_array_equal(op(rgb(bgr), rng_for(where, level)), out)
    if where == "crop":  # under 256 px the reference places no block
        assert len(corners) == 0 and np.array_equal(out, rgb(bgr))
    else:
        assert len(corners) == 2 * BLOCKS[level - 1]


@pytest.mark.parametrize("where,level", CASES)
def test_noise_matches_reference(where, level):
    bgr = IMAGES[where]
    op = create_op("df_noise", level)
    normals = op.draw(bgr.shape, rng_for(where, level))  # Y, Cr, Cb
    out = op.apply_draws(rgb(bgr), normals)
    reference = ref_noise(bgr, NOISE_VARIANCE[level - 1], normals[..., (0, 2, 1)].astype(float))
    assert_within_one(out, reference)
    np.testing.assert_array_equal(op(rgb(bgr), rng_for(where, level)), out)


@pytest.mark.parametrize("where,level", CASES)
def test_blur_matches_reference_exactly(where, level):
    bgr = IMAGES[where]
    out = create_op("df_blur", level)(rgb(bgr), rng_for(0))
    np.testing.assert_array_equal(out, rgb(ref_blur(bgr, BLUR_KERNEL[level - 1])))


@pytest.mark.parametrize("where,level", CASES)
def test_pixelate_matches_reference_exactly(where, level):
    bgr = IMAGES[where]
    out = create_op("df_pixelate", level)(rgb(bgr), rng_for(0))
    np.testing.assert_array_equal(out, rgb(ref_pixelate(bgr, PIXELATE[level - 1])))


def test_every_df_image_op_is_covered():
    ops = {"df_saturation", "df_contrast", "df_block", "df_noise", "df_blur", "df_pixelate"}
    for name in ops:
        assert [int(v.split("@")[1]) for v in variants_of(name)] == list(LEVELS)


# --- the named options keep the former readings available ----------------------------------


def test_rounding_option_rounds():
    img = rgb(CROP)
    rounded = create_op("df_contrast", 3, rounding="round")(img, rng_for(0))
    np.testing.assert_array_equal(rounded, np.rint(img.astype(np.float32) * 0.6).astype(np.uint8))
    truncated = create_op("df_contrast", 3)(img, rng_for(0))
    assert (rounded.astype(int) - truncated).min() == 0 and (rounded != truncated).any()


def test_noise_scaling_option():
    flat = np.full((256, 256, 3), 128, np.uint8)
    ours = create_op("df_noise", 2)
    unit = create_op("df_noise", 2, ycbcr_scaling="unit")
    normals = ours.draw(flat.shape, rng_for("flat"))
    luma = [
        cv2.cvtColor(op.apply_draws(flat, normals), cv2.COLOR_RGB2GRAY).astype(float).std()
        for op in (ours, unit)
    ]
    # The reference's YCbCr scaling makes the luma noise 255/219 times the nominal one.
    assert luma[0] / luma[1] == pytest.approx(255 / 219, rel=0.03)
    assert luma[1] == pytest.approx(255 * np.sqrt(0.002), rel=0.05)


def test_scaled_blocks_option():
    op = create_op("df_block", 1, block_size="scaled")
    img = np.zeros((512, 512, 3), np.uint8)
    corners = op.draw(img.shape, rng_for(3))
    assert len(corners) == 16
    covered = (op.apply_draws(img, corners) == BLOCK_GREY).all(axis=-1)
    _, _, stats, _ = cv2.connectedComponentsWithStats(covered.astype(np.uint8))
    assert all(w >= 16 and h >= 16 for _, _, w, h, _ in stats[1:])  # 16 px blocks at 512 px
    assert len(create_op("df_block", 1, block_size="scaled").draw((128, 128, 3), rng_for(3))) == 16


def test_pixelate_interpolation_option():
    img = rgb(CROP)
    blocky = create_op("df_pixelate", 3, interpolation="area-nearest")(img, rng_for(0))
    smooth = create_op("df_pixelate", 3)(img, rng_for(0))

    def laplacian_var(x):
        return cv2.Laplacian(cv2.cvtColor(x, cv2.COLOR_RGB2GRAY), cv2.CV_64F).var()

    # The reference blurs; the area-nearest reading adds block edges.
    assert laplacian_var(smooth) < laplacian_var(img)
    assert laplacian_var(blocky) > 2 * laplacian_var(smooth)


def test_bad_option_values_are_refused():
    for name, option in (
        ("df_contrast", {"rounding": "ceil"}),
        ("df_noise", {"ycbcr_scaling": "bt709"}),
        ("df_block", {"block_size": "huge"}),
        ("df_pixelate", {"interpolation": "cubic"}),
    ):
        with pytest.raises(PerturbationError, match=next(iter(option))):
            create_op(name, 1, **option)
