"""Scoring videos: prediction shards keep a video whole, and a test protocol scores the
``frames_test`` frames it picks of each video."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairforge.cli import main
from fairforge.config import ConfigError, validate_config
from fairforge.data import frames_to_score
from fairforge.detector_kinds import frame_pick, predict
from fairforge.detectors import create_detector
from fairforge.images import write_image
from fairforge.manifest import read_manifest, write_manifest
from fairforge.sharding import (
    prediction_shard_ids,
    shard_ids,
    shard_image_ids,
    video_shards,
)
from fairforge.training.detector import TrainConfig, save_checkpoint
from fairforge.workflow import scoring_settings

# ------------------------------------------------------------------ the shard planner


def test_images_are_sharded_by_rows():
    shards = video_shards([None] * 7, 3)
    assert list(shards) == [0, 0, 0, 1, 1, 1, 2]
    assert list(video_shards([np.nan, "", None], 2)) == [0, 0, 1]  # no video: a unit each


def test_a_video_that_straddles_a_boundary_goes_whole_to_the_shard_it_starts_in():
    # rows 0-1 images, rows 2-4 video a (a row cut at 4 would split it), rows 5-6 video b
    videos = [None, None, "a", "a", "a", "b", "b"]
    assert list(video_shards(videos, 4)) == [0, 0, 0, 0, 0, 1, 1]
    # a video longer than a shard leaves the shard it fills empty
    assert list(video_shards(["a"] * 5 + ["b"], 2)) == [0, 0, 0, 0, 0, 2]
    # frames of a video need not be contiguous: they follow its first row
    assert list(video_shards(["a", "b", "b", "a"], 2)) == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="at least 1"):
        video_shards(["a"], 0)


def _sources(tmp_path, video_ids, shard_size):
    frame = pd.DataFrame(
        {
            "image_id": [f"i{i:02d}" for i in range(len(video_ids))],
            "video_id": pd.Series(video_ids, dtype=object),
        }
    )
    path = tmp_path / "sources.parquet"
    write_manifest(frame, path, row_group_size=shard_size)
    return frame, path


def test_prediction_shards_cover_every_row_once_and_never_split_a_video(tmp_path):
    videos = [f"v{i // 3}" for i in range(10)]  # 3 frames a video: v1 and v2 straddle 4 and 8
    frame, path = _sources(tmp_path, videos, 4)
    shards = [prediction_shard_ids(path, s, 4) for s in shard_ids(len(frame), 4)]
    assert shards == [
        ["i00", "i01", "i02", "i03", "i04", "i05"],  # v0 and v1
        ["i06", "i07", "i08"],  # v2
        ["i09"],  # v3
    ]
    owner = {i: n for n, ids in enumerate(shards) for i in ids}
    assert sorted(owner) == frame["image_id"].tolist()
    assert (
        frame.groupby("video_id")["image_id"]
        .agg(lambda ids: len({owner[i] for i in ids}))
        .eq(1)
        .all()
    )


def test_prediction_shards_read_from_a_manifest_follow_the_planner(tmp_path):
    videos = [None, "a", "a", "", "b", "a", None, "c", "c", "c"]
    frame, path = _sources(tmp_path, videos, 3)
    planned = video_shards(videos, 3)
    for shard in shard_ids(len(frame), 3):
        expected = frame.loc[planned == int(shard), "image_id"].tolist()
        assert prediction_shard_ids(path, shard, 3) == expected
    assert prediction_shard_ids(path, "002", 3) == ["i06", "i07", "i08", "i09"]


def test_prediction_shards_of_images_are_the_row_shards(tmp_path):
    frame = pd.DataFrame({"image_id": [f"i{i:02d}" for i in range(9)]})
    path = tmp_path / "images.parquet"
    write_manifest(frame, path, row_group_size=4)
    for shard in shard_ids(len(frame), 4):
        assert prediction_shard_ids(path, shard, 4) == shard_image_ids(path, shard, 4)


# ------------------------------------------------------------- frames a test protocol picks


def _videos(lengths, methods=None) -> pd.DataFrame:
    rows = []
    for v, n in enumerate(lengths):
        method = (methods or ["real"] * len(lengths))[v]
        for f in reversed(range(n)):  # rows out of frame order on purpose
            rows.append(
                {
                    "sample_id": f"{method}_v{v}_f{f:02d}",
                    "dataset": "d",
                    "split": "test",
                    "label": int(method != "real"),
                    "method": method,
                    "group": "g",
                    "subject_id": f"s{v}",
                    "video_id": f"v{v}",
                    "frame_index": f * 10,
                    "path": f"{method}_v{v}_f{f:02d}.png",
                }
            )
    return pd.DataFrame(rows)


def test_frames_are_picked_spaced_or_first_per_video():
    frame = _videos([9, 2, 5], ["real", "real", "faceswap"])

    def picked(pick, frames):
        kept = frames_to_score(frame, frames, pick)
        return {v: sorted(g["frame_index"]) for v, g in kept.groupby("video_id")}

    assert picked("spaced", 3) == {"v0": [0, 40, 80], "v1": [0, 10], "v2": [0, 20, 40]}
    assert picked("first", 3) == {"v0": [0, 10, 20], "v1": [0, 10], "v2": [0, 10, 20]}
    assert frames_to_score(frame, None, "spaced") is frame
    kept = frames_to_score(frame, 3, "spaced")
    assert kept.index.is_monotonic_increasing  # rows keep their order
    # a real video and its fake (same video_id, another method) are two videos
    fake = _videos([4], ["faceswap"])
    both = pd.concat([_videos([4]), fake], ignore_index=True)
    assert len(frames_to_score(both, 2, "first")) == 4
    # an image dataset: every image is a video of one frame
    images = frame.drop(columns=["video_id", "frame_index"])
    assert len(frames_to_score(images, 1, "spaced")) == len(images)
    with pytest.raises(ValueError, match="picked"):
        frames_to_score(frame, 3, "random")
    with pytest.raises(ValueError, match="at least 1"):
        frames_to_score(frame, 0, "first")


def test_a_video_detector_takes_a_clip_the_others_spaced_frames():
    assert frame_pick("conv_lstm") == "first" and frame_pick("meso4") == "spaced"
    assert frame_pick("conv_lstm", "spaced") == "spaced"


def test_prediction_jobs_get_the_recipes_frames_test_and_the_detectors_pick():
    config = validate_config(
        {
            "detectors": {
                "dfb": {"arch": "meso4"},
                "pf": {"arch": "meso4", "recipe": "patch_forensics"},
                "lstm": {"arch": "conv_lstm", "frames_test": 8, "frames_test_pick": "spaced"},
            }
        }
    )
    assert scoring_settings(config, "dfb") == {"frames_test": 32, "frames_test_pick": None}
    assert scoring_settings(config, "pf") == {"frames_test": None, "frames_test_pick": None}
    assert scoring_settings(config, "lstm") == {"frames_test": 8, "frames_test_pick": "spaced"}
    with pytest.raises(ConfigError, match="frames_test_pick"):
        validate_config({"detectors": {"x": {"arch": "meso4", "frames_test_pick": "random"}}})


# ------------------------------------------------------------------ scoring tiny videos


def _checkpoint(tmp_path, arch, **model):
    """An untrained detector saved as a checkpoint: scoring needs weights, not good ones."""
    net = create_detector(arch, **model)
    cfg = TrainConfig(arch=arch, model=model, input_size=32, precision="fp32")
    path = tmp_path / f"{arch}.pt"
    save_checkpoint(path, net, cfg, model, 32, epoch=0, val_auc=float("nan"))
    return path


def _write_images(samples, root):
    rng = np.random.default_rng(0)
    for path in samples["path"]:
        write_image(root / path, rng.integers(0, 256, (32, 32, 3)).astype(np.uint8))


def test_a_frame_detector_scores_only_the_frames_picked(tmp_path):
    samples = _videos([5, 3])
    _write_images(samples, tmp_path)
    ckpt = _checkpoint(tmp_path, "meso4")
    preds = predict(ckpt, samples, tmp_path, "m", splits=("test",), frames_test=2)
    picked = {v: sorted(g["frame_index"]) for v, g in preds.groupby("video_id")}
    assert picked == {"v0": [0, 40], "v1": [0, 20]}  # the predictions say which frames
    every = predict(ckpt, samples, tmp_path, "m", splits=("test",))
    assert len(every) == 8
    same = every.set_index("sample_id").loc[preds["sample_id"], "score"].to_numpy()
    np.testing.assert_allclose(preds["score"].to_numpy(), same, rtol=1e-5)


def test_the_command_line_scores_every_frame_unless_told(tmp_path):
    samples = _videos([5])
    _write_images(samples, tmp_path)
    write_manifest(samples, tmp_path / "samples.parquet", contract="samples")
    ckpt = _checkpoint(tmp_path, "meso4")
    common = ["predict", "--checkpoint", str(ckpt), "--samples", str(tmp_path / "samples.parquet")]
    common += ["--results", str(tmp_path)]
    assert main([*common, "--out", str(tmp_path / "all.parquet")]) == 0
    args = ["--frames-test", "2", "--frames-test-pick", "first"]
    assert main([*common, *args, "--out", str(tmp_path / "two.parquet")]) == 0
    assert len(read_manifest(tmp_path / "all.parquet")) == 5
    assert sorted(read_manifest(tmp_path / "two.parquet")["frame_index"]) == [0, 10]


def test_a_video_detector_gives_one_row_per_video_across_prediction_shards(tmp_path):
    """Two videos of 4 and 3 frames, a fake of the first; prediction shards of 3 source rows
    would cut the first video after its third frame."""
    real = _videos([4, 3])
    fake = _videos([4], ["faceswap"])
    samples = pd.concat([real, fake], ignore_index=True)
    _write_images(samples, tmp_path)
    real_ids = real.assign(image_id=real["sample_id"].str.replace("real_", "", regex=False))
    sources = real_ids[["image_id", "video_id"]].sort_values("image_id").reset_index(drop=True)
    samples["image_id"] = samples["sample_id"].str.split("_", n=1).str[1]
    path = tmp_path / "sources.parquet"
    write_manifest(sources, path, row_group_size=3)
    # a small timm trunk under the LSTM keeps the test quick; the wiring is the same
    ckpt = _checkpoint(tmp_path, "conv_lstm", hidden=8, frames=2, backbone="resnet10t")
    parts = []
    for shard in shard_ids(len(sources), 3):
        ids = prediction_shard_ids(path, shard, 3)
        part = samples.loc[samples["image_id"].isin(ids)]
        if len(part):
            parts.append(predict(ckpt, part, tmp_path, "lstm", splits=("test",), frames_test=3))
    preds = pd.concat(parts, ignore_index=True)
    assert sorted(zip(preds["method"], preds["video_id"])) == [
        ("faceswap", "v0"),
        ("real", "v0"),
        ("real", "v1"),
    ]
    # the first three frames of each video (a clip), and the score is theirs alone
    assert [list(f) for f in preds["scored_frames"]] == [[0, 10, 20]] * 3
    clip = samples.loc[samples["frame_index"] <= 20]
    alone = predict(ckpt, clip, tmp_path, "lstm", splits=("test",))
    key = ["method", "video_id"]
    merged = preds.merge(alone, on=key, suffixes=("", "_alone"))
    np.testing.assert_allclose(merged["score"], merged["score_alone"], rtol=1e-5)
