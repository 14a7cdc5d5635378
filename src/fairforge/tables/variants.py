"""What a variant is for the tables: its operation, level, severity and category, the order
the tables list variants in (``clean`` first, mildest first), and which configured variants
can be evaluated at all.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairforge.perturb import (
    CLEAN,
    FRAME_SUFFIX,
    OPERATIONS,
    RANDOM,
    PerturbationError,
    apply_at,
    parse_variant,
    unavailable_reason,
)
from fairforge.registry import UnknownName

# The category of the Benchmark protocol's variants (op@random): its mean is their summary.
RANDOM_CATEGORY = "random intensity"
# The variant FairFD Table 6 compares with ``clean``.
GRAYSCALE = "grayscale@1"


def has_video_pipeline() -> bool:
    """Whether the video operations (ffmpeg, module ``fairforge.video``) are installed."""
    return importlib.util.find_spec("fairforge.video") is not None


def describe_variant(variant: str) -> dict:
    """Operation, level, severity rank (1 = mildest) and category of a variant.

    ``clean`` has category ``clean`` and severity 0. Video operations share the category
    ``video``. An operation nobody registered is ``video`` when the video pipeline exists,
    else ``other``; its severity is its rank among the levels seen (filled in by the tables).
    """
    if variant == CLEAN:
        return {
            "variant": variant,
            "operation": CLEAN,
            "level": 0,
            "severity": 0,
            "category": CLEAN,
        }
    name, level = parse_variant(variant)
    if level == RANDOM:  # the Benchmark protocol: one AUC per operation, no level
        level = np.nan
    # jpeg@30~frame is another curve than jpeg@30: the operation applied to the whole frame
    operation = name + (FRAME_SUFFIX if apply_at(variant) == "frame" else "")
    if name not in OPERATIONS:
        return {
            "variant": variant,
            "operation": operation,
            "level": level,
            "severity": np.nan,
            "category": "video" if has_video_pipeline() else "other",
        }
    meta = OPERATIONS.metadata(name)
    severity = meta["levels"].index(level) + 1 if level in meta["levels"] else np.nan
    category = "video" if meta["kind"] == "video" else meta["category"]
    return {
        "variant": variant,
        "operation": operation,
        "level": level,
        "severity": severity,
        "category": RANDOM_CATEGORY if np.isnan(level) else category,
    }


def variant_sort_key(variant: str) -> tuple:
    """``clean`` first, then by operation and severity (mildest first)."""
    if variant == CLEAN:
        return (0, "", 0.0)
    try:
        info = describe_variant(variant)
    except PerturbationError:
        return (2, variant, 0.0)
    rank = float(info["severity"] if np.isfinite(info["severity"]) else info["level"])
    return (1, info["operation"], np.inf if np.isnan(rank) else rank)  # op@random: last


def sorted_variants(variants: Iterable[str]) -> list[str]:
    return sorted(dict.fromkeys(variants), key=variant_sort_key)


def variant_unavailable_reason(
    variant: str, options: Mapping[str, Mapping] | None = None
) -> str | None:
    """Why a configured variant cannot be evaluated, or None
    (:func:`fairforge.perturb.variants.unavailable_reason`); an unknown operation is
    reported, not raised. Malformed variants and invalid levels still raise: they are
    configuration errors.
    """
    try:
        return unavailable_reason(variant, options)
    except UnknownName as err:
        return str(err)


def split_variants(
    variants: Iterable[str], options: Mapping[str, Mapping] | None = None
) -> tuple[list[str], dict[str, str]]:
    """``(available, {unavailable variant: reason})``; ``clean`` is always available, first."""
    available, unavailable = [CLEAN], {}
    for variant in sorted_variants(variants):
        reason = variant_unavailable_reason(variant, options)
        if reason is None:
            if variant not in available:
                available.append(variant)
        else:
            unavailable[variant] = reason
    return available, unavailable


def with_variant_info(frame: pd.DataFrame) -> pd.DataFrame:
    info = pd.DataFrame([describe_variant(v) for v in frame["variant"]], index=frame.index)
    # Operations without registered levels get their severity from the order of their levels.
    unknown = info["severity"].isna()
    if unknown.any():
        info.loc[unknown, "severity"] = (
            info.loc[unknown].groupby("operation")["level"].rank(method="dense")
        )
    return frame.assign(**{c: info[c] for c in ("operation", "level", "severity", "category")})


def order_rows(frame: pd.DataFrame, by: Sequence[str] = ("dataset", "detector")) -> pd.DataFrame:
    """Rows sorted by ``by`` then by variant order (clean first, mildest first)."""
    rank = {v: i for i, v in enumerate(sorted_variants(frame["variant"].unique()))}
    return (
        frame.assign(_rank=frame["variant"].map(rank))
        .sort_values([*by, "_rank"], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )
