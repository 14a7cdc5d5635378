"""Face-recognition ResNets built from improved-residual (IR) units, as FaceX-Zoo trains them.

The Exposure paper's "ResNet152" is FaceX-Zoo's ``ResNet`` backbone at depth 152, which its
training configuration builds with squeeze-and-excitation units (``net_mode: ir_se``; its
model zoo lists it as ResNet152-irse). This is not the ImageNet ResNet-152: it keeps the
112 px face at full resolution through a 3×3 stem and ends in a layer that keeps where
features are instead of pooling them away.

- Stem: 3×3 convolution (stride 1), BN, PReLU, 64 channels at 112×112.
- Four stages of 64, 128, 256 and 512 channels; the first unit of each halves the map, so a
  112 px face ends at 7×7. Units per stage: 50 → 3, 4, 14, 3; 100 → 3, 13, 30, 3;
  152 → 3, 8, 36, 3.
- IR unit: residual BN – 3×3 conv – PReLU – 3×3 conv (the stride is here) – BN, then, in
  ``ir_se`` units, a squeeze-and-excitation gate (global average, 1×1 conv to C/16, ReLU,
  1×1 conv back to C, sigmoid); the shortcut is the input subsampled at the stride, or a 1×1
  convolution and BN where the channels change.
- Output layer: BN – dropout (0.4) – flatten – linear (512 · 7 · 7 → 512) – BN.

Parameters at 112 px and 512-d (PReLU slopes and BN affine weights included):
``ir_se152`` 71.15M (FaceX-Zoo lists 71.14M), ``ir152`` 70.74M, ``ir_se50`` 43.80M,
``ir50`` 43.57M.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from fairforge.encoders.base import BACKBONES

#: Units per stage for each published depth.
DEPTHS = {50: (3, 4, 14, 3), 100: (3, 13, 30, 3), 152: (3, 8, 36, 3)}
CHANNELS = (64, 128, 256, 512)
SE_REDUCTION = 16


class SqueezeExcite(nn.Module):
    """Channel gate: global average, bottleneck of C/16, sigmoid weights per channel."""

    def __init__(self, channels: int, reduction: int = SE_REDUCTION):
        super().__init__()
        hidden = max(1, channels // reduction)
        self.gate = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(channels, hidden, 1, bias=False),
            nn.ReLU(inplace=True),
            nn.Conv2d(hidden, channels, 1, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(x)


class IRUnit(nn.Module):
    """Improved residual unit: BN – conv3×3 – PReLU – conv3×3 (stride) – BN [– SE]."""

    def __init__(self, cin: int, cout: int, stride: int, se: bool):
        super().__init__()
        layers: list[nn.Module] = [
            nn.BatchNorm2d(cin),
            nn.Conv2d(cin, cout, 3, 1, 1, bias=False),
            nn.PReLU(cout),
            nn.Conv2d(cout, cout, 3, stride, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if se:
            layers.append(SqueezeExcite(cout))
        self.residual = nn.Sequential(*layers)
        if cin == cout:
            # the input sampled every `stride` pixels (identity at stride 1)
            self.shortcut: nn.Module = nn.MaxPool2d(1, stride)
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shortcut(x) + self.residual(x)


class IResNet(nn.Module):
    """The IR / IR-SE face ResNet (see the module docstring); ``units`` per stage (default
    depth 152), ``se`` for squeeze-and-excitation units, ``width`` scales the channels
    (64 · width … 512 · width; tests and CPUs)."""

    def __init__(
        self,
        units: Sequence[int] = DEPTHS[152],
        se: bool = True,
        embedding_dim: int = 512,
        input_size: int = 112,
        width: float = 1.0,
        dropout: float = 0.4,
    ):
        super().__init__()
        if input_size % 16:
            raise ValueError(f"IResNet needs an input size divisible by 16, got {input_size}")
        if len(units) != 4 or min(units) < 1:
            raise ValueError(f"IResNet needs four stages of at least one unit, got {units}")
        channels = [max(4, int(round(c * width))) for c in CHANNELS]
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels[0], 3, 1, 1, bias=False),
            nn.BatchNorm2d(channels[0]),
            nn.PReLU(channels[0]),
        )
        body: list[nn.Module] = []
        cin = channels[0]
        for n, cout in zip(units, channels):
            body += [
                IRUnit(cin if i == 0 else cout, cout, 2 if i == 0 else 1, se) for i in range(n)
            ]
            cin = cout
        self.body = nn.Sequential(*body)
        side = input_size // 16
        self.output = nn.Sequential(
            nn.BatchNorm2d(cin),
            nn.Dropout(dropout),
            nn.Flatten(),
            nn.Linear(cin * side * side, embedding_dim),
            nn.BatchNorm1d(embedding_dim),
        )
        self.num_features = embedding_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.body(self.stem(x)))


#: Backbone name -> (units per stage, squeeze-and-excitation, width). ``_small`` is the same
#: network at a quarter of the channels (tests, CPUs).
IR_NETS = {
    **{f"ir{d}": (units, False, 1.0) for d, units in DEPTHS.items()},
    **{f"ir_se{d}": (units, True, 1.0) for d, units in DEPTHS.items()},
    "ir_se152_small": (DEPTHS[152], True, 0.25),
}


def build_iresnet(name: str, embedding_dim: int = 512, input_size: int = 112) -> IResNet:
    units, se, width = IR_NETS[name]
    return IResNet(units, se, embedding_dim, input_size, width)


for _name in IR_NETS:
    BACKBONES.register(_name, build_iresnet, family="iresnet")
