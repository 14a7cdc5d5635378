"""What a variant is for the tables: its operation, level, severity and category, the order
the tables list variants in (``clean`` first, mildest first), and which configured variants
can be evaluated at all.
"""
from __future__ import annotations

import importlib.util
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairforge.perturb import (CLEAN, PerturbationError, UnknownOperation, get_op_class,
                               list_ops, parse_variant, unavailable_reason)
from fairforge.video.ops import get_video_op

# The variant FairFD Table 6 compares with ``clean``.
GRAYSCALE = "grayscale@1"


def has_video_pipeline() -> bool:
    """Whether the video operations (ffmpeg, module ``fairforge.video``) are installed."""
    return importlib.util.find_spec("fairforge.video") is not None


def describe_variant(variant: str) -> dict:
    """Operation, level, severity rank (1 = mildest) and category of a variant.

    ``clean`` has category ``clean`` and severity 0. An operation the image registry does not
    know is a video operation when the video pipeline exists (category ``video``), else
    ``other``; its severity is its rank among the levels seen (filled in by the tables).
    """
    if variant == CLEAN:
        return {"variant": variant, "operation": CLEAN, "level": 0, "severity": 0,
                "category": CLEAN}
    name, level = parse_variant(variant)
    try:
        cls = get_op_class(name)
    except UnknownOperation:
        levels = _video_op_levels(name)
        return {"variant": variant, "operation": name, "level": level,
                "severity": levels.index(level) + 1 if level in levels else np.nan,
                "category": "video" if has_video_pipeline() else "other"}
    severity = cls.levels.index(level) + 1 if level in cls.levels else np.nan
    return {"variant": variant, "operation": name, "level": level, "severity": severity,
            "category": cls.category}


def _video_op(name: str):
    """The video pipeline's operation ``name``; None when it or the pipeline is missing."""
    if not has_video_pipeline():
        return None
    try:
        return get_video_op(name)
    except UnknownOperation:
        return None


def _video_op_levels(name: str) -> tuple[int, ...]:
    op = _video_op(name)
    return tuple(op.levels) if op is not None else ()


def variant_sort_key(variant: str) -> tuple:
    """``clean`` first, then by operation and severity (mildest first)."""
    if variant == CLEAN:
        return (0, "", 0.0)
    try:
        info = describe_variant(variant)
    except PerturbationError:
        return (2, variant, 0.0)
    rank = info["severity"] if np.isfinite(info["severity"]) else info["level"]
    return (1, info["operation"], float(rank))


def sorted_variants(variants: Iterable[str]) -> list[str]:
    return sorted(dict.fromkeys(variants), key=variant_sort_key)


def variant_unavailable_reason(variant: str,
                               options: Mapping[str, Mapping] | None = None) -> str | None:
    """Why a configured variant cannot be evaluated, or None.

    Beyond :func:`fairforge.perturb.unavailable_reason` (missing weights), video operations
    need the video pipeline. Malformed variants and invalid levels still raise: they are
    configuration errors.
    """
    if variant == CLEAN:
        return None
    info = describe_variant(variant)
    if info["category"] in ("video", "other"):
        if not has_video_pipeline():
            return (f"{variant} is not an image operation and the video pipeline "
                    "(fairforge.video) is not installed")
        if _video_op(info["operation"]) is None and info["operation"] not in _image_ops():
            return f"unknown operation {info['operation']!r} (neither an image nor a video operation)"
        return None
    return unavailable_reason(variant, options)


def _image_ops() -> set[str]:
    return set(list_ops())


def split_variants(variants: Iterable[str], options: Mapping[str, Mapping] | None = None
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
        info.loc[unknown, "severity"] = (info.loc[unknown].groupby("operation")["level"]
                                         .rank(method="dense"))
    return frame.assign(**{c: info[c] for c in ("operation", "level", "severity", "category")})


def order_rows(frame: pd.DataFrame, by: Sequence[str] = ("dataset", "detector")) -> pd.DataFrame:
    """Rows sorted by ``by`` then by variant order (clean first, mildest first)."""
    rank = {v: i for i, v in enumerate(sorted_variants(frame["variant"].unique()))}
    return (frame.assign(_rank=frame["variant"].map(rank))
            .sort_values([*by, "_rank"], kind="stable").drop(columns="_rank")
            .reset_index(drop=True))
