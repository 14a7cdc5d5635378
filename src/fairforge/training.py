"""One training protocol for every detector (FairFD: Adam, lr 2e-4, batch 32).

Train and validation sets come from the samples manifest's train and val splits, restricted
to the real images and the detector's training methods (:func:`training_sets`, shared by every
kind of detector). This module trains the network detectors (:func:`train_network`): the
checkpoint with the best validation AUC is kept, together with the architecture name and the
config that built it, so that :func:`load_checkpoint` can rebuild the model with
``weights_only=True``. :mod:`fairforge.detector_kinds` trains a detector of any kind.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, RandomSampler

from fairforge.data import EpochSampler, FaceDataset
from fairforge.detectors import create_detector, detector_entry
from fairforge.detectors.deepfakebench import load_deepfakebench
from fairforge.metrics.detection import auc
from fairforge.perturb.augment import create_augment
from fairforge.samples import REAL
from fairforge.seeding import derive_seed

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16")
#: bf16 inference is kept only if it moves the validation AUC by less than this.
BF16_AUC_TOLERANCE = 1e-3


@dataclass
class TrainConfig:
    """What the training rule passes; mirrors the ``detectors.<name>`` config block."""

    arch: str
    model: dict = field(default_factory=dict)
    input_size: int | None = None
    train_methods: list[str] = field(default_factory=lambda: ["faceswap"])
    augment: str = "none"
    balanced: bool = False
    epochs: int = 5
    batch_size: int = 32
    lr: float = 2e-4
    weight_decay: float = 0.0
    num_workers: int = 0
    threads: int = 1
    device: str = "auto"
    seed: int = 0
    #: inference precision asked for; None: the architecture's own (``Detector.precision``)
    precision: str | None = None


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} requested but CUDA is not available")
    return torch.device(device)


def training_frame(samples: pd.DataFrame, split: str, methods: list[str]) -> pd.DataFrame:
    keep = (samples["split"] == split) & samples["method"].isin([REAL, *methods])
    return samples.loc[keep].sort_values("sample_id").reset_index(drop=True)


def balance_groups(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Subsample so every group has the same number of samples per label (FairFD Table 4)."""
    counts = frame.groupby(["group", "label"]).size()
    per_label = counts.groupby(level="label").min()
    keys = frame["sample_id"].map(lambda s: derive_seed(seed, "balance", s))
    ordered = frame.assign(_key=keys).sort_values("_key")
    parts = [g.head(int(per_label[lbl])) for (grp, lbl), g in ordered.groupby(["group", "label"])]
    return pd.concat(parts).drop(columns="_key").sort_values("sample_id").reset_index(drop=True)


def training_sets(samples: pd.DataFrame, cfg: TrainConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The training frame (group-balanced when ``cfg.balanced``) and the validation frame."""
    train = training_frame(samples, "train", cfg.train_methods)
    if cfg.balanced:
        train = balance_groups(train, cfg.seed)
    return train, training_frame(samples, "val", cfg.train_methods)


def _collate_device(batch: dict, device: torch.device) -> dict:
    return {
        k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()
    }


def _loader_kw(cfg: TrainConfig, device: torch.device) -> dict:
    return dict(
        batch_size=cfg.batch_size,
        num_workers=cfg.num_workers,
        pin_memory=device.type == "cuda",
        persistent_workers=cfg.num_workers > 0,
    )


def training_loader(
    dataset: FaceDataset, cfg: TrainConfig, device: torch.device
) -> tuple[DataLoader, EpochSampler]:
    """The shuffled training loader and its sampler; call ``sampler.set_epoch`` before each
    epoch. The epoch reaches (persistent) workers with each index, not as dataset state, so
    augmentation draws change every epoch and do not depend on ``num_workers``."""
    gen = torch.Generator().manual_seed(derive_seed(cfg.seed, "shuffle", cfg.arch))
    # With the batch of each key: SDAug draws its noise decision per batch, so batches must
    # not depend on the worker layout. The loader draws its workers' base seed from its own
    # generator (persistent workers draw it once, serial loading every epoch): sharing the
    # shuffle's generator made the order from the second epoch on depend on num_workers.
    sampler = EpochSampler(RandomSampler(dataset, generator=gen), batch_size=cfg.batch_size)
    worker_gen = torch.Generator().manual_seed(derive_seed(cfg.seed, "workers", cfg.arch))
    loader = DataLoader(
        dataset, sampler=sampler, generator=worker_gen, drop_last=False, **_loader_kw(cfg, device)
    )
    return loader, sampler


def autocast(device: torch.device, precision: str = "fp32"):
    """The context a forward pass runs in at ``precision`` (bf16: autocast on ``device``)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "bf16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def evaluate(model, loader, device, precision: str = "fp32") -> tuple[np.ndarray, float]:
    """Scores (probability of fake) in dataset order, and the mean loss."""
    model.eval()
    scores = np.zeros(len(loader.dataset), dtype=np.float32)
    losses = []
    with torch.inference_mode(), autocast(device, precision):
        for batch in loader:
            batch = _collate_device(batch, device)
            logits = model(batch["image"])
            losses.append(float(model.loss(logits, batch["label"], batch)))
            scores[batch["index"].cpu().numpy()] = torch.sigmoid(logits.float()).cpu().numpy()
    return scores, float(np.mean(losses)) if losses else math.nan


def train_network(
    samples: pd.DataFrame, root: str | Path, cfg: TrainConfig, checkpoint_path: str | Path
) -> pd.DataFrame:
    """Train the network detector ``cfg.arch`` and save the best-by-validation-AUC
    checkpoint; returns the log, one row per epoch."""
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(derive_seed(cfg.seed, "init", cfg.arch))
    device = pick_device(cfg.device)
    entry = detector_entry(cfg.arch)
    input_size = int(cfg.input_size or entry.default_input_size)
    model_kwargs = dict(cfg.model)
    if "input_size" in entry.__init__.__code__.co_varnames:
        model_kwargs.setdefault("input_size", input_size)
    model = create_detector(cfg.arch, **model_kwargs).to(device)

    train, val = training_sets(samples, cfg)
    if train["label"].nunique() < 2:
        raise ValueError(
            f"training set for {cfg.arch} needs real and fake samples; "
            f"methods {cfg.train_methods} gave labels {sorted(train['label'].unique())}"
        )
    augment = None if cfg.augment == "none" else create_augment(cfg.augment)
    mask_column = "mask_path" if entry.needs_masks else None
    train_ds = FaceDataset(
        train,
        root,
        input_size,
        entry.mean,
        entry.std,
        augment=augment,
        seed=cfg.seed,
        mask_column=mask_column,
    )
    val_ds = FaceDataset(val, root, input_size, entry.mean, entry.std, mask_column=mask_column)
    train_loader, sampler = training_loader(train_ds, cfg, device)
    val_loader = DataLoader(val_ds, shuffle=False, **_loader_kw(cfg, device))

    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    best_auc, rows = -math.inf, []
    for epoch in range(1, cfg.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        start, losses = time.perf_counter(), []
        for batch in train_loader:
            batch = _collate_device(batch, device)
            optimizer.zero_grad(set_to_none=True)
            loss = model.loss(model(batch["image"]), batch["label"], batch)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        scores, val_loss = evaluate(model, val_loader, device)
        val_auc = auc(val["label"].to_numpy(), scores)
        rows.append(
            {
                "epoch": epoch,
                "train_loss": float(np.mean(losses)),
                "val_loss": val_loss,
                "val_auc": val_auc,
                "n_train": len(train_ds),
                "n_val": len(val_ds),
                "seconds": time.perf_counter() - start,
            }
        )
        # NaN AUC (a one-class validation set) must still save a checkpoint.
        score = -math.inf if math.isnan(val_auc) else val_auc
        if epoch == 1 or score > best_auc:
            best_auc = score
            save_checkpoint(checkpoint_path, model, cfg, model_kwargs, input_size, epoch, val_auc)
    settle_precision(checkpoint_path, val_loader, val["label"].to_numpy(), cfg, device)
    return pd.DataFrame(rows)


def requested_precision(cfg: TrainConfig) -> str:
    """The precision ``cfg`` asks for: its own, else its architecture's default."""
    precision = cfg.precision or getattr(detector_entry(cfg.arch), "precision", "fp32")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def settle_precision(
    checkpoint_path, val_loader, labels: np.ndarray, cfg: TrainConfig, device
) -> str:
    """Record in the checkpoint the precision inference will use: bf16 only when asked
    for and it changes the best model's validation AUC by less than
    :data:`BF16_AUC_TOLERANCE` (else fp32, logged), with both AUCs."""
    precision = requested_precision(cfg)
    payload = read_checkpoint(checkpoint_path)
    if precision == "bf16":
        model, _ = load_checkpoint(checkpoint_path, device)
        fp32 = auc(labels, evaluate(model, val_loader, device, "fp32")[0])
        bf16 = auc(labels, evaluate(model, val_loader, device, "bf16")[0])
        payload.update(val_auc_fp32=float(fp32), val_auc_bf16=float(bf16))
        if not abs(bf16 - fp32) < BF16_AUC_TOLERANCE:  # NaN (one-class val) falls back too
            log.warning(
                "%s: bf16 changes the validation AUC from %.4f to %.4f (tolerance %g): "
                "inference runs in fp32",
                cfg.arch,
                fp32,
                bf16,
                BF16_AUC_TOLERANCE,
            )
            precision = "fp32"
        else:
            log.info("%s: bf16 validation AUC %.4f vs fp32 %.4f: bf16 kept", cfg.arch, bf16, fp32)
    payload["precision"] = precision
    _write_payload(checkpoint_path, payload)
    return precision


def save_checkpoint(
    path,
    model,
    cfg: TrainConfig,
    model_kwargs: dict,
    input_size: int,
    epoch: int,
    val_auc: float,
    precision: str = "fp32",
) -> None:
    """A fairforge checkpoint; ``precision`` is the one inference uses on a GPU (fp32 until
    :func:`settle_precision` has checked bf16 on the validation set)."""
    entry = type(model)
    payload = {
        "arch": cfg.arch,
        "model_config": model_kwargs,
        "train_config": asdict(cfg),
        "input_size": input_size,
        "mean": list(entry.mean),
        "std": list(entry.std),
        "epoch": epoch,
        "val_auc": float(val_auc),
        "precision": precision,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }
    _write_payload(path, payload)


def _write_payload(path, payload: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)


def import_checkpoint(
    source: str | Path, out: str | Path, cfg: TrainConfig, fmt: str = "fairforge"
) -> None:
    """Bring user-provided weights into the workflow as a fairforge checkpoint.

    ``fmt='deepfakebench'`` maps a DeepfakeBench state dict onto ``cfg.arch`` (an error lists
    unmatched keys); ``fairforge`` checkpoints are validated by rebuilding the model.
    """
    source = Path(source)
    if not source.is_file():
        raise FileNotFoundError(f"detector weights not found: expected a file at {source}")
    entry = detector_entry(cfg.arch)
    input_size = int(cfg.input_size or entry.default_input_size)
    if fmt == "deepfakebench":
        kwargs = dict(cfg.model)
        if "input_size" in entry.__init__.__code__.co_varnames:
            kwargs.setdefault("input_size", input_size)
        model = load_deepfakebench(source, cfg.arch, **kwargs)
        save_checkpoint(out, model, cfg, kwargs, input_size, epoch=0, val_auc=math.nan)
        return
    model, meta = load_checkpoint(source)
    if meta["arch"] != cfg.arch:
        raise ValueError(f"{source} holds a {meta['arch']!r} detector, config says {cfg.arch!r}")
    save_checkpoint(
        out,
        model,
        cfg,
        meta["model_config"],
        meta["input_size"],
        epoch=int(meta.get("epoch", 0)),
        val_auc=float(meta.get("val_auc", math.nan)),
        precision=meta.get("precision", "fp32"),
    )


def read_checkpoint(path: str | Path, mmap: bool = False) -> dict:
    """The payload of a detector checkpoint (network or classical), tensors only; with
    ``mmap`` the tensors are mapped, not read (for a look at the metadata)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"detector checkpoint not found: expected a file at {path}")
    return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)


def checkpoint_arch(path: str | Path) -> str:
    """The registered detector a checkpoint was written for, without reading its weights
    (a prediction job then loads them once)."""
    return read_checkpoint(path, mmap=True)["arch"]


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu"):
    """Rebuild a network detector from a fairforge checkpoint; returns (model, metadata)."""
    payload = read_checkpoint(path)
    for key in ("arch", "model_config", "state_dict"):
        if key not in payload:
            raise ValueError(
                f"{path} is not a fairforge checkpoint (no {key!r}); "
                "for a DeepfakeBench checkpoint use load_deepfakebench"
            )
    model = create_detector(payload["arch"], **payload["model_config"])
    model.load_state_dict(payload["state_dict"])
    meta = {k: v for k, v in payload.items() if k != "state_dict"}
    return model.to(device).eval(), meta
