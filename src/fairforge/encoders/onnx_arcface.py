"""An ArcFace-style ONNX face encoder from a configured path, run with onnxruntime.

The input convention is insightface's recognition models (``w600k_r50.onnx``, ``glint360k``
and the like): an aligned RGB face resized to 112×112, normalised as (x − 127.5) / 127.5,
NCHW float32; the output is one embedding per image (512-d for those models; the size is read
from the model). Inputs are expected to be aligned crops already: the image is only resized.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from fairforge.encoders.base import ENCODERS, EncoderError, FaceEncoder

DEFAULT_MODEL_PATH = Path("models") / "arcface.onnx"
MEAN = 127.5
STD = 127.5


def preprocess(images: list[np.ndarray], size: int) -> np.ndarray:
    """uint8 RGB images -> float32 NCHW, resized to ``size`` and normalised."""
    batch = np.empty((len(images), 3, size, size), dtype=np.float32)
    for i, img in enumerate(images):
        if img.shape[:2] != (size, size):
            small = min(img.shape[:2]) > size
            img = cv2.resize(
                img, (size, size), interpolation=cv2.INTER_AREA if small else cv2.INTER_LINEAR
            )
        batch[i] = img.transpose(2, 0, 1)
    batch -= MEAN
    batch /= STD
    return batch


@ENCODERS.register("onnx_arcface")
class OnnxArcFaceEncoder(FaceEncoder):
    input_size = 112

    def __init__(
        self,
        model_path: str | Path = DEFAULT_MODEL_PATH,
        input_size: int = 112,
        batch_size: int = 64,
        providers: list[str] | None = None,
        threads: int | None = None,
    ):
        import onnxruntime as ort

        path = Path(model_path)
        if not path.is_file():
            raise EncoderError(
                f"onnx_arcface: model file not found at {path.resolve()} (configure "
                f"model_path; expected an ArcFace-style ONNX model taking 1x3x{input_size}x"
                f"{input_size} RGB normalised (x-127.5)/127.5, e.g. insightface's w600k_r50.onnx)"
            )
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = int(threads)
        available = ort.get_available_providers()
        providers = providers or [
            p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available
        ]
        self._session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
        inp = self._session.get_inputs()[0]
        self._input_name = inp.name
        if len(inp.shape) != 4:
            raise EncoderError(
                f"onnx_arcface: {path} takes input of shape {inp.shape}, expected N x 3 x H x W"
            )
        fixed = [d for d in inp.shape[2:] if isinstance(d, int)]
        if fixed and any(d != int(input_size) for d in fixed):
            raise EncoderError(
                f"onnx_arcface: {path} wants {inp.shape[2:]} inputs, "
                f"configured input_size={input_size}"
            )
        # Some exports fix the batch dimension to 1.
        self._max_batch = inp.shape[0] if isinstance(inp.shape[0], int) else int(batch_size)
        self.model_path = path
        self.input_size = int(input_size)
        out_shape = self._session.get_outputs()[0].shape
        if len(out_shape) == 2 and isinstance(out_shape[1], int):
            self.dim = int(out_shape[1])
        else:
            probe = np.zeros((1, 3, self.input_size, self.input_size), dtype=np.float32)
            self.dim = int(np.prod(self._session.run(None, {self._input_name: probe})[0].shape[1:]))

    def _embed(self, images: list[np.ndarray]) -> np.ndarray:
        out = []
        for start in range(0, len(images), self._max_batch):
            batch = preprocess(images[start : start + self._max_batch], self.input_size)
            emb = self._session.run(None, {self._input_name: batch})[0]
            out.append(emb.reshape(len(batch), -1))
        return np.concatenate(out, axis=0)
