"""Image perturbations with severity levels, training augmentations (SDAug/DAug) and
near-to-far degradation. Variants are named ``{op}@{level}`` (docs/perturbations.md)."""
from fairforge.perturb.registry import (
    CLEAN, InvalidImage, InvalidLevel, Operation, OperationUnavailable, PerturbationError,
    UnknownOperation, VideoOnlyOperation, apply_variant, available, check_image, create_op,
    get_op_class, list_ops, op_for_variant, parse_variant, register, unavailable_reason,
    variants_of)
from fairforge.perturb import deeperforensics, distance, ops  # noqa: F401  (registration)
from fairforge.perturb.augment import DAug, SDAug, create_augment
from fairforge.perturb.distance import far_degrade
from fairforge.perturb.suites import DEFAULT_SUITE, DF_SUITE, DISTANCE_SUITE, SUITES, suite

__all__ = [
    "CLEAN", "DAug", "DEFAULT_SUITE", "DF_SUITE", "DISTANCE_SUITE", "InvalidImage",
    "InvalidLevel", "Operation", "OperationUnavailable", "PerturbationError", "SDAug",
    "SUITES", "UnknownOperation", "VideoOnlyOperation", "apply_variant", "available",
    "check_image", "create_augment", "create_op", "far_degrade", "get_op_class", "list_ops",
    "op_for_variant", "parse_variant", "register", "suite", "unavailable_reason",
    "variants_of",
]
