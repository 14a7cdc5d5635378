"""One OpenCV in the environment: insightface and face-alignment declare opencv-python while
fairforge uses the headless build; they are installed without their pins
(requirements-nodeps.txt), so after importing every face backend only
opencv-python-headless is installed, and the cv2 everyone imports is its."""

import importlib
import importlib.metadata as metadata
from pathlib import Path

import numpy as np

BACKENDS = ("fairforge", "fairforge.faces", "facenet_pytorch", "insightface", "face_alignment")
OPENCV_BUILDS = (
    "opencv-python",
    "opencv-contrib-python",
    "opencv-python-headless",
    "opencv-contrib-python-headless",
)


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_only_the_headless_opencv_is_installed_and_works():
    for module in BACKENDS:
        importlib.import_module(module)
    import cv2

    assert [b for b in OPENCV_BUILDS if _installed(b)] == ["opencv-python-headless"]
    # The cv2 module loaded is the headless distribution's file.
    files = {
        (Path(str(f.locate())).resolve())
        for f in metadata.distribution("opencv-python-headless").files or []
    }
    assert Path(cv2.__file__).resolve() in files
    assert cv2.__version__.split(".")[0] == metadata.version("opencv-python-headless")[0]
    img = np.zeros((24, 32, 3), np.uint8)
    img[4:12, 8:20] = (10, 200, 90)
    ok, png = cv2.imencode(".png", img)
    assert ok and np.array_equal(cv2.imdecode(png, cv2.IMREAD_UNCHANGED), img)
    assert cv2.resize(img, (16, 12), interpolation=cv2.INTER_AREA).shape == (12, 16, 3)
