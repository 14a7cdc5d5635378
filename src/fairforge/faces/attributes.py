"""Faces with who they are: each face joined with its subject, group, split and attributes."""

from __future__ import annotations

import json

import pandas as pd

# The source columns every consumer of faces needs.
SOURCE_META = ["image_id", "subject_id", "group", "split"]


def faces_with_attributes(sources: pd.DataFrame, faces: pd.DataFrame) -> pd.DataFrame:
    """Faces joined with their subject, group, split and every source attribute as a column.

    ``sources`` needs :data:`SOURCE_META`; attributes and video columns are joined when
    present, so a stage that uses none of them need not read them.
    """
    meta = sources[SOURCE_META].copy()
    if "attributes" in sources.columns:
        attrs = pd.DataFrame(
            [json.loads(a) if isinstance(a, str) and a else {} for a in sources["attributes"]],
            index=sources.index,
        )
        attrs = attrs[[c for c in attrs.columns if c not in meta.columns]]
        meta = pd.concat([meta, attrs], axis=1)
    extra = [c for c in ("video_id", "frame_index") if c in sources.columns]
    meta = pd.concat([meta, sources[extra]], axis=1) if extra else meta
    return faces.merge(meta, on="image_id", how="left", validate="one_to_one")
