"""The faces stage: detect, keep the largest face, find 68 landmarks, align it by its five
points (the detector's own, or the 68's: :mod:`fairforge.faces.landmarks`), write the crop.

Every source row gives one faces row; a failure (unreadable file, image too small, no face)
is a row with ``ok=False`` and a reason, never an exception and never a missing row.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath

import cv2
import numpy as np
import pandas as pd

from fairforge.columns import FACES_COLUMNS
from fairforge.faces.align import (
    DEFAULT_BORDER,
    crop_matrix,
    outside_fraction,
    transform_points,
    warp_crop,
)
from fairforge.faces.detect import FaceModels, detect_faces, detector_name
from fairforge.faces.landmarks import alignment_points, find_landmarks
from fairforge.images import DEFAULT_LIMITS, ImageError, ImageLimits, load_image, write_image
from fairforge.sources.base import image_root

DEFAULT_MARGIN = 0.25
DEFAULT_MIN_IMAGE_SIZE = 48
DEFAULT_LANDMARKS = "dlib68"


@dataclass
class FaceResult:
    """One image's outcome. On failure only ``ok``, ``reason``, ``n_faces``, ``detector``
    are meaningful."""

    ok: bool
    reason: str
    detector: str
    n_faces: int = 0
    bbox: tuple[int, int, int, int] | None = None
    det_score: float = math.nan
    landmarks: np.ndarray | None = None  # (68, 2) float32, crop pixels
    crop: np.ndarray | None = None  # (crop_size, crop_size, 3) uint8 RGB
    matrix: np.ndarray | None = None  # 2x3, image pixels -> crop pixels
    outside_fraction: float = math.nan  # share of the crop outside the image
    points5: np.ndarray | None = None  # (5, 2) alignment points, image pixels


def as_rgb(image: np.ndarray) -> np.ndarray:
    """An RGB uint8 array as dlib wants it (2-D gray is expanded; other layouts are refused,
    since a 3-channel array here is already RGB and must not be treated as BGR)."""
    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ImageError(
            f"expected a uint8 RGB image, got {img.dtype}; decode files with "
            f"fairforge.images.read_image"
        )
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ImageError(f"expected an HxWx3 RGB image, got shape {img.shape}")
    return np.ascontiguousarray(img)


def detect_and_align(
    image_rgb: np.ndarray,
    detector: str = "hog",
    crop_size: int = 256,
    margin: float = DEFAULT_MARGIN,
    upsample: int = 1,
    min_image_size: int = DEFAULT_MIN_IMAGE_SIZE,
    adjust_threshold: float = 0.0,
    models_dir: str | Path | None = None,
    border: str = DEFAULT_BORDER,
    landmarks: str = DEFAULT_LANDMARKS,
    models: FaceModels | None = None,
) -> FaceResult:
    """Detect faces, keep the largest, find its 68 landmarks with the backend registered as
    ``landmarks`` and align it by its five points to a ``crop_size`` square crop, framed and
    filled as ``border`` says where the margin reaches past the image
    (:data:`fairforge.faces.align.BORDERS`: ``replicate``, the default, keeps the margin and
    repeats the photo's edge; ``shrink`` fits the margin to the photo, never below the one
    that keeps the 68 landmarks in the crop). ``models`` says where the backends find their
    files (without it, ``models_dir`` is dlib's folder)."""
    name = detector_name(detector)
    models = models if models is not None else FaceModels(dlib_dir=models_dir)
    img = as_rgb(image_rgb)
    h, w = img.shape[:2]
    if min(h, w) < min_image_size:
        return FaceResult(False, f"image too small ({w}x{h} < {min_image_size} px)", name)
    faces = detect_faces(img, detector, upsample, adjust_threshold, models=models)
    if not faces:
        return FaceResult(False, "no face detected", name)
    face = faces[0]
    try:
        points = find_landmarks(img, face, landmarks, models)
    except ValueError as err:
        return FaceResult(False, f"landmarks failed ({err})", name, n_faces=len(faces))
    points5 = alignment_points(points, face)
    try:
        matrix = crop_matrix(points5, img.shape, crop_size, margin, border, points)
    except ValueError as err:
        return FaceResult(False, f"alignment failed ({err})", name, n_faces=len(faces))
    crop = warp_crop(img, matrix, crop_size, border)
    return FaceResult(
        True,
        "",
        name,
        n_faces=len(faces),
        bbox=face.clipped(w, h),
        det_score=face.score,
        landmarks=transform_points(points, matrix).astype(np.float32),
        crop=crop,
        matrix=matrix,
        outside_fraction=outside_fraction(matrix, img.shape, crop_size),
        points5=points5,
    )


# Keys of the config's ``faces`` block that are not :func:`process_faces` arguments.
COMPARISON_KEYS = ("compare_backends",)


def stage_options(faces_config: Mapping) -> dict:
    """:func:`process_faces`'s keyword arguments from the config's ``faces`` block."""
    return {k: v for k, v in faces_config.items() if k not in COMPARISON_KEYS}


def _failed_row(image_id: str, reason: str, name: str, n_faces: int = 0) -> dict:
    return {
        "image_id": image_id,
        "ok": False,
        "reason": reason,
        "bbox": None,
        "det_score": math.nan,
        "n_faces": n_faces,
        "landmarks": None,
        "crop_path": "",
        "detector": name,
        "outside_fraction": math.nan,
    }


def face_aligner(
    crop_size: int = 256,
    detector: str = "hog",
    margin: float = DEFAULT_MARGIN,
    upsample: int = 1,
    min_image_size: int = DEFAULT_MIN_IMAGE_SIZE,
    adjust_threshold: float = 0.0,
    models_dir: str | Path | None = None,
    border: str = DEFAULT_BORDER,
    landmarks: str = DEFAULT_LANDMARKS,
    model_dir: str | Path | None = None,
    model_pack: str = "buffalo_l",
    fan_model: str | Path | None = None,
    fan_type: str = "2D",
    fan_depth_model: str | Path | None = None,
    device: str = "cpu",
    det_size: int = 640,
) -> Callable[[np.ndarray], FaceResult]:
    """:func:`detect_and_align` with the faces stage's settings (the config's ``faces`` keys:
    ``model_dir``, ``model_pack``, ``fan_model``, ``fan_type``, ``fan_depth_model``,
    ``device`` and ``det_size`` are :class:`~fairforge.faces.detect.FaceModels`'s), its
    models loaded once: what finds a face as the faces stage found it, there and in the stages
    that find it again."""
    models = FaceModels(
        dlib_dir=models_dir,
        model_dir=model_dir,
        model_pack=model_pack,
        fan_model=fan_model,
        fan_type=fan_type,
        fan_depth_model=fan_depth_model,
        device=device,
        det_size=det_size,
    )
    return partial(
        detect_and_align,
        detector=detector,
        crop_size=crop_size,
        margin=margin,
        upsample=upsample,
        min_image_size=min_image_size,
        adjust_threshold=adjust_threshold,
        border=border,
        landmarks=landmarks,
        models=models,
    )


#: What the reason of a real face the detector missed says when the image is kept, cropped
#: by its release's own alignment (``release_aligned``); a parenthesis, so that
#: :func:`reason_kind` counts it as the detector's miss it is.
RELEASE_CROP = "kept: the release's own alignment"


def release_crop(image: np.ndarray, crop_size: int) -> np.ndarray:
    """An aligned release's image as a crop: its centre square (the whole image when square,
    as RFW's and FairFace's are) resized to ``crop_size``."""
    h, w = image.shape[:2]
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    square = image[top : top + side, left : left + side]
    interp = cv2.INTER_AREA if side > crop_size else cv2.INTER_LINEAR
    return cv2.resize(square, (crop_size, crop_size), interpolation=interp)


def process_faces(
    sources_df: pd.DataFrame,
    root: str | Path,
    out_dir: str | Path,
    crop_dir_rel: str = "crops",
    limits: ImageLimits = DEFAULT_LIMITS,
    release_aligned: Sequence[bool] | None = None,
    with_matrix: bool = False,
    **options,
) -> pd.DataFrame:
    """Faces rows (:data:`FACES_COLUMNS`, sorted by image_id) for the source rows given
    (a shard or all), writing crops to ``{out_dir}/{crop_dir_rel}/{image_id}.png``.

    ``root`` is the dataset root the source paths start from (a csv adapter's csv file is
    accepted too). ``crop_path`` is relative to ``out_dir``; ``landmarks`` is a flat list of
    136 float32 (x0, y0, x1, y1, ...) in crop pixels, read back by :func:`landmarks_array`.
    Files are decoded by :func:`fairforge.images.load_image` within ``limits``; faces are
    found and aligned by :func:`face_aligner` with ``options`` (the config's ``faces``
    keys), a crop filled as ``border`` says where it reaches past the photo, and
    ``outside_fraction`` records how much of it does.

    ``release_aligned`` (one flag per row of ``sources_df``: the image is one of its release's
    aligned face crops, :meth:`~fairforge.sources.base.SourceAdapter.release_aligned`) keeps
    a real image whose face the detector misses: its row stays ``ok=False`` with the
    detector's reason (the detector's miss, counted per group), ``(kept: ...)`` appended, and
    its ``crop_path`` is the image cropped by the release's alignment
    (:func:`release_crop`), which the samples take as a real sample. Such an image is never
    forged: the forgeries need the detector's landmarks.

    ``with_matrix`` adds a last column, ``matrix``: the transform each ok face was aligned by
    (image pixels to crop pixels, the 2x3 matrix's six numbers row by row; None where none),
    which :func:`face_transforms` keeps beside the manifest.
    """
    align = face_aligner(**options)
    name = detector_name(options.get("detector", "hog"))
    crop_size = int(options.get("crop_size", 256))
    min_size = int(options.get("min_image_size", DEFAULT_MIN_IMAGE_SIZE))
    base = image_root(root)
    out_dir = Path(out_dir)
    keep = pd.Series(
        False if release_aligned is None else np.asarray(release_aligned, bool),
        index=sources_df.index,
    )
    if "label" in sources_df.columns:  # a labelled dataset's own fakes are not reals
        keep &= sources_df["label"].to_numpy() != 1
    rows = []
    ordered = sources_df.assign(_keep=keep).sort_values("image_id", kind="mergesort")
    for rec in ordered[["image_id", "path", "ok", "reason", "_keep"]].to_dict("records"):
        image_id = str(rec["image_id"])
        if not bool(rec["ok"]):
            rows.append(_failed_row(image_id, f"source not ok ({rec['reason']})", name))
            continue
        try:
            image = load_image(base / str(rec["path"]), limits)
        except ImageError as err:
            rows.append(_failed_row(image_id, str(err), name))
            continue
        result = align(image)
        crop_rel = (PurePosixPath(crop_dir_rel) / f"{image_id}.png").as_posix()
        if not result.ok:
            row = _failed_row(image_id, result.reason, name, result.n_faces)
            # too small for the stage is not a miss of the detector
            if rec["_keep"] and min(image.shape[:2]) >= min_size:
                write_image(out_dir / crop_rel, release_crop(image, crop_size))
                row.update(reason=f"{result.reason} ({RELEASE_CROP})", crop_path=crop_rel)
            rows.append(row)
            continue
        write_image(out_dir / crop_rel, result.crop)
        rows.append(
            {
                "image_id": image_id,
                "ok": True,
                "reason": "",
                "bbox": [int(v) for v in result.bbox],
                "det_score": float(result.det_score),
                "n_faces": int(result.n_faces),
                "landmarks": result.landmarks.reshape(-1).astype(np.float32),
                "crop_path": crop_rel,
                "detector": name,
                "outside_fraction": float(result.outside_fraction),
                "matrix": np.asarray(result.matrix, np.float64).reshape(-1),
            }
        )
    columns = list(FACES_COLUMNS) + (["matrix"] if with_matrix else [])
    df = pd.DataFrame(rows, columns=columns)
    df["ok"] = df["ok"].astype(bool)
    df["det_score"] = df["det_score"].astype(np.float64)
    df["n_faces"] = df["n_faces"].astype(np.int64)
    df["outside_fraction"] = df["outside_fraction"].astype(np.float64)
    return df


def face_transforms(faces: pd.DataFrame) -> pd.DataFrame:
    """The transforms of a :func:`process_faces` table made ``with_matrix`` (image_id, matrix:
    the six numbers of each ok face's image-to-crop matrix), what the masks of a dataset's
    own fakes are warped by (:mod:`fairforge.video.fake_masks`)."""
    ok = faces.loc[faces["ok"].astype(bool), ["image_id", "matrix"]]
    return ok.assign(matrix=[np.asarray(m, np.float64) for m in ok["matrix"]]).reset_index(
        drop=True
    )


def release_crops(faces: pd.DataFrame) -> pd.Series:
    """The faces rows whose image is kept with its release's alignment (the detector missed
    the face: ``ok`` false, a crop all the same; :func:`process_faces`)."""
    crop = faces["crop_path"].fillna("").astype(str)
    return ~faces["ok"].astype(bool) & (crop != "")


def landmarks_array(row: Mapping | pd.Series) -> np.ndarray:
    """The (68, 2) float32 crop-pixel landmarks of a faces row (flat or nested storage)."""
    value = row["landmarks"]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError(
            f"faces row {row.get('image_id', '?')!r} has no landmarks "
            f"(ok={row.get('ok')}, reason={row.get('reason')!r})"
        )
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = np.stack([np.asarray(v, dtype=np.float32) for v in value])
    arr = np.asarray(value, dtype=np.float32)
    if arr.size != 136:
        raise ValueError(f"expected 136 landmark values, got {arr.size}")
    return arr.reshape(68, 2)


_DETAIL = re.compile(r"\s*\(.*\)\s*$")


def reason_kind(reason: str) -> str:
    """A reason without its parenthesised detail: 'image too small (10x10 < 48 px)' ->
    'image too small'."""
    return _DETAIL.sub("", str(reason)) or "unknown"


def detection_rate_by_group(sources_df: pd.DataFrame, faces_df: pd.DataFrame) -> pd.DataFrame:
    """Per group: n source images, n_detected (faces ok), rate, and ``failures`` (a JSON
    object reason kind -> count), and ``outside_fraction``: the mean share of the aligned
    crops of detected faces that lies outside their photo (NaN for faces manifests written
    before it was recorded). Source images without a faces row count as 'no faces row'.
    A last row, group '(all)', totals every group."""
    faces_df = faces_df.assign(
        outside_fraction=faces_df.get("outside_fraction", pd.Series(math.nan, faces_df.index))
    )
    merged = sources_df[["image_id", "group"]].merge(
        faces_df[["image_id", "ok", "reason", "outside_fraction"]],
        on="image_id",
        how="left",
        indicator=True,
    )
    missing = (merged["_merge"] == "left_only").to_numpy()
    detected = np.where(missing, False, merged["ok"].fillna(False).astype(bool).to_numpy())
    kinds = np.where(
        missing, "no faces row", [reason_kind(r) for r in merged["reason"].fillna("").astype(str)]
    )
    table = pd.DataFrame(
        {
            "group": merged["group"].astype(str).to_numpy(),
            "detected": detected,
            "kind": kinds,
            "outside": merged["outside_fraction"].astype(np.float64).to_numpy(),
        }
    )

    def summarise(part: pd.DataFrame, group: str) -> dict:
        failed = part.loc[~part["detected"], "kind"].value_counts()
        n = len(part)
        n_detected = int(part["detected"].sum())
        return {
            "group": group,
            "n": n,
            "n_detected": n_detected,
            "rate": n_detected / n if n else math.nan,
            "failures": json.dumps({str(k): int(v) for k, v in sorted(failed.items())}),
            "outside_fraction": float(part.loc[part["detected"], "outside"].mean())
            if n_detected
            else math.nan,
        }

    rows = [summarise(part, str(g)) for g, part in table.groupby("group", sort=True)]
    rows.append(summarise(table, "(all)"))
    return pd.DataFrame(
        rows, columns=["group", "n", "n_detected", "rate", "failures", "outside_fraction"]
    )
