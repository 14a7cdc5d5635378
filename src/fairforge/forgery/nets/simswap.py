"""SimSwap's generator (Chen et al., ACM MM 2020; neuralchen/SimSwap, ``models/fs_networks.py``
for 224 px and ``models/fs_networks_512.py`` for 512 px), in the released checkpoints' names.

An encoder of strided convolutions takes the target face to a 512-channel map at 1/8 (224)
or 1/16 (512) of its size; residual blocks there inject the identity (the source's ArcFace
embedding) by adaptive instance normalisation (the *ID injection module*); a decoder of
bilinear upsamplings and convolutions brings it back to an RGB image in [0, 1]. The module
and parameter names, the ``nn.Sequential`` positions inside each block, the parameter-free
instance normalisation (epsilon 1e-8, no affine) and the style's ``x * (1 + scale) + shift``
are the authors', so ``latest_net_G.pth`` and ``550000_net_G.pth`` load with no key renamed.

The two released variants differ only in the 512 one's extra stage at either end (``down0``
and ``up0``, and 32 channels at full resolution). The authors build both with 9 residual
blocks and ``deep=False`` at inference (``models/fs_model.py``); a checkpoint with another
block count or the ``deep`` stage (``down4``/``up4``) is built as its keys say.
"""

from __future__ import annotations

import torch
from torch import nn

LATENT = 512  # ArcFace's embedding size: the identity every style layer reads


class InstanceNorm(nn.Module):
    """Per-channel normalisation over the spatial axes, no affine (the authors' epsilon)."""

    def __init__(self, epsilon: float = 1e-8):
        super().__init__()
        self.epsilon = epsilon

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x - torch.mean(x, (2, 3), True)
        return x * torch.rsqrt(torch.mean(x * x, (2, 3), True) + self.epsilon)


class ApplyStyle(nn.Module):
    """AdaIN's modulation from the identity: a scale (around 1) and a shift per channel."""

    def __init__(self, latent_size: int, channels: int):
        super().__init__()
        self.linear = nn.Linear(latent_size, channels * 2)

    def forward(self, x: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        style = self.linear(latent).view(-1, 2, x.size(1), 1, 1)
        return x * (style[:, 0] * 1 + 1.0) + style[:, 1] * 1


def _padded_conv(dim: int) -> nn.Sequential:
    # positions 0, 1, 2: the checkpoint's keys are conv1.1.weight, conv1.1.bias
    return nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, padding=0), InstanceNorm())


class ResnetBlockAdain(nn.Module):
    """The ID injection block: two normalised convolutions, each restyled by the identity."""

    def __init__(self, dim: int, latent_size: int = LATENT):
        super().__init__()
        self.conv1 = _padded_conv(dim)
        self.style1 = ApplyStyle(latent_size, dim)
        self.act1 = nn.ReLU(True)
        self.conv2 = _padded_conv(dim)
        self.style2 = ApplyStyle(latent_size, dim)

    def forward(self, x: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        y = self.act1(self.style1(self.conv1(x), latent))
        return x + self.style2(self.conv2(y), latent)


def _down(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.BatchNorm2d(cout), nn.ReLU(True)
    )


def _up(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.Conv2d(cin, cout, 3, stride=1, padding=1),
        nn.BatchNorm2d(cout),
        nn.ReLU(True),
    )


class SimSwapGenerator(nn.Module):
    """``Generator_Adain_Upsample`` of the 224 (``size=224``) or 512 (``size=512``) release.

    ``forward(target, latent)``: the target face, ``(B, 3, S, S)`` RGB in [0, 1] aligned to
    SimSwap's template, and the source's L2-normalised ArcFace embedding ``(B, 512)``; returns
    the swapped face ``(B, 3, S, S)`` in [0, 1].
    """

    def __init__(self, size: int = 224, n_blocks: int = 9, deep: bool = False):
        super().__init__()
        if size not in (224, 512):
            raise ValueError(f"SimSwap's generator exists for 224 and 512 px, not {size}")
        self.size, self.deep = size, deep
        top = 64 if size == 224 else 32  # channels at full resolution
        self.first_layer = nn.Sequential(
            nn.ReflectionPad2d(3),
            nn.Conv2d(3, top, 7, padding=0),
            nn.BatchNorm2d(top),
            nn.ReLU(True),
        )
        if size == 512:
            self.down0 = _down(32, 64)
        self.down1 = _down(64, 128)
        self.down2 = _down(128, 256)
        self.down3 = _down(256, 512)
        if deep:
            self.down4 = _down(512, 512)
        self.BottleNeck = nn.Sequential(*(ResnetBlockAdain(512) for _ in range(n_blocks)))
        if deep:
            self.up4 = _up(512, 512)
        self.up3 = _up(512, 256)
        self.up2 = _up(256, 128)
        self.up1 = _up(128, 64)
        if size == 512:
            self.up0 = _up(64, 32)
        self.last_layer = nn.Sequential(
            nn.ReflectionPad2d(3), nn.Conv2d(top, 3, 7, padding=0), nn.Tanh()
        )

    @classmethod
    def for_state(cls, state: dict, size: int) -> SimSwapGenerator:
        """The generator a checkpoint's keys describe: its residual block count and whether
        it has the ``deep`` stage (the releases: 9 blocks, not deep)."""
        blocks = {k.split(".")[1] for k in state if k.startswith("BottleNeck.")}
        return cls(size, n_blocks=len(blocks), deep="down4.0.weight" in state)

    def forward(self, target: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        x = self.first_layer(target)
        if self.size == 512:
            x = self.down0(x)
        x = self.down3(self.down2(self.down1(x)))
        if self.deep:
            x = self.down4(x)
        for block in self.BottleNeck:
            x = block(x, latent)
        if self.deep:
            x = self.up4(x)
        x = self.up1(self.up2(self.up3(x)))
        if self.size == 512:
            x = self.up0(x)
        return (self.last_layer(x) + 1) / 2
