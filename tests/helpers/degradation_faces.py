"""Two folders of face-like images, high and low resolution, for the learned degradation's
generator to train on (Exposure §3.2's far degradation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairforge.images import write_image
from fairforge.seeding import rng_for


def write_faces(folder: Path, count: int, size: int, name: str) -> None:
    """Smooth colour fields with a bright blob: face-like enough to train on, and each differs."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    for i in range(count):
        rng = rng_for("test_degradation_rule", name, i)
        base = rng.uniform(40, 200, 3)
        slope = rng.uniform(-60, 60, (2, 3))
        cy, cx = rng.uniform(0.3, 0.7, 2)
        blob = 80 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 0.02)
        image = base + yy[..., None] * slope[0] + xx[..., None] * slope[1] + blob[..., None]
        image += rng.normal(0, 6, image.shape)
        write_image(folder / f"{name}_{i:02d}.png", np.clip(image, 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def face_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("degradation_faces")
    write_faces(root / "high", 16, 64, "high")
    write_faces(root / "low", 16, 16, "low")
    return root / "high", root / "low"
