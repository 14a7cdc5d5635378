"""Faces stage: dlib detection, landmarks, alignment, bad inputs, determinism.

Positive tests use real face content: the Grace Hopper portrait that matplotlib ships as
sample data, and the synthetic renderer's faces.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
from matplotlib import cbook

from fairforge.faces import (
    FACES_COLUMNS,
    FaceModelError,
    detect_and_align,
    detection_rate_by_group,
    five_points,
    landmarks_array,
    model_path,
    process_faces,
    template_points,
    umeyama_similarity,
    warp_crop,
)
from fairforge.faces.align import TEMPLATE_5, transform_points
from fairforge.images import ImageError, read_image
from fairforge.manifest import check_columns, read_manifest, write_manifest
from fairforge.sources.synthetic import synthetic_sources

CROP = 128


@pytest.fixture(scope="module")
def hopper() -> np.ndarray:
    """A real frontal portrait (600x512), downscaled to 300 px wide to keep detection fast."""
    img = read_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))
    return cv2.resize(img, (300, 352), interpolation=cv2.INTER_AREA)


def bgr(rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)


# ------------------------------------------------------------------------------ geometry


def test_umeyama_recovers_similarity():
    rng = np.random.default_rng(0)
    src = rng.uniform(0, 100, (5, 2))
    angle, scale, shift = 0.4, 1.7, np.array([12.0, -30.0])
    rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    dst = scale * src @ rot.T + shift
    m = umeyama_similarity(src, dst)
    np.testing.assert_allclose(m[:, :2], scale * rot, atol=1e-9)
    np.testing.assert_allclose(m[:, 2], shift, atol=1e-9)
    # A mirrored target is fitted by a rotation, never by a reflection.
    mirrored = umeyama_similarity(src, dst * [-1, 1])
    assert np.linalg.det(mirrored[:, :2]) > 0


def test_template_and_five_points():
    np.testing.assert_allclose(template_points(112, 0.0), TEMPLATE_5 * 112)
    padded = template_points(256, 0.25)
    assert padded[:, 0].min() > 256 * 0.25 / 1.5 - 1e-9
    assert padded[0, 0] < padded[1, 0] and padded[3, 0] < padded[4, 0]  # image-left first
    pts = np.zeros((68, 2), np.float32)
    pts[36:42] = [10, 20]
    pts[42:48] = [30, 20]
    pts[30], pts[48], pts[54] = [20, 30], [12, 40], [28, 40]
    np.testing.assert_allclose(five_points(pts), [[10, 20], [30, 20], [20, 30], [12, 40], [28, 40]])


def test_warp_crop_antialiases_large_reductions():
    big = np.random.default_rng(1).integers(0, 256, (512, 512, 3), dtype=np.uint8)
    quarter = np.array([[0.25, 0, -0.375], [0, 0.25, -0.375]])  # pixel-centre 4x reduction
    out = warp_crop(big, quarter, 128)
    expected = cv2.resize(big, (128, 128), interpolation=cv2.INTER_AREA)
    assert np.abs(out.astype(int) - expected).max() <= 1
    # A plain bilinear warp would sample single pixels of the noise instead of averages.
    assert out.std() < big.std() * 0.5


# ----------------------------------------------------------------------- real detection


def test_detect_and_align_real_face(hopper: np.ndarray):
    result = detect_and_align(hopper, crop_size=CROP, margin=0.25)
    assert result.ok and result.reason == "" and result.n_faces == 1
    assert result.detector == "dlib_hog" and result.det_score > 0
    x0, y0, x1, y1 = result.bbox
    assert 0 <= x0 < x1 <= 300 and 0 <= y0 < y1 <= 352 and (x1 - x0) > 60
    assert result.crop.shape == (CROP, CROP, 3) and result.crop.dtype == np.uint8
    assert result.landmarks.shape == (68, 2) and result.landmarks.dtype == np.float32
    # The aligned 5 points sit on the template; all 68 lie inside the crop.
    assert np.abs(five_points(result.landmarks) - template_points(CROP, 0.25)).max() < 4.0
    assert (result.landmarks > 0).all() and (result.landmarks < CROP).all()
    # Crop pixels are the image pixels the transform says they are (at the nose tip).
    nose_img = transform_points(
        five_points(result.landmarks)[2:3], np.linalg.inv(np.vstack([result.matrix, [0, 0, 1]]))[:2]
    )[0]
    nx, ny = np.round(five_points(result.landmarks)[2]).astype(int)
    ix, iy = np.round(nose_img).astype(int)
    assert np.abs(result.crop[ny, nx].astype(int) - hopper[iy, ix]).max() < 40


def test_two_faces_keep_the_largest(hopper: np.ndarray):
    small = cv2.resize(hopper, (150, 176), interpolation=cv2.INTER_AREA)
    canvas = np.full((352, 470, 3), 255, np.uint8)
    canvas[:, :300] = hopper
    canvas[100:276, 310:460] = small
    result = detect_and_align(canvas, crop_size=CROP)
    assert result.ok and result.n_faces == 2
    assert result.bbox[2] <= 300  # the big face on the left, not the small one


def test_cnn_detector(hopper: np.ndarray):
    result = detect_and_align(
        cv2.resize(hopper, (150, 176)), detector="cnn", upsample=1, crop_size=CROP
    )
    assert result.ok and result.detector == "dlib_mmod" and result.det_score > 0


def test_missing_model_file_names_path(tmp_path: Path, hopper: np.ndarray):
    with pytest.raises(FaceModelError, match=str(tmp_path / "shape_predictor_68")):
        detect_and_align(hopper, models_dir=tmp_path)
    with pytest.raises(FaceModelError, match="mmod_human_face_detector.dat"):
        model_path("mmod_human_face_detector.dat", tmp_path)


def test_array_inputs_are_checked(hopper: np.ndarray):
    rgba = np.dstack([hopper, np.full(hopper.shape[:2], 255, np.uint8)])
    with pytest.raises(ImageError, match="RGB"):
        detect_and_align(rgba)
    with pytest.raises(ImageError, match="uint8"):
        detect_and_align(hopper.astype(np.float32))
    tiny = detect_and_align(hopper[:20, :30])
    assert not tiny.ok and tiny.reason.startswith("image too small")
    below = detect_and_align(hopper[:60, :60], min_image_size=64)
    assert not below.ok and below.reason == "image too small (60x60 < 64 px)"


# ------------------------------------------------------------------------- the stage


@pytest.fixture(scope="module")
def stage_inputs(tmp_path_factory, hopper: np.ndarray):
    """A small dataset root with good faces, synthetic faces and every kind of bad file."""
    root = tmp_path_factory.mktemp("faces_root")
    syn = synthetic_sources(
        root / "syn",
        subjects_per_group=1,
        images_per_subject=1,
        seed=0,
        tones=["tone1", "tone4"],
        size=256,
    )
    rows = [
        {"image_id": f"syn_{r.image_id}", "path": f"syn/{r.path}", "group": f"{r.tone}_{r.gender}"}
        for r in syn.itertuples()
    ]
    gray = cv2.cvtColor(hopper, cv2.COLOR_RGB2GRAY)
    files = {
        "hopper": (".jpg", bgr(hopper)),
        "gray": (".png", gray),
        "deep16": (".png", bgr(hopper).astype(np.uint16) * 257),
        "rgba": (".png", np.dstack([bgr(hopper), np.full(hopper.shape[:2], 255, np.uint8)])),
        "tiny": (".png", bgr(hopper)[:10, :10]),
        "blank": (".png", np.full((200, 200, 3), 180, np.uint8)),
    }
    for name, (ext, arr) in files.items():
        assert cv2.imwrite(str(root / f"{name}{ext}"), arr)
        rows.append({"image_id": name, "path": f"{name}{ext}", "group": "photo"})
    (root / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0 definitely not a jpeg" * 10)
    (root / "empty.jpg").write_bytes(b"")
    rows += [
        {"image_id": "corrupt", "path": "corrupt.jpg", "group": "photo"},
        {"image_id": "empty", "path": "empty.jpg", "group": "photo"},
        {"image_id": "missing", "path": "not_there.jpg", "group": "photo"},
    ]
    sources = pd.DataFrame(rows)
    sources["ok"] = True
    sources["reason"] = ""
    sources.loc[len(sources)] = {
        "image_id": "src_bad",
        "path": "corrupt.jpg",
        "group": "photo",
        "ok": False,
        "reason": "unreadable image",
    }
    return root, sources


@pytest.fixture(scope="module")
def stage_run(stage_inputs, tmp_path_factory):
    root, sources = stage_inputs
    out = tmp_path_factory.mktemp("faces_out")
    faces = process_faces(
        sources.iloc[::-1], root, out, crop_dir_rel="crops/shard0", crop_size=CROP, detector="hog"
    )
    return out, faces


def test_stage_rows_and_reasons(stage_inputs, stage_run):
    _, sources = stage_inputs
    out, faces = stage_run
    assert list(faces.columns) == list(FACES_COLUMNS)
    check_columns(faces, "faces")
    assert list(faces["image_id"]) == sorted(sources["image_id"])  # no row dropped, sorted
    by_id = faces.set_index("image_id")
    for good in ["hopper", "gray", "deep16", "rgba"] + [
        i for i in by_id.index if i.startswith("syn_")
    ]:
        row = by_id.loc[good]
        assert row["ok"] and row["reason"] == "" and row["n_faces"] >= 1, good
        assert row["crop_path"] == f"crops/shard0/{good}.png"
        assert (out / row["crop_path"]).is_file()
    expected = {
        "tiny": "image too small",
        "blank": "no face detected",
        "corrupt": "unreadable image",
        "empty": "empty file",
        "missing": "file not found",
        "src_bad": "source not ok",
    }
    for image_id, reason in expected.items():
        row = by_id.loc[image_id]
        assert not row["ok"] and row["reason"].startswith(reason), (image_id, row["reason"])
        assert row["crop_path"] == "" and row["landmarks"] is None and row["bbox"] is None
        assert math.isnan(row["det_score"])
    assert set(faces["detector"]) == {"dlib_hog"}


def test_stage_conversions_match_rgb(stage_run, hopper: np.ndarray):
    out, faces = stage_run
    crop = {
        i: cv2.imread(str(out / "crops/shard0" / f"{i}.png"))
        for i in ("hopper", "deep16", "rgba", "gray")
    }
    reference = detect_and_align(hopper, crop_size=CROP)
    by_id = faces.set_index("image_id")
    # 16-bit and opaque RGBA files decode to the original 8-bit pixels, hence the same crop.
    assert np.array_equal(crop["deep16"], bgr(reference.crop))
    assert np.array_equal(crop["deep16"], crop["rgba"])
    assert list(by_id.loc["deep16", "bbox"]) == list(by_id.loc["rgba", "bbox"])
    assert list(by_id.loc["deep16", "bbox"]) == list(reference.bbox)
    # Grayscale stays gray after conversion to RGB.
    g = crop["gray"].astype(int)
    assert np.abs(g[..., 0] - g[..., 2]).max() == 0 and g.std() > 10


def test_landmarks_round_trip_parquet(stage_run, tmp_path: Path):
    out, faces = stage_run
    write_manifest(faces, tmp_path / "faces.parquet", "faces")
    back = read_manifest(tmp_path / "faces.parquet", "faces")
    for (_, a), (_, b) in zip(faces.iterrows(), back.iterrows()):
        assert a["image_id"] == b["image_id"] and a["ok"] == b["ok"]
        if a["ok"]:
            lm = landmarks_array(b)
            assert lm.shape == (68, 2) and lm.dtype == np.float32
            np.testing.assert_array_equal(lm, landmarks_array(a))
            assert [int(v) for v in b["bbox"]] == list(a["bbox"])
        else:
            with pytest.raises(ValueError, match="no landmarks"):
                landmarks_array(b)
    nested = {"image_id": "n", "landmarks": [[float(i), float(i)] for i in range(68)]}
    assert landmarks_array(nested)[5].tolist() == [5.0, 5.0]


def test_stage_deterministic(stage_inputs, stage_run, tmp_path: Path):
    root, sources = stage_inputs
    out1, faces1 = stage_run
    keep = sources[sources["image_id"].isin(["hopper", "blank", "corrupt", "rgba"])]
    faces2 = process_faces(keep, root, tmp_path, crop_dir_rel="crops/shard0", crop_size=CROP)
    faces1 = faces1[faces1["image_id"].isin(keep["image_id"])].reset_index(drop=True)
    write_manifest(faces1, tmp_path / "a.parquet", "faces")
    write_manifest(faces2, tmp_path / "b.parquet", "faces")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    for rel in faces2.loc[faces2["ok"], "crop_path"]:
        assert (out1 / rel).read_bytes() == (tmp_path / rel).read_bytes()


def test_detection_rate_by_group():
    sources = pd.DataFrame(
        {"image_id": list("abcdefg"), "group": ["x", "x", "x", "y", "y", "y", "y"]}
    )
    faces = pd.DataFrame(
        {
            "image_id": list("abcdef"),
            "ok": [True, False, True, True, False, False],
            "reason": [
                "",
                "no face detected",
                "",
                "",
                "image too small (10x10 < 48 px)",
                "no face detected",
            ],
        }
    )
    table = detection_rate_by_group(sources, faces).set_index("group")
    assert table.loc["x", ["n", "n_detected"]].tolist() == [3, 2]
    assert table.loc["x", "rate"] == pytest.approx(2 / 3)
    assert json.loads(table.loc["x", "failures"]) == {"no face detected": 1}
    assert table.loc["y", ["n", "n_detected"]].tolist() == [4, 1]
    assert json.loads(table.loc["y", "failures"]) == {
        "image too small": 1,
        "no face detected": 1,
        "no faces row": 1,
    }
    assert table.loc["(all)", ["n", "n_detected"]].tolist() == [7, 3]
