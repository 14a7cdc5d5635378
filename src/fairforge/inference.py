"""Batched inference that writes the predictions contract.

The loader decodes (and perturbs) in worker processes while the model runs, batches stay in
manifest order, and on CUDA the forward pass runs in channels_last under bf16 autocast.
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

log = logging.getLogger(__name__)


def score_frame(model: torch.nn.Module, meta: dict, frame: pd.DataFrame, root: str | Path,
                variant: str = "clean", batch_size: int = 64, num_workers: int = 0,
                device: torch.device | str = "cpu", progress: bool | None = None,
                variant_options: dict | None = None) -> np.ndarray:
    """Probability of fake for every row of ``frame``, in row order (float32)."""
    device = torch.device(device)
    dataset = FaceDataset(frame, root, meta["input_size"], meta["mean"], meta["std"],
                          variant=variant, variant_options=variant_options)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                        pin_memory=device.type == "cuda",
                        prefetch_factor=4 if num_workers > 0 else None)
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


def is_classical_checkpoint(path: str | Path) -> bool:
    payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    return bool(payload.get("classical", False))


def _classical_scores(checkpoint, frame, root, variant, variant_options) -> np.ndarray:
    """Head-pose SVM scores; a face whose landmarks are not found scores 0.5 (undecided),
    and the count is logged: such a detector abstains rather than guesses."""
    from fairforge.detectors.headpose import HeadPoseSVM, sample_landmarks

    model = HeadPoseSVM.load(checkpoint)
    landmarks = sample_landmarks(frame, root, variant, variant_options=variant_options)
    scores = model.predict_proba(landmarks)
    missing = ~np.isfinite(scores)
    if missing.any():
        log.warning("%d of %d faces had no landmarks under %s; scored 0.5", int(missing.sum()),
                    len(scores), variant)
    return np.where(missing, np.float32(0.5), scores).astype(np.float32)


def empty_predictions() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype=object) for c in PREDICTION_COLUMNS})
    return frame.astype({"label": "int8", "score": "float32"})


def predict(checkpoint: str | Path, samples: pd.DataFrame, root: str | Path, detector: str,
            variant: str = "clean", splits=("val", "test"), batch_size: int = 64,
            num_workers: int = 0, device: str = "auto", threads: int = 1,
            variant_options: dict | None = None) -> pd.DataFrame:
    """Run a checkpoint on the samples of ``splits`` under ``variant``; predictions contract.

    A video variant's samples are already degraded crops (``fairforge.video``), loaded as is;
    its clips that failed to decode (``ok=False``) are left out and logged. An image variant
    whose weights are missing raises :class:`~fairforge.perturb.OperationUnavailable`.
    """
    from fairforge.video import loading_variant

    torch.set_num_threads(max(1, threads))
    dev = pick_device(device)
    frame = samples.loc[samples["split"].isin(list(splits))]
    if "ok" in frame.columns:
        failed = frame.loc[~frame["ok"].astype(bool)]
        if len(failed):
            log.warning("%d samples failed under %s and are not scored: %s", len(failed),
                        variant, failed["reason"].value_counts().to_dict())
        frame = frame.loc[frame["ok"].astype(bool)]
    frame = frame.sort_values("sample_id").reset_index(drop=True)
    if is_classical_checkpoint(checkpoint):
        scores = _classical_scores(checkpoint, frame, root, loading_variant(variant),
                                   variant_options)
    else:
        model, meta = load_checkpoint(checkpoint, dev)
        scores = score_frame(model, meta, frame, root, loading_variant(variant), batch_size,
                             num_workers, dev, variant_options=variant_options)
    extra = [c for c in ("video_id", "frame_index") if c in frame.columns]
    out = frame[[c for c in PREDICTION_COLUMNS if c in frame.columns] + extra].copy()
    out["detector"] = detector
    out["variant"] = variant
    out["score"] = scores
    return out[PREDICTION_COLUMNS + extra]
