"""Frame-mode variants: the operation degrades the whole frame, face detection runs again."""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd
import pytest
from matplotlib import cbook

from fairforge.faces import detect_and_align
from fairforge.images import read_image, write_image
from fairforge.perturb import PerturbationError
from fairforge.perturb.variants import (
    apply_at,
    at_crop,
    at_frame,
    is_frame_variant,
    is_video_variant,
    parse_variant,
)
from fairforge.video import (
    FrameVariantSettings,
    detection_under_perturbation,
    frame_variant_samples,
    loading_variant,
    paste_back,
    predict_samples_path,
)

CROP = 64
FACES = {"crop_size": CROP, "margin": 0.25}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Two source photos (a portrait; the same in dim light), a real sample of each and a
    generated fake (a red-tinted crop with a mask) of the first."""
    root = tmp_path_factory.mktemp("frames")
    img = read_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))
    img = cv2.resize(img, (240, 282), interpolation=cv2.INTER_AREA)
    data, results = root / "data", root / "results"
    write_image(data / "a.png", img)
    write_image(data / "b.png", (img // 5).astype(np.uint8))
    clean = detect_and_align(img, **FACES)
    assert clean.ok
    fake = clean.crop.copy()
    fake[..., 0] = np.clip(fake[..., 0].astype(int) + 60, 0, 255)
    mask = np.zeros((CROP, CROP, 3), np.uint8)
    mask[16:48, 16:48] = 255
    write_image(results / "fakes/a.png", fake)
    write_image(results / "fakes/a_mask.png", mask)
    write_image(results / "crops/a.png", clean.crop)
    write_image(results / "crops/b.png", clean.crop)
    sources = pd.DataFrame({"image_id": ["a", "b"], "path": ["a.png", "b.png"]})
    samples = pd.DataFrame(
        {
            "sample_id": ["fake__a", "real__a", "real__b"],
            "image_id": ["a", "a", "b"],
            "split": ["test", "test", "test"],
            "label": [1, 0, 0],
            "method": ["faceswap", "real", "real"],
            "group": ["g1", "g1", "g2"],
            "path": ["fakes/a.png", "crops/a.png", "crops/b.png"],
            "mask_path": ["fakes/a_mask.png", None, None],
            "origin": ["generated", "imported", "imported"],
        }
    )
    return {
        "data": data,
        "results": results,
        "sources": sources,
        "samples": samples,
        "image": img,
        "clean": clean,
    }


def test_variant_grammar_has_a_frame_mode():
    assert parse_variant("jpeg@30~frame") == ("jpeg", 30)
    assert apply_at("jpeg@30~frame") == "frame" and apply_at("jpeg@30") == "crop"
    assert at_crop("jpeg@30~frame") == "jpeg@30" and at_frame("jpeg@30") == "jpeg@30~frame"
    assert is_frame_variant("vid_h264@40~frame") and not is_video_variant("vid_h264@40~frame")
    assert not is_frame_variant("clean") and apply_at("clean") == "crop"
    with pytest.raises(PerturbationError):
        parse_variant("jpeg@30~crop")
    with pytest.raises(PerturbationError):
        at_frame("clean")
    assert loading_variant("jpeg@30~frame") == "clean" and loading_variant("jpeg@30") == "jpeg@30"
    assert predict_samples_path("d", "jpeg@30~frame").endswith(
        "d/frame_variants/jpeg@30~frame/samples.parquet"
    )


def test_paste_back_puts_the_fake_where_the_face_was(world):
    img, clean = world["image"], world["clean"]
    fake = np.zeros_like(clean.crop)
    mask = np.zeros(clean.crop.shape[:2], np.uint8)
    mask[16:48, 16:48] = 255
    out = paste_back(img, fake, clean.matrix, mask)
    # Re-aligning the composite gives back the fake inside the mask, the photo outside it.
    again = cv2.warpAffine(out, clean.matrix, (CROP, CROP), flags=cv2.INTER_LINEAR)
    assert again[22:42, 22:42].max() <= 8
    assert np.abs(again[2:8, 2:8].astype(int) - clean.crop[2:8, 2:8]).mean() < 6
    # outside the mask's square, taken back to the photo, the photo is untouched
    inv = cv2.invertAffineTransform(clean.matrix)
    corners = cv2.transform(np.array([[[15, 15], [49, 15], [49, 49], [15, 49]]], np.float32), inv)
    inside = np.zeros(img.shape[:2], np.uint8)
    cv2.fillConvexPoly(inside, np.round(corners[0]).astype(np.int32), 1)
    far = cv2.dilate(inside, np.ones((5, 5), np.uint8)) == 0
    assert far.mean() > 0.5 and np.array_equal(out[far], img[far])


def test_frame_variant_reruns_detection_and_counts_failures(world, tmp_path):
    out = world["results"] / "frame_variants/brightness@1~frame/crops/shard_0"
    table = frame_variant_samples(
        world["samples"],
        world["sources"],
        "brightness@1~frame",
        FrameVariantSettings(
            root=world["data"], results_root=world["results"], faces=FACES, splits=["test"]
        ),
        out_dir=out,
    )
    assert list(table["sample_id"]) == ["fake__a", "real__a", "real__b"]
    ok = table.set_index("sample_id")["ok"]
    # brightness -60: the portrait is still found; in the dim copy the face sinks into black
    # and is not, which is recorded as a detection failure, not dropped
    assert ok["real__a"] and ok["fake__a"] and not ok["real__b"]
    reason = table.set_index("sample_id").loc["real__b", "reason"]
    assert reason.startswith("face detection under brightness@1~frame: no face")
    crop = read_image(world["results"] / table.set_index("sample_id").loc["real__a", "path"])
    assert crop.shape == (CROP, CROP, 3)
    # the degraded frame, not the crop, was darkened: its crop is darker than the clean one
    assert crop.mean() < world["clean"].crop.mean() - 30
    # the fake crop carries the fake's redder face into the degraded frame
    fake = read_image(world["results"] / table.set_index("sample_id").loc["fake__a", "path"])
    assert (fake[24:40, 24:40, 0].astype(int) - crop[24:40, 24:40, 0]).mean() > 20
    rates = detection_under_perturbation({"brightness@1~frame": table}).set_index("group")
    assert rates.loc["g1", "rate"] == 1.0 and rates.loc["g2", "rate"] == 0.0
    assert rates.loc["g2", "failures"] == '{"no face detected": 1}'
    assert rates.loc["(all)", "n"] == 3 and set(rates["operation"]) == {"brightness@1"}


def test_frame_variant_is_deterministic_and_refuses_crop_variants(world, tmp_path):
    settings = FrameVariantSettings(root=world["data"], results_root=world["results"], faces=FACES)
    real = world["samples"].iloc[[1]]
    runs = [
        frame_variant_samples(
            real, world["sources"], "gaussian_noise@2~frame", settings, out_dir=world["results"] / d
        )
        for d in ("n1", "n2")
    ]
    a, b = (read_image(world["results"] / t["path"].iloc[0]) for t in runs)
    assert np.array_equal(a, b)
    with pytest.raises(PerturbationError):
        frame_variant_samples(real, world["sources"], "jpeg@30", settings, out_dir=tmp_path)
