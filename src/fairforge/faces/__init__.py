"""Faces: detection (dlib HOG or MMOD, MTCNN, SCRFD), 68 landmarks (dlib, insightface,
face-alignment) and similarity-aligned crops. Importing the package registers every backend.
"""

# Importing the member modules registers them.
from fairforge.faces import fan, insight, mtcnn  # noqa: F401
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
    FACE_DETECTORS,
    Detection,
    FaceModelError,
    FaceModels,
    default_models_dir,
    detect_faces,
    model_path,
    predict_landmarks,
)
from fairforge.faces.landmarks import (
    LANDMARKERS,
    MAP_2D106_TO_68,
    find_landmarks,
    five_from_68,
    from_2d106,
    from_3d68,
)
from fairforge.faces.stage import (
    FACES_COLUMNS,
    FaceResult,
    detect_and_align,
    detection_rate_by_group,
    face_aligner,
    face_transforms,
    landmarks_array,
    process_faces,
    reason_kind,
    release_crops,
    stage_options,
)

__all__ = [
    "DETECTOR_NAMES",
    "Detection",
    "FACES_COLUMNS",
    "FACE_DETECTORS",
    "FaceModelError",
    "FaceModels",
    "LANDMARKERS",
    "MAP_2D106_TO_68",
    "FaceResult",
    "TEMPLATE_5",
    "alignment_matrix",
    "default_models_dir",
    "detect_and_align",
    "detect_faces",
    "detection_rate_by_group",
    "face_aligner",
    "face_transforms",
    "find_landmarks",
    "five_from_68",
    "five_points",
    "from_2d106",
    "from_3d68",
    "landmarks_array",
    "model_path",
    "predict_landmarks",
    "process_faces",
    "reason_kind",
    "release_crops",
    "stage_options",
    "template_points",
    "transform_points",
    "umeyama_similarity",
    "warp_crop",
]
