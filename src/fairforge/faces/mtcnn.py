"""The ``mtcnn`` face detector: facenet-pytorch's MTCNN (P-, R- and O-Net cascade) with the
weights its wheel ships, so it runs with nothing to configure, on CPU or GPU.

Scores are the O-Net's face probabilities; ``adjust_threshold`` (0 by default) is added to
its last stage's 0.7 cut-off. Each
face comes with MTCNN's five points (eye centres, nose tip, mouth corners, image-left
first), which alignment uses. ``upsample`` enlarges the image by 2**upsample first, as
dlib's pyramid upsampling does, for faces under MTCNN's 20-pixel minimum.
"""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np

from fairforge.faces.detect import FACE_DETECTORS, Detection, FaceModels

MIN_FACE_SIZE = 20
THRESHOLDS = (0.6, 0.7, 0.7)


@cache
def _mtcnn(device: str, last_threshold: float):
    from facenet_pytorch import MTCNN

    return MTCNN(
        keep_all=True,
        min_face_size=MIN_FACE_SIZE,
        thresholds=[THRESHOLDS[0], THRESHOLDS[1], last_threshold],
        device=device,
    )


@FACE_DETECTORS.register("mtcnn", manifest_name="mtcnn")
def mtcnn_faces(
    img: np.ndarray, upsample: int, adjust_threshold: float, models: FaceModels
) -> list[Detection]:
    """Faces and their five points found by MTCNN in a uint8 RGB image."""
    import torch

    last = float(np.clip(THRESHOLDS[2] + float(adjust_threshold), 0.0, 1.0))
    scale = 2 ** int(upsample)
    if scale > 1:
        img = cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)
    with torch.inference_mode():
        boxes, probs, points = _mtcnn(models.device, last).detect(img, landmarks=True)
    if boxes is None:
        return []
    faces = []
    for box, prob, pts in zip(boxes, probs, points):
        box = np.asarray(box, dtype=np.float64) / scale
        pts = np.asarray(pts, dtype=np.float64).reshape(5, 2) / scale
        faces.append(
            Detection(
                int(np.floor(box[0])),
                int(np.floor(box[1])),
                int(np.ceil(box[2])),
                int(np.ceil(box[3])),
                float(prob),
                tuple((float(x), float(y)) for x, y in pts),
            )
        )
    return faces
