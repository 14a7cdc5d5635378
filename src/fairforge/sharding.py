"""Shard plans and shard reads: a stage's per-image work split into jobs of ``shard_size``
source images each.

Manifests a shard job reads are sorted by ``image_id`` and written with one row group per
shard, so shard ``i`` is rows ``[i * shard_size, (i + 1) * shard_size)`` and is read alone.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from fairforge.manifest import read_rows


def shard_ids(n_items: int, shard_size: int) -> list[str]:
    n = max(1, math.ceil(n_items / shard_size))
    width = max(3, len(str(n - 1)))
    return [f"{i:0{width}d}" for i in range(n)]


def shard_slice(frame: pd.DataFrame, shard: str, shard_size: int) -> pd.DataFrame:
    """Rows of shard ``shard`` (sources are sorted by image_id, so shards are stable)."""
    start = int(shard) * shard_size
    return frame.iloc[start : start + shard_size]


def read_shard(
    path: str | Path, shard: str, shard_size: int, columns: list[str] | None = None
) -> pd.DataFrame:
    """Shard ``shard`` of a manifest written with ``row_group_size=shard_size``, read alone."""
    start = int(shard) * shard_size
    return read_rows(path, start, start + shard_size, columns).reset_index(drop=True)


def shard_image_ids(path: str | Path, shard: str, shard_size: int) -> list[str]:
    """The image ids of shard ``shard`` of the sources manifest at ``path``."""
    return read_shard(path, shard, shard_size, columns=["image_id"])["image_id"].tolist()
