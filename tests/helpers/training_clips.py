"""Samples of clip frames on disk, as the training data pipeline reads them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairforge.images import write_image


def _video_frame(lengths, methods=None):
    rows = []
    for v, n in enumerate(lengths):
        method = (methods or ["real"] * len(lengths))[v]
        for f in reversed(range(n)):  # rows out of frame order on purpose
            rows.append(
                {
                    "sample_id": f"{method}_v{v}_f{f}",
                    "video_id": f"v{v}",
                    "frame_index": f,
                    "method": method,
                    "label": int(method != "real"),
                    "subject_id": f"s{v}",
                    "group": "g",
                }
            )
    return pd.DataFrame(rows)


def clip_samples(root) -> pd.DataFrame:
    """Two real and two fake videos of three 32 px frames each, per split (train, val), the
    fakes brighter noise, written under ``root``."""
    rows = []
    for split in ("train", "val"):
        frame = _video_frame([3, 3, 3, 3], ["real", "real", "faceswap", "faceswap"])
        frame["sample_id"] = split + "_" + frame["sample_id"]
        frame["video_id"] = split + "_" + frame["video_id"]
        rows.append(frame.assign(split=split, dataset="d"))
    samples = pd.concat(rows, ignore_index=True)
    rng = np.random.default_rng(0)
    samples["path"] = samples["sample_id"] + ".png"
    for sid, label in zip(samples["sample_id"], samples["label"]):
        img = rng.integers(0, 256 if label else 64, (32, 32, 3)).astype(np.uint8)
        write_image(root / f"{sid}.png", img)
    return samples
