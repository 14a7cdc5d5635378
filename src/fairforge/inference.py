"""Batched inference of the network detectors, and the predictions contract every kind writes.

The loader decodes (and perturbs) in worker processes while the model runs, batches stay in
manifest order, and on CUDA the forward pass runs in channels_last under bf16 autocast.
:mod:`fairforge.detector_kinds` predicts with a detector of any kind.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader

from fairforge.columns import PREDICTION_COLUMNS
from fairforge.data import FaceDataset
from fairforge.perturb.variants import unavailable_reason
from fairforge.training import load_checkpoint, pick_device
from fairforge.video import loading_variant

log = logging.getLogger(__name__)


def score_frame(
    model: torch.nn.Module,
    meta: dict,
    frame: pd.DataFrame,
    root: str | Path,
    variant: str = "clean",
    batch_size: int = 64,
    num_workers: int = 0,
    device: torch.device | str = "cpu",
    progress: bool | None = None,
    variant_options: dict | None = None,
) -> np.ndarray:
    """Probability of fake for every row of ``frame``, in row order (float32)."""
    device = torch.device(device)
    dataset = FaceDataset(
        frame,
        root,
        meta["input_size"],
        meta["mean"],
        meta["std"],
        variant=variant,
        variant_options=variant_options,
    )
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        pin_memory=device.type == "cuda",
        prefetch_factor=4 if num_workers > 0 else None,
    )
    model = model.to(device).eval()
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    scores = np.empty(len(dataset), dtype=np.float32)
    show = sys.stderr.isatty() if progress is None else progress
    batches = loader
    if show:
        from tqdm import tqdm

        batches = tqdm(loader, desc=f"predict {variant}", unit="batch")
    with torch.inference_mode():
        for batch in batches:
            images = batch["image"].to(device, non_blocking=True)
            if device.type == "cuda":
                images = images.contiguous(memory_format=torch.channels_last)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits = model(images)
            else:
                logits = model(images)
            scores[batch["index"].numpy()] = torch.sigmoid(logits.float()).cpu().numpy()
    return scores


def variant_unavailable(variant: str, options: dict | None = None) -> str | None:
    """Why a variant cannot run here (missing weights, with the expected path), else None."""
    return unavailable_reason(variant, options)


def empty_predictions() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype=object) for c in PREDICTION_COLUMNS})
    return frame.astype({"label": "int8", "score": "float32"})


def scored_frame(samples: pd.DataFrame, splits, variant: str) -> pd.DataFrame:
    """The samples of ``splits`` that a detector scores under ``variant``, in sample order.

    A video variant's samples are already degraded crops (``fairforge.video``); its clips that
    failed to decode (``ok=False``) are left out and logged.
    """
    frame = samples.loc[samples["split"].isin(list(splits))]
    if "ok" in frame.columns:
        failed = frame.loc[~frame["ok"].astype(bool)]
        if len(failed):
            log.warning(
                "%d samples failed under %s and are not scored: %s",
                len(failed),
                variant,
                failed["reason"].value_counts().to_dict(),
            )
        frame = frame.loc[frame["ok"].astype(bool)]
    return frame.sort_values("sample_id").reset_index(drop=True)


def prediction_frame(
    frame: pd.DataFrame, detector: str, variant: str, scores: np.ndarray
) -> pd.DataFrame:
    """The predictions contract for the rows of ``frame`` and their ``scores``."""
    extra = [c for c in ("video_id", "frame_index") if c in frame.columns]
    out = frame[[c for c in PREDICTION_COLUMNS if c in frame.columns] + extra].copy()
    out["detector"] = detector
    out["variant"] = variant
    out["score"] = scores
    return out[PREDICTION_COLUMNS + extra]


def network_scores(
    checkpoint: str | Path,
    frame: pd.DataFrame,
    root: str | Path,
    variant: str = "clean",
    batch_size: int = 64,
    num_workers: int = 0,
    device: str = "auto",
    variant_options: dict | None = None,
) -> np.ndarray:
    """Scores of a network checkpoint on the rows of ``frame`` under ``variant``.

    An image variant whose weights are missing raises
    :class:`~fairforge.perturb.OperationUnavailable`.
    """
    dev = pick_device(device)
    model, meta = load_checkpoint(checkpoint, dev)
    return score_frame(
        model,
        meta,
        frame,
        root,
        loading_variant(variant),
        batch_size,
        num_workers,
        dev,
        variant_options=variant_options,
    )
