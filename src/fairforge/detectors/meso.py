"""MesoNet (Afchar et al., WIFS 2018): a shallow CNN on mesoscopic image features.

Meso-4 follows the paper: four conv/BN/pool blocks (8, 8, 16, 16 channels; kernels 3, 5, 5, 5),
a 16-unit hidden layer with dropout, one output. The paper's input is 256 px; any size works
because the last pooling is adaptive (the paper's fixed 8×8 map at 256 px equals it there).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.base import (
    BENCHMARK_APP_A,
    BENCHMARK_TABLE_3,
    DETECTORS,
    DeepfakeBenchLayout,
    Detector,
)
from fairforge.recipes import Recipe, cited


def _benchmark_recipe(gflops: str) -> Recipe:
    """MesoNet's training as the Benchmark paper restates it (App. A), at Table 3's size."""
    return Recipe(
        optimizer="adam",
        lr=1e-3,
        batch_size=75,
        schedule="step",
        gamma=0.1,
        input_size=256,
        init="random",
        source=BENCHMARK_APP_A,
        cite={
            **cited(
                BENCHMARK_APP_A,
                "optimizer",
                "lr",
                "batch_size",
                "gamma",
                schedule="divided by 10 every adaptive number of iterations, down to 1e-6",
            ),
            **cited(BENCHMARK_TABLE_3, input_size=f"{gflops} GFLOPs: 256 px"),
            "init": "paper:MesoNet (Afchar et al. 2018): trained from scratch",
        },
    )


#: DeepfakeBench's MesoNets: the network under ``backbone.``, its two-class ``fc2``.
_MESO_DFB = DeepfakeBenchLayout(((r"^backbone\.(.+)$", r"\1"),), head="fc2")
#: DeepfakeBench's MesoNet configs start from random weights, as the paper does.
_MESO_DFB_RECIPE = Recipe(
    init="random", source="DeepfakeBench", cite={"init": "DeepfakeBench: no pretrained MesoNet"}
)


def _block(cin: int, cout: int, kernel: int, pool: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(pool, pool),
    )


@DETECTORS.register("meso4", recipe=_benchmark_recipe("0.12"))
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


@DETECTORS.register("meso4inception", recipe=_benchmark_recipe("0.11"))
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


@DETECTORS.register("meso4_dfb", recipe=_MESO_DFB_RECIPE, deepfakebench={"meso4": _MESO_DFB})
class Meso4DFB(Detector):
    """Meso-4 exactly as DeepfakeBench builds it (``training/networks/mesonet.py``), so its
    checkpoints load: convolutions without bias, each followed by ReLU and then BatchNorm, as
    in the original Keras model, but with one BatchNorm shared by the first two blocks and
    one by the last two (DeepfakeBench's layout), and a flattened (input/32)² map. Attribute
    names are DeepfakeBench's. ``meso4`` keeps the demo's conv-BN-ReLU form with a BatchNorm
    per block; the parameter counts differ by 48 BN parameters and one head row."""

    default_input_size = 256

    def __init__(self, input_size: int = 256, dropout: float = 0.5):
        super().__init__()
        if input_size % 32:
            raise ValueError(f"meso4_dfb needs an input size divisible by 32, got {input_size}")
        self.input_size = input_size
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 5, padding=2, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.conv3 = nn.Conv2d(8, 16, 5, padding=2, bias=False)
        self.conv4 = nn.Conv2d(16, 16, 5, padding=2, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.fc1 = nn.Linear(16 * (input_size // 32) ** 2, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu, pool = F.relu, F.max_pool2d
        x = pool(self.bn1(relu(self.conv1(x))), 2)
        x = pool(self.bn1(relu(self.conv2(x))), 2)
        x = pool(self.bn2(relu(self.conv3(x))), 2)
        x = pool(self.bn2(relu(self.conv4(x))), 4).flatten(1)
        x = F.leaky_relu(self.fc1(self.dropout(x)), 0.1)
        return self.fc2(self.dropout(x)).squeeze(1)


@DETECTORS.register(
    "meso4inception_dfb", recipe=_MESO_DFB_RECIPE, deepfakebench={"meso4Inception": _MESO_DFB}
)
class MesoInception4DFB(Detector):
    """MesoInception-4 exactly as DeepfakeBench builds it, so its checkpoints load: inception
    convolutions without bias or inner ReLU, BatchNorm then max-pooling after each inception
    layer, and the two 5×5 blocks sharing one BatchNorm (conv, ReLU, BN). Attribute names are
    DeepfakeBench's (``Incption1_conv2_1`` …)."""

    default_input_size = 256

    def __init__(self, input_size: int = 256, dropout: float = 0.5):
        super().__init__()
        if input_size % 32:
            raise ValueError(
                f"meso4inception_dfb needs an input size divisible by 32, got {input_size}"
            )
        self.input_size = input_size
        for layer, cin, a in ((1, 3, 1), (2, 11, 2)):
            p = f"Incption{layer}_"
            setattr(self, p + "conv1", nn.Conv2d(cin, a, 1, bias=False))
            setattr(self, p + "conv2_1", nn.Conv2d(cin, 4, 1, bias=False))
            setattr(self, p + "conv2_2", nn.Conv2d(4, 4, 3, padding=1, bias=False))
            setattr(self, p + "conv3_1", nn.Conv2d(cin, 4, 1, bias=False))
            setattr(self, p + "conv3_2", nn.Conv2d(4, 4, 3, padding=2, dilation=2, bias=False))
            setattr(self, p + "conv4_1", nn.Conv2d(cin, 2, 1, bias=False))
            setattr(self, p + "conv4_2", nn.Conv2d(2, 2, 3, padding=3, dilation=3, bias=False))
            setattr(self, p + "bn", nn.BatchNorm2d(a + 10))
        self.conv1 = nn.Conv2d(12, 16, 5, padding=2, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 5, padding=2, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.fc1 = nn.Linear(16 * (input_size // 32) ** 2, 16)
        self.fc2 = nn.Linear(16, 1)

    def _inception(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        p = f"Incption{layer}_"
        branches = [getattr(self, p + "conv1")(x)]
        for b in (2, 3, 4):
            branches.append(getattr(self, f"{p}conv{b}_2")(getattr(self, f"{p}conv{b}_1")(x)))
        return F.max_pool2d(getattr(self, p + "bn")(torch.cat(branches, 1)), 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._inception(self._inception(x, 1), 2)
        x = F.max_pool2d(self.bn1(F.relu(self.conv1(x))), 2)
        x = F.max_pool2d(self.bn1(F.relu(self.conv2(x))), 4).flatten(1)
        x = F.leaky_relu(self.fc1(self.dropout(x)), 0.1)
        return self.fc2(self.dropout(x)).squeeze(1)
