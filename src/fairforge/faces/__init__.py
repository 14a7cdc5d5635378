"""Faces: dlib detection (HOG or MMOD), 68 landmarks and similarity-aligned crops."""

from fairforge.faces.align import (
    TEMPLATE_5,
    alignment_matrix,
    five_points,
    template_points,
    transform_points,
    umeyama_similarity,
    warp_crop,
)
from fairforge.faces.detect import (
    DETECTOR_NAMES,
    Detection,
    FaceModelError,
    default_models_dir,
    detect_faces,
    model_path,
    predict_landmarks,
)
from fairforge.faces.stage import (
    FACES_COLUMNS,
    FaceResult,
    detect_and_align,
    detection_rate_by_group,
    landmarks_array,
    process_faces,
    reason_kind,
)

__all__ = [
    "DETECTOR_NAMES",
    "Detection",
    "FACES_COLUMNS",
    "FaceModelError",
    "FaceResult",
    "TEMPLATE_5",
    "alignment_matrix",
    "default_models_dir",
    "detect_and_align",
    "detect_faces",
    "detection_rate_by_group",
    "five_points",
    "landmarks_array",
    "model_path",
    "predict_landmarks",
    "process_faces",
    "reason_kind",
    "template_points",
    "transform_points",
    "umeyama_similarity",
    "warp_crop",
]
