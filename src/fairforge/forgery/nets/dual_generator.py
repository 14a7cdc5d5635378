"""The Dual-Generator (DG) face reenactment networks (Hsu, Tsai & Wu, CVPR 2022), as released
in AvLab-CV/Dual_Generator_Face_Reenactment.

Two generators, with the module and parameter names of the release's checkpoints:

- the ID-preserving Shape Generator (IDSG, ``core_IDSG/model_lm_talking_tran.py``):
  :class:`LandmarkEncoder` codes the driver's 68 landmarks (136 values in [0, 1] of the
  aligned 256 px frame) in 136 numbers, :class:`ShapeDecoder` decodes them together with the
  source's 4096-d VGG-Face code into the target landmarks (the driver's pose and expression,
  the source's face shape). Both are five Linear + LeakyReLU(0.2) layers and a last Linear;
  the decoder ends in a sigmoid.
- the Reenacted Face Generator (RFG, ``core/model_lm_talking.py``, built on StarGAN v2):
  :class:`StyleEncoder` codes the source image in a style vector, :class:`Generator` turns
  the drawing of the target landmarks into the face, with that style injected by AdaIN in
  every decoder block. The released configuration: 256 px, style 128, no high-pass branch
  (``w_hpf = 0``), no noise layers, no mask injection, sigmoid output (``loss_select =
  'perceptual'``).

The release's generator also builds ``to_rgb_lm``, a head it never uses; it is kept so the
checkpoint loads exactly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

LANDMARK_VALUES = 136  # 68 (x, y) pairs
ID_CODE = 4096  # VGG-Face fc7


def _mlp(dim_in: int, hidden: int, dim_out: int, repeats: int = 5) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(repeats):
        layers += [nn.Linear(dim_in, hidden), nn.LeakyReLU(0.2)]
        dim_in = hidden
    layers.append(nn.Linear(hidden, dim_out))
    return nn.Sequential(*layers)


class LandmarkEncoder(nn.Module):
    """IDSG's ``lm_linear_encoder``: 136 landmark values -> 136-d landmark code."""

    def __init__(self) -> None:
        super().__init__()
        self.main = _mlp(LANDMARK_VALUES, LANDMARK_VALUES, LANDMARK_VALUES)

    def forward(self, landmarks: torch.Tensor) -> torch.Tensor:
        return self.main(landmarks)


class ShapeDecoder(nn.Module):
    """IDSG's ``linear_decoder``: (landmark code, identity code) -> 136 values in (0, 1)."""

    def __init__(self, hidden: int = 512) -> None:
        super().__init__()
        self.main = _mlp(LANDMARK_VALUES + ID_CODE, hidden, LANDMARK_VALUES)

    def forward(self, landmark_code: torch.Tensor, id_code: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.main(torch.cat([landmark_code, id_code], 1)))


# --------------------------------------------------------------------------- RFG blocks


class ResBlk(nn.Module):
    """Pre-activation residual block (optional instance norms, average-pool downsampling),
    output scaled by 1/sqrt(2)."""

    def __init__(self, dim_in: int, dim_out: int, normalize: bool = False, downsample=False):
        super().__init__()
        self.normalize, self.downsample = normalize, downsample
        self.learned_sc = dim_in != dim_out
        self.conv1 = nn.Conv2d(dim_in, dim_in, 3, 1, 1)
        self.conv2 = nn.Conv2d(dim_in, dim_out, 3, 1, 1)
        if normalize:
            self.norm1 = nn.InstanceNorm2d(dim_in, affine=True)
            self.norm2 = nn.InstanceNorm2d(dim_in, affine=True)
        if self.learned_sc:
            self.conv1x1 = nn.Conv2d(dim_in, dim_out, 1, 1, 0, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = self.conv1x1(x) if self.learned_sc else x
        if self.downsample:
            shortcut = F.avg_pool2d(shortcut, 2)
        h = self.norm1(x) if self.normalize else x
        h = self.conv1(F.leaky_relu(h, 0.2))
        if self.downsample:
            h = F.avg_pool2d(h, 2)
        if self.normalize:
            h = self.norm2(h)
        h = self.conv2(F.leaky_relu(h, 0.2))
        return (shortcut + h) / math.sqrt(2)


class AdaIN(nn.Module):
    def __init__(self, style_dim: int, num_features: int):
        super().__init__()
        self.norm = nn.InstanceNorm2d(num_features, affine=False)
        self.fc = nn.Linear(style_dim, num_features * 2)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.fc(s)[:, :, None, None].chunk(2, dim=1)
        return (1 + gamma) * self.norm(x) + beta


class AdainResBlk(nn.Module):
    """Residual decoder block with AdaIN (nearest-neighbour upsampling when asked); the
    shortcut is added only without a high-pass branch, which is the released setting."""

    def __init__(self, dim_in: int, dim_out: int, style_dim: int, upsample: bool = False):
        super().__init__()
        self.upsample = upsample
        self.learned_sc = dim_in != dim_out
        self.conv1 = nn.Conv2d(dim_in, dim_out, 3, 1, 1)
        self.conv2 = nn.Conv2d(dim_out, dim_out, 3, 1, 1)
        self.norm1 = AdaIN(style_dim, dim_in)
        self.norm2 = AdaIN(style_dim, dim_out)
        if self.learned_sc:
            self.conv1x1 = nn.Conv2d(dim_in, dim_out, 1, 1, 0, bias=False)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        h = F.leaky_relu(self.norm1(x, s), 0.2)
        if self.upsample:
            h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = self.conv1(h)
        h = self.conv2(F.leaky_relu(self.norm2(h, s), 0.2))
        shortcut = F.interpolate(x, scale_factor=2, mode="nearest") if self.upsample else x
        if self.learned_sc:
            shortcut = self.conv1x1(shortcut)
        return (h + shortcut) / math.sqrt(2)


def _rgb_head(channels: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(
        nn.InstanceNorm2d(channels, affine=True),
        nn.LeakyReLU(0.2),
        nn.Conv2d(channels, outputs, 1, 1, 0),
    )


class Generator(nn.Module):
    """RFG generator: landmark drawing (B, 3, S, S) in [0, 1] + style (B, style_dim) -> face
    (B, 3, S, S) in (0, 1)."""

    def __init__(self, img_size: int = 256, style_dim: int = 128, max_conv_dim: int = 512):
        super().__init__()
        dim_in = 2**14 // img_size
        self.from_rgb = nn.Conv2d(3, dim_in, 3, 1, 1)
        self.encode = nn.ModuleList()
        self.decode = nn.ModuleList()
        self.to_rgb = _rgb_head(dim_in, 3)
        self.to_rgb_lm = _rgb_head(dim_in, 4)  # built by the release, never run
        for _ in range(int(math.log2(img_size)) - 4):
            dim_out = min(dim_in * 2, max_conv_dim)
            self.encode.append(ResBlk(dim_in, dim_out, normalize=True, downsample=True))
            self.decode.insert(0, AdainResBlk(dim_out, dim_in, style_dim, upsample=True))
            dim_in = dim_out
        for _ in range(4):  # bottleneck
            self.decode.insert(0, AdainResBlk(dim_out, dim_out, style_dim))

    def forward(self, landmarks: torch.Tensor, style: torch.Tensor) -> torch.Tensor:
        x = self.from_rgb(landmarks)
        for block in self.encode:
            x = block(x)
        for block in self.decode:
            x = block(x, style)
        return torch.sigmoid(self.to_rgb(x))


class StyleEncoder(nn.Module):
    """RFG style encoder: source face (B, 3, S, S) in [0, 1] -> style (B, style_dim)."""

    def __init__(self, img_size: int = 256, style_dim: int = 128, max_conv_dim: int = 512):
        super().__init__()
        dim_in = 2**14 // img_size
        blocks: list[nn.Module] = [nn.Conv2d(3, dim_in, 3, 1, 1)]
        for _ in range(int(math.log2(img_size)) - 2):
            dim_out = min(dim_in * 2, max_conv_dim)
            blocks.append(ResBlk(dim_in, dim_out, downsample=True))
            dim_in = dim_out
        blocks += [nn.LeakyReLU(0.2), nn.Conv2d(dim_out, dim_out, 4, 1, 0), nn.LeakyReLU(0.2)]
        self.shared = nn.Sequential(*blocks)
        self.fc = nn.Linear(dim_out, style_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.shared(x).flatten(1))
