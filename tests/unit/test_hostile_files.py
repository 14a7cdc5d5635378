"""Hostile files through every stage that decodes images: nothing is lost, reasons are specific.

A folder of files a real dataset may hold (a decompression bomb's header, empty, text,
truncated JPEG and PNG, a directory, a missing file, a symlink loop, a broken link, a FIFO,
16-bit, grayscale, CMYK, palette and animated images, RGBA, an EXIF-rotated photo, 1 and 12
pixels, noise) next to good faces goes through sources inspection, faces, forgery, inference
data loading, ranking and video frames. Every input keeps its row; the unusable ones say why.
"""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from fairforge import images
from fairforge.data import FaceDataset
from fairforge.encoders import create_encoder, embed_in_batches
from fairforge.encoders.crops import face_images
from fairforge.faces import process_faces
from fairforge.forgery.shard import forge_shard
from fairforge.images import (
    ImageError,
    ImageLimits,
    decode_image,
    load_image,
    read_header,
)
from fairforge.pairs import make_pairs
from fairforge.sources import build_sources, image_id_from_path
from fairforge.video import frame_listing
from fairforge.video.ffmpeg import write_video
from hostile_files import (
    EXPECTED,
    FACE_SIZE,
    GOOD,
    HUGE_PNG,
    REDUCE_ABOVE,
    bomb_png,
    face,
    pil_bytes,
    write_hostile,
)

LIMITS = ImageLimits(reduce_above=REDUCE_ABOVE)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    write_hostile(folder)
    return folder


@pytest.fixture(scope="module")
def sources(hostile) -> pd.DataFrame:
    return build_sources(
        "csv",
        hostile / "labels.csv",
        "hostile",
        ["group"],
        # One split, so that faces find forgery targets among the few subjects.
        split_fractions={"test": 1.0},
        seed=0,
        workers=2,
        limits=LIMITS,
    )


@pytest.fixture(scope="module")
def faces(sources, hostile, tmp_path_factory) -> tuple[pd.DataFrame, Path]:
    out = tmp_path_factory.mktemp("faces")
    rows = process_faces(sources, hostile / "labels.csv", out, crop_size=128, limits=LIMITS)
    return rows, out


def by_path(sources: pd.DataFrame) -> dict[str, dict]:
    return {r["path"]: r for r in sources.to_dict("records")}


def test_sources_keep_every_file_with_a_specific_reason(sources, hostile):
    labels = pd.read_csv(hostile / "labels.csv")
    assert len(sources) == len(labels) and sources["image_id"].is_unique
    rows = by_path(sources)
    for name, (rel, reason) in EXPECTED.items():
        row = rows[rel]
        if reason is None:
            assert row["ok"], (name, row["reason"])
            assert row["width"] > 0 and row["height"] > 0 and len(row["sha256"]) == 64
        else:
            assert not row["ok"] and row["reason"].startswith(reason), (name, row["reason"])
    assert all(rows[rel]["ok"] for rel in GOOD)
    # The EXIF-rotated photo is measured upright; the huge one as decoded, at half size.
    assert (rows["faces/b0_rotated.jpg"]["width"], rows["faces/b0_rotated.jpg"]["height"]) == (
        FACE_SIZE,
        FACE_SIZE,
    )
    assert (rows["odd/huge.jpg"]["width"], rows["odd/huge.jpg"]["height"]) == (1200, 900)
    huge = rows["odd/huge_png.png"]
    assert (huge["width"], huge["height"]) == (HUGE_PNG[0] // 8, HUGE_PNG[1] // 8)
    # A .gif loses its suffix in the image id, like every other image suffix.
    assert rows["odd/palette.gif"]["image_id"] == "odd__palette"
    assert image_id_from_path("a/b.GIF") == "a__b"


def test_faces_keep_every_row_and_find_the_rotated_and_odd_faces(sources, faces):
    rows, out = faces
    assert list(rows["image_id"]) == sorted(sources["image_id"])
    found = dict(zip(rows["image_id"], rows["ok"]))
    reasons = dict(zip(rows["image_id"], rows["reason"]))
    ids = dict(zip(sources["path"], sources["image_id"]))
    for rel in GOOD:
        assert found[ids[rel]], reasons[ids[rel]]
    # Found only because the EXIF orientation is applied (HOG finds upright faces).
    assert found[ids["faces/b0_rotated.jpg"]], reasons[ids["faces/b0_rotated.jpg"]]
    # Odd encodings of a face still decode to a face: 16-bit, gray, CMYK, palette, RGBA,
    # and the first frame of each animation.
    for rel in (
        "odd/deep16.png",
        "odd/gray.png",
        "odd/cmyk.jpg",
        "odd/palette.gif",
        "odd/rgba.png",
        "odd/animated_gif.gif",
        "odd/animated_png.png",
        "odd/animated_webp.webp",
    ):
        assert found[ids[rel]], (rel, reasons[ids[rel]])
    assert reasons[ids["odd/one.png"]].startswith("image too small (1x1")
    assert reasons[ids["odd/twelve.png"]].startswith("image too small (4x3")
    assert reasons[ids["odd/noise.jpg"]] == "no face detected"
    assert reasons[ids["odd/huge_png.png"]] == "no face detected"
    source_reasons = dict(zip(sources["path"], sources["reason"]))
    for rel, reason in EXPECTED.values():
        if reason is not None:
            assert reasons[ids[rel]] == f"source not ok ({source_reasons[rel]})"
    for crop in rows.loc[rows["ok"], "crop_path"]:
        assert load_image(out / crop).shape == (128, 128, 3)


def test_forgery_inference_and_ranking_take_only_usable_faces(sources, faces):
    rows, out = faces
    pairs = make_pairs(rows, seed=0, sources_df=sources)
    forged = forge_shard(
        "faceswap",
        "classical",
        pairs,
        rows,
        out,
        "fakes",
        seed=0,
        source_ids=sources["image_id"],
    )
    # One forgery row per source image; a failed face is a failed forgery with its reason.
    assert sorted(forged["image_id"]) == sorted(sources["image_id"])
    failed = forged.set_index("image_id")
    bad_ids = rows.loc[~rows["ok"], "image_id"]
    assert not failed.loc[bad_ids, "ok"].any()
    assert failed.loc[bad_ids, "reason"].str.startswith("face not usable").all()
    assert failed.loc[rows.loc[rows["ok"], "image_id"], "ok"].any()

    # Inference data loading: every usable crop and fake decodes to the model's input.
    ok_fakes = forged[forged["ok"]]
    samples = pd.concat(
        [
            pd.DataFrame(
                {
                    "sample_id": rows.loc[rows["ok"], "image_id"],
                    "path": rows.loc[rows["ok"], "crop_path"],
                    "label": 0,
                }
            ),
            pd.DataFrame(
                {"sample_id": ok_fakes["sample_id"], "path": ok_fakes["path"], "label": 1}
            ),
        ],
        ignore_index=True,
    )
    dataset = FaceDataset(samples, out, 64, (0.5,) * 3, (0.5,) * 3)
    shapes = {tuple(dataset[i]["image"].shape) for i in range(len(dataset))}
    assert shapes == {(3, 64, 64)}
    # A sample file that broke after the faces stage is an error naming it, not a guess.
    broken = samples.iloc[:1].assign(path="missing.png")
    with pytest.raises(ImageError, match=r"file not found: .*missing\.png"):
        FaceDataset(broken, out, 64, (0.5,) * 3, (0.5,) * 3)[0]

    # Ranking: the usable crops, near and far, embed to unit vectors.
    usable = rows[rows["ok"]]
    for far in (False, True):
        views = list(face_images(usable, out, far, 3, 0, 150))
        assert len(views) == len(usable)
        emb = embed_in_batches(create_encoder("dlib_resnet"), iter(views), 8)
        assert emb.shape == (len(usable), 128)
        np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-4)


def test_video_frames_keep_a_row_for_every_hostile_video(hostile, tmp_path):
    clip = write_video(tmp_path / "clip.mp4", [face("a0", v) for v in range(4)], fps=10)
    data = clip.read_bytes()
    (hostile / "bad/truncated.mp4").write_bytes(data[: len(data) // 2])
    # name -> the start of the reason (the path follows it)
    names = {
        "bad/empty.jpg": "video: empty video file",
        "bad/text.jpg": "video: reading text.jpg: ",
        "bad/bomb.png": "video: ",
        "bad/truncated.mp4": "video: reading truncated.mp4: ",
        "bad/directory.jpg": "video: unreadable file (Is a directory)",
        "bad/missing.jpg": "video: video not found",
        "bad/loop.jpg": "video: unreadable file (Too many levels of symbolic links)",
        "bad/broken.jpg": "video: broken symlink",
        # ffmpeg would wait on a FIFO for ever; it is refused before ffmpeg starts.
        "bad/fifo.png": "video: unreadable file (not a regular file)",
        "bad/denied.jpg": "video: unreadable file (Permission denied)",
    }
    videos = pd.DataFrame(
        {
            "video_id": [Path(n).stem for n in names],
            "path": [str(hostile / n) for n in names],
            "subject_id": "s",
            "attributes": [{"group": "a"}] * len(names),
        }
    )
    listing = frame_listing(videos, tmp_path, n_frames=2, workers=1)
    assert sorted(listing["video_id"]) == sorted(videos["video_id"])
    assert not listing["ok"].any()
    reasons = dict(zip(listing["video_id"], listing["reason"]))
    for name, reason in names.items():
        assert reasons[Path(name).stem].startswith(reason), (name, reasons[Path(name).stem])
        assert reasons[Path(name).stem] != reason


def test_permission_denied_is_a_reason_for_real(hostile):
    """No monkeypatching: the kernel refuses the open (see :func:`write_denied`)."""
    denied = hostile / "bad/denied.jpg"
    with pytest.raises(PermissionError):
        denied.open("rb")
    with pytest.raises(ImageError, match=r"^unreadable file \(Permission denied\)$"):
        load_image(denied)


def test_the_pixel_limit_is_read_from_the_header_and_configurable():
    bomb = bomb_png()
    assert len(bomb) < 100
    header = read_header(bomb)
    assert (header.format, header.width, header.height) == ("png", 60000, 60000)
    with pytest.raises(ImageError, match="image too large"):
        decode_image(bomb)
    # Under the limit OpenCV's own limit (2**30 pixels) is not reached either: the refusal
    # is ours, at whatever limit is configured.
    small = bomb_png(300, 200)
    with pytest.raises(ImageError, match=r"image too large \(300x200 = 60000 pixels > "):
        decode_image(small, ImageLimits(max_pixels=50_000))


def test_exif_orientation_matches_pillow_for_every_value():
    """All eight orientations, in JPEG, PNG (eXIf), WebP and TIFF, decode as Pillow's
    ``exif_transpose`` shows them."""
    from PIL import ImageOps

    rng = np.random.default_rng(1)
    stored = Image.fromarray(rng.integers(0, 256, (30, 50, 3), dtype=np.uint8))
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        for fmt, options in (
            ("JPEG", {"quality": 100}),
            ("PNG", {}),
            ("WEBP", {"lossless": True}),
            ("TIFF", {}),
        ):
            data = pil_bytes(stored, fmt, exif=exif.tobytes(), **options)
            shown = ImageOps.exif_transpose(Image.open(io.BytesIO(data)).convert("RGB"))
            np.testing.assert_array_equal(decode_image(data), np.asarray(shown), (fmt, orientation))


def test_huge_images_decode_reduced():
    rng = np.random.default_rng(2)
    big = rng.integers(0, 256, (1200, 1600, 3), dtype=np.uint8)
    limits = ImageLimits(reduce_above=200_000)
    for suffix in (".jpg", ".png"):
        ok, buffer = images.cv2.imencode(suffix, big)
        assert ok
        assert decode_image(buffer, limits).shape == (300, 400, 3)
        assert decode_image(buffer).shape == big.shape


def test_every_decode_path_goes_through_fairforge_images(repo_root):
    """No module but fairforge.images decodes a file (the perturbations' in-memory JPEG
    round trip decodes bytes it has just encoded)."""
    offenders = []
    for path in sorted((repo_root / "src" / "fairforge").rglob("*.py")):
        rel = path.relative_to(repo_root / "src" / "fairforge").as_posix()
        text = path.read_text()
        for call in ("cv2.imread(", "cv2.imdecode(", "Image.open("):
            if call in text and rel not in ("images.py", "perturb/ops.py"):
                offenders.append(f"{rel}: {call}")
    assert offenders == []
