"""Named variant lists, as data: every op of a suite at each of its levels, mildest first."""

from __future__ import annotations

from fairforge.perturb.variants import CLEAN, RANDOM, apply_at, at_crop, at_frame, variants_of

ASSESSMENT_OPS = (
    "gaussian_noise",
    "poisson_gaussian_noise",
    "resize",
    "jpeg",
    "learned_compression",
    "gaussian_blur",
    "denoise",
    "brightness",
    "contrast",
    "gamma",
    "jpeg+gaussian_noise",
    "blur+jpeg",
    "resize+noise+jpeg",
    "grayscale",
)
DF_IMAGE_OPS = ("df_saturation", "df_contrast", "df_block", "df_noise", "df_blur", "df_pixelate")
# The order of the table in video_ops.py.
VIDEO_OPS = (
    "vid_h264",
    "df_video_compression",
    "vid_hflip",
    "vid_vflip",
    "vid_vintage",
    "vid_grayscale",
    "vid_lighten",
    "vid_darken",
    "vid_contrast",
    "vid_noise",
    "vid_scale",
    "vid_stretch",
)

# Image operations that no suite holds: a config names their variants. HiFiC [61] is the
# Assessment's third codec of Fig. 5 (§5.4) only: §3.1's learned compression, Table 2's
# "DL-Comp", is bmshj2018 [60] (configs/assessment.yaml).
UNSUITED_IMAGE_OPS = ("hific",)

# The Assessment paper's own operations: §3.1's image operations (grayscale is FairFD's
# Table 6, not the Assessment's) and §3.2's video operations (DeeperForensics' compression
# levels are not).
ASSESSMENT_IMAGE_OPS = tuple(op for op in ASSESSMENT_OPS if op != "grayscale")
ASSESSMENT_VIDEO_OPS = tuple(op for op in VIDEO_OPS if op != "df_video_compression")

#: Categories a robustness table may average over, by scheme (``metrics.robustness_categories``):
#: operation -> (modality, category). ``assessment``: §3.1's six image categories (noise,
#: resizing, compression, denoising, enhancement, combinations: the Gaussian blur is its
#: denoising "by smoothing", beside DnCNN) and §3.2's seven video categories (compression,
#: flip, filters, brightness, contrast, noise, resolution). An operation a scheme does not
#: name keeps its own category.
CATEGORY_SCHEMES: dict[str, dict[str, tuple[str, str]]] = {
    "assessment": {
        "gaussian_noise": ("image", "noise"),
        "poisson_gaussian_noise": ("image", "noise"),
        "resize": ("image", "resizing"),
        "jpeg": ("image", "compression"),
        "learned_compression": ("image", "compression"),
        "gaussian_blur": ("image", "denoising"),
        "denoise": ("image", "denoising"),
        "brightness": ("image", "enhancement"),
        "contrast": ("image", "enhancement"),
        "gamma": ("image", "enhancement"),
        "jpeg+gaussian_noise": ("image", "combination"),
        "blur+jpeg": ("image", "combination"),
        "resize+noise+jpeg": ("image", "combination"),
        "vid_h264": ("video", "compression"),
        "vid_hflip": ("video", "flip"),
        "vid_vflip": ("video", "flip"),
        "vid_vintage": ("video", "filters"),
        "vid_grayscale": ("video", "filters"),
        "vid_lighten": ("video", "brightness"),
        "vid_darken": ("video", "brightness"),
        "vid_contrast": ("video", "contrast"),
        "vid_noise": ("video", "noise"),
        "vid_scale": ("video", "resolution"),
        "vid_stretch": ("video", "resolution"),
    },
}

# learned_compression stays in the default suite: without weights its variants are reported
# as unavailable (variants.unavailable_reason), never silently dropped.
DEFAULT_SUITE: list[str] = [v for op in ASSESSMENT_OPS for v in variants_of(op)]
DF_SUITE: list[str] = [v for op in DF_IMAGE_OPS for v in variants_of(op)]
DISTANCE_SUITE: list[str] = variants_of("far")
VIDEO_SUITE: list[str] = [v for op in VIDEO_OPS for v in variants_of(op)]

# The Benchmark paper's protocol: each image operation once, at a random level per sample.
RANDOM_SUITE: list[str] = [f"{op}@{RANDOM}" for op in ASSESSMENT_OPS + DF_IMAGE_OPS]

SUITES: dict[str, list[str]] = {
    "default": DEFAULT_SUITE,
    "assessment": [v for op in ASSESSMENT_IMAGE_OPS for v in variants_of(op)],
    "assessment_video": [v for op in ASSESSMENT_VIDEO_OPS for v in variants_of(op)],
    "random": RANDOM_SUITE,
    "deeperforensics": DF_SUITE,
    "distance": DISTANCE_SUITE,
    "video": VIDEO_SUITE,
}


def suite(name: str, with_clean: bool = True) -> list[str]:
    """A named suite's variants, ``clean`` first unless ``with_clean`` is False. A name with
    the frame suffix (``deeperforensics~frame``) gives every member in frame mode."""
    try:
        variants = SUITES[at_crop(name)]
    except KeyError:
        raise KeyError(f"unknown suite {name!r}; known: {sorted(SUITES)}") from None
    if apply_at(name) == "frame":
        variants = [at_frame(v) for v in variants]
    return ([CLEAN] if with_clean else []) + list(variants)
