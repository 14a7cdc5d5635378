"""The synthetic world as talking clips (``synthetic_video``): rendered into
``{root}/videos`` (:func:`fairforge.video.clips.synthetic_videos`), then sampled into frames
(:func:`fairforge.video.frames.frame_listing`). It renders and decodes videos itself, so it
lives beside ffmpeg; the adapters of datasets on disk are in :mod:`fairforge.sources`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from fairforge.sources.base import ADAPTERS, SourceError
from fairforge.sources.split import most_frames
from fairforge.sources.synthetic import DEFAULT_GENDERS, DEFAULT_TONES
from fairforge.sources.videos import DEFAULT_FRAMES_PER_VIDEO, VideoSource
from fairforge.video.clips import synthetic_videos
from fairforge.video.ffmpeg import DEFAULT_FPS
from fairforge.video.frames import frame_listing

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
