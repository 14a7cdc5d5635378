"""Frame sampling: videos become a frame-level sources table the image stages run on unchanged.

Each video gives ``n`` evenly spaced frames (default 32, first and last included), written
as PNGs ``{root}/frames/{video_id}/{video_id}_f{index:04d}.png``. :func:`frame_listing`
returns the usual listing (image_id, path, subject_id, attributes, ok, reason) with three
more columns, ``video_id``, ``frame_index`` and ``video_path`` (the file the frames came
from, relative to the root where it lies under it: video operations re-encode it);
:func:`fairforge.sources.build_sources` then forms groups, splits by subject (all frames of a
subject, hence of a video, share a split) and hashes every frame. A video that cannot be
decoded stays as one row with ``image_id = video_id``, ``frame_index = -1``, ``ok=False`` and
the reason.

The video adapters of :mod:`fairforge.sources` read layouts and labels only; their frames are
sampled by :func:`labelled_video_listing`, which this module registers on
:data:`~fairforge.sources.videos.FRAME_SAMPLERS` when imported (with the frames of a folder
of frames, or a single image, kept where they are).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.columns import LABEL_COLUMNS, VIDEO_LISTING_COLUMNS
from fairforge.images import write_image
from fairforge.sources.base import (
    ADAPTERS,
    SourceError,
    is_image_file,
    listing_row,
    relative_or_absolute,
    require_columns,
)
from fairforge.sources.split import even_positions
from fairforge.sources.videos import (
    DEFAULT_FRAMES_PER_VIDEO,
    FRAME_SAMPLER,
    FRAME_SAMPLERS,
    frame_files,
)
from fairforge.video.ffmpeg import VideoError, read_sampled

FRAMES_SUBDIR = "frames"
_FRAME_ID = re.compile(r"^(?P<video>.+)_f(?P<index>\d{4,})$")


def frame_image_id(video_id: str, index: int) -> str:
    return f"{video_id}_f{int(index):04d}"


def extract_frames(
    video_path: str | Path, out_dir: str | Path, video_id: str, n: int = DEFAULT_FRAMES_PER_VIDEO
) -> pd.DataFrame:
    """Write ``n`` evenly spaced frames of a video as PNGs into ``out_dir/{video_id}/``.

    Returns image_id, video_id, frame_index and path (absolute); raises
    :class:`~fairforge.video.ffmpeg.VideoError` when the video cannot be decoded.
    """
    indices, frames, _ = read_sampled(video_path, n)
    folder = Path(out_dir) / video_id
    rows = []
    for index, frame in zip(indices.tolist(), frames):
        image_id = frame_image_id(video_id, index)
        path = folder / f"{image_id}.png"
        write_image(path, frame)
        rows.append(
            {
                "image_id": image_id,
                "video_id": video_id,
                "frame_index": int(index),
                "path": str(path),
            }
        )
    return pd.DataFrame(rows, columns=["image_id", "video_id", "frame_index", "path"])


def frame_listing(
    videos: pd.DataFrame,
    root: str | Path,
    *,
    n_frames: int = DEFAULT_FRAMES_PER_VIDEO,
    workers: int | None = None,
) -> pd.DataFrame:
    """The frame-level listing of ``videos`` (video_id, path, subject_id, attributes[, ok,
    reason]); video paths are absolute or relative to ``root``, frames go under
    ``root/frames`` and their paths are relative to ``root``. Sorted by image_id.
    """
    root = Path(root)
    require_columns(videos, ("video_id", "path", "subject_id", "attributes"), "video table")
    dupes = videos["video_id"][videos["video_id"].duplicated()].unique().tolist()
    if dupes:
        raise SourceError(f"duplicate video ids {dupes[:5]}")
    records = videos.to_dict("records")

    def one(rec: dict) -> list[dict]:
        video_path = Path(rec["path"])
        full = video_path if video_path.is_absolute() else root / video_path
        video_id, subject = str(rec["video_id"]), str(rec["subject_id"])
        source = relative_or_absolute(full, root)
        failed = None
        if not rec.get("ok", True):
            failed = str(rec.get("reason", "")) or "unusable video"
        else:
            try:
                frames = extract_frames(full, root / FRAMES_SUBDIR, video_id, n_frames)
            except VideoError as err:
                failed = f"video: {err}"
        if failed is not None:
            row = listing_row(video_id, source, subject, rec["attributes"], ok=False, reason=failed)
            return [{**row, "video_id": video_id, "frame_index": -1, "video_path": source}]
        return [
            {
                **listing_row(
                    f.image_id, relative_or_absolute(Path(f.path), root), subject, rec["attributes"]
                ),
                "video_id": video_id,
                "frame_index": int(f.frame_index),
                "video_path": source,
            }
            for f in frames.itertuples(index=False)
        ]

    n_workers = workers or min(4, os.cpu_count() or 1)
    if n_workers > 1 and len(records) > 1:
        # Decoding runs in ffmpeg subprocesses and PNG encoding releases the GIL.
        with ThreadPoolExecutor(n_workers) as pool:
            parts = list(pool.map(one, records))
    else:
        parts = [one(r) for r in records]
    listing = pd.DataFrame(
        [row for part in parts for row in part], columns=list(VIDEO_LISTING_COLUMNS)
    )
    listing["frame_index"] = listing["frame_index"].astype(np.int64)
    return listing.sort_values("image_id", kind="mergesort").reset_index(drop=True)


def with_video_columns(sources: pd.DataFrame) -> pd.DataFrame:
    """``sources`` with ``video_id`` and ``frame_index``, recovered from the frame image ids
    (``{video_id}_f{index:04d}``; a failed video's row is ``{video_id}``, index -1) when a
    sources manifest was built without them. Only for tables of video frames."""
    if {"video_id", "frame_index"} <= set(sources.columns):
        return sources
    parsed = sources["image_id"].astype(str).str.extract(_FRAME_ID)
    out = sources.copy()
    out["video_id"] = parsed["video"].fillna(out["image_id"].astype(str)).astype(object)
    out["frame_index"] = pd.to_numeric(parsed["index"]).fillna(-1).astype(np.int64)
    return out


def with_video_labels(listing: pd.DataFrame, videos: pd.DataFrame) -> pd.DataFrame:
    """Frame rows of ``listing`` with their video's :data:`~fairforge.columns.LABEL_COLUMNS`
    (``listing`` unchanged when ``videos`` has none)."""
    if "label" not in videos.columns:
        return listing
    labels = videos.set_index("video_id")[list(LABEL_COLUMNS)]
    out = listing.join(labels, on="video_id")
    out["label"] = out["label"].astype("int64")
    return out


def labelled_video_listing(
    videos: pd.DataFrame,
    root: Path,
    frames_per_video: int,
    workers: int | None = None,
    *,
    in_place: bool = True,
) -> pd.DataFrame:
    """Frame rows of ``videos`` (video_id, path, subject_id, attributes, ok, reason, and the
    label columns where it has them): files are decoded into ``root/frames``, frame folders
    sampled in place, a single image is a one-frame video kept in place; label columns
    follow each frame. ``in_place=False`` decodes every path with ffmpeg (the ``video``
    adapter's contract: its csv lists videos)."""
    kept = [in_place and (Path(p).is_dir() or is_image_file(Path(p))) for p in videos["path"]]
    parts = []
    files = videos.loc[[not k for k in kept]]
    if len(files):
        parts.append(frame_listing(files, root, n_frames=frames_per_video, workers=workers))
    rows = []
    for rec in videos.loc[kept].to_dict("records"):
        path = Path(rec["path"])
        frames = frame_files(path) if path.is_dir() else [path]
        video_id, subject = rec["video_id"], rec["subject_id"]
        if not frames or not rec["ok"]:
            reason = rec["reason"] or f"no frames in {rec['path']}"
            row = listing_row(video_id, rec["path"], subject, rec["attributes"], False, reason)
            rows.append({**row, "video_id": video_id, "frame_index": -1, "video_path": rec["path"]})
            continue
        for i in even_positions(len(frames), frames_per_video):
            row = listing_row(
                frame_image_id(video_id, i), frames[i].as_posix(), subject, rec["attributes"]
            )
            # the folder is the video: its frames in order, frame_index counting them
            rows.append({**row, "video_id": video_id, "frame_index": i, "video_path": rec["path"]})
    if rows:
        parts.append(pd.DataFrame(rows, columns=list(VIDEO_LISTING_COLUMNS)))
    listing = pd.concat(parts, ignore_index=True) if parts else None
    if listing is None or listing.empty:
        raise SourceError(f"no videos or frame folders found for {root}")
    listing = with_video_labels(listing, videos)
    listing["frame_index"] = listing["frame_index"].astype("int64")
    return listing.sort_values("image_id", kind="mergesort").reset_index(drop=True)


# The video adapters of fairforge.sources sample their frames with it.
FRAME_SAMPLERS.register(FRAME_SAMPLER, labelled_video_listing)


def planned_frame_count(
    adapter: str, options: Mapping, labels_csv: str | Path | None = None
) -> int:
    """An upper bound on the frame rows a video adapter will list, without decoding: its
    :meth:`~fairforge.sources.base.SourceAdapter.count_items` for a dataset with these
    ``options`` (``labels_csv``: the labels of a ``video`` dataset)."""
    dataset_cfg = {"adapter": adapter, "options": dict(options)}
    if labels_csv is not None:
        dataset_cfg["root"] = str(Path(labels_csv).parent)
        dataset_cfg["options"].update(
            videos=str(Path(labels_csv).parent), labels=Path(labels_csv).name
        )
    return ADAPTERS.create(adapter).count_items(adapter, dataset_cfg)
