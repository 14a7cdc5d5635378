"""Face backends beyond dlib: MTCNN for real (weights from its wheel) on a real photograph
and on synthetic faces, and the one landmark convention (68 iBUG + the 5 alignment points)
with its conversions."""

import numpy as np
import pytest
import skimage.data

from fairforge.faces import (
    FACE_DETECTORS,
    LANDMARKERS,
    detect_and_align,
    detect_faces,
    five_from_68,
    from_2d106,
    from_3d68,
)
from fairforge.faces.align import TEMPLATE_5, transform_points
from fairforge.faces.landmarks import MAP_2D106_TO_68, alignment_points, inter_ocular
from fairforge.sources.synthetic.identities import sample_subject, sample_view
from fairforge.sources.synthetic.renderer import render_face


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    """A real photograph shipped with scikit-image (Eileen Collins, 512 x 512)."""
    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def synthetic_faces() -> list[np.ndarray]:
    return [
        render_face(sample_subject(7, f"s{i}", tone, "female"), sample_view(7, f"v{i}"), 160)
        for i, tone in enumerate(("tone1", "tone2", "tone3", "tone4"))
    ]


def test_mtcnn_finds_the_astronaut_with_five_points(astronaut):
    assert "mtcnn" in FACE_DETECTORS.names()
    faces = detect_faces(astronaut, "mtcnn", upsample=0)
    assert len(faces) == 1
    face = faces[0]
    assert face.score > 0.99
    # Her face is at about x 180-270, y 60-175 (as dlib's HOG also finds it).
    hog = detect_faces(astronaut, "hog", upsample=0)[0]
    ix = min(face.x1, hog.x1) - max(face.x0, hog.x0)
    iy = min(face.y1, hog.y1) - max(face.y0, hog.y0)
    assert ix * iy / min(face.area, hog.area) > 0.7
    pts = np.asarray(face.points5)
    assert pts.shape == (5, 2)
    # Image-left eye first, eyes above the nose above the mouth, all inside the box.
    assert pts[0, 0] < pts[1, 0] and pts[3, 0] < pts[4, 0]
    assert pts[:2, 1].max() < pts[2, 1] < pts[3:, 1].min()
    assert (pts[:, 0] > face.x0).all() and (pts[:, 0] < face.x1).all()
    assert (pts[:, 1] > face.y0).all() and (pts[:, 1] < face.y1).all()


def test_mtcnn_aligns_by_its_own_five_points(astronaut):
    result = detect_and_align(astronaut, "mtcnn", crop_size=112, margin=0.0, upsample=0)
    assert result.ok and result.detector == "mtcnn"
    # The five points land on ArcFace's template (a least-squares similarity: her face's
    # proportions leave a few pixels of residual at 112 px).
    warped = transform_points(result.points5, result.matrix)
    residual = np.linalg.norm(warped - TEMPLATE_5 * 112, axis=1)
    assert residual.mean() < 5.0 and residual.max() < 8.0
    # The manifest's 68 landmarks (dlib's) agree with MTCNN's five within a tenth of the
    # inter-ocular distance.
    five68 = five_from_68(result.landmarks)
    assert np.linalg.norm(five68 - warped, axis=1).mean() / inter_ocular(warped) < 0.1


def test_mtcnn_on_synthetic_faces_and_blank(synthetic_faces):
    for img in synthetic_faces:
        faces = detect_faces(img, "mtcnn", upsample=0)
        assert len(faces) == 1 and faces[0].score > 0.9 and faces[0].area > 40 * 40
    assert detect_faces(np.full((160, 160, 3), 128, np.uint8), "mtcnn", upsample=0) == []
    # A stricter threshold drops nothing real; an impossible one drops everything.
    assert detect_faces(synthetic_faces[0], "mtcnn", 0, adjust_threshold=0.3) == []


def test_mtcnn_upsampling_maps_back_to_image_pixels(synthetic_faces):
    img = np.ascontiguousarray(synthetic_faces[1][::2, ::2])  # 80 px
    plain = detect_faces(img, "mtcnn", upsample=0)[0]
    up = detect_faces(img, "mtcnn", upsample=1)[0]
    box = np.array([plain.x0, plain.y0, plain.x1, plain.y1])
    assert np.abs(box - [up.x0, up.y0, up.x1, up.y1]).max() <= 4
    assert np.abs(np.subtract(plain.points5, up.points5)).max() < 3


def test_five_from_68_is_eye_centres_nose_tip_mouth_corners():
    pts = np.random.default_rng(0).uniform(0, 100, (68, 2))
    five = five_from_68(pts)
    np.testing.assert_allclose(five[0], pts[36:42].mean(0))
    np.testing.assert_allclose(five[1], pts[42:48].mean(0))
    np.testing.assert_allclose(five[2:], pts[[30, 48, 54]])
    with pytest.raises(ValueError, match=r"expected \(68, 2\)"):
        five_from_68(pts[:67])


def test_2d106_to_68_maps_each_part():
    assert sorted(set(MAP_2D106_TO_68)) == sorted(MAP_2D106_TO_68)  # no point used twice
    assert len(MAP_2D106_TO_68) == 68 and MAP_2D106_TO_68.max() < 106
    pts106 = np.arange(212, dtype=np.float64).reshape(106, 2)
    pts68 = from_2d106(pts106)
    # Index i of the 106 has x = 2i: each iBUG part comes from its 2d106 region.
    src = (pts68[:, 0] / 2).astype(int)
    assert set(src[0:17]) <= set(range(0, 33))  # jaw <- contour
    assert set(src[17:27]) <= set(range(43, 52)) | set(range(97, 106))  # brows
    assert set(src[27:36]) <= set(range(72, 87))  # nose
    assert set(src[36:42]) <= set(range(33, 43)) and set(src[42:48]) <= set(range(87, 97))
    assert set(src[48:68]) <= set(range(52, 72))  # mouth
    # The five points insightface's tools take from the 106 (nose tip 86, mouth corners 52
    # and 61) are the iBUG nose tip and mouth corners.
    assert list(src[[30, 48, 54]]) == [86, 52, 61]
    with pytest.raises(ValueError, match="2d106"):
        from_2d106(pts106[:68])


def test_3d68_drops_depth():
    pts = np.random.default_rng(1).normal(size=(68, 3))
    np.testing.assert_array_equal(from_3d68(pts), pts[:, :2])
    np.testing.assert_array_equal(from_3d68(pts[:, :2]), pts[:, :2])
    with pytest.raises(ValueError):
        from_3d68(pts[:5])


def test_alignment_points_prefer_the_detectors_own(astronaut):
    assert "dlib68" in LANDMARKERS.names()
    hog = detect_faces(astronaut, "hog", upsample=0)[0]
    mtcnn = detect_faces(astronaut, "mtcnn", upsample=0)[0]
    landmarks = np.zeros((68, 2)) + np.arange(68)[:, None]
    np.testing.assert_array_equal(alignment_points(landmarks, hog), five_from_68(landmarks))
    np.testing.assert_array_equal(alignment_points(landmarks, mtcnn), np.asarray(mtcnn.points5))
