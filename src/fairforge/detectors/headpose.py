"""Inconsistent head poses (Yang, Li & Lyu, ICASSP 2019): a classical, landmark-based detector.

A face swap replaces the central face and keeps the outer contour, so a 3-D head pose fitted to
all 68 landmarks and one fitted to the central landmarks alone disagree more on fakes than on
real faces. Both poses come from ``cv2.solvePnP`` against a generic 3-D face (pinhole camera,
focal length = image width, principal point at the centre, as in the paper); the feature is the
relative rotation between the two poses (a rotation vector) and their translation difference
(divided by the camera distance); an RBF SVM on standardised features, Platt-scaled, gives
P(fake).

This is not a torch module: it is registered as a ``classical`` detector, whose interface is
``fit(landmarks, labels)``, ``predict_proba(landmarks)``, ``save``/``load``.
:func:`sample_landmarks` runs dlib on the sample images (under a test-time variant) and
:func:`headpose_predictions` writes the predictions contract.

Simplifications: the generic 3-D face (:mod:`fairforge.forgery.pose`) is the package's 68-point mean face
(:data:`fairforge.forgery.template.MEAN_FACE_68`) on an ellipsoidal head with a protruding nose,
not the paper's 3-D model; the central region is brows, nose and mouth corners (landmarks
18–36, 49, 55, 1-based), the whole face all 68 points.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch

from fairforge.columns import PREDICTION_COLUMNS
from fairforge.detectors.base import DETECTORS
from fairforge.faces import detect_faces, predict_landmarks
from fairforge.forgery.pose import camera_matrix, generic_face_3d, head_pose
from fairforge.images import read_image
from fairforge.perturb import apply_variant

WHOLE_FACE = np.arange(68)
CENTRAL_FACE = np.r_[17:36, 48, 54]


def pose_difference_features(
    landmarks: np.ndarray, image_size: float, model_3d: np.ndarray | None = None
) -> np.ndarray:
    """(N, 6) features of (N, 68, 2) landmarks: the rotation vector of R_central · R_wholeᵀ and
    (t_whole − t_central) / |t_whole|. Rows with non-finite landmarks are NaN."""
    landmarks = np.asarray(landmarks, dtype=np.float64).reshape(-1, 68, 2)
    model = generic_face_3d() if model_3d is None else np.asarray(model_3d, dtype=np.float64)
    camera = camera_matrix(image_size)
    out = np.full((len(landmarks), 6), np.nan)
    for i, pts in enumerate(landmarks):
        if not np.isfinite(pts).all():
            continue
        r_all, t_all = head_pose(pts[WHOLE_FACE], model[WHOLE_FACE], camera)
        r_cen, t_cen = head_pose(pts[CENTRAL_FACE], model[CENTRAL_FACE], camera)
        relative = cv2.Rodrigues(r_cen @ r_all.T)[0].ravel()
        out[i, :3] = relative
        out[i, 3:] = (t_all - t_cen) / np.linalg.norm(t_all)
    return out


@DETECTORS.register("headpose", kind="classical")
class HeadPoseSVM:
    """Yang et al.'s head-pose inconsistency detector: pose-difference features → RBF SVM."""

    def __init__(
        self, image_size: float = 256, C: float = 1.0, gamma: str | float = "scale", seed: int = 0
    ):
        self.image_size = image_size
        self.C, self.gamma, self.seed = C, gamma, seed
        self.pipeline = None
        self._train: tuple[np.ndarray, np.ndarray] | None = None

    def features(self, landmarks: np.ndarray) -> np.ndarray:
        return pose_difference_features(landmarks, self.image_size)

    def fit(self, landmarks: np.ndarray, labels) -> HeadPoseSVM:
        return self._fit_features(self.features(landmarks), np.asarray(labels).astype(np.int64))

    def _fit_features(self, x: np.ndarray, y: np.ndarray) -> HeadPoseSVM:
        keep = np.isfinite(x).all(axis=1)
        if len(np.unique(y[keep])) < 2:
            raise ValueError("headpose needs real and fake faces with landmarks to fit")
        # scikit-learn is loaded when an SVM is fitted: see fairforge.detectors.
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        # Platt scaling on cross-validated decision values, the final SVM fit on all faces.
        svm = SVC(C=self.C, gamma=self.gamma, random_state=self.seed)
        self.pipeline = make_pipeline(
            StandardScaler(), CalibratedClassifierCV(svm, method="sigmoid", ensemble=False)
        )
        self.pipeline.fit(x[keep], y[keep])
        self._train = (np.ascontiguousarray(x[keep], dtype=np.float64), y[keep].astype(np.int64))
        return self

    def predict_proba(self, landmarks: np.ndarray) -> np.ndarray:
        """P(fake) per face, float32; NaN where the landmarks are missing."""
        if self.pipeline is None:
            raise RuntimeError("HeadPoseSVM.predict_proba called before fit")
        x = self.features(landmarks)
        scores = np.full(len(x), np.nan, dtype=np.float32)
        keep = np.isfinite(x).all(axis=1)
        if keep.any():
            fake_col = list(self.pipeline.classes_).index(1)
            scores[keep] = self.pipeline.predict_proba(x[keep])[:, fake_col]
        return scores

    def save(self, path: str | Path) -> None:
        """Save the training features and labels, not the fitted SVM: a pickle could run code
        on load, while tensors load with ``weights_only=True`` and the (deterministic, tiny)
        SVM is refitted from them in milliseconds."""
        if self._train is None:
            raise RuntimeError("HeadPoseSVM.save called before fit")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        x, y = self._train
        torch.save(
            {
                "arch": self.name,
                "classical": True,
                "model_config": {
                    "image_size": float(self.image_size),
                    "C": float(self.C),
                    "gamma": self.gamma,
                    "seed": int(self.seed),
                },
                "features": torch.from_numpy(x),
                "labels": torch.from_numpy(y),
            },
            path,
        )

    @classmethod
    def load(cls, path: str | Path) -> HeadPoseSVM:
        payload = torch.load(Path(path), map_location="cpu", weights_only=True)
        model = cls(**payload["model_config"])
        model._fit_features(payload["features"].numpy(), payload["labels"].numpy())
        return model


def sample_landmarks(
    frame: pd.DataFrame,
    root: str | Path,
    variant: str = "clean",
    face_detector: str = "hog",
    read: Callable[[Path], np.ndarray] | None = None,
    variant_options: dict | None = None,
) -> np.ndarray:
    """(N, 68, 2) dlib landmarks of the images of ``frame`` (``path`` relative to ``root``)
    under ``variant``; NaN rows where no face is found."""
    read = read or read_image
    apply = None if variant == "clean" else apply_variant
    out = np.full((len(frame), 68, 2), np.nan, dtype=np.float32)
    for i, row in enumerate(frame.itertuples(index=False)):
        img = read(Path(root) / row.path)
        if apply is not None:
            img = apply(img, variant, row.sample_id, variant_options)
        faces = detect_faces(img, face_detector)
        if faces:
            out[i] = predict_landmarks(img, faces[0])
    return out


def headpose_predictions(
    model: HeadPoseSVM,
    frame: pd.DataFrame,
    landmarks: np.ndarray,
    detector: str = "headpose",
    variant: str = "clean",
) -> pd.DataFrame:
    """The predictions contract for ``frame`` rows scored from their ``landmarks``
    (faces without landmarks get a NaN score)."""
    out = frame.reset_index(drop=True)[[c for c in PREDICTION_COLUMNS if c in frame.columns]]
    out = out.copy()
    out["detector"] = detector
    out["variant"] = variant
    out["score"] = model.predict_proba(landmarks)
    return out[PREDICTION_COLUMNS]
