"""Hostile files through every stage that decodes images: nothing is lost, reasons are specific.

A folder of files a real dataset may hold (a decompression bomb's header, empty, text,
truncated JPEG and PNG, a directory, a missing file, a symlink loop, a broken link, a FIFO,
16-bit, grayscale, CMYK, palette and animated images, RGBA, an EXIF-rotated photo, 1 and 12
pixels, noise) next to good faces goes through sources inspection, faces, forgery, inference
data loading, ranking and video frames. Every input keeps its row; the unusable ones say why.
"""

import io
import os
import struct
import zlib
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
    write_image,
)
from fairforge.pairs import make_pairs
from fairforge.sources import build_sources, image_id_from_path
from fairforge.sources.synthetic import render_face, sample_subject, sample_view
from fairforge.video import frame_listing
from fairforge.video.ffmpeg import write_video

FACE_SIZE = 256


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(width: int = 60000, height: int = 60000) -> bytes:
    """A valid PNG header claiming ``width`` x ``height`` RGB pixels, about 70 bytes."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 16))
        + chunk(b"IEND", b"")
    )


def one_colour_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid ``width`` x ``height`` RGB PNG of one colour, written row by row (the decoded
    image is never held here; the file is a few hundred kilobytes)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    row = b"\0" + bytes(rgb) * width
    deflate = zlib.compressobj(9)
    data = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


# A sysctl file that only root may write: the kernel refuses every reader, root included.
WRITE_ONLY = Path("/proc/sys/vm/drop_caches")


def write_denied(path: Path) -> None:
    """A file whose open() is refused with EACCES, for real: mode 000 for a user; root reads
    mode-000 files, so as root a symlink to a write-only sysctl file."""
    if os.geteuid() != 0:
        write_image(path, face("a0", 0))
        path.chmod(0)
    else:
        os.symlink(WRITE_ONLY, path)


def face(subject: str, view: int) -> np.ndarray:
    tone, gender = ("tone1", "female") if subject.startswith("a") else ("tone4", "male")
    identity = sample_subject(3, subject, tone, gender)
    return render_face(identity, sample_view(3, f"{subject}_{view}"), FACE_SIZE)


def pil_bytes(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def exif_rotated_jpeg(rgb: np.ndarray) -> bytes:
    """``rgb`` stored turned a quarter to the left, with EXIF orientation 6 (show it turned a
    quarter to the right): a viewer, and the pipeline, see it upright."""
    exif = Image.Exif()
    exif[0x0112] = 6
    stored = Image.fromarray(np.ascontiguousarray(np.rot90(rgb, 1)))
    return pil_bytes(stored, "JPEG", quality=95, exif=exif.tobytes())


# name -> (relative path, None for a usable image or the start of the expected reason)
EXPECTED = {
    "bomb": ("bad/bomb.png", "image too large (60000x60000"),
    "empty": ("bad/empty.jpg", "empty file"),
    "text": ("bad/text.jpg", "unreadable image"),
    "truncated_jpeg": ("bad/truncated_jpeg.jpg", "truncated image (jpeg"),
    "truncated_png": ("bad/truncated_png.png", "truncated image (png"),
    "directory": ("bad/directory.jpg", "unreadable file (Is a directory)"),
    "missing": ("bad/missing.jpg", "file not found"),
    "loop": ("bad/loop.jpg", "unreadable file (Too many levels of symbolic links)"),
    "broken_link": ("bad/broken.jpg", "broken symlink"),
    "fifo": ("bad/fifo.png", "unreadable file (not a regular file)"),
    "denied": ("bad/denied.jpg", "unreadable file (Permission denied)"),
    "deep16": ("odd/deep16.png", None),
    "gray": ("odd/gray.png", None),
    "cmyk": ("odd/cmyk.jpg", None),
    "palette": ("odd/palette.gif", None),
    "animated_gif": ("odd/animated_gif.gif", None),
    "animated_png": ("odd/animated_png.png", None),
    "animated_webp": ("odd/animated_webp.webp", None),
    "rgba": ("odd/rgba.png", None),
    "one_pixel": ("odd/one.png", None),
    "twelve_pixels": ("odd/twelve.png", None),
    "noise": ("odd/noise.jpg", None),
    "huge": ("odd/huge.jpg", None),
    "huge_png": ("odd/huge_png.png", None),
    "exif_face": ("faces/b0_rotated.jpg", None),
}
# Faces that must be found: the good ones and the upright view of the EXIF-rotated one.
GOOD = {f"faces/{s}_{v}.png": s for s in ("a0", "a1", "b0", "b1") for v in range(2)}
# The stage's size limit on the fixture: "huge" (2400 x 1800) decodes at half size, the
# 12000 x 9000 "huge_png" (324 MB decoded) at an eighth.
REDUCE_ABOVE = 1_500_000
LIMITS = ImageLimits(reduce_above=REDUCE_ABOVE)
HUGE_PNG = (12000, 9000)


def write_hostile(folder: Path) -> pd.DataFrame:
    """The files of :data:`EXPECTED` and :data:`GOOD` under ``folder`` and the csv adapter's
    labels table listing all of them."""
    rng = np.random.default_rng(0)
    (folder / "bad").mkdir(parents=True)
    (folder / "odd").mkdir()
    for rel in GOOD:
        subject, view = Path(rel).stem.split("_")
        write_image(folder / rel, face(subject, int(view)))
    noise = rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)
    write_image(folder / "odd/noise.jpg", noise)
    png = (folder / next(iter(GOOD))).read_bytes()
    jpeg = pil_bytes(Image.fromarray(face("a0", 0)), "JPEG", quality=95)
    files = {
        "bad/bomb.png": bomb_png(),
        "bad/empty.jpg": b"",
        "bad/text.jpg": b"path,subject_id\nnot an image at all\n",
        "bad/truncated_jpeg.jpg": jpeg[: len(jpeg) // 2],
        "bad/truncated_png.png": png[: len(png) // 2],
        "odd/deep16.png": None,
        "odd/huge_png.png": one_colour_png(*HUGE_PNG, (90, 140, 200)),
        "odd/cmyk.jpg": pil_bytes(Image.fromarray(face("a1", 0)).convert("CMYK"), "JPEG"),
        "odd/palette.gif": pil_bytes(Image.fromarray(face("a1", 1)).convert("P"), "GIF"),
        "faces/b0_rotated.jpg": exif_rotated_jpeg(face("b0", 0)),
    }
    frames = [Image.fromarray(face("b1", 0)), Image.fromarray(noise).resize((256, 256))]
    for rel, fmt in (
        ("odd/animated_gif.gif", "GIF"),
        ("odd/animated_png.png", "PNG"),
        ("odd/animated_webp.webp", "WEBP"),
    ):
        files[rel] = pil_bytes(frames[0], fmt, save_all=True, append_images=frames[1:])
    for rel, data in files.items():
        if data is not None:
            (folder / rel).write_bytes(data)
    deep = (face("a0", 1).astype(np.uint16) * 257)[:, :, ::-1]
    images.cv2.imwrite(str(folder / "odd/deep16.png"), deep)
    write_image(folder / "odd/gray.png", face("b0", 1)[:, :, 1])
    rgba = np.dstack([face("a1", 1), np.full((FACE_SIZE, FACE_SIZE), 200, np.uint8)])
    images.cv2.imwrite(str(folder / "odd/rgba.png"), rgba)
    write_image(folder / "odd/one.png", np.zeros((1, 1, 3), np.uint8))
    write_image(folder / "odd/twelve.png", np.full((3, 4, 3), 128, np.uint8))
    write_image(folder / "odd/huge.jpg", rng.integers(0, 256, (1800, 2400, 3), dtype=np.uint8))
    (folder / "bad/directory.jpg").mkdir()
    os.symlink("loop2.jpg", folder / "bad/loop.jpg")
    os.symlink("loop.jpg", folder / "bad/loop2.jpg")
    os.symlink("gone.jpg", folder / "bad/broken.jpg")
    os.mkfifo(folder / "bad/fifo.png")
    write_denied(folder / "bad/denied.jpg")
    paths = [rel for rel, _ in EXPECTED.values()] + list(GOOD)
    labels = pd.DataFrame(
        {
            "path": paths,
            # Two subjects per group so that forgery pairs form.
            "subject_id": [GOOD.get(p, f"x{k % 2}") for k, p in enumerate(paths)],
            "group": ["a" if GOOD.get(p, "x").startswith("a") else "b" for p in paths],
        }
    )
    labels.loc[labels["path"] == "faces/b0_rotated.jpg", "subject_id"] = "b0"
    labels.to_csv(folder / "labels.csv", index=False)
    return labels


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
