"""Every configured face detector on every source image: which detector fails whom.

For each source image and each backend of ``faces.compare_backends``, one row: whether a
face was found, whether its landmarks are usable, and the five alignment points the faces
stage would align on (:func:`fairforge.faces.landmarks.alignment_points`). The table per
group is :func:`fairforge.tables.face_backends.face_detection_by_backend`.

A detected face's landmarks *fail* when the landmark backend raises, returns anything but 68
finite points, when the five points leave the detection box grown by half its size on each
side, when the eyes are closer than a tenth of the box's width, or when the similarity fit
is degenerate: the cases where the aligned crop would be wrong even though a face was found.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.faces.align import alignment_matrix_5
from fairforge.faces.detect import Detection, FaceModels, detect_faces
from fairforge.faces.landmarks import alignment_points, find_landmarks, inter_ocular
from fairforge.faces.stage import as_rgb
from fairforge.images import DEFAULT_LIMITS, ImageError, ImageLimits, load_image
from fairforge.sources.base import image_root

BACKEND_COLUMNS = (
    "image_id",
    "backend",
    "readable",
    "detected",
    "landmarks_ok",
    "reason",
    "points5",
)


def landmark_problem(points5: np.ndarray, face: Detection) -> str:
    """Why five alignment points are unusable for ``face`` ('' when they are usable)."""
    pts = np.asarray(points5, dtype=np.float64)
    if pts.shape != (5, 2) or not np.isfinite(pts).all():
        return "landmarks not finite"
    w, h = face.x1 - face.x0, face.y1 - face.y0
    inside = (
        (pts[:, 0] >= face.x0 - w / 2)
        & (pts[:, 0] <= face.x1 + w / 2)
        & (pts[:, 1] >= face.y0 - h / 2)
        & (pts[:, 1] <= face.y1 + h / 2)
    )
    if not inside.all():
        return "landmarks outside the face box"
    if inter_ocular(pts) < 0.1 * max(w, 1):
        return "eyes collapsed"
    try:
        alignment_matrix_5(pts, 64, 0.0)
    except ValueError:
        return "alignment degenerate"
    return ""


def backend_outcome(
    image_rgb: np.ndarray,
    backend: str,
    landmarks: str,
    models: FaceModels,
    upsample: int = 1,
    adjust_threshold: float = 0.0,
) -> dict:
    """One image's row for one backend (without ``image_id``)."""
    faces = detect_faces(image_rgb, backend, upsample, adjust_threshold, models=models)
    row = {"backend": backend, "readable": True, "detected": bool(faces)}
    if not faces:
        return {**row, "landmarks_ok": False, "reason": "no face detected", "points5": None}
    face = faces[0]
    try:
        points = alignment_points(find_landmarks(image_rgb, face, landmarks, models), face)
    except ValueError as err:
        return {
            **row,
            "landmarks_ok": False,
            "reason": f"landmarks failed ({err})",
            "points5": None,
        }
    problem = landmark_problem(points, face)
    return {
        **row,
        "landmarks_ok": not problem,
        "reason": problem,
        "points5": points.reshape(-1).astype(np.float64),
    }


def compare_backends(
    sources_df: pd.DataFrame,
    root: str | Path,
    backends: Sequence[str],
    landmarks: str = "dlib68",
    models: FaceModels | None = None,
    upsample: int = 1,
    min_image_size: int = 48,
    adjust_threshold: float = 0.0,
    limits: ImageLimits = DEFAULT_LIMITS,
) -> pd.DataFrame:
    """Rows (:data:`BACKEND_COLUMNS`) for every source image x backend, sorted by image_id
    then the backends' order. An unreadable, failed or too small source image is a row per
    backend with ``readable=False`` and its reason: it counts against no backend."""
    models = models if models is not None else FaceModels()
    base = image_root(root)
    rows = []
    ordered = sources_df.sort_values("image_id", kind="mergesort")
    for rec in ordered[["image_id", "path", "ok", "reason"]].to_dict("records"):
        image_id = str(rec["image_id"])
        problem, image = "", None
        if not bool(rec["ok"]):
            problem = f"source not ok ({rec['reason']})"
        else:
            try:
                image = as_rgb(load_image(base / str(rec["path"]), limits))
            except ImageError as err:
                problem = str(err)
            else:
                h, w = image.shape[:2]
                if min(h, w) < min_image_size:
                    problem = f"image too small ({w}x{h} < {min_image_size} px)"
        for backend in backends:
            if problem:
                row = {
                    "backend": backend,
                    "readable": False,
                    "detected": False,
                    "landmarks_ok": False,
                    "reason": problem,
                    "points5": None,
                }
            else:
                row = backend_outcome(image, backend, landmarks, models, upsample, adjust_threshold)
            rows.append({"image_id": image_id, **row})
    return pd.DataFrame(rows, columns=list(BACKEND_COLUMNS))


def alignment_errors(outcomes: pd.DataFrame, primary: str) -> pd.Series:
    """Per row: the mean distance between its five points and the ``primary`` backend's on
    the same image, over the primary's inter-ocular distance (NaN where either has no usable
    landmarks, and for the primary's own rows)."""
    ref = outcomes.loc[
        (outcomes["backend"] == primary) & outcomes["landmarks_ok"], ["image_id", "points5"]
    ]
    ref_points = dict(zip(ref["image_id"], ref["points5"]))
    errors = []
    for image_id, backend, ok, pts in outcomes[
        ["image_id", "backend", "landmarks_ok", "points5"]
    ].itertuples(index=False):
        base = ref_points.get(image_id)
        if backend == primary or not ok or base is None:
            errors.append(math.nan)
            continue
        a = np.asarray(pts, dtype=np.float64).reshape(5, 2)
        b = np.asarray(base, dtype=np.float64).reshape(5, 2)
        errors.append(float(np.linalg.norm(a - b, axis=1).mean() / inter_ocular(b)))
    return pd.Series(errors, index=outcomes.index, dtype=np.float64)


def compare_options(faces_config: dict) -> dict:
    """:func:`compare_backends`'s keyword arguments (but ``limits``) from the config's
    ``faces`` block."""
    models = FaceModels(
        model_dir=faces_config.get("model_dir"),
        model_pack=faces_config.get("model_pack", "buffalo_l"),
        fan_model=faces_config.get("fan_model"),
        fan_type=faces_config.get("fan_type", "2D"),
        fan_depth_model=faces_config.get("fan_depth_model"),
        device=faces_config.get("device", "cpu"),
        det_size=faces_config.get("det_size", 640),
    )
    return {
        "backends": list(faces_config.get("compare_backends", [])),
        "landmarks": faces_config.get("landmarks", "dlib68"),
        "models": models,
        "upsample": faces_config.get("upsample", 1),
        "min_image_size": faces_config.get("min_image_size", 48),
    }
