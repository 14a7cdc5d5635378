"""An aligned release keeps every real image (FairFD §3.3: RFW's aligned faces as they are):
a real whose face the detector misses stays a sample, cropped by the release's alignment,
marked so, and its miss is still counted per group.

The RFW tree holds real photographs cut as RFW cuts them (tests/helpers/released_cuts.py), one of them
upside down, which dlib's HOG detector does not find."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pandas as pd
import pytest

from fairforge.faces import detection_rate_by_group, process_faces
from fairforge.images import read_image, write_image
from fairforge.samples import RELEASE_BACKEND, build_samples, failure_counts
from fairforge.sources import ADAPTERS, build_sources
from released_cuts import real_faces, rfw_image

CROP = 128
RACES = ("African", "Asian")


@pytest.fixture(scope="module")
def rfw(tmp_path_factory):
    """``{root}/test/data/{Race}/{subject}/{subject}_0001.jpg``; the Asian subject m.03's
    image is upside down."""
    root = tmp_path_factory.mktemp("RFW")
    faces = real_faces(("hanks", "hopper", "astronaut")) + real_faces(("t1",))[:1]
    images = {}
    for k, face in enumerate(faces):
        race, subject = RACES[k % 2], f"m.0{k}"
        image, _ = rfw_image(face)
        if subject == "m.03":
            image = np.ascontiguousarray(image[::-1, ::-1])
        path = root / "test" / "data" / race / subject / f"{subject}_0001.jpg"
        write_image(path, image)
        images[subject] = read_image(path)
    sources = build_sources("rfw", root, "rfw", split="test_only", races=list(RACES))
    aligned = ADAPTERS.create("rfw").release_aligned(sources["path"])
    out = root / "results"
    faces = process_faces(sources, root, out, "crops", release_aligned=aligned, crop_size=CROP)
    return root, sources, faces, images


def test_a_real_the_detector_misses_keeps_the_releases_crop(rfw):
    root, sources, faces, images = rfw
    by_id = faces.set_index("image_id")
    missed = by_id.loc[by_id.index.str.contains("m.03")]
    assert len(missed) == 1
    row = missed.iloc[0]
    # the detector's miss stays a miss, with its reason; the image keeps its crop
    assert not row["ok"] and row["reason"] == "no face detected (kept: the release's own alignment)"
    crop = read_image(root / "results" / row["crop_path"])
    expected = cv2.resize(images["m.03"], (CROP, CROP), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(crop, expected)
    assert row["landmarks"] is None  # never forged: forgeries need the detector's landmarks
    assert by_id.drop(missed.index)["ok"].all()


def test_the_kept_real_is_a_sample_and_its_miss_is_counted_per_group(rfw):
    _, sources, faces, _ = rfw
    samples = build_samples("rfw", sources, faces, [])
    assert len(samples) == len(sources) == 4  # no real lost
    kept = samples.loc[samples["image_id"].str.contains("m.03")].iloc[0]
    assert kept["label"] == 0 and kept["method"] == "real" and kept["backend"] == RELEASE_BACKEND
    assert set(samples.loc[~samples["image_id"].str.contains("m.03"), "backend"]) == {"real"}
    rate = detection_rate_by_group(sources, faces).set_index("group")
    assert rate.loc["Asian", "n_detected"] == 1 and rate.loc["Asian", "n"] == 2
    assert json.loads(rate.loc["Asian", "failures"]) == {"no face detected": 1}
    failures = failure_counts(sources, faces, []).set_index(["stage", "group"])
    assert failures.loc[("faces", "Asian"), "n_failed"] == 1
    assert failures.loc[("faces", "African"), "n_failed"] == 0


def test_only_aligned_releases_keep_their_misses(tmp_path):
    paths = pd.Series(["a/1.jpg", "25_0_1_2017.jpg.chip.jpg", "wild/25_0_1_2017.jpg"])
    assert ADAPTERS.create("rfw").release_aligned(paths).all()
    assert ADAPTERS.create("fairface").release_aligned(paths).all()
    # UTKFace's "Aligned&Cropped Faces" are its chips; its in-the-wild photos are not
    assert ADAPTERS.create("utkface").release_aligned(paths).tolist() == [False, True, False]
    for loose in ("synthetic", "diveface", "vggface2", "csv"):
        assert not ADAPTERS.create(loose).release_aligned(paths).any(), loose
    # without the flag a miss is lost as before: no crop, no sample
    root = tmp_path / "one"
    face = real_faces(("hanks",))[0]
    image, _ = rfw_image(face)
    write_image(root / "Asian" / "m.0" / "m.0_0001.jpg", np.ascontiguousarray(image[::-1]))
    sources = build_sources("rfw", root, "rfw", split="test_only", races=["Asian"])
    faces = process_faces(sources, root, tmp_path / "out", crop_size=CROP)
    assert not faces["ok"].any() and (faces["crop_path"] == "").all()
    assert build_samples("rfw", sources, faces, []).empty
