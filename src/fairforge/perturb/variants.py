"""The variant grammar, and whether a variant can run here.

A variant names what is done to every sample of a test set:

- ``clean``: nothing;
- ``{op}@{level}``: one registered operation at one of its levels (``jpeg@60``,
  ``far@3``); combinations are operations too, named by their parts
  (``blur+jpeg@3``: each part at its own third level);
- video operations use the same form (``vid_h264@40``, ``df_video_compression@35``) and run
  on whole clips in :mod:`fairforge.video`, not on single images.

Every question about a variant string goes through this module: its parts
(:func:`parse_variant`), its operation (:func:`op_for_variant`), whether it is a video
variant (:func:`is_video_variant`), and whether it can run here (:func:`unavailable_reason`:
``None``, or why not). A malformed variant, an unknown operation or a level the operation
does not have is a configuration error and raises; an operation whose weights are missing
is not, it is reported unavailable with the path it expected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from fairforge.perturb.base import (
    OPERATIONS,
    Operation,
    OperationUnavailable,
    PerturbationError,
    check_image,
    create_op,
    get_op_class,
)
from fairforge.seeding import rng_for

CLEAN = "clean"

_VARIANT = re.compile(r"^([a-z][a-z0-9_+]*)@(-?\d+)$")

Options = Mapping[str, Mapping[str, Any]]


def variant_name(op: str, level: int) -> str:
    return f"{op}@{level}"


def parse_variant(variant: str) -> tuple[str, int]:
    """``"jpeg@60"`` -> ``("jpeg", 60)``. ``clean`` is not an op variant and is refused here."""
    match = _VARIANT.match(variant.strip()) if isinstance(variant, str) else None
    if match is None:
        raise PerturbationError(
            f"variant {variant!r} is not of the form '{{op}}@{{level}}' (e.g. 'jpeg@60')"
        )
    return match.group(1), int(match.group(2))


def variants_of(name: str) -> list[str]:
    """Every variant of one op, mildest first."""
    return [variant_name(name, level) for level in get_op_class(name).levels]


def is_video_variant(variant: str) -> bool:
    """True for ``{op}@{level}`` variants of a video operation (any level)."""
    if not isinstance(variant, str) or variant == CLEAN:
        return False
    try:
        name, _ = parse_variant(variant)
    except PerturbationError:
        return False
    return name in OPERATIONS and OPERATIONS.metadata(name)["kind"] == "video"


def video_variant_pattern() -> str:
    """A regex matching the names of video variants (a Snakemake wildcard constraint)."""
    return "(?:" + "|".join(OPERATIONS.names(kind="video")) + r")@-?\d+"


def _options_for(name: str, options: Options | None) -> dict:
    return dict((options or {}).get(name, {}))


def op_for_variant(variant: str, options: Options | None = None) -> Operation | None:
    """The op of a variant (``None`` for ``clean``). ``options`` maps op name -> kwargs.

    Raises for a malformed variant, an unknown op or level, and
    :class:`~fairforge.perturb.base.OperationUnavailable` for missing weights.
    """
    if variant == CLEAN:
        return None
    name, level = parse_variant(variant)
    return create_op(name, level, **_options_for(name, options))


def apply_variant(
    image: np.ndarray, variant: str, sample_id: str, options: Options | None = None
) -> np.ndarray:
    """Apply a variant to one image, seeded by ``(sample_id, variant)``.

    ``clean`` returns the image itself (checked, not copied); a video variant raises
    :class:`~fairforge.perturb.base.VideoOnlyOperation`.
    """
    check_image(image, f"{sample_id}")
    op = op_for_variant(variant, options)
    if op is None:
        return image
    return op(image, rng_for(sample_id, variant))


def unavailable_reason(variant: str, options: Options | None = None) -> str | None:
    """``None`` when the variant can run here, otherwise why not (with the expected path).

    ``clean`` and video variants always can (ffmpeg failures are per clip). Malformed
    variants, unknown ops and bad levels raise: they are configuration errors, not missing
    files.
    """
    try:
        op_for_variant(variant, options)
    except OperationUnavailable as err:
        return str(err)
    return None


def available(variant: str, options: Options | None = None) -> bool:
    return unavailable_reason(variant, options) is None


def check_variant(variant: str) -> None:
    """Raise (a ValueError) when ``variant`` is a configuration error; missing weights are not
    one (the variant is then reported unavailable)."""
    unavailable_reason(variant)
