"""ffmpeg run directly, without fairforge: the independent encodes and decodes that video tests
compare fairforge's output with.

A bound on what H.264 (or an ffmpeg filter's colour conversion) makes of a clip measures the
encoder build, its assembly paths and threads as much as fairforge; equality with the same
binary run by hand on the same frames, with the settings docs/perturbations.md states, holds
on every machine. The settings are re-stated here, not imported: libx264, yuv420p, the CRF,
preset medium, one thread, bit-exact container (fairforge.video.ffmpeg); FFV1 on bgr0 for
lossless clips; odd sides padded by one replicated row/column.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import imageio_ffmpeg
import numpy as np

BITEXACT = ["-threads", "1", "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1"]
FFV1 = ["-c:v", "ffv1", "-pix_fmt", "bgr0", "-an", *BITEXACT]
PAD_EVEN = "pad=ceil(iw/2)*2:ceil(ih/2)*2"


def h264(crf: int) -> list[str]:
    """Output options of an H.264 encode at ``crf``."""
    return ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", str(crf), "-preset", "medium"] + [
        "-an",
        *BITEXACT,
    ]


def _ffmpeg(*args: str, stdin: bytes | None = None) -> bytes:
    exe = imageio_ffmpeg.get_ffmpeg_exe()
    cmd = [exe, "-hide_banner", "-loglevel", "error", "-y", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, check=True).stdout


def encode(frames: np.ndarray, path: Path, options: list[str], fps: float = 25) -> Path:
    """Pipe uint8 RGB frames (T, H, W, 3) into ffmpeg, writing ``path`` with ``options``."""
    _, h, w, _ = frames.shape
    raw = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-framerate", f"{fps:g}"]
    _ffmpeg(*raw, "-i", "pipe:", *options, str(path), stdin=np.ascontiguousarray(frames).tobytes())
    return Path(path)


def transcode(src: Path, path: Path, options: list[str], vf: str | None = None) -> Path:
    """``src`` through the filter graph ``vf`` (if any) into ``path`` with ``options``."""
    _ffmpeg("-i", str(src), *(["-vf", vf] if vf else []), *options, str(path))
    return Path(path)


def decode(path: Path, height: int, width: int) -> np.ndarray:
    """Every frame of ``path`` as uint8 RGB (T, height, width, 3)."""
    out = _ffmpeg("-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:")
    return np.frombuffer(out, np.uint8).reshape(-1, height, width, 3).copy()


def h264_frames(frames: np.ndarray, crf: int) -> np.ndarray:
    """Frames (T, H, W, 3) through H.264 at ``crf`` and back, cropped to their own size."""
    _, h, w, _ = frames.shape
    with tempfile.TemporaryDirectory(prefix="ffmpeg_reference_") as tmp:
        path = encode(frames, Path(tmp) / "clip.mp4", ["-vf", PAD_EVEN, *h264(crf)])
        return decode(path, h + h % 2, w + w % 2)[:, :h, :w].copy()


def filtered_frames(src: Path, vf: str, height: int, width: int) -> np.ndarray:
    """The clip ``src`` through the filter graph ``vf`` into lossless FFV1, decoded."""
    with tempfile.TemporaryDirectory(prefix="ffmpeg_reference_") as tmp:
        return decode(transcode(src, Path(tmp) / "clip.mkv", FFV1, vf=vf), height, width)
