"""Image operations: contracts, determinism, severity ordering, errors, learned-op loading."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import torch

from fairforge.perturb import (
    DEFAULT_SUITE,
    DF_SUITE,
    DISTANCE_SUITE,
    OPERATIONS,
    InvalidImage,
    InvalidLevel,
    Operation,
    OperationUnavailable,
    PerturbationError,
    VideoOnlyOperation,
    apply_variant,
    available,
    create_op,
    list_ops,
    parse_variant,
    unavailable_reason,
    variants_of,
)
from fairforge.perturb.learned_ops import (
    FactorizedPriorCodec,
    codec_from_compressai,
    compressai_state_dict,
    run_codec,
)
from fairforge.perturb.ops import encode_jpeg, gaussian_blur, jpeg_roundtrip
from fairforge.perturb.suites import UNSUITED_IMAGE_OPS
from fairforge.registry import UnknownName
from fairforge.seeding import rng_for


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


def face_like(height: int = 64, width: int = 80, seed: int = 0) -> np.ndarray:
    """Smooth shading, edges and fine texture, kept within [60, 190] so offsets don't clip."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    base = 120 + 30 * np.sin(xx / 9.0) * np.cos(yy / 7.0)
    img = np.stack([base, base * 0.9 + 10, base * 0.8 + 20], axis=-1)
    cv2.circle(img, (width // 2, height // 2), min(height, width) // 4, (170, 120, 90), -1)
    cv2.rectangle(img, (5, 5), (width // 4, height // 4), (70, 90, 160), -1)
    img += rng.normal(0, 8, img.shape).astype(np.float32)
    return np.clip(img, 60, 190).astype(np.uint8)


IMG = face_like()
IMAGE_VARIANTS = [
    v for v in DEFAULT_SUITE + DF_SUITE + DISTANCE_SUITE if not v.startswith("learned_compression")
]


@pytest.mark.parametrize("variant", IMAGE_VARIANTS)
def test_variant_keeps_contract_and_is_deterministic(variant):
    before = IMG.copy()
    out = apply_variant(IMG, variant, "sample-1")
    assert out.dtype == np.uint8 and out.shape == IMG.shape
    np.testing.assert_array_equal(IMG, before)  # input untouched
    np.testing.assert_array_equal(out, apply_variant(IMG, variant, "sample-1"))


@pytest.mark.parametrize(
    "variant",
    [
        "gaussian_noise@2",
        "poisson_gaussian_noise@2",
        "df_noise@1",
        "far@2",
        "jpeg+gaussian_noise@1",
    ],
)
def test_random_ops_are_seeded_by_sample_and_variant(variant):
    a = apply_variant(IMG, variant, "sample-1")
    b = apply_variant(IMG, variant, "sample-2")
    assert not np.array_equal(a, b)
    name, level = parse_variant(variant)
    np.testing.assert_array_equal(a, create_op(name, level)(IMG, rng_for("sample-1", variant)))


def test_df_block_is_seeded_by_sample_and_variant():
    frame = face_like(256, 300, seed=2)  # the reference places blocks from 256 px up
    a = apply_variant(frame, "df_block@3", "sample-1")
    assert not np.array_equal(a, apply_variant(frame, "df_block@3", "sample-2"))
    np.testing.assert_array_equal(a, apply_variant(frame, "df_block@3", "sample-1"))


def test_clean_returns_the_image():
    assert apply_variant(IMG, "clean", "s") is IMG


SEVERITY_OPS = [
    "gaussian_noise",
    "poisson_gaussian_noise",
    "resize",
    "jpeg",
    "gaussian_blur",
    "denoise",
    "jpeg+gaussian_noise",
    "blur+jpeg",
    "resize+noise+jpeg",
    "df_saturation",
    "df_contrast",
    "df_noise",
    "df_blur",
    "far",
]


# 120 px: every df_pixelate factor (2..6) divides it, so no factor gets a lucky grid.
SQUARE = face_like(120, 120, seed=1)


@pytest.mark.parametrize("name", SEVERITY_OPS)
def test_psnr_falls_with_severity(name):
    scores = [psnr(SQUARE, apply_variant(SQUARE, v, "s")) for v in variants_of(name)]
    assert all(a > b for a, b in zip(scores, scores[1:])), (name, np.round(scores, 2))


def test_df_pixelate_psnr_falls_with_severity_on_band_limited_images():
    # The reference resizes bilinearly without antialiasing, so on fine texture odd factors
    # alias more than even ones; on photo-like (band-limited) content the ordering holds.
    smooth = cv2.GaussianBlur(SQUARE, (3, 3), 0)
    scores = [psnr(smooth, apply_variant(smooth, v, "s")) for v in variants_of("df_pixelate")]
    assert all(a > b for a, b in zip(scores, scores[1:])), np.round(scores, 2)


def test_df_block_covers_more_with_severity():
    # df_block's fixed 8 px blocks need a 256 px side (tests/unit/test_deeperforensics_reference.py).
    frame = face_like(256, 256, seed=1)
    covered = [
        (apply_variant(frame, v, "s") != frame).any(axis=-1).mean() for v in variants_of("df_block")
    ]
    assert all(a < b for a, b in zip(covered, covered[1:])), np.round(covered, 4)


def test_jpeg_quality_is_the_level_and_size_falls():
    assert OPERATIONS.get("jpeg").levels == (95, 80, 60, 45, 30)
    sizes = [len(encode_jpeg(IMG, q)) for q in (95, 80, 60, 45, 30)]
    assert all(a > b for a, b in zip(sizes, sizes[1:])), sizes
    np.testing.assert_array_equal(create_op("jpeg", 60)(IMG, rng_for(0)), jpeg_roundtrip(IMG, 60))


def test_gaussian_blur_kernel_is_the_level():
    assert OPERATIONS.get("gaussian_blur").levels == (3, 5, 7, 9, 11)
    expected = cv2.GaussianBlur(IMG, (7, 7), 0, borderType=cv2.BORDER_REFLECT_101)
    np.testing.assert_array_equal(create_op("gaussian_blur", 7)(IMG, rng_for(0)), expected)


def test_gaussian_blur_level_can_be_read_as_sigma():
    op = create_op("gaussian_blur", 5, level_is="sigma")
    expected = cv2.GaussianBlur(IMG, (0, 0), 5.0, borderType=cv2.BORDER_REFLECT_101)
    np.testing.assert_array_equal(op(IMG, rng_for(0)), expected)
    # Read as sigma, the level blurs far more than the kernel reading (sigma 1.1 at k = 5).
    assert psnr(IMG, op(IMG, rng_for(0))) < psnr(IMG, apply_variant(IMG, "gaussian_blur@5", "s"))
    with pytest.raises(PerturbationError, match="level_is"):
        create_op("gaussian_blur", 5, level_is="radius")


def test_resize_resamples_bilinearly_unless_told_otherwise():
    h, w = IMG.shape[:2]
    for level, scale in zip(range(1, 6), (0.75, 0.5, 0.35, 0.25, 0.15)):
        small = cv2.resize(IMG, (round(w * scale), round(h * scale)))  # OpenCV's default
        expected = cv2.resize(small, (w, h))
        np.testing.assert_array_equal(apply_variant(IMG, f"resize@{level}", "s"), expected)
    area = create_op("resize", 2, down="area", up="cubic")(IMG, rng_for(0))
    small = cv2.resize(IMG, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(area, cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC))
    with pytest.raises(PerturbationError, match="bilinear"):
        create_op("resize", 2, down="bilinear")


def test_combinations_compress_last():
    noisy = create_op("gaussian_noise", 2)(IMG, rng_for("s", "jpeg+gaussian_noise@2"))
    np.testing.assert_array_equal(
        apply_variant(IMG, "jpeg+gaussian_noise@2", "s"), jpeg_roundtrip(noisy, 80)
    )
    as_named = create_op("jpeg+gaussian_noise", 2, order="as_named")
    jpeg_first = create_op("gaussian_noise", 2)(jpeg_roundtrip(IMG, 80), rng_for(1))
    np.testing.assert_array_equal(as_named(IMG, rng_for(1)), jpeg_first)
    steps = [type(step).__name__ for step in create_op("resize+noise+jpeg", 1).steps]
    assert steps == ["Resize", "GaussianNoise", "Jpeg"]
    with pytest.raises(PerturbationError, match="order"):
        create_op("blur+jpeg", 1, order="random")


def test_a_combination_takes_its_parts_options_by_their_names():
    """The Assessment's bicubic resize (§3.1, variant_options {resize: {up: cubic}}) is the
    resize of resize+noise+jpeg too: the workflow hands a combination its parts' options."""
    from fairforge.perturb import op_for_variant, operation_names
    from fairforge.workflow import variant_options

    options = {"resize": {"down": "cubic", "up": "cubic"}, "jpeg+gaussian_noise": {}}
    assert operation_names("resize+noise+jpeg@3") == [
        "resize+noise+jpeg",
        "resize",
        "gaussian_noise",
        "jpeg",
    ]
    assert operation_names("resize@2~frame") == ["resize"] and operation_names("clean") == []
    config = {"variant_options": options, "faces": {"margin": 0.25}}
    given = variant_options(config, "resize+noise+jpeg@3")
    assert given == {"resize": {"down": "cubic", "up": "cubic"}}
    h, w = IMG.shape[:2]
    small = cv2.resize(IMG, (round(w * 0.35), round(h * 0.35)), interpolation=cv2.INTER_CUBIC)
    resized = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    rng = rng_for("s", "resize+noise+jpeg@3")
    expected = jpeg_roundtrip(create_op("gaussian_noise", 3)(resized, rng), 60)
    got = apply_variant(IMG, "resize+noise+jpeg@3", "s", given)
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(got, apply_variant(IMG, "resize+noise+jpeg@3", "s"))  # bilinear
    # the same options at random intensity, and a combination's own parts entry wins
    op = op_for_variant("resize+noise+jpeg@random", given)
    assert {s.up for o in op.ops for s in o.steps if hasattr(s, "up")} == {cv2.INTER_CUBIC}
    own = {"resize": {"up": "cubic"}, "resize+noise+jpeg": {"parts": {"resize": {"up": "area"}}}}
    assert op_for_variant("resize+noise+jpeg@1", own).steps[0].up == cv2.INTER_AREA
    with pytest.raises(PerturbationError, match="not among its"):
        create_op("blur+jpeg", 1, parts={"resize": {"up": "cubic"}})


def test_gaussian_noise_sigma_matches_table():
    flat = np.full((128, 128, 3), 128, np.uint8)
    for level, sigma in zip(range(1, 6), (5, 10, 20, 35, 50)):
        diff = create_op("gaussian_noise", level)(flat, rng_for(level)).astype(float) - 128
        assert abs(diff.std() - sigma) < 0.08 * sigma + 0.5, (level, diff.std())


def test_poisson_gaussian_noise_is_signal_dependent():
    dark = np.full((128, 128, 3), 30, np.uint8)
    bright = np.full((128, 128, 3), 220, np.uint8)
    op = create_op("poisson_gaussian_noise", 4)
    std_dark = (op(dark, rng_for(1)).astype(float) - 30).std()
    std_bright = (op(bright, rng_for(1)).astype(float) - 220).std()
    assert std_bright > 1.5 * std_dark


def test_grayscale_has_equal_channels():
    out = apply_variant(IMG, "grayscale@1", "s")
    assert np.array_equal(out[..., 0], out[..., 1]) and np.array_equal(out[..., 1], out[..., 2])
    assert OPERATIONS.get("grayscale").levels == (1,)


def test_enhancement_tables():
    for level, offset in zip(range(1, 6), (-60, -30, 30, 60, 90)):
        shifted = apply_variant(IMG, f"brightness@{level}", "s").astype(int)
        unclipped = IMG.astype(int) + offset <= 255
        assert unclipped.mean() > 0.5
        assert (shifted[unclipped] - IMG[unclipped] == offset).all()
        assert (shifted[~unclipped] == 255).all()
    std = IMG.astype(float).std()
    for level, gain in zip(range(1, 6), (0.5, 0.7, 1.3, 1.6, 2.0)):
        out = apply_variant(IMG, f"contrast@{level}", "s").astype(float)
        if gain <= 1.3:  # larger gains clip, which no longer scales the spread linearly
            assert out.std() == pytest.approx(std * gain, rel=0.03)
    means = [apply_variant(IMG, f"gamma@{k}", "s").mean() for k in range(1, 6)]
    assert means[0] > means[1] > IMG.mean() > means[2] > means[3] > means[4]


def test_df_colour_ops():
    grey = apply_variant(IMG, "df_saturation@5", "s").astype(int)
    assert np.abs(grey[..., 0] - grey[..., 1]).max() <= 1
    assert np.abs(grey[..., 1] - grey[..., 2]).max() <= 1
    dark = apply_variant(IMG, "df_contrast@3", "s")
    assert dark.mean() == pytest.approx(IMG.mean() * 0.6, abs=0.6)


def test_combination_applies_each_part_at_the_same_level():
    np.testing.assert_array_equal(
        apply_variant(IMG, "blur+jpeg@3", "s"), jpeg_roundtrip(gaussian_blur(IMG, 7), 60)
    )


def test_denoise_nlm_removes_noise():
    clean = cv2.GaussianBlur(IMG, (5, 5), 0)
    noisy = create_op("gaussian_noise", 2)(clean, rng_for(7))
    assert psnr(clean, create_op("denoise", 3)(noisy, rng_for(0))) > psnr(clean, noisy) + 2


def test_suites_cover_every_op_and_level():
    image_ops = [n for n in list_ops(kind="image") if OPERATIONS.get(n).category != "distance"]
    suite_ops = {parse_variant(v)[0] for v in DEFAULT_SUITE + DF_SUITE}
    assert suite_ops | set(UNSUITED_IMAGE_OPS) == set(image_ops)
    assert not suite_ops & set(UNSUITED_IMAGE_OPS)
    for name in suite_ops:
        levels = [parse_variant(v)[1] for v in DEFAULT_SUITE + DF_SUITE if v.startswith(name + "@")]
        assert levels == list(OPERATIONS.get(name).levels)
    assert {"df_video_compression", "vid_h264", "vid_hflip"} <= set(list_ops(kind="video"))
    assert list_ops(category="compression", kind="video") == ["df_video_compression", "vid_h264"]
    assert set(list_ops("distance")) == {"far", "far_learned"}
    assert DISTANCE_SUITE == [f"far@{d}" for d in range(1, 6)]


def test_video_only_op_refuses_images():
    op = create_op("df_video_compression", 35)
    assert op.kind == "video" and OPERATIONS.get(op.name).levels == (30, 32, 35, 38, 40)
    with pytest.raises(VideoOnlyOperation, match="video"):
        op(IMG, rng_for(0))
    with pytest.raises(VideoOnlyOperation, match="vid_hflip@1"):
        apply_variant(IMG, "vid_hflip@1", "s")
    assert unavailable_reason("vid_h264@40") is None  # runs on clips, in fairforge.video
    with pytest.raises(InvalidLevel):
        unavailable_reason("vid_h264@41")


def test_parse_variant():
    assert parse_variant("jpeg@60") == ("jpeg", 60)
    assert parse_variant("resize+noise+jpeg@2") == ("resize+noise+jpeg", 2)
    for bad in ("jpeg60", "jpeg@", "@3", "jpeg@high", "", None):
        with pytest.raises(PerturbationError):
            parse_variant(bad)


def test_clear_errors():
    with pytest.raises(UnknownName, match="unknown operation 'sharpen'"):
        create_op("sharpen", 1)
    with pytest.raises(ValueError, match=r"level 50 .*\[95, 80, 60, 45, 30\]"):
        create_op("jpeg", 50)
    with pytest.raises(InvalidLevel):
        create_op("gaussian_noise", 6)
    with pytest.raises(InvalidLevel):
        create_op("grayscale", True)
    with pytest.raises(PerturbationError, match="option"):
        create_op("jpeg", 60, weights="x.pth")
    op = create_op("gaussian_noise", 1)
    with pytest.raises(InvalidImage, match="float32"):
        op(IMG.astype(np.float32), rng_for(0))
    with pytest.raises(InvalidImage, match="shape"):
        op(IMG[..., 0], rng_for(0))
    with pytest.raises(InvalidImage, match="shape"):
        op(np.dstack([IMG, IMG[..., :1]]), rng_for(0))
    with pytest.raises(InvalidImage):
        apply_variant(IMG.tolist(), "jpeg@60", "s")
    assert issubclass(InvalidImage, ValueError) and issubclass(OperationUnavailable, ValueError)


# --- learned ops ----------------------------------------------------------------------------


def test_learned_compression_unavailable_names_the_expected_path(tmp_path):
    expected = "weights/compressai/bmshj2018-factorized-q3.pth.tar"
    assert not available("learned_compression@3")
    assert expected in unavailable_reason("learned_compression@3")
    with pytest.raises(OperationUnavailable, match="q3") as info:
        create_op("learned_compression", 3)
    assert str(info.value.path) == expected
    pattern = str(tmp_path / "bmshj-{quality}.pth")
    reason = unavailable_reason(
        "learned_compression@5", {"learned_compression": {"weights": pattern}}
    )
    assert str(tmp_path / "bmshj-5.pth") in reason


def _tiny_codec(seed: int = 0) -> FactorizedPriorCodec:
    torch.manual_seed(seed)
    codec = FactorizedPriorCodec(8, 12)
    codec.medians.copy_(torch.randn(12) * 0.3)
    return codec.eval()


def test_learned_compression_runs_from_compressai_state_dict(tmp_path):
    codec = _tiny_codec()
    state = compressai_state_dict(codec)
    assert "g_a.1.beta" in state and state["entropy_bottleneck.quantiles"].shape == (12, 1, 3)
    torch.save(state, tmp_path / "q2.pth.tar")
    options = {"learned_compression": {"weights": str(tmp_path / "q{quality}.pth.tar")}}
    assert available("learned_compression@2", options)
    out = apply_variant(IMG, "learned_compression@2", "s", options)
    assert out.shape == IMG.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out, run_codec(codec, IMG))  # same network after reload
    rebuilt = codec_from_compressai(state)
    for name, tensor in codec.state_dict().items():
        torch.testing.assert_close(rebuilt.state_dict()[name], tensor)
    with pytest.raises(ValueError, match="bmshj2018"):
        codec_from_compressai({"g_a.0.weight": torch.zeros(1)})
    del state["entropy_bottleneck._matrix2"]
    with pytest.raises(ValueError, match="13 of the 14 density"):
        codec_from_compressai(state)


def test_codec_rates_are_their_bits_per_pixel(tmp_path):
    """JPEG: the file's bits; the learned codec: Σ −log2 p(ŷ) under its prior. With the
    density's gates shut (factors 0) its cumulative is a logistic in s·y + c, s the product
    of the softplus matrices: the bits are recomputed from that closed form."""
    from fairforge.perturb import bits_per_pixel, is_codec

    h, w = IMG.shape[:2]
    assert bits_per_pixel(IMG, "jpeg@60") == 8 * len(encode_jpeg(IMG, 60)) / (h * w)
    rates = [bits_per_pixel(IMG, f"jpeg@{q}") for q in (95, 80, 60, 45, 30)]
    assert rates == sorted(rates, reverse=True) and rates[-1] > 0
    assert is_codec("learned_compression@3") and is_codec("jpeg@30")
    assert not is_codec("blur+jpeg@2") and not is_codec("clean") and not is_codec("gamma@1")
    with pytest.raises(PerturbationError, match="no rate"):
        bits_per_pixel(IMG, "gaussian_noise@2")

    codec = _tiny_codec(3)
    with torch.no_grad():
        for i, matrix in enumerate(codec.density.matrices):
            matrix.fill_(-1.0 - 0.2 * i)
        for bias in codec.density.biases:
            bias.uniform_(-0.5, 0.5)
    state = compressai_state_dict(codec)
    assert "entropy_bottleneck._matrix4" in state and "entropy_bottleneck._factor3" in state
    torch.save(state, tmp_path / "q4.pth.tar")
    options = {"learned_compression": {"weights": str(tmp_path / "q{quality}.pth.tar")}}
    got = bits_per_pixel(IMG, "learned_compression@4", options)

    d = codec.density
    slope, offset = torch.ones(12, 1, 1), torch.zeros(12, 1, 1)
    with torch.no_grad():
        for matrix, bias in zip(d.matrices, d.biases):
            m = torch.nn.functional.softplus(matrix)
            slope, offset = torch.matmul(m, slope), torch.matmul(m, offset) + bias
        x = torch.nn.functional.pad(
            torch.from_numpy(IMG).permute(2, 0, 1)[None].float() / 255,
            (0, -w % 16, 0, -h % 16),
            mode="replicate",
        )
        y = codec.quantized(x)[0].reshape(12, -1)
        s, c = slope.view(12, 1), offset.view(12, 1)
        p = torch.sigmoid(s * (y + 0.5) + c) - torch.sigmoid(s * (y - 0.5) + c)
        expected = float(-torch.log2(p.clamp_min(1e-9)).sum()) / (h * w)
    assert got == pytest.approx(expected, rel=1e-4)
    # the zoo's names, and CompressAI's newer ParameterList names, load the same density
    renamed = {k.replace("._matrix", ".matrices."): v for k, v in state.items()}
    assert bits_per_pixel(IMG, "learned_compression@4", options) == pytest.approx(
        codec_from_compressai(renamed).bits(x) / (h * w)
    )


def _dncnn_state(zero_last: bool) -> dict[str, torch.Tensor]:
    # KAIR layout: conv, ReLU, conv, BN, ReLU, conv (indices 1 and 4 are the ReLUs).
    torch.manual_seed(1)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 3, 3, padding=1),
    )
    if zero_last:
        torch.nn.init.zeros_(net[5].weight)
        torch.nn.init.zeros_(net[5].bias)
    return {f"model.{k}": v for k, v in net.state_dict().items()}


def test_denoise_dncnn_mode(tmp_path):
    assert "weights/dncnn/dncnn_color_blind.pth" in unavailable_reason(
        "denoise@2", {"denoise": {"mode": "dncnn"}}
    )
    torch.save(_dncnn_state(zero_last=True), tmp_path / "identity.pth")
    torch.save(_dncnn_state(zero_last=False), tmp_path / "random.pth")
    # A net that predicts zero noise must give back the input exactly.
    identity = apply_variant(
        IMG, "denoise@3", "s", {"denoise": {"weights": tmp_path / "identity.pth"}}
    )
    np.testing.assert_array_equal(identity, IMG)
    options = {"denoise": {"weights": str(tmp_path / "random.pth")}}
    one, two = (apply_variant(IMG, f"denoise@{k}", "s", options) for k in (1, 2))
    assert one.shape == IMG.shape and not np.array_equal(one, two)
    np.testing.assert_array_equal(one, apply_variant(IMG, "denoise@1", "s", options))
    with pytest.raises(PerturbationError, match="mode"):
        create_op("denoise", 1, mode="bm3d")


def test_an_operation_learns_its_name_and_its_metadata_are_its_class_attributes():
    toy = type("ToyOp", (Operation,), {"category": "noise", "params": (1, 2, 3, 4, 5)})
    with pytest.raises(TypeError, match="metadata are its class attributes"):
        OPERATIONS.register("toyop", toy, category="blur")
    with OPERATIONS.registered("toyop", toy):
        assert toy.name == "toyop" and create_op("toyop", 2).name == "toyop"
        assert OPERATIONS.metadata("toyop") == {
            "kind": "image",
            "category": "noise",
            "levels": (1, 2, 3, 4, 5),
        }
    assert "toyop" not in list_ops()
