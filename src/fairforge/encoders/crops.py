"""The face crops an encoder is trained on and ranks: read from the faces table, and seen at
a distance through the classical far chain.

Shared by encoder training and the ranking study, so that a far-trained encoder sees its
training crops degraded exactly as the ranking degrades probes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from fairforge.images import read_image
from fairforge.perturb.distance import far_degrade
from fairforge.seeding import rng_for


def face_images(
    rows: pd.DataFrame,
    results_dir: str | Path,
    far: bool,
    distance: int,
    seed: int,
    out_size: int,
    face_fraction: float = 1.0,
) -> Iterator[np.ndarray]:
    """The crops of ``rows`` (``image_id``, ``crop_path`` relative to ``results_dir``), each
    seen at ``distance`` through the classical far chain when ``far`` (seeded per image, so
    the same image is degraded the same way wherever it is used)."""
    results_dir = Path(results_dir)
    for image_id, crop_path in zip(rows["image_id"], rows["crop_path"]):
        image = read_image(results_dir / crop_path)
        if far:
            image = far_degrade(
                image,
                distance,
                rng_for(seed, "far", image_id, distance),
                out_size=(out_size, out_size),
                face_fraction=face_fraction,
            )
        yield image
