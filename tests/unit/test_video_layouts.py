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

import cv2
import numpy as np
import pandas as pd
import pytest
import yaml

import fairforge.video  # noqa: F401  (registers the frame sampler)
from fairforge.sources import SourceError, build_sources, get_adapter
from fairforge.sources.split import linked_subjects
from fairforge.video.clips import render_clip
from fairforge.video.ffmpeg import write_video
from snakemake_run import snakemake
from test_adapters_workflow import write_folder_tree
from test_labelled_workflow import face_mask
from test_video_datasets import CLIP_SIZE, SEED, attributes_csv, face_video, identity

FRAMES = 2  # frames sampled per video
# What the run is asked for next to the predictions, per dataset.
SHOWN = ("samples.parquet", "split_report.csv")


def tiny_video(path: Path, seed: int, frames: int = 3, size: int = 32) -> Path:
    """A few frames of noise, H.264 in the suffix's container."""
    rng = np.random.default_rng(seed)
    return write_video(path, rng.integers(0, 256, (frames, size, size, 3), dtype=np.uint8), fps=10)


def jpeg_frames(folder: Path, frames: np.ndarray) -> None:
    """VidTIMIT's frames: JPEG files named 001, 002, ... without a suffix."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, frame in enumerate(frames, start=1):
        ok, data = cv2.imencode(".jpg", cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        assert ok
        (folder / f"{i:03d}").write_bytes(data.tobytes())


# ------------------------------------------------------------------------- fixture trees


def uadfv_tree(root: Path, pairs: int, faces: bool = False) -> Path:
    """``real/0000.mp4`` and ``fake/0000_fake.mp4`` per pair, and an attributes csv (even
    numbers light, odd dark)."""
    for k in range(pairs):
        vid = f"{k:04d}"
        if faces:
            person = identity(f"ua{k}", k)
            face_video(root / "real" / f"{vid}.mp4", person, f"ua{k}")
            donor = identity(f"ua_donor{k}", k)
            face_video(root / "fake" / f"{vid}_fake.mp4", person, f"ua{k}", donor)
        else:
            tiny_video(root / "real" / f"{vid}.mp4", k)
            tiny_video(root / "fake" / f"{vid}_fake.mp4", 100 + k)
    attributes_csv(root / "groups.csv", {f"{k:04d}": k for k in range(pairs)})
    return root


DFTIMIT_PAIR = ("fadg0", "fram1")


def dftimit_tree(root: Path, vidtimit: Path, faces: bool = False, lower: bool = True) -> None:
    """DeepfakeTIMIT's ``{quality}/{subject}/sa1-video-{other}.avi`` both ways for one pair
    (with the sentence's ``sa1.wav`` next to it), and VidTIMIT's recordings of the pair:
    fadg0's as suffix-less JPEG frame folders (with a head-rotation sequence), fram1's as a
    video file."""
    people = {s: identity(s, 0) for s in DFTIMIT_PAIR}

    def clip(person: str, donor: str | None = None) -> np.ndarray:
        frames = render_clip(people[person], SEED, person, n_frames=3, size=CLIP_SIZE)
        if donor is None:
            return frames
        mask = face_mask(CLIP_SIZE)
        other = render_clip(people[donor], SEED, person, n_frames=3, size=CLIP_SIZE)
        return np.clip(frames * (1 - mask) + other * mask, 0, 255).astype(np.uint8)

    for quality in ("higher_quality", "lower_quality") if lower else ("higher_quality",):
        for target, source in (DFTIMIT_PAIR, DFTIMIT_PAIR[::-1]):
            path = root / quality / target / f"sa1-video-{source}.avi"
            if faces:
                write_video(path, clip(target, source), fps=10)
            else:
                tiny_video(path, len(quality) + len(target))
            (path.parent / "sa1.wav").write_bytes(b"RIFF")
    fadg0 = clip("fadg0") if faces else np.full((3, 32, 32, 3), 90, np.uint8)
    jpeg_frames(vidtimit / "fadg0" / "video" / "sa1", fadg0)
    jpeg_frames(vidtimit / "fadg0" / "video" / "head", fadg0[:1])
    if faces:
        write_video(vidtimit / "fram1" / "sa1.avi", clip("fram1"), fps=10)
    else:
        tiny_video(vidtimit / "fram1" / "sa1.avi", 7)
    (vidtimit / "fram1" / "audio").mkdir(parents=True)


def forgerynet_tree(root: Path, faces: bool = False, bad_line: bool = False) -> Path:
    """Training and Validation, each with an image track (a real image, a FaceShifter fake)
    and a video track (a real video, a DeepFakes fake whose first two frames are forged),
    and their label lists."""
    for part, prefix in (("Training", "train"), ("Validation", "val")):
        n = len(prefix)
        images, videos = [], []
        for cls, name in ((0, "b/0001.jpg"), (1, "a/0001.jpg")):
            rel = f"{prefix}_image_release/{cls}/{name}"
            person = identity(f"fn{prefix}{cls}", cls)
            if faces:
                frame = render_clip(person, SEED, f"fn{prefix}{cls}", n_frames=1, size=CLIP_SIZE)
                cv2.imwrite(str(_mkdir(root / part / "image" / rel)), frame[0][..., ::-1])
            else:
                cv2.imwrite(
                    str(_mkdir(root / part / "image" / rel)), np.full((24, 24, 3), 9 * n, np.uint8)
                )
            images.append(f"{rel} {int(cls > 0)} {int(cls > 0)} {cls}")
        for cls, name in ((0, "d.mp4"), (3, "c.mp4")):
            rel = f"{prefix}_video_release/{cls}/{name}"
            path = root / part / "video" / rel
            if faces:
                person = identity(f"fv{prefix}{cls}", cls)
                donor = identity(f"fv_donor{prefix}", cls) if cls else None
                face_video(path, person, f"fv{prefix}{cls}", donor)
            else:
                tiny_video(path, n + cls)
            segments = f"1 {rel} 0 2 fake" if cls else f"0 {rel}"
            videos.append(f"{segments} {int(cls > 0)} {int(cls > 0)} {cls}")
        if bad_line:
            # a line whose binary and 16-class labels disagree
            images.append(f"{prefix}_image_release/1/a/0002.jpg 0 0 1")
        (root / part / "image_list.txt").write_text("\n".join(images) + "\n")
        (root / part / "video_list.txt").write_text("\n".join(videos) + "\n")
    return root


def _mkdir(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def celebdf_v1_first_release(root: Path, faces: bool = False) -> Path:
    """Celeb-DF v1's first archive: ``Real_1`` (celebrities), ``Real_2`` (YouTube),
    ``deepfake`` and ``test.txt``."""
    people = {f"id{n}": identity(f"v1id{n}", n) for n in range(2)}
    videos = {f"Real_1/{key}_0000.mp4": (key, None) for key in people}
    videos.update(
        {f"deepfake/{a}_{b}_0000.mp4": (a, b) for a, b in (("id0", "id1"), ("id1", "id0"))}
    )
    videos["Real_2/00000.mp4"] = ("yt", None)
    people["yt"] = identity("v1yt", 0)
    for k, (rel, (target, donor)) in enumerate(videos.items()):
        if faces:
            face_video(root / rel, people[target], f"v1{target}", donor and people[donor])
        else:
            tiny_video(root / rel, k)
    (root / "test.txt").write_text("1 Real_1/id1_0000.mp4\n0 deepfake/id1_id0_0000.mp4\n")
    attributes_csv(root / "groups.csv", {"id0": 0, "id1": 1, "00000": 0})
    return root


# Celeb-DF v2 for the detector to train on: identities id0..id5 (even light, odd dark); the
# test list holds id4's and id5's videos and the fake of id4 with id5's face, and id5's face
# is also in the training fake id1_id5: a published list that is not subject-disjoint.
CELEB_SWAPS = (("id0", "id1"), ("id1", "id0"), ("id2", "id3"), ("id3", "id2"), ("id4", "id5"))
CELEB_SWAPS += (("id1", "id5"),)
CELEB_TEST = (
    "1 Celeb-real/id4_0000.mp4\n1 Celeb-real/id5_0000.mp4\n0 Celeb-synthesis/id4_id5_0000.mp4\n"
)


def celebdf_tree(root: Path) -> Path:
    people = {f"id{n}": identity(f"cd{n}", n) for n in range(6)}
    for key, person in people.items():
        face_video(root / "Celeb-real" / f"{key}_0000.mp4", person, f"cd{key}")
    for a, b in CELEB_SWAPS:
        face_video(root / "Celeb-synthesis" / f"{a}_{b}_0000.mp4", people[a], f"cd{a}", people[b])
    (root / "List_of_testing_videos.txt").write_text(CELEB_TEST)
    attributes_csv(root / "groups.csv", {key: int(key[2:]) for key in people})
    return root


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
    assert get_adapter("uadfv").count_items("ua", cfg) == 11 * FRAMES
    assert get_adapter("uadfv").imported_methods("ua", cfg) == ["UADFV"]
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
    assert get_adapter("dftimit").imported_methods("d", {"options": {"qualities": ["lower"]}}) == [
        "DF-TIMIT-LQ"
    ]
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
    assert get_adapter("forgerynet").count_items("fn", cfg) == 2 * (3 + 2 * FRAMES)
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


@pytest.mark.workflow
def test_new_adapters_run_to_predictions(repo_root, tmp_path):
    """One tiny real run: meso4 trains two epochs on Celeb-DF v2 (official split as
    published, a third of its train part carved out as val) and is tested on it, Celeb-DF v1
    (its first archive's names), UADFV, DF-TIMIT (both qualities, VidTIMIT reals), ForgeryNet
    (image and video tracks, its official parts) and DiveFace (its 70/30 split by identity)."""
    data = tmp_path / "data"
    cd = celebdf_tree(data / "Celeb-DF-v2")
    v1 = celebdf_v1_first_release(data / "Celeb-DF-v1", faces=True)
    ua = uadfv_tree(data / "UADFV", pairs=2, faces=True)
    dft, vidtimit = data / "DeepfakeTIMIT", data / "VidTIMIT"
    dftimit_tree(dft, vidtimit, faces=True)
    fn = forgerynet_tree(data / "ForgeryNet", faces=True)
    write_folder_tree(data / "DiveFace", {"HN4K_120": "dark", "HB4K_120": "light"}, 2)
    frames = {"frames_per_video": FRAMES}
    config = yaml.safe_load((repo_root / "tests" / "data" / "tiny_config.yaml").read_text())
    config["datasets"] = {
        "celebdf": {
            "adapter": "celebdf",
            "root": str(cd),
            "group_by": ["group"],
            "split": {"official": True, "val_from_train": 0.34},
            "options": {**frames, "attributes": "groups.csv"},
        },
        "celebdf_v1": {
            "adapter": "celebdf_v1",
            "root": str(v1),
            "group_by": ["group"],
            "split": "official",
            "options": {**frames, "attributes": "groups.csv"},
        },
        "uadfv": {
            "adapter": "uadfv",
            "root": str(ua),
            "split": "test_only",
            "options": {**frames, "attributes": "groups.csv"},
        },
        "dftimit": {
            "adapter": "dftimit",
            "root": str(dft),
            "split": "test_only",
            "options": {**frames, "vidtimit": str(vidtimit), "qualities": ["higher", "lower"]},
        },
        "forgerynet": {
            "adapter": "forgerynet",
            "root": str(fn),
            "split": "official",
            "options": frames,
        },
        "diveface": {"adapter": "diveface", "root": str(data / "DiveFace"), "split": "official"},
    }
    for block in config["datasets"].values():
        block["forgery"] = False
    config["training"].update(epochs=2, train_methods=["Celeb-synthesis"])
    config["variants"] = ["clean"]
    config["ranking"] = {"enabled": False}
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = [f"results/predictions/meso4/{name}/clean.parquet" for name in config["datasets"]]
    targets += [f"results/{name}/{f}" for name in config["datasets"] for f in SHOWN]
    snakemake(repo_root, workdir, "--cores", "2", *targets)

    results = workdir / "results"
    methods = {
        "celebdf": {"Celeb-synthesis"},
        "celebdf_v1": {"Celeb-synthesis"},
        "uadfv": {"UADFV"},
        "dftimit": {"DF-TIMIT-HQ", "DF-TIMIT-LQ"},
        "forgerynet": {"FaceShifter", "DeepFakes"},
        "diveface": set(),
    }
    for name, fakes in methods.items():
        sources = pd.read_parquet(results / name / "sources.parquet")
        assert sources["ok"].all(), (name, sources.loc[~sources["ok"], "reason"].unique())
        samples = pd.read_parquet(results / name / "samples.parquet")
        assert set(samples["method"]) == {"real", *fakes}, name
        preds = pd.read_parquet(results / "predictions" / "meso4" / name / "clean.parquet")
        assert "test" in set(preds["split"]) and set(preds["method"]) == {"real", *fakes}, name
        assert preds["score"].between(0, 1).all(), name

    # Celeb-DF keeps every training video (the published list) and has a val part, on which
    # each epoch was judged: the best epoch is chosen, not the first by default.
    celeb = pd.read_parquet(results / "celebdf" / "sources.parquet").drop_duplicates("video_id")
    assert set(celeb["split"]) == {"train", "val", "test"}
    assert (
        celeb.loc[celeb["video_id"] == "Celeb-synthesis_id1_id5_0000", "split"]
        .isin(["train", "val"])
        .all()
    )
    report = pd.read_csv(results / "celebdf" / "split_report.csv").set_index("split")
    assert not report["subject_disjoint"].any()
    assert report.loc["none", "rows"] == 0 and report.loc["val", "videos"] > 0
    assert report.loc["test", "shared_subjects"] == 1  # id5: in a test video and a training fake
    log = pd.read_csv(results / "models" / "meso4" / "training_log.csv")
    assert len(log) == 2 and (log["n_val"] > 0).all() and log["val_auc"].notna().all()
    # DiveFace: 70/30 by identity within each group (two identities a group here).
    dive = pd.read_parquet(results / "diveface" / "sources.parquet")
    assert (dive.groupby("subject_id")["split"].nunique() == 1).all()
    per_group = dive.drop_duplicates("subject_id").groupby(["group", "split"]).size()
    assert per_group.to_dict() == {
        ("Black_male", "test"): 1,
        ("Black_male", "train"): 1,
        ("Caucasian_male", "test"): 1,
        ("Caucasian_male", "train"): 1,
    }
    forgery = pd.read_csv(results / "forgerynet" / "split_report.csv").set_index("split")
    assert forgery.loc["train", "usable"] == 2 + 2 * FRAMES and forgery.loc["val", "rows"] == 0
