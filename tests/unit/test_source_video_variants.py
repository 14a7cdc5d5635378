"""Video operations on a dataset of videos act on the original video, before frame
extraction and face detection (docs/perturbations.md, section 1)."""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd
import pytest
from matplotlib import cbook

from fairforge.faces import detect_and_align
from fairforge.images import read_image, write_image
from fairforge.video import (
    FrameVariantSettings,
    apply_video_op,
    degrade_clip,
    extract_frames,
    frame_listing,
    frame_variant_samples,
    has_source_videos,
    paste_back,
    read_video,
    video_variant_rows,
    write_video,
)
from fairforge.video.frame_variants import read_frames_at

CROP = 64
FACES = {"crop_size": CROP, "margin": 0.25}
N_FRAMES = 6


def _clip() -> np.ndarray:
    """An 80x94 portrait moving one pixel a frame (the HOG detector needs about 80 px)."""
    img = read_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))
    img = cv2.resize(img, (80, 94), interpolation=cv2.INTER_AREA)
    return np.stack([np.roll(img, k, axis=1) for k in range(N_FRAMES)])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One H.264 video, three of its six frames sampled as the clean pipeline does, a real
    sample per frame and a generated fake (red-tinted crop) of the middle one."""
    root = tmp_path_factory.mktemp("source_video")
    data, results = root / "data", root / "results"
    write_video(data / "videos/v.mp4", _clip(), crf=18)
    frames = extract_frames(data / "videos/v.mp4", data / "frames", "v", n=3)
    assert frames["frame_index"].tolist() == [0, 3, 5]  # evenly spaced, ends included
    sources = pd.DataFrame(
        {
            "image_id": frames["image_id"],
            "path": [f"frames/v/{i}.png" for i in frames["image_id"]],
            "video_path": "videos/v.mp4",
        }
    )
    rows = []
    for image_id, index in zip(frames["image_id"], frames["frame_index"]):
        clean = detect_and_align(read_image(data / f"frames/v/{image_id}.png"), **FACES)
        assert clean.ok
        write_image(results / f"crops/{image_id}.png", clean.crop)
        rows.append((f"real__{image_id}", image_id, 0, "real", "crops", None, "imported", index))
        if index == 3:
            fake = clean.crop.copy()
            fake[..., 0] = np.clip(fake[..., 0].astype(int) + 80, 0, 255)
            write_image(results / f"fakes/{image_id}.png", fake)
            rows.append(
                (f"fake__{image_id}", image_id, 1, "faceswap", "fakes", None, "generated", index)
            )
    samples = pd.DataFrame(
        [
            {
                "sample_id": sid,
                "image_id": iid,
                "split": "test",
                "label": label,
                "method": method,
                "group": "g",
                "path": f"{folder}/{iid}.png",
                "mask_path": mask,
                "origin": origin,
                "video_id": "v",
                "frame_index": index,
            }
            for sid, iid, label, method, folder, mask, origin, index in rows
        ]
    )
    return {"data": data, "results": results, "sources": sources, "samples": samples}


def _run(world, variant, out, samples=None):
    settings = FrameVariantSettings(
        root=world["data"],
        results_root=world["results"],
        faces=FACES,
        cache_dir=world["results"] / "cache",
    )
    return frame_variant_samples(
        world["samples"] if samples is None else samples,
        world["sources"],
        variant,
        settings,
        out_dir=world["results"] / out,
    ).set_index("sample_id")


def test_listing_names_each_frames_source_video(tmp_path):
    write_video(tmp_path / "clips/a.mp4", _clip(), crf=18)
    videos = pd.DataFrame(
        {"video_id": ["a"], "path": ["clips/a.mp4"], "subject_id": ["s"], "attributes": [{}]}
    )
    listing = frame_listing(videos, tmp_path, n_frames=2, workers=1)
    assert listing["video_path"].tolist() == ["clips/a.mp4"] * 2
    assert has_source_videos(listing) and not has_source_videos(listing.drop(columns="video_path"))


def test_the_operation_encodes_the_whole_original_video(world, tmp_path):
    table = _run(world, "vid_h264@23~frame", "h264_frame")
    assert table["ok"].all(), table["reason"].tolist()
    # Independently: every frame of the original, kept losslessly, through H.264 at CRF 23,
    # then the clean frames' indices decoded and their faces found again.
    write_video(tmp_path / "all.mkv", read_video(world["data"] / "videos/v.mp4"), codec="lossless")
    degraded = read_video(apply_video_op(tmp_path / "all.mkv", tmp_path / "d.mp4", "vid_h264@23"))
    assert len(degraded) == N_FRAMES
    for sid, index in (("real__v_f0000", 0), ("real__v_f0005", 5)):
        expected = detect_and_align(degraded[index], **FACES).crop
        assert np.array_equal(read_image(world["results"] / table.loc[sid, "path"]), expected)
    # not the clip of the three sampled frames that the crop pipeline used to encode
    sampled = np.stack([read_image(world["data"] / p) for p in world["sources"]["path"]])
    clip = degrade_clip(sampled, "vid_h264@23", tmp_path / "clips")
    assert not np.array_equal(clip[2], degraded[5])


def test_a_generated_fake_is_pasted_into_its_frame_before_encoding(world, tmp_path):
    table = _run(world, "vid_h264@23", "h264_fake")
    assert table.loc[["fake__v_f0003", "real__v_f0003"], "ok"].all()
    got = read_image(world["results"] / table.loc["fake__v_f0003", "path"])
    # Independently: the fake warped into frame 3 of the whole original video, that video
    # kept losslessly, through H.264 at CRF 23, frame 3 decoded and its face found again.
    # (A bound on the colour change would measure the codec: chroma subsampling carries the
    # red tint into green by an amount that moves with the encoder build.)
    original = read_video(world["data"] / "videos/v.mp4")
    frames = original.copy()
    source = read_image(world["data"] / "frames/v/v_f0003.png")
    fake_crop = read_image(world["results"] / "fakes/v_f0003.png")
    frames[3] = paste_back(source, fake_crop, detect_and_align(source, **FACES).matrix)
    write_video(tmp_path / "all.mkv", frames, codec="lossless")
    degraded = read_video(apply_video_op(tmp_path / "all.mkv", tmp_path / "d.mp4", "vid_h264@23"))
    assert np.array_equal(got, detect_and_align(degraded[3], **FACES).crop)
    # and the real sample's crop is the same frame of the untouched video through H.264
    write_video(tmp_path / "plain.mkv", original, codec="lossless")
    plain = read_video(apply_video_op(tmp_path / "plain.mkv", tmp_path / "p.mp4", "vid_h264@23"))
    real = read_image(world["results"] / table.loc["real__v_f0003", "path"])
    assert np.array_equal(real, detect_and_align(plain[3], **FACES).crop)
    # The pasted frame is the one that changed, where the fake went, and the change is the
    # red tint: each measured against the codec's own noise in the same two encodes (the
    # other frames, the rest of frame 3, the other channels), since x264 spreads the change
    # over every frame by an amount its build decides. Measured over repeated runs, x264 on
    # 1 and 2 threads, its assembly on and off, ffmpeg's SIMD off and a second build (ffmpeg
    # 5.1): frame 3 differs 3.8-4.3 times more than any other, its red rises 20-25 times the
    # change outside the paste and 6.6-7.6 times the green and blue change inside it.
    diff = degraded.astype(int) - plain
    per_frame = np.abs(diff).mean(axis=(1, 2, 3))
    assert per_frame[3] > 2 * np.delete(per_frame, 3).max(), per_frame
    pasted = (frames[3] != original[3]).any(axis=-1).astype(np.uint8)
    inside = cv2.erode(pasted, np.ones((5, 5), np.uint8)) > 0
    outside = cv2.dilate(pasted, np.ones((9, 9), np.uint8)) == 0
    red, others = diff[3][inside, 0].mean(), np.abs(diff[3][inside, 1:]).mean()
    assert red > 5 * np.abs(diff[3][outside]).mean() and red > 3 * others, (red, others)


def test_crop_mode_video_variants_run_the_same_way_and_deterministically(world):
    crop = _run(world, "vid_hflip@1", "flip_crop")
    frame = _run(world, "vid_hflip@1~frame", "flip_frame")
    again = _run(world, "vid_hflip@1", "flip_again")
    assert crop["ok"].all() and (crop["n_faces"] >= 1).all()
    for sid in crop.index:
        a = read_image(world["results"] / crop.loc[sid, "path"])
        assert a.shape == (CROP, CROP, 3)
        assert np.array_equal(a, read_image(world["results"] / frame.loc[sid, "path"]))
        assert np.array_equal(a, read_image(world["results"] / again.loc[sid, "path"]))


def test_frames_missing_from_a_video_are_rows_with_a_reason(world, tmp_path):
    short = tmp_path / "short.mkv"
    write_video(short, _clip()[:4], codec="lossless")
    frames, n = read_frames_at(short, [1, 3, 5])
    assert sorted(frames) == [1, 3] and n == 4
    assert np.array_equal(frames[3], _clip()[3])
    # a sample whose frame index lies past the degraded video's end
    late = world["samples"].iloc[[0]].assign(sample_id="late", frame_index=9)
    table = _run(world, "vid_h264@40~frame", "late", samples=late)
    assert not table.loc["late", "ok"]
    assert "frame 9" in table.loc["late", "reason"] and "6 frames" in table.loc["late", "reason"]


def test_the_shard_job_chooses_the_original_video_when_the_sources_name_it(world):
    settings = FrameVariantSettings(root=world["data"], results_root=world["results"], faces=FACES)
    real = world["samples"][world["samples"]["method"] == "real"]
    on_video = video_variant_rows(
        real, world["sources"], "vid_hflip@1", settings, out_dir=world["results"] / "rows_v"
    )
    on_crops = video_variant_rows(
        real,
        world["sources"].drop(columns="video_path"),
        "vid_hflip@1",
        settings,
        out_dir=world["results"] / "rows_c",
    )
    assert on_video["ok"].all() and on_crops["ok"].all()
    assert "n_faces" in on_video.columns and "n_faces" not in on_crops.columns  # faces found again
    crop = read_image(world["data"] / "frames/v/v_f0000.png")
    flipped_crop = read_image(world["results"] / on_crops["path"].iloc[0])
    assert flipped_crop.shape == read_image(world["results"] / real["path"].iloc[0]).shape
    assert crop.shape[:2] != flipped_crop.shape[:2]


def test_a_folder_of_frames_is_the_video(tmp_path):
    """Datasets shipped as frame folders (FaceForensics++ ``images/``): the folder's frames,
    in name order, are the video the operation encodes."""
    clip = _clip()
    folder = tmp_path / "data/images/v"
    for k, frame in enumerate(clip):
        write_image(folder / f"{k:04d}.png", frame)
    ids = ["v_f0000", "v_f0005"]
    sources = pd.DataFrame(
        {
            "image_id": ids,
            "path": [(folder / "0000.png").as_posix(), (folder / "0005.png").as_posix()],
            "video_path": folder.as_posix(),
        }
    )
    samples = pd.DataFrame(
        {
            "sample_id": [f"real__{i}" for i in ids],
            "image_id": ids,
            "split": "test",
            "label": 0,
            "method": "real",
            "group": "g",
            "path": "",
            "mask_path": None,
            "origin": "imported",
            "video_id": "v",
            "frame_index": [0, 5],
        }
    )
    table = frame_variant_samples(
        samples,
        sources,
        "vid_h264@23~frame",
        FrameVariantSettings(
            root=tmp_path / "data",
            results_root=tmp_path / "results",
            faces=FACES,
            cache_dir=tmp_path / "cache",
        ),
        out_dir=tmp_path / "results/out",
    )
    assert table["ok"].all(), table["reason"].tolist()
    write_video(tmp_path / "all.mkv", clip, codec="lossless")
    degraded = read_video(apply_video_op(tmp_path / "all.mkv", tmp_path / "d.mp4", "vid_h264@23"))
    expected = detect_and_align(degraded[5], **FACES).crop
    assert np.array_equal(read_image(tmp_path / "results" / table["path"].iloc[1]), expected)
