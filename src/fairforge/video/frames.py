"""Frame sampling: videos become a frame-level sources table the image stages run on unchanged.

Each video gives ``n`` evenly spaced frames (default 32, first and last included), written
as PNGs ``{root}/frames/{video_id}/{video_id}_f{index:04d}.png``. The adapters below
return the usual listing (image_id, path, subject_id, attributes, ok, reason) with three more
columns, ``video_id``, ``frame_index`` and ``video_path`` (the file the frames came from,
relative to the root where it lies under it: video operations re-encode it); :func:`fairforge.sources.build_sources` then
forms groups, splits by subject (all frames of a subject, hence of a video, share a split)
and hashes every frame. A video that cannot be decoded stays as one row with
``image_id = video_id``, ``frame_index = -1``, ``ok=False`` and the reason.

Adapters:

- ``synthetic_video``: renders the synthetic world as talking clips into ``{root}/videos``
  (:func:`fairforge.video.clips.synthetic_videos`), then samples them.
- ``video``: a folder of videos with a labels csv (``path``, ``subject_id``, optional
  ``video_id``, every other column an attribute such as ``group``, ``race``, ``gender``).
  A csv of real and fake videos adds ``label`` and/or ``method`` (and optionally
  ``source_subject``, ``target_subject``), read as the ``csv`` adapter reads them
  (:func:`fairforge.sources.adapters.csv_label`); every frame carries its video's labels.
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
from fairforge.sources.adapters import CSV_LABEL_COLUMNS, csv_label, csv_methods
from fairforge.sources.base import (
    ADAPTERS,
    SourceError,
    configured_root,
    count_csv_rows,
    image_id_from_path,
    labelled_row,
    listing_row,
    require_columns,
)
from fairforge.sources.split import most_frames
from fairforge.sources.synthetic import DEFAULT_GENDERS, DEFAULT_TONES
from fairforge.sources.videos import DEFAULT_FRAMES_PER_VIDEO, VideoSource
from fairforge.video.clips import synthetic_videos
from fairforge.video.ffmpeg import DEFAULT_FPS, VideoError, read_sampled

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


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


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
        source = _relative(full, root)
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
                    f.image_id, _relative(Path(f.path), root), subject, rec["attributes"]
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


# ------------------------------------------------------------------------------- adapters

SYNTHETIC_VIDEO_DEFAULTS = {
    "subjects_per_group": 4,
    "clips_per_subject": 2,
    "seconds": 2.0,
    "fps": DEFAULT_FPS,
    "size": 256,
    "tones": DEFAULT_TONES,
    "genders": DEFAULT_GENDERS,
    "crf": 18,
    "frames_per_video": DEFAULT_FRAMES_PER_VIDEO,
}


@ADAPTERS.register("synthetic_video")
class SyntheticVideo(VideoSource):
    """Synthetic talking clips rendered into ``root/videos``, sampled into ``root/frames``
    (options over :data:`SYNTHETIC_VIDEO_DEFAULTS`, plus ``workers``)."""

    default_group_by = ("tone", "gender")
    synthetic = True

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        """Clips x min(frames_per_video, seconds x fps)."""
        o = {**SYNTHETIC_VIDEO_DEFAULTS, **(dataset_cfg.get("options") or {})}
        clips = (
            len(o["tones"])
            * len(o["genders"])
            * int(o["subjects_per_group"])
            * int(o["clips_per_subject"])
        )
        per_clip = max(1, int(round(float(o["seconds"]) * float(o["fps"]))))
        return clips * min(most_frames(o["frames_per_video"], DEFAULT_FRAMES_PER_VIDEO), per_clip)

    def list(
        self, root: Path, *, seed: int = 0, workers: int | None = None, **options
    ) -> pd.DataFrame:
        unknown = sorted(set(options) - set(SYNTHETIC_VIDEO_DEFAULTS))
        if unknown:
            raise SourceError(
                f"unknown synthetic_video option(s) {unknown}; valid: "
                f"{sorted([*SYNTHETIC_VIDEO_DEFAULTS, 'workers'])}"
            )
        o = {**SYNTHETIC_VIDEO_DEFAULTS, **options}
        root = Path(root)
        videos = synthetic_videos(
            root / "videos",
            subjects_per_group=o["subjects_per_group"],
            clips_per_subject=o["clips_per_subject"],
            seed=seed,
            seconds=o["seconds"],
            fps=o["fps"],
            size=o["size"],
            tones=o["tones"],
            genders=o["genders"],
            crf=o["crf"],
        )
        table = pd.DataFrame(
            {
                "video_id": videos["video_id"],
                "path": ("videos/" + videos["path"]).to_numpy(object),
                "subject_id": videos["subject_id"],
                "attributes": [
                    {"tone": t, "gender": g} for t, g in zip(videos["tone"], videos["gender"])
                ],
            }
        )
        return frame_listing(table, root, n_frames=o["frames_per_video"], workers=workers)


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
        rel = _relative(full, base)
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
            label, method, bad = csv_label(rec.get("label", ""), rec.get("method", ""))
            if bad and row["ok"]:
                row.update(ok=False, reason=bad)
            row = labelled_row(
                row,
                label,
                method,
                rec.get("source_subject", "").strip(),
                rec.get("target_subject", "").strip(),
            )
        rows.append(row)
    if not rows:
        raise SourceError(f"no videos listed in {labels}")
    columns = ["video_id", "path", "subject_id", "attributes", "ok", "reason"]
    return pd.DataFrame(rows, columns=columns + (list(LABEL_COLUMNS) if labelled else []))


def with_video_labels(listing: pd.DataFrame, videos: pd.DataFrame) -> pd.DataFrame:
    """Frame rows of ``listing`` with their video's :data:`~fairforge.columns.LABEL_COLUMNS`
    (``listing`` unchanged when ``videos`` has none)."""
    if "label" not in videos.columns:
        return listing
    labels = videos.set_index("video_id")[list(LABEL_COLUMNS)]
    out = listing.join(labels, on="video_id")
    out["label"] = out["label"].astype("int64")
    return out


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
        listing = frame_listing(table, root, n_frames=frames_per_video, workers=workers)
        return with_video_labels(listing, table)

    def imported_methods(self, name: str, dataset_cfg: Mapping) -> list[str] | None:
        options = self.listing_options(name, dataset_cfg)
        csv = labels_path(options["videos"], options.get("labels", DEFAULT_VIDEO_LABELS))
        return csv_methods(csv) if csv.is_file() else None


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
