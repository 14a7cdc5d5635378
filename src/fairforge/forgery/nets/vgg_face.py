"""VGG-Face (Parkhi et al. 2015) as a feature extractor: the fc7 activations of a face image.

The parameters carry the names of ``vgg_face_dag.pth`` (Albanie's PyTorch conversion of the
Oxford VGG-Face model: ``conv1_1`` ... ``conv5_3``, ``fc6``, ``fc7``, ``fc8``), so that file
loads as it is published. The network is torchvision's VGG-16 layout (configuration "D")
with 2622 classes, which is how the Dual-Generator release builds it (``network/vgg.py``):
3x3 convolutions with ReLU, 2x2 max pooling after each stage, an adaptive average pool to
7x7 before the classifier, so any input size above 32 px gives a 4096-d code.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# (stage, convolutions, channels) of VGG-16
STAGES = ((1, 2, 64), (2, 2, 128), (3, 3, 256), (4, 3, 512), (5, 3, 512))
CLASSES = 2622


class VGGFace(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        channels = 3
        self.conv_names: list[str] = []
        for stage, count, width in STAGES:
            for i in range(1, count + 1):
                name = f"conv{stage}_{i}"
                self.add_module(name, nn.Conv2d(channels, width, 3, padding=1))
                self.conv_names.append(name)
                channels = width
        self.fc6 = nn.Linear(512 * 7 * 7, 4096)
        self.fc7 = nn.Linear(4096, 4096)
        self.fc8 = nn.Linear(4096, CLASSES)  # in the file; the features stop at fc7

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) normalised images -> (B, 4096) fc7 activations after ReLU."""
        for stage, count, _ in STAGES:
            for i in range(1, count + 1):
                x = F.relu(getattr(self, f"conv{stage}_{i}")(x))
            x = F.max_pool2d(x, 2, 2)
        x = F.adaptive_avg_pool2d(x, (7, 7)).flatten(1)
        return F.relu(self.fc7(F.relu(self.fc6(x))))
