"""The variant grammar, and whether a variant can run here.

A variant names what is done to every sample of a test set:

- ``clean``: nothing;
- ``{op}@{level}``: one registered operation at one of its levels (``jpeg@60``,
  ``far@3``); combinations are operations too, named by their parts
  (``blur+jpeg@3``: each part at its own third level);
- video operations use the same form (``vid_h264@40``, ``df_video_compression@35``) and run
  on whole clips in :mod:`fairforge.video`, not on single images;
- ``{op}@random``: the Benchmark paper's protocol, each sample at an intensity drawn at
  random within the operation's range (from its mildest to its harshest tabulated level),
  seeded by the sample (:class:`RandomIntensity`);
- ``{op}@{level}~frame``: where the operation applies. Without a suffix (``crop``) it acts on
  the aligned face crop a detector reads; with ``~frame`` on the whole source image or video
  frame, before face detection, which then runs again on the degraded frame
  (:func:`apply_at`, :func:`at_crop`); a suite name takes the suffix too
  (``deeperforensics~frame``).

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
)
from fairforge.seeding import rng_for

CLEAN = "clean"
#: Where an operation applies: on the aligned face crop (the default) or on the whole frame.
APPLY_AT = ("crop", "frame")
#: The suffix of a frame-mode variant or suite: ``jpeg@60~frame``.
FRAME_SUFFIX = "~frame"
#: The level of a random-intensity variant (``jpeg@random``, the Benchmark protocol).
RANDOM = "random"

_VARIANT = re.compile(r"^([a-z][a-z0-9_+]*)@(-?\d+|random)(~frame)?$")

Options = Mapping[str, Mapping[str, Any]]


def variant_name(op: str, level: int, apply_at: str = "crop") -> str:
    if apply_at not in APPLY_AT:
        raise PerturbationError(f"apply_at {apply_at!r} is not one of {APPLY_AT}")
    return f"{op}@{level}" + (FRAME_SUFFIX if apply_at == "frame" else "")


def parse_variant(variant: str) -> tuple[str, int | str]:
    """``"jpeg@60"`` -> ``("jpeg", 60)`` (``"jpeg@60~frame"`` too: where it applies is
    :func:`apply_at`'s answer); ``"jpeg@random"`` -> ``("jpeg", RANDOM)``. ``clean`` is not
    an op variant and is refused here."""
    match = _VARIANT.match(variant.strip()) if isinstance(variant, str) else None
    if match is None:
        raise PerturbationError(
            f"variant {variant!r} is not of the form '{{op}}@{{level}}', '{{op}}@random' or "
            f"'{{op}}@{{level}}~frame' (e.g. 'jpeg@60')"
        )
    level = match.group(2)
    return match.group(1), RANDOM if level == RANDOM else int(level)


def is_random_variant(variant: str) -> bool:
    """True for the Benchmark protocol's random-intensity variants (``jpeg@random``)."""
    if not isinstance(variant, str) or variant == CLEAN:
        return False
    try:
        return parse_variant(variant)[1] == RANDOM
    except PerturbationError:
        return False


def apply_at(variant: str) -> str:
    """``"frame"`` for a variant applied to the whole frame before face detection
    (``jpeg@60~frame``), else ``"crop"`` (``clean`` included)."""
    return "frame" if isinstance(variant, str) and variant.endswith(FRAME_SUFFIX) else "crop"


def is_frame_variant(variant: str) -> bool:
    if apply_at(variant) != "frame":
        return False
    parse_variant(variant)  # a malformed name raises
    return True


def at_crop(variant: str) -> str:
    """The same operation and level applied to the crop: ``jpeg@60~frame`` -> ``jpeg@60``."""
    return variant.removesuffix(FRAME_SUFFIX)


def at_frame(variant: str) -> str:
    """The same operation and level applied to the frame: ``jpeg@60`` -> ``jpeg@60~frame``."""
    if variant == CLEAN:
        raise PerturbationError("clean has no frame mode: nothing is applied")
    return at_crop(variant) + FRAME_SUFFIX


def variants_of(name: str) -> list[str]:
    """Every variant of one op, mildest first."""
    return [variant_name(name, level) for level in OPERATIONS.get(name).levels]


def is_video_op(variant: str) -> bool:
    """True when the variant's operation is a video operation (crop or frame mode)."""
    if not isinstance(variant, str) or variant == CLEAN:
        return False
    try:
        name, _ = parse_variant(variant)
    except PerturbationError:
        return False
    return name in OPERATIONS and OPERATIONS.metadata(name)["kind"] == "video"


def is_video_variant(variant: str) -> bool:
    """True for crop-mode variants of a video operation (any level): clips of face crops
    through ffmpeg. A frame-mode one (``vid_h264@40~frame``) is a frame variant."""
    return is_video_op(variant) and apply_at(variant) == "crop"


def video_variant_pattern() -> str:
    """A regex matching the names of crop-mode video variants (a Snakemake wildcard
    constraint)."""
    return "(?:" + "|".join(OPERATIONS.names(kind="video")) + r")@-?\d+"


def frame_variant_pattern() -> str:
    """A regex matching the names of frame-mode variants (a Snakemake wildcard constraint)."""
    return r"[a-z][a-z0-9_+]*@(?:-?\d+|random)" + re.escape(FRAME_SUFFIX)


def _options_for(name: str, options: Options | None) -> dict:
    """The options of op ``name``; a combination also gets, as ``parts``, those configured
    for each of its parts by the part's own name (merged under its own ``parts``)."""
    own = dict((options or {}).get(name, {}))
    parts = getattr(OPERATIONS.get(name), "parts", ()) if name in OPERATIONS else ()
    given = {cls.name: dict(options[cls.name]) for cls in parts if cls.name in (options or {})}
    if given:
        own["parts"] = {**given, **dict(own.get("parts", {}))}
    return own


def operation_names(variant: str) -> list[str]:
    """The operations whose options a variant uses: its own, then, for a combination, its
    parts' (``resize+noise+jpeg@2`` -> resize+noise+jpeg, resize, gaussian_noise, jpeg)."""
    if variant == CLEAN:
        return []
    name, _ = parse_variant(variant)
    parts = getattr(OPERATIONS.get(name), "parts", ()) if name in OPERATIONS else ()
    return list(dict.fromkeys([name, *(cls.name for cls in parts)]))


#: How ``op@random`` draws an intensity (``variant_options: {random: {draw: ...}}``).
RANDOM_DRAWS = ("continuous", "levels")


class RandomIntensity:
    """The Benchmark paper's protocol: every sample is distorted by the operation at an
    intensity drawn at random within its allowed range.

    ``draw="continuous"`` (default): the range runs from the parameter of the mildest
    tabulated level to that of the harshest; a fraction t is drawn uniformly in [0, 1) and
    the parameter is the point t of the way along (a parameter pair moves together, a
    combination's parts each along their own range), rounded where the parameter is an
    integer (a JPEG quality, a block count) or an odd kernel size
    (:meth:`~fairforge.perturb.base.Operation.at_fraction`). An operation with no range
    between its levels (one level, ``far``'s table of steps, weights per quality, DnCNN
    passes) draws one of its levels. ``draw="levels"``: a level uniformly among the
    tabulated ones, as the DeeperForensics-1.0 random-level generator draws (level 1..5).

    The draw comes from the call's ``rng``, which :func:`apply_variant` seeds by
    ``(sample_id, variant)``: the same sample gets the same intensity in every run; the
    same ``rng`` then drives the operation's own randomness. ``last_level`` and
    ``last_param`` describe the latest call (``last_level`` is ``None`` for a parameter
    between levels). Image operations only (a video operation needs one setting per clip).
    """

    def __init__(self, name: str, draw: str = "continuous", **options: Any):
        cls = OPERATIONS.get(name)
        if cls.kind != "image":
            raise PerturbationError(f"{name}@{RANDOM}: random intensity is for image operations")
        if draw not in RANDOM_DRAWS:
            raise PerturbationError(f"{name}@{RANDOM}: draw {draw!r} is not one of {RANDOM_DRAWS}")
        self.name, self.level = name, RANDOM
        self.ops = [create_op(name, level, **options) for level in cls.levels]
        self.draw = draw if self.ops[0].param_rounding() is not None else "levels"
        self.last_level: int | None = None
        self.last_param: Any = None

    def choose(self, rng: np.random.Generator) -> Operation:
        """The operation at the intensity drawn from ``rng`` (the first draw of ``rng``)."""
        if self.draw == "levels":
            return self.ops[int(rng.integers(len(self.ops)))]
        return self.ops[0].at_fraction(float(rng.random()))

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        op = self.choose(rng)
        self.last_level, self.last_param = op.level, op.param
        return op(image, rng)

    def __repr__(self) -> str:
        low, high = self.ops[0].param, self.ops[-1].param
        return f"RandomIntensity({self.name!r}, draw={self.draw!r}, range=({low!r}, {high!r}))"


def random_draws(
    sample_ids, variant: str, options: Options | None = None
) -> list[tuple[int | None, Any]]:
    """(level, parameter) that ``variant`` (``op@random``, crop or frame mode) gives each
    sample, without an image: the draws :func:`apply_variant` makes."""
    op = op_for_variant(variant, options)
    if not isinstance(op, RandomIntensity):
        raise PerturbationError(f"{variant!r} is not a random-intensity variant")
    chosen = [op.choose(rng_for(str(s), variant)) for s in sample_ids]
    return [(c.level, c.param) for c in chosen]


def op_for_variant(
    variant: str, options: Options | None = None
) -> Operation | RandomIntensity | None:
    """The op of a variant (``None`` for ``clean``). ``options`` maps op name -> kwargs;
    its entry ``random`` (``{draw: continuous | levels}``) tells ``op@random`` how to draw.

    Raises for a malformed variant, an unknown op or level, and
    :class:`~fairforge.perturb.base.OperationUnavailable` for missing weights.
    """
    if variant == CLEAN:
        return None
    name, level = parse_variant(variant)
    if level == RANDOM:
        draw = dict((options or {}).get(RANDOM, {})).get("draw", RANDOM_DRAWS[0])
        return RandomIntensity(name, draw, **_options_for(name, options))
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


def is_codec(variant: str) -> bool:
    """Whether a variant's operation is a codec with a rate (``bits``): JPEG and the learned
    compression (not a combination that ends in one)."""
    if variant == CLEAN:
        return False
    name, _ = parse_variant(variant)
    return name in OPERATIONS and hasattr(OPERATIONS.get(name), "bits")


def bits_per_pixel(image: np.ndarray, variant: str, options: Options | None = None) -> float:
    """The rate a codec variant (:func:`is_codec`; at a tabulated level) spends on
    ``image``: its bits over the image's pixels (the Assessment's Fig. 5 axis)."""
    check_image(image, variant)
    if not is_codec(variant) or parse_variant(variant)[1] == RANDOM:
        raise PerturbationError(f"{variant}: not a codec at one level, it has no rate")
    op = op_for_variant(variant, options)
    return float(op.bits(image)) / float(image.shape[0] * image.shape[1])


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
