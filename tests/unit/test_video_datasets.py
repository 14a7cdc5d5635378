"""FaceForensics++ and Celeb-DF v2 adapters on fixture trees in their released layouts."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
import ffmpeg_reference
from fairforge.config import validate_config
from fairforge.images import read_image, write_image
from fairforge.sources import ADAPTERS, SourceError, build_sources, check_subject_disjoint
from fairforge.video import compressed_copies
from video_trees import (
    deeperforensics_tree,
    dfdc_tree,
    faceforensics_tree,
    noise_video,
)


def test_faceforensics_layout_labels_methods_and_official_split(tmp_path: Path):
    ff = faceforensics_tree(tmp_path / "FF")
    out = tmp_path / "results" / "ff" / "video_source"
    df = build_sources(
        "faceforensics",
        out,
        "ff",
        group_by=["race"],
        split="official",
        folder=str(ff),
        frames_per_video=3,
        attributes="ff_attributes.csv",
    )
    assert df["ok"].all(), df["reason"].unique()
    assert len(df) == (6 + 2 * 6) * 3
    assert df.groupby("method").size().to_dict() == {
        "Deepfakes": 18,
        "NeuralTextures": 18,
        "real": 18,
    }
    fake = df[df["video_id"] == "Deepfakes_000_001"].iloc[0]
    assert (fake["label"], fake["subject_id"], fake["source_subject"], fake["target_subject"]) == (
        1,
        "000",
        "001",
        "000",
    )
    # A fake takes its target's attributes; frames are sampled evenly (first and last).
    assert fake["group"] == "A" and sorted(set(df["frame_index"])) == [0, 2, 4]
    assert df.set_index("video_id").loc["youtube_004", "split"].unique().tolist() == ["test"]
    assert df.set_index("video_id").loc["NeuralTextures_003_002", "split"].unique().tolist() == [
        "val"
    ]
    check_subject_disjoint(df)
    assert Path(fake["path"]).is_file()

    # The adapter plans without decoding and names what the detectors may train on.
    cfg = {"adapter": "faceforensics", "root": str(ff), "options": {"frames_per_video": 3}}
    assert ADAPTERS.create("faceforensics").count_items("ff", cfg) == 18 * 3
    config = validate_config(
        {
            "datasets": {"ff": {**cfg, "split": "official", "forgery": False}},
            "detectors": {"x": {"arch": "meso4", "train_methods": ["Deepfakes"]}},
        }
    )
    assert config["datasets"]["ff"]["split"] == "official"


def test_faceforensics_frames_per_split(tmp_path: Path):
    """More frames of a training video than of a val or test one, on the official split."""
    ff = faceforensics_tree(tmp_path / "FF")
    df = build_sources(
        "faceforensics",
        tmp_path / "out",
        "ff",
        split="official",
        folder=str(ff),
        frames_per_video={"train": 5, "val": 1, "test": 2},
    )
    per_video = df.groupby("video_id").agg(split=("split", "first"), n=("frame_index", "size"))
    assert per_video.groupby("split")["n"].unique().map(list).to_dict() == {
        "test": [2],
        "train": [5],
        "val": [1],
    }
    assert df.loc[df["split"] == "test", "frame_index"].unique().tolist() == [0, 4]
    cfg = {
        "adapter": "faceforensics",
        "root": str(ff),
        "options": {"frames_per_video": {"train": 5, "test": 2}},
    }
    assert ADAPTERS.create("faceforensics").count_items("ff", cfg) == 18 * 5


def test_faceforensics_compression_and_missing_method_are_named(tmp_path: Path):
    ff = faceforensics_tree(tmp_path / "FF", compression="c40")
    with pytest.raises(SourceError, match="compression 'c50'"):
        build_sources("faceforensics", tmp_path / "o", "ff", folder=str(ff), compression="c50")
    with pytest.raises(SourceError, match="originals under"):
        build_sources("faceforensics", tmp_path / "o", "ff", folder=str(ff), compression="c23")
    with pytest.raises(SourceError, match="FaceShifter not found"):
        build_sources(
            "faceforensics",
            tmp_path / "o",
            "ff",
            folder=str(ff),
            compression="c40",
            methods=["FaceShifter"],
        )


def test_celebdf_layout_videos_and_test_list(tmp_path: Path):
    cd = tmp_path / "Celeb-DF-v2"
    for i, name in enumerate(["id0_0000", "id1_0000", "id2_0000", "id3_0000"]):
        noise_video(cd / "Celeb-real" / f"{name}.mp4", i)
    for i, name in enumerate(["00000", "00001"]):
        noise_video(cd / "YouTube-real" / f"{name}.mp4", 10 + i)
    for i, name in enumerate(["id0_id1_0000", "id2_id3_0000", "id3_id2_0000"]):
        noise_video(cd / "Celeb-synthesis" / f"{name}.mp4", 20 + i)
    (cd / "Celeb-synthesis" / "id9_0001.mp4").write_bytes(b"")  # a misnamed, empty file
    (cd / "List_of_testing_videos.txt").write_text(
        "1 Celeb-real/id2_0000.mp4\n0 Celeb-synthesis/id2_id3_0000.mp4\n1 YouTube-real/00001.mp4\n"
    )
    out = tmp_path / "results" / "cd" / "video_source"
    df = build_sources("celebdf", out, "cd", split="official", folder=str(cd), frames_per_video=2)
    by_video = df.drop_duplicates("video_id").set_index("video_id")
    assert by_video.loc[
        "Celeb-synthesis_id0_id1_0000", ["label", "method", "source_subject"]
    ].tolist() == [
        1,
        "Celeb-synthesis",
        "id1",
    ]
    assert by_video.loc["Celeb-real_id2_0000", "split"] == "test"
    assert by_video.loc["YouTube-real_00001", "split"] == "test"
    assert by_video.loc["Celeb-real_id0_0000", "split"] == "train"
    # The test list as published: id3 is in the test fake id2_id3, and its own video stays
    # in train (Celeb-DF's protocol is not subject-disjoint).
    assert by_video.loc["Celeb-real_id3_0000", ["split", "ok"]].tolist() == ["train", True]
    bad = by_video.loc["Celeb-synthesis_id9_0001"]
    assert not bad["ok"] and "unexpected Celeb-synthesis name" in bad["reason"]
    ok = df[df["ok"]]
    assert (ok.groupby("video_id").size() == 2).all()
    assert ADAPTERS.create("celebdf").imported_methods("cd", {}) == ["Celeb-synthesis"]
    # Asked to be subject-disjoint, id3's training video is kept, unusable, with why.
    strict = build_sources(
        "celebdf",
        out,
        "cd",
        split={"official": True, "subject_disjoint": True},
        folder=str(cd),
        frames_per_video=2,
    ).drop_duplicates("video_id")
    id3 = strict.set_index("video_id").loc["Celeb-real_id3_0000"]
    assert (id3["ok"], id3["reason"]) == (False, "subject also in the test split")
    check_subject_disjoint(strict[strict["ok"]])
    (cd / "other_list.txt").write_text("1 Celeb-real/id7_0000.mp4\n")
    with pytest.raises(SourceError, match="names none of the"):
        build_sources(
            "celebdf", out, "cd", split="official", folder=str(cd), test_list="other_list.txt"
        )


# ----------------------------------------------------------- the four video datasets, run


def test_video_adapter_reads_labels_methods_and_identities(tmp_path: Path):
    folder = tmp_path / "vids"
    rows = []
    for i, (label, method, source) in enumerate(
        [("0", "real", ""), ("1", "lipsync", "s2"), ("", "swap", "s0"), ("0", "swap", "")]
    ):
        noise_video(folder / f"v{i}.mp4", i)
        rows.append(
            {
                "path": f"v{i}.mp4",
                "subject_id": f"s{i % 2}",
                "group": "g",
                "label": label,
                "method": method,
                "source_subject": source,
                "target_subject": f"s{i % 2}" if source else "",
            }
        )
    pd.DataFrame(rows).to_csv(folder / "labels.csv", index=False)
    df = build_sources(
        "video", tmp_path / "out", "v", videos=str(folder), frames_per_video=2, split="test_only"
    )
    by_video = df.drop_duplicates("video_id").set_index("video_id")
    assert by_video["label"].tolist() == [0, 1, 1, 0]
    assert by_video["method"].tolist() == ["real", "lipsync", "swap", "swap"]
    assert by_video.loc["v1", ["source_subject", "target_subject"]].tolist() == ["s2", "s1"]
    # Every frame carries its video's labels; a real video with a method is kept, unusable.
    # (its one row, undecoded).
    assert (df.groupby("video_id")["label"].nunique() == 1).all() and len(df) == 3 * 2 + 1
    assert not by_video.loc["v3", "ok"] and "method 'real'" in by_video.loc["v3", "reason"]
    cfg = {"adapter": "video", "root": str(folder)}
    assert ADAPTERS.create("video").imported_methods("v", cfg) == ["lipsync", "swap"]


def test_dfdc_metadata_labels_originals_and_bad_entries(tmp_path: Path):
    dfdc = dfdc_tree(tmp_path / "dfdc")
    meta = json.loads((dfdc / "dfdc_train_part_1" / "metadata.json").read_text())
    meta["gone.mp4"] = {"label": "FAKE", "original": "r2.mp4"}  # listed, not on disk
    meta["odd.mp4"] = {"label": "MAYBE"}
    (dfdc / "dfdc_train_part_1" / "metadata.json").write_text(json.dumps(meta))
    out = tmp_path / "results" / "dfdc" / "video_source"
    df = build_sources(
        "dfdc", out, "dfdc", folder=str(dfdc), frames_per_video=2, split={"train": 0.5, "test": 0.5}
    )
    by_video = df.drop_duplicates("video_id").set_index("video_id")
    assert by_video.loc["f2", ["label", "method", "subject_id", "target_subject"]].tolist() == [
        1,
        "DFDC",
        "r2",
        "r2",
    ]
    assert by_video.loc["r1", ["label", "method"]].tolist() == [0, "real"]
    # A fake and its original share their split.
    assert by_video.loc["f1", "split"] == by_video.loc["r1", "split"]
    assert by_video.loc["gone", "reason"] == "video not found"
    assert "REAL or FAKE" in by_video.loc["odd", "reason"]
    assert df.loc[df["ok"]].groupby("video_id").size().eq(2).all() and df["ok"].sum() == 16
    check_subject_disjoint(df[df["ok"]])
    cfg = {"adapter": "dfdc", "root": str(dfdc), "options": {"frames_per_video": 2}}
    assert ADAPTERS.create("dfdc").count_items("dfdc", cfg) == 10 * 2
    with pytest.raises(SourceError, match="no DFDC metadata.json"):
        build_sources("dfdc", out, "dfdc", folder=str(tmp_path / "results"))


def test_deeperforensics_fakes_targets_source_videos_and_splits(tmp_path: Path):
    targets = tmp_path / "FF" / "original_sequences/youtube/c23/videos"
    dfr = deeperforensics_tree(tmp_path / "DeeperForensics-1.0", targets)
    out = tmp_path / "results" / "dfr" / "video_source"
    df = build_sources(
        "deeperforensics",
        out,
        "dfr",
        split="official",
        folder=str(dfr),
        frames_per_video=2,
        targets=str(targets),
        source_videos=True,
        variants=["end_to_end", "end_to_end_level_3"],
    )
    assert df["ok"].all(), df["reason"].unique()
    by_video = df.drop_duplicates("video_id").set_index("video_id")
    fake = by_video.loc["end_to_end_level_3_001_W101"]
    assert (fake["label"], fake["method"], fake["subject_id"], fake["source_subject"]) == (
        1,
        "end_to_end_level_3",
        "001",
        "W101",
    )
    # Gender from the actor's ID letter, for the fake, its target and the actor's recording.
    assert fake["group"] == "female" and by_video.loc["target_001", "group"] == "female"
    assert by_video.loc["target_000", "group"] == "male"
    recording = by_video.loc["source_W101_light_uniform_happy_camera_front"]
    assert (recording["label"], recording["subject_id"], recording["split"]) == (0, "W101", "train")
    assert by_video.loc["target_002", "split"] == "val" and fake["split"] == "train"
    assert by_video.loc["end_to_end_003_W102", "split"] == "test"
    check_subject_disjoint(df)
    assert ADAPTERS.create("deeperforensics").imported_methods("d", {}) == ["end_to_end"]
    with pytest.raises(SourceError, match="ships no real videos"):
        build_sources("deeperforensics", out, "dfr", folder=str(dfr), frames_per_video=1)
    with pytest.raises(SourceError, match="unknown DeeperForensics-1.0 variant"):
        build_sources("deeperforensics", out, "dfr", folder=str(dfr), variants=["level_9"])


def test_training_crops_as_jpeg_and_h264_copies(tmp_path: Path):
    """train_compression: the train rows point at compressed copies, the others stay."""
    results = tmp_path / "results"
    rng = np.random.default_rng(0)
    rows = []
    for k, split in enumerate(["train", "train", "train", "test"]):
        path = f"d/crops/c{k}.png"
        base = np.linspace(0, 255, 32, dtype=np.float32)[None, :, None] * np.ones((32, 1, 3))
        crop = np.clip(base + rng.normal(0, 12, (32, 32, 3)), 0, 255).astype(np.uint8)
        write_image(results / path, crop)
        rows.append(
            {
                "sample_id": f"real__v{k // 2}_f{k % 2:04d}",
                "split": split,
                "method": "real",
                "path": path,
                "video_id": f"v{k // 2}",
                "frame_index": k % 2,
            }
        )
    samples = pd.DataFrame(rows)
    # The H.264 copies are each clip's train crops, in frame order, through ffmpeg's H.264 at
    # CRF 40 run directly (a bound on their error would measure the x264 build).
    h264 = {}
    for _, clip in samples[samples["split"] == "train"].groupby("video_id"):
        paths = clip.sort_values("frame_index")["path"]
        frames = np.stack([read_image(results / p) for p in paths])
        h264.update(zip(paths, ffmpeg_reference.h264_frames(frames, 40)))
    for variant in ("jpeg@30", "vid_h264@40"):
        out = results / "d" / "train_copies" / variant
        copies = compressed_copies(
            samples, variant, results_root=results, out_dir=out, cache_dir=tmp_path / "cache"
        )
        assert copies["sample_id"].tolist() == samples["sample_id"].tolist()
        train = copies["split"] == "train"
        assert copies.loc[~train, "path"].tolist() == ["d/crops/c3.png"]
        for new, old in zip(copies.loc[train, "path"], samples.loc[train, "path"]):
            assert new.startswith(f"d/train_copies/{variant}/")
            a, b = read_image(results / new), read_image(results / old)
            assert a.shape == b.shape and not np.array_equal(a, b), variant
            if variant == "vid_h264@40":
                assert np.array_equal(a, h264[old])
            if variant == "jpeg@30":  # the copy is the crop through libjpeg at quality 30
                ok, buf = cv2.imencode(
                    ".jpg", cv2.cvtColor(b, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 30]
                )
                assert ok
                encoded = cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
                assert np.array_equal(a, encoded)
        again = compressed_copies(samples, variant, results_root=results, out_dir=out)
        assert again["path"].tolist() == copies["path"].tolist()
    with pytest.raises(ValueError):
        compressed_copies(samples, "jpeg@31", results_root=results, out_dir=out)
