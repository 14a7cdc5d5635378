"""F3-Net: frequency in face forgery network (Qian et al., ECCV 2020).

Two frequency-aware inputs, each classified by an Xception:

* FAD (frequency-aware decomposition): the 2-D DCT of every colour channel is split by four
  band filters over the index sum i + j (low: < N/2.82, i.e. the first 1/16 of the spectrum;
  middle: up to N/2, 1/8; high: the rest; all), each a fixed binary mask plus a learnable
  offset 2·sigmoid(w) − 1, and transformed back: 4 bands × 3 channels = 12 input channels.
* LFS (local frequency statistics): on the grey image (in 0..255), a 10×10 sliding-window DCT
  (stride 2, padding 4, so the map is N/2 × N/2) whose log-magnitudes are averaged in M = 6
  learnable bands: 6 input channels.

The two branches' pooled features are concatenated and classified. The band filters hold
N×N learnable weights, so a model only takes inputs of its ``input_size``.

Simplifications: the MixBlock cross-attention fusion between the branches (at the middle and
the end of Xception) is replaced by late concatenation; random initialisation.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.base import Detector, register
from fairforge.detectors.xception import FEATURE_CHANNELS, xception_features, xception_net


def dct_matrix(n: int) -> torch.Tensor:
    """Orthonormal DCT-II matrix D: the 2-D DCT of X is D X Dᵀ, its inverse Dᵀ Y D."""
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None, :]
    d = torch.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    d[0] /= math.sqrt(2.0)
    return d.float()


def band_mask(n: int, start: float, end: float) -> torch.Tensor:
    """1 where start <= i + j < end."""
    s = torch.arange(n)[:, None] + torch.arange(n)[None, :]
    return ((s >= start) & (s < end)).float()


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
                BandFilter(size, 0, size / 2.82),
                BandFilter(size, size / 2.82, size / 2),
                BandFilter(size, size / 2, 2 * size),
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


@register("f3net")
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
        self.head = nn.Sequential(nn.Dropout(drop_rate), nn.Linear(2 * FEATURE_CHANNELS, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-2:] != (self.input_size, self.input_size):
            raise ValueError(
                f"f3net was built for {self.input_size} px inputs (its DCT band "
                f"filters are per frequency); got {tuple(x.shape[-2:])}"
            )
        fad = xception_features(self.fad_net, self.fad(x))
        lfs = xception_features(self.lfs_net, self.lfs(x))
        pooled = torch.cat([F.adaptive_avg_pool2d(fad, 1), F.adaptive_avg_pool2d(lfs, 1)], 1)
        return self.head(pooled.flatten(1)).squeeze(1)
