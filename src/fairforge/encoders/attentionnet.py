"""The Residual Attention Network (Wang et al. 2017) for faces, as FaceX-Zoo trains it: the
Exposure paper's AttentionNet (FaceX-Zoo's configuration: one attention module per stage,
Attention-56).

- Stem: 7×7 convolution (stride 2), BN, ReLU: a 112 px face becomes 64 × 56×56.
- A residual unit to 256 channels, then the stage-1 attention modules (56×56, mask of three
  max-pool halvings); a stride-2 unit to 512 and the stage-2 modules (28×28, two halvings);
  a stride-2 unit to 1024 and the stage-3 modules (14×14, one halving); a stride-2 unit to
  2048 and two more units at 7×7.
- Residual unit: pre-activation bottleneck (BN – ReLU – 1×1 conv to C/4 – BN – ReLU – 3×3
  conv (stride) – BN – ReLU – 1×1 conv to C); where the shape changes the shortcut is a 1×1
  convolution of the pre-activated input.
- Attention module: a unit, then a trunk T of two units and a soft mask M in [0, 1]; the
  output is a unit applied to (1 + M) · T (attention residual learning: the mask can only
  enhance the trunk). The mask goes down ``depth`` times (3×3 max pool, stride 2, then a unit;
  two units at the bottom; a skip unit at every scale but the bottom) and back up (bilinear,
  corners aligned), adding at each scale the level's own activation and its skip before a
  unit, and the trunk at the top; then BN – ReLU – 1×1 conv – BN – ReLU – 1×1 conv – sigmoid.
- Output layer: flatten – linear (2048 · 7 · 7 → 512, no bias) – BN.

Parameters at 112 px and 512-d: Attention-56 81.14M, Attention-92 101.79M. FaceX-Zoo lists
98.96M for Attention-56: each of its residual units also holds a 1×1 projection where the
shape does not change, which it never uses (17.83M of them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.encoders.base import BACKBONES

CHANNELS = (64, 256, 512, 1024, 2048)
#: Max-pool halvings of the soft mask in stages 1, 2 and 3.
MASK_DEPTHS = (3, 2, 1)


class PreActUnit(nn.Module):
    """Pre-activation bottleneck residual unit; a 1×1 projection of the pre-activated input
    where the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        mid = max(1, cout // 4)
        self.pre = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True))
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, 3, stride, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid, cout, 1, bias=False),
        )
        self.project = (
            nn.Conv2d(cin, cout, 1, stride, bias=False) if stride != 1 or cin != cout else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        activated = self.pre(x)
        shortcut = x if self.project is None else self.project(activated)
        return shortcut + self.body(activated)


def _units(channels: int, n: int) -> nn.Sequential:
    return nn.Sequential(*(PreActUnit(channels, channels) for _ in range(n)))


def _resize(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return F.interpolate(x, size=like.shape[-2:], mode="bilinear", align_corners=True)


class AttentionModule(nn.Module):
    """Trunk of two units and a soft mask whose hourglass pools ``depth`` times; the
    output is ``last((1 + mask) · trunk)``."""

    def __init__(self, channels: int, depth: int):
        super().__init__()
        if depth < 1:
            raise ValueError(f"an attention mask pools at least once, got depth {depth}")
        self.depth = depth
        self.first = PreActUnit(channels, channels)
        self.trunk = _units(channels, 2)
        # down[k] follows the k-th max pool; the bottom one has two units
        self.down = nn.ModuleList(
            _units(channels, 2 if k == depth - 1 else 1) for k in range(depth)
        )
        self.skip = nn.ModuleList(_units(channels, 1) for _ in range(depth - 1))
        self.up = nn.ModuleList(_units(channels, 1) for _ in range(depth - 1))
        self.mask_head = nn.Sequential(
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 1, bias=False),
            nn.Sigmoid(),
        )
        self.last = PreActUnit(channels, channels)

    def mask(self, x: torch.Tensor, trunk: torch.Tensor) -> torch.Tensor:
        levels, skips = [], []
        for k in range(self.depth):
            x = self.down[k](F.max_pool2d(x, 3, 2, 1))
            levels.append(x)
            if k < self.depth - 1:
                skips.append(self.skip[k](x))
        for k in reversed(range(self.depth - 1)):
            x = self.up[k](_resize(x, levels[k]) + levels[k] + skips[k])
        return self.mask_head(_resize(x, trunk) + trunk)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.first(x)
        trunk = self.trunk(x)
        return self.last((1.0 + self.mask(x, trunk)) * trunk)


class AttentionNet(nn.Module):
    """Residual Attention Network for faces (see the module docstring); ``modules``
    attention modules per stage ((1, 1, 1): Attention-56, (1, 2, 3): Attention-92);
    ``width`` scales the channels (64 · width … 2048 · width; tests and CPUs)."""

    def __init__(
        self,
        embedding_dim: int = 512,
        input_size: int = 112,
        modules: tuple[int, int, int] = (1, 1, 1),
        width: float = 1.0,
    ):
        super().__init__()
        if input_size % 16:
            raise ValueError(f"AttentionNet needs an input size divisible by 16, got {input_size}")
        c = [max(4, int(round(ch * width))) for ch in CHANNELS]
        layers: list[nn.Module] = [
            nn.Conv2d(3, c[0], 7, 2, 3, bias=False),
            nn.BatchNorm2d(c[0]),
            nn.ReLU(inplace=True),
        ]
        cin = c[0]
        for stage, (n, depth) in enumerate(zip(modules, MASK_DEPTHS)):
            layers.append(PreActUnit(cin, c[stage + 1], stride=1 if stage == 0 else 2))
            cin = c[stage + 1]
            layers += [AttentionModule(cin, depth) for _ in range(int(n))]
        layers += [PreActUnit(cin, c[4], 2), PreActUnit(c[4], c[4]), PreActUnit(c[4], c[4])]
        self.features = nn.Sequential(*layers)
        side = input_size // 16
        self.output = nn.Sequential(
            nn.Flatten(),
            nn.Linear(c[4] * side * side, embedding_dim, bias=False),
            nn.BatchNorm1d(embedding_dim),
        )
        self.num_features = embedding_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.features(x))


#: Backbone name -> (attention modules per stage, width). ``attention56_small`` is the same
#: network at a quarter of the channels (tests, CPUs).
ATTENTION_NETS = {
    "attention56": ((1, 1, 1), 1.0),
    "attention92": ((1, 2, 3), 1.0),
    "attention56_small": ((1, 1, 1), 0.25),
}


def build_attentionnet(name: str, embedding_dim: int = 512, input_size: int = 112) -> AttentionNet:
    modules, width = ATTENTION_NETS[name]
    return AttentionNet(embedding_dim, input_size, modules, width)


for _name in ATTENTION_NETS:
    BACKBONES.register(_name, build_attentionnet, family="attentionnet")
