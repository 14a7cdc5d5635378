"""Reading and writing images: every input becomes uint8 RGB HxWx3, or a clear reason why not.

Inside the package images are RGB; OpenCV's BGR stays at this boundary. Every file the
package decodes goes through :func:`load_image` (or :func:`decode_image` for bytes already
read), which reads the file's header before decoding anything:

- a file whose header claims more than ``max_pixels`` pixels is refused with a reason (a
  decompression bomb is a few bytes on disk), so OpenCV's own limit is never what stops it;
- an image above ``reduce_above`` pixels is decoded at half, quarter or eighth size (JPEG
  decodes reduced directly), so a huge but valid photograph fits in memory;
- the EXIF orientation is applied (OpenCV applies TIFF's; JPEG's, PNG's and WebP's here), as a viewer shows the photo;
- an animated GIF, PNG or WebP gives its first frame;
- a missing, empty, unreadable (permissions, symlink loop, directory), truncated or
  undecodable file raises :class:`ImageError`, whose text is the manifest's ``reason``.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

# Suffixes of the image files the package lists and decodes (one owner: sources and the
# learned degradation import it).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".gif")

# 2**28 pixels (16384 x 16384, 805 MB decoded as RGB): above every camera photo (a 200 MP
# phone sensor is 16320 x 12240) and below OpenCV's own limit (2**30), which would fail the
# decode with an exception rather than a reason.
DEFAULT_MAX_PIXELS = 1 << 28
# 2**26 pixels (8192 x 8192): every ordinary camera photo (up to 61 MP) decodes at full size;
# larger ones at half size or less, which no face detector needs more than.
DEFAULT_REDUCE_ABOVE = 1 << 26


class ImageError(ValueError):
    """An image that cannot be used; ``str(err)`` is the manifest's ``reason``."""


@dataclass(frozen=True)
class ImageLimits:
    """How large an image may be (config ``images``): refuse above ``max_pixels`` (read from
    the header, before decoding), decode reduced by 2, 4 or 8 above ``reduce_above``."""

    max_pixels: int = DEFAULT_MAX_PIXELS
    reduce_above: int = DEFAULT_REDUCE_ABOVE

    def reduction(self, width: int, height: int) -> int:
        """The smallest factor in 1, 2, 4, 8 that brings the image to ``reduce_above``."""
        for factor in (1, 2, 4):
            if (width // factor) * (height // factor) <= self.reduce_above:
                return factor
        return 8


DEFAULT_LIMITS = ImageLimits()


# ----------------------------------------------------------------------------- the header


@dataclass(frozen=True)
class ImageHeader:
    """What a file's first bytes say: format, size as stored, EXIF orientation (1-8), and
    for JPEG whether the data ends before its end-of-image marker."""

    format: str
    width: int
    height: int
    orientation: int = 1
    truncated: bool = False


def _tiff_tags(blob: bytes, wanted: tuple[int, ...]) -> dict[int, int]:
    """Integer values of the ``wanted`` tags of the first IFD of a TIFF structure (a TIFF
    file, or the EXIF block of a JPEG, PNG or WebP)."""
    if blob[:4] == b"II*\x00":
        order = "<"
    elif blob[:4] == b"MM\x00*":
        order = ">"
    else:
        return {}
    (offset,) = struct.unpack_from(order + "I", blob, 4)
    (count,) = struct.unpack_from(order + "H", blob, offset)
    found = {}
    for k in range(min(count, 1024)):
        tag, kind = struct.unpack_from(order + "HH", blob, offset + 2 + 12 * k)
        if tag in wanted:
            fmt = {3: "H", 4: "I"}.get(kind)
            if fmt:
                (found[tag],) = struct.unpack_from(order + fmt, blob, offset + 2 + 12 * k + 8)
    return found


def _orientation(exif: bytes) -> int:
    value = _tiff_tags(exif, (274,)).get(274, 1)
    return value if 1 <= value <= 8 else 1


def _jpeg(data: bytes) -> ImageHeader | None:
    i, orientation, size = 2, 1, None
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (length,) = struct.unpack_from(">H", data, i + 2)
        segment = data[i + 4 : i + 2 + length]
        if marker == 0xE1 and segment[:6] == b"Exif\x00\x00":
            orientation = _orientation(segment[6:])
        elif 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack_from(">HH", segment, 1)
            size = (width, height)
        elif marker == 0xDA:  # start of scan: the header is over
            if size is None:
                return None
            # Trailing bytes after the end-of-image marker are allowed; a missing one is not.
            truncated = data.rfind(b"\xff\xd9") < i
            return ImageHeader("jpeg", size[0], size[1], orientation, truncated)
        i += 2 + length
    return None


def _png(data: bytes) -> ImageHeader:
    width, height = struct.unpack_from(">II", data, 16)
    orientation, i = 1, 8
    while i + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, i)
        if kind in (b"IDAT", b"IEND"):
            break
        if kind == b"eXIf":
            orientation = _orientation(data[i + 8 : i + 8 + length])
        i += 12 + length
    # Bytes after IEND are allowed (some tools append them); no IEND at all is a cut file.
    return ImageHeader("png", width, height, orientation, b"IEND" not in data[16:])


def _webp(data: bytes) -> ImageHeader | None:
    kind = data[12:16]
    if kind == b"VP8 ":
        width, height = struct.unpack_from("<HH", data, 26)
        return ImageHeader("webp", width & 0x3FFF, height & 0x3FFF)
    if kind == b"VP8L":
        (bits,) = struct.unpack_from("<I", data, 21)
        return ImageHeader("webp", 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF))
    if kind != b"VP8X":
        return None
    width = 1 + int.from_bytes(data[24:27], "little")
    height = 1 + int.from_bytes(data[27:30], "little")
    orientation, i = 1, 12
    while i + 8 <= len(data):
        chunk, length = struct.unpack_from("<4sI", data, i)
        if chunk == b"EXIF":
            orientation = _orientation(data[i + 8 : i + 8 + length])
        i += 8 + length + (length & 1)
    return ImageHeader("webp", width, height, orientation)


_PNM = re.compile(rb"^P[1-7]\s+(?:#[^\n]*\n\s*)*(\d+)\s+(?:#[^\n]*\n\s*)*(\d+)")


def read_header(data: bytes) -> ImageHeader | None:
    """The header of an image file's bytes, or None for a format not parsed here (it is
    then decoded without a size check first, and checked after) or a malformed header."""
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
            return _png(data)
        if data[:3] == b"\xff\xd8\xff":
            return _jpeg(data)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return ImageHeader("gif", *struct.unpack_from("<HH", data, 6))
        if data[:2] == b"BM":
            (dib,) = struct.unpack_from("<I", data, 14)
            fmt = "<HH" if dib == 12 else "<ii"
            width, height = struct.unpack_from(fmt, data, 18)
            return ImageHeader("bmp", abs(width), abs(height))
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
        if data[:4] in (b"II*\x00", b"MM\x00*"):
            # OpenCV's TIFF decoder applies the orientation tag itself.
            tags = _tiff_tags(data, (256, 257))
            if 256 in tags and 257 in tags:
                return ImageHeader("tiff", tags[256], tags[257])
            return None
        match = _PNM.match(data[:1024])
        if match:
            return ImageHeader("pnm", int(match[1]), int(match[2]))
    except (struct.error, IndexError, ValueError):
        return None
    return None


# ----------------------------------------------------------------------------- decoding


def to_rgb_uint8(array: np.ndarray) -> np.ndarray:
    """Convert a decoded OpenCV array (gray, BGR, BGRA; 8 or 16 bit, or float) to uint8 RGB."""
    img = np.asarray(array)
    if img.size == 0:
        raise ImageError("empty image")
    if img.dtype == np.uint16:
        # 16-bit files keep their full range; scale rather than truncate.
        img = (img.astype(np.float32) / 257.0 + 0.5).astype(np.uint8)
    elif img.dtype in (np.float32, np.float64):
        scale = 255.0 if float(np.nanmax(img)) <= 1.0 else 1.0
        img = np.clip(np.nan_to_num(img) * scale + 0.5, 0, 255).astype(np.uint8)
    elif img.dtype != np.uint8:
        raise ImageError(f"unsupported pixel type {img.dtype}")
    if img.ndim == 2:
        return cv2.cvtColor(img, cv2.COLOR_GRAY2RGB)
    if img.ndim != 3:
        raise ImageError(f"unsupported image shape {img.shape}")
    channels = img.shape[2]
    if channels == 1:
        return cv2.cvtColor(img[:, :, 0], cv2.COLOR_GRAY2RGB)
    if channels == 3:
        return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    if channels == 4:
        # Composite over white so transparent backgrounds do not turn black.
        bgr = img[:, :, :3].astype(np.float32)
        alpha = img[:, :, 3:4].astype(np.float32) / 255.0
        out = bgr * alpha + 255.0 * (1.0 - alpha)
        return cv2.cvtColor((out + 0.5).astype(np.uint8), cv2.COLOR_BGR2RGB)
    raise ImageError(f"unsupported channel count {channels}")


def apply_orientation(image: np.ndarray, orientation: int) -> np.ndarray:
    """The image as a viewer shows it, given its EXIF orientation (1 = as stored)."""
    flipped = {
        1: image,
        2: image[:, ::-1],
        3: image[::-1, ::-1],
        4: image[::-1],
        5: image.swapaxes(0, 1),
        6: image[::-1].swapaxes(0, 1),
        7: image[::-1, ::-1].swapaxes(0, 1),
        8: image[:, ::-1].swapaxes(0, 1),
    }.get(orientation, image)
    return np.ascontiguousarray(flipped)


_REDUCED_JPEG = {
    2: cv2.IMREAD_REDUCED_COLOR_2,
    4: cv2.IMREAD_REDUCED_COLOR_4,
    8: cv2.IMREAD_REDUCED_COLOR_8,
}


def _too_large(width: int, height: int, limits: ImageLimits, where: str) -> ImageError:
    return ImageError(
        f"image too large ({width}x{height} = {width * height} pixels > "
        f"images.max_pixels {limits.max_pixels}, {where})"
    )


def decode_image(data: bytes | np.ndarray, limits: ImageLimits = DEFAULT_LIMITS) -> np.ndarray:
    """Decode an image file's bytes to uint8 RGB (module docstring: size limits, reduction,
    orientation, first frame); :class:`ImageError` carries the reason, without a path."""
    raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
    if not raw:
        raise ImageError("empty file")
    header = read_header(raw)
    flags = cv2.IMREAD_UNCHANGED
    if header is not None:
        if header.width * header.height > limits.max_pixels:
            raise _too_large(header.width, header.height, limits, "per its header")
        if header.truncated:
            raise ImageError(f"truncated image ({header.format} data ends early)")
        factor = limits.reduction(header.width, header.height)
        if factor > 1 and header.format == "jpeg":
            flags = _REDUCED_JPEG[factor] | cv2.IMREAD_IGNORE_ORIENTATION
    buffer = np.frombuffer(raw, np.uint8)
    try:
        decoded = cv2.imdecode(buffer, flags)
    except cv2.error:
        decoded = None
    except MemoryError:
        raise ImageError("out of memory while decoding") from None
    if decoded is None:
        raise ImageError("unreadable image")
    rgb = to_rgb_uint8(decoded)
    height, width = rgb.shape[:2]
    if header is None and width * height > limits.max_pixels:
        raise _too_large(width, height, limits, "once decoded")
    factor = limits.reduction(width, height)
    if factor > 1:
        size = (max(1, width // factor), max(1, height // factor))
        rgb = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
    return apply_orientation(rgb, header.orientation if header else 1)


def _stat_regular(path: Path) -> os.stat_result:
    """``os.stat`` of a regular file; :class:`ImageError` says why not."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ImageError("broken symlink" if path.is_symlink() else "file not found") from None
    except OSError as err:
        raise ImageError(f"unreadable file ({err.strerror or err})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ImageError("unreadable file (Is a directory)")
    if not stat.S_ISREG(info.st_mode):
        # A FIFO, socket or device would block or never end.
        raise ImageError("unreadable file (not a regular file)")
    return info


def readable_size(path: str | Path) -> int:
    """The size in bytes of a regular file this process may open for reading, without
    reading it (for files another program decodes, such as videos); :class:`ImageError`
    gives :func:`read_file`'s reasons."""
    path = Path(path)
    info = _stat_regular(path)
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except OSError as err:
        raise ImageError(f"unreadable file ({err.strerror or err})") from None
    return int(info.st_size)


def read_file(path: str | Path) -> bytes:
    """A file's bytes; :class:`ImageError` says why not (missing, a broken symlink, a
    directory, FIFO or other non-file, a symlink loop, no permission), without the path."""
    path = Path(path)
    _stat_regular(path)
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except OSError as err:
        raise ImageError(f"unreadable file ({err.strerror or err})") from None


def load_image(path: str | Path, limits: ImageLimits = DEFAULT_LIMITS) -> np.ndarray:
    """Read and decode an image file as uint8 RGB; :class:`ImageError` reasons carry no
    path, so manifests do not depend on where a dataset is mounted."""
    return decode_image(read_file(path), limits)


def read_image(path: str | Path, limits: ImageLimits = DEFAULT_LIMITS) -> np.ndarray:
    """:func:`load_image` for callers that report an error to a person: the reason is
    followed by the path."""
    try:
        return load_image(path, limits)
    except ImageError as err:
        raise ImageError(f"{err}: {path}") from None


def write_image(path: str | Path, rgb: np.ndarray, quality: int | None = None) -> None:
    """Write a uint8 RGB (or single-channel mask) image; PNG unless the suffix says JPEG.

    Parent folders are created. PNG output is deterministic byte for byte.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = np.asarray(rgb)
    if arr.dtype != np.uint8:
        raise ImageError(f"write_image expects uint8, got {arr.dtype}")
    out = arr if arr.ndim == 2 else cv2.cvtColor(arr, cv2.COLOR_RGB2BGR)
    suffix = path.suffix.lower()
    params: list[int] = []
    if suffix in (".jpg", ".jpeg"):
        params = [cv2.IMWRITE_JPEG_QUALITY, int(quality or 95)]
    elif suffix == ".png":
        params = [cv2.IMWRITE_PNG_COMPRESSION, 1]
    ok, buf = cv2.imencode(suffix or ".png", out, params)
    if not ok:
        raise ImageError(f"could not encode {path}")
    tmp = path.with_name(path.name + ".tmp")
    buf.tofile(str(tmp))
    tmp.replace(path)


def read_mask(path: str | Path) -> np.ndarray:
    """A single-channel uint8 mask (as written by :func:`write_image`)."""
    rgb = read_image(path)
    return np.ascontiguousarray(rgb[:, :, 0])
