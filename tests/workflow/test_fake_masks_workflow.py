"""Masks for the fakes datasets ship, real faces kept on an aligned release, and training
fakes scored apart: one Snakemake run on three fixture trees.

- ``ffpp``: FaceForensics++ at c23 (videos of rendered faces): Deepfakes with its released
  mask videos, Face2Face without, so its fakes take the difference to their target video.
- ``mine``: a csv of real and fake images (``paste``, ``tint``) that names no masks and no
  sources, as Celeb-DF does.
- ``rfw``: RFW's layout with real photographs cut as RFW cuts them, one upside down (dlib's
  HOG detector misses it), tested only; fairforge forges ``faceswap`` (its fakes) and ``sbi``
  (blends made for training) on it.

FFD trains on ffpp and mine pooled: its masks on FF++'s fakes are the released and the
difference masks (computed again here from the videos and the stored transforms), the csv's
fakes are left out of its training with their count in its log. RFW keeps its missed real.
RFW's detection row pools its real images and faceswap fakes only; the SBI blends have their
own row in the per-method table.
"""

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import yaml

from fairforge.faces.align import warp_crop
from fairforge.images import read_image, read_mask, write_image
from fairforge.metrics.detection import auc
from fairforge.video.ffmpeg import read_video, write_video
from released_cuts import real_faces, rfw_image
from snakemake_run import snakemake
from video_trees import CLIP_SIZE, PAIRS, attributes_csv, face_video, identity
from workflow_trees import face_mask, write_labelled_faces

pytestmark = pytest.mark.workflow

CROP = 64
METHODS = ("Deepfakes", "Face2Face")


def ffpp_tree(ff: Path) -> dict:
    """Six target videos; each pair of the official split swapped both ways by both methods;
    Deepfakes' mask videos: the region its faces were blended through."""
    ids = {f"{n:03d}": n for n in range(6)}
    people = {vid: identity(f"ff{vid}", n) for vid, n in ids.items()}
    for vid in ids:
        face_video(ff / f"original_sequences/youtube/c23/videos/{vid}.mp4", people[vid], f"ff{vid}")
    mask = np.repeat(np.round(face_mask(CLIP_SIZE) * 255).astype(np.uint8), 3, axis=2)
    for pair in (p for v in PAIRS.values() for p in v):
        for a, b in (pair, pair[::-1]):
            for method in METHODS:
                fake = ff / f"manipulated_sequences/{method}/c23/videos/{a}_{b}.mp4"
                face_video(fake, people[a], f"ff{a}", donor=people[b])
            masks = ff / f"manipulated_sequences/Deepfakes/masks/videos/{a}_{b}.mp4"
            write_video(masks, np.stack([mask] * 3), fps=10)
    (ff / "splits").mkdir()
    for split, pairs in PAIRS.items():
        (ff / "splits" / f"{split}.json").write_text(json.dumps(pairs))
    return {
        "adapter": "faceforensics",
        "root": str(ff),
        "split": "official",
        "group_by": ["group"],
        "forgery": False,
        "options": {
            "frames_per_video": 2,
            "methods": list(METHODS),
            "attributes": attributes_csv(ff / "groups.csv", ids),
        },
    }


def rfw_tree(root: Path) -> dict:
    """The nine real faces, one image each, in turn African and Asian; the last, African
    m.8, upside down."""
    faces = real_faces(("t1", "hanks", "hopper", "astronaut"))
    for k, face in enumerate(faces):
        race = ("African", "Asian")[k % 2]
        image, _ = rfw_image(face)
        if k == 8:
            image = np.ascontiguousarray(image[::-1, ::-1])
        write_image(root / "test" / "data" / race / f"m.{k}" / f"m.{k}_0001.jpg", image)
    return {
        "adapter": "rfw",
        "root": str(root),
        "options": {"races": ["African", "Asian"]},
        "group_by": ["race"],
        "split": "test_only",
        "forgery": ["faceswap", "sbi"],
    }


@pytest.fixture(scope="module")
def run(repo_root, tmp_path_factory):
    base = tmp_path_factory.mktemp("fake_masks")
    mine = base / "mine"
    write_labelled_faces(mine)
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {
        "ffpp": ffpp_tree(base / "FF"),
        "mine": {
            "adapter": "csv",
            "root": str(mine / "labels.csv"),
            "group_by": ["group"],
            "forgery": False,
        },
        "rfw": rfw_tree(base / "RFW"),
    }
    config["faces"] = {"crop_size": CROP}
    config["forgery"] = {"methods": ["faceswap", "sbi"]}
    config["training"].update(epochs=1, train_methods=[*METHODS, "paste"])
    # random weights: what is tested is the supervision, not FFD's ImageNet start
    config["detectors"] = {
        "ffd": {
            "arch": "ffd",
            "init": "random",
            "input_size": CROP,
            "train_dataset": ["ffpp", "mine"],
        }
    }
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    workdir = base / "work"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = ("results/detection_table.csv", "results/cross_manipulation.csv")
    snakemake(repo_root, workdir, "--cores", "2", *targets, "results/ffpp/samples.parquet")
    return workdir / "results", base / "FF"


def test_ffds_masks_on_ffpp_fakes_are_the_released_and_difference_masks(run):
    results, ff = run
    sources = pd.read_parquet(results / "ffpp" / "sources.parquet").set_index("image_id")
    samples = pd.read_parquet(results / "ffpp" / "samples.parquet")
    fakes = samples.loc[samples["label"] == 1].set_index("image_id")
    assert set(fakes["method"]) == set(METHODS) and len(fakes) == 2 * 6 * 2
    transforms = pd.concat(
        pd.read_parquet(p) for p in (results / "ffpp" / "faces" / "transforms").glob("*.parquet")
    )
    matrix = {
        i: np.asarray(m).reshape(2, 3) for i, m in zip(transforms["image_id"], transforms["matrix"])
    }
    masks = pd.read_parquet(results / "ffpp" / "imported_masks.parquet").set_index("image_id")
    assert masks["ok"].all(), masks["reason"].unique()
    root = results / "ffpp" / "video_source"  # where the sampled frames lie

    def grey(image: np.ndarray) -> np.ndarray:
        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)

    for image_id, fake in fakes.iterrows():
        src = sources.loc[image_id]
        index, name = int(src["frame_index"]), str(src["video_id"]).split("_", 1)[1]
        stored = read_mask(results / fake["mask_path"])
        crop = read_image(results / fake["path"])
        # the crop is the fake's frame aligned by the stored transform
        frame = read_image(root / src["path"])
        np.testing.assert_array_equal(warp_crop(frame, matrix[image_id], CROP), crop)
        if fake["method"] == "Deepfakes":  # its released mask, above grey level 1
            video = ff / f"manipulated_sequences/Deepfakes/masks/videos/{name}.mp4"
            released = warp_crop(read_video(video, [index])[0], matrix[image_id], CROP, "constant")
            expected = np.where(grey(released) > 1, 255, 0).astype(np.uint8)
            assert masks.loc[image_id, "mask_source"] == "released"
        else:  # the difference to frame `index` of its target video, over a tenth
            video = ff / f"original_sequences/youtube/c23/videos/{src['target_subject']}.mp4"
            source = warp_crop(read_video(video, [index])[0], matrix[image_id], CROP)
            expected = np.where(grey(cv2.absdiff(crop, source)) / 255 > 0.1, 255, 0)
            expected = expected.astype(np.uint8)
            assert masks.loc[image_id, "mask_source"] == "difference"
        assert stored.any(), image_id  # FFD is not supervised toward an empty map
        np.testing.assert_array_equal(stored, expected, err_msg=image_id)
        assert read_mask(results / fake["xray_path"]).any()


def test_fakes_without_a_mask_are_left_out_of_ffds_training_with_their_count(run):
    results, _ = run
    mine = pd.read_parquet(results / "mine" / "imported_masks.parquet")
    assert not mine["ok"].any()
    assert set(mine["reason"]) == {"no released mask and no source frame"}
    samples = pd.read_parquet(results / "mine" / "samples" / "crops.parquet")  # what trained
    train_paste = samples[(samples["split"] == "train") & (samples["method"] == "paste")]
    assert len(train_paste) and train_paste["mask_path"].isna().all()
    log = (results / "logs" / "train" / "ffd.log").read_text()
    counted = f"ffd (train): {len(train_paste)} fake(s) without mask_path left out of "
    assert counted + f"mask-supervised training (paste: {len(train_paste)})" in log, log[-2000:]
    assert (results / "models" / "ffd" / "model.pt").is_file()


def test_rfw_keeps_the_real_its_detector_missed(run):
    results, _ = run
    faces = pd.read_parquet(results / "rfw" / "faces.parquet").set_index("image_id")
    missed = faces.loc[~faces["ok"]]
    assert len(missed) == 1 and missed.index[0].endswith("m.8_0001")  # only the upside-down
    assert missed["reason"].iloc[0].endswith("(kept: the release's own alignment)")
    samples = pd.read_parquet(results / "rfw" / "samples" / "crops.parquet")  # its own crops
    real = samples[samples["label"] == 0]
    assert len(real) == len(faces) == 9
    assert real.set_index("image_id").loc[missed.index[0], "backend"] == "release_aligned"
    preds = pd.read_parquet(results / "predictions" / "ffd" / "rfw" / "clean.parquet")
    assert missed.index[0] in set(preds["sample_id"].str.split("__", n=1).str[1])
    rate = pd.read_csv(results / "rfw" / "face_detection_rate.csv").set_index("group")
    assert rate.loc["African", "n"] - rate.loc["African", "n_detected"] == 1
    assert rate.loc["Asian", "n"] == rate.loc["Asian", "n_detected"]


def test_rfws_detection_row_pools_its_own_fakes_and_the_blends_have_their_own(run):
    results, _ = run
    preds = pd.read_parquet(results / "predictions" / "ffd" / "rfw" / "clean.parquet")
    assert {"real", "faceswap", "sbi"} <= set(preds["method"])
    own = preds[preds["method"] != "sbi"]
    table = pd.read_csv(results / "detection_table.csv")
    row = table[(table["dataset"] == "rfw") & (table["unit"] == "frame")].iloc[0]
    assert row["n"] == len(own) and row["n_fake"] == (own["label"] == 1).sum()
    assert row["AUC"] == pytest.approx(
        auc(own["label"].to_numpy(), own["score"].to_numpy()), abs=1e-6
    )
    per_method = pd.read_csv(results / "detection_per_method.csv")
    blends = per_method[(per_method["dataset"] == "rfw") & (per_method["method"] == "sbi")]
    assert len(blends) == 1 and blends["n_fake"].iloc[0] == (preds["method"] == "sbi").sum()
