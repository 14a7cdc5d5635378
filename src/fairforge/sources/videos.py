"""What the adapters of labelled video datasets share, below the frame sampler.

An adapter of a video dataset in its released layout says which videos there are and what
they show (:meth:`LabelledVideoDataset.videos`: one row per video, file or folder of frames,
with its subject, attributes, label, method and the identities a fake was made from) and,
where the dataset has one, its own split. Nothing here decodes a video: the frames are
sampled by :mod:`fairforge.video`, which registers its sampler on :data:`FRAME_SAMPLERS`
when it is imported (the workflow and the config check import it), as the adapters
register on :data:`~fairforge.sources.base.ADAPTERS`. So a dataset's layout is one readable
file in this package, and planning (:meth:`~LabelledVideoDataset.count_items`) opens no
video.

A video is a file (:data:`VIDEO_SUFFIXES`), a folder of its frames (kept where they are;
also VidTIMIT's numbered JPEG files without a suffix), or a single image (a one-frame video,
as ForgeryNet's image track is listed next to its videos).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pandas as pd

from fairforge.registry import Registry, UnknownName
from fairforge.sources.base import (
    REAL_METHOD,
    SourceAdapter,
    SourceError,
    configured_root,
    is_image_file,
    labelled_row,
)
from fairforge.sources.split import most_frames

VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm")
UNANNOTATED = {"group": "all"}
DEFAULT_FRAMES_PER_VIDEO = 32
# Sampled frames are written under the workflow's results, next to the other stages.
VIDEO_SOURCE_SUBDIR = "video_source"

# The function that turns a table of videos into frame rows: ``sampler(videos, root,
# frames_per_video, workers, *, in_place=True)`` (fairforge.video.frames
# .labelled_video_listing; in_place=False decodes folders and images with ffmpeg too).
FRAME_SAMPLERS: Registry = Registry("frame sampler")
FRAME_SAMPLER = "ffmpeg"


class VideoSource(SourceAdapter):
    """What the video adapters share: they write frames into the root they are given."""

    writes_images = True

    def resolve_root(self, name: str, dataset_cfg: Mapping, results_dir: str | Path) -> Path:
        return Path(results_dir) / name / VIDEO_SOURCE_SUBDIR


def read_attributes(path: str | Path | None, base: Path) -> dict[str, dict]:
    """Video id -> attributes from a csv with an ``id`` column (relative to ``base``)."""
    if not path:
        return {}
    csv = Path(path) if Path(path).is_absolute() else base / path
    if not csv.is_file():
        raise SourceError(f"attributes csv not found: {csv}")
    table = pd.read_csv(csv, dtype=str, keep_default_na=False)
    if "id" not in table.columns:
        raise SourceError(
            f"attributes csv {csv} lacks an 'id' column; it has {list(table.columns)}"
        )
    return {
        rec.pop("id").strip(): {k: v.strip() for k, v in rec.items()}
        for rec in table.to_dict("records")
    }


def find_items(folder: Path) -> dict[str, Path]:
    """Name -> video file or frame folder in ``folder`` (a frame folder wins over a video of
    the same name, since its frames are what the user extracted)."""
    items: dict[str, Path] = {}
    if not folder.is_dir():
        return items
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES:
            items.setdefault(p.stem, p)
        elif p.is_dir():
            items[p.name] = p
    return items


# VidTIMIT stores each recording as JPEG files named 001, 002, ... without a suffix.
_NUMBERED_FRAME = re.compile(r"^\d+$")


def frame_files(folder: Path) -> list[Path]:
    """The frames of a folder, in order: its image files, else its numbered files without a
    suffix (VidTIMIT's); decoding reads the content, not the name."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    images = [p for p in files if is_image_file(p)]
    return images or [p for p in files if _NUMBERED_FRAME.match(p.name)]


def video_row(
    video_id: str,
    path: Path | None,
    subject: str,
    attributes: Mapping,
    label: int,
    method: str = REAL_METHOD,
    source: str = "",
    target: str = "",
    reason: str = "",
) -> dict:
    row = {
        "video_id": video_id,
        "path": str(path) if path is not None else "",
        "subject_id": subject,
        "attributes": dict(attributes),
        "ok": path is not None and not reason,
        "reason": reason or ("" if path is not None else "video not found"),
    }
    return labelled_row(row, label, method, source, target)


def attributes_for(annotations: Mapping[str, dict], own: str, *fallbacks: str) -> dict:
    """The attributes of video ``own``: its row of the attributes csv, else the first of
    ``fallbacks`` (its target, ...) that has one; ``{group: all}`` without a csv."""
    if not annotations:
        return dict(UNANNOTATED)
    return dict(next((annotations[k] for k in (own, *fallbacks) if k in annotations), {}))


def frame_sampler():
    """The registered frame sampler; a clear error where :mod:`fairforge.video` is not
    imported."""
    try:
        return FRAME_SAMPLERS.get(FRAME_SAMPLER)
    except UnknownName:
        raise SourceError(
            "video frames are sampled by fairforge.video, which registers its sampler when "
            "imported: import fairforge.video before listing a video dataset"
        ) from None


class LabelledVideoDataset(VideoSource):
    """What the labelled video datasets share: the dataset folder is ``options.folder``
    (default: the config's ``root``), frames are written under the workflow's results.
    A subclass lists the videos (:meth:`videos`) and, where the dataset has one, its split."""

    default_group_by: ClassVar[tuple[str, ...]] = ("group",)

    def listing_options(self, name: str, dataset_cfg: Mapping) -> dict:
        options = dict(dataset_cfg.get("options") or {})
        options.setdefault("folder", str(configured_root(name, dataset_cfg)))
        return options

    def videos(self, dataset: Path, **options) -> pd.DataFrame:
        """One row per video (:func:`video_row`) of the dataset folder ``dataset``."""
        raise NotImplementedError

    def count_items(self, name: str, dataset_cfg: Mapping) -> int:
        options = self.listing_options(name, dataset_cfg)
        n = most_frames(options.pop("frames_per_video", None), DEFAULT_FRAMES_PER_VIDEO)
        options.pop("workers", None)
        return len(self.videos(Path(options.pop("folder")), **options)) * n

    def list(
        self,
        root: Path,
        *,
        seed: int = 0,
        folder: str | Path | None = None,
        frames_per_video: int = DEFAULT_FRAMES_PER_VIDEO,
        workers: int | None = None,
        **options,
    ) -> pd.DataFrame:
        videos = self.videos(Path(folder) if folder is not None else Path(root), **options)
        return frame_sampler()(videos, Path(root), int(frames_per_video), workers)
