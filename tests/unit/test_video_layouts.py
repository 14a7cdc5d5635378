"""UADFV, DF-TIMIT, ForgeryNet and Celeb-DF v1 in their released layouts.

Each fixture tree is written here as its release lays it out (folder and file names, label
lists, VidTIMIT's suffix-less JPEG frames), with tiny videos written by the project's ffmpeg
helper: noise for the listing tests, talking synthetic faces for the run. One shared tiny
Snakemake run takes the four of them with Celeb-DF v2 (on which the detector trains: its
official split with a validation part carved from the train part) and DiveFace (its 70/30
split by identity) up to every dataset's samples and predictions.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import fairforge.video  # noqa: F401  (registers the frame sampler)
from fairforge.sources import ADAPTERS, SourceError, build_sources
from fairforge.sources.split import linked_subjects
from video_trees import (
    FRAMES,
    celebdf_v1_first_release,
    dftimit_tree,
    forgerynet_tree,
    tiny_video,
    uadfv_tree,
)

# --------------------------------------------------------------------------- the listings


def videos_of(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop_duplicates("video_id").set_index("video_id")


def test_uadfv_pairs_share_a_subject_and_split(tmp_path: Path):
    root = uadfv_tree(tmp_path / "UADFV", pairs=5)
    tiny_video(root / "fake" / "0009_swapped.mp4", 50)  # not the release's name
    out = tmp_path / "out"
    df = build_sources("uadfv", out, "ua", split="3:1:1", folder=str(root), frames_per_video=FRAMES)
    by_video = videos_of(df)
    fake = by_video.loc["fake_0002_fake"]
    assert (fake["label"], fake["method"], fake["subject_id"], fake["target_subject"]) == (
        1,
        "UADFV",
        "0002",
        "0002",
    )
    bad = by_video.loc["fake_0009_swapped"]
    assert not bad["ok"] and "expected 0000_fake" in bad["reason"]
    ok = by_video[by_video["ok"]]
    # 3:1:1 by subject: each pair whole, three pairs in train, one in val, one in test.
    assert (ok.groupby("subject_id")["split"].nunique() == 1).all()
    assert ok.drop_duplicates("subject_id")["split"].value_counts().to_dict() == {
        "train": 3,
        "val": 1,
        "test": 1,
    }
    assert (df[df["ok"]].groupby("video_id").size() == FRAMES).all()
    cfg = {"adapter": "uadfv", "root": str(root), "options": {"frames_per_video": FRAMES}}
    assert ADAPTERS.create("uadfv").count_items("ua", cfg) == 11 * FRAMES
    assert ADAPTERS.create("uadfv").imported_methods("ua", cfg) == ["UADFV"]
    # A video-level split (the Benchmark's, Table 1) splits videos, not pairs.
    by_video_level = videos_of(
        build_sources(
            "uadfv",
            out,
            "ua",
            split={"train": 0.6, "val": 0.2, "test": 0.2, "subject_disjoint": False},
            folder=str(root),
            frames_per_video=FRAMES,
        )
    )
    usable = by_video_level[by_video_level["ok"]]
    assert usable["split"].value_counts().to_dict() == {"train": 6, "val": 2, "test": 2}
    with pytest.raises(SourceError, match="no UADFV videos"):
        build_sources("uadfv", out, "ua", folder=str(tmp_path / "nothing"))


def test_dftimit_fakes_both_qualities_and_vidtimit_reals(tmp_path: Path):
    root, vidtimit = tmp_path / "DeepfakeTIMIT", tmp_path / "VidTIMIT"
    dftimit_tree(root, vidtimit)
    out = tmp_path / "out"
    df = build_sources(
        "dftimit",
        out,
        "dft",
        split="test_only",
        folder=str(root),
        vidtimit=str(vidtimit),
        qualities=["higher", "lower"],
        frames_per_video=FRAMES,
    )
    assert df["ok"].all(), df["reason"].unique()
    by_video = videos_of(df)
    fake = by_video.loc["higher_quality_fadg0_sa1-video-fram1"]
    assert (fake["method"], fake["subject_id"], fake["source_subject"], fake["group"]) == (
        "DF-TIMIT-HQ",
        "fadg0",
        "fram1",
        "female",
    )
    assert by_video.loc["lower_quality_fram1_sa1-video-fadg0", "method"] == "DF-TIMIT-LQ"
    # The reals: fadg0's suffix-less JPEG frames read in place, fram1's video decoded; the
    # head-rotation sequence and the audio are not videos of the dataset.
    reals = by_video[by_video["label"] == 0]
    assert sorted(reals.index) == ["vidtimit_fadg0_sa1", "vidtimit_fram1_sa1"]
    frames = df[df["video_id"] == "vidtimit_fadg0_sa1"]
    assert [Path(p).name for p in frames["path"]] == ["001", "003"]
    assert len(by_video) == 2 * 2 + 2
    # A pair's swaps link the two identities: one unit of any subject-disjoint split.
    assert linked_subjects(df)[df["ok"]].nunique() == 1
    assert ADAPTERS.create("dftimit").imported_methods(
        "d", {"options": {"qualities": ["lower"]}}
    ) == ["DF-TIMIT-LQ"]
    with pytest.raises(SourceError, match="ships no real videos"):
        build_sources("dftimit", out, "dft", folder=str(root), split="test_only")
    with pytest.raises(SourceError, match="qualities"):
        build_sources("dftimit", out, "dft", folder=str(root), vidtimit="v", qualities=["best"])


def test_forgerynet_tracks_labels_and_official_parts(tmp_path: Path):
    root = forgerynet_tree(tmp_path / "ForgeryNet", bad_line=True)
    out = tmp_path / "out"
    df = build_sources(
        "forgerynet",
        out,
        "fn",
        split={"official": True, "val_from_train": 0.5},
        folder=str(root),
        frames_per_video=FRAMES,
    )
    by_video = videos_of(df)
    image = by_video.loc["Training__train_image_release__1__a__0001"]
    assert (image["label"], image["method"], image["frame_index"]) == (1, "FaceShifter", 0)
    # An image is a one-frame video read where it lies.
    assert image["path"] == str(root / "Training/image/train_image_release/1/a/0001.jpg")
    video = by_video.loc["Validation__val_video_release__3__c"]
    assert (video["label"], video["method"], video["split"]) == (1, "DeepFakes", "test")
    assert (df[df["video_id"] == video.name]["frame_index"] >= 0).sum() == FRAMES
    validation = df["image_id"].str.startswith("Validation") & df["ok"]
    assert set(df.loc[validation, "split"]) == {"test"}
    # Training is train, with half its items carved out as val (by item: no identities).
    training = by_video[by_video.index.str.startswith("Training") & by_video["ok"]]
    assert training["split"].value_counts().to_dict() == {"train": 2, "val": 2}
    bad = df[~df["ok"]]
    assert len(bad) == 2 and bad["reason"].str.contains("disagrees with 16-class label").all()
    cfg = {"adapter": "forgerynet", "root": str(root), "options": {"frames_per_video": FRAMES}}
    # image lines count once, video lines once per frame
    assert ADAPTERS.create("forgerynet").count_items("fn", cfg) == 2 * (3 + 2 * FRAMES)
    videos_only = build_sources(
        "forgerynet", out, "fn", split="test_only", folder=str(root), tracks=["video"]
    )
    assert videos_only["video_id"].str.contains("video_release").all()
    (root / "Validation" / "video_list.txt").unlink()
    with pytest.raises(SourceError, match="video label list not found"):
        build_sources("forgerynet", out, "fn", split="test_only", folder=str(root))


def test_celebdf_v1_first_release_names(tmp_path: Path):
    root = celebdf_v1_first_release(tmp_path / "Celeb-DF-v1")
    df = build_sources(
        "celebdf_v1",
        tmp_path / "out",
        "v1",
        split="official",
        folder=str(root),
        frames_per_video=FRAMES,
        attributes="groups.csv",
    )
    assert df["ok"].all(), df["reason"].unique()
    by_video = videos_of(df)
    assert by_video.loc[
        "deepfake_id0_id1_0000", ["method", "source_subject", "group"]
    ].tolist() == [
        "Celeb-synthesis",
        "id1",
        "light",
    ]
    assert by_video.loc["Real_2_00000", "subject_id"] == "youtube_00000"
    assert by_video.loc["Real_1_id1_0000", "split"] == "test"
    # As v2's, the published list is kept: id1's face in a training fake stays in train.
    assert by_video.loc["deepfake_id0_id1_0000", "split"] == "train"


# ----------------------------------------------------------------- one run, end to end
