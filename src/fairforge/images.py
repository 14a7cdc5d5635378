"""Reading and writing images: every input becomes uint8 RGB HxWx3, or a clear reason why not.

Inside the package images are RGB; OpenCV's BGR stays at this boundary.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


class ImageError(ValueError):
    """An image that cannot be used; ``str(err)`` is the manifest's ``reason``."""


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


def read_image(path: str | Path) -> np.ndarray:
    """Read any image file as uint8 RGB; raise :class:`ImageError` with a reason on failure."""
    path = Path(path)
    if not path.is_file():
        raise ImageError(f"file not found: {path}")
    data = np.fromfile(str(path), dtype=np.uint8)
    if data.size == 0:
        raise ImageError(f"empty file: {path}")
    decoded = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    if decoded is None:
        raise ImageError(f"unreadable image: {path}")
    return to_rgb_uint8(decoded)


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
