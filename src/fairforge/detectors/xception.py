"""Xception (Chollet, CVPR 2017) as the FaceForensics++ baseline (Rössler et al., ICCV 2019).

The network is timm's ``legacy_xception`` (the Cadene/FaceForensics++ port that DeepfakeBench
also uses, with identical parameter names) with a single-logit head, so DeepfakeBench
checkpoints load onto it (:mod:`fairforge.detectors.deepfakebench`). Weights start random
(``pretrained=False``); the papers start from ImageNet weights, which matters for accuracy but
not for the protocol. The network is size-agnostic: 64 px inputs reach the exit flow as 2×2 maps.

The stage helpers below let the Xception-based detectors (FFD, RECCE, UCF, CORE, SPSL, F3Net,
patch Xception) run parts of the same network without re-implementing it.
"""

from __future__ import annotations

import torch
from torch import nn

from fairforge.detectors.base import Detector, register

STEM = ("conv1", "bn1", "act1", "conv2", "bn2", "act2")
ENTRY = ("block1", "block2", "block3")  # to 728 channels, stride 16
MIDDLE = tuple(f"block{i}" for i in range(4, 12))  # eight 728-channel blocks
EXIT = ("block12", "conv3", "bn3", "act3", "conv4", "bn4", "act4")  # to 2048 channels, stride 32
FEATURE_CHANNELS = 2048


def xception_net(in_chans: int = 3, num_classes: int = 1, drop_rate: float = 0.0) -> nn.Module:
    """A randomly initialised ``legacy_xception``; nothing is downloaded."""
    import timm  # see fairforge.detectors

    return timm.create_model(
        "legacy_xception",
        pretrained=False,
        in_chans=in_chans,
        num_classes=num_classes,
        drop_rate=drop_rate,
    )


def run_stages(net: nn.Module, x: torch.Tensor, names) -> torch.Tensor:
    for name in names:
        x = getattr(net, name)(x)
    return x


def xception_features(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The (B, 2048, h, w) feature map before pooling (after the final ReLU)."""
    return run_stages(net, x, STEM + ENTRY + MIDDLE + EXIT)


@register("xception")
class XceptionDetector(Detector):
    default_input_size = 256  # DeepfakeBench's resolution; FaceForensics++ used 299

    def __init__(self, input_size: int = 256, drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.backbone = xception_net(drop_rate=drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x).squeeze(1)
