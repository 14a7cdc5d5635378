"""The ``fan`` landmarks: face-alignment's FAN (2D or 3D 68 points) inside the detector's box,
with its network read from a configured path instead of downloaded.

face-alignment 1.5 builds ``FaceAlignment`` by calling its ``_load_native`` (the FAN heatmap
network, 1x3x256x256 -> 68 heatmaps of 64x64) and, for 3D, ``_load_native_depth`` (the depth
network, 1x(3+68)x256x256 -> 68 depths), each fetching a file with ``load_file_from_url``.
:class:`LocalFaceAlignment` overrides those two loaders to read ``faces.fan_model`` (and
``faces.fan_depth_model`` for 3D) instead; the rest - cropping around the box, heatmap
decoding, the 3D depth pass - is face-alignment's own code. A file is either

- a state dict, as face-alignment 1.5 publishes them (``2DFAN4-11f355bf06.pth.tar``,
  ``3DFAN4-...``, ``depth-...``), read with ``torch.load(weights_only=True)`` into its
  ``FAN`` (the number of hourglass modules is read from the keys) or ``ResNetDepth``; or
- a TorchScript archive with the same signature, as face-alignment 1.4 published them
  (``2DFAN4-cd938726ad.zip``), read with ``torch.jit.load``.

The faces are fairforge's (face-alignment's own detectors are not built); the horizontal
flip test-time augmentation is off.
"""

from __future__ import annotations

import re
import warnings
import zipfile
from functools import cache
from pathlib import Path

import numpy as np

from fairforge.faces.detect import Detection, FaceModelError, FaceModels
from fairforge.faces.landmarks import LANDMARKERS, from_3d68

FAN_TYPES = ("2D", "3D")


def _load_network(path: Path, device: str, build):
    """A TorchScript archive as it is, or a state dict loaded into ``build(state)``."""
    import torch

    if zipfile.is_zipfile(path) and not _is_state_dict_zip(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return torch.jit.load(str(path), map_location=device).eval()
    state = torch.load(str(path), map_location=device, weights_only=True)
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    state = {k.removeprefix("module."): v for k, v in state.items()}
    net = build(state)
    net.load_state_dict(state)
    return net.to(device).eval()


def _is_state_dict_zip(path: Path) -> bool:
    """torch.save's zip format holds ``data.pkl``; TorchScript archives hold ``code/``."""
    with zipfile.ZipFile(path) as archive:
        return not any("/code/" in name for name in archive.namelist())


def _fan(state: dict):
    from face_alignment.models import FAN

    modules = {int(m.group(1)) for k in state if (m := re.match(r"m(\d+)\.", k))}
    return FAN(max(modules) + 1 if modules else 4)


def _depth(state: dict):
    from face_alignment.models import ResNetDepth

    return ResNetDepth()


def _checked(path: str | Path | None, key: str) -> Path:
    if path is None:
        raise FaceModelError(
            f"fan landmarks: faces.{key} is not set (face-alignment's network, e.g. "
            f"2DFAN4-11f355bf06.pth.tar; nothing is downloaded)"
        )
    if not Path(path).is_file():
        raise FaceModelError(f"fan landmarks: faces.{key} not found: {Path(path).resolve()}")
    return Path(path)


@cache
def local_face_alignment(fan_model: str, fan_type: str, device: str, depth_model: str | None):
    """face-alignment's ``FaceAlignment`` with its networks read from local files."""
    from face_alignment import FaceAlignment, LandmarksType

    class LocalFaceAlignment(FaceAlignment):
        def _load_native(self, network_name, network_size, device, dtype):
            return _load_network(Path(fan_model), device, _fan).to(dtype=dtype)

        def _load_native_depth(self, device, dtype):
            return _load_network(Path(depth_model), device, _depth).to(dtype=dtype)

    kind = LandmarksType.THREE_D if fan_type == "3D" else LandmarksType.TWO_D
    return LocalFaceAlignment(
        kind, device=device, face_detector="folder", flip_input=False, compile=False
    )


@LANDMARKERS.register("fan", manifest_name="face_alignment_fan")
def fan_landmarks(image_rgb: np.ndarray, face: Detection, models: FaceModels) -> np.ndarray:
    """FAN's 68 points inside ``face``'s box (3D: the image-plane part)."""
    if models.fan_type not in FAN_TYPES:
        raise ValueError(f"faces.fan_type must be one of {FAN_TYPES}, got {models.fan_type!r}")
    model = _checked(models.fan_model, "fan_model")
    depth = None
    if models.fan_type == "3D":
        depth = str(_checked(models.fan_depth_model, "fan_depth_model"))
    fa = local_face_alignment(str(model), models.fan_type, models.device, depth)
    # float64: face-alignment assigns the box's scale into a torch tensor, which refuses
    # numpy float32 scalars.
    box = np.array([face.x0, face.y0, face.x1, face.y1], dtype=np.float64)
    found = fa.get_landmarks_from_image(np.ascontiguousarray(image_rgb), detected_faces=[box])
    if not found:
        raise ValueError("fan: no landmarks returned")
    return from_3d68(np.asarray(found[0], dtype=np.float64))
