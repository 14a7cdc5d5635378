"""Video operations (Assessment paper; docs/perturbations.md section 4).

Each is a :class:`~fairforge.perturb.base.VideoOperation`: the ffmpeg filter chain and the
encoding of one level. :mod:`fairforge.video.ops` runs them on clips. Levels are 1 for
single-setting operations; for compression the level is the H.264 CRF itself.

====================  ======  =============================================  ===========
variant               output  ffmpeg                                         paper
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

The filter chains are part of the cache key of a perturbed clip, so their exact values
(types included: ``0`` is not ``0.0``) must not change without bumping
``fairforge.video.ops.CACHE_VERSION``.
"""

from __future__ import annotations

from fairforge.perturb.base import OPERATIONS, VideoOperation


@OPERATIONS.register("vid_h264")
class H264(VideoOperation):
    category = "compression"
    levels = (23, 40)  # the level is the CRF
    compression = True
    description = "H.264 at the CRF given by the level"


@OPERATIONS.register("df_video_compression")
class DfVideoCompression(VideoOperation):
    category = "compression"
    levels = (30, 32, 35, 38, 40)  # the level is the CRF
    compression = True
    description = "DeeperForensics-1.0 video compression: H.264 at CRF = level"


@OPERATIONS.register("vid_hflip")
class HFlip(VideoOperation):
    category = "geometry"
    levels = (1,)
    description = "horizontal flip"

    def filters(self, seed):
        return [("hflip", (), {})]


@OPERATIONS.register("vid_vflip")
class VFlip(VideoOperation):
    category = "geometry"
    levels = (1,)
    description = "vertical flip"

    def filters(self, seed):
        return [("vflip", (), {})]


@OPERATIONS.register("vid_vintage")
class Vintage(VideoOperation):
    category = "color"
    levels = (1,)
    params = ("vintage",)  # curves preset
    description = "curves=vintage"

    def filters(self, seed):
        return [("curves", (), {"preset": self.param})]


@OPERATIONS.register("vid_grayscale")
class Grayscale(VideoOperation):
    category = "color"
    levels = (1,)
    params = (0,)  # hue saturation
    description = "hue=s=0"

    def filters(self, seed):
        return [("hue", (), {"s": self.param})]


class _Eq(VideoOperation):
    category = "enhancement"
    levels = (1,)
    setting = ""  # the eq filter's option

    def filters(self, seed):
        return [("eq", (), {self.setting: self.param})]


@OPERATIONS.register("vid_lighten")
class Lighten(_Eq):
    params = (0.2,)
    setting = "brightness"
    description = "eq=brightness=0.2"


@OPERATIONS.register("vid_darken")
class Darken(_Eq):
    params = (-0.2,)
    setting = "brightness"
    description = "eq=brightness=-0.2"


@OPERATIONS.register("vid_contrast")
class Contrast(_Eq):
    params = (1.5,)
    setting = "contrast"
    description = "eq=contrast=1.5"


@OPERATIONS.register("vid_noise")
class Noise(VideoOperation):
    category = "noise"
    levels = (1,)
    params = (20,)  # noise strength, alls
    description = "temporal noise, noise=alls=20:allf=t"

    def filters(self, seed):
        # ffmpeg's noise seed is a 31-bit int; allf=t draws new noise on every frame.
        return [("noise", (), {"alls": self.param, "allf": "t", "all_seed": seed % (2**31)})]


@OPERATIONS.register("vid_scale")
class Scale(VideoOperation):
    category = "resolution"
    levels = (1, 2)
    params = (0.5, 0.25)  # scale factor of both sides
    keeps_size = False
    description = "resolution scaled by 0.5 or 0.25"

    def filters(self, seed):
        # Even sides keep the result encodable as yuv420p when re-encoded with crf=.
        f = self.param
        return [
            (
                "scale",
                (f"max(2,trunc(iw*{f}/2)*2)", f"max(2,trunc(ih*{f}/2)*2)"),
                {"flags": "bicubic"},
            )
        ]


@OPERATIONS.register("vid_stretch")
class Stretch(VideoOperation):
    category = "resolution"
    levels = (1,)
    params = ("4/3",)  # width ratio
    keeps_size = False
    description = "aspect ratio stretched: width x 4/3"

    def filters(self, seed):
        return [
            ("scale", (f"trunc(iw*{self.param}/2)*2", "trunc(ih/2)*2"), {"flags": "bicubic"}),
            ("setsar", ("1",), {}),
        ]
