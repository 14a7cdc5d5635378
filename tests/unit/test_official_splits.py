"""Official splits as the datasets define them, and the split options: Celeb-DF's test list as
published (not subject-disjoint) with a validation part carved from its train part
(Assessment §5.1), video-level splits (Benchmark Table 1), frame-level ratios (Benchmark
§3.1.1), DiveFace's 70/30 split by identity (Exposure §4), the split report, and the error
that a detector without validation samples raises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairforge.video  # noqa: F401  (registers the frame sampler)
from fairforge.config import ConfigError, validate_config
from fairforge.sources import SplitError, build_sources, parse_split, resolved_split
from fairforge.sources.split import ratio_frames, split_report, subject_overlaps
from fairforge.training.detector import TrainConfig, training_sets
from source_trees import folder_tree
from video_trees import CELEB_SWAPS, CELEB_TEST, attributes_csv, faceforensics_tree, tiny_video


def test_split_spec_forms_and_options():
    spec = parse_split({"official": True, "val_from_train": 0.2, "subject_disjoint": False})
    assert (spec.official, spec.val_from_train, spec.subject_disjoint) == (True, 0.2, False)
    assert parse_split("official").subject_disjoint is None
    spec = parse_split({"train": 0.6, "val": 0.2, "test": 0.2, "frame_ratio": "14:1:1"})
    assert spec.fractions["val"] == 0.2 and spec.frame_ratio["train"] == pytest.approx(14 / 16)
    assert parse_split({"files": {"test": "t.json"}, "val_from_train": 0.1}).listed == {
        "files": {"test": "t.json"}
    }
    for bad, words in (
        ({"official": False}, "takes only"),
        ({"train": 0.8, "test": 0.2, "val_from_train": 0.1}, "give val its own fraction"),
        ({"official": True, "val_from_train": 1.0}, r"\[0, 1\)"),
        ({"official": True, "subject_disjoint": "no"}, "true or false"),
        ({"official": True, "frame_ratio": "14:1"}, "frame_ratio"),
    ):
        with pytest.raises(SplitError, match=words):
            parse_split(bad)
    # The dataset's own definition decides where the config does not.
    assert resolved_split("celebdf", "official").subject_disjoint is False
    assert resolved_split("faceforensics", "official").subject_disjoint is True
    assert resolved_split("celebdf", {"official": True, "subject_disjoint": True}).subject_disjoint
    assert resolved_split("celebdf", {"train": 0.5, "test": 0.5}).subject_disjoint


def test_config_takes_the_split_options():
    block = {"adapter": "celebdf", "root": "/data/cd"}
    split = {"official": True, "val_from_train": 0.2, "subject_disjoint": False}
    config = validate_config({"datasets": {"cd": {**block, "split": split}}})
    assert config["datasets"]["cd"]["split"] == split
    for bad in ({"official": True, "val_from_train": 1.5}, {"subject_disjoint": False}):
        with pytest.raises(ConfigError, match="datasets.cd.split"):
            validate_config({"datasets": {"cd": {**block, "split": bad}}})


def celebdf(root: Path) -> Path:
    """Six identities' real videos and six swaps, id4's and id5's on the test list (id5 also
    in a training fake), an attributes csv (even light, odd dark); noise videos."""
    for n in range(6):
        tiny_video(root / "Celeb-real" / f"id{n}_0000.mp4", n)
    for k, (a, b) in enumerate(CELEB_SWAPS):
        tiny_video(root / "Celeb-synthesis" / f"{a}_{b}_0000.mp4", 10 + k)
    (root / "List_of_testing_videos.txt").write_text(CELEB_TEST)
    attributes_csv(root / "groups.csv", {f"id{n}": n for n in range(6)})
    return root


def test_celebdf_keeps_its_training_videos_and_carves_a_val_part(tmp_path: Path):
    root = celebdf(tmp_path / "Celeb-DF-v2")

    def listing(split, seed=3):
        return build_sources(
            "celebdf",
            tmp_path / "out",
            "cd",
            group_by=["group"],
            split=split,
            seed=seed,
            folder=str(root),
            frames_per_video=2,
            attributes="groups.csv",
        )

    published = listing("official")
    assert published["ok"].all()
    assert published.groupby("split")["video_id"].nunique().to_dict() == {"test": 3, "train": 9}
    carved = listing({"official": True, "val_from_train": 0.34})
    assert carved["ok"].all()
    per_video = carved.drop_duplicates("video_id").set_index("video_id")
    # The test list is untouched; a third of the train part's videos, in each group, is val.
    assert (
        per_video["split"]
        .eq("test")
        .equals(published.drop_duplicates("video_id").set_index("video_id")["split"].eq("test"))
    )
    counts = per_video.groupby(["group", "split"]).size().to_dict()
    assert counts == {
        ("dark", "test"): 1,
        ("dark", "train"): 3,
        ("dark", "val"): 2,
        ("light", "test"): 2,
        ("light", "train"): 3,
        ("light", "val"): 1,
    }
    assert set(per_video.loc[per_video["split"] == "val", "label"]) == {0, 1}
    # Drawn from the run's seed: the same again, another seed another draw.
    assert listing({"official": True, "val_from_train": 0.34})["split"].equals(carved["split"])
    other = listing({"official": True, "val_from_train": 0.34}, seed=4)
    assert not other["split"].equals(carved["split"])
    # Carved by video, as the published list is not subject-disjoint (Celeb-DF's swaps link
    # its identities into one): id5 is in test and in the training fake id1_id5 (now val).
    overlaps = subject_overlaps(carved[carved["ok"]])
    assert overlaps["id5"] == ["val", "test"] and "test" not in overlaps["id2"]
    report = split_report(carved, "cd", subject_disjoint=False).set_index("split")
    assert report.loc["test", "shared_subjects"] == 1 and report.loc["none", "rows"] == 0
    assert report.loc[["train", "val", "test"], "videos"].tolist() == [6, 3, 3]
    assert (
        report.loc["val", "fake"]
        == 2 * (per_video.loc[per_video["split"] == "val", "label"] == 1).sum()
    )
    # Subject-disjoint on request: id5's training fake and id4's and id5's other videos go,
    # each kept with why, and the carve takes what remains.
    strict = listing({"official": True, "val_from_train": 0.34, "subject_disjoint": True})
    voided = strict.drop_duplicates("video_id").set_index("video_id")
    assert voided.loc["Celeb-synthesis_id1_id5_0000", "reason"] == "subject also in the test split"
    assert split_report(strict, "cd", True).set_index("split").loc["none", "rows"] == 2


def test_fraction_split_by_video_when_not_subject_disjoint(tmp_path: Path):
    root = celebdf(tmp_path / "Celeb-DF-v2")
    df = build_sources(
        "celebdf",
        tmp_path / "out",
        "cd",
        group_by=["group"],
        split={"train": 0.5, "test": 0.5, "subject_disjoint": False},
        folder=str(root),
        frames_per_video=2,
        attributes="groups.csv",
    )
    assert (df.groupby("video_id")["split"].nunique() == 1).all()
    assert subject_overlaps(df)  # identities span splits: the split is by video
    report = split_report(df, "cd", False).set_index("split")
    assert report.loc[["train", "test"], "videos"].sum() == 12
    assert not report["subject_disjoint"].any() and report.loc["train", "shared_subjects"] > 0


def test_frame_ratio_sets_frames_per_video_per_split(tmp_path: Path):
    # FaceForensics++'s 720/140/140 videos at the Benchmark's 14:1:1 (§3.1.1), 32 sampled.
    videos = {"train": 720, "val": 140, "test": 140}
    rows = [
        (f"{split}{v}", split, i)
        for split, n in videos.items()
        for v in range(n)
        for i in range(32)
    ]
    df = pd.DataFrame(rows, columns=["video_id", "split", "frame_index"]).assign(ok=True)
    per_video = ratio_frames(
        df, parse_split({"official": True, "frame_ratio": "14:1:1"}).frame_ratio
    )
    assert per_video == {"train": 32, "val": 12, "test": 12}
    totals = {s: per_video[s] * n for s, n in videos.items()}
    assert totals["train"] / totals["test"] == pytest.approx(13.7, abs=0.05)
    # On a listing: the official FF++ split (6 videos per split here), 5 frames sampled.
    ff = faceforensics_tree(tmp_path / "FF")
    listed = build_sources(
        "faceforensics",
        tmp_path / "out",
        "ff",
        split={"official": True, "frame_ratio": {"train": 2, "val": 1, "test": 1}},
        folder=str(ff),
        frames_per_video=5,
    )
    kept = listed.groupby("video_id").agg(split=("split", "first"), n=("frame_index", "size"))
    assert kept.groupby("split")["n"].unique().map(list).to_dict() == {
        "test": [2],
        "train": [5],
        "val": [2],
    }
    with pytest.raises(SplitError, match="not both"):
        build_sources(
            "faceforensics",
            tmp_path / "out",
            "ff",
            split={"official": True, "frame_ratio": "14:1:1"},
            folder=str(ff),
            frames_per_video={"train": 5, "test": 1},
        )
    with pytest.raises(SplitError, match="is for videos"):
        build_sources(
            "rfw", _rfw(tmp_path), "rfw", split={"train": 0.5, "test": 0.5, "frame_ratio": "1:0:1"}
        )


def _rfw(tmp_path: Path) -> Path:
    folder_tree(tmp_path / "RFW", ["African", "Asian", "Caucasian", "Indian"], subjects=2)
    return tmp_path / "RFW"


DIVEFACE_GROUPS = ["HA4K_120", "HB4K_120", "HN4K_120", "MA4K_120", "MB4K_120", "MN4K_120"]


def test_diveface_official_split_is_70_30_by_identity(tmp_path: Path):
    folder_tree(tmp_path / "DiveFace" / "4K_120", DIVEFACE_GROUPS, subjects=10, images=2)
    df = build_sources("diveface", tmp_path / "DiveFace", "dive", split="official", seed=1)
    assert df["ok"].all()
    assert (df.groupby("subject_id")["split"].nunique() == 1).all()
    per_group = df.drop_duplicates("subject_id").groupby(["group", "split"]).size().unstack()
    assert per_group["train"].eq(7).all() and per_group["test"].eq(3).all()
    assert len(per_group) == 6
    again = build_sources("diveface", tmp_path / "DiveFace", "dive", split="official", seed=1)
    assert again["split"].equals(df["split"])
    other = build_sources("diveface", tmp_path / "DiveFace", "dive", split="official", seed=2)
    assert not other["split"].equals(df["split"])
    # Its 70% train part can give a validation part too.
    carved = build_sources(
        "diveface",
        tmp_path / "DiveFace",
        "dive",
        split={"official": True, "val_from_train": 0.3},
        seed=1,
    )
    counts = carved.drop_duplicates("subject_id").groupby("split").size().to_dict()
    assert counts == {"test": 18, "train": 30, "val": 12}


def test_training_without_validation_samples_names_the_dataset():
    rows = [
        {
            "sample_id": f"s{i}",
            "dataset": "celebdf",
            "split": split,
            "method": method,
            "label": label,
        }
        for i, (split, method, label) in enumerate(
            [("train", "real", 0), ("train", "Celeb-synthesis", 1), ("test", "real", 0)]
        )
    ]
    cfg = TrainConfig(arch="meso4", train_methods=["Celeb-synthesis"])
    with pytest.raises(ValueError, match=r"no validation samples .* \['celebdf'\].*val_from_train"):
        training_sets(pd.DataFrame(rows), cfg)
    rows.append(
        {"sample_id": "s9", "dataset": "celebdf", "split": "val", "method": "real", "label": 0}
    )
    train, val = training_sets(pd.DataFrame(rows), cfg)
    assert len(train) == 2 and len(val) == 1
    assert np.array_equal(val["sample_id"].to_numpy(), ["s9"])
