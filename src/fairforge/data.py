"""Torch datasets over manifests: decode, perturb or augment, resize, normalise.

Perturbations (test-time variants) and augmentations (training) are seeded per sample, from
``(sample_id, variant)`` and ``(seed, epoch, sample_id)``, so results do not depend on worker
count or batch order. The epoch travels with each index (:class:`EpochSampler` yields
``(epoch, index)``), never as dataset state: persistent worker processes hold a copy of the
dataset made before the first epoch, so an epoch set on the dataset would never reach them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset, Sampler

from fairforge.images import read_image, read_mask
from fairforge.seeding import rng_for


def to_tensor(img: np.ndarray, size: int, mean, std) -> torch.Tensor:
    """uint8 RGB HxWx3 → normalised float CHW at ``size``×``size``."""
    if img.shape[0] != size or img.shape[1] != size:
        interp = cv2.INTER_AREA if img.shape[0] > size else cv2.INTER_LINEAR
        img = cv2.resize(img, (size, size), interpolation=interp)
    x = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).float().div_(255.0)
    m = torch.tensor(mean, dtype=torch.float32).view(3, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).view(3, 1, 1)
    return (x - m) / s


class FaceDataset(Dataset):
    """Samples of a manifest (``sample_id``, ``path``, ``label``), paths relative to ``root``.

    ``variant`` is a test-time condition (``clean`` or ``op@level``); ``augment`` a training
    transform called as ``augment(image, rng)``. ``mask_column`` adds the manipulation mask
    (zeros for real samples) for detectors that learn from it.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        root: str | Path,
        input_size: int,
        mean,
        std,
        variant: str = "clean",
        augment: Callable | None = None,
        seed: int = 0,
        mask_column: str | None = None,
        variant_options: dict | None = None,
        augment_prob: float = 1.0,
        augment_warmup: int = 0,
    ):
        self.frame = frame.reset_index(drop=True)
        self.root = Path(root)
        self.input_size = int(input_size)
        self.mean, self.std = tuple(mean), tuple(std)
        self.variant = variant
        self.variant_options = variant_options or {}
        self.augment = augment
        self.augment_prob = float(augment_prob)
        self.augment_warmup = int(augment_warmup)
        self.seed = seed
        self.mask_column = mask_column
        self._apply_variant = None
        if variant != "clean":
            from fairforge.perturb import apply_variant

            self._apply_variant = apply_variant

    def __len__(self) -> int:
        return len(self.frame)

    def __getitem__(self, key: int | tuple[int, int]) -> dict:
        """Item ``key``: an index, or ``(epoch, index)`` from :class:`EpochSampler` (the
        augmentation of a sample depends on the epoch; a bare index is epoch 0)."""
        epoch, index = key if isinstance(key, tuple) else (0, key)
        row = self.frame.iloc[index]
        img = read_image(self.root / row["path"])
        if self._apply_variant is not None:
            img = self._apply_variant(img, self.variant, row["sample_id"], self.variant_options)
        mask = self._read_mask(row, img.shape[:2]) if self.mask_column else None
        if self.augment is not None and epoch > self.augment_warmup:
            rng = rng_for(self.seed, "augment", epoch, row["sample_id"])
            if self.augment_prob >= 1.0 or rng.random() < self.augment_prob:
                img, mask = self._augment(img, mask, rng)
        item = {
            "image": to_tensor(img, self.input_size, self.mean, self.std),
            "label": torch.tensor(int(row["label"]), dtype=torch.long),
            "index": index,
        }
        if mask is not None:
            mask = cv2.resize(mask, (self.input_size,) * 2, interpolation=cv2.INTER_AREA)
            item["mask"] = torch.from_numpy(mask).float().div_(255.0).unsqueeze(0)
        return item

    def _augment(self, img, mask, rng):
        """The augmentation of one image; a geometric one (flip, rotation: it has
        ``plan``/``apply``/``apply_geometry``) moves the mask with the face."""
        if mask is None or not hasattr(self.augment, "apply_geometry"):
            return self.augment(img, rng), mask
        plan = self.augment.plan(rng)
        return self.augment.apply(img, plan), self.augment.apply_geometry(mask, plan)

    def _read_mask(self, row, shape) -> np.ndarray:
        """The manipulation mask at the image's size (zeros for a real sample)."""
        rel = row.get(self.mask_column)
        if isinstance(rel, str) and rel:
            mask = read_mask(self.root / rel)
            if mask.shape[:2] != tuple(shape):
                mask = cv2.resize(mask, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
            return mask
        return np.zeros(shape, dtype=np.uint8)


class EpochSampler(Sampler):
    """The indices of ``base`` (e.g. a ``RandomSampler``) as ``(epoch, index)`` pairs.

    The sampler runs in the main process, so :meth:`set_epoch` reaches every item even when
    the loader's workers are persistent: each worker receives the epoch with the index.
    """

    def __init__(self, base: Sampler, epoch: int = 0):
        self.base = base
        self.epoch = epoch

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self):
        epoch = self.epoch
        return ((epoch, int(i)) for i in self.base)


class BalancedBatchSampler(Sampler):
    """Class-balanced batches of ``(epoch, index)``: each batch holds ``batch_size / 2``
    real and as many fake samples (Patch-Forensics' 16 + 16).

    Each class is drawn without replacement from a permutation per pass, seeded by
    ``(seed, epoch, label, pass)``; the smaller class starts a new pass when it runs out
    (it is oversampled). An epoch has as many batches as the larger class needs, so every
    sample of it is seen once per epoch. Use it as a loader's ``batch_sampler``.
    """

    def __init__(self, labels, batch_size: int, seed: int = 0, epoch: int = 0):
        if batch_size < 2 or batch_size % 2:
            raise ValueError(f"balanced batches need an even batch_size >= 2, got {batch_size}")
        labels = np.asarray(labels)
        self.by_label = [np.flatnonzero(labels == lbl) for lbl in (0, 1)]
        if any(len(idx) == 0 for idx in self.by_label):
            raise ValueError("balanced batches need both real (0) and fake (1) samples")
        self.half = batch_size // 2
        self.seed = seed
        self.epoch = epoch

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-max(len(idx) for idx in self.by_label) // self.half)

    def _stream(self, label: int, count: int) -> np.ndarray:
        idx, out, n = self.by_label[label], [], 0
        while sum(len(o) for o in out) < count:
            rng = rng_for(self.seed, "balanced", self.epoch, label, n)
            out.append(idx[rng.permutation(len(idx))])
            n += 1
        return np.concatenate(out)[:count]

    def __iter__(self):
        epoch, n = self.epoch, len(self) * self.half
        real, fake = self._stream(0, n), self._stream(1, n)
        for b in range(len(self)):
            part = slice(b * self.half, (b + 1) * self.half)
            yield [(epoch, int(i)) for i in (*real[part], *fake[part])]
