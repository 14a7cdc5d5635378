"""``insightface_arcface``: the recognition model of an insightface model pack (e.g.
buffalo_l's ``w600k_r50.onnx``), loaded by insightface's own model zoo from
``{model_dir}/models/{model_pack}`` (:mod:`fairforge.faces.insight`) and run on aligned
crops with insightface's preprocessing. Unlike ``onnx_arcface`` (one ONNX file by path), it
reads the same folder as the ``scrfd`` detector and the insightface landmarks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fairforge.encoders.base import ENCODERS, EncoderError, FaceEncoder
from fairforge.faces.detect import FaceModelError, FaceModels
from fairforge.faces.insight import RECOGNITION, arcface_features, insightface_model


@ENCODERS.register("insightface_arcface")
class InsightfaceArcFaceEncoder(FaceEncoder):
    def __init__(
        self,
        model_dir: str | Path | None = None,
        model_pack: str = "buffalo_l",
        device: str = "cpu",
        batch_size: int = 64,
    ):
        self._models = FaceModels(model_dir=model_dir, model_pack=model_pack, device=device)
        try:
            model = insightface_model(self._models, RECOGNITION)
        except FaceModelError as err:
            raise EncoderError(f"insightface_arcface: {err}") from None
        self.input_size = int(model.input_size[0])
        self.dim = int(model.get_feat([np.zeros((self.input_size,) * 2 + (3,), np.uint8)]).size)
        self._batch = int(batch_size)

    def _embed(self, images: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(
            [
                arcface_features(images[i : i + self._batch], self._models)
                for i in range(0, len(images), self._batch)
            ]
        )
