"""Frame-mode variants: the operation acts on the whole source frame, before face detection.

For a variant ``{op}@{level}~frame`` every sample is put back into the frame it came from,
the frame is degraded, and face detection and alignment run again on the degraded frame, as
a deployed detector's pipeline would see it:

- a real crop's frame is its source image (or video frame); so is the frame of a fake the
  dataset ships (its source image *is* the fake);
- a fake that fairforge generated on an aligned crop is pasted back into its source image:
  the clean frame's alignment is found again (the faces stage's detector and settings, so
  the same matrix), the fake crop is warped back by its inverse, and blended through the
  forgery's mask (the whole crop square where a method writes no mask);
- an image operation runs on that frame, seeded by ``rng_for(sample_id, variant)``;
- a video operation runs on the original video, before frame extraction, as a real pipeline
  compresses or rescales a clip: every frame of the sample's source video (the file its
  frames were decoded from, or the folder of frames a dataset ships; sources' ``video_path``)
  is decoded, the fakes generated on crops are pasted into their frames, the whole clip is
  kept losslessly at the video's frame rate and encoded by the operation
  (:func:`fairforge.video.variants.degraded_clip_file`); the frames at the clean frames'
  indices are then decoded from the result. A frame the codec lost (the degraded video is
  shorter) is a row with ``ok=False`` and the reason. Real and fake clips take the same
  path, so the operation is the only difference between a clean and a degraded frame.
  A still image, or a video dataset whose sources lack ``video_path`` (built before it
  existed), is degraded as the clip of its sampled frames in frame order (one frame for a
  still image; :func:`fairforge.video.variants.degrade_clip`).

For a dataset of videos, crop-mode video variants (``vid_h264@40``) run here as well: the
operation acts on the original video and detection and alignment run on the degraded
frames, which is the same pipeline as ``vid_h264@40~frame``.

Then the faces stage's :func:`~fairforge.faces.detect_and_align` runs on the degraded frame.
A sample whose face is no longer found keeps its row with ``ok=False`` and the reason
(``face detection under jpeg@30~frame: no face detected``); prediction scores only the ok
rows, and :func:`detection_under_perturbation` counts the failures per group.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from fairforge.columns import VIDEO_FILE_COLUMN
from fairforge.faces import detect_and_align, detection_rate_by_group
from fairforge.images import (
    DEFAULT_LIMITS,
    ImageError,
    ImageLimits,
    load_image,
    read_image,
    read_mask,
    write_image,
)
from fairforge.manifest import columns_in, read_ids
from fairforge.perturb.base import PerturbationError
from fairforge.perturb.variants import (
    apply_variant,
    at_crop,
    is_frame_variant,
    is_video_op,
    is_video_variant,
    op_for_variant,
)
from fairforge.sources.base import image_root, iter_images
from fairforge.video.ffmpeg import DEFAULT_FPS, VideoError, probe_video, read_video
from fairforge.video.ops import video_op_for
from fairforge.video.variants import (
    clip_keys,
    degrade_clip,
    degraded_clip_file,
    video_variant_samples,
)

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

#: The faces settings that detection under a frame variant uses (the faces stage's own).
FACE_OPTIONS = ("detector", "upsample", "crop_size", "margin", "min_image_size", "border")


class FrameError(ValueError):
    """A sample that cannot be put back into its frame (the clean frame has no face now)."""


@dataclass(frozen=True)
class FrameVariantSettings:
    """What every shard of a frame or video variant shares: where the dataset's sources and
    the results lie, how faces are found again, and which samples and options apply.

    ``root`` is the dataset root (the sources' paths are relative to it); ``results_root``
    the folder the manifests' paths are relative to; ``faces`` the faces stage's settings
    (only :data:`FACE_OPTIONS` are used); ``splits`` the splits kept (``None``: all);
    ``variant_options`` maps op name -> kwargs (:func:`~fairforge.perturb.variants.op_for_variant`);
    ``cache_dir`` holds the clean and degraded clips (``None``: ``out_dir/_clips``).
    """

    root: str | Path
    results_root: str | Path
    faces: Mapping | None = None
    limits: ImageLimits = DEFAULT_LIMITS
    splits: Sequence[str] | None = None
    variant_options: Mapping | None = None
    cache_dir: str | Path | None = None


def paste_back(
    frame: np.ndarray, crop: np.ndarray, matrix: np.ndarray, mask: np.ndarray | None = None
) -> np.ndarray:
    """``crop`` (aligned by ``matrix``, image -> crop pixels) warped back into ``frame``,
    blended by ``mask`` (uint8, crop pixels; ``None``: the whole crop square)."""
    h, w = frame.shape[:2]
    size = crop.shape[1], crop.shape[0]
    alpha = (
        np.full(crop.shape[:2], 255, np.uint8)
        if mask is None
        else cv2.resize(mask, size, interpolation=cv2.INTER_LINEAR)
    )
    m = np.asarray(matrix, dtype=np.float64)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    back = cv2.warpAffine(crop, m, (w, h), flags=flags, borderMode=cv2.BORDER_CONSTANT)
    weight = cv2.warpAffine(alpha, m, (w, h), flags=flags, borderMode=cv2.BORDER_CONSTANT)
    weight = weight.astype(np.float32)[:, :, None] / 255.0
    out = frame.astype(np.float32) * (1.0 - weight) + back.astype(np.float32) * weight
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


class _Frames:
    """Source frames and their clean alignments, each computed once per job."""

    def __init__(self, sources: pd.DataFrame, root, limits: ImageLimits, faces: Mapping):
        indexed = sources.set_index("image_id")
        self.paths = indexed["path"].astype(str).to_dict()
        self.videos = (
            indexed[VIDEO_FILE_COLUMN].to_dict() if VIDEO_FILE_COLUMN in indexed.columns else {}
        )
        self.base = image_root(root)
        self.limits = limits
        self.faces = faces
        self._images: dict[str, np.ndarray] = {}
        self._matrices: dict[str, np.ndarray] = {}

    def image(self, image_id: str) -> np.ndarray:
        if image_id not in self._images:
            if image_id not in self.paths:
                raise FrameError(f"source image {image_id!r} is not in the sources")
            self._images[image_id] = load_image(self.base / self.paths[image_id], self.limits)
        return self._images[image_id]

    def video(self, image_id: str) -> Path | None:
        """The source video (a file, or a folder of frames) of a frame; None if unknown."""
        raw = self.videos.get(image_id)
        if not isinstance(raw, str) or raw == "":
            return None
        path = Path(raw)
        return path if path.is_absolute() else self.base / path

    def matrix(self, image_id: str) -> np.ndarray:
        if image_id not in self._matrices:
            found = detect_and_align(self.image(image_id), **self.faces)
            if not found.ok:
                raise FrameError(f"the clean frame's face is not found again ({found.reason})")
            self._matrices[image_id] = found.matrix
        return self._matrices[image_id]

    def of(self, rec: Mapping, results_root: Path) -> np.ndarray:
        """The frame a sample came from: its source image, with a generated fake pasted in."""
        image_id = str(rec["image_id"])
        frame = self.image(image_id)
        if rec.get("origin") != "generated":
            return frame
        crop = read_image(results_root / str(rec["path"]))
        mask_path = rec.get("mask_path")
        mask = read_mask(results_root / str(mask_path)) if _present(mask_path) else None
        return paste_back(frame, crop, self.matrix(image_id), mask)


def _present(value) -> bool:
    return isinstance(value, str) and value != ""


def source_video_frames(
    path: Path, limits: ImageLimits = DEFAULT_LIMITS
) -> tuple[np.ndarray, float]:
    """Every frame of a source video (a file, or a folder of frames in name order) and its
    frame rate (the default rate for a folder, or where the file states none)."""
    if path.is_dir():
        images = [load_image(p, limits) for p in iter_images(path)]
        if not images:
            raise VideoError(f"no frames in {path}")
        shapes = {im.shape for im in images}
        if len(shapes) != 1:
            raise ImageError(f"frames of {path.name} differ in size: {sorted(shapes)[:3]}")
        return np.stack(images), float(DEFAULT_FPS)
    fps = probe_video(path, decode=False).fps
    return read_video(path), (fps if fps > 0 else float(DEFAULT_FPS))


def read_frames_at(path: Path, indices: list[int]) -> tuple[dict[int, np.ndarray], int | None]:
    """Frames ``indices`` of ``path`` (index -> frame) and, when some are past its end, the
    number of frames it has."""
    wanted = sorted(set(indices))
    try:
        return dict(zip(wanted, read_video(path, wanted))), None
    except VideoError:
        n = probe_video(path, decode=True).n_frames
        kept = [i for i in wanted if i < n]
        return (dict(zip(kept, read_video(path, kept))) if kept else {}), n


def degrade_source_video(
    recs: list[Mapping], store: _Frames, results_root: Path, variant: str, cache: Path
) -> list[np.ndarray | str]:
    """The frames of one clip's samples after the video operation of ``variant`` acted on
    their source video (module docstring): per sample its degraded frame, or the reason it
    has none (a frame the codec lost)."""
    videos = {store.video(str(r["image_id"])) for r in recs}
    if len(videos) != 1 or None in videos:
        raise FrameError(f"the frames of one clip come from {len(videos)} source videos")
    video = videos.pop()
    indices = [int(r["frame_index"]) for r in recs]
    frames, fps = source_video_frames(video, store.limits)
    inside = [0 <= i < len(frames) for i in indices]
    for rec, index, ok in zip(recs, indices, inside):
        if ok and rec.get("origin") == "generated":
            frames[index] = store.of(rec, results_root)
    op_variant = at_crop(variant)
    wanted = [i for i, ok in zip(indices, inside) if ok]
    clip = degraded_clip_file(frames, op_variant, cache, fps=fps)
    degraded, n = read_frames_at(clip, wanted) if wanted else ({}, None)
    height, width = frames.shape[1:3]
    keeps = video_op_for(op_variant).keeps_size
    out: list[np.ndarray | str] = []
    for index, ok in zip(indices, inside):
        if not ok:
            out.append(f"frame {index} is not in {video.name} ({len(frames)} frames)")
        elif index not in degraded:
            out.append(f"frame {index} lost by the codec (the degraded video has {n} frames)")
        else:
            frame = degraded[index]
            out.append(np.ascontiguousarray(frame[:height, :width] if keeps else frame))
    return out


def _degrade(frames: list[np.ndarray], part: pd.DataFrame, variant: str, options, cache):
    if is_video_op(variant):
        shapes = {f.shape for f in frames}
        if len(shapes) != 1:
            raise ImageError(f"frames of one clip differ in size: {sorted(shapes)}")
        return list(degrade_clip(np.stack(frames), at_crop(variant), cache))
    ids = part["sample_id"].astype(str)
    return [apply_variant(f, variant, s, options) for f, s in zip(frames, ids)]


def _has_source_video(recs: list[Mapping], store: _Frames) -> bool:
    """Whether a clip's frames were decoded from a video the sources name (and carry their
    index in it)."""
    return all(
        store.video(str(r["image_id"])) is not None
        and pd.notna(r.get("frame_index"))
        and int(r["frame_index"]) >= 0
        for r in recs
    )


def has_source_videos(sources: pd.DataFrame) -> bool:
    """True when ``sources`` name the videos their frames were decoded from: video
    operations then act on those (:func:`frame_variant_samples`)."""
    if VIDEO_FILE_COLUMN not in sources.columns:
        return False
    paths = sources[VIDEO_FILE_COLUMN]
    return bool((paths.notna() & (paths.astype(str) != "")).any())


def _order(part: pd.DataFrame) -> pd.DataFrame:
    if "frame_index" in part.columns and part["frame_index"].notna().all():
        return part.sort_values(["frame_index", "sample_id"], kind="stable")
    return part.sort_values("sample_id", kind="stable")


def frame_variant_samples(
    samples: pd.DataFrame,
    sources: pd.DataFrame,
    variant: str,
    settings: FrameVariantSettings,
    *,
    out_dir: str | Path,
) -> pd.DataFrame:
    """The samples manifest of a frame variant: every sample's crop, aligned again on its
    degraded frame (``out_dir/{sample_id}.png``, paths relative to ``results_root``).

    ``sources`` holds (at least) the samples' source rows (image_id, path, and
    ``video_path`` for a video dataset), their paths relative to ``settings.root``. Same
    columns and sample_ids as ``samples`` (of ``settings.splits``), plus ``ok``, ``reason``
    and ``n_faces``. A
    clip whose video operation fails keeps its rows with ``ok=False``. ``variant`` may also
    be a crop-mode video variant: on a dataset of videos it runs the same way.
    """
    if not (is_frame_variant(variant) or is_video_variant(variant)):
        raise PerturbationError(
            f"{variant!r} is not a frame variant (op@level~frame) or a video variant"
        )
    variant_options, splits = settings.variant_options, settings.splits
    op_for_variant(variant, variant_options)  # unknown op, bad level, missing weights: now
    faces = {k: v for k, v in dict(settings.faces or {}).items() if k in FACE_OPTIONS}
    results_root, out_dir = Path(settings.results_root), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = samples if splits is None else samples[samples["split"].isin(list(splits))]
    frame = frame.reset_index(drop=True)
    store = _Frames(sources, settings.root, settings.limits, faces)
    cache = Path(settings.cache_dir) if settings.cache_dir is not None else out_dir / "_clips"
    rows = []
    for _, index in frame.groupby(clip_keys(frame), sort=True).groups.items():
        part = _order(frame.loc[index])
        recs = part.to_dict("records")
        try:
            if is_video_op(variant) and _has_source_video(recs, store):
                degraded = degrade_source_video(recs, store, results_root, variant, cache)
            else:
                frames = [store.of(r, results_root) for r in recs]
                degraded = _degrade(frames, part, variant, variant_options, cache)
        except (FrameError, ImageError, VideoError) as err:
            log.warning("%s: %s", variant, err)
            rows += [{**r, "ok": False, "reason": f"{variant}: {err}", "n_faces": 0} for r in recs]
            continue
        for rec, image in zip(recs, degraded):
            if isinstance(image, str):
                rows.append({**rec, "ok": False, "reason": f"{variant}: {image}", "n_faces": 0})
                continue
            found = detect_and_align(image, **faces)
            if not found.ok:
                reason = f"face detection under {variant}: {found.reason}"
                rows.append({**rec, "ok": False, "reason": reason, "n_faces": found.n_faces})
                continue
            dest = out_dir / f"{_UNSAFE.sub('_', str(rec['sample_id']))}.png"
            write_image(dest, found.crop)
            path = os.path.relpath(dest, results_root).replace(os.sep, "/")
            rows.append({**rec, "path": path, "ok": True, "reason": "", "n_faces": found.n_faces})
    extra = [c for c in ("ok", "reason", "n_faces") if c not in samples.columns]
    columns = list(samples.columns) + extra
    result = pd.DataFrame(rows, columns=columns)
    result["ok"] = result["ok"].astype(bool)
    result["n_faces"] = result["n_faces"].astype(np.int64)
    return result.sort_values("sample_id", kind="stable").reset_index(drop=True)


def frame_sources(sources_path: str | Path, image_ids: Sequence[str]) -> pd.DataFrame:
    """The source rows a frame or video variant needs of ``image_ids``: image_id, path and,
    for a video dataset, ``video_path``."""
    columns = ["image_id", "path", *columns_in(sources_path, [VIDEO_FILE_COLUMN])]
    return read_ids(sources_path, image_ids, columns)


def video_variant_rows(
    samples: pd.DataFrame,
    sources: pd.DataFrame,
    variant: str,
    settings: FrameVariantSettings,
    *,
    out_dir: str | Path,
    workers: int = 1,
) -> pd.DataFrame:
    """The samples manifest of a crop-mode video variant: on a dataset of videos (sources
    naming their videos) the operation encodes the original videos and faces are found
    again (:func:`frame_variant_samples`); otherwise the clips of face crops are degraded
    (:func:`~fairforge.video.variants.video_variant_samples`; of ``settings`` it uses
    ``results_root``, ``splits`` and ``cache_dir``)."""
    if has_source_videos(sources):
        return frame_variant_samples(samples, sources, variant, settings, out_dir=out_dir)
    return video_variant_samples(
        samples, variant, results_root=settings.results_root, out_dir=out_dir,
        cache_dir=settings.cache_dir, splits=settings.splits, workers=workers,
    )  # fmt: skip


def detection_under_perturbation(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per frame variant and group: how many samples (real and fake, whose face was found on
    the clean frame) still have a face found on the degraded frame.

    ``tables`` maps a frame variant to its samples manifest (:func:`frame_variant_samples`).
    Columns: variant, operation (the crop-mode name), group, n, n_detected, rate, failures (a
    JSON object reason -> count), as :func:`fairforge.faces.detection_rate_by_group`; a
    group ``(all)`` per variant.
    """
    parts = []
    for variant, table in tables.items():
        ids = table.assign(image_id=table["sample_id"].astype(str))
        reasons = (
            ids["reason"]
            .fillna("")
            .astype(str)
            .str.replace(f"face detection under {variant}: ", "", regex=False)
        )
        rate = detection_rate_by_group(
            ids[["image_id", "group"]],
            ids[["image_id", "ok"]].assign(reason=reasons.to_numpy()),
        )
        parts.append(
            rate.drop(columns="outside_fraction").assign(
                variant=variant, operation=at_crop(variant)
            )
        )
    columns = ["variant", "operation", "group", "n", "n_detected", "rate", "failures"]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


__all__ = [
    "FACE_OPTIONS",
    "FrameError",
    "FrameVariantSettings",
    "detection_under_perturbation",
    "degrade_source_video",
    "frame_sources",
    "frame_variant_samples",
    "has_source_videos",
    "paste_back",
    "source_video_frames",
    "video_variant_rows",
]
