"""Video operations through ffmpeg (Assessment paper; docs/perturbations.md sections 3 and 4).

Variants are named ``{op}@{level}`` like image variants. Levels are 1 for single-setting
operations; for compression the level is the H.264 CRF itself.

====================  ======  =============================================  ===========
variant               output  ffmpeg                                         paper name
====================  ======  =============================================  ===========
vid_h264@23, @40      H.264   libx264 yuv420p, CRF 23 / 40                   h264 CRF 23, 40
df_video_compression  H.264   libx264 yuv420p, CRF 30, 32, 35, 38, 40        DeeperForensics
@30 .. @40
vid_hflip@1           FFV1    ``hflip``                                      hflip
vid_vflip@1           FFV1    ``vflip``                                      vflip
vid_vintage@1         FFV1    ``curves=preset=vintage``                      vintage filter
vid_grayscale@1       FFV1    ``hue=s=0``                                    grayscale
vid_lighten@1         FFV1    ``eq=brightness=0.2``                          lighten
vid_darken@1          FFV1    ``eq=brightness=-0.2``                         darken
vid_contrast@1        FFV1    ``eq=contrast=1.5``                            contrast
vid_noise@1           FFV1    ``noise=alls=20:allf=t`` (seeded per input)    temporal noise
vid_scale@1, @2       FFV1    ``scale`` by 0.5 / 0.25 (bicubic, even sides)  resolution
vid_stretch@1         FFV1    width x 4/3, height kept (4:3 shown as 16:9)   aspect ratio
====================  ======  =============================================  ===========

Filter operations write lossless FFV1, so a variant measures its own effect and not a
re-encode on top of it; pass ``crf=`` to :func:`apply_video_op` to re-encode them as H.264
the way a platform would. Perturbed videos are cached by content: :func:`cached_video_op`
keys the output by a hash of the input file and the operation's full ffmpeg settings, so
the same inputs reuse the same file. The noise seed comes from that same hash, so a cached
file and a recomputed one are identical.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fairforge.perturb.registry import CLEAN, InvalidLevel, UnknownOperation, parse_variant
from fairforge.seeding import derive_seed
from fairforge.video.ffmpeg import (H264_SUFFIX, LOSSLESS_SUFFIX, encoder_options,
                                    ffmpeg_exe, ffmpeg_python, run_ffmpeg, check_video_file,
                                    temp_path)

# Bump when an operation's meaning changes, so cached files are not reused across versions.
CACHE_VERSION = 1

Filter = tuple[str, tuple, dict]


@dataclass(frozen=True)
class VideoOp:
    """A video operation: its levels, the ffmpeg filters of a level, and its encoding.

    ``filters(param, seed)`` returns ``[(filter_name, args, kwargs), ...]``; ``crf`` set
    means the output is H.264 at that CRF (the parameter, for compression ops), otherwise
    lossless. ``keeps_size``: decoded frames have the input's size (flips, colour, noise).
    """

    name: str
    category: str
    levels: tuple[int, ...]
    params: tuple
    filters: Callable[[object, int], list[Filter]]
    compression: bool = False
    keeps_size: bool = True
    description: str = ""

    def param(self, level: int) -> object:
        if level not in self.levels:
            raise InvalidLevel(f"{self.name}: level {level} is not one of {list(self.levels)}")
        return self.params[self.levels.index(level)]

    def variants(self) -> list[str]:
        return [f"{self.name}@{lv}" for lv in self.levels]


VIDEO_OPS: dict[str, VideoOp] = {}


def register_video_op(op: VideoOp) -> VideoOp:
    if op.name in VIDEO_OPS:
        raise TypeError(f"video operation {op.name!r} registered twice")
    if len(op.levels) != len(op.params):
        raise TypeError(f"{op.name}: levels and params differ in length")
    VIDEO_OPS[op.name] = op
    return op


def _none(param, seed):
    return []


def _fixed(*chain: Filter):
    return lambda param, seed: list(chain)


def _scale(factor, seed):
    # Even sides keep the result encodable as yuv420p when re-encoded with crf=.
    return [("scale", (f"max(2,trunc(iw*{factor}/2)*2)", f"max(2,trunc(ih*{factor}/2)*2)"),
             {"flags": "bicubic"})]


def _stretch(ratio, seed):
    return [("scale", (f"trunc(iw*{ratio}/2)*2", "trunc(ih/2)*2"), {"flags": "bicubic"}),
            ("setsar", ("1",), {})]


def _noise(strength, seed):
    # ffmpeg's noise seed is a 31-bit int; allf=t draws new noise on every frame.
    return [("noise", (), {"alls": strength, "allf": "t", "all_seed": seed % (2 ** 31)})]


for _op in (
    VideoOp("vid_h264", "compression", (23, 40), (23, 40), _none, compression=True,
            description="H.264 at the CRF given by the level"),
    VideoOp("df_video_compression", "compression", (30, 32, 35, 38, 40),
            (30, 32, 35, 38, 40), _none, compression=True,
            description="DeeperForensics-1.0 video compression: H.264 at CRF = level"),
    VideoOp("vid_hflip", "geometry", (1,), (None,), _fixed(("hflip", (), {})),
            description="horizontal flip"),
    VideoOp("vid_vflip", "geometry", (1,), (None,), _fixed(("vflip", (), {})),
            description="vertical flip"),
    VideoOp("vid_vintage", "color", (1,), ("vintage",),
            lambda p, s: [("curves", (), {"preset": p})], description="curves=vintage"),
    VideoOp("vid_grayscale", "color", (1,), (0,),
            lambda p, s: [("hue", (), {"s": p})], description="hue=s=0"),
    VideoOp("vid_lighten", "enhancement", (1,), (0.2,),
            lambda p, s: [("eq", (), {"brightness": p})], description="eq=brightness=0.2"),
    VideoOp("vid_darken", "enhancement", (1,), (-0.2,),
            lambda p, s: [("eq", (), {"brightness": p})], description="eq=brightness=-0.2"),
    VideoOp("vid_contrast", "enhancement", (1,), (1.5,),
            lambda p, s: [("eq", (), {"contrast": p})], description="eq=contrast=1.5"),
    VideoOp("vid_noise", "noise", (1,), (20,), _noise,
            description="temporal noise, noise=alls=20:allf=t"),
    VideoOp("vid_scale", "resolution", (1, 2), (0.5, 0.25), _scale, keeps_size=False,
            description="resolution scaled by 0.5 or 0.25"),
    VideoOp("vid_stretch", "resolution", (1,), ("4/3",), _stretch, keeps_size=False,
            description="aspect ratio stretched: width x 4/3"),
):
    register_video_op(_op)


def get_video_op(name: str) -> VideoOp:
    try:
        return VIDEO_OPS[name]
    except KeyError:
        raise UnknownOperation(f"unknown video operation {name!r}; known: "
                               f"{', '.join(list_video_ops())}") from None


def list_video_ops(category: str | None = None) -> list[str]:
    return sorted(n for n, op in VIDEO_OPS.items() if category is None or op.category == category)


def video_variants(names: list[str] | None = None) -> list[str]:
    """Every variant of the named video ops (default: all, in table order), by level."""
    return [v for n in (names or list(VIDEO_OPS)) for v in get_video_op(n).variants()]


VIDEO_SUITE: list[str] = video_variants()


def video_variant_pattern() -> str:
    """A regex matching the names of video variants (a Snakemake wildcard constraint)."""
    return "(?:" + "|".join(sorted(VIDEO_OPS)) + r")@-?\d+"


def is_video_variant(variant: str) -> bool:
    """True for ``{op}@{level}`` variants of a video operation (any level)."""
    if not isinstance(variant, str) or variant == CLEAN:
        return False
    try:
        name, _ = parse_variant(variant)
    except ValueError:
        return False
    return name in VIDEO_OPS


def video_op_for(variant: str) -> tuple[VideoOp, int]:
    """The op and level of a video variant; bad names and levels raise."""
    name, level = parse_variant(variant)
    op = get_video_op(name)
    op.param(level)
    return op, level


def output_suffix(variant: str, crf: int | None = None) -> str:
    """The file suffix a variant's output gets: .mp4 for H.264, .mkv for lossless."""
    op, _ = video_op_for(variant)
    return H264_SUFFIX if op.compression or crf is not None else LOSSLESS_SUFFIX


def op_settings(variant: str, seed: int = 0, crf: int | None = None) -> tuple[list, dict]:
    """(filter chain, encoder options) of a variant: everything that defines its output."""
    op, level = video_op_for(variant)
    param = op.param(level)
    chain = op.filters(param, seed)
    if op.compression:
        options = encoder_options("h264", int(param))
    elif crf is not None:
        options = encoder_options("h264", crf)
    else:
        options = encoder_options("lossless")
    if options["pix_fmt"] == "yuv420p" and op.keeps_size:
        # yuv420p needs even sides; the caller crops the padding off after decoding.
        chain = chain + [("pad", ("ceil(iw/2)*2", "ceil(ih/2)*2"), {})]
    return chain, options


def apply_video_op(in_path: str | Path, out_path: str | Path, variant: str, *,
                   seed: int = 0, crf: int | None = None) -> Path:
    """Run one video variant on ``in_path``, writing ``out_path`` (atomically).

    ``seed`` drives the random operations (temporal noise). ``crf`` re-encodes the output
    of a filter operation as H.264 instead of lossless FFV1 (ignored by compression ops,
    whose level is their CRF). Raises :class:`~fairforge.video.ffmpeg.VideoError` when
    ffmpeg cannot read the input, UnknownOperation/InvalidLevel for a bad variant.
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


def cached_video_op(in_path: str | Path, cache_dir: str | Path, variant: str, *,
                    crf: int | None = None) -> Path:
    """:func:`apply_video_op` with its output cached under ``cache_dir/{variant}/``.

    The file name is a hash of the input's bytes and the operation's ffmpeg settings, so
    the same input and variant reuse one file and any change makes a new one. The noise
    seed is derived from the input's hash: reruns give the same bytes.
    """
    content = file_digest(in_path)
    seed = derive_seed("video_op", variant, content)
    chain, options = op_settings(variant, seed, crf)
    # The binary's file name carries its version (imageio-ffmpeg names them so).
    key = hashlib.blake2b(repr((CACHE_VERSION, Path(ffmpeg_exe()).name, content, variant,
                                chain, sorted(options.items()))).encode(),
                          digest_size=12).hexdigest()
    out = Path(cache_dir) / variant / f"{key}{output_suffix(variant, crf)}"
    if not out.is_file():
        apply_video_op(in_path, out, variant, seed=seed, crf=crf)
    return out
