"""A detector's penultimate features on a sample of the evaluated set (FairFD A.7).

FairFD draws 500 samples per race from its test set and takes the trained Xception's
features for each, to look for separated groups (t-SNE, Fig. 6) and to measure their
distance from the Caucasian group's (MMD, Fig. 7), for real faces, FaceSwap and FaceReen.
:func:`feature_sample` draws such a sample from a samples manifest: up to ``per_group``
samples per approach and group, the same whatever the row order (each sample's place in the
draw is a seed derived from its id). :func:`network_features` runs a trained network
detector's :meth:`~fairforge.detectors.base.Detector.penultimate` on them, clean, as
inference prepares its images; the frame written is :data:`~fairforge.columns.FEATURE_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader

from fairforge.columns import FEATURE_COLUMNS
from fairforge.data import FaceDataset
from fairforge.inference import prepare_model
from fairforge.runtime import load_checkpoint, pick_device
from fairforge.seeding import derive_seed


def feature_sample(
    samples: pd.DataFrame,
    methods: Sequence[str],
    per_group: int,
    split: str = "test",
    seed: int = 0,
) -> pd.DataFrame:
    """Up to ``per_group`` rows of ``split`` per (method, group) of ``methods``, drawn by a
    seed derived from each sample id; sorted by sample id. A method with no sample on the
    split is simply absent (the tables say which groups each comparison had)."""
    keep = (samples["split"] == split) & samples["method"].isin(list(methods))
    if "ok" in samples.columns:
        keep &= samples["ok"].astype(bool)
    rows = samples.loc[keep]
    order = rows["sample_id"].map(lambda s: derive_seed(seed, "features", s))
    drawn = (
        rows.assign(_order=order)
        .sort_values(["_order", "sample_id"], kind="stable")
        .groupby(["method", "group"], sort=False)
        .head(per_group)
    )
    return drawn.drop(columns="_order").sort_values("sample_id").reset_index(drop=True)


def penultimate_features(
    model: torch.nn.Module,
    meta: dict,
    frame: pd.DataFrame,
    root: str | Path,
    batch_size: int = 64,
    num_workers: int = 0,
    device: torch.device | str = "cpu",
) -> np.ndarray:
    """``(len(frame), D)`` float32: the model's penultimate features of each row's crop,
    clean, prepared as inference prepares it (size, normalisation; fp32)."""
    if getattr(model, "sequence_input", False):
        raise ValueError(
            f"{type(model).__name__} scores video sequences: penultimate features are "
            "drawn per image, from image detectors only"
        )
    device = torch.device(device)
    dataset = FaceDataset(frame, root, meta["input_size"], meta["mean"], meta["std"])
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers)
    model, _ = prepare_model(model, meta, device)
    out: np.ndarray | None = None
    with torch.inference_mode():
        for batch in loader:
            feats = model.penultimate(batch["image"].to(device)).float().cpu().numpy()
            if out is None:
                out = np.empty((len(dataset), feats.shape[1]), dtype=np.float32)
            out[batch["index"].numpy()] = feats
    return out if out is not None else np.empty((0, 0), dtype=np.float32)


def network_features(
    checkpoint: str | Path,
    frame: pd.DataFrame,
    root: str | Path,
    detector: str,
    batch_size: int = 64,
    num_workers: int = 0,
    device: str = "auto",
) -> pd.DataFrame:
    """The features frame (:data:`FEATURE_COLUMNS`) of a network checkpoint on ``frame``."""
    dev = pick_device(device)
    model, meta = load_checkpoint(checkpoint, dev)
    feats = penultimate_features(model, meta, frame, root, batch_size, num_workers, dev)
    out = frame[[c for c in FEATURE_COLUMNS if c in frame.columns]].reset_index(drop=True)
    out["detector"] = detector
    out["feature"] = list(feats)
    return out[FEATURE_COLUMNS]
