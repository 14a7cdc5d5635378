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
- an image operation runs on that frame, seeded by ``rng_for(sample_id, variant)``; a video
  operation runs on the clip of the (video, method)'s frames in frame order (a one-frame clip
  for a still image), through ffmpeg and back (:func:`fairforge.video.variants.degrade_clip`).
  The clip is made of the sampled source frames, not of every frame of the original video.

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
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

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
from fairforge.perturb.base import PerturbationError
from fairforge.perturb.variants import (
    apply_variant,
    at_crop,
    is_frame_variant,
    is_video_op,
    op_for_variant,
)
from fairforge.sources.adapters import image_root
from fairforge.video.ffmpeg import VideoError
from fairforge.video.variants import clip_keys, degrade_clip

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

#: The faces settings that detection under a frame variant uses (the faces stage's own).
FACE_OPTIONS = ("detector", "upsample", "crop_size", "margin", "min_image_size", "border")


class FrameError(ValueError):
    """A sample that cannot be put back into its frame (the clean frame has no face now)."""


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
        self.paths = sources.set_index("image_id")["path"].astype(str).to_dict()
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


def _degrade(frames: list[np.ndarray], part: pd.DataFrame, variant: str, options, cache):
    if is_video_op(variant):
        shapes = {f.shape for f in frames}
        if len(shapes) != 1:
            raise ImageError(f"frames of one clip differ in size: {sorted(shapes)}")
        return list(degrade_clip(np.stack(frames), at_crop(variant), cache))
    ids = part["sample_id"].astype(str)
    return [apply_variant(f, variant, s, options) for f, s in zip(frames, ids)]


def _order(part: pd.DataFrame) -> pd.DataFrame:
    if "frame_index" in part.columns and part["frame_index"].notna().all():
        return part.sort_values(["frame_index", "sample_id"], kind="stable")
    return part.sort_values("sample_id", kind="stable")


def frame_variant_samples(
    samples: pd.DataFrame,
    sources: pd.DataFrame,
    variant: str,
    *,
    root: str | Path,
    results_root: str | Path,
    out_dir: str | Path,
    faces: Mapping | None = None,
    limits: ImageLimits = DEFAULT_LIMITS,
    splits: Sequence[str] | None = None,
    variant_options: Mapping | None = None,
    cache_dir: str | Path | None = None,
) -> pd.DataFrame:
    """The samples manifest of a frame variant: every sample's crop, aligned again on its
    degraded frame (``out_dir/{sample_id}.png``, paths relative to ``results_root``).

    ``sources`` holds (at least) the samples' source rows (image_id, path), their paths
    relative to the dataset ``root``; ``faces`` the faces stage's settings
    (:data:`FACE_OPTIONS`). Same columns and sample_ids as ``samples`` (of ``splits``),
    plus ``ok``, ``reason`` and ``n_faces``. A clip whose video operation fails keeps its
    rows with ``ok=False``.
    """
    if not is_frame_variant(variant):
        raise PerturbationError(f"{variant!r} is not a frame variant (op@level~frame)")
    op_for_variant(variant, variant_options)  # unknown op, bad level, missing weights: now
    faces = {k: v for k, v in dict(faces or {}).items() if k in FACE_OPTIONS}
    results_root, out_dir = Path(results_root), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = samples if splits is None else samples[samples["split"].isin(list(splits))]
    frame = frame.reset_index(drop=True)
    store = _Frames(sources, root, limits, faces)
    cache = Path(cache_dir) if cache_dir is not None else out_dir / "_clips"
    rows = []
    for _, index in frame.groupby(clip_keys(frame), sort=True).groups.items():
        part = _order(frame.loc[index])
        recs = part.to_dict("records")
        try:
            degraded = _degrade(
                [store.of(r, results_root) for r in recs], part, variant, variant_options, cache
            )
        except (FrameError, ImageError, VideoError) as err:
            log.warning("%s: %s", variant, err)
            rows += [{**r, "ok": False, "reason": f"{variant}: {err}", "n_faces": 0} for r in recs]
            continue
        for rec, image in zip(recs, degraded):
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


def detection_under_perturbation_figure(table: pd.DataFrame) -> Figure:
    """Bars of the face-detection rate per frame variant (x) and group (colour): the share
    of the samples found on the clean frame whose face is still found on the degraded one."""
    fig = Figure(figsize=(max(4.0, 1.2 * max(1, table["variant"].nunique()) + 2), 3.2))
    ax = fig.add_subplot()
    parts = table[table["group"] != "(all)"]
    variants = list(dict.fromkeys(parts["variant"]))
    groups = sorted(parts["group"].unique())
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(variants))
    for k, group in enumerate(groups):
        rates = parts[parts["group"] == group].set_index("variant")["rate"]
        ax.bar(x + (k - (len(groups) - 1) / 2) * width, rates.reindex(variants), width, label=group)
    ax.set_xticks(x, variants, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("face still detected")
    ax.set_title("Face detection on degraded frames, per group", fontsize=10)
    if groups:
        ax.legend(fontsize=7, ncols=min(4, len(groups)))
    fig.tight_layout()
    return fig


__all__ = [
    "detection_under_perturbation_figure",
    "FACE_OPTIONS",
    "FrameError",
    "detection_under_perturbation",
    "frame_variant_samples",
    "paste_back",
]
