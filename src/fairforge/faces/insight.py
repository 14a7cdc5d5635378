"""insightface's models from a local model folder: the ``scrfd`` detector, the
``insightface_2d106`` and ``insightface_3d68`` landmarks, and ArcFace recognition (used by
the ``insightface_arcface`` encoder).

The models are found as insightface finds them, ``{model_dir}/models/{model_pack}/*.onnx``
(e.g. ``buffalo_l``: ``det_10g.onnx``, ``2d106det.onnx``, ``1k3d68.onnx``,
``w600k_r50.onnx``), and loaded by insightface's own ``model_zoo.get_model``, which tells
them apart by their input and output signatures (SCRFD: 9 outputs, scores, boxes and five
points for strides 8/16/32; landmarks: 192x192 inputs; recognition: 112x112). Nothing is
downloaded: a missing folder or task is a :class:`FaceModelError` naming the expected path.

insightface models take BGR images; the functions here take RGB and convert. The pose that
insightface derives from ``1k3d68`` needs a mean shape its wheel does not ship, so it is not
computed (only the landmarks are used).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import cv2
import numpy as np

from fairforge.faces.detect import FACE_DETECTORS, Detection, FaceModelError, FaceModels
from fairforge.faces.landmarks import LANDMARKERS, from_2d106, from_3d68

DETECTION, LANDMARK_2D106, LANDMARK_3D68, RECOGNITION = (
    "detection",
    "landmark_2d_106",
    "landmark_3d_68",
    "recognition",
)
# insightface's detector threshold and NMS overlap.
DET_THRESHOLD = 0.5
DEFAULT_DET_SIZE = 640
EXAMPLE_FILES = {
    DETECTION: "det_10g.onnx",
    LANDMARK_2D106: "2d106det.onnx",
    LANDMARK_3D68: "1k3d68.onnx",
    RECOGNITION: "w600k_r50.onnx",
}


def pack_dir(model_dir: str | Path | None, model_pack: str = "buffalo_l") -> Path:
    """``{model_dir}/models/{model_pack}``, checked to hold ONNX files."""
    if model_dir is None:
        raise FaceModelError(
            "insightface models: faces.model_dir is not set (expected a folder holding "
            f"models/{model_pack}/*.onnx, insightface's layout)"
        )
    folder = Path(model_dir) / "models" / model_pack
    if not folder.is_dir() or not any(folder.glob("*.onnx")):
        raise FaceModelError(
            f"insightface models not found: expected ONNX files in {folder} "
            f"(e.g. {', '.join(EXAMPLE_FILES.values())}); nothing is downloaded"
        )
    return folder


def _providers(device: str) -> list[str]:
    if str(device).startswith("cuda"):
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


@cache
def _pack(folder: str, device: str) -> dict:
    """Every model of a pack by insightface's task name (the first file of a task wins, in
    file-name order, as insightface's FaceAnalysis does)."""
    import onnxruntime
    from insightface.model_zoo import model_zoo

    onnxruntime.set_default_logger_severity(3)
    ctx_id = 0 if str(device).startswith("cuda") else -1
    models = {}
    for path in sorted(Path(folder).glob("*.onnx")):
        model = model_zoo.get_model(str(path), providers=_providers(device))
        if model is None or model.taskname in models:
            continue
        if model.taskname == LANDMARK_3D68:
            model.require_pose = False
        if model.taskname != DETECTION:
            model.prepare(ctx_id)
        models[model.taskname] = model
    return models


def insightface_model(models: FaceModels, task: str):
    """The pack's model for ``task`` (insightface's task names), loaded once per process."""
    folder = pack_dir(models.model_dir, models.model_pack)
    found = _pack(str(folder.resolve()), models.device)
    if task not in found:
        raise FaceModelError(
            f"insightface models: no {task} model in {folder} (expected e.g. "
            f"{EXAMPLE_FILES.get(task, '*.onnx')}; found tasks: {', '.join(sorted(found))})"
        )
    return found[task]


def _bgr(image_rgb: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image_rgb[:, :, ::-1])


@FACE_DETECTORS.register("scrfd", manifest_name="insightface_scrfd")
def scrfd_faces(
    img: np.ndarray, upsample: int, adjust_threshold: float, models: FaceModels
) -> list[Detection]:
    """Faces and their five points found by the pack's SCRFD, run at ``det_size`` square
    (the photo is letterboxed into it, as insightface does); scores are its face
    probabilities, kept from 0.5 + ``adjust_threshold`` up."""
    model = insightface_model(models, DETECTION)
    scale = 2 ** int(upsample)
    if scale > 1:
        img = cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)
    size = int(models.det_size)
    model.prepare(-1 if models.device == "cpu" else 0, input_size=(size, size))
    threshold = float(np.clip(DET_THRESHOLD + float(adjust_threshold), 0.0, 1.0))
    boxes, points = model.detect(_bgr(img), det_thresh=threshold)
    faces = []
    for i, box in enumerate(np.asarray(boxes, dtype=np.float64)):
        pts = None
        if points is not None:
            pts = tuple((float(x), float(y)) for x, y in np.asarray(points[i], np.float64) / scale)
        x0, y0, x1, y1 = box[:4] / scale
        faces.append(
            Detection(
                int(np.floor(x0)),
                int(np.floor(y0)),
                int(np.ceil(x1)),
                int(np.ceil(y1)),
                float(box[4]),
                pts,
            )
        )
    return faces


def _insightface_landmarks(image_rgb: np.ndarray, face: Detection, model) -> np.ndarray:
    from insightface.app.common import Face

    box = np.array([face.x0, face.y0, face.x1, face.y1], dtype=np.float32)
    return np.asarray(model.get(_bgr(image_rgb), Face(bbox=box)), dtype=np.float64)


@LANDMARKERS.register("insightface_2d106", manifest_name="insightface_2d106det")
def landmarks_2d106(image_rgb: np.ndarray, face: Detection, models: FaceModels) -> np.ndarray:
    """The pack's 106-point model inside the face box, converted to the 68."""
    model = insightface_model(models, LANDMARK_2D106)
    return from_2d106(_insightface_landmarks(image_rgb, face, model))


@LANDMARKERS.register("insightface_3d68", manifest_name="insightface_1k3d68")
def landmarks_3d68(image_rgb: np.ndarray, face: Detection, models: FaceModels) -> np.ndarray:
    """The pack's 3D 68-point model inside the face box, depth dropped."""
    model = insightface_model(models, LANDMARK_3D68)
    return from_3d68(_insightface_landmarks(image_rgb, face, model))


def arcface_features(images_rgb: list[np.ndarray], models: FaceModels) -> np.ndarray:
    """The pack's recognition model on aligned RGB crops (resized to its input size), one
    row per image, as insightface's ``get_feat`` computes it (not normalised)."""
    model = insightface_model(models, RECOGNITION)
    size = tuple(model.input_size)
    crops = [
        cv2.resize(_bgr(img), size, interpolation=cv2.INTER_AREA)
        if img.shape[1::-1] != size
        else _bgr(img)
        for img in images_rgb
    ]
    return np.asarray(model.get_feat(crops), dtype=np.float32).reshape(len(crops), -1)
