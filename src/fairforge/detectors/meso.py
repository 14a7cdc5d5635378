"""MesoNet (Afchar et al., WIFS 2018): a shallow CNN on mesoscopic image features.

Meso-4 follows the paper: four conv/BN/pool blocks (8, 8, 16, 16 channels; kernels 3, 5, 5, 5),
a 16-unit hidden layer with dropout, one output. The paper's input is 256 px; any size works
because the last pooling is adaptive (the paper's fixed 8×8 map at 256 px equals it there).
"""

from __future__ import annotations

import torch
from torch import nn

from fairforge.detectors.base import Detector, register


def _block(cin: int, cout: int, kernel: int, pool: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(pool, pool),
    )


@register("meso4")
class Meso4(Detector):
    default_input_size = 256

    def __init__(self, input_size: int = 256, dropout: float = 0.5):
        super().__init__()
        self.input_size = input_size
        self.features = nn.Sequential(
            _block(3, 8, 3, 2),
            _block(8, 8, 5, 2),
            _block(8, 16, 5, 2),
            _block(16, 16, 5, 4),
            nn.AdaptiveAvgPool2d(max(1, input_size // 32)),
        )
        side = max(1, input_size // 32)
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(16 * side * side, 16),
            nn.LeakyReLU(0.1),
            nn.Dropout(dropout),
            nn.Linear(16, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x)).squeeze(1)


class _InceptionLayer(nn.Module):
    """MesoInception's block: parallel 1×1, 3×3 and dilated 3×3 convolutions, concatenated."""

    def __init__(self, cin: int, a: int, b: int, c: int, d: int):
        super().__init__()
        self.branch1 = nn.Conv2d(cin, a, 1)
        self.branch2 = nn.Sequential(
            nn.Conv2d(cin, b, 1), nn.ReLU(inplace=True), nn.Conv2d(b, b, 3, padding=1)
        )
        self.branch3 = nn.Sequential(
            nn.Conv2d(cin, c, 1), nn.ReLU(inplace=True), nn.Conv2d(c, c, 3, padding=2, dilation=2)
        )
        self.branch4 = nn.Sequential(
            nn.Conv2d(cin, d, 1), nn.ReLU(inplace=True), nn.Conv2d(d, d, 3, padding=3, dilation=3)
        )
        self.out = nn.Sequential(
            nn.BatchNorm2d(a + b + c + d), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branches = (self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x))
        return self.out(torch.cat(branches, dim=1))


@register("meso4inception")
class MesoInception4(Detector):
    """MesoInception-4: Meso-4 with its first two blocks replaced by inception layers
    (1, 4, 4, 2 and 2, 4, 4, 2 filters; dilations 1, 2, 3), as in the paper."""

    default_input_size = 256

    def __init__(self, input_size: int = 256, dropout: float = 0.5):
        super().__init__()
        self.input_size = input_size
        side = max(1, input_size // 32)
        self.features = nn.Sequential(
            _InceptionLayer(3, 1, 4, 4, 2),
            _InceptionLayer(11, 2, 4, 4, 2),
            _block(12, 16, 5, 2),
            _block(16, 16, 5, 4),
            nn.AdaptiveAvgPool2d(side),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(16 * side * side, 16),
            nn.LeakyReLU(0.1),
            nn.Dropout(dropout),
            nn.Linear(16, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x)).squeeze(1)
