"""insightface's backends through its own model zoo, on tiny ONNX models with buffalo_l's
input and output signatures that the tests export (insightface's loading, routing and
decoding code runs on them unchanged):

- ``det_10g.onnx``: SCRFD, 1x3xHxW -> 9 outputs (scores, boxes, five points for strides
  8/16/32, two anchors per cell); the stand-in scores a stride-32 cell by how bright it is
  (a white 32-px square is a "face") and regresses a fixed box and five points;
- ``2d106det.onnx`` / ``1k3d68.onnx``: 1x3x192x192 -> 1x212 / 1x3309; the stand-ins return
  one fixed shape (dlib's 68 landmarks of a real photograph, in the crop's [-1, 1] frame);
- ``w600k_r50.onnx``: 1x3x112x112 -> 1x512, a strided convolution and a linear layer.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
import skimage.data
import torch
from torch import nn
from torch.nn import functional as F

from fairforge.config import validate_config
from fairforge.encoders import EncoderError, create_encoder
from fairforge.faces import (
    MAP_2D106_TO_68,
    FaceModels,
    detect_and_align,
    detect_faces,
    find_landmarks,
)
from fairforge.faces.detect import FaceModelError
from fairforge.faces.landmarks import five_from_68

# The five points the SCRFD stand-in puts in its box, as fractions of the box.
KPS = [0.3, 0.35, 0.7, 0.35, 0.5, 0.55, 0.35, 0.75, 0.65, 0.75]


class TinySCRFD(nn.Module):
    def forward(self, x):
        gray = x.mean(1, keepdim=True)
        scores, boxes, kps = [], [], []
        for stride in (8, 16, 32):
            pooled = F.avg_pool2d(gray, stride, stride).permute(0, 2, 3, 1).reshape(-1, 1)
            pooled = pooled.expand(-1, 2).reshape(-1, 1)  # two anchors per cell
            gain = 40.0 if stride == 32 else 0.0
            score = torch.sigmoid(gain * (pooled - 0.9)) * (1.0 if stride == 32 else 0.0)
            scores.append(score)
            boxes.append(pooled * 0 + torch.tensor([0.0, 0.0, 1.0, 1.0]))
            kps.append(pooled * 0 + torch.tensor(KPS))
        return (*scores, *boxes, *kps)


class FixedShape(nn.Module):
    """A landmark regressor that returns one shape whatever the crop (+ 0 x the input, so the
    graph reads its input)."""

    def __init__(self, flat: np.ndarray):
        super().__init__()
        self.register_buffer("shape", torch.from_numpy(flat.astype(np.float32))[None])

    def forward(self, x):
        return self.shape + 0.0 * x.mean()


def _export(model, path: Path, size, outputs: list[str], dynamic: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model.eval(),
            (torch.zeros(1, 3, *size),),
            str(path),
            input_names=["input.1"],
            output_names=outputs,
            dynamic_axes=dynamic,
            dynamo=False,
        )


@pytest.fixture(scope="module")
def photo_shape():
    """The astronaut, its HOG box and dlib's 68 landmarks in insightface's landmark-crop
    frame ([-1, 1] over 1.5 x the box's longer side, centred on the box)."""
    img = skimage.data.astronaut()
    face = detect_faces(img, "hog", upsample=0)[0]
    pts = find_landmarks(img, face, "dlib68", FaceModels())
    centre = np.array([(face.x0 + face.x1) / 2, (face.y0 + face.y1) / 2])
    half = 1.5 * max(face.x1 - face.x0, face.y1 - face.y0) / 2
    return img, face, pts, (pts - centre) / half


@pytest.fixture(scope="module")
def pack(tmp_path_factory, photo_shape):
    root = tmp_path_factory.mktemp("insightface")
    folder = root / "models" / "buffalo_l"
    folder.mkdir(parents=True)
    names = [f"{k}_{s}" for k in ("score", "bbox", "kps") for s in (8, 16, 32)]
    _export(
        TinySCRFD(),
        folder / "det_10g.onnx",
        (128, 128),
        names,
        {"input.1": {2: "h", 3: "w"}} | {n: {0: n + "_n"} for n in names},
    )
    shape68 = photo_shape[3]
    shape106 = np.zeros((106, 2))
    shape106[MAP_2D106_TO_68] = shape68
    _export(FixedShape(shape106.reshape(-1)), folder / "2d106det.onnx", (192, 192), ["fc1"], {})
    flat3d = np.zeros((1103, 3))
    flat3d[-68:, :2] = shape68
    flat3d[-68:, 2] = 0.25
    _export(FixedShape(flat3d.reshape(-1)), folder / "1k3d68.onnx", (192, 192), ["fc1"], {})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        arcface = nn.Sequential(
            nn.Conv2d(3, 4, 8, stride=8), nn.Flatten(), nn.Linear(4 * 14 * 14, 512)
        )
    _export(arcface, folder / "w600k_r50.onnx", (112, 112), ["embedding"], {"input.1": {0: "n"}})
    return root, arcface.eval()


def _square(x0: int, y0: int, size: int = 128) -> np.ndarray:
    img = np.zeros((size, size, 3), np.uint8)
    img[y0 : y0 + 32, x0 : x0 + 32] = 255
    return img


def test_scrfd_through_insightface_finds_the_box_and_five_points(pack):
    root, _ = pack
    models = FaceModels(model_dir=root, det_size=128)
    faces = detect_faces(_square(64, 32), "scrfd", upsample=0, models=models)
    assert len(faces) == 1
    face = faces[0]
    assert (face.x0, face.y0, face.x1, face.y1) == (64, 32, 96, 64) and face.score > 0.95
    expected = np.array([64, 32]) + np.reshape(KPS, (5, 2)) * 32
    np.testing.assert_allclose(face.points5, expected, atol=1e-3)
    # Letterboxing into det_size and upsampling map back to image pixels.
    big = detect_faces(_square(64, 32), "scrfd", upsample=1, models=models)[0]
    assert (big.x0, big.y0, big.x1, big.y1) == (64, 32, 96, 64)
    assert detect_faces(np.zeros((128, 128, 3), np.uint8), "scrfd", 0, models=models) == []


def test_insightface_landmarks_convert_to_the_68(pack, photo_shape):
    root, _ = pack
    img, face, dlib68, _ = photo_shape
    models = FaceModels(model_dir=root)
    for name in ("insightface_2d106", "insightface_3d68"):
        pts = find_landmarks(img, face, name, models)
        # The stand-ins return dlib's shape in the crop frame: insightface's crop transform
        # and the conversion to the 68 give dlib's points back.
        np.testing.assert_allclose(pts, dlib68, atol=0.5)


def test_scrfd_and_2d106_through_the_faces_stage(pack):
    root, _ = pack
    img = np.zeros((160, 160, 3), np.uint8)
    img[64:128, 64:128] = 255  # one 64-px square: four stride-32 cells, merged by NMS
    models = FaceModels(model_dir=root, det_size=160)
    result = detect_and_align(
        img, "scrfd", crop_size=64, upsample=0, landmarks="insightface_2d106", models=models
    )
    assert result.ok and result.detector == "insightface_scrfd"
    # Alignment used SCRFD's five points, not the 68's.
    assert not np.allclose(result.points5, five_from_68(result.landmarks))


def test_arcface_is_a_ranking_encoder(pack):
    root, arcface = pack
    enc = create_encoder("insightface_arcface", model_dir=root)
    assert enc.dim == 512 and enc.input_size == 112
    rng = np.random.default_rng(0)
    crops = [rng.integers(0, 256, (112, 112, 3), dtype=np.uint8) for _ in range(3)]
    emb = enc.embed(crops)
    x = (np.stack(crops).astype(np.float32) - 127.5) / 127.5
    with torch.no_grad():
        ref = arcface(torch.from_numpy(x).permute(0, 3, 1, 2)).numpy()
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(emb, ref, atol=1e-4)


def test_missing_folder_names_the_expected_path(tmp_path, pack):
    img = _square(64, 32)
    with pytest.raises(FaceModelError, match=str(tmp_path / "models" / "antelopev2")):
        detect_faces(img, "scrfd", models=FaceModels(model_dir=tmp_path, model_pack="antelopev2"))
    with pytest.raises(FaceModelError, match="faces.model_dir is not set"):
        detect_faces(img, "scrfd", models=FaceModels())
    with pytest.raises(EncoderError, match="models/buffalo_l"):
        create_encoder("insightface_arcface", model_dir=tmp_path)
    config = {
        "datasets": {"s": {"adapter": "synthetic"}},
        "faces": {"detector": "scrfd", "landmarks": "insightface_3d68", "model_dir": "m"},
    }
    assert validate_config(config)["faces"]["landmarks"] == "insightface_3d68"
