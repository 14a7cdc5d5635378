"""FaceForensics++ and Celeb-DF v2 adapters on fixture trees in their released layouts."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import yaml

import fairforge.video  # noqa: F401  (registers the frame sampler and synthetic_video)
from fairforge.config import validate_config
from fairforge.images import read_image, write_image
from fairforge.sources import SourceError, build_sources, check_subject_disjoint, get_adapter
from fairforge.sources.synthetic import sample_subject
from fairforge.video import compressed_copies
from fairforge.video.clips import render_clip
from fairforge.video.ffmpeg import write_video
from snakemake_run import snakemake
from test_labelled_workflow import face_mask
from test_sources import write_jpeg

IDS = ["000", "001", "002", "003", "004", "005"]
PAIRS = {"train": [["000", "001"]], "val": [["002", "003"]], "test": [["004", "005"]]}


def faceforensics_tree(root: Path, compression: str = "c23", frames: int = 5) -> Path:
    """Frames as FaceForensics++'s extraction script writes them, tiny images."""

    def frames_of(folder: Path, seed: int) -> None:
        for i in range(frames):
            write_jpeg(folder / f"{i:04d}.png", 24, 20, seed=seed + i)

    for k, vid in enumerate(IDS):
        frames_of(root / f"original_sequences/youtube/{compression}/images/{vid}", 10 * k)
    for m, method in enumerate(("Deepfakes", "NeuralTextures")):
        for pair in (p for v in PAIRS.values() for p in v):
            for a, b in (pair, pair[::-1]):
                folder = root / f"manipulated_sequences/{method}/{compression}/images/{a}_{b}"
                frames_of(folder, 1000 * (m + 1) + int(a))
    (root / "splits").mkdir(parents=True)
    for split, pairs in PAIRS.items():
        (root / "splits" / f"{split}.json").write_text(json.dumps(pairs))
    pd.DataFrame(
        {"id": IDS, "race": ["A", "B"] * 3, "gender": ["f", "f", "m", "m", "f", "m"]}
    ).to_csv(root / "ff_attributes.csv", index=False)
    return root


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
    assert get_adapter("faceforensics").count_items("ff", cfg) == 18 * 3
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
    assert get_adapter("faceforensics").count_items("ff", cfg) == 18 * 5


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


def noise_video(path: Path, seed: int, frames: int = 6, size: int = 32) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (size, size))
    rng = np.random.default_rng(seed)
    for _ in range(frames):
        writer.write(rng.integers(0, 256, (size, size, 3), dtype=np.uint8))
    writer.release()


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
    assert get_adapter("celebdf").imported_methods("cd", {}) == ["Celeb-synthesis"]
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

# The fixture videos: synthetic faces talking for three frames, 128 px (dlib's HOG detector
# finds no face at 64 px), two frames sampled per video; crops are 64 px (tiny_config).
CLIP_SIZE, CLIP_FRAMES, SEED = 128, 3, 5
# group -> the renderer's tone and presentation; an identity's group is the parity of its
# number (even light, odd dark), so every split has both groups.
FACE_GROUPS = {"light": ("tone1", "female"), "dark": ("tone4", "male")}


def identity(key: str, number: int):
    tone, gender = FACE_GROUPS["light" if number % 2 == 0 else "dark"]
    return sample_subject(SEED, key, tone, gender)


def face_video(path: Path, target, clip: str, donor=None) -> None:
    """A clip of ``target`` talking; with a ``donor``, a fake as a dataset ships it: the
    donor's face rendered with the same motion, blended into the target's frames."""
    frames = render_clip(target, SEED, clip, n_frames=CLIP_FRAMES, size=CLIP_SIZE)
    if donor is not None:
        mask = face_mask(CLIP_SIZE)
        other = render_clip(donor, SEED, clip, n_frames=CLIP_FRAMES, size=CLIP_SIZE)
        frames = np.clip(frames * (1 - mask) + other * mask, 0, 255).astype(np.uint8)
    write_video(path, frames, fps=10)


def attributes_csv(path: Path, ids: dict[str, int]) -> str:
    groups = ["light" if n % 2 == 0 else "dark" for n in ids.values()]
    pd.DataFrame({"id": list(ids), "group": groups}).to_csv(path, index=False)
    return path.name


def video_datasets(base: Path) -> dict[str, dict]:
    """FaceForensics++, Celeb-DF v2, DFDC and DeeperForensics-1.0 fixture trees in their
    released layouts, and their dataset blocks."""
    ff, cd, dfdc, dfr = (base / n for n in ("FF", "Celeb-DF-v2", "DFDC", "DFR"))
    youtube = ff / "original_sequences/youtube/c23/videos"
    ff_ids = {f"{n:03d}": n for n in range(6)}
    people = {vid: identity(f"ff{vid}", n) for vid, n in ff_ids.items()}
    for vid in ff_ids:
        face_video(youtube / f"{vid}.mp4", people[vid], f"ff{vid}")
    for pair in (p for v in PAIRS.values() for p in v):
        for a, b in (pair, pair[::-1]):
            fake = ff / f"manipulated_sequences/Deepfakes/c23/videos/{a}_{b}.mp4"
            face_video(fake, people[a], f"ff{a}", donor=people[b])
    (ff / "splits").mkdir()
    for split, pairs in PAIRS.items():
        (ff / "splits" / f"{split}.json").write_text(json.dumps(pairs))

    celeb = {f"id{n}": identity(f"cd{n}", n) for n in range(4)}
    for key in celeb:
        face_video(cd / "Celeb-real" / f"{key}_0000.mp4", celeb[key], f"cd{key}")
    for a, b in (("id0", "id1"), ("id1", "id0"), ("id2", "id3"), ("id3", "id2")):
        name = f"{a}_{b}_0000"
        face_video(cd / "Celeb-synthesis" / f"{name}.mp4", celeb[a], f"cd{a}", celeb[b])
    face_video(cd / "YouTube-real" / "00000.mp4", identity("yt0", 0), "yt0")
    (cd / "List_of_testing_videos.txt").write_text(
        "1 Celeb-real/id2_0000.mp4\n1 Celeb-real/id3_0000.mp4\n1 YouTube-real/00000.mp4\n"
        "0 Celeb-synthesis/id2_id3_0000.mp4\n0 Celeb-synthesis/id3_id2_0000.mp4\n"
    )

    part = dfdc / "dfdc_train_part_0"
    actors = {f"r{n}": identity(f"dfdc{n}", n) for n in range(2)}
    meta = {}
    for n, (real, person) in enumerate(actors.items()):
        face_video(part / f"{real}.mp4", person, f"dfdc{real}")
        face_video(part / f"f{n}.mp4", person, f"dfdc{real}", identity(f"dfdc_donor{n}", n))
        meta[f"{real}.mp4"] = {"label": "REAL", "split": "train", "original": None}
        meta[f"f{n}.mp4"] = {"label": "FAKE", "split": "train", "original": f"{real}.mp4"}
    (part / "metadata.json").write_text(json.dumps(meta))

    # DeeperForensics-1.0's fakes swap an actor's face onto FF++ target videos 004 and 005
    # (the test pair); targets 000-003 have no fakes here, so their gender is unknown.
    for target, actor in (("004", "W104"), ("005", "M105")):
        fake = dfr / "manipulated_videos/end_to_end" / f"{target}_{actor}.mp4"
        face_video(fake, people[target], f"ff{target}", identity(actor, ff_ids[target]))
    (dfr / "lists" / "splits").mkdir(parents=True)
    for split in ("train", "val"):
        (dfr / "lists" / "splits" / f"{split}.txt").write_text("")
    (dfr / "lists" / "splits" / "test.txt").write_text("004_W104.mp4\n005_M105.mp4\n")

    frames = {"frames_per_video": 2}
    return {
        "ffpp": {
            "adapter": "faceforensics",
            "root": str(ff),
            "split": "official",
            "options": {
                **frames,
                "methods": ["Deepfakes"],
                "attributes": attributes_csv(ff / "groups.csv", ff_ids),
            },
        },
        "celebdf": {
            "adapter": "celebdf",
            "root": str(cd),
            "split": "official",
            "options": {
                **frames,
                "attributes": attributes_csv(
                    cd / "groups.csv", {**{f"id{n}_0000": n for n in range(4)}, "00000": 0}
                ),
            },
        },
        "dfdc": {
            "adapter": "dfdc",
            "root": str(dfdc),
            "split": "test_only",
            "options": {
                **frames,
                "attributes": attributes_csv(dfdc / "groups.csv", {"r0": 0, "r1": 1}),
            },
        },
        "dfr": {
            "adapter": "deeperforensics",
            "root": str(dfr),
            "split": "official",
            "group_by": ["gender"],
            "options": {**frames, "targets": str(youtube)},
        },
    }


@pytest.mark.workflow
def test_four_video_datasets_train_on_ffpp_and_reach_the_fairness_table(repo_root, tmp_path):
    """One real run: a detector trains on FaceForensics++ (official split, its Deepfakes, no
    generated fakes, H.264-compressed training crops) and is tested on it, Celeb-DF v2 (its test list), DFDC (test only) and
    DeeperForensics-1.0 (its test split), up to the fairness and per-method tables."""
    datasets = video_datasets(tmp_path / "data")
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {
        name: {"group_by": ["group"], **block, "forgery": False} for name, block in datasets.items()
    }
    # The detector trains on H.264-compressed copies of FF++'s training crops.
    config["datasets"]["ffpp"]["train_compression"] = "vid_h264@40"
    config["forgery"]["methods"] = ["faceswap"]
    config["training"]["train_methods"] = ["Deepfakes"]
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = ("results/fairness_table.csv", "results/cross_manipulation.csv")
    snakemake(repo_root, workdir, "--cores", "2", *targets)

    results = workdir / "results"
    methods = {
        "ffpp": "Deepfakes",
        "celebdf": "Celeb-synthesis",
        "dfdc": "DFDC",
        "dfr": "end_to_end",
    }
    for name, method in methods.items():
        sources = pd.read_parquet(results / name / "sources.parquet")
        usable = sources[sources["ok"]]
        assert set(usable["method"]) == {"real", method}, name
        assert (usable.groupby("video_id").size() == 2).all(), name
        check_subject_disjoint(usable)
        # No forgery or pairing job ran: the datasets bring their fakes.
        assert not (results / name / "forgeries").exists()
        assert not (results / name / "pairs.parquet").exists()
        preds = pd.read_parquet(results / "predictions" / "meso4" / name / "clean.parquet")
        # Test rows of every dataset are scored (val rows too where a dataset has them).
        assert "test" in set(preds["split"]) and set(preds["method"]) == {"real", method}
        assert set(preds["group"]) == {"light", "dark"} or name == "dfr", name
    copies = pd.read_parquet(results / "ffpp" / "train_copies" / "crops.parquet")
    moved = copies["path"].str.startswith("ffpp/train_copies/crops/")
    assert moved.equals(copies["split"] == "train") and moved.sum() == 4 * 2
    assert all((results / p).is_file() for p in copies["path"])
    dfr = pd.read_parquet(results / "dfr" / "sources.parquet").drop_duplicates("video_id")
    assert dfr.loc[~dfr["ok"], "reason"].str.startswith("target video without fakes").sum() == 4
    assert set(dfr.loc[dfr["ok"], "group"]) == {"female", "male"}
    assert set(pd.read_parquet(results / "dfdc" / "sources.parquet")["split"]) == {"test"}

    table = pd.read_csv(results / "fairness_table.csv")
    assert set(table["dataset"]) == set(methods) and "DPD" in set(table["metric"])
    per_method = pd.read_csv(results / "detection_per_method.csv")
    assert set(zip(per_method["dataset"], per_method["method"])) == set(methods.items())
    cross = pd.read_csv(results / "cross_manipulation.csv")
    assert set(cross["trained_on"]) == {"Deepfakes"}
    assert set(methods.values()) | {"average"} <= set(cross.columns)


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
    assert get_adapter("video").imported_methods("v", cfg) == ["lipsync", "swap"]


def dfdc_tree(root: Path, size: int = 32) -> Path:
    """Two part folders as the DFDC release has them; originals r0..r3, fakes of each."""
    parts = {
        "dfdc_train_part_0": {
            "r0.mp4": {"label": "REAL", "split": "train", "original": None},
            "r1.mp4": {"label": "REAL", "split": "train", "original": None},
            "f0.mp4": {"label": "FAKE", "split": "train", "original": "r0.mp4"},
            "f1.mp4": {"label": "FAKE", "split": "train", "original": "r1.mp4"},
        },
        "dfdc_train_part_1": {
            "r2.mp4": {"label": "REAL", "split": "train", "original": None},
            "r3.mp4": {"label": "REAL", "split": "train", "original": None},
            "f2.mp4": {"label": "FAKE", "split": "train", "original": "r2.mp4"},
            "f3.mp4": {"label": "FAKE", "split": "train", "original": "r3.mp4"},
        },
    }
    for k, (part, meta) in enumerate(parts.items()):
        for i, name in enumerate(meta):
            noise_video(root / part / name, 10 * k + i, size=size)
        (root / part / "metadata.json").write_text(json.dumps(meta))
    return root


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
    assert get_adapter("dfdc").count_items("dfdc", cfg) == 10 * 2
    with pytest.raises(SourceError, match="no DFDC metadata.json"):
        build_sources("dfdc", out, "dfdc", folder=str(tmp_path / "results"))


def deeperforensics_tree(root: Path, ff_targets: Path, size: int = 32) -> Path:
    """DeeperForensics-1.0's end_to_end fakes of targets 000-003 with actors M004, W101,
    M005, W102, one actor's source recording, and its reference splits; the target videos
    are FaceForensics++'s (``ff_targets``)."""
    swaps = {"000": "M004", "001": "W101", "002": "M005", "003": "W102"}
    for i, (target, actor) in enumerate(swaps.items()):
        noise_video(ff_targets / f"{target}.mp4", 50 + i, size=size)
        for v, variant in enumerate(("end_to_end", "end_to_end_level_3")):
            noise_video(
                root / "manipulated_videos" / variant / f"{target}_{actor}.mp4",
                60 + 10 * v + i,
                size=size,
            )
    noise_video(
        root / "source_videos/W101/light_uniform/happy/camera_front/W101_light_uniform_happy"
        "_camera_front.mp4",
        90,
        size=size,
    )
    (root / "lists" / "splits").mkdir(parents=True)
    for split, names in {"train": ["000_M004", "001_W101"], "val": ["002_M005"]}.items():
        (root / "lists" / "splits" / f"{split}.txt").write_text(
            "".join(f"{n}.mp4\n" for n in names)
        )
    (root / "lists" / "splits" / "test.txt").write_text("003_W102.mp4\n")
    return root


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
    assert get_adapter("deeperforensics").imported_methods("d", {}) == ["end_to_end"]
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
            assert a.shape == b.shape and 0 < np.abs(a.astype(int) - b).mean() < 20, variant
        again = compressed_copies(samples, variant, results_root=results, out_dir=out)
        assert again["path"].tolist() == copies["path"].tolist()
    with pytest.raises(ValueError):
        compressed_copies(samples, "jpeg@31", results_root=results, out_dir=out)
