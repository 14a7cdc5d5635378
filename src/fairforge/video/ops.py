"""Video operations through ffmpeg (Assessment paper; docs/perturbations.md section 4).

The operations themselves (``vid_h264@40``, ``vid_hflip@1``, ``df_video_compression@35``,
...: their levels, filter chains and encodings) are registered with the image operations on
:data:`fairforge.perturb.OPERATIONS` (:mod:`fairforge.perturb.video_ops`, which has the
table); this module runs them on video files.

Filter operations write lossless FFV1, so a variant measures its own effect and not a
re-encode on top of it; pass ``crf=`` to :func:`apply_video_op` to re-encode them as H.264
the way a platform would. Perturbed videos are cached by content: :func:`cached_video_op`
keys the output by a hash of the input file and the operation's full ffmpeg settings, so
the same inputs reuse the same file. The noise seed comes from that same hash, so a cached
file and a recomputed one are identical.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from fairforge.perturb.base import PerturbationError, VideoOperation
from fairforge.perturb.suites import VIDEO_SUITE
from fairforge.perturb.variants import is_video_variant, op_for_variant, video_variant_pattern
from fairforge.seeding import derive_seed
from fairforge.video.ffmpeg import (
    H264_SUFFIX,
    LOSSLESS_SUFFIX,
    check_video_file,
    encoder_options,
    ffmpeg_exe,
    ffmpeg_python,
    run_ffmpeg,
    temp_path,
)

__all__ = [
    "CACHE_VERSION",
    "VIDEO_SUITE",
    "apply_video_op",
    "cached_video_op",
    "file_digest",
    "is_video_variant",
    "op_settings",
    "output_suffix",
    "video_op_for",
    "video_variant_pattern",
]

# Bump when an operation's meaning changes, so cached files are not reused across versions.
CACHE_VERSION = 1


def video_op_for(variant: str) -> VideoOperation:
    """The operation of a video variant; bad names and levels raise."""
    op = op_for_variant(variant)
    if not isinstance(op, VideoOperation):
        raise PerturbationError(f"{variant!r} is not a video variant")
    return op


def output_suffix(variant: str, crf: int | None = None) -> str:
    """The file suffix a variant's output gets: .mp4 for H.264, .mkv for lossless."""
    op = video_op_for(variant)
    return H264_SUFFIX if op.compression or crf is not None else LOSSLESS_SUFFIX


def op_settings(variant: str, seed: int = 0, crf: int | None = None) -> tuple[list, dict]:
    """(filter chain, encoder options) of a variant: everything that defines its output."""
    op = video_op_for(variant)
    chain = op.filters(seed)
    if op.compression:
        options = encoder_options("h264", int(op.param))
    elif crf is not None:
        options = encoder_options("h264", crf)
    else:
        options = encoder_options("lossless")
    if options["pix_fmt"] == "yuv420p" and op.keeps_size:
        # yuv420p needs even sides; the caller crops the padding off after decoding.
        chain = chain + [("pad", ("ceil(iw/2)*2", "ceil(ih/2)*2"), {})]
    return chain, options


def apply_video_op(
    in_path: str | Path,
    out_path: str | Path,
    variant: str,
    *,
    seed: int = 0,
    crf: int | None = None,
) -> Path:
    """Run one video variant on ``in_path``, writing ``out_path`` (atomically).

    ``seed`` drives the random operations (temporal noise). ``crf`` re-encodes the output
    of a filter operation as H.264 instead of lossless FFV1 (ignored by compression ops,
    whose level is their CRF). Raises :class:`~fairforge.video.ffmpeg.VideoError` when
    ffmpeg cannot read the input, UnknownName/InvalidLevel for a bad variant.
    """
    ff = ffmpeg_python()
    chain, options = op_settings(variant, seed, crf)
    in_path, out_path = Path(in_path), Path(out_path)
    check_video_file(in_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    stream = ff.input(str(in_path))
    for name, args, kwargs in chain:
        stream = stream.filter(name, *args, **kwargs)
    tmp = temp_path(out_path)
    try:
        run_ffmpeg(stream.output(str(tmp), **options), what=f"{variant} on {in_path.name}")
        tmp.replace(out_path)
    finally:
        tmp.unlink(missing_ok=True)
    return out_path


def file_digest(path: str | Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cached_video_op(
    in_path: str | Path, cache_dir: str | Path, variant: str, *, crf: int | None = None
) -> Path:
    """:func:`apply_video_op` with its output cached under ``cache_dir/{variant}/``.

    The file name is a hash of the input's bytes and the operation's ffmpeg settings, so
    the same input and variant reuse one file and any change makes a new one. The noise
    seed is derived from the input's hash: reruns give the same bytes.
    """
    content = file_digest(in_path)
    seed = derive_seed("video_op", variant, content)
    chain, options = op_settings(variant, seed, crf)
    # The binary's file name carries its version (imageio-ffmpeg names them so).
    key = hashlib.blake2b(
        repr(
            (
                CACHE_VERSION,
                Path(ffmpeg_exe()).name,
                content,
                variant,
                chain,
                sorted(options.items()),
            )
        ).encode(),
        digest_size=12,
    ).hexdigest()
    out = Path(cache_dir) / variant / f"{key}{output_suffix(variant, crf)}"
    if not out.is_file():
        apply_video_op(in_path, out, variant, seed=seed, crf=crf)
    return out
