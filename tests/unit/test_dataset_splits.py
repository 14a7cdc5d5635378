"""Per-dataset splits: fractions, test_only, split files (FaceForensics++'s [[id1, id2], ...]
json lists or a subject csv), each subject-disjoint and checked."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fairforge.config import validate_config
from fairforge.sources import build_sources, check_subject_disjoint
from fairforge.sources.split import (
    NOT_IN_SPLIT,
    SplitError,
    drop_overlaps,
    fractions_of,
    most_frames,
    read_split_files,
    thin_frames,
)
from fairforge.sources.split import (
    check_subject_disjoint as check_disjoint,
)
from fairforge.workflow import dataset_block, dataset_methods, dataset_split, train_input
from source_trees import SPLIT3, folder_tree, labelled_csv


def test_split_specs():
    assert fractions_of("test_only") == {"train": 0.0, "val": 0.0, "test": 1.0}
    assert fractions_of({"train": 0.8, "test": 0.2}) == {"train": 0.8, "val": 0.0, "test": 0.2}
    assert fractions_of("official") is None and fractions_of({"file": "x.csv"}) is None
    with pytest.raises(SplitError, match="sum to 1"):
        fractions_of({"train": 0.5})
    with pytest.raises(SplitError, match="expected fractions"):
        fractions_of("everything")


def test_test_only_dataset_puts_every_image_in_test(tmp_path: Path):
    df = build_sources("csv", labelled_csv(tmp_path), "held", split="test_only")
    assert set(df["split"]) == {"test"} and df["ok"].all()


def test_split_files_in_faceforensics_format(tmp_path: Path):
    csv = labelled_csv(tmp_path)
    (tmp_path / "splits").mkdir()
    lists = {"train": [["a0", "a1"], ["b0", "b1"]], "val": [["a2", "a3"], ["b2", "b3"]]}
    # a4 is in test but its partner a5 in train: a4's test fake shows a5's face, so a5 is a
    # test identity and its train rows are kept unusable with the reason.
    lists["test"] = [["a4", "b4"], ["b5"]]
    lists["train"].append(["a5"])
    for name, ids in lists.items():
        (tmp_path / "splits" / f"{name}.json").write_text(json.dumps(ids))
    spec = {"files": {s: f"splits/{s}.json" for s in ("train", "val", "test")}}
    assert read_split_files(spec, tmp_path)["a1"] == "train"
    df = build_sources("csv", csv, "ff", split=spec).set_index("image_id")
    assert df.loc["real__a0_0", "split"] == "train" and df.loc["real__b3_1", "split"] == "val"
    # The fake of a5 made with a4's face shows a test identity: kept, not usable, with why.
    leak = df.loc["fake__a5_a4"]
    assert (leak["split"], bool(leak["ok"]), leak["reason"]) == (
        "",
        False,
        "subject also in the test split",
    )
    assert df.loc["fake__a4_a5", "split"] == "test" and df.loc["fake__a4_a5", "ok"]
    assert df.loc["real__a5_0", "reason"] == "subject also in the test split"
    assert not df.loc["real__a5_0", "ok"] and df.loc["real__a0_0", "ok"]
    check_subject_disjoint(df[df["ok"]])


def test_split_file_csv_and_unlisted_subjects(tmp_path: Path):
    folder_tree(tmp_path / "imgs", ["x", "y"], subjects=2, images=1)
    rows = [
        {"path": f"imgs/{g}/{g}_s{k}/{g}_s{k}_0.jpg", "subject_id": f"{g}{k}", "group": g}
        for g in "xy"
        for k in range(2)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "labels.csv", index=False)
    pd.DataFrame({"subject_id": ["x0", "x1", "y0"], "split": ["train", "test", "test"]}).to_csv(
        tmp_path / "subjects.csv", index=False
    )
    df = build_sources("csv", tmp_path / "labels.csv", "d", split={"file": "subjects.csv"})
    got = df.set_index("subject_id")
    assert got.loc["x0", "split"] == "train" and got.loc["y0", "split"] == "test"
    assert (got.loc["y1", "split"], got.loc["y1", "reason"]) == ("", NOT_IN_SPLIT)
    assert not got.loc["y1", "ok"]
    pd.DataFrame({"subject_id": ["x0", "x0"], "split": ["train", "test"]}).to_csv(
        tmp_path / "twice.csv", index=False
    )
    with pytest.raises(SplitError, match="'x0' in both"):
        build_sources("csv", tmp_path / "labels.csv", "d", split={"file": "twice.csv"})


def test_drop_overlaps_prefers_test_then_val():
    df = pd.DataFrame({"subject_id": ["s", "s", "s", "t"]})
    split, reasons = drop_overlaps(pd.Series(["train", "val", "test", "val"]), df)
    assert list(split) == ["", "", "test", "val"]
    assert reasons[:2] == ["subject also in the test split"] * 2


def test_workflow_reads_each_datasets_split_and_methods():
    config = {
        "split": SPLIT3,
        "forgery": {"methods": ["faceswap", "sbi"]},
        "datasets": {
            "a": {"adapter": "synthetic"},
            "b": {"adapter": "csv", "root": "x.csv", "split": "test_only", "forgery": False},
            "c": {"adapter": "csv", "root": "y.csv", "forgery": ["sbi"]},
        },
    }
    assert dataset_split(config, "a") == SPLIT3 and dataset_split(config, "b") == "test_only"
    assert dataset_methods(config, "a") == ["faceswap", "sbi"]
    assert dataset_methods(config, "b") == [] and dataset_methods(config, "c") == ["sbi"]
    assert dataset_block(config, "b") == {"adapter": "csv", "root": "x.csv"}
    # A dataset with train_compression: detectors trained on it read the compressed copies,
    # and its listing does not change (the key is not the adapter's).
    config = validate_config(
        {
            "forgery": {"methods": ["sbi"]},
            "datasets": {"a": {"adapter": "synthetic", "train_compression": "jpeg@60"}},
            "detectors": {"d": {"arch": "meso4", "train_methods": ["sbi"]}},
        }
    )
    assert train_input(config, "d")["samples"] == [
        "results/a/train_copies/crops.parquet",
        "results/a/train_copies/sbi.parquet",
    ]
    assert dataset_block(config, "a") == {"adapter": "synthetic", "options": {}}


def test_ratio_split_and_frames_per_split():
    assert fractions_of("14:1:1") == {"train": 14 / 16, "val": 1 / 16, "test": 1 / 16}
    assert fractions_of("8:2:0")["test"] == 0.0
    with pytest.raises(SplitError, match="no positive part"):
        fractions_of("0:0:0")
    config = validate_config({"datasets": {"a": {"adapter": "synthetic", "split": "14:1:1"}}})
    assert config["datasets"]["a"]["split"] == "14:1:1"
    assert most_frames({"train": 14, "val": 1, "test": 1}, 32) == 14
    assert most_frames(None, 32) == 32 and most_frames(5, 32) == 5
    with pytest.raises(SplitError, match="one per split"):
        most_frames({"training": 3}, 32)
    # Five frames of a train video keep 3 evenly spaced, of a test video 1; a failed video's
    # row (frame -1) and a row without a split keep all they have.
    frames = pd.DataFrame(
        {
            "video_id": ["a"] * 5 + ["b"] * 5 + ["c", "d", "d"],
            "frame_index": [0, 4, 8, 12, 16] * 2 + [-1, 0, 9],
            "split": ["train"] * 5 + ["test"] * 5 + ["train", "", ""],
        }
    )
    kept = thin_frames(frames, {"train": 3, "test": 1})
    assert kept.groupby("video_id")["frame_index"].apply(list).to_dict() == {
        "a": [0, 8, 16],
        "b": [0],
        "c": [-1],
        "d": [0, 9],
    }


def test_identities_in_two_splits_are_named():
    df = pd.DataFrame(
        {
            "subject_id": ["s1", "s1", "s2", "s3"],
            "source_subject": ["", "", "s3", ""],
            "split": ["train", "test", "val", "train"],
        }
    )
    with pytest.raises(
        SplitError,
        match=r"2 subject\(s\) in more than one split: s1 in "
        r"\['train', 'test'\], s3 in \['train', 'val'\]",
    ):
        check_disjoint(df)
