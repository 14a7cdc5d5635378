"""The face crops an encoder is trained on and ranks: read from the faces table, and seen at
a distance through the classical far chain or the learned near-to-far generator.

Shared by encoder training and the ranking study, so that a far-trained encoder sees its
training crops degraded exactly as the ranking degrades probes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from fairforge.images import read_image
from fairforge.perturb.distance import far_degrade
from fairforge.seeding import rng_for

if TYPE_CHECKING:
    from fairforge.perturb.learned_degradation import HighToLowGenerator

#: How a face is seen at a distance: the classical chain or the learned near-to-far GAN.
DEGRADATIONS = ("classical", "learned")


def far_generator(degradation: str, generator: str | Path | None) -> HighToLowGenerator | None:
    """The near-to-far generator of ``ranking.degradation: learned`` (None for the classical
    chain); a learned degradation without a checkpoint is an error that names the path."""
    if degradation not in DEGRADATIONS:
        raise ValueError(f"degradation {degradation!r} is not one of {DEGRADATIONS}")
    if degradation == "classical":
        return None
    if not generator:
        raise ValueError(
            "ranking.degradation: learned needs a near-to-far generator: set "
            "degradation.checkpoint, or degradation.high_dir and low_dir to train one"
        )
    # the generator is a torch network: the classical chain's jobs do not import torch
    from fairforge.perturb.learned_degradation import cached_generator

    return cached_generator(generator)


def far_view(
    image: np.ndarray,
    image_id: str,
    distance: int,
    seed: int,
    out_size: int,
    face_fraction: float = 1.0,
    generator: HighToLowGenerator | None = None,
) -> np.ndarray:
    """One crop seen far away, at the encoder's ``out_size``: the classical far chain at
    ``distance`` (seeded by ``(seed, "far", image_id, distance)``), or, given a trained
    near-to-far ``generator`` (the Exposure paper's learned degradation), its 16x16 output
    upsampled (seeded by ``(seed, "far_learned", image_id)``; it has one distance)."""
    if generator is not None:
        from fairforge.perturb.learned_degradation import apply_generator

        rng = rng_for(seed, "far_learned", image_id)
        return apply_generator(generator, image, rng, out_size=(out_size, out_size))
    return far_degrade(
        image,
        distance,
        rng_for(seed, "far", image_id, distance),
        out_size=(out_size, out_size),
        face_fraction=face_fraction,
    )


def face_images(
    rows: pd.DataFrame,
    results_dir: str | Path,
    far: bool,
    distance: int,
    seed: int,
    out_size: int,
    face_fraction: float = 1.0,
    generator: HighToLowGenerator | None = None,
) -> Iterator[np.ndarray]:
    """The crops of ``rows`` (``image_id``, ``crop_path`` relative to ``results_dir``), each
    seen far away by :func:`far_view` when ``far`` (seeded per image, so the same image is
    degraded the same way wherever it is used): the classical chain, or the learned
    ``generator`` when one is given."""
    results_dir = Path(results_dir)
    for image_id, crop_path in zip(rows["image_id"], rows["crop_path"]):
        image = read_image(results_dir / crop_path)
        if far:
            image = far_view(image, image_id, distance, seed, out_size, face_fraction, generator)
        yield image
