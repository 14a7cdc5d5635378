"""The masks of the fakes a dataset ships: the released mask, else the difference to the frame
the fake was made from, on the fake's crop (fairforge.forgery.difference_masks,
fairforge.video.fake_masks), and FaceForensics++'s references (its mask videos, the target
video of each fake).

The fakes are made of a real photograph (Grace Hopper, cut as a FaceForensics++ frame): her
face, tinted inside a known region, is the fake; the untouched frame is its source, and the
region, as an image, its released mask. The faces stage aligns the fake as the workflow does;
the masks are then checked against masks computed here from the frames and the stored
transform with OpenCV alone, and against the known region."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

import fairforge.video  # noqa: F401  (registers the faceforensics adapter)
from fairforge.data import FaceDataset, mask_supervised, supervision_columns
from fairforge.detectors import create_detector
from fairforge.faces import detect_faces, face_transforms, predict_landmarks, process_faces
from fairforge.forgery.base import ForgeryError, polygon_mask
from fairforge.forgery.difference_masks import (
    DIFFERENCE_THRESHOLD,
    difference_mask,
    mask_xray,
    released_mask,
)
from fairforge.images import read_image, read_mask, write_image
from fairforge.samples import build_samples
from fairforge.sources import ADAPTERS
from fairforge.training.detector import TrainConfig, online_method
from fairforge.video.fake_masks import NO_REFERENCE, fake_masks
from released_cuts import ffpp_frame, real_faces

CROP = 256  # the face is shrunk by under 2: the crop is one bilinear warp of the frame
TINT = np.array([1.35, 0.75, 0.7], np.float32)


# ----------------------------------------------------------------------- the mask functions


def test_difference_mask_thresholds_the_grey_difference_at_ffds_tenth():
    source = np.full((4, 4, 3), 100, np.uint8)
    fake = source.copy()
    fake[0, 0] = 125  # grey difference 25/255 < 0.1
    fake[1, 1] = 126  # 26/255 > 0.1
    fake[2, 2, 0] = 255  # red only: 0.299 * 155 = 46 grey levels
    mask = difference_mask(fake, source)
    assert DIFFERENCE_THRESHOLD == 0.1
    assert mask.dtype == np.uint8 and set(np.unique(mask)) == {0, 255}
    assert np.argwhere(mask).tolist() == [[1, 1], [2, 2]]
    with pytest.raises(ForgeryError, match="differ in shape"):
        difference_mask(fake[:2], source)


def test_released_mask_keeps_what_is_above_grey_level_one():
    frame = np.zeros((3, 3, 3), np.uint8)
    frame[0, 0], frame[1, 1], frame[2, 2] = 1, 2, 255
    assert np.argwhere(released_mask(frame)).tolist() == [[1, 1], [2, 2]]
    assert released_mask(frame[:, :, 0]).sum() == 2 * 255  # a grey frame too


def test_mask_xray_is_the_blending_boundary_of_the_softened_mask():
    lm = np.zeros((68, 2), np.float32)
    lm[36:42], lm[42:48] = (40, 50), (80, 50)  # eyes 40 px apart
    mask = np.zeros((128, 128), np.uint8)
    mask[30:100, 30:100] = 255
    xray = mask_xray(mask, lm)
    assert xray.dtype == np.uint8 and xray.max() >= 250  # 4 M (1 - M) reaches 1 at M = 1/2
    assert xray[65, 65] == 0 and xray[0, 0] == 0 and xray[65, 30] > 200  # the edge lights
    with pytest.raises(ForgeryError, match="empty"):
        mask_xray(np.zeros_like(mask), lm)


# ------------------------------------------------------------------- FaceForensics++ layout


def ff_tree(root: Path) -> Path:
    """FF++ at c23 as frame folders: originals 000-003, Deepfakes (with its mask folders)
    and Face2Face (without)."""
    for vid in ("000", "001", "002", "003"):
        write_image(root / f"original_sequences/youtube/c23/images/{vid}/0000.png", _noise(vid))
    for method in ("Deepfakes", "Face2Face"):
        for name in ("000_001", "002_003"):
            folder = f"manipulated_sequences/{method}/c23/images/{name}"
            write_image(root / folder / "0000.png", _noise(method + name))
            if method == "Deepfakes":
                mask = f"manipulated_sequences/{method}/masks/images/{name}/0000.png"
                write_image(root / mask, _noise("mask" + name))
    (root / "splits").mkdir(parents=True)
    for split, pair in (("train", ["000", "001"]), ("val", []), ("test", ["002", "003"])):
        (root / "splits" / f"{split}.json").write_text(json.dumps([pair] if pair else []))
    return root


def _noise(key: str) -> np.ndarray:
    return np.random.default_rng(sum(map(ord, key))).integers(0, 255, (24, 32, 3), np.uint8)


def test_faceforensics_names_its_mask_folders_and_each_fakes_target_video(tmp_path):
    ff = ff_tree(tmp_path / "FF")
    adapter = ADAPTERS.create("faceforensics")
    listing = adapter.list(tmp_path / "out", folder=ff, frames_per_video=1)
    fakes = listing.loc[listing["label"] == 1]
    refs = adapter.fake_references(fakes, tmp_path / "out", folder=ff, compression="c23")
    by_video = dict(zip(fakes["video_id"], refs.itertuples(index=False)))
    deepfake, face2face = by_video["Deepfakes_000_001"], by_video["Face2Face_002_003"]
    assert deepfake.mask_file == str(ff / "manipulated_sequences/Deepfakes/masks/images/000_001")
    assert face2face.mask_file == ""  # Face2Face's masks were not downloaded here
    # the fake 000_001 is video 000 with 001's face: its frames are 000's
    assert deepfake.source_file == str(ff / "original_sequences/youtube/c23/images/000")
    assert face2face.source_file == str(ff / "original_sequences/youtube/c23/images/002")
    assert list(refs["image_id"]) == list(fakes["image_id"])
    # a dataset that names no references gives none
    csv = ADAPTERS.create("csv").fake_references(fakes, tmp_path)
    assert (csv["mask_file"] == "").all() and (csv["source_file"] == "").all()


# ------------------------------------------------------------- masks on a real photograph


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A dataset's fakes as it ships them, made of a real frame: ``tinted`` (its released
    mask an image, its source the frame), ``unmasked`` (source only), ``orphan`` (neither),
    ``stale`` (its crop replaced since the faces stage); and their faces rows."""
    root = tmp_path_factory.mktemp("shipped")
    face = real_faces(("hopper",))[0]
    frame, _ = ffpp_frame(face, 480)
    write_image(root / "source.png", frame)
    # the manipulated region: the face's landmark hull, grown, in frame pixels
    region = polygon_mask(face_in_frame(frame), frame.shape)
    region = cv2.dilate(region, np.ones((9, 9), np.uint8))
    fake = frame.astype(np.float32)
    fake[region > 0] *= TINT
    fake = np.clip(fake + 0.5, 0, 255).astype(np.uint8)
    write_image(root / "mask.png", np.repeat(region[:, :, None], 3, axis=2))
    rows = []
    for name in ("tinted", "unmasked", "orphan", "stale"):
        write_image(root / f"{name}.png", fake)
        rows.append({"image_id": name, "path": f"{name}.png", "ok": True, "reason": ""})
    sources = pd.DataFrame(rows).assign(label=1, method="shipped")
    faces = process_faces(sources, root, root, "crops", crop_size=CROP, with_matrix=True)
    assert faces["ok"].all(), faces["reason"].tolist()
    write_image(root / "crops" / "stale.png", np.zeros((CROP, CROP, 3), np.uint8))
    refs = pd.DataFrame(
        {
            "image_id": ["tinted", "unmasked", "orphan", "stale"],
            "mask_file": [str(root / "mask.png"), "", "", str(root / "mask.png")],
            "source_file": [str(root / "source.png")] * 2 + ["", str(root / "source.png")],
        }
    )
    aligned = faces.drop(columns="matrix").merge(face_transforms(faces), on="image_id")
    masks = fake_masks(sources, aligned, refs, root, root, "masks/shard_0")
    return root, frame, fake, region, faces.set_index("image_id"), masks.set_index("image_id")


def face_in_frame(frame: np.ndarray) -> np.ndarray:
    """The 68 landmarks of the frame's face (dlib HOG and its shape predictor)."""
    return predict_landmarks(frame, detect_faces(frame, "hog", upsample=1)[0])


def _warp(image: np.ndarray, matrix, border: int) -> np.ndarray:
    m = np.asarray(matrix, np.float64).reshape(2, 3)
    return cv2.warpAffine(image, m, (CROP, CROP), flags=cv2.INTER_LINEAR, borderMode=border)


def test_a_released_mask_is_the_dataset_mask_on_the_fakes_crop(shipped):
    root, _, _, region, faces, masks = shipped
    row = masks.loc["tinted"]
    assert row["ok"] and row["mask_source"] == "released"
    assert row["sample_id"] == "fake__tinted"
    stored = read_mask(root / row["mask_path"])
    # independently: the region warped by the faces stage's transform, above grey level 1
    expected = (_warp(region, faces.loc["tinted", "matrix"], cv2.BORDER_CONSTANT) > 1) * 255
    np.testing.assert_array_equal(stored, expected.astype(np.uint8))
    assert 0.2 < (stored > 0).mean() < 0.8  # the face, not the crop
    xray = read_mask(root / row["xray_path"])
    assert xray[stored > 0].mean() < xray.max() and (xray[stored == 0] > 0).any()


def test_a_difference_mask_is_the_fake_against_its_aligned_source(shipped):
    root, frame, _, region, faces, masks = shipped
    row = masks.loc["unmasked"]
    assert row["ok"] and row["mask_source"] == "difference"
    stored = read_mask(root / row["mask_path"])
    crop = read_image(root / faces.loc["unmasked", "crop_path"])
    source = _warp(frame, faces.loc["unmasked", "matrix"], cv2.BORDER_REPLICATE)
    grey = cv2.cvtColor(cv2.absdiff(crop, source), cv2.COLOR_RGB2GRAY) / 255.0
    np.testing.assert_array_equal(stored, np.where(grey > 0.1, 255, 0).astype(np.uint8))
    # it lies in the tinted region (its edge blurred by the warp) and covers most of it
    truth = _warp(region, faces.loc["unmasked", "matrix"], cv2.BORDER_CONSTANT) > 127
    inside = cv2.dilate(truth.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    assert (stored > 0)[~inside].mean() < 0.01
    assert (stored > 0)[truth].mean() > 0.6


def test_a_fake_without_references_or_with_a_stale_crop_has_no_mask(shipped):
    root, *_, masks = shipped
    assert not masks.loc["orphan", "ok"] and masks.loc["orphan", "reason"] == NO_REFERENCE
    assert not masks.loc["stale", "ok"] and "not its frame aligned" in masks.loc["stale", "reason"]
    assert masks.loc[["orphan", "stale"], "mask_path"].isna().all()
    assert sorted(p.name for p in (root / "masks" / "shard_0").iterdir()) == [
        "fake__tinted_mask.png",
        "fake__tinted_xray.png",
        "fake__unmasked_mask.png",
        "fake__unmasked_xray.png",
    ]


# -------------------------------------------------------------- samples and training


def test_imported_fakes_take_their_masks_and_a_fake_without_one_is_left_out(shipped, caplog):
    root, _, _, _, faces, masks = shipped
    sources = pd.DataFrame(
        {
            "image_id": list(faces.index),
            "split": "train",
            "group": "g",
            "subject_id": "s",
            "label": 1,
            "method": "shipped",
        }
    )
    faces_rows = faces.reset_index()[["image_id", "ok", "reason", "crop_path"]]
    samples = build_samples("d", sources, faces_rows, [], masks.reset_index())
    by_id = samples.set_index("image_id")
    assert by_id.loc["tinted", "mask_path"] == masks.loc["tinted", "mask_path"]
    assert by_id.loc["unmasked", "xray_path"] == masks.loc["unmasked", "xray_path"]
    assert by_id.loc[["orphan", "stale"], "mask_path"].isna().all()
    with caplog.at_level(logging.WARNING, logger="fairforge.data"):
        kept = mask_supervised(samples, ["mask_path"], "ffd")
    assert sorted(kept["image_id"]) == ["tinted", "unmasked"]
    assert "ffd: 2 fake(s) without mask_path left out of mask-supervised training" in caplog.text
    assert "shipped: 2" in caplog.text
    # nothing gives a fake an empty mask: the dataset refuses one without
    ds = FaceDataset(samples, root, 64, (0.5,) * 3, (0.5,) * 3, mask_column="mask_path")
    position = int(np.flatnonzero(samples["image_id"] == "orphan")[0])
    with pytest.raises(ValueError, match="a fake without mask_path"):
        ds[position]
    item = FaceDataset(
        kept, root, 64, (0.5,) * 3, (0.5,) * 3, mask_column="mask_path", xray_column="xray_path"
    )[0]
    assert item["mask"].shape == (1, 64, 64) and item["mask"].max() == 1.0
    assert item["xray"].shape == (1, 64, 64) and 0 < float(item["xray"].max()) <= 1.0


def test_face_xray_learns_the_datasets_xrays_when_asked():
    blended = create_detector("face_xray", input_size=32, backbone="hrnet_w18_small")
    difference = create_detector(
        "face_xray", input_size=32, backbone="hrnet_w18_small", xray_supervision="difference"
    )
    cfg = TrainConfig(arch="face_xray")
    assert online_method(cfg, blended) == "xray" and online_method(cfg, difference) is None
    assert supervision_columns(blended) == ["mask_path"]
    assert supervision_columns(difference) == ["mask_path", "xray_path"]
    with pytest.raises(ValueError, match="xray_supervision"):
        create_detector(
            "face_xray", input_size=32, backbone="hrnet_w18_small", xray_supervision="x"
        )
    # the stored map is the target: a batch's xray, not one rebuilt from its mask
    difference.train()
    x = torch.randn(2, 3, 32, 32)
    labels = torch.tensor([0, 1])
    xray = torch.zeros(2, 1, 32, 32)
    xray[1, :, 8:24, 8:24] = 0.5
    logits = difference(x)
    out = difference._outputs["xray"]  # kept by the forward pass, read by the loss
    loss = difference.loss(logits, labels, {"xray": xray, "mask": torch.zeros_like(xray)})
    target = torch.nn.functional.adaptive_avg_pool2d(xray, out.shape[-2:])
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    expected = bce(logits, labels.float()) + difference.map_weight * bce(out, target)
    torch.testing.assert_close(loss, expected)
