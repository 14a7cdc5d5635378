"""Videos listed in a labels csv (``video``): the generic adapter of a folder of videos.

A labels csv (``options.labels``, default ``labels.csv`` in the folder of the videos) with
``path, subject_id`` (optional ``video_id``) and attribute columns such as ``group``,
``race``, ``gender``. A csv of real and fake videos adds ``label`` and/or ``method`` (and
optionally ``source_subject``, ``target_subject``), read as the ``csv`` adapter reads them
(:func:`fairforge.sources.base.csv_label`); every frame carries its video's labels. Every
listed path is decoded with ffmpeg by the frame sampler of :mod:`fairforge.video` (a folder
of frames is not a video here: it fails with the reason; an image is decoded as one frame),
and one that cannot be decoded stays as one row with ``ok=False``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from fairforge.columns import LABEL_COLUMNS
from fairforge.sources.base import (
    ADAPTERS,
    CSV_LABEL_COLUMNS,
    SourceError,
    configured_root,
    count_csv_rows,
    csv_methods,
    image_id_from_path,
    relative_or_absolute,
    require_columns,
    with_csv_labels,
)
from fairforge.sources.split import most_frames
from fairforge.sources.videos import DEFAULT_FRAMES_PER_VIDEO, VideoSource, frame_sampler

VIDEO_LABEL_COLUMNS = ("path", "subject_id")


def video_table(labels: str | Path, videos: str | Path | None = None) -> pd.DataFrame:
    """Read a labels csv into video_id, path (absolute), subject_id, attributes, ok, reason
    (+ :data:`~fairforge.columns.LABEL_COLUMNS` when the csv has ``label`` or ``method``).

    Relative video paths start at ``videos`` (default: the csv's folder). ``video_id``
    defaults to the relative path without its suffix, made file-name safe. A row whose label
    and method disagree is kept with ``ok=False`` and the reason.
    """
    labels = Path(labels)
    if not labels.is_file():
        raise SourceError(f"video labels csv not found: {labels}")
    base = Path(videos) if videos is not None else labels.parent
    frame = pd.read_csv(labels, dtype=str, keep_default_na=False)
    require_columns(frame, VIDEO_LABEL_COLUMNS, f"video labels {labels}")
    labelled = bool({"label", "method"} & set(frame.columns))
    attribute_cols = [
        c for c in frame.columns if c not in ("path", "subject_id", "video_id") + CSV_LABEL_COLUMNS
    ]
    rows = []
    for rec in frame.to_dict("records"):
        raw = Path(rec["path"].strip())
        full = raw if raw.is_absolute() else base / raw
        rel = relative_or_absolute(full, base)
        video_id = (rec.get("video_id") or "").strip() or image_id_from_path(
            Path(rel).with_suffix("")
        )
        empty = [c for c in VIDEO_LABEL_COLUMNS if not rec[c].strip()]
        row = {
            "video_id": video_id,
            "path": str(full),
            "subject_id": rec["subject_id"].strip() or video_id,
            "attributes": {c: rec[c] for c in attribute_cols},
            "ok": not empty,
            "reason": f"empty value(s) in {empty}" if empty else "",
        }
        if labelled:
            row = with_csv_labels(row, rec)
        rows.append(row)
    if not rows:
        raise SourceError(f"no videos listed in {labels}")
    columns = ["video_id", "path", "subject_id", "attributes", "ok", "reason"]
    return pd.DataFrame(rows, columns=columns + (list(LABEL_COLUMNS) if labelled else []))


DEFAULT_VIDEO_LABELS = "labels.csv"


def labels_path(video_dir: str | Path, labels: str | Path = DEFAULT_VIDEO_LABELS) -> Path:
    """The labels csv of a folder of videos: ``labels`` itself when absolute."""
    return Path(labels) if Path(labels).is_absolute() else Path(video_dir) / labels


@ADAPTERS.register("video")
class LabelledVideos(VideoSource):
    """Videos listed in a labels csv, sampled into ``root/frames``; a csv with ``label`` or
    ``method`` lists real and fake videos (module docstring).

    ``videos`` is the folder of the videos and of the csv (default: ``root`` itself; the
    workflow passes the config's ``root``, since ``root`` is then where frames go); a
    relative ``labels`` is looked up there. Frame paths are relative to ``root``.
    """

    def listing_options(self, name: str, dataset_cfg: Mapping) -> dict:
        options = super().listing_options(name, dataset_cfg)
        if "videos" not in options:
            options["videos"] = str(configured_root(name, dataset_cfg))
        return options

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        """Rows of the labels csv x frames_per_video."""
        options = self.listing_options(name, dataset_cfg)
        csv = labels_path(options["videos"], options.get("labels", DEFAULT_VIDEO_LABELS))
        if not csv.is_file():
            raise SourceError(f"video labels csv not found: {csv}")
        n = most_frames(options.get("frames_per_video"), DEFAULT_FRAMES_PER_VIDEO)
        return count_csv_rows(csv) * n

    def list(
        self,
        root: Path,
        *,
        seed: int = 0,
        labels: str = DEFAULT_VIDEO_LABELS,
        videos: str | Path | None = None,
        frames_per_video: int = DEFAULT_FRAMES_PER_VIDEO,
        workers: int | None = None,
    ) -> pd.DataFrame:
        root = Path(root)
        video_dir = Path(videos) if videos is not None else root
        table = video_table(labels_path(video_dir, labels), video_dir)
        return frame_sampler()(table, root, frames_per_video, workers, in_place=False)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        options = self.listing_options(name, dataset_cfg)
        csv = labels_path(options["videos"], options.get("labels", DEFAULT_VIDEO_LABELS))
        return csv_methods(csv) if csv.is_file() else None
