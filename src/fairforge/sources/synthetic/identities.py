"""Identities and views of the synthetic world: the random draws behind every face.

Each subject is a persistent identity (head shape, eyes, brows, nose, mouth, ears, hair, skin
tone and skin texture, glasses) drawn from ``rng_for(seed, "subject", subject_id)``; each image
is a view of it (pose, expression, lighting, background, camera) drawn from
``rng_for(seed, "image", image_id)``. The renderer is a pure function of the two, so clips can
be rendered by animating :class:`ViewParams` over frames.

The groups are skin-tone bins crossed with a binary appearance attribute; they are rendering
choices, not races or genders, and differ only in appearance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairforge.seeding import rng_for
from fairforge.sources.synthetic.defaults import DEFAULT_TONES

# Skin colours (RGB) along a light-to-dark axis; a subject's tone bin picks a stretch of it.
_SKIN_ANCHORS = np.array(
    [
        [238, 200, 176],
        [226, 180, 146],
        [204, 150, 112],
        [171, 117, 83],
        [135, 88, 60],
        [98, 63, 45],
    ],
    dtype=np.float64,
)

_HAIR_COLOURS = {
    "black": (28, 24, 24),
    "dark_brown": (52, 37, 28),
    "brown": (92, 64, 42),
    "auburn": (118, 58, 34),
    "blonde": (178, 142, 92),
    "grey": (140, 136, 132),
}
_IRIS_COLOURS = {
    "dark_brown": (58, 36, 24),
    "brown": (96, 62, 34),
    "hazel": (110, 96, 52),
    "green": (84, 108, 76),
    "blue": (78, 108, 140),
}
_FEMALE_STYLES = ("long", "long", "bob", "bun", "pixie")
_MALE_STYLES = ("short", "short", "medium", "buzz")


@dataclass(frozen=True)
class SubjectParams:
    """A persistent identity. Lengths are fractions of the face half-width unless noted."""

    subject_id: str
    tone: str
    gender: str
    darkness: float  # 0 = lightest skin, 1 = darkest
    masculine: bool
    skin_rgb: tuple[float, float, float]
    blush: float  # reddish tint of cheeks and lips
    half_width: float  # face half-width in px at size 400
    aspect: float  # face half-height / half-width
    jaw_exponent: float  # 2 round .. 3.5 square jaw
    jaw_width: float  # width of the lower face relative to the cheeks
    depth: float  # head depth / half-width (how far features slide with yaw)
    eye_y: float
    eye_spacing: float
    eye_width: float
    eye_height: float
    eye_tilt: float  # radians, outer corner up
    iris_rgb: tuple[float, float, float]
    brow_gap: float  # brow height above the eye line
    brow_thickness: float
    brow_arch: float
    brow_length: float
    brow_rgb: tuple[float, float, float]
    nose_length: float
    nose_width: float
    nose_protrusion: float
    mouth_y: float
    mouth_width: float
    lip_upper: float
    lip_lower: float
    lip_rgb: tuple[float, float, float]
    ear_size: float
    hair_style: str
    hair_rgb: tuple[float, float, float]
    hair_length: float  # lowest point of hair, in face half-heights below the centre
    hair_volume: float
    hairline: float  # forehead hairline height, in face half-heights above centre
    hair_part: float  # -1 .. 1, side of the parting
    beard: float  # 0 none .. 1 dense stubble shadow
    glasses: bool
    glasses_rgb: tuple[float, float, float]
    glasses_shape: float  # 2 round .. 6 rectangular
    moles: tuple[tuple[float, float, float], ...]  # (x, y, radius) on the face
    texture_seed: int


@dataclass(frozen=True)
class ViewParams:
    """One image of a subject: pose (degrees), expression (0..1), light, scene and camera."""

    image_id: str
    yaw: float = 0.0
    pitch: float = 0.0
    roll: float = 0.0
    scale: float = 1.0
    shift_x: float = 0.0  # px at size 400
    shift_y: float = 0.0
    smile: float = 0.0
    mouth_open: float = 0.0
    brow_raise: float = 0.0
    eye_closure: float = 0.0
    gaze_x: float = 0.0  # -1 .. 1
    gaze_y: float = 0.0
    light_azimuth: float = 0.0  # degrees, + from the image right
    light_elevation: float = 20.0
    light_rgb: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ambient: float = 0.5
    exposure: float = 1.0
    background: tuple[tuple[float, float, float], ...] = ((150, 150, 150),) * 4
    background_seed: int = 0
    shirt_rgb: tuple[float, float, float] = (60, 70, 90)
    blur_sigma: float = 0.8
    noise_level: float = 1.0
    noise_offset: tuple[int, int] = (0, 0)


# ---------------------------------------------------------------------------------------------
# Sampling


def tone_darkness(tone: str, tones: Sequence[str] = DEFAULT_TONES) -> float:
    """Position of ``tone`` on the light-to-dark axis: by its place in ``tones``, else ``toneK``."""
    if tone in tones and len(tones) > 1:
        return tones.index(tone) / (len(tones) - 1)
    match = re.fullmatch(r"tone(\d+)", tone)
    if match:
        return min(max((int(match.group(1)) - 1) / 3.0, 0.0), 1.0)
    raise ValueError(
        f"cannot place skin tone {tone!r} on the light-to-dark axis; "
        f"pass darkness= or use one of {list(tones)}"
    )


def _skin_colour(position: float) -> np.ndarray:
    pos = min(max(position, 0.0), 1.0) * (len(_SKIN_ANCHORS) - 1)
    lo = min(int(pos), len(_SKIN_ANCHORS) - 2)
    frac = pos - lo
    return _SKIN_ANCHORS[lo] * (1 - frac) + _SKIN_ANCHORS[lo + 1] * frac


def sample_subject(
    seed: int,
    subject_id: str,
    tone: str,
    attribute_value: str,
    *,
    darkness: float | None = None,
    masculine: bool | None = None,
) -> SubjectParams:
    """Draw a persistent identity from ``rng_for(seed, "subject", subject_id)``.

    ``darkness`` (0 light .. 1 dark) defaults to the place of ``tone`` among tone1..tone4;
    ``masculine`` defaults to ``attribute_value == "male"``.
    """
    rng = rng_for(seed, "subject", subject_id)
    dark = tone_darkness(tone) if darkness is None else float(darkness)
    male = (attribute_value == "male") if masculine is None else bool(masculine)
    u = rng.uniform

    # Each bin covers its own stretch of the skin axis, so bins never overlap.
    bin_width = 0.25
    position = min(dark * (1 - bin_width) + u(0.1, 0.9) * bin_width, 1.0)
    skin = _skin_colour(position)
    warmth = u(-0.05, 0.05)
    skin = skin * np.array([1 + warmth, 1.0, 1 - warmth]) * u(0.96, 1.04)
    skin = np.clip(skin, 30, 250)

    if dark < 0.4:
        hair_names, hair_p = (
            ["black", "dark_brown", "brown", "auburn", "blonde", "grey"],
            [0.12, 0.28, 0.24, 0.1, 0.2, 0.06],
        )
        iris_names, iris_p = (
            ["dark_brown", "brown", "hazel", "green", "blue"],
            [0.15, 0.3, 0.2, 0.12, 0.23],
        )
    else:
        hair_names, hair_p = (["black", "dark_brown", "brown", "grey"], [0.55, 0.3, 0.1, 0.05])
        iris_names, iris_p = (["dark_brown", "brown", "hazel"], [0.6, 0.32, 0.08])
    hair_name = hair_names[int(rng.choice(len(hair_names), p=hair_p))]
    hair = np.array(_HAIR_COLOURS[hair_name], dtype=np.float64) * u(0.85, 1.15)
    iris = np.array(
        _IRIS_COLOURS[iris_names[int(rng.choice(len(iris_names), p=iris_p))]], dtype=np.float64
    ) * u(0.85, 1.15)
    # Brows are darker than light hair, and always darker than the skin around them.
    brow = np.minimum(hair * u(0.55, 0.8), skin * 0.42)

    styles = _MALE_STYLES if male else _FEMALE_STYLES
    style = styles[int(rng.integers(len(styles)))]
    length = {
        "long": u(1.5, 2.4),
        "bob": u(0.55, 0.95),
        "bun": 0.0,
        "pixie": 0.0,
        "short": 0.0,
        "medium": u(0.2, 0.45),
        "buzz": 0.0,
    }[style]
    volume = {
        "long": u(0.08, 0.18),
        "bob": u(0.1, 0.2),
        "bun": u(0.04, 0.08),
        "pixie": u(0.06, 0.12),
        "short": u(0.05, 0.13),
        "medium": u(0.08, 0.16),
        "buzz": u(0.015, 0.03),
    }[style]

    lip_base = skin * np.array([0.86, 0.62, 0.64]) + np.array([26, 4, 10])
    if not male and rng.random() < 0.3:
        lip_base = lip_base * 0.7 + np.array([150, 50, 60]) * 0.3
    lip = np.clip(lip_base * (1 - 0.18 * dark), 20, 240)

    n_moles = int(rng.integers(0, 4))
    moles = tuple(
        (float(u(-0.7, 0.7)), float(u(-0.3, 0.7)), float(u(0.012, 0.025))) for _ in range(n_moles)
    )

    glasses = bool(rng.random() < 0.2)
    return SubjectParams(
        subject_id=subject_id,
        tone=tone,
        gender=attribute_value,
        darkness=dark,
        masculine=male,
        skin_rgb=tuple(float(v) for v in skin),
        blush=float(u(0.0, 1.0) * (1.0 - 0.6 * dark)),
        half_width=float(u(78, 96) * (1.04 if male else 0.98)),
        aspect=float(u(1.28, 1.42)),
        jaw_exponent=float(u(2.6, 3.5) if male else u(2.0, 2.6)),
        jaw_width=float(u(0.9, 1.0) if male else u(0.8, 0.92)),
        depth=float(u(0.72, 0.84)),
        eye_y=float(u(-0.04, 0.04)),
        eye_spacing=float(u(0.36, 0.43)),
        eye_width=float(u(0.18, 0.22) * (0.97 if male else 1.03)),
        eye_height=float(u(0.085, 0.11)),
        eye_tilt=float(u(-0.04, 0.1)),
        iris_rgb=tuple(float(v) for v in iris),
        brow_gap=float(u(0.15, 0.2)),
        brow_thickness=float(u(0.065, 0.095) if male else u(0.04, 0.062)),
        brow_arch=float(u(0.02, 0.05) if male else u(0.04, 0.08)),
        brow_length=float(u(0.29, 0.35)),
        brow_rgb=tuple(float(v) for v in brow),
        nose_length=float(u(0.34, 0.42)),
        nose_width=float(u(0.2, 0.26) * (1.05 if male else 0.97)),
        nose_protrusion=float(u(0.22, 0.34)),
        mouth_y=float(u(0.56, 0.62)),
        mouth_width=float(u(0.3, 0.38)),
        lip_upper=float(u(0.045, 0.065) * (0.9 if male else 1.1)),
        lip_lower=float(u(0.06, 0.085) * (0.9 if male else 1.1)),
        lip_rgb=tuple(float(v) for v in lip),
        ear_size=float(u(0.9, 1.1)),
        hair_style=style,
        hair_rgb=tuple(float(v) for v in hair),
        hair_length=float(length),
        hair_volume=float(volume),
        hairline=float(u(0.48, 0.58) if style != "pixie" else u(0.42, 0.5)),
        hair_part=float(u(-1.0, 1.0)),
        beard=float(u(0.25, 0.6)) if male and rng.random() < 0.45 else 0.0,
        glasses=glasses,
        glasses_rgb=tuple(
            float(v) for v in rng.choice([[20, 20, 22], [60, 40, 30], [150, 130, 90], [90, 90, 96]])
        ),
        glasses_shape=float(u(2.0, 6.0)),
        moles=moles,
        texture_seed=int(rng.integers(0, 2**62)),
    )


def sample_view(seed: int, image_id: str) -> ViewParams:
    """Draw pose, expression, light, background and camera from ``rng_for(seed, "image", id)``."""
    rng = rng_for(seed, "image", image_id)
    u = rng.uniform

    def expression(p_active: float) -> float:
        return float(u(0.0, 1.0) if rng.random() < p_active else 0.0)

    corners = []
    base = rng.uniform(30, 230, size=3)
    # Rooms and walls are mostly muted; keep some saturation, not a rainbow.
    base = base.mean() + (base - base.mean()) * rng.uniform(0.25, 0.9)
    for _ in range(4):
        corners.append(tuple(float(v) for v in np.clip(base + rng.normal(0, 30, size=3), 5, 250)))
    warm = u(-0.04, 0.08)
    light = (1.0 + warm, 1.0 + 0.2 * warm, 1.0 - warm)
    shirt = rng.uniform(15, 220, size=3) * (rng.uniform(0.3, 1.0) if rng.random() < 0.5 else 1)
    return ViewParams(
        image_id=image_id,
        yaw=float(np.clip(rng.normal(0, 9), -20, 20)),
        pitch=float(u(-8, 8)),
        roll=float(np.clip(rng.normal(0, 4.5), -10, 10)),
        scale=float(u(0.9, 1.1)),
        shift_x=float(u(-10, 10)),
        shift_y=float(u(-8, 8)),
        smile=expression(0.55),
        mouth_open=expression(0.35),
        brow_raise=expression(0.3),
        eye_closure=float(u(0.0, 0.55) if rng.random() < 0.3 else u(0.0, 0.1)),
        gaze_x=float(u(-0.5, 0.5)),
        gaze_y=float(u(-0.3, 0.3)),
        light_azimuth=float(u(-60, 60)),
        light_elevation=float(u(-5, 40)),
        light_rgb=light,
        ambient=float(u(0.35, 0.6)),
        exposure=float(u(0.88, 1.1)),
        background=tuple(corners),
        background_seed=int(rng.integers(0, 2**62)),
        shirt_rgb=tuple(float(v) for v in shirt),
        blur_sigma=float(u(0.55, 1.1)),
        noise_level=float(u(0.4, 1.4)),
        noise_offset=(int(rng.integers(0, 128)), int(rng.integers(0, 128))),
    )
