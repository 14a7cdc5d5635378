"""Training the face encoders of the ranking study (:mod:`fairforge.encoders.trainable`).

:func:`train_encoder` classifies the train-split identities through a margin head on the
normalised embedding (:mod:`fairforge.encoders.heads`: ``npcface``, the Exposure paper's, or
``arcface``) with the paper's recipe (:data:`PAPER_RECIPE`: SGD, momentum 0.9, weight decay
1e-8, lr 0.1 divided by 10 after epochs 5, 25 and 68, batch 64, early stopping with patience
5 on held-out images), on :func:`fairforge.training.loop.run_loop`. The checkpoint holds the
embedding network and a config of plain values
(:func:`fairforge.encoders.embedding_net.load_encoder_checkpoint` rebuilds it); the classifier
weights are not kept (they only matter for training).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.encoders.base import EncoderError, arch_spec
from fairforge.encoders.crops import face_images, far_generator
from fairforge.encoders.embedding_net import (
    build_embedding_net,
    normalise_input,
    to_input_tensor,
)
from fairforge.encoders.heads import MARGIN_HEADS
from fairforge.optimizers import OPTIMIZERS, epoch_lr, make_optimizer, set_lr
from fairforge.runtime import pick_device, write_checkpoint
from fairforge.seeding import derive_seed
from fairforge.training.loop import run_loop


@dataclass
class TrainedEncoder:
    model: nn.Module
    config: dict
    classes: list[str]
    losses: list[float] = field(default_factory=list)  # one per optimisation step

    def loss_table(self) -> pd.DataFrame:
        return pd.DataFrame({"step": range(1, len(self.losses) + 1), "loss": self.losses})

    def summary(self) -> str:
        first, last = (self.losses[0], self.losses[-1]) if self.losses else (np.nan, np.nan)
        return (
            f"{self.config['arch']}: {self.config['n_classes']} identities, "
            f"{len(self.losses)} steps, loss {first:.3f} -> {last:.3f}"
        )


#: The Exposure paper's recipe: SGD, momentum 0.9, weight decay 1e-8, lr 0.1 divided by 10
#: after epochs 5, 25 and 68 (the ``decay_after`` schedule of :mod:`fairforge.optimizers`),
#: batch 64, early stopping with patience 5.
PAPER_RECIPE = {
    "optimizer": "sgd",
    "lr": 0.1,
    "momentum": 0.9,
    "weight_decay": 1e-8,
    "milestones": (5, 25, 68),
    "lr_decay": 0.1,
    "batch_size": 64,
    "patience": 5,
}


def _held_out(labels: torch.Tensor, fraction: float, gen: torch.Generator) -> torch.Tensor:
    """A boolean mask of the images held out for early stopping: ``floor(fraction · n)`` of
    each identity's n images (none of an identity with fewer than 1/fraction)."""
    held = torch.zeros(len(labels), dtype=torch.bool)
    if fraction <= 0:
        return held
    for c in torch.unique(labels):
        idx = torch.nonzero(labels == c).flatten()
        n = int(math.floor(fraction * len(idx)))
        if n and len(idx) - n >= 1:
            held[idx[torch.randperm(len(idx), generator=gen)[:n]]] = True
    return held


def train_encoder(
    images: Sequence[np.ndarray],
    identity_labels: Sequence,
    arch: str = "mobilefacenet",
    epochs: int = 100,
    out_path: str | Path | None = None,
    *,
    head: str = "npcface",
    scale: float = 64.0,
    margin: float = 0.5,
    embedding_dim: int | None = None,
    backbone: str | None = None,
    input_size: int | None = None,
    batch_size: int = PAPER_RECIPE["batch_size"],
    optimizer: str = PAPER_RECIPE["optimizer"],
    lr: float = PAPER_RECIPE["lr"],
    momentum: float = PAPER_RECIPE["momentum"],
    weight_decay: float = PAPER_RECIPE["weight_decay"],
    milestones: Sequence[int] = PAPER_RECIPE["milestones"],
    lr_decay: float = PAPER_RECIPE["lr_decay"],
    patience: int | None = PAPER_RECIPE["patience"],
    val_fraction: float = 0.1,
    hflip: bool = True,
    max_steps: int | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> TrainedEncoder:
    """Train an embedding network to tell ``identity_labels`` apart through a margin head.

    By default the Exposure paper's recipe (:data:`PAPER_RECIPE`) with its NPCFace head:
    SGD (momentum 0.9, weight decay 1e-8), lr 0.1 multiplied by ``lr_decay`` after each
    epoch of ``milestones``; ``optimizer`` names any of :data:`fairforge.optimizers.OPTIMIZERS`
    (``adam``: no momentum). Shuffled batches, random horizontal flips.

    Early stopping: ``val_fraction`` of each identity's images (seeded) are held out and
    their margin-head loss is measured after every epoch; training stops when it has not
    improved for ``patience`` epochs and the best epoch's weights are kept (with no image
    held out, the epoch's mean training loss is watched instead; ``patience=None`` never
    stops early). ``max_steps`` stops after that many steps (tests). With ``out_path`` the
    checkpoint is written there.
    """
    if len(images) != len(identity_labels):
        raise ValueError(f"{len(images)} images but {len(identity_labels)} labels")
    if head not in MARGIN_HEADS:
        raise EncoderError(f"unknown margin head {head!r}; known: {MARGIN_HEADS.names()}")
    if optimizer not in OPTIMIZERS:
        raise EncoderError(f"unknown optimizer {optimizer!r}; known: {OPTIMIZERS.names()}")
    classes = sorted({str(x) for x in identity_labels})
    if len(classes) < 2:
        raise ValueError("training an identity classifier needs at least two identities")
    index = {c: i for i, c in enumerate(classes)}
    labels = torch.tensor([index[str(x)] for x in identity_labels], dtype=torch.long)
    device = pick_device(device)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "encoder_init", arch))
        net, config = build_embedding_net(arch, embedding_dim, backbone, input_size)
        margin_head = MARGIN_HEADS.create(
            head, config["embedding_dim"], len(classes), scale, margin
        )
    config.update(
        head=head,
        scale=float(scale),
        margin=float(margin),
        epochs=int(epochs),
        seed=int(seed),
        n_classes=len(classes),
        optimizer=optimizer,
        lr=float(lr),
    )
    data = to_input_tensor(images, config["input_size"])
    held = _held_out(labels, val_fraction, torch.Generator().manual_seed(derive_seed(seed, "val")))
    train_idx, val_idx = torch.nonzero(~held).flatten(), torch.nonzero(held).flatten()
    net.to(device).train()
    margin_head.to(device).train()
    params = list(net.parameters()) + list(margin_head.parameters())
    opt = make_optimizer(
        params,
        {"optimizer": optimizer, "lr": lr, "momentum": momentum, "weight_decay": weight_decay},
    )
    gen = torch.Generator().manual_seed(derive_seed(seed, "encoder_shuffle", arch))
    best = {}

    def start(epoch):
        set_lr(opt, epoch_lr(lr, epoch.number + 1, epochs, "decay_after", **decay))

    def batches(epoch):
        order = train_idx[torch.randperm(len(train_idx), generator=gen)]
        flips = torch.rand(len(data), generator=gen) < 0.5
        for first in range(0, len(order), batch_size):
            idx = order[first : first + batch_size]
            if len(idx) >= 2:  # BatchNorm cannot train on a batch of one: drop it
                yield idx, flips

    def step(epoch, index, batch):
        idx, flips = batch
        x = normalise_input(data[idx])
        if hflip:
            x = torch.where(flips[idx, None, None, None], x.flip(-1), x)
        logits = margin_head(net(x.to(device)), labels[idx].to(device))
        loss = F.cross_entropy(logits, labels[idx].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss.detach())

    def validate(epoch):
        if len(val_idx):
            return _held_out_loss(net, margin_head, data[val_idx], labels[val_idx], device)
        return float(np.mean(epoch.outputs)) if epoch.outputs else math.inf

    def keep(epoch):
        best["state"] = {k: v.detach().clone() for k, v in net.state_dict().items()}

    decay = {"milestones": tuple(milestones), "gamma": lr_decay}
    result = run_loop(
        range(int(epochs)),
        batches,
        step,
        start=start,
        validate=None if patience is None else validate,
        on_best=keep,
        mode="min",
        patience=patience,
        max_steps=max_steps,
        name=f"encoder {arch}",
        watched="held-out loss",
    )
    if "state" in best:
        net.load_state_dict(best["state"])
    epochs_run = 0 if result.last_epoch is None else result.last_epoch + 1
    config.update(best_epoch=int(result.best_epoch + 1), epochs_run=int(epochs_run))
    net.eval()
    trained = TrainedEncoder(net.cpu(), config, classes, result.outputs)
    if out_path is not None:
        save_encoder_checkpoint(trained, out_path)
    return trained


@torch.no_grad()
def _held_out_loss(net, margin_head, data, labels, device, batch_size: int = 256) -> float:
    net.eval()
    total = 0.0
    for start in range(0, len(data), batch_size):
        x = normalise_input(data[start : start + batch_size]).to(device)
        y = labels[start : start + batch_size].to(device)
        total += float(F.cross_entropy(margin_head(net(x), y), y, reduction="sum"))
    net.train()
    return total / max(1, len(data))


def train_encoder_on_faces(
    faces: pd.DataFrame,
    results_dir: str | Path,
    arch: str,
    out_path: str | Path,
    split: str | None = "train",
    *,
    far: bool = False,
    distance: int = 3,
    face_fraction: float = 1.0,
    degradation: str = "classical",
    generator: str | Path | None = None,
    seed: int = 0,
    **train_kwargs,
) -> TrainedEncoder:
    """:func:`train_encoder` on the usable crops (``ok``, ``crop_path`` relative to
    ``results_dir``) of the faces-table rows of ``split`` (all rows when None), labelled by
    ``subject_id``, in image-id order.

    ``far``: train on the crops seen far away (the Exposure paper's far-trained encoders),
    degraded exactly as the ranking degrades probes (:func:`~fairforge.encoders.crops.far_view`,
    same seeds): by ``degradation`` ``classical``, the far chain at ``distance``
    (``face_fraction`` is the share of the crop width the face spans), or ``learned``, the
    near-to-far generator of checkpoint ``generator``.
    """
    rows = faces
    if "ok" in rows.columns:
        rows = rows[rows["ok"].astype(bool)]
    if split is not None:
        rows = rows[rows["split"] == split]
    rows = rows[rows["crop_path"].notna()].sort_values("image_id", kind="stable")
    if rows.empty:
        raise ValueError(f"no usable face crops in split {split!r} to train an encoder on")
    gen = far_generator(degradation, generator) if far else None
    input_size = train_kwargs.get("input_size") or arch_spec(arch).input_size
    images = list(
        face_images(rows, results_dir, far, distance, seed, input_size, face_fraction, gen)
    )
    return train_encoder(
        images,
        rows["subject_id"].astype(str).tolist(),
        arch,
        out_path=out_path,
        seed=seed,
        **train_kwargs,
    )


def save_encoder_checkpoint(trained: TrainedEncoder, path: str | Path) -> None:
    write_checkpoint(
        path,
        {
            "state_dict": {k: v.detach().cpu() for k, v in trained.model.state_dict().items()},
            "config": dict(trained.config),
            "classes": list(trained.classes),
            "losses": [float(x) for x in trained.losses],
        },
    )
