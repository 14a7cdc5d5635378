"""Labelled datasets: real and fake images listed with their label, method and the identities
a fake was made from; the split keeps those identities together; samples mark imported fakes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fairforge.columns import LABEL_COLUMNS, SAMPLE_COLUMNS
from fairforge.config import ConfigError, validate_config
from fairforge.samples import build_samples
from fairforge.sources import build_sources, check_subject_disjoint, real_only
from fairforge.sources.base import csv_label
from fairforge.sources.split import SplitError, linked_subjects
from source_trees import SPLIT3, check_subject_split, labelled_csv, write_jpeg


def test_csv_label_rules():
    assert csv_label("", "") == (0, "real", "")
    assert csv_label("", "deepfakes") == (1, "deepfakes", "")
    assert csv_label("fake", "faceswap") == (1, "faceswap", "")
    assert csv_label("0", "real") == (0, "real", "")
    assert csv_label("1", "")[2] == "a fake (label 1) needs its method"
    assert "has method 'real'" in csv_label("0", "deepfakes")[2]
    assert "0/1" in csv_label("2", "x")[2]


def test_labelled_csv_lists_fakes_with_their_method_and_identities(tmp_path: Path):
    bad = [
        {"path": "real/a0_0.png", "subject_id": "z", "group": "a", "label": "1", "image_id": "z"},
        {"path": "real/a0_1.png", "subject_id": "y", "group": "a", "label": "7", "image_id": "y"},
    ]
    df = build_sources("csv", labelled_csv(tmp_path, bad), "mine", split_fractions=SPLIT3)
    assert list(df.columns[-len(LABEL_COLUMNS) :]) == list(LABEL_COLUMNS)
    good = df[~df["image_id"].isin(["z", "y"])]
    assert good["ok"].all()
    fakes = good[good["label"] == 1]
    assert len(fakes) == 12 and set(fakes["method"]) == {"deepfakes", "face2face"}
    assert (good.loc[good["label"] == 0, "method"] == "real").all()
    # Label columns are not attributes: groups come from 'group' alone.
    assert json.loads(fakes.iloc[0]["attributes"]) == {"group": "a"}
    # Bad labels are recorded, not dropped.
    reasons = df.set_index("image_id")["reason"]
    assert reasons["z"] == "a fake (label 1) needs its method"
    assert "0/1" in reasons["y"]
    assert not df.set_index("image_id").loc[["z", "y"], "ok"].any()
    # A fake's two identities share its split: partners are split together.
    check_subject_disjoint(good)
    split_of = good.drop_duplicates("subject_id").set_index("subject_id")["split"]
    assert all(split_of[f"{g}{k}"] == split_of[f"{g}{k ^ 1}"] for g in "ab" for k in range(6))
    assert set(split_of) == {"train", "val", "test"}
    leak = good.copy()
    leak.loc[leak.index[0], "split"] = "val" if leak.iloc[0]["split"] != "val" else "test"
    with pytest.raises(SplitError, match="more than one split"):
        check_subject_disjoint(leak)
    assert real_only(good)["label"].eq(0).all() and len(real_only(good)) == 24


def test_linked_subjects_join_a_fakes_identities():
    df = pd.DataFrame(
        {
            "subject_id": ["a", "b", "c", "d", "b"],
            "source_subject": ["", "", "", "", "c"],
            "target_subject": ["", "", "", "", "b"],
        }
    )
    assert list(linked_subjects(df)) == ["a", "b", "b", "d", "b"]
    assert list(linked_subjects(df[["subject_id"]])) == ["a", "b", "c", "d", "b"]


def test_unlabelled_sources_are_unchanged(tmp_path: Path):
    rows = [
        {"path": f"img/{g}{k}_{j}.png", "subject_id": f"{g}{k}", "group": g}
        for g in "ab"
        for k in range(3)
        for j in range(2)
    ]
    for r in rows:
        write_jpeg(tmp_path / r["path"])
    pd.DataFrame(rows).to_csv(tmp_path / "labels.csv", index=False)
    df = build_sources("csv", tmp_path / "labels.csv", "mine", split_fractions=SPLIT3)
    assert not set(LABEL_COLUMNS) & set(df.columns)
    check_subject_split(df)


def test_samples_mix_imported_and_generated_fakes():
    sources = pd.DataFrame(
        {
            "image_id": ["r1", "f1", "r2"],
            "subject_id": ["s1", "s1", "s2"],
            "group": ["g", "g", "g"],
            "split": ["train", "train", "test"],
            "ok": [True, True, True],
            "reason": "",
            "label": [0, 1, 0],
            "method": ["real", "deepfakes", "real"],
        }
    )
    faces = pd.DataFrame(
        {
            "image_id": ["r1", "f1", "r2"],
            "ok": True,
            "reason": "",
            "crop_path": ["c/r1.png", "c/f1.png", "c/r2.png"],
        }
    )
    generated = pd.DataFrame(
        {
            "sample_id": ["faceswap__r1"],
            "method": "faceswap",
            "backend": "classical",
            "image_id": ["r1"],
            "path": ["f/r1.png"],
            "mask_path": ["f/r1_mask.png"],
            "group": ["g"],
            "subject_id": ["s1"],
            "split": ["train"],
            "ok": [True],
            "reason": [""],
        }
    )
    samples = build_samples("d", sources, faces, [generated]).set_index("sample_id")
    assert list(samples.reset_index().columns) == SAMPLE_COLUMNS
    assert samples.loc["fake__f1", ["label", "method", "origin", "backend", "path"]].tolist() == [
        1,
        "deepfakes",
        "imported",
        "imported",
        "c/f1.png",
    ]
    assert samples.loc["faceswap__r1", ["label", "origin"]].tolist() == [1, "generated"]
    assert samples.loc["real__r2", ["label", "method", "origin"]].tolist() == [
        0,
        "real",
        "imported",
    ]


def test_config_accepts_dataset_methods_forgery_choice_and_split(tmp_path: Path):
    csv = labelled_csv(tmp_path)
    config = {
        "datasets": {
            "mine": {"adapter": "csv", "root": str(csv), "forgery": False},
            "world": {"adapter": "synthetic", "split": "test_only", "forgery": ["faceswap"]},
        },
        "forgery": {"methods": ["faceswap"]},
        "detectors": {"m": {"arch": "meso4", "train_methods": ["deepfakes"]}},
    }
    validate_config(config)
    bad = json.loads(json.dumps(config))
    bad["detectors"]["m"]["train_methods"] = ["neuraltextures"]
    with pytest.raises(ConfigError, match="datasets' own fakes"):
        validate_config(bad)
    bad = json.loads(json.dumps(config))
    bad["datasets"]["world"]["forgery"] = ["simswap"]
    with pytest.raises(ConfigError, match="datasets.world.forgery"):
        validate_config(bad)
    bad = json.loads(json.dumps(config))
    bad["datasets"]["world"]["split"] = {"train": 0.5, "test": 0.2}
    with pytest.raises(ConfigError, match="datasets.world.split"):
        validate_config(bad)
