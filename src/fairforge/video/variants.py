"""Video variants at inference: clips of face crops, degraded by ffmpeg, decoded back to crops.

For a video variant (``vid_h264@40``, ``df_video_compression@35``, ...) the samples of each
clip, one (video_id, method) group ordered by frame_index, are assembled into a lossless
FFV1 clip at 25 fps, so that the operation is the only degradation; the operation runs on
that clip, and the output is decoded back frame by frame, frame k to the k-th sample. The
decoded crops are written as PNGs and listed in a samples manifest with the same sample_ids
and new paths; prediction then reads that manifest as if the variant were ``clean``.

Samples without a video_id (an image dataset) become one-frame clips, so video operations
can also be measured on still images. Clean and degraded clips are cached by content
(:func:`fairforge.video.ops.cached_video_op`), so reruns and other detectors reuse them.
A clip that fails keeps its rows with ``ok=False``, an empty path and the reason.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.images import ImageError, read_image, write_image
from fairforge.manifest import columns_in, read_ids
from fairforge.paths import RESULTS, result_path
from fairforge.perturb.variants import CLEAN, is_frame_variant, is_video_variant
from fairforge.video.ffmpeg import DEFAULT_FPS, LOSSLESS_SUFFIX, VideoError, read_video, write_video
from fairforge.video.ops import cached_video_op, video_op_for

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def predict_samples_path(dataset: str, variant: str, results: str = RESULTS) -> str:
    """The samples manifest that prediction under ``variant`` reads.

    Video variants read their own decoded crops (``video_variants/{variant}/samples.parquet``,
    to be scored as ``clean``), frame variants the crops aligned again on their degraded
    frames (``frame_variants/{variant}/samples.parquet``); every other variant reads the
    dataset's samples.
    """
    if is_video_variant(variant):
        return result_path("video_variant_samples", results, dataset=dataset, variant=variant)
    if is_frame_variant(variant):
        return result_path("frame_variant_samples", results, dataset=dataset, variant=variant)
    return result_path("samples", results, dataset=dataset)


def loading_variant(variant: str) -> str:
    """The variant a data loader applies: ``clean`` for video and frame variants (already
    applied, to the clip or to the frame before detection)."""
    return CLEAN if is_video_variant(variant) or is_frame_variant(variant) else variant


def clip_keys(samples: pd.DataFrame) -> pd.Series:
    """The clip of every sample: ``{video_id}__{method}``, or ``{sample_id}`` alone."""
    single = samples["sample_id"].astype(str)
    if "video_id" not in samples.columns:
        return single
    vid = samples["video_id"]
    keyed = vid.astype(str) + "__" + samples["method"].astype(str)
    return keyed.where(vid.notna() & (vid.astype(str) != ""), single)


def shard_clip_samples(samples_path: str | Path, image_ids: Sequence[str]) -> pd.DataFrame:
    """The samples of the clips that start in one shard (``image_ids``: its source frames),
    all their frames included: a clip is encoded whole, by the job of its first frame, so a
    clip that crosses a shard boundary is neither cut nor done twice. Samples without a
    ``video_id`` are single images and stay with their own shard."""

    rows = read_ids(samples_path, image_ids, contract="samples")
    if not columns_in(samples_path, ["video_id"]) or rows.empty:
        return rows
    in_video = rows["video_id"].notna() & (rows["video_id"].astype(str) != "")
    videos = rows.loc[in_video, "video_id"].unique().tolist()
    clips = pd.concat([rows[~in_video], read_ids(samples_path, videos, id_column="video_id")])
    first = clips.groupby(clip_keys(clips))["image_id"].transform("min")
    kept = clips[first.isin(set(map(str, image_ids)))]
    return kept.sort_values("sample_id", kind="stable").reset_index(drop=True)


def _clip_order(part: pd.DataFrame) -> pd.DataFrame:
    if "frame_index" in part.columns and part["frame_index"].notna().all():
        return part.sort_values(["frame_index", "sample_id"], kind="stable")
    return part.sort_values("sample_id", kind="stable")


def frames_digest(frames: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(frames.shape).encode())
    h.update(frames.tobytes())
    return h.hexdigest()


def degraded_clip_file(
    frames: np.ndarray, variant: str, cache_dir: str | Path, *, fps: float = DEFAULT_FPS
) -> Path:
    """The file of frames (T, H, W, 3) through a video variant: the clean clip is written
    as lossless FFV1 at ``fps``, then the operation encodes it; both are cached under
    ``cache_dir`` by content (the frames, their rate, the operation)."""
    video_op_for(variant)
    cache_dir = Path(cache_dir)
    name = frames_digest(frames) if fps == DEFAULT_FPS else f"{frames_digest(frames)}_{fps:g}"
    clean = cache_dir / "clean" / f"{name}{LOSSLESS_SUFFIX}"
    if not clean.is_file():
        write_video(clean, frames, fps=fps, codec="lossless")
    return cached_video_op(clean, cache_dir, variant)


def degrade_clip(
    frames: np.ndarray, variant: str, cache_dir: str | Path, *, fps: float = DEFAULT_FPS
) -> np.ndarray:
    """Frames (T, H, W, 3) through a video variant and back, frame for frame.

    The clean clip is lossless FFV1; both clips are cached under ``cache_dir`` by content.
    Geometry-keeping ops return frames of the input size (H.264 padding removed); scaling
    ops return their own size. Raises VideoError when the frame count changes.
    """
    op = video_op_for(variant)
    decoded = read_video(degraded_clip_file(frames, variant, cache_dir, fps=fps))
    if len(decoded) != len(frames):
        raise VideoError(f"{variant} turned {len(frames)} frames into {len(decoded)}")
    if op.keeps_size:
        decoded = decoded[:, : frames.shape[1], : frames.shape[2]]
    return np.ascontiguousarray(decoded)


def _assemble(paths: Sequence[Path]) -> np.ndarray:
    images = [read_image(p) for p in paths]
    shapes = {im.shape for im in images}
    if len(shapes) != 1:
        raise ImageError(f"crops of one clip differ in size: {sorted(shapes)}")
    return np.stack(images)


def video_variant_samples(
    samples: pd.DataFrame,
    variant: str,
    *,
    results_root: str | Path,
    out_dir: str | Path,
    cache_dir: str | Path | None = None,
    fps: float = DEFAULT_FPS,
    splits: Sequence[str] | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """The samples manifest of ``variant``: every sample's crop, degraded within its clip.

    ``samples`` paths are relative to ``results_root``; decoded crops are written to
    ``out_dir/{clip}/{sample_id}.png`` (``out_dir`` inside ``results_root``) and the returned
    manifest (same columns, same sample_ids, plus ``ok`` and ``reason``) holds their paths
    relative to ``results_root``. ``splits`` keeps only those splits (prediction scores
    val/test). ``cache_dir`` holds the clean and degraded clips (a temporary folder when
    None). Clips run in ``workers`` threads (ffmpeg runs in its own processes).
    """
    if not is_video_variant(variant):
        raise ValueError(f"{variant!r} is not a video variant")
    video_op_for(variant)  # unknown op or level: fail before any work
    results_root, out_dir = Path(results_root), Path(out_dir)
    frame = samples if splits is None else samples[samples["split"].isin(list(splits))]
    frame = frame.reset_index(drop=True)
    keys = clip_keys(frame)
    groups = list(frame.groupby(keys, sort=True).groups.items())

    def run(cache: Path, key: str, index) -> pd.DataFrame:
        part = _clip_order(frame.loc[index])
        folder = out_dir / _UNSAFE.sub("_", key)
        out = part.copy()
        try:
            clip = _assemble([results_root / p for p in part["path"]])
            decoded = degrade_clip(clip, variant, cache, fps=fps)
            paths = []
            for sample_id, image in zip(part["sample_id"].astype(str), decoded):
                dest = folder / f"{_UNSAFE.sub('_', sample_id)}.png"
                write_image(dest, image)
                paths.append(os.path.relpath(dest, results_root).replace(os.sep, "/"))
            return out.assign(path=paths, ok=True, reason="")
        except (VideoError, ImageError) as err:
            log.warning("%s: clip %s failed: %s", variant, key, err)
            return out.assign(path="", ok=False, reason=f"{variant}: {err}")

    with tempfile.TemporaryDirectory(prefix="fairforge_video_") as tmp:
        cache = Path(cache_dir) if cache_dir is not None else Path(tmp)
        if workers > 1 and len(groups) > 1:
            with ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(lambda kv: run(cache, *kv), groups))
        else:
            parts = [run(cache, key, index) for key, index in groups]
    columns = list(samples.columns) + [c for c in ("ok", "reason") if c not in samples.columns]
    if not parts:
        return pd.DataFrame(columns=columns)
    result = pd.concat(parts, ignore_index=True)[columns]
    result["ok"] = result["ok"].astype(bool)
    return result.sort_values("sample_id", kind="stable").reset_index(drop=True)
