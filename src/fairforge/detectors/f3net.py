"""F3-Net: frequency in face forgery network (Qian et al., ECCV 2020), as published, and
DeepfakeBench's FAD-only variant.

``f3net`` is the paper's two-stream network:

* FAD (frequency-aware decomposition): the 2-D DCT of every colour channel is split by four
  band filters over the index sum i + j (low: up to N // 2.82, the first 1/16 of the
  spectrum; middle: up to N // 2, 1/8; high: the rest; all), each a fixed binary mask plus a
  learnable offset 2·sigmoid(w) − 1, and transformed back: 4 bands × 3 channels = 12 input
  channels. Band edges are inclusive, as in the authors' code (neighbouring bands share their
  boundary diagonal).
* LFS (local frequency statistics): on the grey image (in 0..255), a 10×10 sliding-window DCT
  (stride 2, padding 4, so the map is N/2 × N/2) whose log-magnitudes are averaged in M = 6
  learnable bands: 6 input channels.
* Each stream is an Xception; two MixBlocks (cross attention between the streams, after
  block 7 at 728 channels and after block 12 at 1024 channels) exchange information, and the
  two pooled 2048-d features are concatenated, dropped out and classified. The LFS Xception's
  first convolution has stride 1 (its input is half the size), so that both streams reach
  the MixBlocks with equal maps; at input sizes that are not multiples of 4 the LFS map is
  resized to the FAD one (nearest) where they differ by a pixel.

``f3net_dfb`` is DeepfakeBench's ``f3net``: FAD only, one Xception with 12 input channels and
DeepfakeBench's normalisation; its checkpoints load exactly
(:mod:`fairforge.detectors.deepfakebench`).

The band filters hold N×N learnable weights, so a model only takes inputs of its
``input_size``. The paper and DeepfakeBench start the Xceptions from ImageNet weights
(``pretrained:``, or ``init: random`` to train without).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.base import (
    DEEPFAKEBENCH_IMAGENET,
    DETECTORS,
    DeepfakeBenchLayout,
    Detector,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
)
from fairforge.detectors.xception import (
    ENTRY,
    EXIT,
    FEATURE_CHANNELS,
    IMAGENET_XCEPTION,
    MIDDLE,
    STEM,
    XCEPTION_DFB_IGNORE,
    XCEPTION_DFB_RULES,
    XCEPTION_PRETRAINED,
    XCEPTION_TIMM,
    run_stages,
    xception_net,
)


def dct_matrix(n: int) -> torch.Tensor:
    """Orthonormal DCT-II matrix D: the 2-D DCT of X is D X Dᵀ, its inverse Dᵀ Y D."""
    # on the CPU even when a model is built on the meta device: these are constants
    k = torch.arange(n, dtype=torch.float64, device="cpu")[:, None]
    i = torch.arange(n, dtype=torch.float64, device="cpu")[None, :]
    d = torch.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    d[0] /= math.sqrt(2.0)
    return d.float()


def band_mask(n: int, start: float, end: float) -> torch.Tensor:
    """1 where start <= i + j <= end (the authors' ``generate_filter``)."""
    s = torch.arange(n, device="cpu")[:, None] + torch.arange(n, device="cpu")[None, :]
    return ((s >= start) & (s <= end)).float()


class BandFilter(nn.Module):
    """A fixed band mask plus a learnable offset in (-1, 1); ``normalise`` divides by the band
    size so bands of different sizes give comparable averages."""

    def __init__(self, n: int, start: float, end: float, normalise: bool = False):
        super().__init__()
        base = band_mask(n, start, end)
        self.register_buffer("base", base)
        self.learnable = nn.Parameter(torch.randn(n, n) * 0.1)
        self.scale = 1.0 / max(float(base.sum()), 1.0) if normalise else 1.0

    def forward(self) -> torch.Tensor:
        return (self.base + 2.0 * torch.sigmoid(self.learnable) - 1.0) * self.scale


class FAD(nn.Module):
    def __init__(self, size: int):
        super().__init__()
        self.register_buffer("dct", dct_matrix(size))
        self.filters = nn.ModuleList(
            [
                BandFilter(size, 0, size // 2.82),
                BandFilter(size, size // 2.82, size // 2),
                BandFilter(size, size // 2, 2 * size),
                BandFilter(size, 0, 2 * size),
            ]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dct
        spectrum = d @ x @ d.T
        bands = [d.T @ (spectrum * f()) @ d for f in self.filters]
        return torch.cat(bands, dim=1)  # (B, 12, N, N)


class LFS(nn.Module):
    def __init__(self, window: int = 10, stride: int = 2, padding: int = 4, n_bands: int = 6):
        super().__init__()
        self.window, self.stride, self.padding = window, stride, padding
        self.register_buffer("dct", dct_matrix(window))
        self.filters = nn.ModuleList(
            BandFilter(
                window, 2.0 * window / n_bands * i, 2.0 * window / n_bands * (i + 1), normalise=True
            )
            for i in range(n_bands)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grey = 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]
        grey = (grey + 1.0) * 122.5  # the [-1, 1] input back to 0..255
        b, _, h, w = grey.shape
        k = self.window
        patches = F.unfold(grey, k, padding=self.padding, stride=self.stride)  # (B, k², L)
        n_out = (h + 2 * self.padding - k) // self.stride + 1
        m_out = (w + 2 * self.padding - k) // self.stride + 1
        patches = patches.transpose(1, 2).reshape(b, -1, k, k)
        log_mag = torch.log10((self.dct @ patches @ self.dct.T).abs() + 1e-15)
        weights = torch.stack([f() for f in self.filters]).flatten(1)  # (M, k²)
        stats = log_mag.flatten(2) @ weights.T  # (B, L, M)
        return stats.transpose(1, 2).reshape(b, -1, n_out, m_out)


class MixBlock(nn.Module):
    """The paper's cross attention between the FAD and LFS streams: per channel, a W×W
    attention from both streams' queries and keys re-weights each stream's map, which is
    added to the other stream through a depthwise 1×1 convolution and BatchNorm, scaled by
    a learnable 2·sigmoid(γ) − 1 (0 at start)."""

    def __init__(self, channels: int):
        super().__init__()
        conv = lambda: nn.Conv2d(channels, channels, 1)  # noqa: E731
        self.fad_query, self.lfs_query, self.fad_key, self.lfs_key = conv(), conv(), conv(), conv()
        self.fad_gamma = nn.Parameter(torch.zeros(1))
        self.lfs_gamma = nn.Parameter(torch.zeros(1))
        self.fad_conv = nn.Conv2d(channels, channels, 1, groups=channels)
        self.fad_bn = nn.BatchNorm2d(channels)
        self.lfs_conv = nn.Conv2d(channels, channels, 1, groups=channels)
        self.lfs_bn = nn.BatchNorm2d(channels)

    def forward(self, fad: torch.Tensor, lfs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, c, w, h = fad.shape
        if lfs.shape != fad.shape or w != h:
            raise ValueError(f"MixBlock needs equal square maps, got {fad.shape}, {lfs.shape}")
        query = torch.cat(
            [self.fad_query(fad).reshape(-1, w, h), self.lfs_query(lfs).reshape(-1, w, h)], dim=2
        )
        key = torch.cat(
            [
                self.fad_key(fad).reshape(-1, w, h).transpose(1, 2),
                self.lfs_key(lfs).reshape(-1, w, h).transpose(1, 2),
            ],
            dim=1,
        )
        attention = F.softmax(torch.bmm(query, key), dim=-1).view(b, c, w, w)
        to_fad = lfs * attention * (2.0 * torch.sigmoid(self.lfs_gamma) - 1.0)
        to_lfs = fad * attention * (2.0 * torch.sigmoid(self.fad_gamma) - 1.0)
        return fad + self.fad_bn(self.fad_conv(to_fad)), lfs + self.lfs_bn(self.lfs_conv(to_lfs))


def _check_size(model: Detector, x: torch.Tensor) -> None:
    if x.shape[-2:] != (model.input_size, model.input_size):
        raise ValueError(
            f"{model.name} was built for {model.input_size} px inputs (its DCT band "
            f"filters are per frequency); got {tuple(x.shape[-2:])}"
        )


@DETECTORS.register(
    "f3net",
    recipe=stated_start(
        "imagenet", "paper:F3-Net (Qian et al. 2020): ImageNet-pretrained Xception"
    ),
    pretrained=PretrainedLayout(
        (PretrainedTarget("fad_net"), PretrainedTarget("lfs_net")),
        IMAGENET_XCEPTION + ", into both streams",
        XCEPTION_TIMM,
    ),
)
class F3Net(Detector):
    default_input_size = 256
    precision = "fp32"  # frequency features (FAD, LFS)

    def __init__(self, input_size: int = 256, drop_rate: float = 0.2):
        super().__init__()
        self.input_size = input_size
        self.fad = FAD(input_size)
        self.lfs = LFS()
        self.fad_net = xception_net(in_chans=12)
        self.lfs_net = xception_net(in_chans=len(self.lfs.filters))
        # the LFS map is N/2 px: a stride-1 first convolution brings both streams to the
        # same map size at the MixBlocks, as in the authors' code
        self.lfs_net.conv1 = nn.Conv2d(len(self.lfs.filters), 32, 3, 1, 0, bias=False)
        self.mix_block7 = MixBlock(728)
        self.mix_block12 = MixBlock(1024)
        self.head = nn.Sequential(nn.Dropout(drop_rate), nn.Linear(2 * FEATURE_CHANNELS, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_size(self, x)
        fad, lfs = self.fad(x), self.lfs(x)
        fad = run_stages(self.fad_net, fad, STEM + ENTRY + MIDDLE[:4])  # to block 7
        lfs = run_stages(self.lfs_net, lfs, STEM + ENTRY + MIDDLE[:4])
        if lfs.shape != fad.shape:  # sizes that are not multiples of 4 differ by a pixel
            lfs = F.interpolate(lfs, size=fad.shape[-2:], mode="nearest")
        fad, lfs = self.mix_block7(fad, lfs)
        fad = run_stages(self.fad_net, fad, MIDDLE[4:] + EXIT[:1])  # blocks 8-12
        lfs = run_stages(self.lfs_net, lfs, MIDDLE[4:] + EXIT[:1])
        if lfs.shape != fad.shape:
            lfs = F.interpolate(lfs, size=fad.shape[-2:], mode="nearest")
        fad, lfs = self.mix_block12(fad, lfs)
        fad = run_stages(self.fad_net, fad, EXIT[1:])
        lfs = run_stages(self.lfs_net, lfs, EXIT[1:])
        pooled = torch.cat([F.adaptive_avg_pool2d(fad, 1), F.adaptive_avg_pool2d(lfs, 1)], 1)
        return self.head(pooled.flatten(1)).squeeze(1)


@DETECTORS.register(
    "f3net_dfb",
    recipe=stated_start("imagenet", DEEPFAKEBENCH_IMAGENET),
    pretrained=XCEPTION_PRETRAINED,
    deepfakebench={
        "f3net": DeepfakeBenchLayout(
            (
                (r"^FAD_head\._DCT_all$", "fad.dct"),
                (r"^FAD_head\.filters\.(\d+)\.(base|learnable)$", r"fad.filters.\1.\2"),
                *XCEPTION_DFB_RULES,
            ),
            (*XCEPTION_DFB_IGNORE, r"^FAD_head\._DCT_all_T$"),
            head="backbone.fc",
        )
    },
)
class F3NetDFB(Detector):
    """DeepfakeBench's ``f3net``: the FAD head and one 12-channel Xception (dropout 0.5 before
    its head, as DeepfakeBench's config sets)."""

    default_input_size = 256
    precision = "fp32"  # frequency features (FAD)

    def __init__(self, input_size: int = 256, drop_rate: float = 0.5):
        super().__init__()
        self.input_size = input_size
        self.fad = FAD(input_size)
        self.backbone = xception_net(in_chans=12, drop_rate=drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_size(self, x)
        return self.backbone(self.fad(x)).squeeze(1)
