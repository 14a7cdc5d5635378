"""Batched inference of the network detectors, and the predictions contract every kind writes.

The loader decodes (and perturbs) in worker processes while the model runs, batches stay in
manifest order, and on CUDA the forward pass runs in channels_last, under bf16 autocast when
the checkpoint's ``precision`` (checked on the validation set at training) is bf16.
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

from fairforge.columns import CLEAN, PREDICTION_COLUMNS
from fairforge.data import (
    FaceDataset,
    SequenceDataset,
    frames_to_score,
    sequence_groups,
    video_keys,
)
from fairforge.perturb.variants import unavailable_reason
from fairforge.runtime import autocast, load_checkpoint, pick_device
from fairforge.video import loading_variant

log = logging.getLogger(__name__)

PREFETCH_FACTOR = 4
#: Share of a job's memory that images queued by the loader may take (the model, its
#: activations and the decoded sources need the rest).
QUEUE_MEMORY_SHARE = 0.25


def bounded_loader(
    batch_size: int, num_workers: int, input_size: int, memory_mb: float | None
) -> tuple[int, int, int]:
    """``(batch_size, num_workers, prefetch_factor)`` whose queued float32 images (workers
    x prefetch x batch, plus the batch on the model and its pinned copy) fit in
    :data:`QUEUE_MEMORY_SHARE` of ``memory_mb``: prefetch, then workers, then the batch are
    lowered, and the clamp is logged. ``memory_mb`` None: no bound."""
    image = 3 * input_size * input_size * 4
    prefetch = PREFETCH_FACTOR if num_workers > 0 else 0

    def queued(b, w, p):
        return (w * p + 2) * b * image

    if memory_mb is None:
        return batch_size, num_workers, prefetch
    budget = QUEUE_MEMORY_SHARE * memory_mb * 2**20
    b, w, p = batch_size, num_workers, prefetch
    while queued(b, w, p) > budget and p > 1:
        p -= 1
    while queued(b, w, p) > budget and w > 1:
        w -= 1
    while queued(b, w, p) > budget and b > 1:
        b = max(1, b // 2)
    if (b, w, p) != (batch_size, num_workers, prefetch):
        log.warning(
            "loader clamped to fit %.0f MB of queued images (%d MB job): batch %d -> %d, "
            "workers %d -> %d, prefetch %d -> %d",
            budget / 2**20,
            memory_mb,
            batch_size,
            b,
            num_workers,
            w,
            prefetch,
            p,
        )
    return b, w, p


def score_frame(
    model: torch.nn.Module,
    meta: dict,
    frame: pd.DataFrame,
    root: str | Path,
    variant: str = CLEAN,
    batch_size: int = 64,
    num_workers: int = 0,
    device: torch.device | str = "cpu",
    progress: bool | None = None,
    variant_options: dict | None = None,
    memory_mb: float | None = None,
) -> np.ndarray:
    """Probability of fake for every row of ``frame``, in row order (float32); the loader's
    queue fits in the job's ``memory_mb`` (:func:`bounded_loader`)."""
    device = torch.device(device)
    batch_size, num_workers, prefetch = bounded_loader(
        batch_size, num_workers, int(meta["input_size"]), memory_mb
    )
    dataset = FaceDataset(
        frame,
        root,
        meta["input_size"],
        meta["mean"],
        meta["std"],
        variant=variant,
        variant_options=variant_options,
    )
    groups = None
    if getattr(model, "sequence_input", False):  # a video detector: score frame sequences
        length = int((meta.get("train_config") or {}).get("frames_per_sequence") or model.frames)
        groups = sequence_groups(dataset.frame, length)
        dataset = SequenceDataset(dataset, groups)
        batch_size = max(1, batch_size // length)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        pin_memory=device.type == "cuda",
        prefetch_factor=prefetch or None,
    )
    model, precision = prepare_model(model, meta, device)
    scores = np.empty(len(dataset), dtype=np.float32)
    show = sys.stderr.isatty() if progress is None else progress
    batches = loader
    if show:
        from tqdm import tqdm

        batches = tqdm(loader, desc=f"predict {variant}", unit="batch")
    with torch.inference_mode(), autocast(device, precision):
        for batch in batches:
            images = batch["image"].to(device, non_blocking=True)
            if device.type == "cuda":
                images = images.contiguous(memory_format=torch.channels_last)
            logits = model(images)
            scores[batch["index"].numpy()] = torch.sigmoid(logits.float()).cpu().numpy()
    if groups is not None:
        scores = video_scores(frame, groups, scores)
    return scores


def video_scores(frame: pd.DataFrame, groups: list[np.ndarray], scores: np.ndarray) -> np.ndarray:
    """Per-row scores from per-sequence ``scores``: each row gets the mean score of the
    sequences of its video (:func:`fairforge.data.video_keys`)."""
    keys = video_keys(frame.reset_index(drop=True)).to_numpy()
    per_video = pd.Series(scores, index=[keys[g[0]] for g in groups]).groupby(level=0).mean()
    return per_video.reindex(keys).to_numpy(np.float32)


def one_row_per_video(predictions: pd.DataFrame) -> pd.DataFrame:
    """Predictions of a video detector, one row per video: the row of its first sample (its
    ``sample_id``, ``video_id``, subject and group kept for the fairness tables) with the
    video's score; ``frame_index`` gives way to ``scored_frames``, the frame indices the
    score was computed on (ascending)."""
    keys = video_keys(predictions)
    out = predictions.loc[~keys.duplicated()]
    if "frame_index" in predictions.columns:
        scored: dict[str, list[int]] = {}
        for key, index in zip(keys, predictions["frame_index"]):
            scored.setdefault(key, [])
            if pd.notna(index):
                scored[key].append(int(index))
        out = out.drop(columns="frame_index").assign(
            scored_frames=[sorted(scored[k]) for k in keys.loc[out.index]]
        )
    return out.reset_index(drop=True)


def prepare_model(model: torch.nn.Module, meta: dict, device: torch.device):
    """The model as inference runs it, and its precision: eval mode on ``device``; on CUDA
    channels_last, at the checkpoint's precision (fp32 on a CPU, and for checkpoints that
    record none)."""
    model = model.to(device).eval()
    if device.type != "cuda":
        return model, "fp32"
    return model.to(memory_format=torch.channels_last), meta.get("precision", "fp32")


def variant_unavailable(variant: str, options: dict | None = None) -> str | None:
    """Why a variant cannot run here (missing weights, with the expected path), else None."""
    return unavailable_reason(variant, options)


def empty_predictions() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype=object) for c in PREDICTION_COLUMNS})
    return frame.astype({"label": "int8", "score": "float32"})


def scored_frame(
    samples: pd.DataFrame,
    splits,
    variant: str,
    frames: int | None = None,
    pick: str = "spaced",
) -> pd.DataFrame:
    """The samples of ``splits`` that a detector scores under ``variant``, in sample order:
    of a video, the ``frames`` its test protocol picks (:func:`fairforge.data.frames_to_score`;
    None: every frame).

    A video variant's samples are already degraded crops (``fairforge.video``); its clips that
    failed to decode (``ok=False``) are left out and logged. Frames are picked before that,
    so every variant scores the same frames of a video (less those it lost).
    """
    frame = frames_to_score(samples.loc[samples["split"].isin(list(splits))], frames, pick)
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
    variant: str = CLEAN,
    batch_size: int = 64,
    num_workers: int = 0,
    device: str = "auto",
    variant_options: dict | None = None,
    memory_mb: float | None = None,
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
        memory_mb=memory_mb,
    )
