"""SRM: "Generalizing Face Forgery Detection with High-frequency Features" (Luo, Zhang, Yi & Wu,
CVPR 2021), as published and as DeepfakeBench builds it (its ``srm``; checkpoints load
exactly, :mod:`fairforge.detectors.deepfakebench`).

Two Xception streams, one on the RGB image and one on its SRM noise residual (three fixed
high-pass kernels of Fridrich & Kodovský's steganalysis models: the 3×3 second-order "KB"
kernel, the 5×5 "KV" kernel and a 1-D second difference, each summed over the colour
channels and clipped to [-3, 3]):

* multi-scale high-frequency extraction: the same SRM kernels applied per channel to the RGB
  stream's 32- and 64-channel stem features, projected by 1×1 conv-BN-ReLU and added to the
  SRM stream's (``srm_conv1``, ``srm_conv2``);
* residual guided spatial attention: a small conv net on the SRM residual of the residual
  gives a spatial attention map that re-weights the RGB stem features, x·a + x
  (``srm_sa``, ``srm_sa_post``);
* dual cross-modality attention after the entry flow (block 3) and after block 7: each
  stream attends to the other (``dual_cma0``, ``dual_cma1``; its linear layers act on the
  (h·w)² affinity, so a model takes inputs of its ``input_size`` only);
* fusion: the two 2048-channel maps concatenated, 1×1 conv-BN-ReLU and channel attention,
  then ReLU, pooling and the classifier.

53.24M parameters here; DeepfakeBench counts 55.35M because each of its two Xceptions also
holds an unused 2048→512 ``adjust_channel`` block (1.05M each), the SRM stream keeps an
unused classifier, and its fixed SRM kernels are stored as parameters; without those the
counts are equal.

Simplifications: the paper trains with an AM-softmax loss (m = 0.45, s = 30); here the
shared binary cross-entropy on one logit. The paper and DeepfakeBench start both Xceptions from
ImageNet weights (``pretrained:``, or ``init: random`` to train without).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fairforge.detectors.base import (
    DETECTORS,
    DeepfakeBenchLayout,
    Detector,
    PretrainedLayout,
    PretrainedTarget,
    stated_start,
)
from fairforge.detectors.xception import (
    ENTRY,
    IMAGENET_XCEPTION,
    MIDDLE,
    XCEPTION_TIMM,
    run_stages,
    xception_net,
)


def srm_filters() -> torch.Tensor:
    """(3, 5, 5): the KB, KV and second-difference SRM kernels."""
    kb = (
        torch.tensor(
            [
                [0, 0, 0, 0, 0],
                [0, -1, 2, -1, 0],
                [0, 2, -4, 2, 0],
                [0, -1, 2, -1, 0],
                [0, 0, 0, 0, 0],
            ],
            dtype=torch.float32,
        )
        / 4.0
    )
    kv = (
        torch.tensor(
            [
                [-1, 2, -2, 2, -1],
                [2, -6, 8, -6, 2],
                [-2, 8, -12, 8, -2],
                [2, -6, 8, -6, 2],
                [-1, 2, -2, 2, -1],
            ],
            dtype=torch.float32,
        )
        / 12.0
    )
    second = (
        torch.tensor(
            [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, -2, 1, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]],
            dtype=torch.float32,
        )
        / 2.0
    )
    return torch.stack([kb, kv, second])


def srm_kernels(channels: int = 3) -> torch.Tensor:
    """(3, channels, 5, 5): each SRM kernel summed over ``channels`` input channels."""
    return srm_filters()[:, None].repeat(1, channels, 1, 1)


class SRMFilter(nn.Module):
    """Fixed SRM residuals of an image, summed over its channels and clipped to [-clip, clip]
    (DeepfakeBench's ``SRMConv2d_simple``)."""

    def __init__(self, channels: int = 3, clip: float = 3.0):
        super().__init__()
        self.register_buffer("kernel", srm_kernels(channels))
        self.clip = clip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.kernel, padding=2).clamp(-self.clip, self.clip)


class SeparateSRM(nn.Module):
    """SRM residuals of each feature channel (3 per channel, clipped), projected to ``cout``
    channels by 1×1 conv-BN-ReLU (DeepfakeBench's ``SRMConv2d_Separate``; its kernel order is
    the published code's: kernel k of the 3·cin goes to channel k // 3 and is SRM kernel
    k // cin)."""

    def __init__(self, cin: int, cout: int, clip: float = 3.0):
        super().__init__()
        self.cin, self.clip = cin, clip
        self.register_buffer("kernel", srm_filters()[:, None].repeat_interleave(cin, dim=0))
        self.out_conv = nn.Sequential(
            nn.Conv2d(3 * cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.conv2d(x, self.kernel, padding=2, groups=self.cin).clamp(-self.clip, self.clip)
        return self.out_conv(out)


class SpatialAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 1, 7, padding=3, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], dim=1)
        return torch.sigmoid(self.conv(pooled))


class PixelAttention(nn.Module):
    """Residual guided spatial attention: SRM of the input, two strided-like convolutions to
    the RGB stem's 64-channel geometry, spatial attention."""

    def __init__(self):
        super().__init__()
        self.srm = SRMFilter()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 0, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
        )
        self.pa = SpatialAttention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pa(self.conv(self.srm(x)))


class DualCrossModalAttention(nn.Module):
    """Each stream attends to the other through a shared key projection and the (h·w)²
    affinity; γ-scaled residuals (γ = 0 at start)."""

    def __init__(self, channels: int, side: int, ratio: int = 8):
        super().__init__()
        r = channels // ratio
        self.key_conv1 = nn.Conv2d(channels, r, 1)
        self.key_conv2 = nn.Conv2d(channels, r, 1)
        self.key_conv_share = nn.Conv2d(r, r, 1)
        self.linear1 = nn.Linear(side * side, side * side)
        self.linear2 = nn.Linear(side * side, side * side)
        self.value_conv1 = nn.Conv2d(channels, channels, 1)
        self.gamma1 = nn.Parameter(torch.zeros(1))
        self.value_conv2 = nn.Conv2d(channels, channels, 1)
        self.gamma2 = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, c, h, w = x.shape
        k1 = self.key_conv_share(self.key_conv1(x)).view(b, -1, h * w).permute(0, 2, 1)
        k2 = self.key_conv_share(self.key_conv2(y)).view(b, -1, h * w)
        energy = torch.bmm(k1, k2)  # (B, hw, hw)
        y_on_x = F.softmax(self.linear1(energy), dim=-1)
        x_on_y = F.softmax(self.linear2(energy.permute(0, 2, 1)), dim=-1)
        vy = self.value_conv2(y).view(b, -1, h * w)
        out_x = self.gamma1 * torch.bmm(vy, y_on_x.permute(0, 2, 1)).view(b, c, h, w) + x
        vx = self.value_conv1(x).view(b, -1, h * w)
        out_y = self.gamma2 * torch.bmm(vx, x_on_y.permute(0, 2, 1)).view(b, c, h, w) + y
        return out_x, out_y


class ChannelAttention(nn.Module):
    def __init__(self, channels: int, ratio: int = 16):
        super().__init__()
        self.sharedMLP = nn.Sequential(
            nn.Conv2d(channels, channels // ratio, 1, bias=False),
            nn.ReLU(),
            nn.Conv2d(channels // ratio, channels, 1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mlp = self.sharedMLP
        return torch.sigmoid(mlp(F.adaptive_avg_pool2d(x, 1)) + mlp(F.adaptive_max_pool2d(x, 1)))


class FeatureFusion(nn.Module):
    def __init__(self, cin: int = 4096, cout: int = 2048):
        super().__init__()
        self.convblk = nn.Sequential(
            nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
        )
        self.ca = ChannelAttention(cout)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        fused = self.convblk(torch.cat((x, y), dim=1))
        return fused * self.ca(fused)


def entry_flow_side(size: int) -> int:
    """Side of Xception's map after block 3 for a ``size`` px input."""
    side = (size - 3) // 2 + 1 - 2  # conv1 (stride 2) and conv2, both unpadded
    for _ in range(3):
        side = (side - 1) // 2 + 1  # max-pool 3, stride 2, padding 1
    return side


_TAIL = ("conv3", "bn3", "act3", "conv4", "bn4")  # the exit flow before its last ReLU


@DETECTORS.register(
    "srm",
    recipe=stated_start("imagenet", "paper:SRM (Luo et al. 2021): ImageNet-pretrained Xceptions"),
    pretrained=PretrainedLayout(
        (PretrainedTarget("backbone_rgb"), PretrainedTarget("backbone_srm")),
        IMAGENET_XCEPTION + ", into both streams",
        XCEPTION_TIMM,
    ),
    deepfakebench={
        "srm": DeepfakeBenchLayout(
            (
                (r"^backbone_rgb\.last_linear\.(?:1\.)?(weight|bias)$", r"backbone_rgb.fc.\1"),
                (
                    r"^(backbone_(?:rgb|srm)|srm_conv\d|srm_sa|srm_sa_post|dual_cma\d|fusion)"
                    r"\.(.+)$",
                    r"\1.\2",
                ),
            ),
            (
                r"^backbone_(?:rgb|srm)\.adjust_channel\.",
                r"^backbone_srm\.last_linear\.",  # built, never used
                r"^blur\.weight$",  # Gaussian smoothing built, never called
            ),
            head="backbone_rgb.fc",
        )
    },
)
class SRMDetector(Detector):
    default_input_size = 256
    precision = "fp32"  # high-pass residuals

    def __init__(self, input_size: int = 256, drop_rate: float = 0.0):
        super().__init__()
        self.input_size = input_size
        self.drop_rate = drop_rate
        side = entry_flow_side(input_size)
        if side < 1:
            raise ValueError(f"srm needs inputs of at least 32 px, got {input_size}")
        self.backbone_rgb = xception_net()
        self.backbone_srm = xception_net(num_classes=0)
        self.srm_conv0 = SRMFilter()
        self.srm_conv1 = SeparateSRM(32, 32)
        self.srm_conv2 = SeparateSRM(64, 64)
        self.srm_sa = PixelAttention()
        self.srm_sa_post = nn.Sequential(nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        self.dual_cma0 = DualCrossModalAttention(728, side)
        self.dual_cma1 = DualCrossModalAttention(728, side)
        self.fusion = FeatureFusion()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-2:] != (self.input_size, self.input_size):
            raise ValueError(
                f"srm was built for {self.input_size} px inputs (its cross-modality attention "
                f"is per position); got {tuple(x.shape[-2:])}"
            )
        rgb, noise = self.backbone_rgb, self.backbone_srm
        residual = self.srm_conv0(x)
        x = rgb.act1(rgb.bn1(rgb.conv1(x)))
        y = F.relu(noise.act1(noise.bn1(noise.conv1(residual))) + self.srm_conv1(x))
        x = rgb.act2(rgb.bn2(rgb.conv2(x)))
        y = F.relu(noise.act2(noise.bn2(noise.conv2(y))) + self.srm_conv2(x))
        x = self.srm_sa_post(x * self.srm_sa(residual) + x)
        x, y = self.dual_cma0(run_stages(rgb, x, ENTRY), run_stages(noise, y, ENTRY))
        x, y = self.dual_cma1(run_stages(rgb, x, MIDDLE[:4]), run_stages(noise, y, MIDDLE[:4]))
        x = run_stages(rgb, x, MIDDLE[4:] + ("block12",) + _TAIL)
        y = run_stages(noise, y, MIDDLE[4:] + ("block12",) + _TAIL)
        fused = F.relu(self.fusion(x, y))
        pooled = F.dropout(
            F.adaptive_avg_pool2d(fused, 1).flatten(1), self.drop_rate, self.training
        )
        return rgb.fc(pooled).squeeze(1)
