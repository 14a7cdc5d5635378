"""Crops from any framing: a tightly framed real photograph, its crop's border fill, and the
share of the crop that lies outside the photo, per row and per group in the report.

The photographs are the Grace Hopper portrait matplotlib ships as sample data and
scikit-image's astronaut (Eileen Collins), cut around the face box dlib finds in them, as
UTKFace's chips and FairFace's padded images are cut.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pandas as pd
import pytest
import skimage.data
from matplotlib import cbook

from fairforge.columns import FACES_COLUMNS
from fairforge.faces import detect_and_align, detection_rate_by_group, process_faces
from fairforge.faces.align import (
    BORDERS,
    DEFAULT_BORDER,
    alignment_matrix,
    crop_inside,
    crop_matrix,
    fitted_margin,
    outside_fraction,
    template_points,
    warp_crop,
)
from fairforge.faces.landmarks import five_from_68
from fairforge.images import load_image, write_image
from fairforge.tables import crop_outside_cells

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


def utkface_chip(photo: np.ndarray, scale: float = 1.2, size: int = 200) -> np.ndarray:
    """A ``size``-px square chip of ``photo`` around its dlib face box enlarged ``scale``
    times: at 1.2 the default 0.25 margin puts about two thirds of a 128-px crop outside it,
    as the issue measured on 765 real UTKFace chips (68%)."""
    x0, y0, x1, y1 = detect_and_align(photo, crop_size=CROP).bbox
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, scale * (x1 - x0) / 2
    cut = photo[int(cy - half) : int(cy + half), int(cx - half) : int(cx + half)]
    return cv2.resize(np.ascontiguousarray(cut), (size, size), interpolation=cv2.INTER_AREA)


def test_a_tight_chip_gives_a_crop_of_face_not_padding_by_default():
    chip = utkface_chip(skimage.data.astronaut())
    assert DEFAULT_BORDER == "shrink"
    default = detect_and_align(chip, crop_size=CROP)
    black = detect_and_align(chip, crop_size=CROP, border="constant")
    assert default.ok and black.ok
    # With the margin kept, two thirds of the crop is black padding.
    assert black.outside_fraction > 0.6
    assert black_share(black.crop) == pytest.approx(black.outside_fraction, abs=0.02)
    # Shrunk to what the chip holds, the crop is mostly the photo (the face and its hair);
    # what the tight template box still misses above the brows is the edge repeated.
    assert default.outside_fraction < 0.35
    assert black_share(default.crop) < 0.02

    # The face is larger in the crop: the 68 landmarks span more of it.
    def span(result) -> float:
        return float(np.ptp(result.landmarks[:, 0]))

    assert span(default) > 1.3 * span(black)
    # The same face in the roomy photo keeps its full margin, with nothing outside.
    roomy = detect_and_align(skimage.data.astronaut(), crop_size=CROP)
    assert roomy.outside_fraction == 0.0
    np.testing.assert_allclose(span(roomy), span(black), rtol=0.1)


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
    matrix = crop_matrix(five_from_68(landmarks), (90, 90, 3), CROP, 0.25)
    np.testing.assert_array_equal(matrix, alignment_matrix(landmarks, CROP, 0.0))
    assert outside_fraction(matrix, (90, 90, 3), CROP) > 0
    matrix = crop_matrix(five_from_68(landmarks), (90, 90, 3), CROP, 0.25, "constant")
    np.testing.assert_array_equal(matrix, alignment_matrix(landmarks, CROP, 0.25))
    with pytest.raises(ValueError, match="unknown border"):
        crop_matrix(five_from_68(landmarks), roomy, CROP, 0.25, "wrap")
