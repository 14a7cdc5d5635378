"""Training augmentations (docs/perturbations.md section 6): SDAug and DAug (Assessment paper),
AugMix (Hendrycks et al., ICLR 2020; the Assessment's Table 4 comparison) and DeepfakeBench's.

Both run the same four-step chain: enhancement (brightness or contrast), smoothing
(Gaussian or average blur), Gaussian noise, JPEG. SDAug fires each step with
p = 0.5, 0.5, 0.3, 0.7 and draws its strength from a range; as in the paper, the noise
decision is drawn once per batch (:meth:`SDAug.augment_batch`). DAug applies every step, of
fixed kinds, at a fixed mid strength: no random decision at all. A transform first draws an
:class:`AugmentPlan` (``plan(rng)``), then applies it; ``last_applied`` keeps the plan of
the latest call.

In a torch Dataset pass ``rng=rng_for(seed, epoch, sample_id)`` so augmentations are
reproducible whatever the worker layout; without one the transform uses its own seeded
call counter (reproducible only for the same call order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from fairforge.perturb.base import check_image
from fairforge.perturb.ops import add_gaussian_noise, gray_mean, jpeg_roundtrip, lut
from fairforge.registry import Registry
from fairforge.seeding import rng_for


def _check_augmentation(name: str, cls: type[Augmentation], meta: dict) -> dict:
    """An augmentation registration, ``@AUGMENTATIONS.register(name)``: the class learns its
    name (which also seeds its draws)."""
    cls.name = name
    return meta


AUGMENTATIONS: Registry[type[Augmentation]] = Registry("augmentation", check=_check_augmentation)

ENHANCE_KINDS = ("brightness", "contrast")
SMOOTH_KINDS = ("gaussian", "average")


@dataclass(frozen=True)
class AugmentPlan:
    """Drawn parameters of one call; ``None`` marks a step that did not fire."""

    enhance: tuple[str, float] | None = None  # (kind, factor)
    smooth: tuple[str, int] | None = None  # (kind, odd kernel size)
    noise_sigma: float | None = None
    jpeg_quality: int | None = None

    def fired(self) -> dict[str, bool]:
        return {
            "enhance": self.enhance is not None,
            "smooth": self.smooth is not None,
            "noise": self.noise_sigma is not None,
            "jpeg": self.jpeg_quality is not None,
        }


def enhance(image: np.ndarray, kind: str, factor: float) -> np.ndarray:
    """PIL ImageEnhance semantics: brightness scales values, contrast scales about the mean
    grey level."""
    values = np.arange(256, dtype=np.float32)
    if kind == "brightness":
        return lut(image, values * factor)
    if kind == "contrast":
        mean = gray_mean(image)
        return lut(image, (values - mean) * factor + mean)
    raise ValueError(f"unknown enhancement {kind!r}; expected one of {ENHANCE_KINDS}")


def smooth(image: np.ndarray, kind: str, kernel: int) -> np.ndarray:
    if kind == "gaussian":
        return cv2.GaussianBlur(image, (kernel, kernel), 0, borderType=cv2.BORDER_REFLECT_101)
    if kind == "average":
        return cv2.blur(image, (kernel, kernel), borderType=cv2.BORDER_REFLECT_101)
    raise ValueError(f"unknown smoothing {kind!r}; expected one of {SMOOTH_KINDS}")


def apply_plan(image: np.ndarray, plan: AugmentPlan, rng: np.random.Generator) -> np.ndarray:
    """Run the fired steps in chain order; ``rng`` only feeds the noise."""
    if plan.enhance is not None:
        image = enhance(image, *plan.enhance)
    if plan.smooth is not None:
        image = smooth(image, *plan.smooth)
    if plan.noise_sigma is not None:
        image = add_gaussian_noise(image, plan.noise_sigma, rng)
    if plan.jpeg_quality is not None:
        image = jpeg_roundtrip(image, plan.jpeg_quality)
    return image


class Augmentation:
    """A training-time transform; subclasses draw an :class:`AugmentPlan` in :meth:`plan`."""

    name = ""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.calls = 0
        self.last_applied: AugmentPlan | None = None

    def plan(self, rng: np.random.Generator, noise_fires: bool | None = None) -> AugmentPlan:
        """Draw one call's plan; ``noise_fires`` imposes a decision drawn elsewhere (per
        batch) on the noise step."""
        raise NotImplementedError

    def __call__(
        self,
        image: np.ndarray,
        rng: np.random.Generator | None = None,
        noise_fires: bool | None = None,
    ) -> np.ndarray:
        check_image(image, f"{self.name} input")
        if rng is None:
            rng = rng_for(self.name, self.seed, self.calls)
        self.calls += 1
        plan = self.plan(rng, noise_fires)
        self.last_applied = plan
        return apply_plan(image, plan, rng)

    def batch_noise_fires(self, batch_rng: np.random.Generator) -> bool | None:
        """The noise decision of a whole batch (``None``: this transform decides per image)."""
        return None

    def augment_batch(
        self,
        images: Sequence[np.ndarray],
        rngs: Sequence[np.random.Generator],
        batch_rng: np.random.Generator,
    ) -> list[np.ndarray]:
        """Augment one batch: per-batch decisions from ``batch_rng`` (for example
        ``rng_for(seed, epoch, batch_index)``), the rest per image from ``rngs`` (one each,
        as in :meth:`__call__`)."""
        if len(images) != len(rngs):
            raise ValueError(f"{len(images)} images but {len(rngs)} generators")
        noise_fires = self.batch_noise_fires(batch_rng)
        return [self(image, rng, noise_fires) for image, rng in zip(images, rngs)]

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{k}={v!r}" for k, v in vars(self).items() if k not in ("calls", "last_applied")
        )
        return f"{type(self).__name__}({fields})"


@AUGMENTATIONS.register("none")
class NoAugment(Augmentation):
    def plan(self, rng, noise_fires=None):
        return AugmentPlan()


@AUGMENTATIONS.register("sdaug")
class SDAug(Augmentation):
    """Stochastic degradation augmentation: each step fires independently.

    ``noise_scope="batch"`` (the paper): in :meth:`augment_batch` the noise step fires for
    the whole batch or for none of it. A single call (``aug(image, rng)``) cannot see its
    batch and draws the decision itself unless given ``noise_fires``; ``noise_scope="image"``
    draws it per image everywhere.
    """

    noise_scopes = ("batch", "image")

    def __init__(
        self,
        seed: int = 0,
        p_enhance: float = 0.5,
        p_smooth: float = 0.5,
        p_noise: float = 0.3,
        p_jpeg: float = 0.7,
        factor_range: tuple[float, float] = (0.5, 1.5),
        kernel_range: tuple[int, int] = (3, 15),
        sigma_range: tuple[float, float] = (0.0, 50.0),
        quality_range: tuple[int, int] = (10, 95),
        noise_scope: str = "batch",
    ):
        super().__init__(seed)
        if noise_scope not in self.noise_scopes:
            raise ValueError(f"noise_scope {noise_scope!r} is not one of {self.noise_scopes}")
        self.noise_scope = noise_scope
        if kernel_range[0] % 2 == 0 or kernel_range[1] % 2 == 0:
            raise ValueError(f"kernel_range must have odd ends, got {kernel_range}")
        self.p = (p_enhance, p_smooth, p_noise, p_jpeg)
        self.factor_range = factor_range
        self.kernel_range = kernel_range
        self.sigma_range = sigma_range
        self.quality_range = quality_range

    def batch_noise_fires(self, batch_rng):
        if self.noise_scope == "image":
            return None
        return bool(batch_rng.random() < self.p[2])

    def plan(self, rng, noise_fires=None):
        # Every parameter is drawn on every call, fired or not, so one step's outcome does
        # not shift the random stream of the others.
        fires = rng.random(4) < np.asarray(self.p)
        if noise_fires is not None:
            fires[2] = noise_fires
        enhance_kind = ENHANCE_KINDS[int(rng.integers(2))]
        factor = float(rng.uniform(*self.factor_range))
        smooth_kind = SMOOTH_KINDS[int(rng.integers(2))]
        k_lo, k_hi = self.kernel_range
        kernel = int(k_lo + 2 * rng.integers(0, (k_hi - k_lo) // 2 + 1))
        sigma = float(rng.uniform(*self.sigma_range))
        quality = int(rng.integers(self.quality_range[0], self.quality_range[1] + 1))
        return AugmentPlan(
            enhance=(enhance_kind, factor) if fires[0] else None,
            smooth=(smooth_kind, kernel) if fires[1] else None,
            noise_sigma=sigma if fires[2] else None,
            jpeg_quality=quality if fires[3] else None,
        )


@AUGMENTATIONS.register("daug")
class DAug(Augmentation):
    """Degradation augmentation without randomness: every step, of fixed kinds, at a fixed
    mid strength (the Gaussian noise values themselves are still random).

    The paper names the kinds but no choice between them; ``enhance`` and ``smooth`` pick
    them (brightness and Gaussian blur by default). The middle of SDAug's factor range (1.0)
    is the identity, so the enhancement uses the middle of its upper half, 1.25; kernel 9,
    sigma 25 and quality 52 are the middles of [3, 15], [0, 50] and [10, 95].
    """

    def __init__(
        self,
        seed: int = 0,
        factor: float = 1.25,
        kernel: int = 9,
        sigma: float = 25.0,
        quality: int = 52,
        enhance: str = "brightness",
        smooth: str = "gaussian",
    ):
        super().__init__(seed)
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd, got {kernel}")
        if enhance not in ENHANCE_KINDS or smooth not in SMOOTH_KINDS:
            raise ValueError(
                f"enhance {enhance!r} / smooth {smooth!r}: expected one of {ENHANCE_KINDS} / "
                f"{SMOOTH_KINDS}"
            )
        self.factor, self.kernel, self.sigma, self.quality = factor, kernel, sigma, quality
        self.enhance, self.smooth = enhance, smooth

    def plan(self, rng, noise_fires=None):
        return AugmentPlan(
            enhance=(self.enhance, self.factor),
            smooth=(self.smooth, self.kernel),
            noise_sigma=self.sigma,
            jpeg_quality=self.quality,
        )


@dataclass(frozen=True)
class GeometricPlan:
    """Drawn parameters of one :class:`DeepfakeBenchAug` call; ``None`` marks a step that
    did not fire."""

    flip: bool = False
    angle: float | None = None  # degrees, counter-clockwise
    blur_kernel: int | None = None
    brightness: float | None = None  # added, as a fraction of 255
    contrast: float | None = None  # 1 + this, about the mean grey level
    jpeg_quality: int | None = None


@AUGMENTATIONS.register("deepfakebench")
class DeepfakeBenchAug(Augmentation):
    """DeepfakeBench's training augmentation: horizontal flip, rotation, Gaussian blur,
    brightness/contrast and JPEG, each firing on its own (probabilities and ranges of
    DeepfakeBench's detector configs; the rotation's probability is 0.5 as in several of
    those configs; Xception's own sets 0). FairFD's (:class:`FairFDAug`) keeps three of
    these steps.

    Flip and rotation move the face: :meth:`apply_geometry` moves its mask the same way
    (the training dataset calls it for detectors that learn from masks).
    """

    def __init__(
        self,
        seed: int = 0,
        p_flip: float = 0.5,
        p_rotate: float = 0.5,
        rotate_limit: float = 10.0,
        p_blur: float = 0.5,
        blur_limit: tuple[int, int] = (3, 7),
        p_brightness: float = 0.5,
        brightness_limit: float = 0.1,
        contrast_limit: float = 0.1,
        p_jpeg: float = 0.5,
        quality_range: tuple[int, int] = (40, 100),
    ):
        super().__init__(seed)
        self.p = (p_flip, p_rotate, p_blur, p_brightness, p_jpeg)
        self.rotate_limit = rotate_limit
        self.blur_limit = blur_limit
        self.brightness_limit, self.contrast_limit = brightness_limit, contrast_limit
        self.quality_range = quality_range

    def plan(self, rng, noise_fires=None):
        fires = rng.random(5) < np.asarray(self.p)
        angle = float(rng.uniform(-self.rotate_limit, self.rotate_limit))
        lo, hi = self.blur_limit
        kernel = int(lo + 2 * rng.integers(0, (hi - lo) // 2 + 1))
        brightness = float(rng.uniform(-self.brightness_limit, self.brightness_limit))
        contrast = float(rng.uniform(-self.contrast_limit, self.contrast_limit))
        quality = int(rng.integers(self.quality_range[0], self.quality_range[1] + 1))
        return GeometricPlan(
            flip=bool(fires[0]),
            angle=angle if fires[1] else None,
            blur_kernel=kernel if fires[2] else None,
            brightness=brightness if fires[3] else None,
            contrast=contrast if fires[3] else None,
            jpeg_quality=quality if fires[4] else None,
        )

    def apply_geometry(self, image: np.ndarray, plan: GeometricPlan) -> np.ndarray:
        """The flip and rotation of ``plan`` (image or mask; borders reflected)."""
        if plan.flip:
            image = np.ascontiguousarray(image[:, ::-1])
        if plan.angle is not None:
            h, w = image.shape[:2]
            matrix = cv2.getRotationMatrix2D((w / 2, h / 2), plan.angle, 1.0)
            image = cv2.warpAffine(
                image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
            )
        return image

    def apply(self, image: np.ndarray, plan: GeometricPlan) -> np.ndarray:
        image = self.apply_geometry(image, plan)
        if plan.blur_kernel is not None:
            image = smooth(image, "gaussian", plan.blur_kernel)
        if plan.brightness is not None:
            mean = gray_mean(image)
            values = np.arange(256, dtype=np.float32)
            image = lut(image, (values - mean) * (1 + plan.contrast) + mean + 255 * plan.brightness)
        if plan.jpeg_quality is not None:
            image = jpeg_roundtrip(image, plan.jpeg_quality)
        return image

    def __call__(self, image, rng=None, noise_fires=None):
        check_image(image, f"{self.name} input")
        if rng is None:
            rng = rng_for(self.name, self.seed, self.calls)
        self.calls += 1
        plan = self.plan(rng)
        self.last_applied = plan
        return self.apply(image, plan)


@AUGMENTATIONS.register("fairfd")
class FairFDAug(DeepfakeBenchAug):
    """FairFD's training augmentation (§5.1: "image compression, horizontal flip and
    rotation"): DeepfakeBench's flip, rotation and JPEG steps without its blur and
    brightness/contrast. FairFD gives no probabilities or ranges; these are DeepfakeBench's
    detector configs' (flip p 0.5; rotation p 0.5 within ±10°, as the configs of RECCE, UCF,
    F3Net, SPSL, SRM, FFD, CORE and Capsule set it; JPEG p 0.5 at quality 40-100), and
    ``steps`` may change them (:class:`DeepfakeBenchAug`'s flip, rotation and JPEG keywords)."""

    #: the steps FairFD leaves out
    OMITTED = ("p_blur", "blur_limit", "p_brightness", "brightness_limit", "contrast_limit")

    def __init__(self, seed: int = 0, **steps):
        omitted = sorted(set(steps) & set(self.OMITTED))
        if omitted:
            raise TypeError(f"fairfd augmentation has no blur or brightness step: {omitted}")
        super().__init__(seed, **steps, p_blur=0.0, p_brightness=0.0)


#: AugMix's operations (google-research/augmix ``augmentations.augmentations``): the ones that
#: do not overlap with ImageNet-C's corruptions, which its reference code trains with by
#: default. ``AUGMIX_ALL_OPS`` adds the four it leaves out (``--all-ops``: colour, contrast,
#: brightness, sharpness), which overlap with the Assessment's enhancement operations.
AUGMIX_OPS = (
    "autocontrast",
    "equalize",
    "posterize",
    "rotate",
    "solarize",
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
)
AUGMIX_ALL_OPS = (*AUGMIX_OPS, "color", "contrast", "brightness", "sharpness")


@dataclass(frozen=True)
class AugMixPlan:
    """Drawn parameters of one :class:`AugMix` call: the Dirichlet weights of the chains, the
    Beta mixing weight ``m`` of the mixture against the original, and each chain's steps as
    ``(operation, magnitude)`` (a signed magnitude for the geometric operations)."""

    weights: tuple[float, ...]
    m: float
    chains: tuple[tuple[tuple[str, float], ...], ...]


#: AugMix's operators by name, each ``(pil_image, magnitude) -> pil_image`` as the reference's
#: (bilinear resampling; the affine ones keep the image size and fill with black). Metadata
#: ``magnitude``: ``(level, sign, side) -> parameter``, what the reference derives from
#: ``sample_level``'s draw (``int_parameter``: int(level · maxval / 10), or
#: ``float_parameter``: level · maxval / 10); ``sign`` flips the geometric ones.
AUGMIX_OPERATORS: Registry = Registry("AugMix operation")


def _no_parameter(level: float, sign: float, side: int) -> float:
    return 0.0


def _enhance_factor(level: float, sign: float, side: int) -> float:
    return level * 1.8 / 10 + 0.1  # ImageEnhance factor


def _shear(level: float, sign: float, side: int) -> float:
    return sign * level * 0.3 / 10


def _translate(level: float, sign: float, side: int) -> float:
    return sign * int(level * (side / 3) / 10)  # pixels


@AUGMIX_OPERATORS.register("autocontrast", magnitude=_no_parameter)
def _autocontrast(image, magnitude: float):
    from PIL import ImageOps

    return ImageOps.autocontrast(image)


@AUGMIX_OPERATORS.register("equalize", magnitude=_no_parameter)
def _equalize(image, magnitude: float):
    from PIL import ImageOps

    return ImageOps.equalize(image)


@AUGMIX_OPERATORS.register(
    "posterize",
    magnitude=lambda level, sign, side: float(4 - int(level * 4 / 10)),  # bits kept
)
def _posterize(image, magnitude: float):
    from PIL import ImageOps

    return ImageOps.posterize(image, int(magnitude))


@AUGMIX_OPERATORS.register(
    "rotate",
    magnitude=lambda level, sign, side: sign * int(level * 30 / 10),  # degrees
)
def _rotate(image, magnitude: float):
    from PIL import Image

    return image.rotate(magnitude, resample=Image.BILINEAR)


@AUGMIX_OPERATORS.register(
    "solarize", magnitude=lambda level, sign, side: float(256 - int(level * 256 / 10))
)
def _solarize(image, magnitude: float):
    from PIL import ImageOps

    return ImageOps.solarize(image, int(magnitude))  # the magnitude is the threshold


def _affine(coefficients):
    """An affine AugMix operator whose matrix ``coefficients(magnitude)`` gives."""

    def transform(image, magnitude: float):
        from PIL import Image

        matrix = coefficients(magnitude)
        return image.transform(image.size, Image.AFFINE, matrix, resample=Image.BILINEAR)

    return transform


AUGMIX_OPERATORS.register("shear_x", _affine(lambda m: (1, m, 0, 0, 1, 0)), magnitude=_shear)
AUGMIX_OPERATORS.register("shear_y", _affine(lambda m: (1, 0, 0, m, 1, 0)), magnitude=_shear)
AUGMIX_OPERATORS.register(
    "translate_x", _affine(lambda m: (1, 0, m, 0, 1, 0)), magnitude=_translate
)
AUGMIX_OPERATORS.register(
    "translate_y", _affine(lambda m: (1, 0, 0, 0, 1, m)), magnitude=_translate
)


def _enhance(enhancer: str):
    """An AugMix operator that is PIL's ``ImageEnhance.<enhancer>`` by the magnitude."""

    def enhance(image, magnitude: float):
        from PIL import ImageEnhance

        return getattr(ImageEnhance, enhancer)(image).enhance(magnitude)

    return enhance


AUGMIX_OPERATORS.register("color", _enhance("Color"), magnitude=_enhance_factor)
AUGMIX_OPERATORS.register("contrast", _enhance("Contrast"), magnitude=_enhance_factor)
AUGMIX_OPERATORS.register("brightness", _enhance("Brightness"), magnitude=_enhance_factor)
AUGMIX_OPERATORS.register("sharpness", _enhance("Sharpness"), magnitude=_enhance_factor)


@AUGMENTATIONS.register("augmix")
class AugMix(Augmentation):
    """AugMix (Hendrycks et al., "AugMix: A Simple Data Processing Method to Improve Robustness
    and Uncertainty", ICLR 2020), which the Assessment paper compares SDAug with (§5.5,
    Table 4): ``width`` chains of 1..3 (``depth=-1``) random operators, mixed with Dirichlet
    weights, then mixed with the original image by a Beta(``alpha``, ``alpha``) weight.

    Parameters are the reference ImageNet code's defaults (google-research/augmix
    ``imagenet.py``: mixture width 3, stochastic depth 1..3, severity 1, coefficient 1.0, the
    operators without ImageNet-C's, ``IMAGE_SIZE`` the image's side). Every draw comes from the
    call's generator (:class:`AugMixPlan`), so a sample's augmentation is reproducible; the
    mixture is rounded to uint8 (the reference mixes normalised tensors: normalisation is
    affine and the weights sum to one, so mixing pixels first is the same image up to that
    rounding). The Jensen-Shannon consistency loss of the paper's training is not part of
    the augmentation: detectors train on the mixed image with their own loss. Rotation,
    shear and translation move the face, and a mask is not moved with a mixture of them.
    """

    def __init__(
        self,
        seed: int = 0,
        width: int = 3,
        depth: int = -1,
        severity: float = 1.0,
        alpha: float = 1.0,
        all_ops: bool = False,
    ):
        super().__init__(seed)
        if width < 1 or depth == 0 or severity <= 0.1 or alpha <= 0:
            raise ValueError(
                f"augmix: width >= 1, depth != 0, severity > 0.1 and alpha > 0 needed, got "
                f"width={width}, depth={depth}, severity={severity}, alpha={alpha}"
            )
        self.width, self.depth, self.severity, self.alpha = width, depth, severity, alpha
        self.ops = AUGMIX_ALL_OPS if all_ops else AUGMIX_OPS

    def plan(self, rng, noise_fires=None, side: int = 224):
        weights = rng.dirichlet([self.alpha] * self.width)
        m = float(rng.beta(self.alpha, self.alpha))
        chains = []
        for _ in range(self.width):
            depth = self.depth if self.depth > 0 else int(rng.integers(1, 4))
            steps = []
            for _ in range(depth):
                op = self.ops[int(rng.integers(len(self.ops)))]
                level = float(rng.uniform(0.1, self.severity))  # the reference's sample_level
                sign = -1.0 if rng.random() > 0.5 else 1.0
                magnitude = AUGMIX_OPERATORS.metadata(op)["magnitude"](level, sign, side)
                steps.append((op, float(magnitude)))
            chains.append(tuple(steps))
        return AugMixPlan(tuple(float(w) for w in weights), m, tuple(chains))

    def apply(self, image: np.ndarray, plan: AugMixPlan) -> np.ndarray:
        from PIL import Image

        original = Image.fromarray(image)
        mix = np.zeros(image.shape, dtype=np.float64)
        for weight, chain in zip(plan.weights, plan.chains):
            augmented = original
            for op, magnitude in chain:
                augmented = AUGMIX_OPERATORS.create(op, augmented, magnitude)
            mix += weight * np.asarray(augmented, dtype=np.float64)
        mixed = (1.0 - plan.m) * image.astype(np.float64) + plan.m * mix
        return np.clip(np.rint(mixed), 0, 255).astype(np.uint8)

    def __call__(self, image, rng=None, noise_fires=None):
        check_image(image, f"{self.name} input")
        if rng is None:
            rng = rng_for(self.name, self.seed, self.calls)
        self.calls += 1
        plan = self.plan(rng, side=min(image.shape[:2]))
        self.last_applied = plan
        return self.apply(image, plan)


def create_augment(name: str | None, **kwargs) -> Augmentation:
    """``'none'`` (or ``None``), ``'sdaug'``, ``'daug'``, ``'augmix'``, ``'deepfakebench'`` or
    ``'fairfd'``, as named in a training config (any case); an unknown name raises
    :class:`~fairforge.registry.UnknownName`."""
    return AUGMENTATIONS.create("none" if name is None else str(name).lower(), **kwargs)
