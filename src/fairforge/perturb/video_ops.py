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

from fairforge.perturb.base import VideoOperation, register


@register
class H264(VideoOperation):
    name = "vid_h264"
    category = "compression"
    levels = (23, 40)  # the level is the CRF
    compression = True
    description = "H.264 at the CRF given by the level"


@register
class DfVideoCompression(VideoOperation):
    name = "df_video_compression"
    category = "compression"
    levels = (30, 32, 35, 38, 40)  # the level is the CRF
    compression = True
    description = "DeeperForensics-1.0 video compression: H.264 at CRF = level"


@register
class HFlip(VideoOperation):
    name = "vid_hflip"
    category = "geometry"
    levels = (1,)
    description = "horizontal flip"

    def filters(self, seed):
        return [("hflip", (), {})]


@register
class VFlip(VideoOperation):
    name = "vid_vflip"
    category = "geometry"
    levels = (1,)
    description = "vertical flip"

    def filters(self, seed):
        return [("vflip", (), {})]


@register
class Vintage(VideoOperation):
    name = "vid_vintage"
    category = "color"
    levels = (1,)
    params = ("vintage",)  # curves preset
    description = "curves=vintage"

    def filters(self, seed):
        return [("curves", (), {"preset": self.param})]


@register
class Grayscale(VideoOperation):
    name = "vid_grayscale"
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


@register
class Lighten(_Eq):
    name = "vid_lighten"
    params = (0.2,)
    setting = "brightness"
    description = "eq=brightness=0.2"


@register
class Darken(_Eq):
    name = "vid_darken"
    params = (-0.2,)
    setting = "brightness"
    description = "eq=brightness=-0.2"


@register
class Contrast(_Eq):
    name = "vid_contrast"
    params = (1.5,)
    setting = "contrast"
    description = "eq=contrast=1.5"


@register
class Noise(VideoOperation):
    name = "vid_noise"
    category = "noise"
    levels = (1,)
    params = (20,)  # noise strength, alls
    description = "temporal noise, noise=alls=20:allf=t"

    def filters(self, seed):
        # ffmpeg's noise seed is a 31-bit int; allf=t draws new noise on every frame.
        return [("noise", (), {"alls": self.param, "allf": "t", "all_seed": seed % (2**31)})]


@register
class Scale(VideoOperation):
    name = "vid_scale"
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


@register
class Stretch(VideoOperation):
    name = "vid_stretch"
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
