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
