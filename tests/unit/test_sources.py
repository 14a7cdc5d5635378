"""Source adapters on tiny trees the tests write, and the subject-level split."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
from fairforge.manifest import check_columns, write_manifest
from fairforge.registry import DuplicateName, UnknownName
from fairforge.sources import (
    ADAPTERS,
    SOURCE_COLUMNS,
    SourceAdapter,
    SourceError,
    SplitError,
    assign_subject_splits,
    build_sources,
    diveface_group,
    list_adapters,
    parse_utkface_name,
    split_by_subject,
    split_counts,
)
from source_trees import SPLIT3, check_subject_split, folder_tree, vggface2_tree, write_jpeg

# ------------------------------------------------------------------------------------ rfw

RACES = ["African", "Asian", "Caucasian", "Indian"]


@pytest.fixture()
def rfw_root(tmp_path: Path) -> Path:
    folder_tree(tmp_path / "rfw", RACES)
    return tmp_path / "rfw"


def test_rfw_manifest_contract(rfw_root: Path):
    df = build_sources("rfw", rfw_root, "rfw", group_by=["race"], split_fractions=SPLIT3, seed=3)
    assert list(df.columns) == list(SOURCE_COLUMNS)
    check_columns(df, "sources")
    assert len(df) == 4 * 3 * 2 and df["ok"].all() and (df["reason"] == "").all()
    assert list(df["image_id"]) == sorted(df["image_id"]) and df["image_id"].is_unique
    assert set(df["dataset"]) == {"rfw"}
    assert set(df["group"]) == set(RACES)
    row = df[df["image_id"] == "Asian__Asian_s2__Asian_s2_1"].iloc[0]
    assert row["path"] == "Asian/Asian_s2/Asian_s2_1.jpg"
    assert row["subject_id"] == "Asian_s2"
    assert json.loads(row["attributes"]) == {"race": "Asian"}
    assert (row["width"], row["height"]) == (41, 34)
    assert row["sha256"] == hashlib.sha256((rfw_root / row["path"]).read_bytes()).hexdigest()
    check_subject_split(df)


def test_rfw_data_layout_same_ids(tmp_path: Path):
    folder_tree(tmp_path / "official" / "data", RACES)
    flat = build_sources("rfw", tmp_path / "official" / "data", "rfw", seed=1)
    nested = build_sources("rfw", tmp_path / "official", "rfw", seed=1)
    assert list(nested["image_id"]) == list(flat["image_id"])
    assert list(nested["split"]) == list(flat["split"])
    assert all(p == "data/" + q for p, q in zip(nested["path"], flat["path"]))


def test_rfw_missing_race_is_named(tmp_path: Path):
    folder_tree(tmp_path / "rfw", ["African", "Asian", "Indian"])
    with pytest.raises(SourceError, match="Caucasian"):
        build_sources("rfw", tmp_path / "rfw", "rfw")
    df = build_sources("rfw", tmp_path / "rfw", "rfw", races=["African", "Indian"])
    assert set(df["group"]) == {"African", "Indian"}


def test_unreadable_files_stay_as_rows(rfw_root: Path):
    bad = rfw_root / "Indian" / "Indian_s0" / "Indian_s0_9.jpg"
    bad.write_bytes(b"\xff\xd8 this is not a jpeg")
    (rfw_root / "Indian" / "Indian_s1" / "Indian_s1_9.jpg").write_bytes(b"")
    (rfw_root / "Indian" / "Indian_s1" / "._Indian_s1_0.jpg").write_bytes(b"mac fork")
    df = build_sources("rfw", rfw_root, "rfw", seed=0).set_index("image_id")
    corrupt = df.loc["Indian__Indian_s0__Indian_s0_9"]
    empty = df.loc["Indian__Indian_s1__Indian_s1_9"]
    assert not corrupt["ok"] and corrupt["reason"] == "unreadable image"
    assert (corrupt["width"], corrupt["height"]) == (0, 0)
    assert corrupt["sha256"] == hashlib.sha256(bad.read_bytes()).hexdigest()
    assert not empty["ok"] and empty["reason"] == "empty file"
    # The unreadable image keeps its subject's split.
    assert corrupt["split"] == df.loc["Indian__Indian_s0__Indian_s0_0", "split"]
    assert len(df) == 4 * 3 * 2 + 2  # the hidden '._' file is not an image


def test_manifest_bytes_deterministic(rfw_root: Path, tmp_path: Path):
    a = build_sources("rfw", rfw_root, "rfw", seed=5, workers=1)
    b = build_sources("rfw", rfw_root, "rfw", seed=5, workers=4)
    write_manifest(a, tmp_path / "a.parquet", "sources")
    write_manifest(b, tmp_path / "b.parquet", "sources")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_group_by_unknown_attribute_is_named(rfw_root: Path):
    with pytest.raises(SourceError, match="ethnicity"):
        build_sources("rfw", rfw_root, "rfw", group_by=["ethnicity"])


def test_unknown_adapter_lists_known():
    assert {"rfw", "utkface", "fairface", "diveface", "csv", "synthetic"} <= set(list_adapters())
    with pytest.raises(UnknownName, match="valid: celebdf, celebdf_v1, csv, deeperforensics, dfdc"):
        build_sources("celeba", ".", "x")


def test_adapter_names_are_unique():
    class Other(SourceAdapter):
        pass

    with pytest.raises(DuplicateName, match="'rfw'"):
        ADAPTERS.register("rfw", Other)
    assert ADAPTERS.get("rfw") is not Other


def test_every_adapter_is_registered_with_its_hooks():
    assert set(ADAPTERS.names()) == {
        "celebdf",
        "celebdf_v1",
        "csv",
        "deeperforensics",
        "dfdc",
        "dftimit",
        "diveface",
        "faceforensics",
        "fairface",
        "forgerynet",
        "rfw",
        "synthetic",
        "synthetic_video",
        "uadfv",
        "utkface",
        "vggface2",
        "video",
    }
    for name in ADAPTERS:
        adapter = ADAPTERS.create(name)
        assert isinstance(adapter, SourceAdapter) and adapter.default_group_by
        assert type(adapter).list is not SourceAdapter.list, name
    assert [n for n in ADAPTERS if ADAPTERS.create(n).synthetic] == ["synthetic", "synthetic_video"]


# -------------------------------------------------------------------------------- utkface


def test_parse_utkface_name():
    assert parse_utkface_name("25_1_3_20170104.jpg.chip.jpg") == {
        "age": 25,
        "gender": "female",
        "race": "Indian",
    }
    assert parse_utkface_name("40_0_0_2017.jpg")["race"] == "White"
    assert parse_utkface_name("1_0_4_2016.jpg")["race"] == "Others"
    with pytest.raises(ValueError, match="malformed"):
        parse_utkface_name("39_1_20170116174525125.jpg.chip.jpg")
    with pytest.raises(ValueError, match="race code 7"):
        parse_utkface_name("30_0_7_2017.jpg")
    with pytest.raises(ValueError, match="gender code 2"):
        parse_utkface_name("30_2_1_2017.jpg")


def test_utkface_adapter(tmp_path: Path):
    root = tmp_path / "UTKFace"
    good = [f"{20 + i}_{i % 2}_{r}_2017010{i}{r}.jpg.chip.jpg" for r in range(5) for i in range(3)]
    for name in good:
        write_jpeg(root / "part1" / name)
    write_jpeg(root / "part1" / "39_1_20170116174525125.jpg.chip.jpg")
    write_jpeg(root / "part2" / "30_0_7_2017.jpg")
    df = build_sources("utkface", root, "utk", split_fractions=SPLIT3, seed=2)
    assert len(df) == len(good) + 2
    assert (df["subject_id"] == df["image_id"]).all()
    ok = df[df["ok"]]
    assert set(ok["group"]) == {"White", "Black", "Asian", "Indian", "Others"}
    row = ok[ok["image_id"] == "part1__21_1_2_201701012"].iloc[0]
    assert json.loads(row["attributes"]) == {"age": 21, "gender": "female", "race": "Asian"}
    bad = df[~df["ok"]].set_index("image_id")
    assert bad.loc["part1__39_1_20170116174525125", "reason"].startswith("malformed UTKFace")
    assert "race code 7" in bad.loc["part2__30_0_7_2017", "reason"]
    assert (bad["group"] == "").all() and (bad["split"] == "").all()
    check_subject_split(df)
    by_gender = build_sources(
        "utkface", root, "utk", group_by=["race", "gender"], split_fractions={"test": 1.0}
    )
    assert "Asian_female" in set(by_gender["group"])


# ------------------------------------------------------------------------------- fairface


def test_fairface_adapter(tmp_path: Path):
    root = tmp_path / "fairface"
    rows = []
    for split in ("train", "val"):
        for i, (race, gender) in enumerate(
            [(r, g) for r in ("East Asian", "Black", "White") for g in ("Male", "Female")]
        ):
            write_jpeg(root / split / f"{i + 1}.jpg")
            rows.append(
                {
                    "file": f"{split}/{i + 1}.jpg",
                    "age": "20-29",
                    "gender": gender,
                    "race": race,
                    "service_test": "True" if i % 2 else "False",
                }
            )
        pd.DataFrame(rows[-6:]).to_csv(root / f"fairface_label_{split}.csv", index=False)
    df = build_sources("fairface", root, "ff", split_fractions=SPLIT3, seed=0)
    assert len(df) == 12 and df["ok"].all()
    assert (df["subject_id"] == df["image_id"]).all()
    assert set(df["image_id"]) >= {"train__1", "val__6"}
    assert set(df["group"]) == {"East Asian", "Black", "White"}
    check_subject_split(df)
    crossed = build_sources(
        "fairface", root, "ff", group_by=["race", "gender"], split_fractions={"test": 1.0}
    )
    assert set(crossed["group"]) == {
        f"{r}_{g}" for r in ("East Asian", "Black", "White") for g in ("male", "female")
    }
    row = df[df["image_id"] == "val__2"].iloc[0]
    assert row["path"] == "val/2.jpg"
    assert json.loads(row["attributes"]) == {
        "age": "20-29",
        "gender": "female",
        "race": "East Asian",
        "service_test": True,
    }
    only_val = build_sources(
        "fairface", root, "ff", labels=["fairface_label_val.csv"], split_fractions={"test": 1.0}
    )
    assert len(only_val) == 6 and set(only_val["split"]) == {"test"}
    # One name, as the config documents it (`options: {labels: fairface_label_val.csv}`).
    one_name = build_sources(
        "fairface", root, "ff", labels="fairface_label_val.csv", split_fractions={"test": 1.0}
    )
    assert one_name.equals(only_val)


def test_fairface_missing_column_is_named(tmp_path: Path):
    pd.DataFrame({"file": ["a.jpg"], "age": ["3-9"], "gender": ["Male"]}).to_csv(
        tmp_path / "fairface_label_train.csv", index=False
    )
    with pytest.raises(SourceError, match="race"):
        build_sources("fairface", tmp_path, "ff")


# ------------------------------------------------------------------------------- diveface


def test_diveface_group_mapping():
    assert diveface_group("HA4K_120") == {"race": "Asian", "gender": "male"}
    assert diveface_group("HB4K_120") == {"race": "Caucasian", "gender": "male"}
    assert diveface_group("HN4K_120") == {"race": "Black", "gender": "male"}
    assert diveface_group("MA4K_120") == {"race": "Asian", "gender": "female"}
    assert diveface_group("MB4K_120") == {"race": "Caucasian", "gender": "female"}
    assert diveface_group("MN4K_120") == {"race": "Black", "gender": "female"}
    assert diveface_group("Group1_Male") == {"race": "Asian", "gender": "male"}
    assert diveface_group("Group2_Female") == {"race": "Black", "gender": "female"}
    assert diveface_group("Group3_Male_balanced") == {"race": "Caucasian", "gender": "male"}
    assert diveface_group("HX4K_120") is None and diveface_group("README") is None


def test_diveface_adapter(tmp_path: Path):
    names = ["HA4K_120", "HB4K_120", "HN4K_120", "MA4K_120", "MB4K_120", "MN4K_120"]
    folder_tree(tmp_path / "dive" / "4K_120", names, subjects=3, images=2)
    df = build_sources("diveface", tmp_path / "dive", "dive", split_fractions=SPLIT3, seed=1)
    assert len(df) == 36 and df["ok"].all()
    assert set(df["group"]) == {
        f"{r}_{g}" for r in ("Asian", "Caucasian", "Black") for g in ("male", "female")
    }
    row = df[df["subject_id"] == "MN4K_120_s1"].iloc[0]
    assert row["group"] == "Black_female"
    assert row["path"].startswith("4K_120/MN4K_120/MN4K_120_s1/")
    check_subject_split(df)
    by_race = build_sources("diveface", tmp_path / "dive", "dive", group_by=["race"])
    assert set(by_race["group"]) == {"Asian", "Caucasian", "Black"}


def test_diveface_unknown_folder_is_named(tmp_path: Path):
    folder_tree(tmp_path / "dive", ["Group1_Male", "Group1_Female", "extras"])
    with pytest.raises(SourceError, match="extras"):
        build_sources("diveface", tmp_path / "dive", "dive")


# ------------------------------------------------------------------------------- vggface2


def test_vggface2_identity_folders_labels_and_official_split(tmp_path: Path):
    root = vggface2_tree(tmp_path / "vggface2")
    df = build_sources("vggface2", root, "vgg", split="official").set_index("image_id")
    assert df.loc["train__n000001__0000_01", ["subject_id", "group", "split"]].tolist() == [
        "n000001",
        "male",
        "train",
    ]
    assert df.loc["test__n000009__0001_01", ["group", "split"]].tolist() == ["female", "test"]
    assert df.loc["train__n000003__0000_01", "reason"] == "identity not in the labels csv"
    assert df["ok"].sum() == 6
    # A demographic labels csv of the ranking study's own (race) replaces it.
    pd.DataFrame(
        {"id": ["n000001", "n000002", "n000003", "n000009"], "race": ["A", "B", "A", "B"]}
    ).to_csv(root / "races.csv", index=False)
    by_race = build_sources(
        "vggface2", root, "vgg", group_by=["race"], labels="races.csv", split="test_only"
    )
    assert by_race["ok"].all() and set(by_race["group"]) == {"A", "B"}
    with pytest.raises(SourceError, match="VGGFace2 labels csv not found"):
        build_sources("vggface2", root, "vgg", labels="nope.csv")


# ------------------------------------------------------------------------------------ csv


def test_csv_adapter(tmp_path: Path):
    rows = []
    for g in ("a", "b"):
        for k in range(3):
            for j in range(2):
                rel = f"img/{g}{k}_{j}.png"
                write_jpeg(tmp_path / "data" / rel)
                rows.append(
                    {
                        "path": rel,
                        "subject_id": f"{g}{k}",
                        "group": g,
                        "age_bin": "young" if j == 0 else "old",
                    }
                )
    outside = tmp_path / "elsewhere" / "x.jpg"
    write_jpeg(outside)
    rows.append({"path": str(outside), "subject_id": "a9", "group": "a", "age_bin": "old"})
    table = tmp_path / "data" / "labels.csv"
    pd.DataFrame(rows).to_csv(table, index=False)

    df = build_sources("csv", table, "mine", split_fractions=SPLIT3, seed=0)
    assert len(df) == 13 and df["ok"].all()
    assert set(df["group"]) == {"a", "b"}
    row = df[df["image_id"] == "img__b1_0"].iloc[0]
    assert row["path"] == "img/b1_0.png"
    assert json.loads(row["attributes"]) == {"age_bin": "young", "group": "b"}
    assert df[df["subject_id"] == "a9"].iloc[0]["path"] == outside.as_posix()
    check_subject_split(df)

    same = build_sources("csv", tmp_path / "data", "mine", table="labels.csv", seed=0)
    assert list(same["path"]) == list(df["path"]) and list(same["split"]) == list(df["split"])
    small = pd.DataFrame(
        rows
        + [
            {
                "path": "img/a0_0.png",
                "subject_id": f"c{k}",
                "group": "c",
                "age_bin": "old",
                "image_id": f"c{k}",
            }
            for k in range(2)
        ]
    )
    small.to_csv(tmp_path / "data" / "small.csv", index=False)
    with pytest.raises(SplitError, match="'c'"):
        build_sources("csv", tmp_path / "data" / "small.csv", "mine", split_fractions=SPLIT3)


def test_csv_missing_column_is_named(tmp_path: Path):
    table = tmp_path / "t.csv"
    pd.DataFrame({"path": ["x.jpg"], "group": ["g"]}).to_csv(table, index=False)
    with pytest.raises(SourceError, match="subject_id"):
        build_sources("csv", table, "t")


# ------------------------------------------------------------------------------ synthetic


def test_synthetic_adapter(tmp_path: Path):
    df = build_sources(
        "synthetic",
        tmp_path / "syn",
        "synthetic",
        seed=0,
        split_fractions=SPLIT3,
        subjects_per_group=3,
        images_per_subject=1,
        tones=["tone1", "tone2"],
        size=64,
    )
    assert len(df) == 2 * 2 * 3 and df["ok"].all()
    assert set(df["group"]) == {"tone1_female", "tone1_male", "tone2_female", "tone2_male"}
    assert (df["width"] == 64).all() and (df["height"] == 64).all()
    assert all((tmp_path / "syn" / p).is_file() for p in df["path"])
    check_subject_split(df)


# ---------------------------------------------------------------------------------- split


def subject_table(sizes: dict[str, int], images: int = 3) -> pd.DataFrame:
    rows = [
        {"subject_id": f"{g}-{k}", "group": g}
        for g, n in sizes.items()
        for k in range(n)
        for _ in range(images)
    ]
    return pd.DataFrame(rows)


def test_split_properties():
    df = subject_table({"g3": 3, "g4": 4, "g10": 10, "g57": 57})
    split = split_by_subject(df, SPLIT3, seed=11)
    check_subject_split(df.assign(split=split))
    per_group = (
        df.assign(split=split)
        .drop_duplicates("subject_id")
        .groupby(["group", "split"])
        .size()
        .unstack()
    )
    assert per_group.loc["g57"].to_dict() == {"test": 11, "train": 34, "val": 12}
    assert per_group.loc["g3"].to_dict() == {"test": 1, "train": 1, "val": 1}
    # Deterministic, and independent of row order.
    shuffled = df.sample(frac=1.0, random_state=0)
    again = split_by_subject(shuffled, SPLIT3, seed=11)
    assert (again.sort_index() == split.sort_index()).all()
    other = split_by_subject(df, SPLIT3, seed=12)
    assert not (other == split).all()


def test_split_too_few_subjects_names_group():
    df = subject_table({"big": 10, "tiny": 2})
    with pytest.raises(SplitError, match="'tiny'"):
        split_by_subject(df, SPLIT3, seed=0)
    test_only = split_by_subject(df, {"test": 1.0}, seed=0)
    assert set(test_only) == {"test"}
    two_way = split_by_subject(df, {"train": 0.5, "test": 0.5}, seed=0)
    assert set(two_way[df["group"] == "tiny"]) == {"train", "test"}


def test_split_fraction_checks():
    with pytest.raises(SplitError, match="sum to 1"):
        split_counts(10, {"train": 0.5, "val": 0.2, "test": 0.2})
    with pytest.raises(SplitError, match="unknown split"):
        split_counts(10, {"training": 1.0})
    for n in range(3, 40):
        counts = split_counts(n, SPLIT3)
        assert sum(counts.values()) == n and min(counts.values()) >= 1
        assert abs(counts["train"] - 0.6 * n) <= 1.0


def test_subject_spanning_groups_follows_majority():
    df = pd.DataFrame(
        {
            "subject_id": ["s1", "s1", "s1"] + [f"t{i}" for i in range(6)],
            "group": ["x", "y", "y"] + ["x", "x", "x", "y", "y", "y"],
        }
    )
    mapping = assign_subject_splits(df["subject_id"], df["group"], SPLIT3, seed=0)
    assert set(mapping) == {"s1", *[f"t{i}" for i in range(6)]}
    split = split_by_subject(df, SPLIT3, seed=0)
    assert split.iloc[0] == split.iloc[1] == split.iloc[2]
