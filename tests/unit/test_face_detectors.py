"""The face-detector family: hog and cnn behind one registry, and a new backend as one
registration that the config accepts and the faces stage runs."""

import numpy as np
import pytest
from matplotlib import cbook

from fairforge.config import ConfigError, validate_config
from fairforge.faces import detect_and_align
from fairforge.faces.detect import (
    DETECTOR_NAMES,
    FACE_DETECTORS,
    detect_faces,
    detector_name,
)
from fairforge.images import load_image
from fairforge.registry import UnknownName


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return load_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))


@pytest.fixture
def upsampled_hog():
    """HOG run at one more pyramid level, registered as a backend for the test's duration."""
    hog = FACE_DETECTORS.get("hog")

    def find(img, upsample, adjust_threshold, models_dir):
        return hog(img, upsample + 1, adjust_threshold, models_dir)

    with FACE_DETECTORS.registered("hog_up", find, manifest_name="dlib_hog_up"):
        yield "hog_up"


def test_builtin_detectors_are_registered():
    assert {"cnn", "hog", "mtcnn"} <= set(FACE_DETECTORS.names())
    assert DETECTOR_NAMES == {"hog": "dlib_hog", "cnn": "dlib_mmod"}
    with pytest.raises(UnknownName, match="unknown face detector 'retina'; valid: cnn, hog, mtcnn"):
        detect_faces(np.zeros((64, 64, 3), np.uint8), "retina")


def test_a_new_backend_is_one_registration(photo, upsampled_hog):
    small = np.ascontiguousarray(photo[::4, ::4])  # 128 x 150: the face is ~45 px wide
    assert detect_faces(small, "hog", upsample=0) == []
    result = detect_and_align(small, upsampled_hog, crop_size=64, upsample=0)
    assert result.ok and result.detector == "dlib_hog_up" == detector_name(upsampled_hog)
    # The config accepts a registered name and names the valid ones otherwise.
    config = {"datasets": {"s": {"adapter": "synthetic"}}, "faces": {"detector": "hog_up"}}
    assert validate_config(config)["faces"]["detector"] == "hog_up"
    with pytest.raises(ConfigError, match="faces.detector: unknown face detector 'retina'"):
        validate_config({**config, "faces": {"detector": "retina"}})
