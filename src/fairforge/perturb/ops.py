"""Image operations of the real-world assessment framework (docs/perturbations.md section 2).

Levels are 1..5 (mildest to harshest; for brightness, contrast and gamma they index the
table, which runs from one side of the identity to the other) except where the level is
the natural parameter:
``jpeg`` (quality 95, 80, 60, 45, 30), ``gaussian_blur`` (kernel 3..11) and
``learned_compression`` (CompressAI quality 1..8). ``hific``'s levels 1..3 are the HiFiC
release's regimes (low, med, high). ``params`` lists what each level means.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import cv2
import numpy as np

from fairforge.perturb.base import OPERATIONS, Operation, OperationUnavailable, PerturbationError

# Relative to the working directory (the workflow root) unless the config gives a path.
WEIGHTS_DIR = Path("weights")


# Where an op looks for its weights when the config gives no path ({quality}: the level).
COMPRESSAI_WEIGHTS = str(WEIGHTS_DIR / "compressai" / "bmshj2018-factorized-q{quality}.pth.tar")
DNCNN_WEIGHTS = WEIGHTS_DIR / "dncnn" / "dncnn_color_blind.pth"
# HiFiC's converted checkpoints ({regime}: low, med, high; {level}: 1, 2, 3).
HIFIC_WEIGHTS = str(WEIGHTS_DIR / "hific" / "hific-{regime}.pth")
#: HiFiC's PyTorch release and its checkpoint per regime, as published (README "Pretrained
#: Models", Google Drive, and Zenodo record 4026003).
HIFIC_RELEASE = "github.com/Justin-Tan/high-fidelity-generative-compression"
HIFIC_FILES = {"low": "hific_low.pt", "med": "hific_med.pt", "high": "hific_hi.pt"}


# --- pixel helpers shared with augment.py and distance.py --------------------------------


def to_uint8(values: np.ndarray) -> np.ndarray:
    """Round and clip float pixels to uint8."""
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


def add_gaussian_noise(image: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    if sigma <= 0:
        return image.copy()
    noise = rng.standard_normal(image.shape, dtype=np.float32) * np.float32(sigma)
    return to_uint8(image.astype(np.float32) + noise)


def add_poisson_gaussian_noise(
    image: np.ndarray, a: float, b: float, rng: np.random.Generator
) -> np.ndarray:
    """Signal-dependent noise on x in [0, 1]: ``a * Poisson(x / a) + N(0, b^2)``."""
    x = image.astype(np.float32) / 255.0
    shot = rng.poisson(x / a).astype(np.float32) * np.float32(a) if a > 0 else x
    read = rng.standard_normal(image.shape, dtype=np.float32) * np.float32(b)
    return to_uint8((shot + read) * 255.0)


def encode_jpeg(image: np.ndarray, quality: int) -> bytes:
    """JPEG bytes of an RGB image (OpenCV's libjpeg, 4:2:0 chroma subsampling)."""
    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)]
    )
    if not ok:
        raise RuntimeError(f"JPEG encoding failed at quality {quality}")
    return buf.tobytes()


def jpeg_roundtrip(image: np.ndarray, quality: int) -> np.ndarray:
    data = np.frombuffer(encode_jpeg(image, quality), dtype=np.uint8)
    return cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


INTERPOLATIONS = {
    "nearest": cv2.INTER_NEAREST,
    "linear": cv2.INTER_LINEAR,
    "cubic": cv2.INTER_CUBIC,
    "area": cv2.INTER_AREA,
    "lanczos": cv2.INTER_LANCZOS4,
}


def interpolation(name: str, where: str = "interpolation") -> int:
    """The OpenCV flag of an interpolation name (``INTERPOLATIONS``); unknown names raise."""
    try:
        return INTERPOLATIONS[name]
    except KeyError:
        raise PerturbationError(
            f"{where}: {name!r} is not one of {sorted(INTERPOLATIONS)}"
        ) from None


def resize_roundtrip(
    image: np.ndarray, scale: float, down: int = cv2.INTER_AREA, up: int = cv2.INTER_CUBIC
) -> np.ndarray:
    """Down by ``scale`` then back to the original size, with OpenCV interpolation flags.

    INTER_AREA on the way down integrates over the source pixels, as a camera does; the
    bilinear or bicubic resampling of software pipelines (cv2 without antialiasing) aliases.
    """
    h, w = image.shape[:2]
    small = cv2.resize(
        image, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=down
    )
    return cv2.resize(small, (w, h), interpolation=up)


def gaussian_blur(image: np.ndarray, kernel: int, sigma: float = 0.0) -> np.ndarray:
    # sigma 0 lets OpenCV derive it from the kernel: 0.3 * ((k - 1) / 2 - 1) + 0.8;
    # kernel 0 derives the kernel from sigma (2 * round(3 * sigma) + 1 on uint8 images).
    return cv2.GaussianBlur(image, (kernel, kernel), sigma, borderType=cv2.BORDER_REFLECT_101)


def gray_mean(image: np.ndarray) -> float:
    return float(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).mean())


def lut(image: np.ndarray, table: np.ndarray) -> np.ndarray:
    return cv2.LUT(image, to_uint8(table))


# --- noise --------------------------------------------------------------------------------


@OPERATIONS.register("gaussian_noise")
class GaussianNoise(Operation):
    category = "noise"
    params = (5.0, 10.0, 20.0, 35.0, 50.0)  # sigma in grey levels
    continuous = "float"

    def apply(self, image, rng):
        return add_gaussian_noise(image, self.param, rng)


@OPERATIONS.register("poisson_gaussian_noise")
class PoissonGaussianNoise(Operation):
    """Poisson-Gaussian sensor noise (Foi et al. 2008) on pixel values in [0, 1].

    (a, b) per level: a scales the shot noise (variance a * x), b is the read-noise std.
    At mid-grey x = 0.5 the total std is about 8, 13, 23, 37, 55 grey levels, close to the
    sigmas of ``gaussian_noise`` so the two suites have comparable severities.
    """

    category = "noise"
    params = ((0.002, 0.01), (0.005, 0.02), (0.015, 0.04), (0.04, 0.06), (0.09, 0.09))
    continuous = "float"

    def apply(self, image, rng):
        a, b = self.param
        return add_poisson_gaussian_noise(image, a, b, rng)


# --- resizing and compression -------------------------------------------------------------


@OPERATIONS.register("resize")
class Resize(Operation):
    """Down by the level's scale and back up; ``down`` / ``up`` name the interpolations.

    Bilinear both ways by default, as OpenCV resizes unless told otherwise and as the
    DeeperForensics reference code resizes. The Assessment paper upscales bicubic (§3.1):
    ``up="cubic"``, as ``configs/assessment.yaml`` sets. ``down="area"`` is the antialiased,
    camera-like reading.
    """

    category = "resizing"
    params = (0.75, 0.5, 0.35, 0.25, 0.15)  # scale of the intermediate image
    continuous = "float"

    def __init__(self, level: int, down: str = "linear", up: str = "linear"):
        super().__init__(level)
        self.down = interpolation(down, "resize: down")
        self.up = interpolation(up, "resize: up")

    def apply(self, image, rng):
        return resize_roundtrip(image, self.param, self.down, self.up)


@OPERATIONS.register("jpeg")
class Jpeg(Operation):
    category = "compression"
    levels = (95, 80, 60, 45, 30)  # the level is the quality
    continuous = "int"

    def apply(self, image, rng):
        return jpeg_roundtrip(image, self.param)

    def bits(self, image: np.ndarray) -> float:
        """Size of the JPEG file, in bits (a codec's rate: :func:`bits_per_pixel`)."""
        return 8.0 * len(encode_jpeg(image, self.param))


@OPERATIONS.register("learned_compression")
class LearnedCompression(Operation):
    """bmshj2018-factorized (Ballé et al. 2018) at CompressAI quality 1..8.

    CompressAI itself is not needed: the network is rebuilt in plain torch from a CompressAI
    state dict (``weights``); without it the op is unavailable and says which file it wants.
    ``weights`` may hold ``{quality}``, so one configured pattern serves all eight levels.
    """

    category = "compression"
    levels = (1, 2, 3, 4, 5, 6, 7, 8)

    def __init__(self, level: int, weights: str | Path | None = None, device: str = "cpu"):
        super().__init__(level)
        self.weights = Path(str(weights or COMPRESSAI_WEIGHTS).format(quality=self.level))
        self.device = device

    def check_available(self) -> None:
        if not self.weights.is_file():
            raise OperationUnavailable(
                f"learned_compression@{self.level} is unavailable: CompressAI "
                f"bmshj2018-factorized weights for quality {self.level} not found at "
                f"{self.weights} (set perturb options learned_compression.weights)",
                self.weights,
            )

    def apply(self, image, rng):
        # Imported on first use: the module loads torch (about 2 s), and importing
        # fairforge.perturb must stay cheap (the Snakefile does it on every parse).
        from fairforge.perturb.learned_ops import load_codec, run_codec

        self.check_available()
        return run_codec(load_codec(self.weights, self.device), image)

    def bits(self, image: np.ndarray) -> float:
        """Bits of the image's latent under the codec's prior (its estimated rate)."""
        from fairforge.perturb.learned_ops import codec_bits, load_codec

        self.check_available()
        return codec_bits(load_codec(self.weights, self.device), image)


@OPERATIONS.register("hific")
class Hific(Operation):
    """HiFiC (Mentzer et al. 2020), the Assessment's [61], at the three regimes of its
    PyTorch release (level 1, 2, 3: ``hific-low``, ``-med``, ``-high``; 0.14, 0.30 and 0.45
    bpp targeted). Rebuilt in plain torch (:mod:`fairforge.perturb.hific`); it reads a
    release checkpoint converted once with ``python -m fairforge convert-release hific IN
    OUT`` (``weights``, which may hold ``{regime}`` or ``{level}``); without it the op is
    unavailable and says which file it wants and where the release is."""

    category = "compression"
    levels = (1, 2, 3)
    params = ("low", "med", "high")

    def __init__(self, level: int, weights: str | Path | None = None, device: str = "cpu"):
        super().__init__(level)
        pattern = str(weights or HIFIC_WEIGHTS)
        self.weights = Path(pattern.format(regime=self.param, level=self.level))
        self.device = device

    def check_available(self) -> None:
        if not self.weights.is_file():
            raise OperationUnavailable(
                f"hific@{self.level} is unavailable: HiFiC {self.param} weights not found at "
                f"{self.weights} (convert {HIFIC_FILES[self.param]} of {HIFIC_RELEASE} with "
                "`python -m fairforge convert-release hific IN OUT`; set perturb options "
                "hific.weights)",
                self.weights,
            )

    def apply(self, image, rng):
        # Imported on first use, as LearnedCompression's network (torch).
        from fairforge.perturb.hific import load_hific, run_hific

        self.check_available()
        return run_hific(load_hific(self.weights, self.device), image)

    def bits(self, image: np.ndarray) -> float:
        """The release's estimated rate: the information of the rounded latents and
        hyperlatents under the model's likelihoods."""
        from fairforge.perturb.hific import hific_bits, load_hific

        self.check_available()
        return hific_bits(load_hific(self.weights, self.device), image)


# --- denoising and blur -------------------------------------------------------------------


@OPERATIONS.register("gaussian_blur")
class GaussianBlur(Operation):
    """The Assessment paper's "kernel size σ 3–11", read by ``level_is``.

    ``kernel`` (default): the level is the kernel size, σ derived from it by OpenCV
    (0.8 … 2.0); ``sigma``: the level is σ, the kernel derived from it (about 6σ + 1).
    """

    category = "blur"
    levels = (3, 5, 7, 9, 11)  # the level is the kernel size (or sigma, see level_is)
    readings: ClassVar[tuple[str, ...]] = ("kernel", "sigma")
    continuous = "odd"

    def __init__(self, level: int, level_is: str = "kernel"):
        super().__init__(level)
        if level_is not in self.readings:
            raise PerturbationError(
                f"gaussian_blur: level_is {level_is!r} is not one of {list(self.readings)}"
            )
        self.level_is = level_is

    def param_rounding(self) -> str:
        return "float" if self.level_is == "sigma" else "odd"

    def apply(self, image, rng):
        if self.level_is == "sigma":
            return gaussian_blur(image, 0, float(self.param))
        return gaussian_blur(image, self.param)


@OPERATIONS.register("denoise")
class Denoise(Operation):
    """Non-local means (default) or DnCNN when its weights are given.

    NLM: filter strength h per level. DnCNN (a blind residual denoiser with no strength
    knob): the level is the number of passes, each removing what the net sees as noise.
    """

    category = "denoising"
    params = (3.0, 6.0, 9.0, 13.0, 18.0)  # NLM h (luma and chroma)
    modes: ClassVar[tuple[str, ...]] = ("nlm", "dncnn")
    continuous = "float"

    def __init__(
        self,
        level: int,
        mode: str | None = None,
        weights: str | Path | None = None,
        device: str = "cpu",
    ):
        super().__init__(level)
        self.mode = mode or ("dncnn" if weights else "nlm")
        if self.mode not in self.modes:
            raise PerturbationError(f"denoise: mode {self.mode!r} is not one of {list(self.modes)}")
        self.weights = Path(weights) if weights else DNCNN_WEIGHTS
        self.device = device

    def param_rounding(self) -> str | None:
        return "float" if self.mode == "nlm" else None  # DnCNN: a whole number of passes

    def check_available(self) -> None:
        if self.mode == "dncnn" and not self.weights.is_file():
            raise OperationUnavailable(
                f"denoise@{self.level} (dncnn) is unavailable: DnCNN weights not found at "
                f"{self.weights} (set perturb options denoise.weights, or use mode 'nlm')",
                self.weights,
            )

    def apply(self, image, rng):
        if self.mode == "nlm":
            h = self.param
            bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
            out = cv2.fastNlMeansDenoisingColored(bgr, None, h, h, 7, 21)
            return cv2.cvtColor(out, cv2.COLOR_BGR2RGB)
        # Imported on first use: torch (see LearnedCompression.apply).
        from fairforge.perturb.learned_ops import load_dncnn, run_dncnn

        self.check_available()
        return run_dncnn(load_dncnn(self.weights, self.device), image, passes=self.level)


# --- enhancement --------------------------------------------------------------------------


@OPERATIONS.register("brightness")
class Brightness(Operation):
    category = "enhancement"
    params = (-60, -30, 30, 60, 90)  # grey-level offset; levels order the table, not severity
    continuous = "int"

    def apply(self, image, rng):
        return lut(image, np.arange(256, dtype=np.float32) + self.param)


@OPERATIONS.register("contrast")
class Contrast(Operation):
    category = "enhancement"
    params = (0.5, 0.7, 1.3, 1.6, 2.0)  # gain about the image's mean grey level
    continuous = "float"

    def apply(self, image, rng):
        mean = gray_mean(image)
        return lut(image, (np.arange(256, dtype=np.float32) - mean) * self.param + mean)


@OPERATIONS.register("gamma")
class Gamma(Operation):
    category = "enhancement"
    params = (0.5, 0.7, 1.5, 2.0, 2.5)  # out = 255 * (in / 255) ** gamma
    continuous = "float"

    def apply(self, image, rng):
        return lut(image, 255.0 * (np.arange(256, dtype=np.float32) / 255.0) ** self.param)


# --- colour -------------------------------------------------------------------------------


@OPERATIONS.register("grayscale")
class Grayscale(Operation):
    category = "color"
    levels = (1,)

    def apply(self, image, rng):
        return cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)


# --- combinations: level L applies each part at its own L-th level -----------------------


class Combination(Operation):
    """Parts applied in turn, each at its own L-th level.

    Compression runs last whatever the order of the name (``order="compression_last"``), as
    a pipeline stores or sends an image after processing it; ``order="as_named"`` follows
    the name (``jpeg+gaussian_noise``: JPEG, then noise). ``parts`` gives a part its options
    by the part's own name (``{"resize": {"up": "cubic"}}``); the workflow passes a part the
    options configured for that operation alone, so ``resize`` interpolates alike on its own
    and inside ``resize+noise+jpeg``.
    """

    category = "combination"
    parts: ClassVar[tuple[type[Operation], ...]] = ()
    orders: ClassVar[tuple[str, ...]] = ("compression_last", "as_named")
    continuous = "float"  # each part on its own range, at the same fraction

    def __init__(
        self,
        level: int,
        order: str = "compression_last",
        parts: Mapping[str, Mapping] | None = None,
    ):
        super().__init__(level)
        if order not in self.orders:
            raise PerturbationError(f"{self.name}: order {order!r} is not one of {self.orders}")
        self.order = order
        given = dict(parts or {})
        names = [cls.name for cls in self.parts]
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise PerturbationError(f"{self.name}: options for {unknown}, not among its {names}")
        steps = list(self.parts)
        if order == "compression_last":  # a stable sort: other parts keep their order
            steps.sort(key=lambda cls: cls.category == "compression")
        self.steps = [
            cls(cls.levels[self.level - 1], **dict(given.get(cls.name, {}))) for cls in steps
        ]
        self.param = tuple(step.param for step in self.steps)

    def at_fraction(self, t: float) -> Operation:
        """Every part at the same fraction ``t`` of its own range (see the base class)."""
        op = super().at_fraction(0.0)  # checks t's kind; the parts carry the parameters
        if not 0.0 <= float(t) <= 1.0:
            raise PerturbationError(f"{self.name}: fraction {t} is not in [0, 1]")
        op.steps = [step.at_fraction(t) for step in self.steps]
        op.param = tuple(step.param for step in op.steps)
        return op

    def apply(self, image, rng):
        for step in self.steps:
            image = step.apply(image, rng)
        return image


@OPERATIONS.register("jpeg+gaussian_noise")
class JpegNoise(Combination):
    parts = (Jpeg, GaussianNoise)


@OPERATIONS.register("blur+jpeg")
class BlurJpeg(Combination):
    parts = (GaussianBlur, Jpeg)


@OPERATIONS.register("resize+noise+jpeg")
class ResizeNoiseJpeg(Combination):
    parts = (Resize, GaussianNoise, Jpeg)
