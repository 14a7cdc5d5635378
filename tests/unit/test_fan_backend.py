"""The ``fan`` landmarks: face-alignment's own FaceAlignment with its networks read from
configured files, on tiny TorchScript stand-ins with FAN's signatures (1x3x256x256 -> 68
heatmaps of 64x64; the depth network 1x71x256x256 -> 68), and a FAN state dict as
face-alignment 1.5 publishes them."""

import warnings

import numpy as np
import pytest
import skimage.data
import torch
from torch import nn

from fairforge.config import validate_config
from fairforge.faces import FaceModels, detect_and_align, detect_faces, find_landmarks
from fairforge.faces.detect import FaceModelError
from fairforge.faces.fan import local_face_alignment


class FixedHeatmaps(nn.Module):
    """A learning-free FAN: one single-pixel peak per landmark, whatever the crop."""

    def __init__(self, peaks: np.ndarray):
        super().__init__()
        hm = torch.zeros(1, 68, 64, 64)
        for j, (x, y) in enumerate(peaks):
            hm[0, j, y, x] = 1.0
        self.register_buffer("heatmaps", hm)

    def forward(self, x):
        return self.heatmaps + 0.0 * x.mean()


class FixedDepth(nn.Module):
    def forward(self, x):
        return torch.full((x.shape[0], 68), 0.5) + 0.0 * x.mean()


def _script(module: nn.Module, example: torch.Tensor, path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.trace(module.eval(), example).save(str(path))


@pytest.fixture(scope="module", autouse=True)
def _no_numba_compile():
    """face-alignment decodes heatmaps with numba-jitted loops; compiling them takes longer
    than the tests, which run them as the plain Python they are written in."""
    import numba

    before = numba.config.DISABLE_JIT
    numba.config.DISABLE_JIT = True
    import face_alignment.utils  # noqa: F401  (decorated now, if not imported before)

    numba.config.DISABLE_JIT = before
    yield


@pytest.fixture(scope="module")
def fan_files(tmp_path_factory):
    """The astronaut, her HOG box, dlib's 68 landmarks, and stand-ins whose heatmap peaks
    are those landmarks in FAN's 64x64 frame of that box (face-alignment's crop centre and
    scale)."""
    img = skimage.data.astronaut()
    face = detect_faces(img, "hog", upsample=0)[0]
    pts = find_landmarks(img, face, "dlib68", FaceModels())
    w, h = face.x1 - face.x0, face.y1 - face.y0
    centre = np.array([face.x1 - w / 2, face.y1 - h / 2 - 0.12 * h])
    side = 200.0 * (w + h) / 195.0
    q = pts * 64 / side + 64 * (0.5 - centre / side)
    peaks = np.clip(np.round(q - 0.5), 0, 63).astype(int)
    folder = tmp_path_factory.mktemp("fan")
    _script(FixedHeatmaps(peaks), torch.zeros(1, 3, 256, 256), folder / "2DFAN4.zip")
    _script(FixedDepth(), torch.zeros(1, 71, 256, 256), folder / "depth.zip")
    return img, face, pts, folder


def test_fan_2d_and_3d_landmarks_from_local_files(fan_files):
    img, face, dlib68, folder = fan_files
    models = FaceModels(fan_model=folder / "2DFAN4.zip")
    pts = find_landmarks(img, face, "fan", models)
    # face-alignment's crop and heatmap decoding give the peaks back in image pixels, to
    # within half a heatmap pixel and face-alignment's rounding to whole pixels.
    assert np.abs(pts - dlib68).max() <= 2.0
    models3d = FaceModels(
        fan_model=folder / "2DFAN4.zip", fan_type="3D", fan_depth_model=folder / "depth.zip"
    )
    np.testing.assert_allclose(find_landmarks(img, face, "fan", models3d), pts)
    result = detect_and_align(img, "hog", crop_size=64, upsample=0, landmarks="fan", models=models)
    assert result.ok


def test_fan_state_dict_is_read_weights_only(tmp_path):
    from face_alignment.models import FAN

    path = tmp_path / "2DFAN1.pth.tar"
    torch.save(FAN(1).state_dict(), path)
    fa = local_face_alignment(str(path), "2D", "cpu", None)
    net = fa.face_alignment_net
    assert isinstance(net, FAN) and net.num_modules == 1 and not net.training


def test_fan_needs_its_files(fan_files, tmp_path):
    img, face, _, folder = fan_files
    with pytest.raises(FaceModelError, match="faces.fan_model is not set"):
        find_landmarks(img, face, "fan", FaceModels())
    with pytest.raises(FaceModelError, match=str(tmp_path / "nope.pth.tar")):
        find_landmarks(img, face, "fan", FaceModels(fan_model=tmp_path / "nope.pth.tar"))
    with pytest.raises(FaceModelError, match="faces.fan_depth_model is not set"):
        find_landmarks(img, face, "fan", FaceModels(fan_model=folder / "2DFAN4.zip", fan_type="3D"))
    config = {"datasets": {"s": {"adapter": "synthetic"}}, "faces": {"landmarks": "fan"}}
    assert validate_config(config)["faces"]["fan_type"] == "2D"
