"""dlib's ResNet face encoder (128-d), on dlib's own 5-point alignment chip.

The model files ship with the ``face_recognition_models`` package; they are loaded by path
because that package's ``__init__`` imports ``pkg_resources``.

Chip choice. For each image the HOG frontal detector looks for a face; the largest one gives
the box in which the 5-point shape predictor runs, and ``dlib.get_face_chip`` cuts the
150×150 chip the ResNet was trained on. Far (blurred, 12–24 px) faces are rarely detected.
Our inputs are aligned face crops, so the face sits at the same place in every crop: when
detection finds nothing, the shape predictor runs in a fixed *fallback box* given relative to
the image, ``fallback_box`` = (left, top, right, bottom) in [0, 1]; by default the whole
crop, as the crop is the aligned face. The shape predictor is a cascade that starts from the
mean face shape placed in the box, so it needs a box framed like the detector's: with a
loose crop (a wide margin) the whole-crop box gives a wrong, rotated chip.
:meth:`DlibResNetEncoder.calibrate_fallback` therefore sets the box to the median detector
box over near-range crops of the same geometry (the ranking protocol calls it on the close
gallery crops before embedding far probes). On degraded faces the predictor lands on the
landmarks when it can and otherwise stays near the mean shape, i.e. a fixed framing of the
crop. Every input gets a chip, so no probe is missing from a ranking, and :meth:`chips_for`
reports which images fell back (``fallbacks`` records them). Images smaller than the chip are upscaled first (the detector
does not see faces under ~80 px).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import cv2
import numpy as np

from fairforge.encoders.base import ENCODERS, EncoderError, FaceEncoder
from fairforge.faces.detect import hog_detector

MODEL_FILE = "dlib_face_recognition_resnet_model_v1.dat"
SHAPE_FILE = "shape_predictor_5_face_landmarks.dat"


def default_model_dir() -> Path:
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(
            "dlib_resnet needs the face_recognition_models package "
            "(pip install face-recognition-models) or model_dir=..."
        )
    return Path(spec.submodule_search_locations[0]) / "models"


@ENCODERS.register("dlib_resnet")
class DlibResNetEncoder(FaceEncoder):
    """dlib ResNet-29 face descriptor on 5-point chips, batched over a list of chips."""

    dim = 128
    input_size = 150

    def __init__(
        self,
        model_dir: str | Path | None = None,
        chip_size: int = 150,
        padding: float = 0.25,
        detect: bool = True,
        upsample: int = 0,
        num_jitters: int = 0,
        batch_size: int = 64,
        fallback_box: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0),
    ):
        import dlib

        model_dir = Path(model_dir) if model_dir else default_model_dir()
        paths = {name: model_dir / name for name in (MODEL_FILE, SHAPE_FILE)}
        for path in paths.values():
            if not path.is_file():
                raise EncoderError(f"dlib_resnet: model file not found: {path}")
        self._dlib = dlib
        self._net = dlib.face_recognition_model_v1(str(paths[MODEL_FILE]))
        self._shape = dlib.shape_predictor(str(paths[SHAPE_FILE]))
        self._detector = hog_detector() if detect else None
        self.chip_size = int(chip_size)
        self.input_size = self.chip_size
        self.padding = float(padding)
        self.upsample = int(upsample)
        self.num_jitters = int(num_jitters)
        self.batch_size = int(batch_size)
        self.fallback_box = _check_box(fallback_box)
        self.fallbacks = []

    def _prepare(self, img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        if min(h, w) < self.chip_size:
            scale = self.chip_size / min(h, w)
            img = cv2.resize(
                img,
                (max(1, round(w * scale)), max(1, round(h * scale))),
                interpolation=cv2.INTER_CUBIC,
            )
        return img

    def _detect(self, img: np.ndarray):
        if self._detector is None:
            return None
        found = self._detector(img, self.upsample)
        return max(found, key=lambda r: r.width() * r.height()) if len(found) else None

    def calibrate_fallback(self, images) -> tuple[float, float, float, float] | None:
        """Set ``fallback_box`` to the median relative detector box over ``images`` (near
        crops of the geometry to come); returns it, or None (box unchanged) when no face is
        detected in any of them."""
        detector = self._detector or hog_detector()
        boxes = []
        for img in images:
            img = self._prepare(np.ascontiguousarray(img))
            found = detector(img, self.upsample)
            if len(found):
                box = max(found, key=lambda r: r.width() * r.height())
                h, w = img.shape[:2]
                boxes.append(
                    (box.left() / w, box.top() / h, (box.right() + 1) / w, (box.bottom() + 1) / h)
                )
        if not boxes:
            return None
        self.fallback_box = _check_box(tuple(float(v) for v in np.median(boxes, axis=0)))
        return self.fallback_box

    def chips_for(self, images: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
        """The aligned chips and, per image, whether the face detector found the face
        (False: the chip was taken on the fallback box, see the module docstring)."""
        chips, detected = [], np.zeros(len(images), dtype=bool)
        for i, img in enumerate(images):
            img = self._prepare(img)
            box = self._detect(img)
            detected[i] = box is not None
            if box is None:
                h, w = img.shape[:2]
                x0, y0, x1, y1 = self.fallback_box
                box = self._dlib.rectangle(
                    round(x0 * w), round(y0 * h), round(x1 * w) - 1, round(y1 * h) - 1
                )
            shape = self._shape(img, box)
            chips.append(
                self._dlib.get_face_chip(img, shape, size=self.chip_size, padding=self.padding)
            )
        return chips, detected

    def _embed(self, images: list[np.ndarray]) -> np.ndarray:
        out = []
        for start in range(0, len(images), self.batch_size):
            chips, detected = self.chips_for(images[start : start + self.batch_size])
            self.fallbacks.extend((~detected).tolist())
            if self.chip_size != 150:
                # the ResNet expects 150 px chips
                chips = [cv2.resize(c, (150, 150), interpolation=cv2.INTER_AREA) for c in chips]
            desc = self._net.compute_face_descriptor(chips, num_jitters=self.num_jitters)
            out.append(np.asarray([np.asarray(d) for d in desc], dtype=np.float32))
        return np.concatenate(out, axis=0)


def _check_box(box) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in box)
    if not (x1 > x0 and y1 > y0):
        raise EncoderError(
            f"dlib_resnet: fallback_box must be (left, top, right, bottom) "
            f"with right > left and bottom > top, got {box}"
        )
    return x0, y0, x1, y1
