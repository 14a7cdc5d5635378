"""Shard plans and shard reads: a stage's per-image work split into jobs of ``shard_size``
source images each.

Manifests a shard job reads are sorted by ``image_id`` and written with one row group per
shard, so shard ``i`` is rows ``[i * shard_size, (i + 1) * shard_size)`` and is read alone.

Prediction shards keep videos whole (:func:`prediction_shard_ids`): a video's frames are all
scored in one job, so a video detector gives every video exactly one score.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fairforge.manifest import columns_in, read_rows, read_table


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


def video_shards(video_ids, shard_size: int) -> np.ndarray:
    """The shard of each row of a manifest sorted by ``image_id`` when videos stay whole:
    every frame of a video goes to the shard of the video's first row, and a row without a
    video (``None``, NaN or ``""``: an image) is a unit of its own, so a manifest without
    videos is cut exactly as :func:`shard_slice` cuts it. A shard then holds up to one
    video's frames more than ``shard_size``, and a shard whose rows all belong to a video
    begun before it is empty."""
    videos = pd.Series(video_ids, dtype=object)
    codes, _ = pd.factorize(videos.where(videos != "", None), sort=False)
    return _whole_video_shards(codes, shard_size)


def _whole_video_shards(codes: np.ndarray, shard_size: int) -> np.ndarray:
    """:func:`video_shards` of rows coded by video (-1: no video)."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1, got {shard_size}")
    codes = np.asarray(codes, dtype=np.int64)
    first = np.arange(len(codes))
    has_video = codes >= 0
    if has_video.any():
        starts = np.full(codes.max() + 1, len(codes))
        np.minimum.at(starts, codes[has_video], first[has_video])
        first[has_video] = starts[codes[has_video]]
    return first // shard_size


def prediction_shard_ids(path: str | Path, shard: str, shard_size: int) -> list[str]:
    """The image ids of prediction shard ``shard`` of the sources manifest at ``path``,
    videos kept whole (:func:`video_shards`). A manifest without ``video_id`` is read as
    :func:`shard_image_ids` reads it (its shard alone); one with videos reads two columns,
    ``image_id`` and ``video_id``, of every row (as arrow arrays: ``benchmarks/
    bench_video_shards.py``), whose order alone places the videos."""
    if not columns_in(path, ["video_id"]):
        return shard_image_ids(path, shard, shard_size)
    table = read_table(path, ["image_id", "video_id"])
    videos = pc.dictionary_encode(table["video_id"].combine_chunks())
    no_video = pc.equal(videos.dictionary, "").to_numpy(zero_copy_only=False)
    codes = pc.fill_null(videos.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    if no_video.any():
        codes[np.isin(codes, np.flatnonzero(no_video))] = -1
    keep = _whole_video_shards(codes, shard_size) == int(shard)
    return table["image_id"].filter(pa.array(keep)).to_pylist()
