"""EfficientNet-B4 (Tan & Le, ICML 2019), the classifier of Self-Blended Images (Shiohara &
Yamasaki, CVPR 2022).

timm's ``efficientnet_b4`` with one logit. SBI trains it at 380 px on self-blended real images;
the self-blending is a training-data method, not part of the network, and is not done here
(train it on whatever ``train_methods`` the config gives). ``backbone`` picks another timm
EfficientNet (``efficientnet_b0`` for CPU-sized runs). Weights start random; SBI starts from
ImageNet weights.
"""

from __future__ import annotations

import timm
import torch

from fairforge.detectors.base import IMAGENET_MEAN, IMAGENET_STD, Detector, register


@register("efficientnet_b4")
class EfficientNetB4(Detector):
    default_input_size = 380
    mean = IMAGENET_MEAN
    std = IMAGENET_STD

    def __init__(
        self, input_size: int = 380, backbone: str = "efficientnet_b4", drop_rate: float = 0.2
    ):
        super().__init__()
        self.input_size = input_size
        self.backbone = timm.create_model(
            backbone, pretrained=False, num_classes=1, drop_rate=drop_rate
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x).squeeze(1)
