"""ffmpeg for fairforge: the binary shipped by imageio-ffmpeg, commands built with ffmpeg-python.

Frames are uint8 RGB ``HxWx3`` arrays, as everywhere in the package. Three calls cover what
the video pipeline needs:

- :func:`write_video` pipes frames into an encoder: H.264 (libx264, yuv420p, a CRF) for
  source clips and compression operations, or FFV1 (lossless RGB) for intermediate clips
  whose only degradation must be the operation applied to them;
- :func:`read_video` decodes all frames, or only chosen indices, back to RGB arrays;
- :func:`probe_video` counts the decodable frames and reads size and frame rate by decoding
  once (imageio-ffmpeg ships ``ffmpeg`` but not ``ffprobe``).

A file that cannot be used (missing, empty, not a video, no decodable frame) raises
:class:`VideoError` whose message is the manifest ``reason``; a missing binary or package
raises :class:`FFmpegNotFound`, an environment error that no manifest row should absorb.
Encodes run single-threaded with bit-exact flags, so the same frames give the same bytes.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairforge.images import ImageError, readable_size

DEFAULT_FPS = 25
DEFAULT_CRF = 23
LOSSLESS_SUFFIX = ".mkv"
H264_SUFFIX = ".mp4"

# Keep encoder output reproducible: no timestamps/versions in the container, one thread
# (x264's output depends on the thread count).
_BITEXACT = {"fflags": "+bitexact", "flags:v": "+bitexact", "map_metadata": -1, "threads": 1}


class VideoError(ValueError):
    """A video that cannot be written or decoded; ``str(err)`` is the manifest's reason."""


class FFmpegNotFound(RuntimeError):
    """The ffmpeg binary or the ffmpeg-python package is not available."""


def ffmpeg_python():
    """The ``ffmpeg`` module of ffmpeg-python (not the unrelated PyPI ``ffmpeg`` package)."""
    try:
        import ffmpeg
    except ImportError:
        raise FFmpegNotFound(
            "the ffmpeg-python package is not installed "
            "(pip install ffmpeg-python); fairforge builds its ffmpeg "
            "commands with it"
        ) from None
    if not hasattr(ffmpeg, "input"):
        raise FFmpegNotFound(
            "the installed 'ffmpeg' module is not ffmpeg-python; "
            "pip uninstall ffmpeg && pip install ffmpeg-python"
        )
    return ffmpeg


def ffmpeg_exe() -> str:
    """Path of the ffmpeg binary that imageio-ffmpeg provides (or IMAGEIO_FFMPEG_EXE)."""
    try:
        import imageio_ffmpeg
    except ImportError:
        raise FFmpegNotFound(
            "the imageio-ffmpeg package is not installed "
            "(pip install imageio-ffmpeg); it provides the ffmpeg binary "
            "used for video operations"
        ) from None
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as err:
        raise FFmpegNotFound(
            f"no ffmpeg binary: imageio-ffmpeg has none for this platform "
            f"({err}); install ffmpeg or set IMAGEIO_FFMPEG_EXE to its "
            f"path"
        ) from None
    if not exe or not (Path(exe).is_file() and os.access(exe, os.X_OK)):
        raise FFmpegNotFound(
            f"ffmpeg binary {exe!r} (from imageio-ffmpeg) is not an "
            f"executable file; set IMAGEIO_FFMPEG_EXE to a working ffmpeg"
        )
    return exe


_NOISE = re.compile(r"^\[[^\]]+ @ 0x[0-9a-f]+\]\s*")


def ffmpeg_reason(stderr: str, limit: int = 2) -> str:
    """The first error lines of ffmpeg's stderr (the cause; later lines repeat the
    consequence), without the ``[demuxer @ 0x..]`` prefixes."""
    if "matches no streams" in stderr:
        return "no video stream"
    lines = [_NOISE.sub("", x).strip() for x in stderr.splitlines()]
    lines = [x for x in lines if x and not x.startswith(("frame=", "Press [q]"))]
    errors = [
        x
        for x in lines
        if re.search(
            r"error|invalid|not found|no such|could not|"
            r"unable|failed|moov",
            x,
            re.I,
        )
    ]
    picked = errors[:limit] if errors else lines[-limit:]
    return "; ".join(dict.fromkeys(picked)) or "ffmpeg failed without a message"


def run_ffmpeg(
    stream, *, input_bytes: bytes | None = None, what: str = "ffmpeg"
) -> tuple[bytes, str]:
    """Run an ffmpeg-python output stream with the imageio-ffmpeg binary.

    Returns (stdout bytes, stderr text); a non-zero exit raises :class:`VideoError` with
    ffmpeg's own reason.
    """
    args = stream.compile(cmd=ffmpeg_exe())
    args[1:1] = ["-hide_banner", "-y"] + (["-nostdin"] if input_bytes is None else [])
    proc = subprocess.run(args, input=input_bytes, capture_output=True, check=False)
    err = proc.stderr.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        raise VideoError(f"{what}: {ffmpeg_reason(err)}")
    return proc.stdout, err


def check_video_file(path: Path) -> None:
    """Refuse, with the reason, a video file ffmpeg could not read or would hang on: missing,
    empty, a directory, FIFO or symlink loop, or one this process may not open."""
    try:
        size = readable_size(path)
    except ImageError as err:
        reason = "video not found" if str(err) == "file not found" else str(err)
        raise VideoError(f"{reason}: {path}") from None
    if size == 0:
        raise VideoError(f"empty video file: {path}")


# ------------------------------------------------------------------------------------ write


def as_frame_array(frames: Iterable[np.ndarray] | np.ndarray) -> np.ndarray:
    """Stack frames into a (T, H, W, 3) uint8 array, checking that they agree."""
    if isinstance(frames, np.ndarray):
        stack = frames
    else:
        frames = list(frames)
        if not frames:
            raise VideoError("no frames to write")
        shapes = {np.asarray(f).shape for f in frames}
        if len(shapes) != 1:
            raise VideoError(f"frames differ in shape: {sorted(shapes)}")
        stack = np.stack(frames)
    if stack.ndim != 4 or stack.shape[-1] != 3:
        raise VideoError(f"expected frames of shape HxWx3, got {stack.shape[1:]}")
    if stack.shape[0] == 0:
        raise VideoError("no frames to write")
    if stack.dtype != np.uint8:
        raise VideoError(f"expected uint8 frames, got {stack.dtype}")
    if stack.shape[1] < 2 or stack.shape[2] < 2:
        raise VideoError(f"frames too small: {stack.shape[1:3]}")
    return np.ascontiguousarray(stack)


def pad_to_even(frames: np.ndarray) -> np.ndarray:
    """Replicate the last row/column so height and width are even (yuv420p needs it)."""
    h, w = frames.shape[1:3]
    if h % 2 == 0 and w % 2 == 0:
        return frames
    return np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def encoder_options(codec: str, crf: int | None = None, preset: str = "medium") -> dict:
    """ffmpeg output options of fairforge's two encodings: ``h264`` and ``lossless``."""
    if codec == "h264":
        crf = DEFAULT_CRF if crf is None else int(crf)
        if not 0 <= crf <= 51:
            raise ValueError(f"H.264 CRF must be in 0..51, got {crf}")
        return {
            "vcodec": "libx264",
            "pix_fmt": "yuv420p",
            "crf": crf,
            "preset": preset,
            "an": None,
            **_BITEXACT,
        }
    if codec == "lossless":
        # FFV1 on 8-bit RGB: every pixel survives, so only the operation changes the frames.
        return {"vcodec": "ffv1", "pix_fmt": "bgr0", "an": None, **_BITEXACT}
    raise ValueError(f"unknown codec {codec!r}; expected 'h264' or 'lossless'")


def temp_path(path: Path) -> Path:
    # Same suffix, so ffmpeg picks the container from it; a name unique to this write (other
    # processes and threads may write the same cached file) and a rename make it atomic.
    return path.with_name(f".{path.stem}.{uuid.uuid4().hex[:12]}.tmp{path.suffix}")


def write_video(
    path: str | Path,
    frames: Iterable[np.ndarray] | np.ndarray,
    *,
    fps: float = DEFAULT_FPS,
    crf: int = DEFAULT_CRF,
    codec: str = "h264",
    preset: str = "medium",
) -> Path:
    """Encode uint8 RGB frames to ``path`` (container from the suffix, e.g. .mp4, .mkv).

    ``codec='h264'``: libx264, yuv420p at ``crf``; odd heights/widths are padded by one
    replicated row/column. ``codec='lossless'``: FFV1 RGB, frames decode back exactly.
    The file appears atomically (written under a temporary name, then renamed).
    """
    ff = ffmpeg_python()
    stack = as_frame_array(frames)
    if codec == "h264":
        stack = pad_to_even(stack)
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    h, w = stack.shape[1:3]
    stream = ff.input(
        "pipe:", format="rawvideo", pix_fmt="rgb24", s=f"{w}x{h}", framerate=fps
    ).output(str(tmp), **encoder_options(codec, crf, preset))
    try:
        run_ffmpeg(stream, input_bytes=stack.tobytes(), what=f"writing {path.name}")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


# ------------------------------------------------------------------------------------- read


@dataclass(frozen=True)
class VideoInfo:
    """What :func:`probe_video` found: decodable frames, size of a decoded frame, rate."""

    n_frames: int
    width: int
    height: int
    fps: float
    duration: float


_STREAM_SIZE = re.compile(r"Video: .*?, (\d{2,5})x(\d{2,5})[ ,\[]")
_FPS = re.compile(r"([0-9.]+) (?:fps|tbr)")
_FRAMES = re.compile(r"frame=\s*(\d+)")
_TIME = re.compile(r"time=\s*(\d+):(\d+):([0-9.]+)")


def _section(stderr: str, heading: str) -> str:
    """The part of ffmpeg's stderr about ``Input #0`` or ``Output #0``."""
    at = stderr.find(heading)
    if at < 0:
        return ""
    rest = stderr[at:]
    if heading.startswith("Input"):
        ends = [i for i in (rest.find("Stream mapping"), rest.find("Output #0")) if i > 0]
        rest = rest[: min(ends)] if ends else rest
    return rest


def _stream_size(section: str) -> tuple[int, int] | None:
    m = _STREAM_SIZE.search(section)
    return (int(m.group(1)), int(m.group(2))) if m else None


def probe_video(path: str | Path, decode: bool = True) -> VideoInfo:
    """Report a video's frame count, frame size and rate.

    ``decode=True`` decodes every frame and counts those that decode; ``decode=False``
    counts the packets of the video stream without decoding (fast, but blind to damaged
    packets). Raises :class:`VideoError` for a missing or empty file, a file ffmpeg cannot
    open, one without a video stream, or one without frames.
    """
    ff = ffmpeg_python()
    path = Path(path)
    check_video_file(path)
    options = {"format": "null", "map": "0:v:0"} | ({} if decode else {"c": "copy"})
    stream = ff.input(str(path)).output("-", **options)
    _, err = run_ffmpeg(stream, what=f"reading {path.name}")
    frames = _FRAMES.findall(err)
    n = int(frames[-1]) if frames else 0
    if n == 0:
        raise VideoError(f"no decodable frames in {path.name}")
    size = _stream_size(_section(err, "Output #0")) or _stream_size(_section(err, "Input #0"))
    if size is None:
        raise VideoError(f"could not read the frame size of {path.name}")
    fps_match = _FPS.search(_section(err, "Input #0"))
    fps = float(fps_match.group(1)) if fps_match else 0.0
    # Packet timestamps end one frame early; n / fps is the same whichever way we count.
    times = _TIME.findall(err)
    duration = (
        n / fps
        if fps
        else int(times[-1][0]) * 3600 + int(times[-1][1]) * 60 + float(times[-1][2])
        if times
        else 0.0
    )
    return VideoInfo(n_frames=n, width=size[0], height=size[1], fps=fps, duration=duration)


def evenly_spaced(n_frames: int, n: int) -> np.ndarray:
    """``n`` evenly spaced frame indices in ``[0, n_frames)``, first and last included.

    All frames when ``n >= n_frames``. Indices are distinct and increasing.
    """
    if n_frames < 1:
        raise ValueError(f"n_frames must be >= 1, got {n_frames}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n >= n_frames:
        return np.arange(n_frames, dtype=np.int64)
    if n == 1:
        return np.array([(n_frames - 1) // 2], dtype=np.int64)
    # floor(x + 0.5) rather than round(): half-to-even could merge neighbours.
    return np.floor(np.linspace(0, n_frames - 1, n) + 0.5).astype(np.int64)


def _check_indices(indices: Sequence[int]) -> np.ndarray:
    idx = np.asarray(indices, dtype=np.int64).ravel()
    if idx.size == 0:
        raise ValueError("no frame indices given")
    if (idx < 0).any() or (np.diff(idx) <= 0).any():
        raise ValueError("frame indices must be non-negative and strictly increasing")
    return idx


def read_video(path: str | Path, indices: Sequence[int] | None = None) -> np.ndarray:
    """Decode ``path`` to a (T, H, W, 3) uint8 RGB array: every frame, or only ``indices``.

    ``indices`` (strictly increasing) count decoded frames from 0; asking for a frame past
    the end raises :class:`VideoError`, as do unreadable files and videos without frames.
    """
    ff = ffmpeg_python()
    path = Path(path)
    check_video_file(path)
    source = ff.input(str(path))
    wanted = None
    if indices is not None:
        wanted = _check_indices(indices)
        source = source.filter("select", "+".join(f"eq(n,{i})" for i in wanted.tolist()))
    stream = source.output(
        "pipe:", format="rawvideo", pix_fmt="rgb24", fps_mode="passthrough", an=None
    )
    out, err = run_ffmpeg(stream, what=f"reading {path.name}")
    size = _stream_size(_section(err, "Output #0"))
    if not out:
        raise VideoError(
            f"no decodable frames in {path.name}"
            + (f" at indices {wanted[:8].tolist()}" if wanted is not None else "")
        )
    if size is None:
        raise VideoError(f"could not read the frame size of {path.name}")
    w, h = size
    frame_bytes = w * h * 3
    if len(out) % frame_bytes:
        raise VideoError(
            f"decoded {len(out)} bytes from {path.name}, not a whole number of {w}x{h} frames"
        )
    frames = np.frombuffer(out, np.uint8).reshape(-1, h, w, 3)
    if wanted is not None and len(frames) != len(wanted):
        raise VideoError(
            f"{path.name}: {len(frames)} of {len(wanted)} requested frames "
            f"decoded (last requested index {int(wanted[-1])})"
        )
    return frames.copy()


def read_sampled(path: str | Path, n: int) -> tuple[np.ndarray, np.ndarray, VideoInfo]:
    """``n`` evenly spaced frames of ``path``: (indices, frames, info).

    Frames are counted from the stream's packets; when some do not decode (a damaged
    stream), the decodable frames are counted and the indices drawn among those.
    """
    info = probe_video(path, decode=False)
    try:
        indices = evenly_spaced(info.n_frames, n)
        return indices, read_video(path, indices), info
    except VideoError:
        info = probe_video(path, decode=True)
        indices = evenly_spaced(info.n_frames, n)
        return indices, read_video(path, indices), info
