"""Operations with severity levels (image and video), training augmentations (SDAug/DAug)
and near-to-far degradation. Variants are named ``{op}@{level}`` (docs/perturbations.md).

- :mod:`.base`: the :class:`Operation` model, the ``OPERATIONS`` registry, the errors;
- :mod:`.ops`, :mod:`.deeperforensics`, :mod:`.distance`: image operations;
- :mod:`.video_ops`: video operations (run on clips by :mod:`fairforge.video.ops`);
- :mod:`.variants`: the variant grammar and whether a variant can run here;
- :mod:`.augment`: the ``AUGMENTATIONS`` registry (``none``, ``sdaug``, ``daug``, ``augmix``,
  ``deepfakebench``);
- :mod:`.suites`: named variant lists.
"""

# The member modules register their operations on import.
from fairforge.perturb import deeperforensics, distance, ops, video_ops  # noqa: F401
from fairforge.perturb.augment import AUGMENTATIONS, AugMix, DAug, SDAug, create_augment
from fairforge.perturb.base import (
    OPERATIONS,
    InvalidImage,
    InvalidLevel,
    Operation,
    OperationUnavailable,
    PerturbationError,
    VideoOnlyOperation,
    VideoOperation,
    check_image,
    create_op,
    list_ops,
)
from fairforge.perturb.distance import far_degrade
from fairforge.perturb.suites import (
    DEFAULT_SUITE,
    DF_SUITE,
    DISTANCE_SUITE,
    RANDOM_SUITE,
    SUITES,
    VIDEO_SUITE,
    suite,
)
from fairforge.perturb.variants import (
    APPLY_AT,
    CLEAN,
    FRAME_SUFFIX,
    RANDOM,
    RANDOM_DRAWS,
    RandomIntensity,
    apply_at,
    apply_variant,
    at_crop,
    at_frame,
    available,
    bits_per_pixel,
    check_variant,
    frame_variant_pattern,
    is_codec,
    is_frame_variant,
    is_random_variant,
    is_video_op,
    is_video_variant,
    op_for_variant,
    operation_names,
    parse_variant,
    random_draws,
    unavailable_reason,
    variant_name,
    variants_of,
    video_variant_pattern,
)

__all__ = [
    "APPLY_AT",
    "AUGMENTATIONS",
    "CLEAN",
    "AugMix",
    "DAug",
    "DEFAULT_SUITE",
    "DF_SUITE",
    "DISTANCE_SUITE",
    "FRAME_SUFFIX",
    "InvalidImage",
    "InvalidLevel",
    "OPERATIONS",
    "Operation",
    "OperationUnavailable",
    "PerturbationError",
    "RANDOM",
    "RANDOM_SUITE",
    "RANDOM_DRAWS",
    "RandomIntensity",
    "random_draws",
    "SDAug",
    "SUITES",
    "VIDEO_SUITE",
    "VideoOnlyOperation",
    "VideoOperation",
    "apply_at",
    "apply_variant",
    "at_crop",
    "at_frame",
    "available",
    "bits_per_pixel",
    "check_image",
    "check_variant",
    "create_augment",
    "create_op",
    "far_degrade",
    "frame_variant_pattern",
    "is_codec",
    "is_frame_variant",
    "is_random_variant",
    "is_video_op",
    "is_video_variant",
    "list_ops",
    "op_for_variant",
    "operation_names",
    "parse_variant",
    "suite",
    "unavailable_reason",
    "variant_name",
    "variants_of",
    "video_variant_pattern",
]
