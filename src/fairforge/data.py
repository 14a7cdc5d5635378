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
    ):
        self.frame = frame.reset_index(drop=True)
        self.root = Path(root)
        self.input_size = int(input_size)
        self.mean, self.std = tuple(mean), tuple(std)
        self.variant = variant
        self.variant_options = variant_options or {}
        self.augment = augment
        self.seed = seed
        self.mask_column = mask_column
        self._apply_variant = None
        if variant != "clean":
            from fairforge.perturb import apply_variant

            self._apply_variant = apply_variant

    def __len__(self) -> int:
        return len(self.frame)

    def __getitem__(self, key: int | tuple[int, int] | tuple[int, int, int]) -> dict:
        """Item ``key``: an index, ``(epoch, index)`` or ``(epoch, index, batch)`` from
        :class:`EpochSampler` (the augmentation of a sample depends on the epoch; a bare
        index is epoch 0). With the batch, an augmentation that decides per batch (SDAug's
        noise step) takes the batch's decision, drawn from ``(seed, epoch, batch)``, so every
        image of a batch shares it whatever the worker that loads it."""
        key = key if isinstance(key, tuple) else (0, key)
        epoch, index = key[0], key[1]
        row = self.frame.iloc[index]
        img = read_image(self.root / row["path"])
        if self._apply_variant is not None:
            img = self._apply_variant(img, self.variant, row["sample_id"], self.variant_options)
        if self.augment is not None:
            rng = rng_for(self.seed, "augment", epoch, row["sample_id"])
            decide = getattr(self.augment, "batch_noise_fires", None)
            if len(key) == 3 and decide is not None:
                batch_rng = rng_for(self.seed, "augment_batch", epoch, key[2])
                img = self.augment(img, rng, decide(batch_rng))
            else:
                img = self.augment(img, rng)
        item = {
            "image": to_tensor(img, self.input_size, self.mean, self.std),
            "label": torch.tensor(int(row["label"]), dtype=torch.long),
            "index": index,
        }
        if self.mask_column:
            item["mask"] = self._mask(row)
        return item

    def _mask(self, row) -> torch.Tensor:
        rel = row.get(self.mask_column)
        size = self.input_size
        if isinstance(rel, str) and rel:
            mask = read_mask(self.root / rel)
            mask = cv2.resize(mask, (size, size), interpolation=cv2.INTER_AREA)
            return torch.from_numpy(mask).float().div_(255.0).unsqueeze(0)
        return torch.zeros(1, size, size)


class EpochSampler(Sampler):
    """The indices of ``base`` (e.g. a ``RandomSampler``) as ``(epoch, index)`` pairs, or,
    given the loader's ``batch_size``, ``(epoch, index, batch)`` triples.

    The sampler runs in the main process, so :meth:`set_epoch` reaches every item even when
    the loader's workers are persistent: each worker receives the epoch with the index.
    """

    def __init__(self, base: Sampler, epoch: int = 0, batch_size: int | None = None):
        self.base = base
        self.epoch = epoch
        self.batch_size = batch_size

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self):
        epoch, size = self.epoch, self.batch_size
        if size is None:
            return ((epoch, int(i)) for i in self.base)
        # the loader's batches are consecutive runs of ``batch_size`` keys: position // size
        return ((epoch, int(i), k // size) for k, i in enumerate(self.base))
