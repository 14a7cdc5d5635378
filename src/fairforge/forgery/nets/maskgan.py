"""MaskGAN's generator (Lee et al., CVPR 2020) as its demo releases it.

The release is switchablenorms/CelebAMask-HQ, folder ``MaskGAN_demo``: the checkpoint
``checkpoints/label2face_512p/latest_net_G.pth`` (a state dict, downloaded from the Google
Drive link in ``MaskGAN_demo/README.md``) holds the generator ``netG`` that
``MaskGAN_demo/models/networks.py`` defines as ``GlobalGenerator``: pix2pixHD's global
generator, whose residual blocks are normalised by adaptive instance norm (AdaIN) with
scales and shifts predicted from the reference image by a style encoder, modulated twice
(SFT layers) by a label encoder of the reference's parsing map.

``generator(label, label_ref, image_ref)`` renders the one-hot parsing map ``label`` in the
style of ``image_ref`` (RGB in [-1, 1]) whose own map is ``label_ref``; the output is RGB in
[-1, 1] (tanh). The demo's options fix the sizes: 19 label channels, ``ngf`` 64, 4
down-samplings (``n_downsample_global``) and 4 residual blocks (``n_blocks_global``), at
512 x 512 (``loadSize``); the style and label encoders' widths are fixed in the authors' code.

Parameter names and the layer order follow the release (``model.<i>`` is the i-th layer of
the authors' ``nn.Sequential``), so the checkpoint loads with
:func:`fairforge.checkpoints.load_exact`. Written from reading the authors' module
definitions; differences that do not change the function: the AdaIN parameters are passed to
each block instead of being assigned to the modules before the call, and AdaIN is an instance
norm followed by the scale and shift (the authors call batch norm in training mode on the
batch folded into channels, the same computation). AdaIN's ``running_mean`` and
``running_var`` are never used by the authors either; they stay because the release holds
them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.checkpoints import read_state_dict

from . import load_released

LABEL_NC = 19  # CelebAMask-HQ's classes (fairforge.forgery.parsing.CELEBAMASK_LABELS)
# The demo's options (MaskGAN_demo/options/base_options.py defaults)
RELEASE = {"ngf": 64, "n_downsample_global": 4, "n_blocks_global": 4}
LOAD_SIZE = 512
# Fixed in the authors' code: the encoders' widths and depths, the SFT layers' 64 channels
ENCODER_DEPTH = 5
ENCODER_WIDTH = 16
SFT_CHANNELS = 64


class AdaptiveInstanceNorm(nn.Module):
    """Instance norm whose per-sample scale and shift are given with the input."""

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.channels = channels
        self.eps = eps
        # never read: the release carries them
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))

    def forward(self, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        x = F.instance_norm(x, eps=self.eps)
        return x * scale[:, :, None, None] + shift[:, :, None, None]


class ConvBlock(nn.Module):
    """Reflection pad, convolution with bias, optional AdaIN, optional ReLU."""

    def __init__(self, cin, cout, kernel, stride, padding, adain=False, relu=True):
        super().__init__()
        self.pad = nn.ReflectionPad2d(padding)
        self.conv = nn.Conv2d(cin, cout, kernel, stride)
        self.norm = AdaptiveInstanceNorm(cout) if adain else None
        self.relu = relu

    def forward(self, x: torch.Tensor, style=None) -> torch.Tensor:
        x = self.conv(self.pad(x))
        if self.norm is not None:
            x = self.norm(x, *style)
        return F.relu(x) if self.relu else x


class ResnetBlock(nn.Module):
    """x + conv-AdaIN-ReLU-conv-AdaIN(x)."""

    def __init__(self, dim: int):
        super().__init__()
        self.conv_block = nn.ModuleList(
            [
                ConvBlock(dim, dim, 3, 1, 1, adain=True),
                ConvBlock(dim, dim, 3, 1, 1, adain=True, relu=False),
            ]
        )

    def forward(self, x: torch.Tensor, styles) -> torch.Tensor:
        h = self.conv_block[0](x, styles[0])
        return x + self.conv_block[1](h, styles[1])


class SFTLayer(nn.Module):
    """Spatial feature transform: ``x * scale(cond) + shift(cond)``, each a two-layer 1x1
    convolution with a leaky ReLU (slope 0.1) between."""

    def __init__(self, channels: int = SFT_CHANNELS):
        super().__init__()
        self.SFT_scale_conv1 = nn.Conv2d(channels, channels, 1)
        self.SFT_scale_conv2 = nn.Conv2d(channels, channels, 1)
        self.SFT_shift_conv1 = nn.Conv2d(channels, channels, 1)
        self.SFT_shift_conv2 = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        scale = self.SFT_scale_conv2(F.leaky_relu(self.SFT_scale_conv1(cond), 0.1))
        shift = self.SFT_shift_conv2(F.leaky_relu(self.SFT_shift_conv1(cond), 0.1))
        return x * scale + shift


class LabelEncoder(nn.Module):
    """The reference parsing map at 1/4 (``model``) and 1/32 (``model_last``) resolution,
    64 channels each, the conditions of the style encoder's two SFT layers."""

    def __init__(self, label_nc: int = LABEL_NC):
        super().__init__()
        w = ENCODER_WIDTH
        self.model = nn.Sequential(
            ConvBlock(label_nc, w, 7, 1, 3),
            ConvBlock(w, 2 * w, 4, 2, 1),
            ConvBlock(2 * w, 4 * w, 4, 2, 1, relu=False),
        )
        down = [ConvBlock(4 * w, 4 * w, 4, 2, 1) for _ in range(ENCODER_DEPTH - 3)]
        self.model_last = nn.Sequential(
            nn.ReLU(), *down, ConvBlock(4 * w, 4 * w, 4, 2, 1, relu=False)
        )

    def forward(self, label: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fea = self.model(label)
        return fea, self.model_last(fea)


class StyleEncoder(nn.Module):
    """The reference image, modulated by the label encoder's features, pooled to the AdaIN
    parameters of every residual block (``style_dim`` values per image)."""

    def __init__(self, style_dim: int):
        super().__init__()
        w = ENCODER_WIDTH
        self.model = nn.Sequential(
            ConvBlock(3, w, 7, 1, 3), ConvBlock(w, 2 * w, 4, 2, 1), ConvBlock(2 * w, 4 * w, 4, 2, 1)
        )
        self.model_middle = nn.Sequential(
            *(ConvBlock(4 * w, 4 * w, 4, 2, 1) for _ in range(ENCODER_DEPTH - 2))
        )
        self.model_last = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(4 * w, style_dim, 1))
        self.sft1 = SFTLayer()
        self.sft2 = SFTLayer()

    def forward(self, image: torch.Tensor, fea1: torch.Tensor, fea2: torch.Tensor) -> torch.Tensor:
        x = self.sft1(self.model(image), fea1)
        x = self.sft2(self.model_middle(x), fea2)
        return self.model_last(x).flatten(1)


class MaskGANGenerator(nn.Module):
    """The demo's ``GlobalGenerator`` (module docstring)."""

    def __init__(
        self,
        label_nc: int = LABEL_NC,
        output_nc: int = 3,
        ngf: int = RELEASE["ngf"],
        n_downsample_global: int = RELEASE["n_downsample_global"],
        n_blocks_global: int = RELEASE["n_blocks_global"],
    ):
        super().__init__()
        layers: list[nn.Module] = [
            nn.ReflectionPad2d(3),
            nn.Conv2d(label_nc, ngf, 7),
            nn.InstanceNorm2d(ngf),
            nn.ReLU(True),
        ]
        for i in range(n_downsample_global):
            c = ngf * 2**i
            layers += [nn.Conv2d(c, 2 * c, 3, 2, 1), nn.InstanceNorm2d(2 * c), nn.ReLU(True)]
        self.dim = ngf * 2**n_downsample_global
        layers += [ResnetBlock(self.dim) for _ in range(n_blocks_global)]
        for i in range(n_downsample_global):
            c = ngf * 2 ** (n_downsample_global - i)
            layers += [
                nn.ConvTranspose2d(c, c // 2, 3, 2, 1, output_padding=1),
                nn.InstanceNorm2d(c // 2),
                nn.ReLU(True),
            ]
        layers += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, output_nc, 7), nn.Tanh()]
        self.model = nn.Sequential(*layers)
        # a scale and a shift per channel for each of a block's two AdaINs
        self.enc_style = StyleEncoder(n_blocks_global * 2 * 2 * self.dim)
        self.enc_label = LabelEncoder(label_nc)

    def forward(
        self, label: torch.Tensor, label_ref: torch.Tensor, image_ref: torch.Tensor
    ) -> torch.Tensor:
        fea1, fea2 = self.enc_label(label_ref)
        params = self.enc_style(image_ref, fea1, fea2)
        c, k = self.dim, 0
        x = label
        for layer in self.model:
            if isinstance(layer, ResnetBlock):
                styles = []
                for _ in range(2):  # the authors' layout: shifts (their "mean"), then scales
                    shift, scale = params[:, k : k + c], params[:, k + c : k + 2 * c]
                    styles.append((scale, shift))
                    k += 2 * c
                x = layer(x, styles)
            else:
                x = layer(x)
        return x


def one_hot(labels: torch.Tensor, label_nc: int = LABEL_NC) -> torch.Tensor:
    """(B, H, W) integer labels as (B, label_nc, H, W) float one-hot maps (the demo's
    ``encode_input_test``)."""
    return F.one_hot(labels.long(), label_nc).permute(0, 3, 1, 2).float()


def load_generator(path, what: str, device: str = "cpu", **sizes) -> MaskGANGenerator:
    """The generator of a release file (``latest_net_G.pth``) on ``device``, in evaluation
    mode; ``sizes`` override :data:`RELEASE` for a checkpoint trained with other options."""
    sizes = {**RELEASE, **sizes}
    return load_released(
        lambda: MaskGANGenerator(**sizes), read_state_dict(path, what), what, device
    )
