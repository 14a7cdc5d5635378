"""SRM high-frequency features (Luo et al., "Generalizing Face Forgery Detection with
High-frequency Features", CVPR 2021).

Three fixed SRM high-pass kernels (Fridrich & Kodovský's steganalysis residuals: the 3×3
second-order "KB" kernel, the 5×5 "KV" kernel and a 1-D second difference, each applied to
all colour channels and summed, then clipped to [-3, 3]) give a 3-channel noise residual.
RGB and residual are stacked into a 6-channel input of a timm backbone (``resnet18`` by
default, small enough for CPU runs; ``backbone`` takes any timm name).

Simplifications: the paper runs two Xception streams (RGB and SRM) with multi-scale SRM
features, a dual cross-modality attention module and spatial attention; here the streams
are fused at the input of one network.
"""

from __future__ import annotations

import timm
import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.base import IMAGENET_MEAN, IMAGENET_STD, Detector, register


def srm_kernels() -> torch.Tensor:
    """(3, 3, 5, 5): three SRM kernels, each repeated over the three input channels."""
    kb = (
        torch.tensor(
            [
                [0, 0, 0, 0, 0],
                [0, -1, 2, -1, 0],
                [0, 2, -4, 2, 0],
                [0, -1, 2, -1, 0],
                [0, 0, 0, 0, 0],
            ],
            dtype=torch.float32,
        )
        / 4.0
    )
    kv = (
        torch.tensor(
            [
                [-1, 2, -2, 2, -1],
                [2, -6, 8, -6, 2],
                [-2, 8, -12, 8, -2],
                [2, -6, 8, -6, 2],
                [-1, 2, -2, 2, -1],
            ],
            dtype=torch.float32,
        )
        / 12.0
    )
    second = (
        torch.tensor(
            [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, -2, 1, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]],
            dtype=torch.float32,
        )
        / 2.0
    )
    return torch.stack([kb, kv, second])[:, None].repeat(1, 3, 1, 1)


class SRMFilter(nn.Module):
    """Fixed (non-trainable) SRM residuals, clipped to [-clip, clip]."""

    def __init__(self, clip: float = 3.0):
        super().__init__()
        self.register_buffer("weight", srm_kernels())
        self.clip = clip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight, padding=2).clamp(-self.clip, self.clip)


@register("srm")
class SRMDetector(Detector):
    default_input_size = 256
    precision = "fp32"  # high-pass residuals
    mean = IMAGENET_MEAN
    std = IMAGENET_STD

    def __init__(self, input_size: int = 256, backbone: str = "resnet18", drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.srm = SRMFilter()
        self.backbone = timm.create_model(
            backbone, pretrained=False, in_chans=6, num_classes=1, drop_rate=drop_rate
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(torch.cat([x, self.srm(x)], dim=1)).squeeze(1)
