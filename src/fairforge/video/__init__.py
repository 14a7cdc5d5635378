"""Videos: ffmpeg I/O, video operations, synthetic talking clips, frame sampling, clip pairing
and video variants at inference (docs/perturbations.md sections 3-4).

- :mod:`.ffmpeg`: ``write_video``, ``read_video``, ``probe_video`` with imageio-ffmpeg's
  binary driven by ffmpeg-python; ``VideoError`` is a per-video failure reason.
- :mod:`.ops`: ``apply_video_op`` runs a video variant (``vid_h264@40``, ``vid_hflip@1``, ...;
  the operations are registered in :mod:`fairforge.perturb.video_ops`) on a file.
- :mod:`.clips`: ``synthetic_videos``, the synthetic world as talking H.264 clips.
- :mod:`.frames`: evenly spaced frames as a frame-level sources listing, and the frame
  sampler of the video adapters of :mod:`fairforge.sources` (registered on import).
- :mod:`.synthetic_video`: the ``synthetic_video`` adapter, the synthetic world as talking
  clips (registered on import).
- :mod:`.pairs`: ``video_pairs``, one target clip per source clip.
- :mod:`.variants`: ``video_variant_samples`` and ``predict_samples_path`` for inference.
- :mod:`.compressed`: ``compressed_copies``, the training crops of a dataset with
  ``train_compression`` (JPEG or H.264 copies).
- :mod:`.frame_variants`: ``frame_variant_samples``: frame-mode variants (``jpeg@30~frame``;
  a variant's shared settings in ``FrameVariantSettings``)
  degrade the whole frame and rerun face detection; video operations on a dataset of videos
  encode the original video (``degrade_source_video``); ``detection_under_perturbation``.
"""

# Importing these registers the synthetic_video adapter and the frame sampler that the video
# adapters of fairforge.sources list their frames with.
from fairforge.video import frames, synthetic_video  # noqa: F401
from fairforge.video.clips import render_clip, synthetic_videos
from fairforge.video.compressed import CompressionError, compressed_copies
from fairforge.video.ffmpeg import (
    FFmpegNotFound,
    VideoError,
    VideoInfo,
    evenly_spaced,
    ffmpeg_exe,
    probe_video,
    read_sampled,
    read_video,
    write_video,
)
from fairforge.video.frame_variants import (
    FrameVariantSettings,
    degrade_source_video,
    detection_under_perturbation,
    frame_sources,
    frame_variant_samples,
    has_source_videos,
    paste_back,
    source_video_frames,
    video_variant_rows,
)
from fairforge.video.frames import (
    extract_frames,
    frame_image_id,
    frame_listing,
    planned_frame_count,
    with_video_columns,
)
from fairforge.video.ops import (
    VIDEO_SUITE,
    apply_video_op,
    cached_video_op,
    is_video_variant,
    video_op_for,
    video_variant_pattern,
)
from fairforge.video.pairs import has_videos, video_pairs
from fairforge.video.variants import (
    clip_keys,
    degrade_clip,
    degraded_clip_file,
    loading_variant,
    predict_samples_path,
    shard_clip_samples,
    video_variant_samples,
)

__all__ = [
    "CompressionError",
    "FFmpegNotFound",
    "FrameVariantSettings",
    "VIDEO_SUITE",
    "VideoError",
    "VideoInfo",
    "apply_video_op",
    "cached_video_op",
    "clip_keys",
    "compressed_copies",
    "degrade_clip",
    "degrade_source_video",
    "degraded_clip_file",
    "detection_under_perturbation",
    "evenly_spaced",
    "extract_frames",
    "ffmpeg_exe",
    "frame_image_id",
    "frame_listing",
    "frame_sources",
    "frame_variant_samples",
    "has_source_videos",
    "has_videos",
    "is_video_variant",
    "loading_variant",
    "paste_back",
    "planned_frame_count",
    "predict_samples_path",
    "probe_video",
    "read_sampled",
    "read_video",
    "render_clip",
    "shard_clip_samples",
    "source_video_frames",
    "synthetic_videos",
    "video_op_for",
    "video_pairs",
    "video_variant_pattern",
    "video_variant_rows",
    "video_variant_samples",
    "with_video_columns",
    "write_video",
]
