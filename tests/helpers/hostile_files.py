"""A tree of hostile image files (decompression bombs, truncated, unreadable, rotated) and the reason each must get."""

from __future__ import annotations

import io
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from fairforge import images
from fairforge.images import write_image
from fairforge.sources.synthetic import render_face, sample_subject, sample_view

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
