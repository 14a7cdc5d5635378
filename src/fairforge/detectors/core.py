"""CORE: consistent representation learning (Ni et al., CVPR Workshops 2022).

Xception classifies; during training a second, differently augmented view of every image is
classified too and the two views' representations (ReLU, global average pooling, L2
normalisation) are pulled together: loss = mean BCE of both views + ``consistency_weight`` ·
mean (cos(r1, r2) − 1)², DeepfakeBench's form of the consistency loss.

The second view is made inside :meth:`loss` from the batch tensor: a random crop of 70–100 % of
the side, resized back, and a horizontal flip with probability 1/2, drawn per image from a
generator seeded by the detector's training-step count (deterministic for a seeded run).

Simplifications: the paper augments both views (with its full augmentation list); here the
first view is the image as the loader delivered it (already augmented when the training config
asks for augmentation) and only crop and flip make the second. In eval mode the loss is the
BCE alone.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fairforge.detectors.auxiliary import AuxiliaryLossDetector
from fairforge.detectors.base import DEEPFAKEBENCH_IMAGENET, DETECTORS, stated_start
from fairforge.detectors.xception import (
    XCEPTION_DFB,
    XCEPTION_PRETRAINED,
    xception_features,
    xception_net,
)
from fairforge.seeding import rng_for


def crop_flip_view(
    x: torch.Tensor, rng: np.random.Generator, min_scale: float = 0.7
) -> torch.Tensor:
    """A random square crop (``min_scale``..1 of the side) resized back, flipped with p=1/2,
    per image, as one batched ``grid_sample``."""
    b = x.shape[0]
    scale = rng.uniform(min_scale, 1.0, b)
    cx = rng.uniform(-1.0, 1.0, b) * (1.0 - scale)
    cy = rng.uniform(-1.0, 1.0, b) * (1.0 - scale)
    flip = np.where(rng.random(b) < 0.5, -1.0, 1.0)
    theta = np.zeros((b, 2, 3), dtype=np.float32)
    theta[:, 0, 0] = scale * flip
    theta[:, 1, 1] = scale
    theta[:, 0, 2] = cx
    theta[:, 1, 2] = cy
    grid = F.affine_grid(
        torch.from_numpy(theta).to(x.device, x.dtype), list(x.shape), align_corners=False
    )
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


@DETECTORS.register(
    "core",
    recipe=stated_start("imagenet", DEEPFAKEBENCH_IMAGENET),
    pretrained=XCEPTION_PRETRAINED,
    deepfakebench={"core": XCEPTION_DFB},
)
class CORE(AuxiliaryLossDetector):
    default_input_size = 256

    def __init__(
        self,
        input_size: int = 256,
        consistency_weight: float = 1.0,
        min_crop: float = 0.7,
        drop_rate: float = 0.0,
        seed: int = 0,
    ):
        super().__init__()
        self.input_size = input_size
        self.consistency_weight = consistency_weight
        self.min_crop = min_crop
        self.seed = seed
        self.steps = 0
        self.backbone = xception_net(drop_rate=drop_rate)

    def _classify(self, x: torch.Tensor):
        f = xception_features(self.backbone, x)
        representation = F.normalize(F.adaptive_avg_pool2d(f, 1).flatten(1), dim=1)
        return self.backbone.forward_head(f).squeeze(1), representation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, representation = self._classify(x)
        return self._keep(logits, image=x, representation=representation)

    def loss(self, logits, labels, batch=None):
        out = self._outputs_for(logits)
        target = labels.float()
        bce = F.binary_cross_entropy_with_logits(logits, target)
        if not self.training:
            return bce
        self.steps += 1
        view = crop_flip_view(
            out["image"], rng_for(self.seed, "core-view", self.steps), self.min_crop
        )
        logits2, representation2 = self._classify(view)
        cos = (out["representation"] * representation2).sum(dim=1)
        bce2 = F.binary_cross_entropy_with_logits(logits2, target)
        return 0.5 * (bce + bce2) + self.consistency_weight * ((cos - 1.0) ** 2).mean()
