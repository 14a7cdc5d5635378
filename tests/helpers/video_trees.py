"""Video datasets in their released layouts (FaceForensics++, Celeb-DF, DFDC, DeeperForensics-1.0,
UADFV, DF-TIMIT, ForgeryNet) as tiny fixture trees."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from fairforge.sources.synthetic import sample_subject
from fairforge.video.clips import render_clip
from fairforge.video.ffmpeg import write_video
from source_trees import write_jpeg
from workflow_trees import face_mask

FRAMES = 2  # frames sampled per video

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


def noise_video(path: Path, seed: int, frames: int = 6, size: int = 32) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (size, size))
    rng = np.random.default_rng(seed)
    for _ in range(frames):
        writer.write(rng.integers(0, 256, (size, size, 3), dtype=np.uint8))
    writer.release()


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
