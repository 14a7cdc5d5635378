"""Face detectors (:data:`FACE_DETECTORS`: dlib's HOG and MMOD CNN) and the 68-point shape
predictor.

A detector is a function ``(image_rgb, upsample, adjust_threshold, models: FaceModels) ->
list[Detection]`` registered under its config name (``faces.detector``) with metadata
``manifest_name``, the name written to the faces manifest's ``detector`` column; a new
backend is one registration. Backends that find the five alignment points themselves
(MTCNN, SCRFD) return them in :attr:`Detection.points5`.

Model files are loaded by path: ``models_dir`` if given, else ``$FAIRFORGE_DLIB_MODELS``, else
the ``models`` folder of the ``face_recognition_models`` package (found without importing it,
since its ``__init__`` needs pkg_resources).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from fairforge.registry import Registry

HOG_NAME, MMOD_NAME = "dlib_hog", "dlib_mmod"
MMOD_FILE = "mmod_human_face_detector.dat"
LANDMARKS_68_FILE = "shape_predictor_68_face_landmarks.dat"
MODELS_ENV = "FAIRFORGE_DLIB_MODELS"


class FaceModelError(FileNotFoundError):
    """A dlib model file that is not where it is expected."""


def default_models_dir() -> Path | None:
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV])
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "models"


def model_path(filename: str, models_dir: str | Path | None = None) -> Path:
    """Path of a dlib model file; :class:`FaceModelError` naming the expected path if absent."""
    folder = Path(models_dir) if models_dir is not None else default_models_dir()
    if folder is None:
        raise FaceModelError(
            f"dlib model {filename} not found: the face_recognition_models package is not "
            f"installed; install face-recognition-models, set ${MODELS_ENV} or pass models_dir"
        )
    path = folder / filename
    if not path.is_file():
        raise FaceModelError(
            f"dlib model file not found: {path} (install "
            f"face-recognition-models, set ${MODELS_ENV} or pass models_dir)"
        )
    return path


@cache
def hog_detector():
    """dlib's HOG frontal face detector, built once per process (a third of a second)."""
    import dlib

    return dlib.get_frontal_face_detector()


@cache
def _mmod_detector(path: str):
    import dlib

    return dlib.cnn_face_detection_model_v1(path)


@cache
def _shape_predictor(path: str):
    import dlib

    return dlib.shape_predictor(path)


@dataclass(frozen=True)
class FaceModels:
    """Where every face backend finds its model files, and the device it runs on.

    ``dlib_dir``: dlib's ``.dat`` files (default: see :func:`default_models_dir`);
    ``model_dir``: insightface's model root in its own layout, ``{model_dir}/models/{pack}/
    *.onnx`` (``det_size``: the square SCRFD runs at); ``fan_model``, ``fan_type`` and
    ``fan_depth_model``: face-alignment's networks (:mod:`fairforge.faces.fan`);
    ``device``: where the torch and onnx backends run (``cpu``, ``cuda``).
    """

    dlib_dir: str | Path | None = None
    model_dir: str | Path | None = None
    model_pack: str = "buffalo_l"
    fan_model: str | Path | None = None
    fan_type: str = "2D"
    fan_depth_model: str | Path | None = None
    device: str = "cpu"
    det_size: int = 640


@dataclass(frozen=True)
class Detection:
    """A face box in image pixels (x1, y1 exclusive; may extend past the image) and score;
    ``points5`` are the detector's own five alignment points (eye centres, nose tip, mouth
    corners, image pixels) when it finds them, else None."""

    x0: int
    y0: int
    x1: int
    y1: int
    score: float
    points5: tuple[tuple[float, float], ...] | None = None

    @property
    def area(self) -> int:
        return max(0, self.x1 - self.x0) * max(0, self.y1 - self.y0)

    def clipped(self, width: int, height: int) -> tuple[int, int, int, int]:
        return (
            min(max(self.x0, 0), width),
            min(max(self.y0, 0), height),
            min(max(self.x1, 0), width),
            min(max(self.y1, 0), height),
        )


FACE_DETECTORS: Registry = Registry("face detector")


def detector_name(detector: str) -> str:
    """The manifest name of a registered detector (``hog`` -> ``dlib_hog``)."""
    return FACE_DETECTORS.metadata(detector)["manifest_name"]


@FACE_DETECTORS.register("hog", manifest_name=HOG_NAME)
def _hog_faces(
    img: np.ndarray, upsample: int, adjust_threshold: float, models: FaceModels
) -> list[Detection]:
    """HOG scores are the SVM margins of ``run(img, upsample, adjust_threshold)``."""
    rects, scores, _ = hog_detector().run(img, int(upsample), float(adjust_threshold))
    return [
        Detection(r.left(), r.top(), r.right() + 1, r.bottom() + 1, float(s))
        for r, s in zip(rects, scores)
    ]


@FACE_DETECTORS.register("cnn", manifest_name=MMOD_NAME)
def _mmod_faces(
    img: np.ndarray, upsample: int, adjust_threshold: float, models: FaceModels
) -> list[Detection]:
    """MMOD scores are the CNN's confidences, kept from ``adjust_threshold`` up."""
    cnn = _mmod_detector(str(model_path(MMOD_FILE, models.dlib_dir)))
    return [
        Detection(
            d.rect.left(),
            d.rect.top(),
            d.rect.right() + 1,
            d.rect.bottom() + 1,
            float(d.confidence),
        )
        for d in cnn(img, int(upsample))
        if d.confidence >= adjust_threshold
    ]


# The config names and the manifest names of the built-in detectors (a backend registered
# later is in FACE_DETECTORS, not here).
DETECTOR_NAMES = {n: detector_name(n) for n in FACE_DETECTORS.names()}


def detect_faces(
    image_rgb: np.ndarray,
    detector: str = "hog",
    upsample: int = 1,
    adjust_threshold: float = 0.0,
    models_dir: str | Path | None = None,
    models: FaceModels | None = None,
) -> list[Detection]:
    """All faces in a uint8 RGB image, largest first (ties: higher score, then position),
    found by the detector registered as ``detector`` (both dlib detectors: larger scores
    are surer, 0 is the default threshold). ``models`` says where backends find their
    files; without it, ``models_dir`` is dlib's folder."""
    find = FACE_DETECTORS.get(detector)
    models = models if models is not None else FaceModels(dlib_dir=models_dir)
    found = find(np.ascontiguousarray(image_rgb), upsample, adjust_threshold, models)
    return sorted(found, key=lambda d: (-d.area, -d.score, d.y0, d.x0))


def predict_landmarks(
    image_rgb: np.ndarray, face: Detection, models_dir: str | Path | None = None
) -> np.ndarray:
    """The 68 iBUG landmarks of ``face`` as a (68, 2) float32 array of (x, y) image pixels."""
    import dlib

    predictor = _shape_predictor(str(model_path(LANDMARKS_68_FILE, models_dir)))
    rect = dlib.rectangle(face.x0, face.y0, face.x1 - 1, face.y1 - 1)
    shape = predictor(np.ascontiguousarray(image_rgb), rect)
    return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)
