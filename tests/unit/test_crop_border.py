"""Crops from any framing: a tightly framed real photograph, its crop's border fill, the
share of the crop that lies outside the photo (per row and per group in the report), and the
margin that never leaves a landmark outside the crop.

The photographs are the Grace Hopper portrait matplotlib ships as sample data and
scikit-image's astronaut (Eileen Collins), cut around the face box dlib finds in them, and
the astronaut cut as UTKFace cuts its chips (tests/helpers/released_cuts.py).
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pandas as pd
import pytest
from matplotlib import cbook

from fairforge.columns import FACES_COLUMNS
from fairforge.faces import detect_and_align, detection_rate_by_group, process_faces
from fairforge.faces.align import (
    BORDERS,
    DEFAULT_BORDER,
    LANDMARK_BAND,
    alignment_matrix,
    alignment_matrix_5,
    crop_inside,
    crop_matrix,
    fitted_margin,
    landmark_margin,
    outside_fraction,
    template_points,
    transform_points,
    warp_crop,
)
from fairforge.faces.landmarks import five_from_68, parts_of
from fairforge.forgery import ForgeryError, create_method
from fairforge.images import load_image, write_image
from fairforge.tables import crop_outside_cells
from released_cuts import RealFace, real_faces, utkface_chip

CROP = 128


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return load_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))


@pytest.fixture(scope="module")
def tight(photo) -> np.ndarray:
    """The photo cut to the detector's face box: the 0.25 margin reaches past every edge."""
    x0, y0, x1, y1 = detect_and_align(photo, crop_size=CROP).bbox
    return np.ascontiguousarray(photo[y0:y1, x0:x1])


def black_share(crop: np.ndarray) -> float:
    return float((crop == 0).all(axis=2).mean())


def test_a_tight_photo_is_filled_without_a_black_band(photo, tight):
    roomy = detect_and_align(photo, crop_size=CROP)
    assert roomy.ok and roomy.outside_fraction == 0.0

    fills = [b for b in BORDERS if b != "shrink"]
    results = {b: detect_and_align(tight, crop_size=CROP, border=b) for b in fills}
    assert all(r.ok for r in results.values())
    share = results["constant"].outside_fraction
    # Most of the crop lies outside this photo, whatever fills it.
    assert share > 0.5
    assert {r.outside_fraction for r in results.values()} == {share}
    # Black fills that share; replication and reflection leave no black pixel.
    assert black_share(results["constant"].crop) == pytest.approx(share, abs=0.02)
    assert black_share(results["replicate"].crop) == 0.0
    assert black_share(results["reflect"].crop) == 0.0
    # Only the fill differs: the face, its landmarks and the crop's pixels inside the photo.
    for border in ("replicate", "reflect"):
        np.testing.assert_array_equal(results[border].landmarks, results["constant"].landmarks)
    # Pixels a full pixel away from the photo's edge (bilinear weights reach one pixel).
    inside = warp_crop(np.full_like(tight, 255), results["constant"].matrix, CROP, "constant")
    core = cv2.erode((inside == 255).all(axis=2).astype(np.uint8), np.ones((3, 3))) > 0
    assert core.mean() > 0.2
    for border in ("replicate", "reflect"):
        np.testing.assert_array_equal(
            results[border].crop[core], results["constant"].crop[core], border
        )


def test_outside_fraction_is_the_share_of_crop_pixels_past_the_edges():
    identity = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert outside_fraction(identity, (10, 10, 3), 20) == pytest.approx(0.75)
    assert outside_fraction(identity, (40, 40, 3), 20) == 0.0
    shifted = np.array([[1.0, 0.0, -5.0], [0.0, 1.0, 0.0]])  # crop x = image x - 5
    assert outside_fraction(shifted, (20, 20, 3), 20) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="unknown border"):
        warp_crop(np.zeros((4, 4, 3), np.uint8), identity, 4, border="wrap")


def test_faces_rows_and_the_report_give_the_share_per_group(photo, tight, tmp_path):
    write_image(tmp_path / "roomy.png", photo)
    write_image(tmp_path / "tight.png", tight)
    write_image(tmp_path / "blank.png", np.zeros((80, 80, 3), np.uint8))
    sources = pd.DataFrame(
        {
            "image_id": ["roomy", "tight", "blank"],
            "path": ["roomy.png", "tight.png", "blank.png"],
            "group": ["far", "near", "near"],
            "ok": True,
            "reason": "",
        }
    )
    faces = process_faces(sources, tmp_path, tmp_path / "out", crop_size=CROP, border="replicate")
    assert list(faces.columns) == list(FACES_COLUMNS)
    assert FACES_COLUMNS[-1] == "outside_fraction"  # last, so older readers keep working
    share = dict(zip(faces["image_id"], faces["outside_fraction"]))
    assert share["roomy"] == 0.0 and share["tight"] > 0.5 and math.isnan(share["blank"])
    crop = load_image(tmp_path / "out" / faces.set_index("image_id").loc["tight", "crop_path"])
    assert black_share(crop) == 0.0

    rates = detection_rate_by_group(sources, faces).set_index("group")
    # The mean over the faces found: the blank image found none and does not count.
    assert rates.loc["near", "outside_fraction"] == pytest.approx(share["tight"])
    assert rates.loc["far", "outside_fraction"] == 0.0
    assert rates.loc["(all)", "outside_fraction"] == pytest.approx(share["tight"] / 2)
    # A faces manifest written before the column existed still gives a table.
    old = detection_rate_by_group(sources, faces.drop(columns="outside_fraction"))
    assert old["outside_fraction"].isna().all() and list(old["rate"]) == list(rates["rate"])

    cells = crop_outside_cells(rates.reset_index().assign(dataset="hopper"))
    assert list(cells.columns) == ["dataset", "far", "near", "(all)"]
    assert cells.iloc[0]["far"] == "0.000"
    assert cells.iloc[0]["near"] == f"{share['tight']:.3f}"


@pytest.fixture(scope="module")
def astronaut() -> RealFace:
    (face,) = real_faces(("astronaut",))
    return face


def span(result) -> float:
    """The width the 68 landmarks span in a crop: the face's scale."""
    return float(np.ptp(result.landmarks[:, 0]))


def inside_band(landmarks: np.ndarray, size: int) -> bool:
    band = LANDMARK_BAND * size
    return bool(landmarks.min() >= band - 1e-3 and landmarks.max() <= size - 1 - band + 1e-3)


def test_a_tight_chip_keeps_the_face_where_every_other_crop_has_it(astronaut):
    """By default a UTKFace chip's crop keeps the 0.25 margin, so the face has the scale it has
    in the roomy photo; two thirds of the crop lie past the chip, filled by its edge, not
    black. ``shrink`` trades that fill for a larger face, down to the margin that keeps
    every landmark in the crop."""
    chip, _ = utkface_chip(astronaut)
    assert DEFAULT_BORDER == "replicate"
    default = detect_and_align(chip, crop_size=CROP)
    black = detect_and_align(chip, crop_size=CROP, border="constant")
    shrunk = detect_and_align(chip, crop_size=CROP, border="shrink")
    roomy = detect_and_align(astronaut.photo, crop_size=CROP)
    assert default.ok and black.ok and shrunk.ok and roomy.outside_fraction == 0.0
    assert default.outside_fraction > 0.6
    assert black_share(black.crop) == pytest.approx(black.outside_fraction, abs=0.02)
    assert black_share(default.crop) < 0.02  # the photo's own black pixels
    np.testing.assert_array_equal(default.landmarks, black.landmarks)
    # The face's scale does not depend on how tightly its photo was cut.
    np.testing.assert_allclose(span(default), span(roomy), rtol=0.05)
    # Shrunk: less fill, a larger face, and still every landmark inside the crop - at the
    # margin that puts the outermost one (the chin) at the band's edge.
    assert shrunk.outside_fraction < default.outside_fraction - 0.1
    assert span(shrunk) > 1.15 * span(default)
    assert inside_band(default.landmarks, CROP) and inside_band(shrunk.landmarks, CROP)
    assert shrunk.landmarks[:, 1].max() == pytest.approx(CROP - 1 - LANDMARK_BAND * CROP, abs=0.01)
    assert np.argmax(shrunk.landmarks[:, 1]) in range(6, 11)  # a chin point


def test_landmark_margin_is_the_smallest_that_keeps_the_face(astronaut):
    points5 = five_from_68(astronaut.landmarks)
    need = landmark_margin(astronaut.landmarks, points5, CROP)
    assert 0.05 < need < 0.25  # the chin needs some margin; the default gives more

    def placed(margin: float) -> np.ndarray:
        return transform_points(astronaut.landmarks, alignment_matrix_5(points5, CROP, margin))

    assert inside_band(placed(need), CROP) and not inside_band(placed(need - 0.005), CROP)
    assert inside_band(placed(0.25), CROP)
    # Shrunk in a photo too tight for any margin (60 px, the five points at its corner), the
    # crop stops at the margin that keeps the face; the fill borders keep the margin asked
    # for, even one that cuts the face (a recognition crop).
    corner = points5.min(0)
    tight = (60, 60, 3)
    assert fitted_margin(points5 - corner, tight, CROP, 0.25) == 0.0
    shrunk = crop_matrix(
        points5 - corner, tight, CROP, 0.25, "shrink", astronaut.landmarks - corner
    )
    np.testing.assert_allclose(shrunk, alignment_matrix_5(points5 - corner, CROP, need))
    for border in ("replicate", "reflect", "constant"):
        matrix = crop_matrix(points5, astronaut.photo.shape, CROP, 0.0, border, astronaut.landmarks)
        np.testing.assert_array_equal(matrix, alignment_matrix_5(points5, CROP, 0.0))
    # Never above the margin asked for, and a roomy photo's crop keeps it.
    small = crop_matrix(points5, tight, CROP, 0.02, "shrink", astronaut.landmarks)
    np.testing.assert_array_equal(small, alignment_matrix_5(points5, CROP, 0.02))
    roomy = crop_matrix(points5, astronaut.photo.shape, CROP, 0.25, "shrink", astronaut.landmarks)
    np.testing.assert_array_equal(roomy, alignment_matrix_5(points5, CROP, 0.25))


def test_a_face_cut_by_its_crop_is_refused_naming_the_part(astronaut):
    """A recognition crop (margin 0) cuts the chin; a forgery method refuses it and says
    which landmarks left the crop, for the source and for the target."""
    points5 = five_from_68(astronaut.landmarks)
    matrix = alignment_matrix_5(points5, CROP, 0.0)
    crop = warp_crop(astronaut.photo, matrix, CROP)
    cut = transform_points(astronaut.landmarks, matrix)
    assert cut[:, 1].max() > CROP - 1
    whole = detect_and_align(astronaut.photo, crop_size=CROP)
    rng = np.random.default_rng(0)
    with pytest.raises(
        ForgeryError, match=r"^source landmarks outside the crop: chin \(points 6-10\)"
    ):
        create_method("sbi")(crop, cut, None, None, rng)
    with pytest.raises(ForgeryError, match=r"^target landmarks outside the crop: .*chin"):
        create_method("faceswap")(whole.crop, whole.landmarks, crop, cut, rng)
    assert parts_of([7, 8, 12]) == "chin (points 6-10), jaw right (points 11-16)"
    assert (
        parts_of([19, 30, 50])
        == "brow left (points 17-21), nose (points 27-35), mouth (points 48-67)"
    )
    assert parts_of([]) == ""


def test_shrink_fits_the_margin_to_the_photo():
    """The margin is the largest one whose crop stays inside the photo, down to none."""
    # Landmarks whose five alignment points are the template's at 100 px, 10 px in: the
    # crop at margin m covers about [10 - 100 m, 110 + 100 m] of the photo.
    five = template_points(100, 0.0) + 10.0
    landmarks = np.zeros((68, 2))
    landmarks[36:42], landmarks[42:48] = five[0], five[1]
    landmarks[[30, 48, 54]] = five[2:]
    roomy = (400, 400, 3)
    assert fitted_margin(five_from_68(landmarks) + 150, roomy, CROP, 0.25) == 0.25
    m = fitted_margin(five_from_68(landmarks), (130, 130, 3), CROP, 0.25)
    assert m == pytest.approx(0.1, abs=0.01)
    assert crop_inside(alignment_matrix(landmarks, CROP, m), (130, 130, 3), CROP)
    assert not crop_inside(alignment_matrix(landmarks, CROP, m + 0.01), (130, 130, 3), CROP)
    # Nothing fits: the tight template box, the rest filled with the edge.
    assert fitted_margin(five_from_68(landmarks), (90, 90, 3), CROP, 0.25) == 0.0
    matrix = crop_matrix(five_from_68(landmarks), (90, 90, 3), CROP, 0.25, "shrink")
    np.testing.assert_array_equal(matrix, alignment_matrix(landmarks, CROP, 0.0))
    assert outside_fraction(matrix, (90, 90, 3), CROP) > 0
    matrix = crop_matrix(five_from_68(landmarks), (90, 90, 3), CROP, 0.25, "constant")
    np.testing.assert_array_equal(matrix, alignment_matrix(landmarks, CROP, 0.25))
    with pytest.raises(ValueError, match="unknown border"):
        crop_matrix(five_from_68(landmarks), roomy, CROP, 0.25, "wrap")
