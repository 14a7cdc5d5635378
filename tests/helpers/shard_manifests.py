"""A sources manifest of eight tiny image rows (two per subject, one group), which the
forgery shard readers' tests build their faces and pairs on."""

from __future__ import annotations

import json

import pandas as pd

EIGHT_IDS = [f"i{k:02d}" for k in range(8)]


def eight_sources() -> pd.DataFrame:
    """Eight sources ``i00``..``i07``, subjects ``s0``..``s3`` two images each, all train."""
    return pd.DataFrame(
        {
            "image_id": EIGHT_IDS,
            "subject_id": [f"s{k // 2}" for k in range(8)],
            "group": ["g"] * 8,
            "split": ["train"] * 8,
            "attributes": [json.dumps({"tone": "t"})] * 8,
            "dataset": "d",
            "path": [f"{i}.jpg" for i in EIGHT_IDS],
            "width": 8,
            "height": 8,
            "sha256": "x",
            "ok": True,
            "reason": "",
        }
    )
