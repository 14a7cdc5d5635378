"""Attribute manipulation by editing parsed facial parts (a learning-free MaskGAN stand-in).

MaskGAN edits a face by editing its semantic parsing map (CelebAMask-HQ's classes: skin,
nose, eyes, brows, lips, mouth, hair, ...) and re-rendering it. Here the face parts come from
the 68 landmarks and the hair from the landmarks and the image's colour
(:func:`~fairforge.forgery.parsing.parse_parts` with the image,
:func:`~fairforge.forgery.parsing.hair_region`), and a random non-empty subset of the parts
nose, eyes, brows, upper lip, lower lip, mouth and hair is edited, each inside its own
parsing mask (face parts grown by a small margin):

- shape: the part is scaled about its centroid by 1 ± U(0.15, 0.3) (both eyes or both brows
  share one factor, so the face stays symmetric); the area a shrunken part vacates is filled
  from the surrounding skin by inpainting;
- colour: lips (both together) and brows may also change colour, a shift in LAB (lips: hue
  and lightness, brows: lightness), applied to the part's pixels only;
- hair: a new hair colour (:data:`HAIR_COLOURS`, one at least ``hair_colour_distance`` LAB
  units from the hair's mean colour, drawn from the pair's seeded generator); every hair
  pixel moves by the same LAB shift, so strands and shading stay, and the edit fades in
  over ``feather`` inside the hair mask, so the pixels around it are untouched.

It never edits skin, the attribute the demo's groups are defined by: pixels outside the
edited parts are the source's, bit for bit, and the skin it uncovers is inpainted from the
skin around it. Simplifications: parts are re-rendered by warping and recolouring the
source's own pixels, not by a generator; hair changes colour but not shape (MaskGAN can also
redraw the hair's outline), and the hair parsing is a colour model
(:func:`~fairforge.forgery.parsing.hair_region` says what it misses); a face with no hair
found has its face parts edited only.
"""

from __future__ import annotations

import cv2
import numpy as np

from .base import (
    ForgeryError,
    ForgeryMethod,
    ForgeryResult,
    composite,
    dilate,
    feather,
    interocular,
    polygon_mask,
    register_method,
)
from .parsing import HAIR, PARTS, cie_lab, hair_fade, parse_parts, part_components

MIN_PART_AREA = 12  # pixels; a closed mouth has no interior to edit
EDITABLE = (*(p for p in PARTS if p != "skin"), HAIR)
# Colour edits: a LAB shift per part family (lips together), drawn in [lo, hi] with a sign.
COLOUR_PARTS = {"lips": ("upper_lip", "lower_lip"), "brows": ("brows",)}
# Hair colours a hair edit may choose, CIE L*a*b* (L in 0..100).
HAIR_COLOURS = {
    "black": (14.0, 1.0, 2.0),
    "dark_brown": (24.0, 6.0, 10.0),
    "brown": (36.0, 10.0, 18.0),
    "auburn": (34.0, 24.0, 26.0),
    "red": (44.0, 32.0, 36.0),
    "blonde": (66.0, 5.0, 28.0),
    "platinum": (82.0, 1.0, 10.0),
    "grey": (62.0, 0.0, 2.0),
}


@register_method("maskgan")
class MaskGAN(ForgeryMethod):
    backend = "classical"
    kept = "source"
    needs_target = False
    random = True
    defaults = {
        "parts": EDITABLE,  # candidate parts
        "scale_change": (0.15, 0.3),  # |factor - 1| range of a shape edit
        "colour_shift": (10.0, 25.0),  # LAB units of a colour edit
        "hair_colour_distance": 20.0,  # a new hair colour is at least this far (LAB units)
        "margin": 0.06,  # context carried with a part, inter-ocular units
        "feather": 0.04,  # inter-ocular units
    }

    def __init__(self, **options):
        super().__init__(**options)
        if "skin" in self.options["parts"]:
            raise ValueError("maskgan never edits skin: skin tone defines the demo's groups")
        unknown = sorted(set(self.options["parts"]) - set(EDITABLE))
        if unknown:
            raise ValueError(f"maskgan parts {unknown} unknown; parts: {list(EDITABLE)}")

    def forge(self, source_img, source_lm, target_img, target_lm, rng) -> ForgeryResult:
        shape = source_img.shape
        iod = interocular(source_lm)
        wanted = self.options["parts"]
        masks = parse_parts(source_lm, shape, source_img if HAIR in wanted else None)
        candidates = [p for p in wanted if (masks[p] > 0).sum() >= MIN_PART_AREA]
        if not candidates:
            raise ForgeryError("no face part large enough to edit")
        chosen = [p for p in candidates if rng.random() < 0.5]
        if not chosen:
            chosen = [candidates[int(rng.integers(len(candidates)))]]
        lo, hi = self.options["scale_change"]
        factors = {
            p: float(1 + rng.choice([-1.0, 1.0]) * rng.uniform(lo, hi)) for p in chosen if p != HAIR
        }
        c_lo, c_hi = self.options["colour_shift"]
        colours = {}
        for family, parts in COLOUR_PARTS.items():
            if any(p in chosen for p in parts) and rng.random() < 0.5:
                sign = rng.choice([-1.0, 1.0], size=3)
                size = rng.uniform(c_lo, c_hi, size=3)
                shift = sign * size * (np.array([0.6, 1.0, 1.0]) if family == "lips" else 1.0)
                if family == "brows":
                    shift[1:] = 0.0  # brows get lighter or darker, not a new hue
                colours[family] = shift
        hair = None
        if HAIR in chosen:
            hair = _hair_colour(source_img, masks[HAIR], self.options["hair_colour_distance"], rng)
        chosen_parts = [p for p in chosen if p != HAIR]

        margin = max(int(round(self.options["margin"] * iod)), 1)
        vacated = np.zeros(shape[:2], np.uint8)
        for p in chosen_parts:
            vacated |= dilate(masks[p], margin)
        canvas = source_img
        if vacated.any():
            canvas = cv2.inpaint(source_img, vacated, max(margin, 3), cv2.INPAINT_TELEA)
        canvas = canvas.astype(np.float32)
        edited = vacated.copy()
        components = part_components(source_lm)
        for p in chosen_parts:
            s = factors[p]
            recoloured = _recolour(source_img, colours, p)
            for poly in components[p]:
                region = dilate(polygon_mask(poly, shape, convex=False), margin)
                if not region.any():
                    continue
                cx, cy = np.asarray(poly, np.float64).mean(0)
                mat = np.array([[s, 0, (1 - s) * cx], [0, s, (1 - s) * cy]], np.float64)
                size = (shape[1], shape[0])
                moved = cv2.warpAffine(
                    recoloured, mat, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
                )
                moved_region = cv2.warpAffine(region, mat, size, flags=cv2.INTER_NEAREST)
                a = feather(moved_region, max(margin // 2, 1))[..., None]
                canvas = moved.astype(np.float32) * a + canvas * (1 - a)
                edited |= moved_region
        radius = max(int(round(self.options["feather"] * iod)), 1)
        alpha = feather(edited, radius, inside=False)
        extra = {
            "parts": sorted(chosen),
            "factors": {p: round(f, 4) for p, f in factors.items() if p != HAIR},
            "colour_shift": {k: np.round(v, 2).tolist() for k, v in colours.items()},
        }
        if hair is not None:
            recoloured, extra["hair_colour"] = hair
            # Feathered inside the hair, and cut to it (a blur reaches past concave corners).
            hair_alpha = feather(masks[HAIR], radius) * hair_fade(source_lm, shape)
            hair_alpha[masks[HAIR] == 0] = 0.0
            on_hair = hair_alpha > 0
            canvas[on_hair] = recoloured[on_hair]
            alpha = np.maximum(alpha, hair_alpha)
        image, mask = composite(np.clip(canvas + 0.5, 0, 255).astype(np.uint8), source_img, alpha)
        return ForgeryResult(image, mask, extra)


def _recolour(img: np.ndarray, colours: dict[str, np.ndarray], part: str) -> np.ndarray:
    """``img`` shifted in LAB by the colour edit of ``part``'s family (if any)."""
    family = next((f for f, parts in COLOUR_PARTS.items() if part in parts), None)
    if family is None or family not in colours:
        return img
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB).astype(np.float32) + colours[family]
    return cv2.cvtColor(np.clip(lab + 0.5, 0, 255).astype(np.uint8), cv2.COLOR_LAB2RGB)


def _hair_colour(
    img: np.ndarray, hair: np.ndarray, min_distance: float, rng: np.random.Generator
) -> tuple[np.ndarray, str]:
    """``img`` with its hair moved to a new colour of :data:`HAIR_COLOURS` (float32 RGB, the
    whole image shifted alike; only the hair is used) and the colour's name."""
    lab = cie_lab(img)
    mean = lab[hair > 0].mean(0)
    names = sorted(HAIR_COLOURS)
    far = [n for n in names if np.linalg.norm(np.array(HAIR_COLOURS[n]) - mean) >= min_distance]
    pool = far or names
    name = pool[int(rng.integers(len(pool)))]
    shifted = lab + (np.array(HAIR_COLOURS[name], np.float32) - mean)
    shifted[..., 0] = np.clip(shifted[..., 0], 0.0, 100.0)
    rgb = cv2.cvtColor(shifted, cv2.COLOR_LAB2RGB)
    return np.clip(rgb * 255.0, 0.0, 255.0), name
